//! `extract`, `inspect`, `inject` and `pull` against real registries (distribution 2.8) on
//! loopback: anonymous, htpasswd Basic over TLS, and Bearer tokens over TLS; faults from
//! a loopback proxy; the cache and `--offline`.
//!
//! The registries are started by `scripts/registry-services.sh start STATEDIR`; the
//! tests read the `MCD_TEST_REGISTRY_*` variables it writes to `STATEDIR/env` and panic
//! when they are missing. Each run of the binary gets its own HOME, XDG directories and
//! cache ([`Sandbox`]), so that nothing of the machine running the tests is read or
//! written.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::harness::registry::{registries, Proxy, Sandbox};
use crate::harness::{sha256_hex, wait_child, wait_until, Bin};

const MCD: &str = "/usr/bin/machine-config-daemon";

fn layout(name: &str) -> String {
    let dir = registries().fixtures.join("layouts").join(name);
    format!("oci:{}", dir.display())
}

/// What extract gives from the fixture layout on disk.
fn from_disk(name: &str, path: &str, extra: &[&str]) -> Vec<u8> {
    Sandbox::new().extract(&layout(name), path, extra)
}

/// No temp file of a failed download may stay in a cache.
fn assert_no_partials(cache: &Path) {
    let left = leftovers(cache);
    assert!(left.is_empty(), "leftovers in the cache: {left:?}");
}

/// The tool's temp entries (`.mcd-inject-PID-...`) anywhere under `root`.
fn leftovers(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir(root) else {
        return found;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(".mcd-inject-") {
            found.push(e.path());
        } else if e.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(leftovers(&e.path()));
        }
    }
    found
}

fn cached_blobs(cache: &Path) -> Vec<String> {
    fs::read_dir(cache.join("blobs/sha256"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn manifest_layers(layout_name: &str) -> Vec<String> {
    let dir = registries().fixtures.join("layouts").join(layout_name);
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("index.json")).unwrap()).unwrap();
    let digest = index["manifests"][0]["digest"].as_str().unwrap();
    let m: serde_json::Value = serde_json::from_slice(
        &fs::read(dir.join("blobs/sha256").join(&digest["sha256:".len()..])).unwrap(),
    )
    .unwrap();
    m["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["digest"].as_str().unwrap().to_string())
        .collect()
}

// ------------------------------------------------------------------ auth modes

#[test]
fn anonymous_extract_and_inspect_match_the_disk() {
    let r = registries();
    let sb = Sandbox::new();
    // One docker:// reference and one bare reference.
    for (name, image) in [
        ("mco-small", format!("docker://{}/mco/small:v1", r.anon)),
        ("mco-4.16", format!("{}/mco/mco-4.16:v1", r.anon)),
    ] {
        let got = sb.extract(&image, MCD, &["--tls-verify=false"]);
        assert_eq!(got, from_disk(name, MCD, &[]), "{image}");
    }
    let inspect = |image: &str, extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["inspect", "--json", "--image", image];
        args.extend_from_slice(extra);
        let out = sb.ok(&args);
        let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["image"]["reference"] = serde_json::Value::Null;
        v
    };
    let online = inspect(&format!("{}/mco/small:v1", r.anon), &["--tls-verify=false"]);
    let disk = inspect(&layout("mco-small"), &[]);
    assert_eq!(online, disk);
}

/// An inject config without its provenance file, which names the image reference.
fn inject_without_provenance(sb: &Sandbox, image: &str, extra: &[&str]) -> serde_json::Value {
    let ign = sb.path("out.ign").display().to_string();
    let mut args = vec![
        "inject",
        "--image",
        image,
        "--bootimage",
        "4.2",
        "--ign",
        &ign,
    ];
    args.extend_from_slice(extra);
    sb.ok(&args);
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&ign).unwrap()).unwrap();
    let files = v["storage"]["files"].as_array_mut().unwrap();
    let before = files.len();
    files.retain(|f| f["path"] != "/var/lib/mcd-inject/provenance.json");
    assert_eq!(files.len() + 1, before, "no provenance file in {ign}");
    v
}

#[test]
fn inject_through_every_auth_mode_matches_the_disk() {
    let r = registries();
    let want = inject_without_provenance(&Sandbox::new(), &layout("mco-4.16"), &[]);
    let sb = Sandbox::new();
    let anon = format!("{}/mco/mco-4.16:v1", r.anon);
    assert_eq!(
        inject_without_provenance(&sb, &anon, &["--tls-verify=false"]),
        want,
        "anonymous"
    );
    for (registry, user, password) in [
        (&r.basic, &r.basic_user, &r.basic_password),
        (&r.token, &r.token_user, &r.token_password),
    ] {
        let sb = Sandbox::new();
        let f = sb.write_auth("auth.json", registry, user, password);
        let image = format!("docker://{registry}/mco/mco-4.16:v1");
        let got = inject_without_provenance(
            &sb,
            &image,
            &[
                "--authfile",
                &f.display().to_string(),
                "--cert-dir",
                &r.ca_dir,
            ],
        );
        assert_eq!(got, want, "{image}");
        // verify reaches the registry with the same flags, and agrees on the binary.
        let ign = sb.path("out.ign").display().to_string();
        sb.ok(&[
            "verify",
            &ign,
            "--image",
            &image,
            "--authfile",
            &f.display().to_string(),
            "--cert-dir",
            &r.ca_dir,
        ]);
        let err = sb.fails(&["verify", &ign, "--image", &image, "--cert-dir", &r.ca_dir]);
        assert!(err.contains("401") || err.contains("credentials"), "{err}");
    }
}

#[test]
fn basic_auth_from_every_credential_file() {
    let r = registries();
    let image = format!("{}/mco/small:v1", r.basic);
    let want = from_disk("mco-small", MCD, &[]);
    let tls = ["--cert-dir", r.ca_dir.as_str()];

    // --authfile
    let sb = Sandbox::new();
    let f = sb.write_auth("a.json", &r.basic, &r.basic_user, &r.basic_password);
    let f = f.display().to_string();
    let mut args = tls.to_vec();
    args.extend(["--authfile", f.as_str()]);
    assert_eq!(sb.extract(&image, MCD, &args), want);

    // REGISTRY_AUTH_FILE, and it wins over the default files
    let mut sb = Sandbox::new();
    sb.write_auth("run/containers/auth.json", &r.basic, &r.basic_user, "wrong");
    let f = sb.write_auth("b.json", &r.basic, &r.basic_user, &r.basic_password);
    sb.env
        .insert("REGISTRY_AUTH_FILE".into(), f.display().to_string());
    assert_eq!(sb.extract(&image, MCD, &tls), want);

    // $XDG_RUNTIME_DIR/containers/auth.json, with a path-scoped key beating the host key
    let sb = Sandbox::new();
    let path = sb.path("run/containers/auth.json");
    let enc =
        |u: &str, p: &str| base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
    let body = serde_json::json!({ "auths": {
        r.basic.clone(): { "auth": enc(&r.basic_user, "wrong") },
        format!("{}/mco", r.basic): { "auth": enc(&r.basic_user, "wrong-too") },
        format!("{}/mco/small", r.basic): { "auth": enc(&r.basic_user, &r.basic_password) },
    }});
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, serde_json::to_vec(&body).unwrap()).unwrap();
    assert_eq!(sb.extract(&image, MCD, &tls), want);

    // ~/.docker/config.json (an OpenShift pull secret has the same form)
    let sb = Sandbox::new();
    sb.write_auth(
        "home/.docker/config.json",
        &r.basic,
        &r.basic_user,
        &r.basic_password,
    );
    assert_eq!(sb.extract(&image, MCD, &tls), want);
}

#[test]
fn bearer_token_auth_with_a_multi_arch_index() {
    let r = registries();
    let sb = Sandbox::new();
    let f = sb.write_auth("t.json", &r.token, &r.token_user, &r.token_password);
    let f = f.display().to_string();
    let image = format!("docker://{}/mco/multiarch:v1", r.token);
    for platform in ["linux/amd64", "linux/arm64"] {
        let got = sb.extract(
            &image,
            MCD,
            &[
                "--authfile",
                &f,
                "--cert-dir",
                &r.ca_dir,
                "--platform",
                platform,
            ],
        );
        assert_eq!(
            got,
            from_disk("mco-multiarch", MCD, &["--platform", platform]),
            "{platform}"
        );
    }
    let err = sb.fails(&[
        "inspect",
        "--image",
        &image,
        "--authfile",
        &f,
        "--cert-dir",
        &r.ca_dir,
        "--platform",
        "linux/s390x",
    ]);
    assert!(err.contains("no image for platform linux/s390x"), "{err}");
}

#[test]
fn wrong_or_missing_credentials_fail_clearly_without_leaking() {
    let r = registries();
    let sb = Sandbox::new();
    for (registry, user) in [(&r.basic, &r.basic_user), (&r.token, &r.token_user)] {
        let secret = "s3cr3t-not-the-password";
        let f = sb.write_auth("bad.json", registry, user, secret);
        let image = format!("{registry}/mco/small:v1");
        let err = sb.fails(&[
            "inspect",
            "--image",
            &image,
            "--cert-dir",
            &r.ca_dir,
            "--authfile",
            &f.display().to_string(),
        ]);
        assert!(
            err.contains(&format!("registry {registry}, repository mco/small")),
            "{err}"
        );
        assert!(err.contains("401") || err.contains("refused"), "{err}");
        assert!(!err.contains(secret), "the password leaked: {err}");
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{secret}"));
        assert!(!err.contains(&encoded), "the auth string leaked: {err}");

        let err = sb.fails(&["inspect", "--image", &image, "--cert-dir", &r.ca_dir]);
        assert!(
            err.contains("credentials") && err.contains(registry.as_str()),
            "{err}"
        );
    }
}

#[test]
fn missing_repository_and_tag_are_named() {
    let r = registries();
    let sb = Sandbox::new();
    let err = sb.fails(&[
        "inspect",
        "--image",
        &format!("{}/mco/nothing-here:v1", r.anon),
        "--tls-verify=false",
    ]);
    assert!(
        err.contains(&format!(
            "registry {}, repository mco/nothing-here: the repository does not exist",
            r.anon
        )),
        "{err}"
    );
    let err = sb.fails(&[
        "inspect",
        "--image",
        &format!("{}/mco/small:v404", r.anon),
        "--tls-verify=false",
    ]);
    assert!(
        err.contains(&format!("registry {}, repository mco/small", r.anon))
            && err.contains("tag \"v404\" does not exist"),
        "{err}"
    );
}

/// Puts `docker-credential-NAME` on the sandbox's PATH: it answers `get` for `server`
/// with the given user and secret, and "not found" for any other server.
fn install_helper(sb: &mut Sandbox, name: &str, server: &str, user: &str, secret: &str) {
    use std::os::unix::fs::PermissionsExt;
    let bin = sb.path("bin");
    fs::create_dir_all(&bin).unwrap();
    let script = bin.join(format!("docker-credential-{name}"));
    fs::write(
        &script,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 2\nread -r server\n\
             if [ \"$server\" = '{server}' ]; then\n\
             printf '{{\"ServerURL\":\"%s\",\"Username\":\"{user}\",\"Secret\":\"{secret}\"}}' \"$server\"\n\
             else echo 'credentials not found in native keychain'; exit 1; fi\n"
        ),
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    sb.env.insert("PATH".into(), path);
}

#[test]
fn credential_helpers_answer_for_their_registry() {
    let r = registries();
    let want = from_disk("mco-small", MCD, &[]);
    let image = format!("{}/mco/small:v1", r.basic);
    let tls = ["--cert-dir", r.ca_dir.as_str()];
    let mut sb = Sandbox::new();
    install_helper(&mut sb, "fake", &r.basic, &r.basic_user, &r.basic_password);
    let write = |name: &str, body: serde_json::Value| {
        let f = sb.path(name);
        fs::write(&f, serde_json::to_vec(&body).unwrap()).unwrap();
        f.display().to_string()
    };
    // credHelpers names the helper for this registry; it wins over auths.
    let bad = base64::engine::general_purpose::STANDARD.encode("x:wrong");
    let helpers = write(
        "helpers.json",
        serde_json::json!({"credHelpers": {r.basic.as_str(): "fake"},
                           "auths": {r.basic.as_str(): {"auth": bad}}}),
    );
    let mut args = tls.to_vec();
    args.extend(["--authfile", helpers.as_str()]);
    assert_eq!(sb.extract(&image, MCD, &args), want, "credHelpers");
    // credsStore answers for registries that auths does not name.
    let store = write("store.json", serde_json::json!({"credsStore": "fake"}));
    let mut args = tls.to_vec();
    args.extend(["--authfile", store.as_str()]);
    assert_eq!(sb.extract(&image, MCD, &args), want, "credsStore");
    // A helper that is not installed is an error that names it.
    let elsewhere = write(
        "elsewhere.json",
        serde_json::json!({"credHelpers": {r.basic.as_str(): "none"}}),
    );
    let err = sb.fails(&[
        "inspect",
        "--image",
        &image,
        "--cert-dir",
        &r.ca_dir,
        "--authfile",
        &elsewhere,
    ]);
    assert!(err.contains("docker-credential-none"), "{err}");
    assert!(
        !err.contains(&r.basic_password),
        "the password leaked: {err}"
    );
}

#[test]
fn tls_is_verified_by_default_for_loopback_too() {
    let r = registries();
    let sb = Sandbox::new();
    let f = sb.write_auth("a.json", &r.basic, &r.basic_user, &r.basic_password);
    let f = f.display().to_string();
    let image = format!("{}/mco/small:v1", r.basic);
    let err = sb.fails(&["inspect", "--image", &image, "--authfile", &f]);
    assert!(
        err.contains("TLS failed") && err.contains("--cert-dir"),
        "{err}"
    );
    // --tls-verify=false accepts the unverified certificate ...
    sb.ok(&[
        "inspect",
        "--image",
        &image,
        "--authfile",
        &f,
        "--tls-verify=false",
    ]);
    // ... and plain http, which is refused by default.
    let plain = format!("{}/mco/small:v1", r.anon);
    let err = sb.fails(&["inspect", "--image", &plain]);
    assert!(err.contains("TLS failed"), "{err}");
}

/// Removes a directory when dropped.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn without_cert_dir_the_registry_certs_d_directory_is_used() {
    // containers-certs.d(5), as skopeo: /etc/containers/certs.d/HOST:PORT/*.crt. The
    // token registry is used because no other test reaches it without --cert-dir.
    let r = registries();
    let dir = Path::new("/etc/containers/certs.d").join(&r.token);
    fs::create_dir_all(&dir).expect("this test writes /etc/containers/certs.d: run it as root");
    let _cleanup = RemoveOnDrop(dir.clone());
    fs::copy(Path::new(&r.ca_dir).join("ca.crt"), dir.join("ca.crt")).unwrap();
    let sb = Sandbox::new();
    let f = sb.write_auth("t.json", &r.token, &r.token_user, &r.token_password);
    let image = format!("{}/mco/small:v1", r.token);
    assert_eq!(
        sb.extract(&image, MCD, &["--authfile", &f.display().to_string()]),
        from_disk("mco-small", MCD, &[])
    );
}

#[test]
fn a_digest_reference_must_match() {
    let r = registries();
    let sb = Sandbox::new();
    let digest = sb.manifest_digest(&format!("{}/mco/small:v1", r.anon));
    let by_digest = format!("{}/mco/small@{digest}", r.anon);
    assert_eq!(
        sb.extract(&by_digest, MCD, &["--tls-verify=false"]),
        from_disk("mco-small", MCD, &[])
    );
    let other = format!("sha256:{}", "0".repeat(64));
    let err = sb.fails(&[
        "inspect",
        "--image",
        &format!("{}/mco/small@{other}", r.anon),
        "--tls-verify=false",
    ]);
    assert!(err.contains(&other) && err.contains("404"), "{err}");
}

#[test]
fn a_manifest_that_does_not_match_its_digest_is_refused() {
    let r = registries();
    let sb = Sandbox::new();
    let digest = sb.manifest_digest(&format!("{}/mco/small:v1", r.anon));
    let proxy = Proxy::start(&r.anon, "manifest-space");
    let fresh = Sandbox::new();
    let err = fresh.fails(&[
        "inspect",
        "--image",
        &format!("{}/mco/small@{digest}", proxy.addr),
        "--tls-verify=false",
    ]);
    assert!(err.contains("does not match the digest"), "{err}");
    let err = fresh.fails(&[
        "inspect",
        "--image",
        &format!("{}/mco/small:v1", proxy.addr),
        "--tls-verify=false",
    ]);
    assert!(
        err.contains(&format!("the registry says the manifest is {digest}")),
        "{err}"
    );
}

#[test]
fn schema1_manifests_are_refused_clearly() {
    let r = registries();
    let proxy = Proxy::start(&r.anon, "schema1");
    let err = Sandbox::new().fails(&[
        "inspect",
        "--image",
        &format!("{}/mco/small:v1", proxy.addr),
        "--tls-verify=false",
    ]);
    assert!(
        err.contains("schema1") && err.contains("unsupported"),
        "{err}"
    );
}

#[test]
fn access_denied_names_registry_repository_and_tag() {
    let r = registries();
    let proxy = Proxy::start(&r.anon, "403");
    let sb = Sandbox::new();
    let out = sb.path("out");
    let err = sb.fails(&[
        "extract",
        "--image",
        &format!("{}/mco/small:v1", proxy.addr),
        "--path",
        MCD,
        "-o",
        out.to_str().unwrap(),
        "--tls-verify=false",
    ]);
    assert!(
        err.contains("403")
            && err.contains(&proxy.addr)
            && err.contains("mco/small")
            && err.contains("v1"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn proxies_from_the_environment_are_honoured() {
    let r = registries();
    // The fault proxy also serves absolute-form requests, so it can act as HTTP_PROXY.
    let proxy = Proxy::start(&r.anon, "pass");
    let mut sb = Sandbox::new();
    sb.env
        .insert("HTTP_PROXY".into(), format!("http://{}", proxy.addr));
    let image = format!("{}/mco/mco-4.16:v1", r.anon);
    assert_eq!(
        sb.extract(&image, MCD, &["--tls-verify=false", "-q"]),
        from_disk("mco-4.16", MCD, &[])
    );
    assert_eq!(proxy.stats()["blob_gets"], 2);
    let mut sb = Sandbox::new();
    sb.env
        .insert("HTTP_PROXY".into(), format!("http://{}", proxy.addr));
    sb.env.insert("NO_PROXY".into(), "127.0.0.1".into());
    sb.extract(&image, MCD, &["--tls-verify=false", "-q"]);
    assert_eq!(proxy.stats()["blob_gets"], 2, "NO_PROXY was ignored");
}

// ------------------------------------------------------------------ layers and faults

#[test]
fn only_the_layers_the_answer_needs_are_downloaded() {
    let r = registries();
    let proxy = Proxy::start(&r.anon, "pass");
    let sb = Sandbox::new();
    let image = format!("{}/mco/mco-4.16:v1", proxy.addr);
    let out = sb.path("out").display().to_string();
    let run = sb.ok(&[
        "extract",
        "--image",
        &image,
        "--tls-verify=false",
        "--path",
        MCD,
        "-o",
        &out,
    ]);
    assert_eq!(fs::read(&out).unwrap(), from_disk("mco-4.16", MCD, &[]));
    // Off a terminal, progress is plain lines.
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("fetching mco/mco-4.16 sha256:") && stderr.contains(", done"),
        "{stderr}"
    );
    let layers = manifest_layers("mco-4.16");
    assert!(layers.len() >= 2);
    let stats = proxy.stats();
    let paths: Vec<&str> = stats["blob_paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    // The config and the top layer; no lower layer.
    assert_eq!(stats["blob_gets"], 2, "{paths:?}");
    assert!(paths.iter().any(|p| p.ends_with(layers.last().unwrap())));
    for lower in &layers[..layers.len() - 1] {
        assert!(
            !paths.iter().any(|p| p.ends_with(lower.as_str())),
            "{paths:?}"
        );
    }
    // A second run reads the cache only.
    sb.extract(&image, MCD, &["--tls-verify=false"]);
    assert_eq!(proxy.stats()["blob_gets"], 2);
}

fn fault_run(mode: &str) -> (Sandbox, Proxy, Output, Duration) {
    fault_run_with(mode, &[])
}

fn fault_run_with(mode: &str, extra: &[&str]) -> (Sandbox, Proxy, Output, Duration) {
    let r = registries();
    let proxy = Proxy::start(&r.anon, mode);
    let sb = Sandbox::new().fast_retries();
    let out = sb.path("out");
    let started = Instant::now();
    let image = format!("{}/mco/mco-4.16:v1", proxy.addr);
    let out = out.display().to_string();
    let mut args = vec![
        "extract",
        "--image",
        &image,
        "--tls-verify=false",
        "--path",
        MCD,
        "-o",
        &out,
    ];
    args.extend_from_slice(extra);
    let run = sb.run(&args);
    (sb, proxy, run, started.elapsed())
}

fn assert_recovered(mode: &str, sb: &Sandbox, run: &Output) {
    assert!(
        run.status.success(),
        "{mode}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        fs::read(sb.path("out")).unwrap(),
        from_disk("mco-4.16", MCD, &[]),
        "{mode}"
    );
    assert_no_partials(&sb.cache());
}

#[test]
fn a_blob_cut_mid_way_resumes_with_range_and_is_verified() {
    let (sb, proxy, run, _) = fault_run("cut");
    assert_recovered("cut", &sb, &run);
    let stats = proxy.stats();
    let ranges = stats["ranges"].as_array().unwrap();
    assert!(
        ranges
            .iter()
            .any(|r| r.as_str().unwrap().starts_with("bytes=")),
        "no Range request: {stats}"
    );
    let top = manifest_layers("mco-4.16").pop().unwrap();
    assert!(cached_blobs(&sb.cache()).contains(&top["sha256:".len()..].to_string()));
}

#[test]
fn a_server_error_is_retried() {
    let (sb, _proxy, run, _) = fault_run("500");
    assert_recovered("500", &sb, &run);
    assert!(String::from_utf8_lossy(&run.stderr).contains("retrying"));
}

#[test]
fn too_many_requests_honours_retry_after() {
    let (sb, _proxy, run, took) = fault_run("429");
    assert_recovered("429", &sb, &run);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("429") && stderr.contains("retrying in 1.0 s"),
        "{stderr}"
    );
    assert!(took >= Duration::from_secs(1), "{took:?}");
}

#[test]
fn a_changed_byte_fails_and_nothing_is_written() {
    let (sb, _proxy, run, _) = fault_run("flip");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "a corrupt layer was accepted");
    assert!(stderr.contains("corrupt"), "{stderr}");
    assert!(
        !sb.path("out").exists(),
        "output written from a corrupt layer"
    );
    let top = manifest_layers("mco-4.16").pop().unwrap();
    assert!(
        !cached_blobs(&sb.cache()).contains(&top["sha256:".len()..].to_string()),
        "a corrupt layer entered the cache"
    );
    assert_no_partials(&sb.cache());
}

#[test]
fn a_blob_cut_every_time_fails_clearly() {
    let (sb, _proxy, run, _) = fault_run("cut-all");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{stderr}");
    assert!(
        stderr.contains("gave up") || stderr.contains("was cut"),
        "{stderr}"
    );
    assert!(!sb.path("out").exists());
    assert_no_partials(&sb.cache());
}

// ------------------------------------------------------------------ cache and offline

#[test]
fn offline_uses_the_cache_with_the_registry_gone() {
    let r = registries();
    let mut proxy = Proxy::start(&r.anon, "pass");
    // With the registry gone, the runs that may still go online retry and give up.
    let sb = Sandbox::new().fast_retries();
    let image = format!("{}/mco/mco-4.16:v1", proxy.addr);
    let want = from_disk("mco-4.16", MCD, &[]);

    // Offline with an empty cache: a clear error, no network.
    let err = sb.fails(&[
        "extract",
        "--image",
        &image,
        "--offline",
        "--path",
        MCD,
        "-o",
        "-",
    ]);
    assert!(
        err.contains("not in the cache") && err.contains("mcd-inject pull"),
        "{err}"
    );
    assert_eq!(proxy.stats()["blob_gets"], 0);

    // An extract caches only the top layer: offline, a lower layer is missing, and
    // index.json (what skopeo and umoci read) does not list the incomplete image.
    assert_eq!(sb.extract(&image, MCD, &["--tls-verify=false"]), want);
    let listed = |file: &str, image: &str| {
        let path = sb.cache().join(file);
        fs::read(&path).is_ok_and(|b| String::from_utf8_lossy(&b).contains(image))
    };
    assert!(listed("mcd-inject-refs.json", &image) && !listed("index.json", &image));
    proxy.stop();
    assert_eq!(sb.extract(&image, MCD, &["--offline"]), want);
    let err = sb.fails(&["inspect", "--image", &image, "--offline"]);
    assert!(
        err.contains("layer sha256:") && err.contains("not in the cache"),
        "{err}"
    );
    let err = sb.fails(&["inspect", "--image", &image, "--tls-verify=false"]);
    assert!(err.contains("gave up"), "{err}");

    // pull fills the cache; then everything works offline, and skopeo and umoci
    // read the cache as an OCI layout.
    let proxy = Proxy::start(&r.anon, "pass");
    let image = format!("{}/mco/mco-4.16:v1", proxy.addr);
    sb.ok(&["pull", "--image", &image, "--tls-verify=false", "-q"]);
    drop(proxy);
    assert!(listed("index.json", &image));
    sb.ok(&["inspect", "--image", &image, "--offline"]);
    assert_eq!(sb.extract(&image, MCD, &["--offline"]), want);
    let cache = sb.cache().display().to_string();
    let tool = |program: &str, args: &[&str]| {
        let out = Command::new(program).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    tool(
        "skopeo",
        &["inspect", "--raw", &format!("oci:{cache}:{image}")],
    );
    let rootfs = sb.path("unpacked").display().to_string();
    tool(
        "umoci",
        &[
            "raw",
            "unpack",
            "--rootless",
            "--image",
            &format!("{cache}:{image}"),
            &rootfs,
        ],
    );
    assert_eq!(
        fs::read(sb.path("unpacked").join("usr/bin/machine-config-daemon")).unwrap(),
        want
    );
}

#[test]
fn two_runs_can_share_a_cache() {
    let r = registries();
    let sb = Sandbox::new();
    let cache = sb.cache();
    let spawn = |image: String, out: PathBuf| {
        let (out, cache) = (out.display().to_string(), cache.display().to_string());
        Bin::new([
            "extract",
            "--tls-verify=false",
            "-q",
            "--path",
            MCD,
            "--image",
            &image,
            "-o",
            &out,
            "--cache-dir",
            &cache,
        ])
        .spawn()
    };
    let mut children = Vec::new();
    for i in 0..4 {
        let name = if i % 2 == 0 { "small" } else { "mco-4.16" };
        children.push((
            name,
            i,
            spawn(
                format!("{}/mco/{name}:v1", r.anon),
                sb.path(&format!("o{i}")),
            ),
        ));
    }
    for (name, i, child) in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let fixture = if name == "small" {
            "mco-small"
        } else {
            "mco-4.16"
        };
        assert_eq!(
            fs::read(sb.path(&format!("o{i}"))).unwrap(),
            from_disk(fixture, MCD, &[])
        );
    }
    // Extracts fetch only the top layers: the references are recorded as partial.
    let refs: serde_json::Value =
        serde_json::from_slice(&fs::read(cache.join("mcd-inject-refs.json")).unwrap()).unwrap();
    assert_eq!(refs["manifests"].as_array().unwrap().len(), 2, "{refs}");
    assert_no_partials(&cache);
}

// ------------------------------------------------------------------ stalls and interruptions

/// Waits for a background run, killing it and failing the test if it hangs.
fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let status = wait_child(&mut child, limit)
        .unwrap_or_else(|| panic!("mcd-inject hung for more than {limit:?}"));
    let mut stderr = String::new();
    use std::io::Read as _;
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (status.code(), stderr, started.elapsed())
}

fn inject_args(image: &str, out: &Path, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "inject",
        "--image",
        image,
        "--tls-verify=false",
        "--bootimage",
        "4.2",
        "--ign",
    ]
    .map(String::from)
    .to_vec();
    v.push(out.display().to_string());
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn a_stalled_download_is_cut_and_resumed() {
    let (sb, proxy, run, _) = fault_run_with("slow", &["--low-speed-time", "1s"]);
    assert_recovered("slow", &sb, &run);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("below the low-speed limit"), "{stderr}");
    let stats = proxy.stats();
    assert!(
        !stats["ranges"].as_array().unwrap().is_empty(),
        "no resumption with Range: {stats}"
    );
}

/// Runs inject through the fault proxy in `mode` with `extra` flags; it must fail with
/// exit code 1, write nothing and leave no temp entry. Returns its stderr.
fn failed_inject(mode: &str, extra: &[&str]) -> String {
    let r = registries();
    let proxy = Proxy::start(&r.anon, mode);
    let sb = Sandbox::new().fast_retries();
    let image = format!("{}/mco/mco-4.16:v1", proxy.addr);
    let out = sb.path("out.ign");
    let args = inject_args(&image, &out, extra);
    let (code, stderr, _) = finish(sb.spawn(&strs(&args)), Duration::from_secs(120));
    assert_eq!(code, Some(1), "{mode} {extra:?}: {stderr}");
    assert!(!out.exists(), "{mode} {extra:?}");
    assert_eq!(
        leftovers(sb.dir.path()),
        Vec::<PathBuf>::new(),
        "{mode} {extra:?}"
    );
    stderr
}

#[test]
fn a_download_stalled_every_time_gives_up() {
    let stderr = failed_inject("slow-all", &["--low-speed-time", "500ms"]);
    assert!(
        stderr.contains("below the low-speed limit") && stderr.contains("gave up"),
        "{stderr}"
    );
}

#[test]
fn a_silent_registry_is_given_up_soon() {
    let stderr = failed_inject("silent", &["--low-speed-time", "1s"]);
    assert!(stderr.contains("no answer within 1 s"), "{stderr}");
}

#[test]
fn a_long_retry_after_fails_at_once_saying_what_was_asked() {
    let stderr = failed_inject("429-long", &[]);
    assert!(
        stderr.contains("asked to wait 3600 s") && stderr.contains("Retry-After"),
        "{stderr}"
    );
}

#[test]
fn timeout_stops_the_whole_run_and_leaves_nothing() {
    let stderr = failed_inject("slow-all", &["--low-speed-limit", "0", "--timeout", "3s"]);
    assert!(stderr.contains("--timeout 3 s"), "{stderr}");
}

/// Starts an inject that stalls in a layer download, and waits until it has temp
/// entries both in the cache and beside its output.
fn stalled_inject(sb: &Sandbox, proxy: &Proxy) -> (Child, PathBuf) {
    let image = format!("{}/mco/mco-4.16:v1", proxy.addr);
    let outdir = sb.path("outdir");
    fs::create_dir_all(&outdir).unwrap();
    let out = outdir.join("out.ign");
    let args = inject_args(&image, &out, &["--low-speed-limit", "0", "-q"]);
    let child = sb.spawn(&strs(&args));
    let cache = sb.cache();
    wait_until(
        "temp entries in the cache and beside the output",
        Duration::from_secs(60),
        || !leftovers(&cache).is_empty() && !leftovers(&outdir).is_empty(),
    );
    (child, out)
}

#[test]
fn sigint_and_sigterm_remove_the_temp_files() {
    let r = registries();
    let proxy = Proxy::start(&r.anon, "slow-all");
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let sb = Sandbox::new();
        let (child, out) = stalled_inject(&sb, &proxy);
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let (got, stderr, _) = finish(child, Duration::from_secs(30));
        assert_eq!(got, Some(code), "SIG{signal}: {stderr}");
        assert!(!out.exists());
        assert_eq!(
            leftovers(sb.dir.path()),
            Vec::<PathBuf>::new(),
            "SIG{signal}"
        );
    }
}

#[test]
fn leftovers_of_a_killed_run_are_removed_by_the_next_one() {
    let r = registries();
    let sb = Sandbox::new();
    let stalled = Proxy::start(&r.anon, "slow-all");
    let (mut child, out) = stalled_inject(&sb, &stalled);
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let left = leftovers(sb.dir.path());
    assert!(left.len() >= 2, "{left:?}");
    // A later run in the same places removes them (their process is gone).
    let image = format!("{}/mco/mco-4.16:v1", r.anon);
    let args = inject_args(&image, &out, &["-q"]);
    let (code, stderr, _) = finish(sb.spawn(&strs(&args)), Duration::from_secs(120));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(out.exists());
    assert_eq!(leftovers(sb.dir.path()), Vec::<PathBuf>::new());
}

// ------------------------------------------------------------------ a damaged cache

fn config_digest(layout_name: &str) -> String {
    let dir = registries().fixtures.join("layouts").join(layout_name);
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("index.json")).unwrap()).unwrap();
    let digest = index["manifests"][0]["digest"].as_str().unwrap();
    let m: serde_json::Value = serde_json::from_slice(
        &fs::read(dir.join("blobs/sha256").join(&digest["sha256:".len()..])).unwrap(),
    )
    .unwrap();
    m["config"]["digest"].as_str().unwrap().to_string()
}

/// Changes one byte in the middle of a cached blob (same size, another digest).
fn damage(cache: &Path, digest: &str) -> PathBuf {
    let path = cache.join("blobs/sha256").join(&digest["sha256:".len()..]);
    let mut bytes = fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_damaged_cache_heals_online_and_offline_says_how_to_repair() {
    let r = registries();
    let sb = Sandbox::new();
    let image = format!("{}/mco/mco-4.16:v1", r.anon);
    let want = from_disk("mco-4.16", MCD, &[]);
    let cache = sb.cache();
    let quiet = sb.ok(&["pull", "--image", &image, "--tls-verify=false", "-q"]);
    assert!(
        quiet.stdout.is_empty() && quiet.stderr.is_empty(),
        "{quiet:?}"
    );
    let repair_hint =
        |err: &str| err.contains("without --offline") && err.contains("mcd-inject pull");

    // A garbage index.json: offline fails saying how to repair; online rebuilds it.
    fs::write(cache.join("index.json"), b"{ not json").unwrap();
    let err = sb.fails(&["inspect", "--image", &image, "--offline"]);
    assert!(
        err.contains("index.json") && err.contains("damaged") && repair_hint(&err),
        "{err}"
    );
    // The warning is on stderr; under -q, only in the report.
    let run = sb.ok(&["pull", "--image", &image, "--tls-verify=false"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("warning:") && stderr.contains("rebuilt"),
        "{stderr}"
    );
    fs::write(cache.join("index.json"), b"{ not json").unwrap();
    let run = sb.ok(&[
        "pull",
        "--image",
        &image,
        "--tls-verify=false",
        "-q",
        "--json",
    ]);
    assert!(run.stderr.is_empty(), "{run:?}");
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(v["warnings"][0]["kind"], "cache-index-rebuilt", "{v:#}");
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(cache.join("index.json")).unwrap()).unwrap();
    assert_eq!(index["manifests"].as_array().unwrap().len(), 1, "{index}");

    // A damaged layer: offline fails (and drops it) saying how to repair ...
    let top = manifest_layers("mco-4.16").pop().unwrap();
    let top_path = damage(&cache, &top);
    let err = sb.fails(&[
        "extract",
        "--image",
        &image,
        "--offline",
        "--path",
        MCD,
        "-o",
        "-",
    ]);
    assert!(err.contains("damaged") && repair_hint(&err), "{err}");
    assert!(!top_path.exists(), "the damaged blob stayed in the cache");
    // ... and online it is fetched again, with a warning.
    damage_after_refetch(&sb, &image, &top, &want);

    // pull repairs a damaged layer that no other command reads.
    let bottom = manifest_layers("mco-4.16").remove(0);
    let bottom_path = damage(&cache, &bottom);
    let run = sb.ok(&["pull", "--image", &image, "--tls-verify=false"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("fetching it again"), "{stderr}");
    let healed = fs::read(&bottom_path).unwrap();
    assert_eq!(
        format!("sha256:{}", sha256_hex(&healed)),
        bottom,
        "pull did not repair the layer"
    );

    // A damaged config: offline fails saying how to repair; online fetches it again.
    let config = config_digest("mco-4.16");
    damage(&cache, &config);
    let err = sb.fails(&["inspect", "--image", &image, "--offline"]);
    assert!(err.contains("damaged") && repair_hint(&err), "{err}");
    sb.ok(&["inspect", "--image", &image, "--tls-verify=false"]);
    damage(&cache, &config);
    let run = sb.ok(&["inspect", "--image", &image, "--tls-verify=false"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("warning:") && stderr.contains("fetching it again"),
        "{stderr}"
    );
    sb.ok(&["inspect", "--image", &image, "--offline"]);
    assert_eq!(leftovers(sb.dir.path()), Vec::<PathBuf>::new());
}

/// The arguments of an online `extract` of the MCD from `image` to `out`.
fn online_extract<'a>(image: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "extract",
        "--image",
        image,
        "--tls-verify=false",
        "--path",
        MCD,
    ];
    args.extend(["-o", out]);
    args.extend(extra);
    args
}

/// Puts the layer back online, damages it again, and checks that an online run heals it
/// in the same run.
fn damage_after_refetch(sb: &Sandbox, image: &str, layer: &str, want: &[u8]) {
    let cache = sb.cache();
    sb.ok(&["pull", "--image", image, "--tls-verify=false", "-q"]);
    damage(&cache, layer);
    let out = sb.path("healed");
    let run = sb.ok(&online_extract(image, &out.display().to_string(), &[]));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("warning:")
            && stderr.contains("damaged")
            && stderr.contains("fetching it again"),
        "{stderr}"
    );
    assert_eq!(fs::read(&out).unwrap(), want);
    assert!(cached_blobs(&cache).contains(&layer["sha256:".len()..].to_string()));
    assert_eq!(sb.extract(image, MCD, &["--offline"]), want);

    // With --strict the same heal fails the run, after the warning, with no output.
    damage(&cache, layer);
    let strict_out = sb.path("strict");
    let err = sb.fails(&online_extract(
        image,
        &strict_out.display().to_string(),
        &["--strict"],
    ));
    assert_eq!(err.matches("warning: cached blob").count(), 1, "{err}");
    assert!(err.contains("error: --strict: 1 warning"), "{err}");
    assert!(!strict_out.exists(), "--strict wrote its output");
}

#[test]
fn logs_name_endpoints_and_cache_entries_but_never_a_secret() {
    let r = registries();
    for (registry, user, password) in [
        (&r.basic, &r.basic_user, &r.basic_password),
        (&r.token, &r.token_user, &r.token_password),
    ] {
        let mut sb = Sandbox::new();
        let f = sb.write_auth("auth.json", registry, user, password);
        // Credentials through the environment variable, the way CI sets them.
        sb.env
            .insert("MCD_INJECT_AUTHFILE".into(), f.display().to_string());
        let image = format!("{registry}/mco/small:v1");
        let args = ["pull", "--json", "--image", &image, "--cert-dir", &r.ca_dir];
        let mut verbose = args.to_vec();
        verbose.push("-vvv");
        let out = sb.ok(&verbose);
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            log.contains(&format!(
                "https://{registry}/v2/mco/small: tag \"v1\": 200 OK"
            )),
            "no endpoint line in:\n{log}"
        );
        assert!(log.contains("cache store: "), "{log}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        assert_eq!(
            v["image"]["reference"],
            format!("docker://{registry}/mco/small:v1")
        );
        let layers = v["image"]["layers"].as_array().unwrap().len();
        assert_eq!(v["layers_fetched"], layers);
        assert_eq!(v["cache"], sb.cache().display().to_string());

        // A second pull fetches nothing and says which cache entries it used.
        let again = sb.ok(&verbose);
        let v: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
        assert_eq!(v["layers_fetched"], 0);
        let log2 = String::from_utf8_lossy(&again.stderr).into_owned();
        assert!(log2.contains("cache hit: "), "{log2}");

        // Every crate's trace logs too (RUST_LOG), through a fresh cache.
        sb.env.insert("RUST_LOG".into(), "trace".into());
        sb.env.insert(
            "MCD_INJECT_CACHE_DIR".into(),
            sb.path("cache2").display().to_string(),
        );
        let traced = sb.ok(&args);
        let log3 = String::from_utf8_lossy(&traced.stderr).into_owned();
        assert!(log3.contains("TRACE") || log3.contains("DEBUG"), "{log3}");
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        for text in [&log, &log2, &log3] {
            assert!(
                !text.contains(password.as_str()),
                "the password leaked:\n{text}"
            );
            assert!(!text.contains(&encoded), "the auth string leaked:\n{text}");
            assert!(!text.contains("Bearer "), "a token leaked:\n{text}");
        }
    }
}
