//! `--release` through mirrors, against real registries (distribution 2.8) on loopback.
//!
//! Each test starts registries of its own, so that it can stop them: a *source* with
//! Bearer-token auth over TLS (tests/support/token_issuer.py) and two *mirrors* with
//! htpasswd Basic auth over TLS. It builds a two-platform release image the way
//! `oc adm release new` lays one out (`/release-manifests/image-references`, an
//! ImageStream, and `/release-manifests/release-metadata`), pushes it and the MCO images
//! it names to the source with skopeo, mirrors them with `skopeo copy`, and then runs
//! `mcd-inject` with IDMS, ICSP, install-config and registries.conf forms.
//!
//! Needs `docker-registry`, `skopeo`, `htpasswd`, `python3`, and the TLS material that
//! `scripts/registry-services.sh start` writes (`MCD_TEST_REGISTRY_TLS_DIR`); panics when
//! one is missing.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use tempfile::TempDir;

use crate::harness::registry::{
    env, free_port, start_htpasswd_registry, start_token_registry, wait_listening, Creds, Sandbox,
    Service, REFRESH_TOKEN,
};
use crate::harness::{poll, require_tools, run_ok, sha256_hex, wait_until, BIN};

// ------------------------------------------------------------------ the release image

/// A gzip layer of these files (mode 0644) as builders write them: (blob, diff ID).
fn layer(files: &[(&str, &[u8])]) -> (Vec<u8>, String) {
    let files: Vec<(&str, &[u8], u32)> = files.iter().map(|(n, d)| (*n, *d, 0o644)).collect();
    let raw = crate::harness::tar_with_parents(&files);
    (
        crate::harness::gzip(&raw),
        format!("sha256:{}", sha256_hex(&raw)),
    )
}

fn put_blob(layout: &Path, bytes: &[u8]) -> Value {
    let hex = sha256_hex(bytes);
    let p = layout.join("blobs/sha256").join(&hex);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, bytes).unwrap();
    json!({"digest": format!("sha256:{hex}"), "size": bytes.len()})
}

/// Incompressible bytes, the same on every run.
fn filler(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut block = Sha256::digest(b"release filler").to_vec();
    while out.len() < len {
        block = Sha256::digest(&block).to_vec();
        out.extend_from_slice(&block);
    }
    out.truncate(len);
    out
}

fn image_references(version: &str, mco: &str) -> Vec<u8> {
    let tag = |name: &str, image: &str| {
        json!({
            "name": name,
            "annotations": {"io.openshift.build.source-location": "https://github.com/openshift/x"},
            "from": {"kind": "DockerImage", "name": image},
            "generation": null,
            "importPolicy": {},
            "referencePolicy": {"type": ""}
        })
    };
    let other = format!(
        "{}@sha256:{}",
        mco.split('@').next().unwrap(),
        "ab".repeat(32)
    );
    serde_json::to_vec_pretty(&json!({
        "kind": "ImageStream",
        "apiVersion": "image.openshift.io/v1",
        "metadata": {"name": version, "creationTimestamp": null,
                     "annotations": {"release.openshift.io/from-image-stream": "ocp/4.16-art-latest"}},
        "spec": {"lookupPolicy": {"local": false},
                 "tags": [tag("cluster-version-operator", &other),
                          tag("machine-config-operator", mco),
                          tag("machine-os-content", &other)]},
        "status": {"dockerImageRepository": ""}
    }))
    .unwrap()
}

/// Writes an OCI layout of a release index: one manifest per (arch, variant, MCO ref),
/// each with a large shared bottom layer and a small top layer of release manifests.
pub(crate) fn release_layout(
    layout: &Path,
    version: &str,
    platforms: &[(&str, Option<&str>, String)],
) {
    fs::create_dir_all(layout).unwrap();
    fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    let big = filler(3 << 20);
    let (base, base_diff) = layer(&[("usr/bin/cluster-version-operator", &big)]);
    let base_desc = put_blob(layout, &base);
    let metadata = serde_json::to_vec(&json!({
        "kind": "cincinnati-metadata-v0", "version": version, "previous": [], "metadata": {}
    }))
    .unwrap();
    let mut manifests = Vec::new();
    for (arch, variant, mco) in platforms {
        let refs = image_references(version, mco);
        let (top, top_diff) = layer(&[
            ("release-manifests/image-references", &refs),
            ("release-manifests/release-metadata", &metadata),
        ]);
        let top_desc = put_blob(layout, &top);
        let mut config = json!({
            "architecture": arch, "os": "linux", "config": {},
            "rootfs": {"type": "layers", "diff_ids": [base_diff, top_diff]}
        });
        if let Some(v) = variant {
            config["variant"] = json!(v);
        }
        let cdesc = put_blob(layout, &serde_json::to_vec(&config).unwrap());
        let gz = "application/vnd.oci.image.layer.v1.tar+gzip";
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": cdesc["digest"], "size": cdesc["size"]},
            "layers": [
                {"mediaType": gz, "digest": base_desc["digest"], "size": base_desc["size"]},
                {"mediaType": gz, "digest": top_desc["digest"], "size": top_desc["size"]}
            ]
        });
        let mdesc = put_blob(layout, &serde_json::to_vec(&manifest).unwrap());
        let mut platform = json!({"architecture": arch, "os": "linux"});
        if let Some(v) = variant {
            platform["variant"] = json!(v);
        }
        manifests.push(json!({
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": mdesc["digest"], "size": mdesc["size"], "platform": platform
        }));
    }
    let index = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": manifests
    });
    let idesc = put_blob(layout, &serde_json::to_vec(&index).unwrap());
    let top = json!({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "digest": idesc["digest"], "size": idesc["size"],
        "annotations": {"org.opencontainers.image.ref.name": version}
    }]});
    fs::write(layout.join("index.json"), serde_json::to_vec(&top).unwrap()).unwrap();
}

// ------------------------------------------------------------------ the world

/// Registries, the release pushed to the source and mirrored, and a pull secret.
struct World {
    dir: TempDir,
    source_services: Vec<Service>,
    _mirrors: Vec<Service>,
    source: String,
    mirror: String,
    mirror2: String,
    /// `SOURCE/ocp/release@sha256:...`
    release: String,
    release_digest: String,
    mco_digest: String,
    arm_mco_digest: String,
    ca_dir: String,
    source_creds: Creds,
    mirror_creds: Creds,
    /// The pull secret: right credentials for the source and the mirror, wrong ones for
    /// mirror2.
    secret: String,
}

fn skopeo_copy(args: &[&str]) -> String {
    let digestfile = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = Command::new("skopeo");
    cmd.args(["copy", "-q", "--digestfile"])
        .arg(digestfile.path())
        .args(args);
    run_ok(&mut cmd);
    fs::read_to_string(digestfile.path())
        .unwrap()
        .trim()
        .to_string()
}

impl World {
    fn new() -> World {
        for tool in ["docker-registry", "skopeo", "htpasswd", "python3"] {
            require_tools(&[tool]);
        }
        let dir = tempfile::tempdir().unwrap();
        let ca_dir = env("MCD_TEST_REGISTRY_CA_DIR");
        let fixtures = PathBuf::from(env("MCD_TEST_REGISTRY_FIXTURES"));
        let source_creds = Creds::new("robot");
        let mirror_creds = Creds::new("mirror");
        let mirror2_creds = Creds::new("mirror2");
        let (source_services, source) = start_token_registry(dir.path(), &source_creds);
        let (m1, mirror) = start_htpasswd_registry(dir.path(), "mirror", &mirror_creds);
        let (m2, mirror2) = start_htpasswd_registry(dir.path(), "mirror2", &mirror2_creds);

        let to_source = |from: &str, to: &str, all: bool| {
            let dest = format!("docker://{source}/{to}");
            let mut a = vec!["--dest-cert-dir", &ca_dir];
            let pair = source_creds.pair();
            a.extend(["--dest-creds", &pair]);
            if all {
                a.push("--all");
            }
            a.extend([from, &dest]);
            skopeo_copy(&a)
        };
        let layout = |n: &str| format!("oci:{}:latest", fixtures.join("layouts").join(n).display());
        let mco_digest = to_source(&layout("mco-small"), "ocp/art-dev:mco-amd64", false);
        let arm_mco_digest = to_source(&layout("mco-multiarch"), "ocp/art-dev:mco-multi", true);
        let rel_layout = dir.path().join("release-layout");
        let mco_ref = |d: &str| format!("{source}/ocp/art-dev@{d}");
        release_layout(
            &rel_layout,
            "4.16.3",
            &[
                ("amd64", None, mco_ref(&mco_digest)),
                ("arm64", Some("v8"), mco_ref(&arm_mco_digest)),
            ],
        );
        let release_digest = to_source(
            &format!("oci:{}:4.16.3", rel_layout.display()),
            "ocp/release:4.16.3-multi",
            true,
        );
        // Mirror everything, by digest, to both mirrors.
        for (m, creds) in [(&mirror, &mirror_creds), (&mirror2, &mirror2_creds)] {
            for (repo, digest, tag) in [
                ("release", &release_digest, "4.16.3-multi"),
                ("art-dev", &mco_digest, "mco-amd64"),
                ("art-dev", &arm_mco_digest, "mco-multi"),
            ] {
                let src = format!("docker://{source}/ocp/{repo}@{digest}");
                let dest = format!("docker://{m}/mirror/{repo}:{tag}");
                let got = skopeo_copy(&[
                    "--all",
                    "--preserve-digests",
                    "--src-cert-dir",
                    &ca_dir,
                    "--src-creds",
                    &source_creds.pair(),
                    "--dest-cert-dir",
                    &ca_dir,
                    "--dest-creds",
                    &creds.pair(),
                    &src,
                    &dest,
                ]);
                assert_eq!(&got, digest, "skopeo changed the digest while mirroring");
            }
        }
        let b64 = |c: &Creds| base64::engine::general_purpose::STANDARD.encode(c.pair());
        let wrong = Creds {
            user: mirror2_creds.user.clone(),
            password: "not-the-password".into(),
        };
        let pull_secret = dir.path().join("pull-secret.json");
        fs::write(
            &pull_secret,
            serde_json::to_vec(&json!({"auths": {
                source.as_str(): {"auth": b64(&source_creds), "email": "ci@example.com"},
                mirror.as_str(): {"auth": b64(&mirror_creds)},
                mirror2.as_str(): {"auth": b64(&wrong)},
            }}))
            .unwrap(),
        )
        .unwrap();
        World {
            release: format!("{source}/ocp/release@{release_digest}"),
            dir,
            source_services,
            _mirrors: vec![m1, m2],
            source,
            mirror,
            mirror2,
            release_digest,
            mco_digest,
            arm_mco_digest,
            ca_dir,
            source_creds,
            mirror_creds,
            secret: pull_secret.display().to_string(),
        }
    }

    fn stop_source(&mut self) {
        for s in &mut self.source_services {
            s.stop();
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, body: &str) -> String {
        let p = self.path(rel);
        fs::write(&p, body).unwrap();
        p.display().to_string()
    }

    /// An IDMS mapping both source repositories to these mirror hosts, in order.
    fn idms(&self, name: &str, mirrors: &[&str], policy: &str) -> String {
        let list = |repo: &str| {
            mirrors
                .iter()
                .map(|m| format!("{m}/mirror/{repo}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let policy = if policy.is_empty() {
            String::new()
        } else {
            format!("\n    mirrorSourcePolicy: {policy}")
        };
        self.write(
            name,
            &format!(
                "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\n\
                 metadata:\n  name: release\nspec:\n  imageDigestMirrors:\n\
                 \x20 - source: {s}/ocp/release\n    mirrors: [{}]{policy}\n\
                 \x20 - source: {s}/ocp/art-dev\n    mirrors: [{}]{policy}\n",
                list("release"),
                list("art-dev"),
                s = self.source,
            ),
        )
    }

    /// `CMD --release RELEASE EXTRA...`.
    fn rel_noauth<'a>(&'a self, cmd: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec![cmd, "--release", self.release.as_str()];
        v.extend_from_slice(extra);
        v
    }

    /// `CMD --release RELEASE --authfile PULL-SECRET EXTRA...`.
    fn rel<'a>(&'a self, cmd: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut v = self.rel_noauth(cmd, &["--authfile", self.secret.as_str()]);
        v.extend_from_slice(extra);
        v
    }

    /// Runs mcd-inject with its own HOME, XDG dirs and cache (unless args give one).
    fn run(&self, args: &[&str]) -> Output {
        self.run_with_config(args, None)
    }

    /// With `config`: that directory is `XDG_CONFIG_HOME` and no registries.conf is
    /// forced, so the user's `containers/` files there are the defaults.
    fn run_with_config(&self, args: &[&str], config: Option<&Path>) -> Output {
        let sb = Sandbox::new_in(self.dir.path());
        let empty_conf = sb.path("registries.conf");
        fs::write(&empty_conf, "").unwrap();
        let mut args = args.to_vec();
        args.extend(["--cert-dir", &self.ca_dir]);
        let bin = sb.bin(&args);
        let bin = match config {
            Some(c) => bin
                .env("XDG_CONFIG_HOME", c)
                .env_remove("CONTAINERS_REGISTRIES_CONF"),
            None => bin
                .env("XDG_CONFIG_HOME", sb.path("config"))
                .env("CONTAINERS_REGISTRIES_CONF", &empty_conf),
        };
        bin.run().into_output()
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "mcd-inject {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.code(),
            Some(1),
            "mcd-inject {} should have failed with 1:\n{stderr}",
            args.join(" ")
        );
        stderr
    }

    /// `inject --release ... --json`: the JSON, after checking the config was written.
    fn inject(&self, extra: &[&str]) -> Value {
        let out_dir = tempfile::tempdir_in(self.dir.path()).unwrap();
        let ign = out_dir.path().join("out.ign");
        let ign_s = ign.display().to_string();
        let mut args = self.rel("inject", &["--bootimage", "4.2", "--ign", &ign_s, "--json"]);
        args.extend_from_slice(extra);
        let out = self.ok(&args);
        let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object on stdout");
        let bytes = fs::read(&ign).unwrap();
        assert_eq!(v["config"]["size"], bytes.len());
        assert_eq!(
            v["config"]["sha256"],
            format!("sha256:{}", sha256_hex(&bytes))
        );
        assert_eq!(v["config"]["path"], ign_s);
        v
    }

    fn assert_release(&self, v: &Value) {
        assert_eq!(
            v["release"]["reference"],
            format!("docker://{}", self.release)
        );
        assert_eq!(v["release"]["digest"], self.release_digest);
        assert_eq!(v["release"]["version"], "4.16.3");
        assert_eq!(v["release"]["mco_digest"], self.mco_digest);
        assert_eq!(
            v["image"]["reference"],
            format!("docker://{}/ocp/art-dev@{}", self.source, self.mco_digest)
        );
        assert_eq!(v["image"]["manifest_digest"], self.mco_digest);
        assert_eq!(v["binary"]["path"], "/usr/bin/machine-config-daemon.rhel8");
        assert_eq!(v["target"]["bootimage"], "4.2");
        assert_eq!(v["target"]["spec"], "2.2.0");
        let sha512 = v["payload"]["sha512"].as_str().unwrap();
        assert!(
            sha512.len() == 7 + 128 && sha512.starts_with("sha512:"),
            "{sha512}"
        );
    }
}

#[test]
fn release_through_mirrors_with_the_source_down() {
    let mut w = World::new();
    w.stop_source();
    let src = w.source.clone();

    // The pipeline form: IDMS, the pull secret, the source down.
    let idms = w.idms("idms.yaml", &[&w.mirror], "");
    let v = w.inject(&["--idms", &idms]);
    w.assert_release(&v);
    let served = format!("{}/mirror/release", w.mirror);
    assert_eq!(v["release"]["served_by"], served);
    assert_eq!(
        v["image"]["served_by"],
        format!("{}/mirror/art-dev", w.mirror)
    );
    // The provenance in the config carries the release.
    let ign = w.path("verify.ign");
    let ign_s = ign.display().to_string();
    w.ok(&w.rel(
        "inject",
        &["--idms", &idms, "--bootimage", "4.2", "--ign", &ign_s, "-q"],
    ));
    let vj = w.ok(&["verify", &ign_s, "--json"]);
    let vj: Value = serde_json::from_slice(&vj.stdout).unwrap();
    assert_eq!(vj["ok"], true, "{vj:#}");
    assert_eq!(vj["provenance"]["release"]["version"], "4.16.3");
    assert_eq!(vj["provenance"]["release"]["mco_digest"], w.mco_digest);
    assert_eq!(vj["binary_sha256"], v["binary"]["sha256"]);
    // verify --release: the payload is what inject chooses from the release's MCO.
    let vr = w.ok(&w.rel("verify", &[&ign_s, "--idms", &idms, "--json"]));
    let vr: Value = serde_json::from_slice(&vr.stdout).unwrap();
    assert_eq!(vr["ok"], true, "{vr:#}");
    let passed = vr["passed"].as_array().unwrap();
    assert!(
        passed
            .iter()
            .any(|p| p.as_str().unwrap().contains("the binary inject chooses")),
        "{vr:#}"
    );
    // A config that does not match fails verify --json with exit 1, after the object.
    let other = w.path("other.ign");
    let other_s = other.display().to_string();
    let fx = PathBuf::from(env("MCD_TEST_REGISTRY_FIXTURES"));
    let mco_416 = format!("oci:{}:latest", fx.join("layouts/mco-4.16").display());
    w.ok(&[
        "inject",
        "--image",
        &mco_416,
        "--bootimage",
        "4.2",
        "--ign",
        &other_s,
        "-q",
    ]);
    let out = w.run(&w.rel("verify", &[&other_s, "--idms", &idms, "--json"]));
    assert_eq!(out.status.code(), Some(1));
    let vr: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(vr["ok"], false, "{vr:#}");
    assert!(
        vr["problems"][0]
            .as_str()
            .unwrap()
            .starts_with("inject would choose"),
        "{vr:#}"
    );

    // ICSP, install-config (both keys) and registries.conf say the same.
    let icsp = w.write(
        "icsp.yaml",
        &format!(
            "apiVersion: operator.openshift.io/v1alpha1\nkind: ImageContentSourcePolicy\n\
             metadata:\n  name: release\nspec:\n  repositoryDigestMirrors:\n\
             \x20 - mirrors:\n    - {m}/mirror/release\n    source: {src}/ocp/release\n\
             \x20 - mirrors:\n    - {m}/mirror/art-dev\n    source: {src}/ocp/art-dev\n",
            m = w.mirror
        ),
    );
    let install = |key: &str, policy: &str| {
        w.write(
            &format!("install-{key}.yaml"),
            &format!(
                "apiVersion: v1\nbaseDomain: example.com\nmetadata:\n  name: c\n{key}:\n\
                 - mirrors:\n  - {m}/mirror\n  source: {src}/ocp{policy}\n",
                m = w.mirror
            ),
        )
    };
    let digest_sources = install("imageDigestSources", "\n  sourcePolicy: NeverContactSource");
    let content_sources = install("imageContentSources", "");
    let conf = w.write(
        "registries.conf",
        &format!(
            "[[registry]]\nprefix = \"{src}/ocp\"\nlocation = \"{src}/ocp\"\nblocked = true\n\
             [[registry.mirror]]\nlocation = \"{m}/mirror\"\npull-from-mirror = \"digest-only\"\n",
            m = w.mirror
        ),
    );
    for args in [
        ["--idms", icsp.as_str()],
        ["--idms", digest_sources.as_str()],
        ["--idms", content_sources.as_str()],
        ["--registries-conf", conf.as_str()],
    ] {
        let v = w.inject(&args);
        w.assert_release(&v);
        assert_eq!(v["release"]["served_by"], served, "{args:?}");
    }

    // The user's registries.conf ($XDG_CONFIG_HOME/containers) is the default.
    let user_config = w.path("user-config");
    fs::create_dir_all(user_config.join("containers")).unwrap();
    fs::copy(&conf, user_config.join("containers/registries.conf")).unwrap();
    let out = w.run_with_config(&w.rel("inspect", &["--json"]), Some(&user_config));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["release"]["served_by"], served);

    // Wrong credentials on the first mirror only: the second one serves.
    let two = w.idms("two.yaml", &[&w.mirror2, &w.mirror], "");
    let v = w.inject(&["--idms", &two]);
    assert_eq!(v["release"]["served_by"], served);

    // Only the mirror with wrong credentials, and NeverContactSource: every endpoint
    // tried is named with why, and the source is not among them.
    let bad = w.idms("bad.yaml", &[&w.mirror2], "NeverContactSource");
    let err = w.fails(&w.rel("inspect", &["--idms", &bad]));
    assert!(
        err.contains(&format!("{}/mirror/release", w.mirror2)),
        "{err}"
    );
    assert!(err.contains("credentials used: user \"mirror2\""), "{err}");
    assert!(
        !err.contains("not-the-password"),
        "a secret was printed:\n{err}"
    );
    assert!(
        !err.contains(&format!("  {src}/ocp/release:")),
        "the source was contacted under NeverContactSource:\n{err}"
    );
    // Allowed to contact the source, which is down: both are listed, in order.
    let bad_allowed = w.idms("bad-allowed.yaml", &[&w.mirror2], "");
    let err = w.fails(&w.rel("inspect", &["--idms", &bad_allowed]));
    let m2_at = err.find(&format!("  {}/mirror/release:", w.mirror2));
    let src_at = err.find(&format!("  {src}/ocp/release:"));
    assert!(
        m2_at.is_some() && src_at.is_some() && m2_at < src_at,
        "both endpoints in order:\n{err}"
    );

    // Tag pulls: an ImageTagMirrorSet mirror serves them; a digest-only mirror does not.
    let itms = w.write(
        "itms.yaml",
        &format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageTagMirrorSet\nmetadata:\n  name: t\n\
             spec:\n  imageTagMirrors:\n  - source: {src}/ocp/art-dev\n    mirrors: [{}/mirror/art-dev]\n",
            w.mirror
        ),
    );
    let by_tag = format!("{src}/ocp/art-dev:mco-amd64");
    let out = w.ok(&[
        "inspect",
        "--image",
        &by_tag,
        "--idms",
        &itms,
        "--authfile",
        &w.secret,
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["image"]["manifest_digest"], w.mco_digest);
    assert_eq!(
        v["image"]["served_by"],
        format!("{}/mirror/art-dev", w.mirror)
    );
    let err = w.fails(&[
        "inspect",
        "--image",
        &by_tag,
        "--idms",
        &idms,
        "--authfile",
        &w.secret,
    ]);
    assert!(
        err.contains(&format!("registry {src}, repository ocp/art-dev")),
        "a tag pull must go to the source only under an IDMS:\n{err}"
    );

    // Multi-arch: --platform picks the release manifest, and so the MCO.
    let out = w.ok(&w.rel(
        "inspect",
        &["--idms", &idms, "--platform", "linux/arm64/v8", "--json"],
    ));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["release"]["mco_digest"], w.arm_mco_digest);
    assert_eq!(v["image"]["platform"], "linux/arm64/v8");
    assert_ne!(v["release"]["manifest_digest"], v["release"]["digest"]);

    // pull --release fills a cache from which --offline runs work, with no mirror config.
    let cache = w.path("pulled-cache").display().to_string();
    w.ok(&w.rel("pull", &["--idms", &idms, "--cache-dir", &cache]));
    // Not the release's 3 MiB base layer: only what reading its manifests needed.
    let cached: u64 = fs::read_dir(w.path("pulled-cache/blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(cached < 3 << 20, "pull --release cached {cached} bytes");
    let out = w.ok(&w.rel_noauth(
        "extract",
        &[
            "--offline",
            "--cache-dir",
            &cache,
            "--path",
            "/usr/bin/machine-config-daemon.rhel8",
            "-o",
            "-",
        ],
    ));
    assert!(out.stdout.starts_with(b"\x7fELF"));
}

#[test]
fn release_from_the_source_and_a_mirror_down() {
    let w = World::new();
    let secret = w.secret.clone();
    // No mirrors: the source serves, with token auth from the pull secret.
    let v = w.inject(&[]);
    w.assert_release(&v);
    assert!(v["release"]["served_by"].is_null(), "{v:#}");
    // The release's version names the cluster's OS: RHCOS 4.16 is RHEL 9, where the
    // .rhel8 build does not run, so the plain build goes too.
    let later = &v["boots"]["cluster_os"];
    assert_eq!(later["os"]["rhel"], 9, "{v:#}");
    assert!(
        later["os"]["source"].as_str().unwrap().contains("4.16.3"),
        "{v:#}"
    );
    assert_eq!(later["binary"]["path"], "/usr/bin/machine-config-daemon");
    assert_eq!(later["first_binary_verdict"]["fits"], false, "{v:#}");
    // Two inline builds and the scripts are over the 16 KB of AWS user data: the one
    // warning.
    let kinds: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["inline-config-too-big-to-hand-over"], "{v:#}");

    // A mirror that is down, then the source: the source serves, and says so.
    let dead = format!("127.0.0.1:{}", free_port());
    let idms = w.idms("dead.yaml", &[&dead], "");
    let out_dir = tempfile::tempdir_in(w.dir.path()).unwrap();
    let ign = out_dir.path().join("x.ign").display().to_string();
    let json_out = out_dir.path().join("report.json").display().to_string();
    let out = w.ok(&w.rel(
        "inject",
        &[
            "--idms",
            &idms,
            "--bootimage",
            "4.2",
            "--ign",
            &ign,
            "--json-out",
            &json_out,
        ],
    ));
    assert!(out.stdout.is_empty(), "--json-out keeps stdout empty");
    let v: Value = serde_json::from_slice(&fs::read(&json_out).unwrap()).unwrap();
    w.assert_release(&v);
    assert_eq!(
        v["release"]["served_by"],
        format!("{}/ocp/release", w.source)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("served by {}/ocp/release (source)", w.source)),
        "{stderr}"
    );
    // The dead mirror is a warning, on stderr and in the report.
    let fallbacks: Vec<&Value> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "mirror-fallback")
        .collect();
    assert!(!fallbacks.is_empty(), "{v:#}");
    for f in &fallbacks {
        assert!(f["failed"][0].as_str().unwrap().contains(&dead), "{f:#}");
        let line = format!("warning: {}", f["message"].as_str().unwrap());
        assert_eq!(stderr.matches(&line).count(), 1, "{line:?} in {stderr}");
    }

    // A mirror that lacks a layer of the MCO image: the source, after it, serves that
    // layer; with NeverContactSource, the run fails naming the layer.
    let raw = run_ok(
        Command::new("skopeo")
            .args(["inspect", "--raw", "--cert-dir", &w.ca_dir, "--creds"])
            .arg(w.mirror_creds.pair())
            .arg(format!(
                "docker://{}/mirror/art-dev@{}",
                w.mirror, w.mco_digest
            )),
    )
    .stdout;
    let manifest: Value = serde_json::from_slice(&raw).unwrap();
    let top = manifest["layers"].as_array().unwrap().last().unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_string();
    run_ok(
        Command::new("curl")
            .args(["-sf", "-X", "DELETE", "--cacert"])
            .arg(Path::new(&w.ca_dir).join("ca.crt"))
            .arg("-u")
            .arg(w.mirror_creds.pair())
            .arg(format!(
                "https://{}/v2/mirror/art-dev/blobs/{top}",
                w.mirror
            )),
    );
    let partial = w.idms("partial.yaml", &[&w.mirror], "");
    let ign2 = out_dir.path().join("partial.ign").display().to_string();
    let out = w.ok(&w.rel(
        "inject",
        &[
            "--idms",
            &partial,
            "--bootimage",
            "4.2",
            "--ign",
            &ign2,
            "--json",
        ],
    ));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    w.assert_release(&v);
    assert_eq!(
        v["image"]["served_by"],
        format!("{}/mirror/art-dev", w.mirror)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "layer {top} served by {}/ocp/art-dev (source)",
            w.source
        )),
        "{stderr}"
    );
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["kind"] == "mirror-fallback"
                && x["object"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("layer {top}"))),
        "{v:#}"
    );
    let never = w.idms("partial-never.yaml", &[&w.mirror], "NeverContactSource");
    let err = w.fails(&w.rel(
        "inject",
        &["--idms", &never, "--bootimage", "4.2", "--ign", &ign2],
    ));
    assert!(err.contains(&top), "{err}");

    // An identity token instead of a password: the OAuth2 refresh-token flow.
    let with_token = w.path("identitytoken.json");
    fs::write(
        &with_token,
        serde_json::to_vec(&json!({"auths": {w.source.as_str(): {
            "auth": base64::engine::general_purpose::STANDARD.encode("<token>:"),
            "identitytoken": REFRESH_TOKEN
        }}}))
        .unwrap(),
    )
    .unwrap();
    let with_token_s = with_token.display().to_string();
    let out = w.ok(&w.rel_noauth("inspect", &["--authfile", &with_token_s, "--json"]));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["release"]["mco_digest"], w.mco_digest);
    let wrong_token = w.path("wrong-identitytoken.json");
    fs::write(
        &wrong_token,
        serde_json::to_vec(&json!({"auths": {w.source.as_str(): {"identitytoken": "stale"}}}))
            .unwrap(),
    )
    .unwrap();
    let err = w.fails(&w.rel_noauth(
        "inspect",
        &["--authfile", &wrong_token.display().to_string()],
    ));
    assert!(err.contains("token issuer refused"), "{err}");
    assert!(!err.contains("stale"), "the token was printed:\n{err}");

    // --creds, for every registry contacted, before any auth file.
    let out = w.ok(&w.rel_noauth("inspect", &["--creds", &w.source_creds.pair()]));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(&w.source_creds.password));
    let creds = format!("{}:{}", w.source_creds.user, "wrong");
    let err = w.fails(&w.rel("inspect", &["--creds", &creds]));
    assert!(err.contains("from --creds"), "{err}");
    assert!(!err.contains(":wrong"), "{err}");

    // --creds USER alone: the password is asked for on the terminal (a pty made by
    // `script`), and refused clearly without one.
    require_tools(&["script"]);
    let tty_home = w.path("tty-home");
    fs::create_dir_all(&tty_home).unwrap();
    let conf = tty_home.join("registries.conf");
    fs::write(&conf, "").unwrap();
    let cmdline = format!(
        "{} inspect -q --json --release {} --cert-dir {} --creds {}",
        BIN, w.release, w.ca_dir, w.source_creds.user
    );
    let mut child = Command::new("script")
        .args(["-qec", &cmdline, "/dev/null"])
        .env("HOME", &tty_home)
        .env("XDG_CACHE_HOME", &tty_home)
        .env("XDG_CONFIG_HOME", &tty_home)
        .env("CONTAINERS_REGISTRIES_CONF", &conf)
        .env_remove("REGISTRY_AUTH_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running script");
    // Type the password only once asked (before that, the terminal itself would echo it).
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("Password for") {
        let n = std::io::Read::read(&mut stdout, &mut buf).unwrap();
        assert!(n > 0, "no prompt: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    // rpassword turns echo off right after printing the prompt; a person types later:
    // type once the terminal no longer echoes.
    let tty = poll(Duration::from_secs(20), || terminal_of_child(child.id()))
        .expect("the terminal that script made");
    wait_until(
        "the terminal to stop echoing",
        Duration::from_secs(20),
        || echo_is_off(&tty),
    );
    writeln!(child.stdin.take().unwrap(), "{}", w.source_creds.password).unwrap();
    std::io::Read::read_to_end(&mut stdout, &mut seen).unwrap();
    let status = child.wait().unwrap();
    let text = String::from_utf8_lossy(&seen);
    assert!(status.success(), "{text}");
    assert!(
        text.contains(&format!("Password for {}:", w.source_creds.user)),
        "{text}"
    );
    assert!(text.contains(&w.mco_digest), "{text}");
    assert!(
        !text.contains(&w.source_creds.password),
        "the password was echoed:\n{text}"
    );
    let err = w.fails(&w.rel_noauth("inspect", &["--creds", &w.source_creds.user]));
    assert!(err.contains("no password given"), "{err}");

    // A release by tag, as release notes print it: resolved to its digest (the index's),
    // which the report and the config's provenance record; the config is the one the
    // digest gives, apart from the reference recorded.
    let by_tag = format!("{}/ocp/release:4.16.3-multi", w.source);
    let tag_dir = tempfile::tempdir_in(w.dir.path()).unwrap();
    let (tag_ign, digest_ign) = (
        tag_dir.path().join("tag.ign"),
        tag_dir.path().join("digest.ign"),
    );
    let mut reports = Vec::new();
    for (release, ign) in [(&by_tag, &tag_ign), (&w.release, &digest_ign)] {
        let ign_s = ign.display().to_string();
        let out = w.ok(&[
            "inject",
            "--release",
            release,
            "--authfile",
            &secret,
            "--bootimage",
            "4.2",
            "--ign",
            &ign_s,
            "--json",
        ]);
        reports.push(serde_json::from_slice::<Value>(&out.stdout).unwrap());
    }
    assert_eq!(
        reports[0]["release"]["reference"],
        format!("docker://{by_tag}")
    );
    assert_eq!(reports[0]["release"]["digest"], w.release_digest);
    assert_eq!(reports[0]["binary"], reports[1]["binary"]);
    let provenance = |ign: &Path| {
        let cfg: Value = serde_json::from_slice(&fs::read(ign).unwrap()).unwrap();
        let f = cfg["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == "/var/lib/mcd-inject/provenance.json")
            .unwrap()
            .clone();
        let bytes =
            mcd_inject::ignition::decode_data_url(f["contents"]["source"].as_str().unwrap())
                .unwrap();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    };
    let (mut by_tag_p, mut by_digest_p) = (provenance(&tag_ign), provenance(&digest_ign));
    assert_eq!(by_tag_p["release"]["digest"], w.release_digest);
    assert_eq!(
        by_tag_p["release"]["reference"],
        format!("docker://{by_tag}")
    );
    by_tag_p["release"]["reference"] = Value::Null;
    by_digest_p["release"]["reference"] = Value::Null;
    assert_eq!(by_tag_p, by_digest_p);
    // With mirrors of the OpenShift mirror objects, which serve pulls by digest only, a
    // tag is refused before anything is fetched, naming the file.
    let idms = w.idms("tag-idms.yaml", &[&w.mirror], "");
    let err = w.fails(&[
        "inspect",
        "--release",
        &by_tag,
        "--authfile",
        &secret,
        "--idms",
        &idms,
    ]);
    assert!(
        err.contains("by digest")
            && err.contains("tag-idms.yaml")
            && err.contains("mirrors are in play"),
        "{err}"
    );
    // --image and --release together are a usage error.
    let out = w.run(&["inspect", "--release", &w.release, "--image", &w.release]);
    assert_eq!(out.status.code(), Some(2));
    // Not a release: the MCO image itself has no image-references.
    let not_release = format!("{}/ocp/art-dev@{}", w.source, w.mco_digest);
    let err = w.fails(&["inspect", "--release", &not_release, "--authfile", &secret]);
    assert!(
        err.contains("/release-manifests/image-references") && err.contains("no such file"),
        "{err}"
    );
}

/// The terminal a child of process `pid` reads (its stdin), once that child runs.
fn terminal_of_child(pid: u32) -> Option<PathBuf> {
    fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let stat = fs::read_to_string(entry.path().join("stat")).ok()?;
        // PID (COMM) STATE PPID ...: COMM may hold spaces and parentheses.
        let (_, rest) = stat.rsplit_once(')')?;
        let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
        let stdin = fs::read_link(entry.path().join("fd/0")).ok()?;
        (ppid == pid && stdin.starts_with("/dev/pts")).then_some(stdin)
    })
}

/// Whether terminal `tty` has echo turned off (`stty -a` shows `-echo`).
fn echo_is_off(tty: &Path) -> bool {
    Command::new("stty")
        .arg("-F")
        .arg(tty)
        .arg("-a")
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split(|c: char| c.is_whitespace() || c == ';')
                .any(|word| word == "-echo")
        })
}

// ------------------------------------------------------------------ signatures

/// A GnuPG home with a signing key: (home, fingerprint, armored public key file).
fn gpg_key(dir: &Path, name: &str) -> (PathBuf, String, PathBuf) {
    crate::harness::gpg::signing_key(dir, name)
}

/// `skopeo standalone-verify`: whether it accepts the signature.
fn skopeo_verifies(home: &Path, manifest: &Path, reference: &str, fpr: &str, sig: &Path) -> bool {
    Command::new("skopeo")
        .env("GNUPGHOME", home)
        .arg("standalone-verify")
        .arg(manifest)
        .arg(reference)
        .arg(fpr)
        .arg(sig)
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn release_signatures_under_a_signed_by_policy() {
    require_tools(&["gpg"]);
    let w = World::new();
    let dir = w.path("sig");
    fs::create_dir_all(&dir).unwrap();
    let (home, fpr, key) = gpg_key(&dir, "signer");
    let (other_home, other_fpr, other_key) = gpg_key(&dir, "other");
    let secret = w.secret.clone();
    let src = w.source.clone();

    // The release's top manifest (the index), as the registry holds it.
    let raw_manifest = |reference: &str| {
        let mut cmd = Command::new("skopeo");
        cmd.args([
            "inspect",
            "--raw",
            "--cert-dir",
            &w.ca_dir,
            "--authfile",
            &secret,
        ])
        .arg(format!("docker://{reference}"));
        run_ok(&mut cmd).stdout
    };
    let list_raw = raw_manifest(&w.release);
    assert_eq!(
        format!("sha256:{}", sha256_hex(&list_raw)),
        w.release_digest
    );
    let list_manifest = dir.join("list.json");
    fs::write(&list_manifest, &list_raw).unwrap();
    // The release is an index: containers/image, copying the one instance of the
    // platform, judges that instance with the signatures of its digest (copy.go,
    // copySingleImage), so the signatures that count are the amd64 manifest's.
    let instance = crate::harness::instance_digest(&list_raw, "amd64");
    let raw = raw_manifest(&format!("{src}/ocp/release@{instance}"));
    let manifest = dir.join("manifest.json");
    fs::write(&manifest, &raw).unwrap();
    let identity = format!("{src}/ocp/release:4.16.3-multi");
    let sign = |home: &Path, fpr: &str, manifest: &Path, out: &Path| {
        run_ok(
            Command::new("skopeo")
                .env("GNUPGHOME", home)
                .arg("standalone-sign")
                .arg(manifest)
                .arg(&identity)
                .arg(fpr)
                .arg("-o")
                .arg(out),
        );
    };
    let good = dir.join("good.sig");
    sign(&home, &fpr, &manifest, &good);
    let mut tampered_bytes = fs::read(&good).unwrap();
    let mid = tampered_bytes.len() / 2;
    tampered_bytes[mid] ^= 0x55;
    let tampered = dir.join("tampered.sig");
    fs::write(&tampered, &tampered_bytes).unwrap();
    let by_other = dir.join("other.sig");
    sign(&other_home, &other_fpr, &manifest, &by_other);
    // A good signature of another manifest (the MCO's).
    let mco_manifest = dir.join("mco.json");
    let mco_raw = raw_manifest(&format!("{src}/ocp/art-dev@{}", w.mco_digest));
    fs::write(&mco_manifest, mco_raw).unwrap();
    let other_manifest_sig = dir.join("other-manifest.sig");
    sign(&home, &fpr, &mco_manifest, &other_manifest_sig);

    // A lookaside store per case, and a policy asking for the signer's key.
    let policy = |name: &str, key: &Path, scope: &str| {
        let p = dir.join(format!("{name}.policy.json"));
        let body = json!({
            "default": [{"type": "insecureAcceptAnything"}],
            "transports": {"docker": {scope: [
                {"type": "signedBy", "keyType": "GPGKeys", "keyPath": key}
            ]}}
        });
        fs::write(&p, serde_json::to_vec(&body).unwrap()).unwrap();
        p.display().to_string()
    };
    let store_at = |name: &str, sig: Option<&Path>, digest: &str| {
        let lookaside = dir.join(format!("lookaside-{name}"));
        let at = lookaside.join(format!(
            "ocp/release@sha256={}",
            digest.trim_start_matches("sha256:")
        ));
        fs::create_dir_all(&at).unwrap();
        if let Some(s) = sig {
            fs::copy(s, at.join("signature-1")).unwrap();
        }
        let d = dir.join(format!("registries.d-{name}"));
        fs::create_dir_all(&d).unwrap();
        fs::write(
            d.join("default.yaml"),
            format!(
                "docker:\n  {src}/ocp:\n    lookaside: file://{}\n",
                lookaside.display()
            ),
        )
        .unwrap();
        d.display().to_string()
    };
    let store = |name: &str, sig: Option<&Path>| store_at(name, sig, &instance);
    let release_policy = policy("signer", &key, &format!("{src}/ocp/release"));
    let inspect = |policy: &str, regd: &str| {
        w.run(&w.rel(
            "inspect",
            &["--signature-policy", policy, "--registries.d", regd],
        ))
    };

    // Signed by the policy's key: accepted, by skopeo too.
    let regd = store("good", Some(&good));
    let out = inspect(&release_policy, &regd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(skopeo_verifies(&home, &manifest, &identity, &fpr, &good));

    // The user's policy.json and registries.d ($XDG_CONFIG_HOME/containers) are the
    // defaults: with the tampered store there, the release is refused without options.
    let user_config = dir.join("user-config");
    fs::create_dir_all(user_config.join("containers")).unwrap();
    fs::copy(&release_policy, user_config.join("containers/policy.json")).unwrap();
    let bad_store = store("user-tampered", Some(&tampered));
    fs::rename(&bad_store, user_config.join("containers/registries.d")).unwrap();
    let out = w.run_with_config(&w.rel("inspect", &[]), Some(&user_config));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("refused by the signature policy"), "{err}");

    // The same store served over http (`python3 -m http.server` on loopback).
    let port = free_port();
    let server = Service {
        child: Some(
            Command::new("python3")
                .args([
                    "-m",
                    "http.server",
                    "--bind",
                    "127.0.0.1",
                    &port.to_string(),
                ])
                .arg("--directory")
                .arg(dir.join("lookaside-good"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("starting python3 -m http.server"),
        ),
    };
    wait_listening(port, "http.server", Path::new("/dev/null"));
    let http_regd = dir.join("registries.d-http");
    fs::create_dir_all(&http_regd).unwrap();
    fs::write(
        http_regd.join("default.yaml"),
        format!("default-docker:\n  sigstore: http://127.0.0.1:{port}\n"),
    )
    .unwrap();
    let out = inspect(&release_policy, &http_regd.display().to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Offline, a store on the network is not read: the run says so; the file:// store
    // still serves.
    let cache = dir.join("offline-cache").display().to_string();
    let out = w.run(&w.rel(
        "pull",
        &[
            "--signature-policy",
            &release_policy,
            "--registries.d",
            &regd,
            "--cache-dir",
            &cache,
        ],
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let offline = |regd: &str| {
        w.run(&w.rel(
            "inspect",
            &[
                "--offline",
                "--cache-dir",
                &cache,
                "--signature-policy",
                &release_policy,
                "--registries.d",
                regd,
            ],
        ))
    };
    let out = offline(&http_regd.display().to_string());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("signature store http://127.0.0.1")
            && err.contains("is on the network and --offline forbids the network"),
        "{err}"
    );
    let out = offline(&regd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(server);

    // Refused, each with its reason, and skopeo agrees.
    for (name, sig, policy_key, skopeo_home, skopeo_fpr, want) in [
        (
            "tampered",
            &tampered,
            &key,
            &home,
            &fpr,
            "no signature is acceptable",
        ),
        (
            "wrong-key",
            &by_other,
            &key,
            &home,
            &fpr,
            "not a valid signature by any of the policy's keys",
        ),
        (
            "other-key-policy",
            &good,
            &other_key,
            &home,
            &other_fpr,
            "not a valid signature by any of the policy's keys",
        ),
        (
            "other-manifest",
            &other_manifest_sig,
            &key,
            &home,
            &fpr,
            "it signs manifest",
        ),
    ] {
        let regd = store(name, Some(sig));
        let pol = policy(name, policy_key, &format!("{src}/ocp/release"));
        let out = inspect(&pol, &regd);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name} was accepted:\n{err}");
        assert!(
            err.contains("refused by the signature policy") && err.contains(want),
            "{name}: {err}"
        );
        assert!(!err.contains("backtrace"), "{name}: {err}");
        assert!(
            !skopeo_verifies(skopeo_home, &manifest, &identity, skopeo_fpr, sig),
            "skopeo standalone-verify accepts the {name} case"
        );
    }
    // Only the list signed, by the policy's key: its instance has no signature, so the
    // release is refused, as skopeo copying the amd64 instance refuses it.
    let list_sig = dir.join("list.sig");
    sign(&home, &fpr, &list_manifest, &list_sig);
    let regd = store_at("list-only", Some(&list_sig), &w.release_digest);
    let out = inspect(&release_policy, &regd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("none was found"), "{err}");

    // Unsigned.
    let regd = store("unsigned", None);
    let out = inspect(&release_policy, &regd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("none was found"), "{err}");

    // The MCO image has its own scope: a policy over all of SOURCE/ocp wants a signature
    // of the MCO too, and it has none.
    let regd = store("mco", Some(&good));
    let all = policy("all", &key, &format!("{src}/ocp"));
    let out = inspect(&all, &regd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{src}/ocp/art-dev@{}", w.mco_digest))
            && err.contains("none was found"),
        "{err}"
    );
}
