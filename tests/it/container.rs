//! The container image: built from the Containerfile by `scripts/container-image.sh`
//! (buildah, offline, on `scratch`) from the release binary, and run with podman the
//! way pipelines run it: the main job on a fixture in a mounted directory, a pull from
//! the TLS loopback registry by name (DNS through the image's /etc/hosts and
//! nsswitch.conf) with a mounted auth file (`REGISTRY_AUTH_FILE`, and the default
//! search path) and CA, `--ign -` to stdout, and the exit codes of a bad command line
//! and a bad image. Its outputs must be the binary's, byte for byte.
//!
//! podman's storage is a directory of the test's (vfs), so the machine's own images are
//! not touched. The runs use runc with cgroupfs and explicit ulimits: they work on a
//! normal host, and also in a build sandbox whose cgroups are v1 with an empty v2
//! hierarchy (which crun refuses) and whose limits cannot be raised.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use base64::Engine as _;

use crate::harness::registry::registries;
use crate::harness::{crate_root, fixtures_dir, require_tools};

/// The tag `scripts/container-image.sh` is given in docs/usage.md, which the TaskRun there
/// runs.
pub(crate) const TAG: &str = concat!("localhost/mcd-inject:", env!("CARGO_PKG_VERSION"));

/// The binary the image is made of: the one every test runs (the release build under
/// `cargo test --release`, as scripts/test.sh runs the suite).
fn release_binary() -> PathBuf {
    PathBuf::from(crate::harness::BIN)
}

/// podman's and buildah's storage for these tests.
fn store() -> &'static Path {
    static STORE: OnceLock<PathBuf> = OnceLock::new();
    STORE.get_or_init(|| {
        let dir = crate_root().join("target/container-store");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    })
}

fn storage_args() -> Vec<String> {
    let s = store();
    vec![
        "--root".into(),
        s.join("root").display().to_string(),
        "--runroot".into(),
        s.join("run").display().to_string(),
        "--storage-driver".into(),
        "vfs".into(),
    ]
}

/// The image, built once.
pub(crate) fn image() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| {
        require_tools(&["buildah", "podman", "runc"]);
        let out = Command::new("bash")
            .arg(crate_root().join("scripts/container-image.sh"))
            .arg(release_binary())
            .arg(TAG)
            .args(storage_args())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "container-image.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        TAG.to_string()
    })
}

fn podman(args: &[&str]) -> Output {
    Command::new("podman")
        .args(storage_args())
        .args(["--cgroup-manager", "cgroupfs", "--runtime", "runc"])
        .args(args)
        .output()
        .unwrap()
}

/// `podman run` of the image with these podman options and mcd-inject arguments.
pub(crate) fn run(options: &[&str], args: &[&str]) -> Output {
    let mut a = vec![
        "run",
        "--rm",
        "--ulimit",
        "nofile=1024:1024",
        "--ulimit",
        "nproc=4096:4096",
    ];
    a.extend_from_slice(options);
    a.push(image());
    a.extend_from_slice(args);
    podman(&a)
}

/// The same job run by the release binary on the host.
fn on_host(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(release_binary());
    cmd.args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home.path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_image_runs_the_main_job_as_the_binary_does() {
    let image = image();
    // What the image is: small, non-root, the binary as its entrypoint, labelled.
    let inspect = podman(&["image", "inspect", image]);
    ok(&inspect, "podman image inspect");
    let list: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let info = &list[0];
    let size = info["Size"].as_u64().unwrap();
    assert!(size < 30_000_000, "the image is {size} bytes");
    assert_eq!(info["Config"]["User"], "1000:1000");
    assert_eq!(
        info["Config"]["Entrypoint"],
        serde_json::json!(["/usr/bin/mcd-inject"])
    );
    let labels = &info["Config"]["Labels"];
    assert_eq!(
        labels["org.opencontainers.image.version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    assert!(
        labels["org.opencontainers.image.source"].is_string(),
        "{labels}"
    );

    // The main job on a fixture from a mounted directory, into a mounted one.
    let out_dir = tempfile::tempdir().unwrap();
    fs::set_permissions(
        out_dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let fixtures = fixtures_dir().join("layouts");
    let mount_in = format!("{}:/in:ro", fixtures.display());
    let mount_out = format!("{}:/out", out_dir.path().display());
    let r = run(
        &["-v", &mount_in, "-v", &mount_out],
        &[
            "inject",
            "--image",
            "oci:/in/mco-4.16:latest",
            "--bootimage",
            "4.2",
            "--ign",
            "/out/worker.ign",
        ],
    );
    ok(&r, "inject in the container");
    let host_out = out_dir.path().join("host.ign");
    let h = on_host(
        &[
            "inject",
            "--image",
            &format!("oci:{}:latest", fixtures.join("mco-4.16").display()),
            "--bootimage",
            "4.2",
            "--ign",
            host_out.to_str().unwrap(),
        ],
        &[],
    );
    ok(&h, "inject on the host");
    assert!(
        fs::read(out_dir.path().join("worker.ign")).unwrap() == fs::read(&host_out).unwrap(),
        "the container's config is not the binary's"
    );

    // A pull from the TLS registry by name, with a mounted auth file and CA, to stdout.
    let reg = registries();
    let port = reg.basic.rsplit(':').next().unwrap();
    let by_name = format!("localhost:{port}");
    let auth_dir = tempfile::tempdir().unwrap();
    let auth = auth_dir.path().join("auth.json");
    let pair = format!("{}:{}", reg.basic_user, reg.basic_password);
    fs::write(
        &auth,
        serde_json::to_vec(&serde_json::json!({"auths": {by_name.as_str(): {
            "auth": base64::engine::general_purpose::STANDARD.encode(pair)
        }}}))
        .unwrap(),
    )
    .unwrap();
    fs::set_permissions(&auth, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let image_ref = format!("docker://{by_name}/mco/small:v1");
    let job = [
        "inject",
        "--image",
        &image_ref,
        "--cert-dir",
        "/certs",
        "--bootimage",
        "4.2",
        "--ign",
        "-",
    ];
    let certs = format!("{}:/certs:ro", reg.ca_dir);
    let in_auth_file = format!("{}:/auth/auth.json:ro", auth.display());
    let pulled = run(
        &[
            "--network",
            "host",
            "-v",
            &certs,
            "-v",
            &in_auth_file,
            "-e",
            "REGISTRY_AUTH_FILE=/auth/auth.json",
        ],
        &job,
    );
    ok(&pulled, "inject --ign - from the registry in the container");
    let mut host_job = job.to_vec();
    host_job[4] = &reg.ca_dir;
    let h = on_host(&host_job, &[("REGISTRY_AUTH_FILE", &auth)]);
    ok(&h, "the same on the host");
    assert!(!pulled.stdout.is_empty());
    assert!(
        pulled.stdout == h.stdout,
        "the container's config on stdout is not the binary's"
    );
    // The auth file at the default search path of the image's user.
    let at_home = format!(
        "{}:/home/mcd-inject/.config/containers/auth.json:ro",
        auth.display()
    );
    let found = run(&["--network", "host", "-v", &certs, "-v", &at_home], &job);
    ok(
        &found,
        "inject with the auth file in $HOME/.config/containers",
    );
    assert!(found.stdout == h.stdout);
    // Without credentials the registry refuses: the pull fails (exit 1), naming it.
    let refused = run(&["--network", "host", "-v", &certs], &job);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");

    // A command line that cannot be parsed: 2; an image that is not there: 1.
    let bad_cli = run(&[], &["inject", "--no-such-flag"]);
    assert_eq!(bad_cli.status.code(), Some(2), "{bad_cli:?}");
    let bad_image = run(
        &[],
        &[
            "inject",
            "--image",
            "oci:/nowhere:latest",
            "--bootimage",
            "4.2",
            "--ign",
            "-",
        ],
    );
    assert_eq!(bad_image.status.code(), Some(1), "{bad_image:?}");
    assert!(bad_image.stdout.is_empty());
}
