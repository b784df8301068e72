//! The podman stand-in of the boot tests (`tests/support/stand-ins/podman`), driven as
//! the MCD and the clusters' units drive it: on a root prepared as the boot tests prepare
//! theirs (`boot-root.sh prepare`, then `os` for a bootimage's RHCOS), run in a chroot.
//! What it refuses, it must refuse as real podman does: the same exit code and the same
//! output.
//!
//! On a root whose podman is 4.x (or 3.x) each answer is compared with the real podman of
//! this machine (Debian bookworm's, 4.3.1) given the same command line, both against a
//! real registry (distribution, htpasswd Basic auth, plain HTTP on loopback) that holds
//! the cluster's OS image; the files a command line names (an authfile, a policy) are at
//! the same absolute path in the root and on the host. On RHCOS 4.2's root (podman 1.4.4)
//! the answers are the texts of podman's source at tag v1.4.4, each with the file it
//! comes from.
//!
//! Needs root, podman, skopeo, docker-registry, htpasswd, unshare, and the boot tests'
//! base root.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use serde_json::{json, Value};
use tempfile::TempDir;

use crate::harness::node::{self, run};
use crate::harness::registry::{free_port, wait_listening, Creds, Service};
use crate::harness::{crate_root, gzip_layer, require_tools, run_ok, write_layout};

/// What one podman (the stand-in or the real one) answered.
#[derive(Debug, PartialEq)]
struct Answer {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// A root for the stand-in, a registry holding the cluster's OS image, and a real podman
/// with storage and registries of its own.
struct World {
    dir: TempDir,
    root: PathBuf,
    _registry: Service,
    /// The registry's HOST:PORT.
    registry: String,
    /// The cluster's OS image, by digest, in the registry.
    image: String,
    /// An image the registry does not hold.
    missing: String,
}

impl World {
    /// A world whose root runs `boot_os` (`tests/support/rhcos-os.sh`).
    fn new(boot_os: &str) -> World {
        require_tools(&["podman", "skopeo", "docker-registry", "unshare"]);
        let work = crate_root().join("target/boot-tests");
        fs::create_dir_all(&work).unwrap();
        let dir = tempfile::tempdir_in(&work).unwrap();
        let creds = Creds::new("boot");
        let (registry_service, registry) = start_plain_registry(dir.path(), &creds);
        let image = push_os_image(dir.path(), &registry, &creds);
        let missing = format!("{registry}/openshift/release@sha256:{}", "2".repeat(64));
        let root = dir.path().join("root");
        node::prepare_root_on(&node::boot_base(), &root);
        let w = World {
            dir,
            root,
            _registry: registry_service,
            registry,
            image,
            missing,
        };
        w.set_os(boot_os);
        let auth = format!(
            r#"{{"auths": {{"{}": {{"auth": "{}"}}}}}}"#,
            w.registry,
            base64::engine::general_purpose::STANDARD.encode(creds.pair())
        );
        // As the clusters' configs give the node: the pull secret, the policy, the proxy
        // environment.
        w.write_root("/var/lib/kubelet/config.json", &auth);
        w.write_root("/etc/containers/policy.json", ACCEPT_ANYTHING);
        w.write_root("/etc/mco/proxy.env", "");
        // The files the compared command lines name, in both worlds.
        w.write_both("auth.json", &auth);
        w.write_both("no-credentials.json", r#"{"auths": {}}"#);
        w.write_both("empty.env", "");
        fs::write(
            w.dir.path().join("registries.conf"),
            format!(
                "[[registry]]\nlocation = \"{}\"\ninsecure = true\n",
                w.registry
            ),
        )
        .unwrap();
        fs::write(
            w.dir.path().join("storage.conf"),
            format!(
                "[storage]\ndriver = \"vfs\"\ngraphroot = \"{0}/storage\"\nrunroot = \"{0}/run\"\n",
                w.dir.path().display()
            ),
        )
        .unwrap();
        w
    }

    /// Gives the root the RHCOS `boot_os` again (its podman's version), with a fresh
    /// podman storage: nothing pulled, no container.
    fn set_os(&self, boot_os: &str) {
        node::set_os(
            &self.root,
            boot_os,
            "rhcos-4.16",
            &self.image,
            "",
            &node::boot_base(),
        );
    }

    /// An absolute path that names the same file in the root and on the host.
    fn both(&self, name: &str) -> String {
        self.dir
            .path()
            .join("files")
            .join(name)
            .display()
            .to_string()
    }

    fn write_both(&self, name: &str, text: &str) {
        let path = self.both(name);
        self.write_root(&path, text);
        fs::create_dir_all(Path::new(&path).parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
    }

    fn write_root(&self, path: &str, text: &str) {
        let p = self.root.join(path.trim_start_matches('/'));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// The stand-in, in a chroot of the root (with a /proc of its own).
    fn stand_in(&self, args: &[&str]) -> Answer {
        let mut cmd = Command::new("unshare");
        cmd.args(["--mount", "--pid", "--fork"])
            .arg(format!("--mount-proc={}", self.root.join("proc").display()))
            .arg("chroot")
            .arg(&self.root)
            .arg("/usr/bin/podman")
            .args(args)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        answer(&mut cmd)
    }

    /// The host's real podman, with this world's storage, registries and no credentials.
    fn real(&self, args: &[&str]) -> Answer {
        let d = self.dir.path();
        fs::create_dir_all(d.join("xdg")).unwrap();
        let mut cmd = Command::new("podman");
        cmd.args(args)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", d)
            .env("XDG_RUNTIME_DIR", d.join("xdg"))
            .env("CONTAINERS_REGISTRIES_CONF", d.join("registries.conf"))
            .env("CONTAINERS_STORAGE_CONF", d.join("storage.conf"));
        answer(&mut cmd)
    }

    /// Both podmans refuse `args` (the stand-in in its current state, the real one in its
    /// own), with the same exit code and output; container IDs, which each makes its
    /// own, read as `ID`.
    fn same_refusal(&self, args: &[&str]) {
        let (ours, real) = (self.stand_in(args), self.real(args));
        assert_ne!(
            real.code,
            Some(0),
            "real podman accepted podman {args:?}: {real:?}"
        );
        assert_eq!(
            ids_as_id(&ours),
            ids_as_id(&real),
            "podman {args:?}: the stand-in (left) and real podman (right) differ"
        );
    }

    /// Both podmans accept `args`.
    fn both_accept(&self, args: &[&str]) -> (Answer, Answer) {
        let (ours, real) = (self.stand_in(args), self.real(args));
        assert_eq!(real.code, Some(0), "real podman, podman {args:?}: {real:?}");
        assert_eq!(
            ours.code,
            Some(0),
            "the stand-in, podman {args:?}: {ours:?}"
        );
        (ours, real)
    }
}

const ACCEPT_ANYTHING: &str = r#"{"default": [{"type": "insecureAcceptAnything"}]}"#;

/// A policy whose requirement for another repository is sigstoreSigned with keys
/// (containers/image 5.22, podman 4.2) or keyless, Fulcio and Rekor (5.24, podman 4.4),
/// as MCO writes ClusterImagePolicy requirements; the OS image itself is not under it.
fn sigstore_policy(keyless: bool) -> String {
    let requirement = if keyless {
        json!({"type": "sigstoreSigned",
               "fulcio": {"caData": "Zm9v", "oidcIssuer": "https://issuer.example.com",
                          "subjectEmail": "release@example.com"},
               "rekorPublicKeyData": "Zm9v",
               "signedIdentity": {"type": "matchRepoDigestOrExact"}})
    } else {
        json!({"type": "sigstoreSigned", "keyData": "Zm9v",
               "signedIdentity": {"type": "matchRepoDigestOrExact"}})
    };
    json!({"default": [{"type": "insecureAcceptAnything"}],
           "transports": {"docker": {"registry.example.org/other": [requirement]}}})
    .to_string()
}

fn answer(cmd: &mut Command) -> Answer {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    Answer {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `a` with every run of 64 hex digits that is not a digest (`sha256:...`) read as `ID`.
fn ids_as_id(a: &Answer) -> Answer {
    let fix = |s: &str| {
        let b = s.as_bytes();
        let mut out = String::new();
        let mut i = 0;
        while i < b.len() {
            let run = b[i..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
            let word_start = i == 0 || !b[i - 1].is_ascii_alphanumeric();
            if run == 64 && word_start && !s[..i].ends_with("sha256:") {
                out.push_str("ID");
                i += 64;
            } else {
                let step = run.max(1);
                out.push_str(&s[i..i + step]);
                i += step;
            }
        }
        out
    };
    Answer {
        code: a.code,
        stdout: fix(&a.stdout),
        stderr: fix(&a.stderr),
    }
}

/// A distribution registry with htpasswd Basic auth for `creds`, over plain HTTP on
/// loopback: the service and its HOST:PORT.
fn start_plain_registry(dir: &Path, creds: &Creds) -> (Service, String) {
    let ht = dir.join("htpasswd");
    let out = run_ok(Command::new("htpasswd").args(["-Bbn", &creds.user, &creds.password]));
    fs::write(&ht, out.stdout).unwrap();
    let port = free_port();
    let config = format!(
        "version: 0.1\nlog: {{level: warn, accesslog: {{disabled: true}}}}\nstorage:\n  \
         filesystem: {{rootdirectory: {}}}\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: stand-ins\n  \
         debug: {{addr: ''}}\nauth:\n  htpasswd: {{realm: stand-ins, path: {}}}\n",
        dir.join("registry").display(),
        ht.display()
    );
    fs::write(dir.join("registry.yml"), config).unwrap();
    let log = dir.join("registry.log");
    let child = Command::new("docker-registry")
        .arg("serve")
        .arg(dir.join("registry.yml"))
        .stdout(fs::File::create(&log).unwrap())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .expect("starting docker-registry");
    let service = Service { child: Some(child) };
    wait_listening(port, "docker-registry", &log);
    (service, format!("127.0.0.1:{port}"))
}

/// Pushes a small image (one layer) to `registry` as openshift/release; its reference by
/// digest.
fn push_os_image(dir: &Path, registry: &str, creds: &Creds) -> String {
    let layout = write_layout(
        &dir.join("layout"),
        &[gzip_layer(&[("etc/os-release", b"ID=rhcos\n", 0o644)])],
    );
    let digest_file = dir.join("digest");
    let (ok, text) = run(Command::new("skopeo")
        .args(["copy", "--dest-tls-verify=false", "--dest-creds"])
        .arg(creds.pair())
        .arg("--digestfile")
        .arg(&digest_file)
        .arg(&layout)
        .arg(format!("docker://{registry}/openshift/release:os")));
    assert!(ok, "pushing the OS image: {text}");
    let digest = fs::read_to_string(&digest_file).unwrap();
    format!("{registry}/openshift/release@{}", digest.trim())
}

#[test]
fn podman_4_refuses_what_real_podman_refuses() {
    // RHCOS 4.16: podman 4.9.4.
    let w = World::new("rhcos-4.16");
    let (image, missing) = (w.image.as_str(), w.missing.as_str());
    let (auth, no_credentials) = (w.both("auth.json"), w.both("no-credentials.json"));
    let nosuch = w.both("nosuch");

    // Unknown commands and options (cobra's texts, podman's suggestions).
    for args in [
        &["--bogus"][..],
        &["bogus"],
        &["pul"],
        &["imag"],
        &["system", "bogus"],
        &["system", "re"],
        &["pull", "--bogus", image],
        &["pull", "-x", image],
        &["pull", "--authfile"],
        &["pull"],
        &["run", "--bogus", image],
        &["run", "-e"],
        &["create", "--bogus", image],
        &["images", "--bogus"],
        &["version", "--bogus"],
        &["system", "info", "--bogus"],
    ] {
        w.same_refusal(args);
    }

    // A pull without credentials for the registry, or of an image it lacks; an
    // authfile or policy that does not exist.
    for args in [
        &["pull", image][..],
        &["pull", "-q", image],
        &["pull", "--authfile", &no_credentials, image],
        &["pull", "--authfile", &nosuch, image],
        &["pull", "--authfile", &auth, missing],
        &["pull", "--quiet", "--authfile", &auth, missing],
        &[
            "pull",
            "--authfile",
            &auth,
            "--signature-policy",
            &nosuch,
            image,
        ],
    ] {
        w.same_refusal(args);
    }

    // Running or creating an image podman does not hold: podman pulls it first (its
    // default --pull=missing), with run's --authfile or none.
    for args in [
        &[
            "run",
            "--env",
            "INVOCATION_ID=1",
            "--privileged",
            "--pid=host",
            "--net=host",
            "--rm",
            "-v",
            "/dev:/dev",
            image,
            "bootupctl",
            "update",
        ][..],
        &["create", "--name", "bootupd-efi-extract", image],
        &["run", "--rm", "--authfile", &no_credentials, image, "true"],
        &["run", "--rm", "--authfile", &auth, missing, "true"],
        &["create", "--authfile", &nosuch, image],
    ] {
        w.same_refusal(args);
    }
    assert!(
        w.stand_in(&[
            "images",
            "--format=json",
            "--filter",
            &format!("reference={image}")
        ])
        .stdout
        .starts_with("[]"),
        "a refused pull left the image in the stand-in's storage"
    );

    // With the pull secret, both pull it, and then hold it.
    let (ours, real) = w.both_accept(&["pull", "-q", "--authfile", &auth, image]);
    assert_eq!(ids_as_id(&ours).stdout, "ID\n", "{ours:?}");
    assert_eq!(ids_as_id(&real).stdout, "ID\n", "{real:?}");
    let filter = format!("reference={image}");
    let (ours, real) = w.both_accept(&["images", "--format=json", "--filter", &filter]);
    for (who, a) in [("stand-in", &ours), ("real podman", &real)] {
        let listed: Value = serde_json::from_str(&a.stdout).unwrap();
        assert_eq!(
            listed[0]["Digest"],
            image.split('@').nth(1).unwrap(),
            "{who}: {a:?}"
        );
        assert_eq!(listed[0]["RepoDigests"][0], image, "{who}: {a:?}");
    }

    // What podman checks once it holds the image: env files, volumes, names, states.
    for args in [
        &["run", "--rm", "--env-file", &nosuch, image, "true"][..],
        &[
            "run",
            "--rm",
            "--env-file",
            &w.both("empty.env"),
            "-v",
            &format!("{nosuch}:/x"),
            image,
            "true",
        ],
    ] {
        w.same_refusal(args);
    }
    w.both_accept(&["create", "--net=none", "--name", "pivot", image, "sh"]);
    for args in [
        &["create", "--name", "pivot", image, "sh"][..],
        &["kill", "pivot"],
        &["cp", "pivot:/usr/lib/bootupd/updates/EFI", &w.both("efi")],
        &["kill", "nosuch"],
        &["cp", "nosuch:/", &w.both("out")],
        &["rmi", missing],
        &["inspect", "--type=image", missing],
    ] {
        w.same_refusal(args);
    }
    let (ours, real) = w.both_accept(&["rm", "-f", "pivot"]);
    assert_eq!(
        (ours.stdout.as_str(), real.stdout.as_str()),
        ("pivot\n", "pivot\n")
    );
    w.same_refusal(&["rm", "pivot"]);
    let (ours, real) = w.both_accept(&["rm", "-f", "pivot"]);
    assert_eq!(ours, real);

    // MCO main's podmanSupportsSigstore reads the version this way; the root's podman is
    // 4.9.4, the host's its own.
    let version = ["version", "-f", "{{.APIVersion}}"];
    assert_eq!(w.stand_in(&version).stdout, "4.9.4\n");
    assert_eq!(w.real(&version).code, Some(0));
}

#[test]
fn podman_before_4_4_refuses_the_sigstore_policies_it_cannot_parse() {
    // RHCOS 4.12's podman 4.2.0 reads sigstoreSigned with keys, not keyless (Fulcio,
    // Rekor): so does the host's 4.3.1 (containers/image 5.23).
    let w = World::new("rhcos-4.12");
    let image = w.image.as_str();
    let auth = w.both("auth.json");
    w.write_both("keys.json", &sigstore_policy(false));
    w.write_both("keyless.json", &sigstore_policy(true));
    let keyless = w.both("keyless.json");
    w.same_refusal(&[
        "pull",
        "--authfile",
        &auth,
        "--signature-policy",
        &keyless,
        image,
    ]);
    w.same_refusal(&[
        "pull",
        "-q",
        "--signature-policy",
        &keyless,
        "--authfile",
        &auth,
        image,
    ]);
    w.both_accept(&[
        "pull",
        "-q",
        "--authfile",
        &auth,
        "--signature-policy",
        &w.both("keys.json"),
        image,
    ]);

    // RHCOS 4.9's podman 3.3.1 (containers/image 5.15) knows no sigstoreSigned at all:
    // containers/image's text for a requirement type it does not know, as the host's
    // podman gives it for one it does not know either.
    w.set_os("rhcos-4.9");
    let keys = w.both("keys.json");
    let ours = w.stand_in(&[
        "pull",
        "--authfile",
        &auth,
        "--signature-policy",
        &keys,
        image,
    ]);
    w.write_both(
        "unknown-type.json",
        &sigstore_policy(false).replace("sigstoreSigned", "sigstoreSignedV9"),
    );
    let unknown = w.both("unknown-type.json");
    let real = w.real(&[
        "pull",
        "--authfile",
        &auth,
        "--signature-policy",
        &unknown,
        image,
    ]);
    assert_eq!(real.code, Some(125), "{real:?}");
    assert_eq!(
        ours,
        Answer {
            code: real.code,
            stdout: real.stdout.clone(),
            stderr: real
                .stderr
                .replace(&unknown, &keys)
                .replace("sigstoreSignedV9", "sigstoreSigned"),
        }
    );

    // The policy of the node (/etc/containers/policy.json) with such requirements: MCO
    // main's pull (its --signature-policy for podman < 4.4.1) goes through, MCO 4.12's
    // (none) does not; a podman from 4.4 on reads it.
    w.write_root("/etc/containers/policy.json", &sigstore_policy(true));
    w.write_root(
        "/etc/machine-config-daemon/policy-for-old-podman.json",
        ACCEPT_ANYTHING,
    );
    let secret = "/var/lib/kubelet/config.json";
    let main_pull = [
        "pull",
        "--authfile",
        secret,
        "--signature-policy",
        "/etc/machine-config-daemon/policy-for-old-podman.json",
        image,
    ];
    let pull_412 = ["pull", "--authfile", secret, image];
    assert_eq!(w.stand_in(&main_pull).code, Some(0));
    assert_eq!(
        w.stand_in(&pull_412),
        Answer {
            code: Some(125),
            stdout: String::new(),
            stderr: "Error: invalid policy in \"/etc/containers/policy.json\": Unknown policy \
                     requirement type \"sigstoreSigned\"\n"
                .to_string(),
        }
    );
    w.set_os("rhcos-4.16");
    assert_eq!(w.stand_in(&pull_412).code, Some(0));
    // The test clusters' own policy (no sigstoreSigned) is no podman's trouble.
    w.set_os("rhcos-4.9");
    w.write_root("/etc/containers/policy.json", ACCEPT_ANYTHING);
    assert_eq!(w.stand_in(&pull_412).code, Some(0));
}

#[test]
fn podman_1_refuses_with_the_texts_of_podman_1_4_4() {
    // RHCOS 4.2: podman 1.4.4. The texts are those of podman's source at tag v1.4.4.
    let w = World::new("rhcos-4.2");
    let image = w.image.as_str();
    let (repo, digest) = image.split_once('@').unwrap();
    let secret = "/var/lib/kubelet/config.json";
    let refused = |args: &[&str], stderr: &str| {
        let mut a = w.stand_in(args);
        // logrus's time="..." of the error podman logs.
        if let Some(at) = a.stderr.find("time=\"") {
            let end = a.stderr[at + 6..].find('"').unwrap() + at + 6;
            a.stderr.replace_range(at + 6..end, "T");
        }
        assert_eq!(
            a,
            Answer {
                code: Some(125),
                stdout: String::new(),
                stderr: stderr.to_string()
            },
            "podman {args:?}"
        );
    };
    // cmd/podman/main.go (SilenceUsage, SilenceErrors) and errors.go outputError: pflag's
    // error after "Error: ", exit 125; cobra's --version has no -v shorthand then.
    refused(&["--bogus"], "Error: unknown flag: --bogus\n");
    refused(
        &["pull", "--bogus", image],
        "Error: unknown flag: --bogus\n",
    );
    refused(&["-v"], "Error: unknown shorthand flag: 'v' in -v\n");
    // cmd/podman/common.go commandRunE, for the root and for `podman system`.
    refused(
        &["bogus"],
        "Error: unrecognized command `podman bogus`\nTry 'podman --help' for more information.\n",
    );
    refused(
        &["system", "bogus"],
        "Error: unrecognized command `podman system bogus`\nTry 'podman system --help' for more information.\n",
    );
    // cmd/podman/version.go: the template runs over define.Version (libpod/define/
    // version.go), which has no APIVersion (vendored buildah pkg/formats StdoutTemplate).
    refused(
        &["version", "-f", "{{.APIVersion}}"],
        "Error: template: image:1:2: executing \"image\" at <.APIVersion>: can't evaluate \
         field APIVersion in type define.Version\n",
    );

    // A run of an image podman does not hold pulls it without credentials: create.go
    // gives runtime.New no authfile (cmd/podman/shared/create.go), whatever --authfile
    // says; libpod/image/pull.go doPullImage prints "Trying to pull", logs the error and
    // "Failed"; containers/image (copy.go, docker/docker_image_src.go) and
    // docker/distribution (registry/client/errors.go) word it.
    let source = format!(
        "Error initializing source docker://{image}: Error reading manifest {digest} in {repo}: \
         unauthorized: authentication required"
    );
    let logged = format!(
        "Trying to pull {image}...time=\"T\" level=error msg=\"Error pulling image ref //{image}: {source}\"\nFailed\n"
    );
    refused(
        &[
            "run",
            "--rm",
            "--authfile",
            secret,
            image,
            "rpm-ostree",
            "status",
        ],
        &format!("{logged}Error: unable to pull {image}: unable to pull image: {source}\n"),
    );
    // cmd/podman/pull.go wraps runtime.New's error (libpod/image/image.go).
    refused(
        &["pull", image],
        &format!(
            "{logged}Error: error pulling image \"{image}\": unable to pull {image}: unable to pull image: {source}\n"
        ),
    );

    // The node's policy with sigstoreSigned (unknown to containers/image before 5.22):
    // signature/policy_config.go NewPolicyFromFile and newPolicyRequirementFromJSON;
    // doPullImage reads the policy before it pulls.
    w.write_root("/etc/containers/policy.json", &sigstore_policy(false));
    w.write_root(
        "/etc/machine-config-daemon/policy-for-old-podman.json",
        ACCEPT_ANYTHING,
    );
    refused(
        &["pull", "--authfile", secret, image],
        &format!(
            "Error: error pulling image \"{image}\": unable to pull {image}: invalid policy in \
             \"/etc/containers/policy.json\": Unknown policy requirement type \"sigstoreSigned\"\n"
        ),
    );
    // MCO main's pull on this podman (pkg/daemon/update.go: --signature-policy, since
    // `podman version -f` failed), then its run of the OS image.
    let pull = w.stand_in(&[
        "pull",
        "--authfile",
        secret,
        "--signature-policy",
        "/etc/machine-config-daemon/policy-for-old-podman.json",
        image,
    ]);
    assert_eq!(pull.code, Some(0), "{pull:?}");
    let ran = w.stand_in(&[
        "run",
        "--env-file",
        "/etc/mco/proxy.env",
        "--privileged",
        "--pid=host",
        "--net=host",
        "--rm",
        "-v",
        "/:/run/host",
        image,
        "rpm-ostree",
        "--version",
    ]);
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert!(ran.stdout.contains("Version: '2024.3'"), "{ran:?}");
}
