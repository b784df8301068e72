//! The node side of the tests: the real Ignition programs applying a config to a
//! scratch root (Debian's for spec 3.0-3.3, `../shared/ignition-v2.26` for 3.4+,
//! `../shared/ignition-v0.35` for spec 2.x), a loopback HTTPS server standing in for
//! the Machine Config Server, and a real systemd boot of the applied root under
//! `systemd-nspawn` (`tests/support/boot-root.sh`).
//!
//! The third-party programs come from `MCD_INJECT_SHARED` or `../shared` beside the
//! crate; they are decompressed once into `target/shared-tools` and checked against
//! their `SHA256SUMS`. A missing program fails the test that needs it.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use super::{crate_root, sha256_hex};

/// Debian's Ignition (2.14): reads spec 3.0-3.3.
pub const DEBIAN_IGNITION: &str = "/usr/lib/dracut/modules.d/30ignition/ignition";

/// How long one Ignition stage may take: it retries a failed fetch for ever.
const IGNITION_TIMEOUT: &str = "300";

/// `program` under `timeout`, so that a stage that retries for ever fails the test.
fn bounded(program: &Path) -> Command {
    bounded_by(program, IGNITION_TIMEOUT)
}

/// `program` under `timeout SECS`.
fn bounded_by(program: &Path, secs: &str) -> Command {
    let mut c = Command::new("timeout");
    c.args(["--kill-after=5", secs]).arg(program);
    c
}

/// Runs a command, returning whether it succeeded and its stdout and stderr.
pub fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The directory of the shared third-party programs.
pub fn shared_dir() -> PathBuf {
    let dir = std::env::var_os("MCD_INJECT_SHARED")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_root().join("../shared"));
    assert!(
        dir.is_dir(),
        "{} is missing: the tests need the real Ignition and MCD programs there \
         (set MCD_INJECT_SHARED to their directory)",
        dir.display()
    );
    dir
}

/// `COMPONENT/NAME.xz` of the shared directory, decompressed and checked against the
/// component's `SHA256SUMS`; returns the path of the executable.
pub fn shared_program(component: &str, name: &str) -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let src_dir = shared_dir().join(component);
    let sums = fs::read_to_string(src_dir.join("SHA256SUMS"))
        .unwrap_or_else(|e| panic!("{}/SHA256SUMS: {e}", src_dir.display()));
    let want = sums
        .lines()
        .find_map(|l| {
            let (hash, file) = l.split_once(char::is_whitespace)?;
            (file.trim().trim_start_matches('*') == name).then(|| hash.to_string())
        })
        .unwrap_or_else(|| panic!("{}/SHA256SUMS has no {name}", src_dir.display()));
    let dest_dir = crate_root().join("target/shared-tools").join(component);
    let dest = dest_dir.join(name);
    if fs::read(&dest).is_ok_and(|b| sha256_hex(&b) == want) {
        return dest;
    }
    fs::create_dir_all(&dest_dir).unwrap();
    let xz = src_dir.join(format!("{name}.xz"));
    let out = Command::new("xz")
        .arg("-dc")
        .arg(&xz)
        .output()
        .unwrap_or_else(|e| panic!("xz -dc {}: {e} (apt-get install xz-utils)", xz.display()));
    assert!(out.status.success(), "xz -dc {} failed", xz.display());
    assert_eq!(
        sha256_hex(&out.stdout),
        want,
        "{} does not decompress to its SHA256SUMS entry",
        xz.display()
    );
    let tmp = dest_dir.join(format!(".{name}.{}", std::process::id()));
    fs::write(&tmp, &out.stdout).unwrap();
    fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    fs::rename(&tmp, &dest).unwrap();
    dest
}

/// The Ignition program that reads a spec 3 version: Debian's up to 3.3, v2.26 after.
pub fn ignition_for_spec3(version: &str) -> PathBuf {
    let minor: u32 = version
        .strip_prefix("3.")
        .and_then(|r| r.split('.').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("not a spec 3 version: {version}"));
    if minor <= 3 {
        assert!(
            Path::new(DEBIAN_IGNITION).is_file(),
            "{DEBIAN_IGNITION} is missing: apt-get install ignition"
        );
        PathBuf::from(DEBIAN_IGNITION)
    } else {
        shared_program("ignition-v2.26", "ignition")
    }
}

/// The `ignition.version` of a config file.
pub fn config_version(cfg: &Path) -> String {
    let v: serde_json::Value = serde_json::from_slice(&fs::read(cfg).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", cfg.display()));
    v["ignition"]["version"]
        .as_str()
        .unwrap_or_else(|| panic!("{} has no ignition.version", cfg.display()))
        .to_string()
}

/// Applies a spec 3 config to `root` as a node's initramfs does: the `fetch` stage
/// (which fetches and merges `ignition.config.merge` sources for real), then the
/// merged config applied. `work` holds the stages' files.
pub fn apply_spec3(cfg: &Path, root: &Path, work: &Path) {
    let version = config_version(cfg);
    let program = ignition_for_spec3(&version);
    let cache = work.join("fetched.json");
    let (ok, text) = run(bounded(&program)
        .env("IGNITION_CONFIG_FILE", cfg)
        .args(["-platform", "file", "-stage", "fetch", "-log-to-stdout"])
        .arg("-config-cache")
        .arg(&cache)
        .arg("-state-file")
        .arg(work.join("state.json"))
        .arg("-neednet")
        .arg(work.join("neednet")));
    assert!(ok, "ignition fetch stage on {}:\n{text}", cfg.display());
    // The merged config still names its merge sources; the apply must not fetch again.
    let mut merged: serde_json::Value = serde_json::from_slice(&fs::read(&cache).unwrap()).unwrap();
    if let Some(ign) = merged["ignition"].as_object_mut() {
        ign.remove("config");
    }
    let merged_path = work.join("merged.json");
    fs::write(&merged_path, serde_json::to_vec(&merged).unwrap()).unwrap();
    let link = work.join("ignition-apply");
    if !link.exists() {
        std::os::unix::fs::symlink(&program, &link).unwrap();
    }
    // Not --offline: a remote payload is fetched here, as the files stage would.
    let (ok, text) = run(bounded(&link)
        .env("container", "1")
        .arg("--root")
        .arg(root)
        .arg(&merged_path));
    assert!(ok, "ignition-apply of {}:\n{text}", cfg.display());
}

/// Only the `fetch` stage of the Ignition that reads `cfg` (v0.35 for spec 2.x, else
/// [`ignition_for_spec3`]), stopped after `secs` seconds: a fetch that cannot reach its
/// source retries for ever. Whether it succeeded, and its log.
pub fn fetch_stage(cfg: &Path, work: &Path, secs: u32) -> (bool, String) {
    let version = config_version(cfg);
    let secs = secs.to_string();
    let cache = work.join("fetch-only.json");
    let _ = fs::remove_file(&cache);
    if version.starts_with("2.") {
        let empty = work.join("system-config");
        fs::create_dir_all(&empty).unwrap();
        run(
            bounded_by(&shared_program("ignition-v0.35", "ignition"), &secs)
                .env("IGNITION_CONFIG_FILE", cfg)
                .env("IGNITION_SYSTEM_CONFIG_DIR", &empty)
                .args(["-oem", "file", "-stage", "fetch", "-log-to-stdout"])
                .arg("-root")
                .arg(work.join("fetch-only-root"))
                .arg("-config-cache")
                .arg(&cache),
        )
    } else {
        run(bounded_by(&ignition_for_spec3(&version), &secs)
            .env("IGNITION_CONFIG_FILE", cfg)
            .args(["-platform", "file", "-stage", "fetch", "-log-to-stdout"])
            .arg("-config-cache")
            .arg(&cache)
            .arg("-state-file")
            .arg(work.join("fetch-only-state.json"))
            .arg("-neednet")
            .arg(work.join("fetch-only-neednet")))
    }
}

/// Applies a spec 2.x config to `root` with Ignition v0.35, the program of 4.1-4.5
/// bootimages, stage by stage as in their initramfs: `fetch` (which fetches and
/// appends `ignition.config.append` sources), `disks`, `files`.
pub fn apply_spec2(cfg: &Path, root: &Path, work: &Path) {
    let program = shared_program("ignition-v0.35", "ignition");
    let empty = work.join("system-config");
    fs::create_dir_all(&empty).unwrap();
    for stage in ["fetch", "disks", "files"] {
        let (ok, text) = run(bounded(&program)
            .env("IGNITION_CONFIG_FILE", cfg)
            .env("IGNITION_SYSTEM_CONFIG_DIR", &empty)
            .args(["-oem", "file", "-stage", stage, "-log-to-stdout"])
            .arg("-root")
            .arg(root)
            .arg("-config-cache")
            .arg(work.join("v0-cache.json")));
        assert!(
            ok,
            "ignition v0.35 {stage} stage on {}:\n{text}",
            cfg.display()
        );
    }
}

/// A loopback server over a directory, by HTTPS and by plain HTTP; killed when dropped.
/// `GET /config/POOL` of a directory holding `config/POOL-spec2.2.ign` and
/// `config/POOL-spec3.ign` is answered by the request's Accept header, as MCO's Machine
/// Config Server answers it (`tests/support/https_serve.py`), and logged.
///
/// Its certificate is a leaf signed by a CA of its own, as the MCS's serving
/// certificate is signed by the CA that MCO's certificate rotation makes
/// (`machine-config-server-ca`); a second CA, unrelated, stands for the root CA that
/// the installer put in the pointer configs of the cluster, which signed nothing this
/// server presents.
pub struct HttpsServer {
    child: Child,
    pub port: u16,
    pub http_port: u16,
    /// The PEM of the CA that signed the server's certificate: the CA a config must
    /// trust to reach the server (the rotated MCS CA).
    pub ca_pem: Vec<u8>,
    /// The PEM of a CA that signed nothing the server presents (the install-time root
    /// CA a pointer config saved before the rotation carries).
    pub old_ca_pem: Vec<u8>,
    log: PathBuf,
}

/// `openssl` with these arguments, which must succeed.
fn openssl(args: &[&std::ffi::OsStr]) {
    let (ok, text) = run(Command::new("openssl").args(args));
    assert!(ok, "openssl {args:?}: {text}");
}

/// A self-signed CA of subject `subject` (EC P-256), at `NAME.pem` and `NAME.key`.
fn make_ca(work: &Path, name: &str, subject: &str) -> (PathBuf, PathBuf) {
    let (pem, key) = (
        work.join(format!("{name}.pem")),
        work.join(format!("{name}.key")),
    );
    let o = |s: &'static str| std::ffi::OsStr::new(s);
    openssl(&[
        o("req"),
        o("-x509"),
        o("-newkey"),
        o("ec"),
        o("-pkeyopt"),
        o("ec_paramgen_curve:P-256"),
        o("-nodes"),
        o("-days"),
        o("2"),
        o("-subj"),
        subject.as_ref(),
        o("-addext"),
        o("basicConstraints=critical,CA:TRUE"),
        o("-addext"),
        o("keyUsage=critical,keyCertSign,cRLSign"),
        o("-keyout"),
        key.as_os_str(),
        o("-out"),
        pem.as_os_str(),
    ]);
    (pem, key)
}

impl HttpsServer {
    pub fn serve(dir: &Path, work: &Path) -> HttpsServer {
        let o = |s: &'static str| std::ffi::OsStr::new(s);
        // The CA that MCO's certificate rotation makes, and the installer's root CA.
        let (ca, ca_key) = make_ca(
            work,
            "mcs-ca",
            "/OU=openshift-machine-config-operator/CN=machine-config-server-ca@1767225600",
        );
        let (old_ca, _) = make_ca(work, "install-root-ca", "/OU=openshift/CN=root-ca");
        // The serving certificate, signed by the rotated CA. 10.0.2.2: the host's
        // loopback as a qemu guest reaches it (the VM boots).
        let cert = work.join("server.pem");
        let key = work.join("server.key");
        let csr = work.join("server.csr");
        let ext = work.join("server.ext");
        fs::write(
            &ext,
            "subjectAltName=IP:127.0.0.1,IP:10.0.2.2\nbasicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(&[
            o("req"),
            o("-new"),
            o("-newkey"),
            o("ec"),
            o("-pkeyopt"),
            o("ec_paramgen_curve:P-256"),
            o("-nodes"),
            o("-subj"),
            o("/CN=system:machine-config-server"),
            o("-keyout"),
            key.as_os_str(),
            o("-out"),
            csr.as_os_str(),
        ]);
        openssl(&[
            o("x509"),
            o("-req"),
            o("-in"),
            csr.as_os_str(),
            o("-CA"),
            ca.as_os_str(),
            o("-CAkey"),
            ca_key.as_os_str(),
            o("-set_serial"),
            o("2"),
            o("-days"),
            o("2"),
            o("-extfile"),
            ext.as_os_str(),
            o("-out"),
            cert.as_os_str(),
        ]);
        let log = work.join("mcs-requests.log");
        let mut child = Command::new("python3")
            .arg(crate_root().join("tests/support/https_serve.py"))
            .arg(&cert)
            .arg(&key)
            .arg(dir)
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 is needed for the loopback HTTPS server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ports: Vec<u16> = line
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        let [port, http_port] = ports[..] else {
            panic!("https_serve.py printed {line:?}, not two ports");
        };
        HttpsServer {
            child,
            port,
            http_port,
            ca_pem: fs::read(&ca).unwrap(),
            old_ca_pem: fs::read(&old_ca).unwrap(),
            log,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}/{path}", self.port)
    }

    pub fn http_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.http_port)
    }

    /// The requests of `/config/POOL` answered so far by the Accept header, one line
    /// each: `PATH BODY ACCEPT`, BODY being `spec2.2`, `spec3` or `400`.
    pub fn mcs_requests(&self) -> Vec<String> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn boot_script() -> PathBuf {
    crate_root().join("tests/support/boot-root.sh")
}

/// The debootstrapped base root of the boot tests, made once per machine (it is kept
/// in `target/boot-base`, or `MCD_INJECT_BOOT_BASE`): Debian bookworm, whose ABI is RHEL
/// 9's (glibc 2.36, `libcrypto.so.3`), the OS of a RHEL 9 node.
pub fn boot_base() -> PathBuf {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        for tool in ["systemd-nspawn", "debootstrap", "journalctl"] {
            assert!(
                Command::new("sh")
                    .args(["-c", &format!("command -v {tool}")])
                    .output()
                    .is_ok_and(|o| o.status.success()),
                "{tool} is missing: apt-get install systemd-container debootstrap"
            );
        }
        let dir = std::env::var_os("MCD_INJECT_BOOT_BASE")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| crate_root().join("target/boot-base"));
        let (ok, text) = run(Command::new("bash")
            .arg(boot_script())
            .arg("base")
            .arg(&dir));
        assert!(ok, "making the boot base root: {text}");
        dir
    })
    .clone()
}

/// The base root whose ABI is RHEL 8's: Debian bullseye (glibc 2.31, older than a RHEL 9
/// build needs; `libcrypto.so.1.1`), the OS of a RHEL 8 node (an old bootimage's), made
/// once per machine (`target/boot-base-bullseye`, or `MCD_INJECT_BOOT_BASE_BULLSEYE`).
pub fn rhel8_abi_base() -> PathBuf {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        boot_base();
        let dir = std::env::var_os("MCD_INJECT_BOOT_BASE_BULLSEYE")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| crate_root().join("target/boot-base-bullseye"));
        let (ok, text) = run(Command::new("bash")
            .arg(boot_script())
            .arg("base")
            .arg(&dir)
            .arg("bullseye"));
        assert!(ok, "making the bullseye base root: {text}");
        dir
    })
    .clone()
}

/// The base root of a node of RHEL major `rhel`: its ABI ([`rhel8_abi_base`],
/// [`boot_base`]).
pub fn abi_base(rhel: u64) -> PathBuf {
    match rhel {
        8 => rhel8_abi_base(),
        9 => boot_base(),
        other => panic!("no base root has the ABI of RHEL {other}"),
    }
}

/// A fresh root at `root`, a copy of the base root `base` made to look like RHCOS at
/// first boot.
pub fn prepare_root_on(base: &Path, root: &Path) {
    let (ok, text) = run(Command::new("bash")
        .arg(boot_script())
        .arg("prepare")
        .arg(base)
        .arg(root));
    assert!(ok, "preparing {}: {text}", root.display());
}

/// What a boot left behind.
#[derive(Debug, Clone)]
pub struct Boot {
    /// `state=...`, `unit.NAME.PROPERTY=...`, `bin.sha256`, `bin.mode`.
    pub report: BTreeMap<String, String>,
    pub failed_units: Vec<String>,
    /// Programs of the stand-ins that were called (podman, rpm-ostree, pivot.service).
    pub called: String,
    /// The journal of the firstboot unit, messages only.
    pub firstboot_journal: String,
    /// The whole journal, for failure messages.
    pub journal: String,
    /// When systemd started a unit's start job and when that job finished, from the
    /// boot's journal (`UNIT starting` / `UNIT done`, monotonic microseconds): unlike the
    /// probe's report, it holds whatever the probe had time to see.
    pub jobs: BTreeMap<String, u64>,
    /// What the probe MCD recorded, if it ran to the end.
    pub mcd_run: Option<String>,
    /// Which boot of the root this was (1 for the first).
    pub number: usize,
    /// The boot ended in a reboot that the root asked for (systemd-nspawn exits 133).
    pub rebooted: bool,
    /// How long the boot took, from systemd-nspawn's start to its exit.
    pub seconds: f64,
}

impl Boot {
    /// A boot from what its probe left: the report, the stand-ins' calls, the firstboot
    /// unit's journal, the whole journal and the probe MCD's record.
    pub fn from_report(
        report_text: &str,
        called: String,
        firstboot_journal: String,
        journal: String,
        mcd_run: Option<String>,
    ) -> Boot {
        let mut report = BTreeMap::new();
        let mut failed_units = Vec::new();
        for line in report_text.lines() {
            if let Some(f) = line.strip_prefix("failed=") {
                failed_units.push(f.to_string());
            } else if let Some((k, v)) = line.split_once('=') {
                report.insert(k.to_string(), v.to_string());
            }
        }
        Boot {
            report,
            failed_units,
            called,
            firstboot_journal,
            journal,
            jobs: BTreeMap::new(),
            mcd_run,
            number: 1,
            rebooted: false,
            seconds: 0.0,
        }
    }

    /// The calls of the stand-in `program` (its path, as the call log names it) in this
    /// boot: their arguments, in order.
    pub fn calls_of(&self, program: &str) -> Vec<String> {
        let boot = format!("boot={}", self.number);
        self.called
            .lines()
            .filter_map(|l| {
                let mut f = l.splitn(3, ' ');
                let (b, _uptime, rest) = (f.next()?, f.next()?, f.next()?);
                let args = rest.strip_prefix(program)?;
                (b == boot && (args.is_empty() || args.starts_with(' ')))
                    .then(|| args.trim_start().to_string())
            })
            .collect()
    }

    pub fn get(&self, key: &str) -> &str {
        self.report.get(key).map(String::as_str).unwrap_or("")
    }

    pub fn unit(&self, unit: &str, property: &str) -> &str {
        self.get(&format!("unit.{unit}.{property}"))
    }

    /// A monotonic timestamp of a unit, in microseconds (0: never).
    pub fn at(&self, unit: &str, property: &str) -> u64 {
        self.unit(unit, property).parse().unwrap_or(0)
    }

    /// When systemd began starting `unit` in this boot (microseconds; 0: never), as its
    /// journal records it.
    pub fn starting(&self, unit: &str) -> u64 {
        self.jobs
            .get(&format!("{unit} starting"))
            .copied()
            .unwrap_or(0)
    }

    /// When `unit`'s start job finished in this boot, the unit up (microseconds; 0: never).
    pub fn started(&self, unit: &str) -> u64 {
        self.jobs.get(&format!("{unit} done")).copied().unwrap_or(0)
    }

    /// The report and the journal, for an assertion message.
    pub fn describe(&self) -> String {
        let report: Vec<String> = self
            .report
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let tail: Vec<&str> = self.journal.lines().rev().take(80).collect();
        format!(
            "report:\n{}\nfailed: {:?}\ncalled:\n{}\nfirstboot journal:\n{}\njournal (last 80 lines):\n{}",
            report.join("\n"),
            self.failed_units,
            self.called,
            self.firstboot_journal,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    }
}

/// The messages of the last boot a journal directory holds, with `journalctl` `args`.
pub fn last_boot_journal(journal_dir: &Path, args: &[&str]) -> String {
    run(Command::new("journalctl")
        .arg("-D")
        .arg(journal_dir)
        .args(["--no-pager", "-o", "cat", "-b", "-0"])
        .args(args))
    .1
}

/// systemd's start jobs in the last boot a journal directory holds: `UNIT starting` and
/// `UNIT done` (the job's result was `done`), at their first monotonic timestamps.
pub fn last_boot_jobs(journal_dir: &Path) -> BTreeMap<String, u64> {
    // sd-messages.h: SD_MESSAGE_UNIT_STARTING, SD_MESSAGE_UNIT_STARTED.
    const STARTING: &str = "7d4958e842da4a758f6c1cdc7b36dcc5";
    const STARTED: &str = "39f53479d3a045ac8e11786248231fbf";
    let text = run(Command::new("journalctl")
        .arg("-D")
        .arg(journal_dir)
        .args(["--no-pager", "-o", "json", "-b", "-0", "_PID=1"])
        .arg(format!("MESSAGE_ID={STARTING}"))
        .arg(format!("MESSAGE_ID={STARTED}")))
    .1;
    let mut jobs = BTreeMap::new();
    for line in text.lines() {
        let Ok(e) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let field = |k: &str| e[k].as_str().unwrap_or_default().to_string();
        let at: u64 = field("__MONOTONIC_TIMESTAMP").parse().unwrap_or(0);
        let event = match (field("MESSAGE_ID").as_str(), field("JOB_RESULT").as_str()) {
            (STARTING, _) => "starting",
            (STARTED, "done") => "done",
            _ => continue,
        };
        jobs.entry(format!("{} {event}", field("UNIT")))
            .or_insert(at);
    }
    jobs
}

/// Boots `root` (prepared and applied) until its probe powers it off. `wait_for`, when
/// set, is a line of the firstboot unit's journal after which the probe stops waiting
/// for the boot to settle (a real MCD retries for ever on a test root).
pub fn boot(root: &Path, wait_for: Option<&str>) -> Boot {
    let probe = root.join("var/lib/boot-probe");
    if let Some(w) = wait_for {
        fs::write(probe.join("wait-for"), w).unwrap();
    }
    let (ok, text) = run(Command::new("bash")
        .arg(boot_script())
        .arg("boot")
        .arg(root)
        .arg("180"));
    let journal_dir = root.join("var/log/journal");
    let journal = |args: &[&str]| {
        run(Command::new("journalctl")
            .arg("-D")
            .arg(&journal_dir)
            .args(["--no-pager", "-o", "cat"])
            .args(args))
        .1
    };
    let full = journal(&[]);
    let report_text = fs::read_to_string(probe.join("report")).unwrap_or_else(|_| {
        panic!(
            "the boot of {} left no probe report (nspawn ok={ok}):\n{text}\n{full}",
            root.display()
        )
    });
    let mut b = Boot::from_report(
        &report_text,
        fs::read_to_string(probe.join("called")).unwrap_or_default(),
        journal(&["-u", "machine-config-daemon-firstboot.service"]),
        full,
        fs::read_to_string(probe.join("mcd-run")).ok(),
    );
    b.jobs = last_boot_jobs(&journal_dir);
    b
}

/// Gives `root` (prepared) the bootimage's OS `boot_os` and the cluster's OS image
/// `image`, which carries `cluster_os` on a tree made from the base root `cluster_base`,
/// and its extensions image `extensions` (`boot-root.sh os`, `tests/support/rhcos-os.sh`).
pub fn set_os(
    root: &Path,
    boot_os: &str,
    cluster_os: &str,
    image: &str,
    extensions: &str,
    cluster_base: &Path,
) {
    let (ok, text) = run(Command::new("bash")
        .arg(boot_script())
        .arg("os")
        .arg(root)
        .args([boot_os, cluster_os, image, extensions])
        .arg(cluster_base));
    assert!(ok, "giving {} its OS: {text}", root.display());
}

/// What boots a node: an nspawn root ([`Nspawn`]) or a VM's disk (`harness::vm::Vm`).
/// The boots of a first boot are one loop ([`boots`]); only how a machine readies and
/// runs one boot differs.
pub trait Machine {
    /// What one boot left behind.
    type Boot;
    /// Readies boot `number`: the deployment the last boot's shutdown chose (as the
    /// bootloader boots it: `boot-root.sh deploy`), the boot's number for the stand-ins
    /// (`/var/lib/boot-probe/boot`), no probe report or record of what systemd loaded
    /// left by an earlier boot.
    fn ready(&mut self, number: usize);
    /// Runs boot `number` and reads what it left.
    fn boot(&mut self, number: usize) -> Self::Boot;
    /// Whether the boot ended in a reboot that the node asked for.
    fn rebooted(boot: &Self::Boot) -> bool;
}

/// Boots `machine` again and again while a boot ends in a reboot the node asked for, at
/// most `max` times: the boots of a first boot that updates the OS.
pub fn boots<M: Machine>(machine: &mut M, max: usize) -> Vec<M::Boot> {
    let mut out = Vec::new();
    for number in 1..=max {
        machine.ready(number);
        let b = machine.boot(number);
        let again = M::rebooted(&b);
        out.push(b);
        if !again {
            break;
        }
    }
    out
}

/// A root (prepared and applied) that `systemd-nspawn -b` boots: each boot's probe
/// report, its own journal, and the stand-ins' calls.
pub struct Nspawn<'a>(pub &'a Path);

impl Machine for Nspawn<'_> {
    type Boot = Boot;

    fn ready(&mut self, number: usize) {
        let root = self.0;
        let (ok, text) = run(Command::new("bash")
            .arg(boot_script())
            .arg("deploy")
            .arg(root));
        assert!(ok, "boot {number}: deploying {}: {text}", root.display());
        let probe = root.join("var/lib/boot-probe");
        fs::write(probe.join("boot"), number.to_string()).unwrap();
        let _ = fs::remove_file(probe.join("report"));
        let _ = fs::remove_file(probe.join("loaded"));
    }

    fn boot(&mut self, number: usize) -> Boot {
        let root = self.0;
        let probe = root.join("var/lib/boot-probe");
        let journal_dir = root.join("var/log/journal");
        let start = std::time::Instant::now();
        let output = Command::new("bash")
            .arg(boot_script())
            .arg("boot")
            .arg(root)
            .arg("240")
            .output()
            .expect("running boot-root.sh boot");
        let seconds = start.elapsed().as_secs_f64();
        let code = output.status.code();
        let journal = |args: &[&str]| last_boot_journal(&journal_dir, args);
        let full = journal(&[]);
        let report_text = fs::read_to_string(probe.join("report")).unwrap_or_else(|_| {
            panic!(
                "boot {number} of {} left no probe report (nspawn exit {code:?}):\n{}{}\n{full}",
                root.display(),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        });
        fs::rename(probe.join("report"), probe.join(format!("report.{number}"))).unwrap();
        let mut b = Boot::from_report(
            &report_text,
            fs::read_to_string(probe.join("called")).unwrap_or_default(),
            journal(&["-u", "machine-config-daemon-firstboot.service"]),
            full,
            None,
        );
        b.jobs = last_boot_jobs(&journal_dir);
        b.number = number;
        b.seconds = seconds;
        // systemd-nspawn exits 133 when the container asked for a reboot.
        b.rebooted = code == Some(133);
        b
    }

    fn rebooted(boot: &Boot) -> bool {
        boot.rebooted
    }
}
