//! Applying a config with the real Ignition programs to a small scratch root, and what
//! the root holds afterwards, as a listing two roots can be compared by: the
//! differential tests of the translation between spec families (`translation.rs`).
//!
//! - [`scratch_root`]: the few files Ignition's user creation needs (`useradd --root`
//!   and `groupadd --root` edit `etc/passwd`, `group`, `shadow`, `gshadow` after
//!   `etc/login.defs`; Ignition v0.35 first runs `chroot ROOT /usr/bin/id NAME`, so the
//!   root holds `id` and the libraries it loads), `/home`, and an `etc/selinux/config`
//!   naming a policy: the spec 3 programs relabel what they wrote after their `files`
//!   stage, which runs a `setfiles` stand-in here (no SELinux on the test machine);
//! - [`apply`]: the stages of the initramfs, v0.35 for spec 2.x (`node::apply_spec2`),
//!   `fetch` then `files` of Debian's 2.14 (3.0-3.3) or v2.26 (3.4+) for spec 3.
//!   `ignition-apply` is not used: it refuses a config with users ("cannot apply passwd
//!   live");
//! - [`listing`]: every node under the root with its type, mode, owner, content hash,
//!   link target or hard-link siblings; the user databases and the preset file as sets
//!   of lines; the authorized SSH keys of each `.ssh` directory as a set;
//! - [`Loopback`]: a plain-HTTP server on 127.0.0.1 serving fixed bodies, and
//!   `/config/POOL` by the request's Accept header as MCO's Machine Config Server does.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::node::{apply_spec2, config_version, ignition_for_spec3, run, shared_program};
use super::sha256_hex;

/// Debian's validator (2.14): spec 3.0-3.3.
const DEBIAN_VALIDATE: &str = "/usr/bin/ignition-validate";

/// How long one Ignition stage may take: a fetch retries for ever.
const STAGE_TIMEOUT: &str = "120";

/// The minimal user databases of a scratch root: root and a few system groups, the same
/// for every run (not the host's, which vary).
const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n\
    daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n\
    nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
const GROUP: &str = "root:x:0:\ndaemon:x:1:\nwheel:x:10:\nusers:x:100:\nnogroup:x:65534:\n";
const SHADOW: &str = "root:*:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n\
    nobody:*:19000:0:99999:7:::\n";
const GSHADOW: &str = "root:*::\ndaemon:*::\nwheel:*::\nusers:*::\nnogroup:*::\n";

/// Makes `dir/root`, a scratch root for Ignition, and returns it. `seed` adds files
/// (path under the root, contents; mode 0644, owned by root) that the root holds
/// before Ignition runs.
pub fn scratch_root(dir: &Path, seed: &[(&str, &[u8])]) -> PathBuf {
    let root = dir.join("root");
    for d in ["etc/selinux", "home", "root", "usr/bin", "var/lib"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    for (name, text) in [
        ("passwd", PASSWD),
        ("group", GROUP),
        ("shadow", SHADOW),
        ("gshadow", GSHADOW),
    ] {
        fs::write(root.join("etc").join(name), text).unwrap();
    }
    for name in ["shadow", "gshadow"] {
        fs::set_permissions(
            root.join("etc").join(name),
            fs::Permissions::from_mode(0o640),
        )
        .unwrap();
    }
    let login_defs = Path::new("/etc/login.defs");
    assert!(
        login_defs.is_file(),
        "/etc/login.defs is missing: useradd needs it (apt-get install login passwd)"
    );
    fs::copy(login_defs, root.join("etc/login.defs")).unwrap();
    fs::write(
        root.join("etc/selinux/config"),
        "SELINUX=disabled\nSELINUXTYPE=targeted\n",
    )
    .unwrap();
    copy_with_libraries(Path::new("/usr/bin/id"), &root);
    for (path, contents) in seed {
        let p = root.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, contents).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
    }
    root
}

/// Copies `program` and the libraries `ldd` lists for it into `root`, at their paths.
fn copy_with_libraries(program: &Path, root: &Path) {
    let (ok, text) = run(Command::new("ldd").arg(program));
    assert!(
        ok,
        "ldd {}: {text} (apt-get install libc-bin)",
        program.display()
    );
    let mut files = vec![program.to_path_buf()];
    for line in text.lines() {
        // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux... (0x...)"
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            files.push(PathBuf::from(p));
        }
    }
    for f in files {
        let dest = root.join(f.strip_prefix("/").unwrap());
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        fs::copy(&f, &dest).unwrap_or_else(|e| panic!("copying {}: {e}", f.display()));
    }
}

/// Checks `cfg` with the validator of its spec: v0.35's for 2.x, Debian's 2.14 for
/// 3.0-3.3, v2.26's for 3.4 and later. Any output counts as a failure (the validators
/// exit 0 on warnings).
pub fn validate(cfg: &Path) -> Result<(), String> {
    let version = config_version(cfg);
    let validator = if version.starts_with("2.") {
        shared_program("ignition-v0.35", "ignition-validate")
    } else if matches!(
        &version[..4.min(version.len())],
        "3.0." | "3.1." | "3.2." | "3.3."
    ) {
        assert!(
            Path::new(DEBIAN_VALIDATE).is_file(),
            "{DEBIAN_VALIDATE} is missing: apt-get install ignition"
        );
        PathBuf::from(DEBIAN_VALIDATE)
    } else {
        shared_program("ignition-v2.26", "ignition-validate")
    };
    let (ok, text) = run(Command::new(&validator).arg(cfg));
    if ok && text.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} (spec {version}) by {}: {text}",
            cfg.display(),
            validator.display()
        ))
    }
}

/// `program` under `timeout`.
fn bounded(program: &Path) -> Command {
    let mut c = Command::new("timeout");
    c.args(["--kill-after=5", STAGE_TIMEOUT]).arg(program);
    c
}

/// Applies `cfg` to `root` with the real Ignition that reads its spec, stage by stage
/// as in an initramfs; `work` (made if missing) holds the stages' files.
pub fn apply(cfg: &Path, root: &Path, work: &Path) {
    fs::create_dir_all(work).unwrap();
    let version = config_version(cfg);
    if version.starts_with("2.") {
        apply_spec2(cfg, root, work);
        return;
    }
    let program = ignition_for_spec3(&version);
    let cache = work.join("spec3-cache.json");
    let state = work.join("spec3-state.json");
    let (ok, text) = run(bounded(&program)
        .env("IGNITION_CONFIG_FILE", cfg)
        .args(["-platform", "file", "-stage", "fetch", "-log-to-stdout"])
        .arg("-config-cache")
        .arg(&cache)
        .arg("-state-file")
        .arg(&state)
        .arg("-neednet")
        .arg(work.join("neednet")));
    assert!(
        ok,
        "{} fetch stage on {}:\n{text}",
        program.display(),
        cfg.display()
    );
    // The relabelling after the files stage runs `setfiles` from PATH.
    let bin = work.join("stand-ins");
    fs::create_dir_all(&bin).unwrap();
    let setfiles = bin.join("setfiles");
    fs::write(&setfiles, "#!/bin/sh\nexec cat >/dev/null\n").unwrap();
    fs::set_permissions(&setfiles, fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/sbin:/usr/bin:/sbin:/bin".into())
    );
    let (ok, text) = run(bounded(&program)
        .env("IGNITION_CONFIG_FILE", cfg)
        .env("PATH", path)
        .args(["-platform", "file", "-stage", "files", "-log-to-stdout"])
        .arg("-root")
        .arg(root)
        .arg("-config-cache")
        .arg(&cache)
        .arg("-state-file")
        .arg(&state));
    assert!(
        ok,
        "{} files stage on {}:\n{text}",
        program.display(),
        cfg.display()
    );
}

/// Files the programs write for themselves, not from the config: the locks and backups
/// of the user databases, 2.x's result file, v0.35's key lock.
fn bookkeeping(rel: &str) -> bool {
    matches!(
        rel,
        "etc/.pwd.lock"
            | "etc/passwd-"
            | "etc/group-"
            | "etc/shadow-"
            | "etc/gshadow-"
            | "etc/.ignition-result.json"
    ) || rel.ends_with("/.authorized_keys.d.lock")
}

/// Files compared as sets of lines: their order is the program's, not the config's.
fn line_set(rel: &str) -> bool {
    matches!(
        rel,
        "etc/passwd"
            | "etc/group"
            | "etc/shadow"
            | "etc/gshadow"
            | "etc/systemd/system-preset/20-ignition.preset"
    )
}

/// What `root` holds, by path under it: one line per node (the user databases and the
/// preset file, whose line order is the program's, with one more entry `PATH | LINE`
/// per line), and one entry
/// `DIR/.ssh/(keys)` per `.ssh` directory for the keys its files authorize (Ignition
/// v0.35 writes `authorized_keys.d/coreos-ignition` and regenerates
/// `authorized_keys`; Ignition 2.x writes `authorized_keys.d/ignition` only: the files
/// differ by design, the set of keys and their owner must not).
pub fn listing(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut inodes: HashMap<(u64, u64), Vec<String>> = HashMap::new();
    let mut keys: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
    walk(root, root, &mut out, &mut inodes, &mut keys);
    for paths in inodes.values().filter(|p| p.len() > 1) {
        let mut sorted = paths.clone();
        sorted.sort();
        for p in &sorted {
            let line = out.get_mut(p).unwrap();
            line.push_str(&format!(" hard-links {sorted:?}"));
        }
    }
    for (dir, (set, owners)) in keys {
        out.insert(
            format!("{dir}/(keys)"),
            format!("keys {set:?} in files {owners:?}"),
        );
    }
    drop_empty_dropins(&mut out);
    out
}

/// Removes empty drop-in files (`etc/systemd/system/UNIT.d/NAME` of 0 bytes), and the
/// drop-in directories left empty: a drop-in with empty contents changes nothing, and
/// the generations differ by design there. Ignition 2.x writes an empty file for a
/// drop-in whose contents are `""`; v0.35 writes nothing for a drop-in without
/// contents, which is what a spec 3 `""` becomes in spec 2.2 (Go's encoder leaves the
/// empty string out: MCO's spec 2.2 bodies carry `10-mco-default-env.conf` drop-ins so).
fn drop_empty_dropins(out: &mut BTreeMap<String, String>) {
    let in_dropin_dir = |p: &str| {
        p.strip_prefix("etc/systemd/system/")
            .and_then(|r| r.split_once('/'))
            .is_some_and(|(d, name)| d.ends_with(".d") && !name.contains('/'))
    };
    out.retain(|p, v| !(in_dropin_dir(p) && v.starts_with("file ") && v.contains(" (0 bytes)")));
    let dirs: Vec<String> = out
        .iter()
        .filter(|(p, v)| {
            v.starts_with("dir ")
                && p.strip_prefix("etc/systemd/system/")
                    .is_some_and(|r| r.ends_with(".d") && !r.contains('/'))
        })
        .map(|(p, _)| p.clone())
        .collect();
    for d in dirs {
        let prefix = format!("{d}/");
        if !out.keys().any(|p| p.starts_with(&prefix)) {
            out.remove(&d);
        }
    }
}

fn walk(
    root: &Path,
    dir: &Path,
    out: &mut BTreeMap<String, String>,
    inodes: &mut HashMap<(u64, u64), Vec<String>>,
    keys: &mut BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if bookkeeping(&rel) {
            continue;
        }
        let meta = fs::symlink_metadata(&path).unwrap();
        let owner = format!("{}:{}", meta.uid(), meta.gid());
        let mode = meta.mode() & 0o7777;
        let ft = meta.file_type();
        if ft.is_symlink() {
            let target = fs::read_link(&path).unwrap();
            out.insert(
                rel,
                format!("symlink -> {} {owner}", target.to_string_lossy()),
            );
        } else if ft.is_dir() {
            out.insert(rel, format!("dir {mode:04o} {owner}"));
            walk(root, &path, out, inodes, keys);
        } else if ft.is_file() {
            let bytes = fs::read(&path).unwrap();
            if let Some(ssh) = ssh_dir(&rel) {
                let (set, owners) = keys.entry(ssh).or_default();
                let text = String::from_utf8_lossy(&bytes);
                set.extend(
                    text.lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty() && !l.starts_with('#'))
                        .map(str::to_string),
                );
                owners.insert(format!("{mode:04o} {owner}"));
                continue;
            }
            let line = if line_set(&rel) {
                let text = String::from_utf8_lossy(&bytes);
                for l in text
                    .lines()
                    .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
                {
                    out.insert(
                        format!("{rel} | {}", normalise_db_line(&rel, l)),
                        "line".into(),
                    );
                }
                format!("file {mode:04o} {owner} (a set of lines)")
            } else {
                format!(
                    "file {mode:04o} {owner} sha256:{} ({} bytes)",
                    &sha256_hex(&bytes)[..16],
                    bytes.len()
                )
            };
            if meta.nlink() > 1 {
                inodes
                    .entry((meta.dev(), meta.ino()))
                    .or_default()
                    .push(rel.clone());
            }
            out.insert(rel, line);
        } else {
            out.insert(rel, format!("special {mode:04o} {owner}"));
        }
    }
}

/// The `.ssh` directory a path is under, if any.
fn ssh_dir(rel: &str) -> Option<String> {
    rel.find("/.ssh/").map(|i| rel[..i + 5].to_string())
}

/// A line of the user databases, the day of the last password change left out of
/// `etc/shadow` (it is the day the test ran).
fn normalise_db_line(rel: &str, line: &str) -> String {
    if rel != "etc/shadow" {
        return line.to_string();
    }
    let mut fields: Vec<&str> = line.split(':').collect();
    if fields.len() > 2 {
        fields[2] = "DAY";
    }
    fields.join(":")
}

/// The differences between two listings, one line each: `PATH: A | B`.
pub fn differences(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let paths: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    paths
        .into_iter()
        .filter(|p| a.get(*p) != b.get(*p))
        .map(|p| {
            let show = |v: Option<&String>| v.map(String::as_str).unwrap_or("(absent)").to_string();
            format!("{p}: {} | {}", show(a.get(p)), show(b.get(p)))
        })
        .collect()
}

/// What a [`Loopback`] answers at a path.
pub enum Body {
    /// The same bytes for every request.
    Fixed(Vec<u8>),
    /// As MCO's Machine Config Server answers `/config/POOL`: the spec 2.2 body when
    /// the Accept header asks for a 2.x version of `vnd.coreos.ignition+json` (or for
    /// none), the spec 3 body when it asks for a 3.x version.
    BySpec { spec2: Vec<u8>, spec3: Vec<u8> },
}

/// A plain-HTTP server on 127.0.0.1, answering the paths it was given (404 elsewhere)
/// and logging each request as `PATH ACCEPT -> STATUS`; stopped when dropped.
pub struct Loopback {
    pub port: u16,
    log: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Loopback {
    pub fn serve(routes: BTreeMap<String, Body>) -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log2, stop2) = (log.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    answer(stream, &routes, &log2);
                }
            }
        });
        Loopback {
            port,
            log,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}/{}",
            self.port,
            path.trim_start_matches('/')
        )
    }

    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn answer(mut stream: TcpStream, routes: &BTreeMap<String, Body>, log: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 65536 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&request);
    let mut lines = text.split("\r\n");
    let path = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("")
        .to_string();
    let accept = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("accept"))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let body = routes.get(&path).map(|b| match b {
        Body::Fixed(bytes) => bytes,
        Body::BySpec { spec2, spec3 } => {
            if asks_for_spec3(&accept) {
                spec3
            } else {
                spec2
            }
        }
    });
    let status = if body.is_some() {
        "200 OK"
    } else {
        "404 Not Found"
    };
    log.lock()
        .unwrap()
        .push(format!("{path} {accept} -> {status}"));
    let body: &[u8] = body.map(Vec::as_slice).unwrap_or(b"");
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(body);
}

/// Whether an Accept header's first Ignition entry with a version, by quality, asks
/// for spec 3 (MCO's `detectSpecVersionFromAcceptHeader`, for the headers the
/// programs here send).
fn asks_for_spec3(accept: &str) -> bool {
    let mut entries: Vec<(f64, Option<String>)> = accept
        .split(',')
        .filter(|e| e.contains("vnd.coreos.ignition+json"))
        .map(|e| {
            let mut q = 1.0;
            let mut version = None;
            for p in e.split(';').skip(1) {
                if let Some((k, v)) = p.trim().split_once('=') {
                    match k {
                        "q" => q = v.parse().unwrap_or(1.0),
                        "version" => version = Some(v.to_string()),
                        _ => {}
                    }
                }
            }
            (q, version)
        })
        .collect();
    entries.sort_by(|a, b| b.0.total_cmp(&a.0));
    entries
        .into_iter()
        .find_map(|(_, v)| v)
        .is_some_and(|v| v.starts_with("3."))
}
