//! The registry side of the tests: the loopback registries of
//! `scripts/registry-services.sh` (their `MCD_TEST_REGISTRY_*` variables), registries a
//! test starts and stops itself (distribution 2.8, htpasswd Basic or Bearer tokens, over
//! TLS), the fault proxy (`tests/support/fault_proxy.py`), and a sandbox in which each run
//! of the binary gets its own HOME, XDG directories and cache, so that nothing of the
//! machine running the tests is read or written.

use std::collections::BTreeMap;
use std::fs;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use tempfile::TempDir;

use super::{crate_root, run_ok, wait_until, Bin};

/// How long one run in a sandbox may take before the test calls it hung.
const SANDBOX_RUN_TIMEOUT: Duration = Duration::from_secs(600);

/// The backoff between retries in runs against the fault proxy (read by the binary
/// from `MCD_INJECT_TEST_BACKOFF_MS`): the retries are real, the waits short.
const TEST_BACKOFF_MS: &str = "10";

/// A variable `scripts/registry-services.sh start` writes; panics, saying how to start
/// the registries, when it is missing.
pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: start the test registries first with \
             `scripts/registry-services.sh start STATEDIR && source STATEDIR/env` \
             (scripts/test.sh does this)"
        )
    })
}

/// The registries started by `scripts/registry-services.sh`.
pub struct Registries {
    pub anon: String,
    pub basic: String,
    pub basic_user: String,
    pub basic_password: String,
    pub token: String,
    pub token_user: String,
    pub token_password: String,
    pub ca_dir: String,
    pub fixtures: PathBuf,
}

pub fn registries() -> Registries {
    Registries {
        anon: env("MCD_TEST_REGISTRY_ANON"),
        basic: env("MCD_TEST_REGISTRY_BASIC"),
        basic_user: env("MCD_TEST_REGISTRY_BASIC_USER"),
        basic_password: env("MCD_TEST_REGISTRY_BASIC_PASSWORD"),
        token: env("MCD_TEST_REGISTRY_TOKEN"),
        token_user: env("MCD_TEST_REGISTRY_TOKEN_USER"),
        token_password: env("MCD_TEST_REGISTRY_TOKEN_PASSWORD"),
        ca_dir: env("MCD_TEST_REGISTRY_CA_DIR"),
        fixtures: PathBuf::from(env("MCD_TEST_REGISTRY_FIXTURES")),
    }
}

// ------------------------------------------------------------------ sandbox

/// A sandbox for runs of the binary: its own HOME, XDG runtime, cache and config
/// directories, and room for outputs.
pub struct Sandbox {
    pub dir: TempDir,
    pub env: BTreeMap<String, String>,
}

impl Sandbox {
    pub fn new() -> Self {
        Sandbox::from_dir(tempfile::tempdir().unwrap())
    }

    /// A sandbox inside `parent`.
    pub fn new_in(parent: &Path) -> Self {
        Sandbox::from_dir(tempfile::tempdir_in(parent).unwrap())
    }

    fn from_dir(dir: TempDir) -> Self {
        for sub in ["home", "run", "cache", "config"] {
            fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let p = |s: &str| dir.path().join(s).display().to_string();
        let mut env = BTreeMap::new();
        env.insert("HOME".into(), p("home"));
        env.insert("XDG_RUNTIME_DIR".into(), p("run"));
        env.insert("XDG_CACHE_HOME".into(), p("cache"));
        Sandbox { dir, env }
    }

    /// Retries in this sandbox's runs wait a few milliseconds, not the real backoff.
    pub fn fast_retries(mut self) -> Self {
        self.env
            .insert("MCD_INJECT_TEST_BACKOFF_MS".into(), TEST_BACKOFF_MS.into());
        self
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The cache the runs use by default.
    pub fn cache(&self) -> PathBuf {
        self.path("cache/mcd-inject")
    }

    /// A run with the sandbox's environment and none of the machine's credentials or
    /// proxies.
    pub fn bin(&self, args: &[&str]) -> Bin {
        ["REGISTRY_AUTH_FILE", "DOCKER_CONFIG"]
            .into_iter()
            .chain(["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"])
            .fold(Bin::new(args), Bin::env_remove)
            .envs(&self.env)
            .timeout(SANDBOX_RUN_TIMEOUT)
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.bin(args).run().into_output()
    }

    /// Starts a run in the background with its own TMPDIR: stdout discarded, stderr
    /// piped.
    pub fn spawn(&self, args: &[&str]) -> Child {
        fs::create_dir_all(self.path("tmp")).unwrap();
        self.bin(args).env("TMPDIR", self.path("tmp")).spawn()
    }

    pub fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "mcd-inject {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The manifest digest `inspect` reports for an anonymous-registry image.
    pub fn manifest_digest(&self, image: &str) -> String {
        let out = self.ok(&["inspect", "--json", "--image", image, "--tls-verify=false"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["image"]["manifest_digest"].as_str().unwrap().to_string()
    }

    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !out.status.success(),
            "mcd-inject {} succeeded but should have failed:\n{stderr}",
            args.join(" ")
        );
        assert!(stderr.contains("error: "), "no error line in:\n{stderr}");
        stderr
    }

    /// Extracts `path` of `image` and returns the bytes.
    pub fn extract(&self, image: &str, path: &str, extra: &[&str]) -> Vec<u8> {
        let out = self.path("extracted");
        let _ = fs::remove_file(&out);
        let mut args = vec!["extract", "--image", image, "--path", path, "-o"];
        let out_s = out.display().to_string();
        args.push(&out_s);
        args.extend_from_slice(extra);
        self.ok(&args);
        fs::read(&out).unwrap()
    }

    pub fn write_auth(&self, rel: &str, key: &str, user: &str, password: &str) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let body = serde_json::json!({ "auths": { key: { "auth": auth } } });
        fs::write(&path, serde_json::to_vec(&body).unwrap()).unwrap();
        path
    }
}

// ------------------------------------------------------------------ fault proxy

/// `tests/support/fault_proxy.py` in front of `upstream`, injecting the faults of `mode`;
/// stopped when dropped.
pub struct Proxy {
    child: Child,
    pub addr: String,
    _dir: TempDir,
}

impl Proxy {
    pub fn start(upstream: &str, mode: &str) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let port_file = dir.path().join("port");
        let child = Command::new("python3")
            .arg(crate_root().join("tests/support/fault_proxy.py"))
            .args(["--upstream", upstream, "--mode", mode, "--port-file"])
            .arg(&port_file)
            .stdin(Stdio::null())
            .spawn()
            .expect("start tests/support/fault_proxy.py (python3 is required)");
        let mut port = String::new();
        wait_until("the fault proxy's port", Duration::from_secs(10), || {
            fs::read_to_string(&port_file).is_ok_and(|p| {
                port = p;
                true
            })
        });
        Proxy {
            child,
            addr: format!("127.0.0.1:{}", port.trim()),
            _dir: dir,
        }
    }

    pub fn stats(&self) -> serde_json::Value {
        let out = Command::new("curl")
            .args(["-s", &format!("http://{}/__stats", self.addr)])
            .output()
            .expect("curl");
        serde_json::from_slice(&out.stdout).expect("proxy stats")
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

// ------------------------------------------------------------------ registries of a test

/// A free TCP port on 127.0.0.1 (free when asked).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something listens on 127.0.0.1:`port`, showing `log` if nothing does.
pub fn wait_listening(port: u16, name: &str, log: &Path) {
    let listening = super::poll(Duration::from_secs(20), || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(
        listening.is_some(),
        "{name} did not listen on 127.0.0.1:{port}; log:\n{}",
        fs::read_to_string(log).unwrap_or_default()
    );
}

/// A process started by a test, stopped (by its PID) when dropped.
pub struct Service {
    pub child: Option<Child>,
}

impl Service {
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A user and a fresh random password.
pub struct Creds {
    pub user: String,
    pub password: String,
}

impl Creds {
    pub fn new(user: &str) -> Creds {
        use std::hash::{BuildHasher, RandomState};
        let n: u64 = RandomState::new().hash_one(Instant::now());
        Creds {
            user: user.to_string(),
            password: format!("pw{n:016x}"),
        }
    }

    pub fn pair(&self) -> String {
        format!("{}:{}", self.user, self.password)
    }
}

/// A registry of a test's own: `docker-registry` with a generated config, over TLS with
/// the certificate of `MCD_TEST_REGISTRY_TLS_DIR`.
pub fn start_registry(dir: &Path, name: &str, port: u16, auth_yaml: &str) -> Service {
    let tls = PathBuf::from(env("MCD_TEST_REGISTRY_TLS_DIR"));
    let root = dir.join(name);
    fs::create_dir_all(root.join("storage")).unwrap();
    let config = format!(
        "version: 0.1\nlog: {{level: warn, accesslog: {{disabled: true}}}}\nstorage:\n  \
         filesystem: {{rootdirectory: {}}}\n  delete: {{enabled: true}}\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: {name}\n  \
         tls: {{certificate: {}, key: {}}}\n  debug: {{addr: ''}}\n{auth_yaml}\n",
        root.join("storage").display(),
        tls.join("server.crt").display(),
        tls.join("server.key").display(),
    );
    fs::write(root.join("config.yml"), config).unwrap();
    let log = root.join("log");
    let child = Command::new("docker-registry")
        .arg("serve")
        .arg(root.join("config.yml"))
        .stdout(fs::File::create(&log).unwrap())
        .stderr(Stdio::from(fs::File::create(root.join("err")).unwrap()))
        .spawn()
        .expect("starting docker-registry");
    let svc = Service { child: Some(child) };
    wait_listening(port, name, &root.join("err"));
    svc
}

/// A registry with htpasswd Basic auth for `creds`: the service and its `HOST:PORT`.
pub fn start_htpasswd_registry(dir: &Path, name: &str, creds: &Creds) -> (Service, String) {
    let ht = dir.join(format!("{name}.htpasswd"));
    let out = run_ok(Command::new("htpasswd").args(["-Bbn", &creds.user, &creds.password]));
    fs::write(&ht, out.stdout).unwrap();
    let port = free_port();
    let auth = format!(
        "auth:\n  htpasswd: {{realm: {name}, path: {}}}",
        ht.display()
    );
    (
        start_registry(dir, name, port, &auth),
        format!("127.0.0.1:{port}"),
    )
}

/// The identity token (OAuth2 refresh token) the issuer of [`start_token_registry`]
/// accepts.
pub const REFRESH_TOKEN: &str = "refresh-token-for-release-tests";

/// A registry with Bearer-token auth, with its own issuer (`tests/support/token_issuer.py`)
/// for `creds`: the registry and the issuer, and the registry's `HOST:PORT`.
pub fn start_token_registry(dir: &Path, creds: &Creds) -> (Vec<Service>, String) {
    let tls = PathBuf::from(env("MCD_TEST_REGISTRY_TLS_DIR"));
    let port_file = dir.join("issuer.port");
    let issuer = Command::new("python3")
        .arg(crate_root().join("tests/support/token_issuer.py"))
        .arg("--key")
        .arg(tls.join("token.key"))
        .arg("--cert")
        .arg(tls.join("token.crt"))
        .args([
            "--issuer",
            "release-test-issuer",
            "--service",
            "release-test",
        ])
        .args(["--user", &creds.user, "--password", &creds.password])
        .args(["--refresh-token", REFRESH_TOKEN])
        .arg("--port-file")
        .arg(&port_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting the token issuer");
    let issuer = Service {
        child: Some(issuer),
    };
    wait_until("the token issuer's port", Duration::from_secs(20), || {
        port_file.exists()
    });
    let issuer_port = fs::read_to_string(&port_file).unwrap();
    let port = free_port();
    let auth = format!(
        "auth:\n  token:\n    realm: http://127.0.0.1:{issuer_port}/token\n    service: release-test\n    \
         issuer: release-test-issuer\n    rootcertbundle: {}",
        tls.join("token.crt").display()
    );
    let reg = start_registry(dir, "source", port, &auth);
    (vec![reg, issuer], format!("127.0.0.1:{port}"))
}
