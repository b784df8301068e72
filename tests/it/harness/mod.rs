//! The harness of the integration tests: the generated fixtures (see
//! `fixtures/README.md`), the external tools they are checked against, running the built
//! `mcd-inject` binary ([`Bin`]), waiting on a condition ([`poll`]), the node side
//! ([`node`]) and the registries ([`registry`]).
//!
//! Fixtures come from `MCD_INJECT_FIXTURES` or `target/fixtures` under the crate root.
//! A missing or stale directory is regenerated once with `python3 fixtures/generate.py`,
//! into a private temporary directory that is then renamed into place, so test runs in
//! parallel never see a half-written tree.

pub mod gpg;
pub mod node;
pub mod registry;
pub mod tree;
pub mod vm;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;
use sha2::{Digest as _, Sha256};

/// Tools the generator and the comparison tests need; missing ones fail the tests.
pub const REQUIRED_TOOLS: &[&str] = &["python3", "gcc", "zstd", "skopeo", "umoci", "git"];

/// Name of the file in a fixtures directory that records which generator wrote it.
const STAMP_FILE: &str = ".generator-stamp";

pub fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Panics, naming every missing tool, unless all of `tools` can be run.
pub fn require_tools(tools: &[&str]) {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|tool| {
            Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_err()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "these tests need {} installed (missing: {}); scripts/test.sh installs what the \
         tests use on Debian",
        tools.join(", "),
        missing.join(", ")
    );
}

/// The generated fixtures directory (absolute), generating it on first use.
pub fn fixtures_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        require_tools(REQUIRED_TOOLS);
        match std::env::var_os("MCD_INJECT_FIXTURES").filter(|d| !d.is_empty()) {
            Some(dir) if Path::new(&dir).join("fixtures.json").is_file() => {
                fs::canonicalize(&dir).expect("canonicalize MCD_INJECT_FIXTURES")
            }
            Some(dir) => generate_into(&absolute(Path::new(&dir))),
            None => generate_into(&crate_root().join("target").join("fixtures")),
        }
    })
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().unwrap().join(path)
    }
}

/// A digest of the generator and its C sources: fixtures made by another version are
/// regenerated.
fn generator_stamp() -> String {
    let fixtures = crate_root().join("fixtures");
    let mut inputs = vec![fixtures.join("generate.py")];
    let mut sources: Vec<PathBuf> = fs::read_dir(fixtures.join("src"))
        .expect("read fixtures/src")
        .map(|entry| entry.unwrap().path())
        .collect();
    sources.sort();
    inputs.extend(sources);
    let mut hasher = Sha256::new();
    for input in inputs {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        hasher.update(name.as_bytes());
        hasher.update(fs::read(&input).unwrap_or_else(|e| panic!("read {input:?}: {e}")));
    }
    hex::encode(hasher.finalize())
}

fn is_current(dir: &Path, stamp: &str) -> bool {
    fs::read_to_string(dir.join(STAMP_FILE)).is_ok_and(|s| s.trim() == stamp)
}

fn generate_into(dir: &Path) -> PathBuf {
    let stamp = generator_stamp();
    if is_current(dir, &stamp) {
        return dir.to_owned();
    }
    // Only a directory this generator wrote (it has a stamp), or an empty one, is ever
    // replaced: a mistyped MCD_INJECT_FIXTURES must not cost anyone their files.
    assert!(
        !dir.exists()
            || dir.join(STAMP_FILE).is_file()
            || fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none()),
        "{} exists and is not a generated fixtures directory; refusing to replace it",
        dir.display()
    );
    let parent = dir.parent().expect("fixtures dir has a parent");
    fs::create_dir_all(parent).unwrap();
    let unique = format!(
        "{}.{}-{}",
        dir.file_name().unwrap().to_string_lossy(),
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let staging = parent.join(format!("{unique}.new"));
    let output = Command::new("python3")
        .arg(crate_root().join("fixtures").join("generate.py"))
        .arg(&staging)
        .output()
        .expect("run python3 fixtures/generate.py");
    assert!(
        output.status.success(),
        "python3 fixtures/generate.py {} failed ({}):\n{}{}",
        staging.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    fs::write(staging.join(STAMP_FILE), &stamp).unwrap();
    if dir.exists() && !is_current(dir, &stamp) {
        // Stale: move it aside first; another test run may be doing the same.
        let old = parent.join(format!("{unique}.old"));
        if fs::rename(dir, &old).is_ok() {
            let _ = fs::remove_dir_all(&old);
        }
    }
    if fs::rename(&staging, dir).is_err() {
        // Another test run put its (identical) copy in place first.
        let _ = fs::remove_dir_all(&staging);
        assert!(
            is_current(dir, &stamp),
            "could not put fixtures in place at {}",
            dir.display()
        );
    }
    dir.to_owned()
}

// ------------------------------------------------------------------------ fixtures.json

#[derive(Debug, Deserialize)]
pub struct FixtureList {
    pub ref_name: String,
    pub fixtures: Vec<Fixture>,
}

#[derive(Debug, Deserialize)]
pub struct Fixture {
    pub name: String,
    /// What the image is for (read by people, and shown in `{:?}` of a fixture).
    #[allow(dead_code)]
    pub description: String,
    pub compression: Vec<String>,
    pub platforms: Vec<String>,
    /// Transport name (`oci`, `oci-archive`, `docker-archive`) -> path relative to the
    /// fixtures directory.
    pub transports: BTreeMap<String, String>,
    pub docker_archive_name: String,
    /// Whether umoci can unpack this image (it cannot read zstd layers).
    pub umoci: bool,
    pub present: Vec<PresentPath>,
    pub absent: Vec<NotedPath>,
    pub refused: Vec<NotedPath>,
    pub wrong_platforms: Vec<String>,
    /// Why umoci cannot unpack it, for people.
    #[serde(default)]
    #[allow(dead_code)]
    pub umoci_note: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct PresentPath {
    pub path: String,
    pub sha256: String,
    pub size: u64,
    pub mode: u32,
    #[serde(default)]
    pub platform: Option<String>,
    /// Restricts the transports this path is checked on (a platform missing from one).
    #[serde(default)]
    pub transports: Option<Vec<String>>,
    /// Why the path is there, for people.
    #[serde(default)]
    #[allow(dead_code)]
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct NotedPath {
    pub path: String,
    #[serde(default)]
    pub note: Option<String>,
    /// What the error message must name (the layer, the entry, the limit).
    #[serde(default)]
    pub needles: Vec<String>,
}

pub fn fixture_list() -> &'static FixtureList {
    static LIST: OnceLock<FixtureList> = OnceLock::new();
    LIST.get_or_init(|| {
        let path = fixtures_dir().join("fixtures.json");
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {path:?}: {e}"))
    })
}

pub fn fixture(name: &str) -> &'static Fixture {
    fixture_list()
        .fixtures
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no fixture named {name} in fixtures.json"))
}

impl Fixture {
    /// Absolute path of the layout or archive of `transport`.
    pub fn location(&self, transport: &str) -> PathBuf {
        let relative = self
            .transports
            .get(transport)
            .unwrap_or_else(|| panic!("fixture {} has no {transport} transport", self.name));
        fixtures_dir().join(relative)
    }

    /// The image reference mcd-inject is given for `transport`.
    pub fn reference(&self, transport: &str) -> String {
        image_reference(
            transport,
            &self.location(transport),
            &fixture_list().ref_name,
        )
    }

    pub fn layout(&self) -> PathBuf {
        self.location("oci")
    }
}

/// `oci:DIR:TAG`, `oci-archive:FILE:TAG` or `docker-archive:FILE`.
pub fn image_reference(transport: &str, location: &Path, tag: &str) -> String {
    let location = location.display();
    match transport {
        "oci" | "oci-archive" => format!("{transport}:{location}:{tag}"),
        "docker-archive" => format!("docker-archive:{location}"),
        other => panic!("unknown transport {other}"),
    }
}

impl PresentPath {
    pub fn applies_to(&self, transport: &str) -> bool {
        self.transports
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == transport))
    }
}

// ------------------------------------------------------------------------ running

/// The built binary. Tests run it through [`Bin`]; this is for a shell command line.
pub const BIN: &str = env!("CARGO_BIN_EXE_mcd-inject");

/// How long a [`Bin`] run may take by default before the test calls it hung.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// Polls `check` until it gives a value, for at most `limit`: the one way the tests wait.
pub fn poll<T>(limit: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if started.elapsed() > limit {
            return None;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until `condition` holds, failing the test after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    assert!(
        poll(limit, || condition().then_some(())).is_some(),
        "timed out after {limit:?} waiting for {what}"
    );
}

/// Waits for `child` to exit, for at most `limit`; kills it and returns `None` after.
pub fn wait_child(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let status = poll(limit, || child.try_wait().expect("wait for a child"));
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    status
}

/// One run of the built `mcd-inject`, being set up: the only way the tests run it.
/// Stdin is empty unless given, stdout and stderr are captured, and a run that takes
/// longer than its timeout (60 s unless set) is killed.
pub struct Bin {
    cmd: Command,
    args: Vec<String>,
    stdin: Option<Vec<u8>>,
    stdout: Option<Stdio>,
    timeout: Duration,
}

impl Bin {
    pub fn new<I, S>(args: I) -> Bin
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let mut cmd = Command::new(BIN);
        cmd.args(&args);
        Bin {
            cmd,
            args: args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            stdin: None,
            stdout: None,
            timeout: RUN_TIMEOUT,
        }
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Bin {
        self.cmd.env(key, value);
        self
    }

    pub fn envs<I, K, V>(mut self, vars: I) -> Bin
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.cmd.envs(vars);
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Bin {
        self.cmd.env_remove(key);
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Bin {
        self.cmd.current_dir(dir);
        self
    }

    /// What the run reads on stdin.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Bin {
        self.stdin = Some(bytes.into());
        self
    }

    /// Where stdout goes instead of being captured.
    pub fn stdout(mut self, stdout: Stdio) -> Bin {
        self.stdout = Some(stdout);
        self
    }

    pub fn timeout(mut self, limit: Duration) -> Bin {
        self.timeout = limit;
        self
    }

    /// Runs it to the end (or its timeout), capturing what it wrote.
    pub fn run(mut self) -> Run {
        let captured = self.stdout.is_none();
        self.cmd
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(self.stdout.take().unwrap_or_else(Stdio::piped))
            .stderr(Stdio::piped());
        let mut child = self.cmd.spawn().expect("spawn mcd-inject");
        let writer = self.stdin.take().map(|data| {
            let mut input = child.stdin.take().unwrap();
            thread::spawn(move || {
                // The binary may exit without reading it all.
                let _ = std::io::Write::write_all(&mut input, &data);
            })
        });
        let reader = |pipe: Option<Box<dyn Read + Send>>| {
            thread::spawn(move || {
                let mut buf = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut buf);
                }
                buf
            })
        };
        let stdout_reader = reader(
            captured.then(|| Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>),
        );
        let stderr_reader = reader(Some(Box::new(child.stderr.take().unwrap())));
        let status = poll(self.timeout, || {
            child.try_wait().expect("wait for mcd-inject")
        });
        let timed_out = status.is_none();
        let status = status.unwrap_or_else(|| {
            let _ = child.kill();
            child.wait().expect("wait for the killed mcd-inject")
        });
        if let Some(writer) = writer {
            writer.join().unwrap();
        }
        Run {
            args: self.args,
            code: if timed_out { None } else { status.code() },
            status,
            stdout: stdout_reader.join().unwrap(),
            stderr: String::from_utf8_lossy(&stderr_reader.join().unwrap()).into_owned(),
            timed_out,
            timeout: self.timeout,
        }
    }

    /// Starts it in the background: stdin empty, stdout discarded, stderr piped.
    pub fn spawn(mut self) -> Child {
        self.cmd
            .stdin(Stdio::null())
            .stdout(self.stdout.take().unwrap_or_else(Stdio::null))
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcd-inject")
    }
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub args: Vec<String>,
    /// Exit code; `None` when killed by a signal or by the timeout.
    pub code: Option<i32>,
    pub status: ExitStatus,
    /// Empty when stdout was not captured.
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub timed_out: bool,
    timeout: Duration,
}

impl Run {
    /// A one-paragraph account of the run for failure messages.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "`mcd-inject {}` -> {}",
            self.args.join(" "),
            match (self.code, self.timed_out) {
                (_, true) => format!("killed after {:?}", self.timeout),
                (Some(code), _) => format!("exit {code}"),
                (None, _) => "killed by a signal".to_owned(),
            }
        );
        let stderr = self.stderr.trim_end();
        if !stderr.is_empty() {
            let _ = write!(out, "; stderr: {}", truncate(stderr, 600));
        }
        // What `verify` found, for one: its lines go to stdout.
        if let Ok(stdout) = std::str::from_utf8(&self.stdout) {
            if !stdout.trim_end().is_empty() {
                let _ = write!(out, "; stdout: {}", truncate(stdout.trim_end(), 600));
            }
        }
        out
    }

    /// As `std::process::Output`, failing the test if the run hung.
    pub fn into_output(self) -> Output {
        assert!(!self.timed_out, "{}", self.describe());
        Output {
            status: self.status,
            stdout: self.stdout,
            stderr: self.stderr.into_bytes(),
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &text[..end], text.len())
}

/// Runs the built `mcd-inject` with `args`, capturing everything, killing it if it hangs.
pub fn mcd_inject<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Bin::new(args).run()
}

/// Runs `cmd`, panicking with its output if it fails.
pub fn run_ok(cmd: &mut Command) -> Output {
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        output.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Runs an external tool, panicking with its output if it fails.
pub fn run_tool(program: &str, args: &[&OsStr]) -> Output {
    run_ok(Command::new(program).args(args))
}

// ------------------------------------------------------------------------ comparing

/// The digest of the `arch` instance of a manifest list or OCI index.
pub fn instance_digest(list: &[u8], arch: &str) -> String {
    let list: serde_json::Value = serde_json::from_slice(list).unwrap();
    list["manifests"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .find(|m| m["platform"]["architecture"] == arch)
        .unwrap_or_else(|| panic!("no {arch} instance in {list}"))["digest"]
        .as_str()
        .unwrap()
        .to_string()
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// A short account of how `actual` differs from `expected`, or `None` if equal.
pub fn byte_difference(expected: &[u8], actual: &[u8]) -> Option<String> {
    if expected == actual {
        return None;
    }
    let first = expected
        .iter()
        .zip(actual)
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(actual.len()));
    let window = |data: &[u8]| {
        let end = (first + 16).min(data.len());
        hex::encode(&data[first.min(data.len())..end])
    };
    Some(format!(
        "expected {} bytes (sha256 {}), got {} bytes (sha256 {}); first difference at \
         offset {first}: expected {} got {}",
        expected.len(),
        &sha256_hex(expected)[..16],
        actual.len(),
        &sha256_hex(actual)[..16],
        window(expected),
        window(actual),
    ))
}

/// Resolves absolute `path` inside the directory `root` as if `root` were `/`:
/// symlinks are followed within `root` (absolute targets restart at `root`, `..` never
/// climbs above it), at most 40 of them. Returns the host path of the final non-symlink,
/// or why there is none.
pub fn resolve_in_root(root: &Path, path: &str) -> Result<PathBuf, String> {
    const MAX_SYMLINKS: usize = 40;
    let mut pending: Vec<String> = components(path).into_iter().rev().collect();
    let mut resolved: Vec<String> = Vec::new();
    let mut followed = 0;
    while let Some(component) = pending.pop() {
        match component.as_str() {
            "." => continue,
            ".." => {
                resolved.pop();
                continue;
            }
            _ => {}
        }
        let host = resolved
            .iter()
            .fold(root.to_owned(), |p, c| p.join(c))
            .join(&component);
        let meta = fs::symlink_metadata(&host).map_err(|e| format!("{}: {e}", host.display()))?;
        if meta.file_type().is_symlink() {
            followed += 1;
            if followed > MAX_SYMLINKS {
                return Err(format!("more than {MAX_SYMLINKS} symlinks (loop?)"));
            }
            let target = fs::read_link(&host).unwrap();
            let target = target.to_string_lossy();
            if target.starts_with('/') {
                resolved.clear();
            }
            pending.extend(components(&target).into_iter().rev());
            continue;
        }
        if !pending.is_empty() && !meta.is_dir() {
            return Err(format!("{} is not a directory", host.display()));
        }
        resolved.push(component);
    }
    Ok(resolved.iter().fold(root.to_owned(), |p, c| p.join(c)))
}

fn components(path: &str) -> Vec<String> {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".to_owned()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// Names of the entries of `dir`, sorted.
pub fn dir_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Copies the directory tree `from` to `to` (regular files and directories only).
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs `mcd-inject inject --image REFERENCE --bootimage BOOTIMAGE --ign OUT EXTRA...`.
pub fn inject(reference: &str, bootimage: &str, out: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "inject".to_string(),
        "--image".into(),
        reference.into(),
        "--bootimage".into(),
        bootimage.into(),
        "--ign".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    mcd_inject(args)
}

/// A file of the config `inject` writes for the committed `fixtures/mco-small` on a 4.2
/// bootimage, as the node gets it (its bytes and mode): the node scripts, say. `inject`
/// runs once per test binary.
pub fn small_config_file(path: &str) -> (Vec<u8>, u64) {
    static CONFIG: OnceLock<serde_json::Value> = OnceLock::new();
    let cfg = CONFIG.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let ign = dir.path().join("config.ign");
        let image = format!(
            "oci:{}:latest",
            crate_root().join("fixtures/mco-small").display()
        );
        let run = inject(&image, "4.2", &ign, &["-q"]);
        assert_eq!(run.code, Some(0), "{}", run.describe());
        serde_json::from_slice(&fs::read(&ign).unwrap()).unwrap()
    });
    let file = cfg["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("the config has no {path}"));
    let source = file["contents"]["source"].as_str().unwrap();
    let bytes = mcd_inject::ignition::decode_data_url(source).unwrap();
    (bytes, file["mode"].as_u64().unwrap())
}

// ------------------------------------------------------------------ hand-made layouts

/// A gzip tar layer of regular files `(name, bytes, mode)`, in that order, mtime 0, each
/// after its parent directories' entries; `DIR/.wh.NAME` is a whiteout.
pub fn gzip_layer(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    gzip(&tar_with_parents(files))
}

/// A tar of regular files `(name, bytes, mode)`, in that order, mtime 0, each after the
/// entries of its parent directories, as image builders write them: a layer that names
/// its parents settles the paths under them by itself.
pub fn tar_with_parents(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut dirs = std::collections::BTreeSet::new();
    for (name, data, mode) in files {
        let mut parent = String::new();
        for part in name.split('/').collect::<Vec<_>>().split_last().unwrap().1 {
            parent = format!("{parent}{part}/");
            if dirs.insert(parent.clone()) {
                let mut h = tar::Header::new_gnu();
                h.set_size(0);
                h.set_mode(0o755);
                h.set_mtime(0);
                h.set_entry_type(tar::EntryType::Directory);
                b.append_data(&mut h, &parent, std::io::empty()).unwrap();
            }
        }
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, name, *data).unwrap();
    }
    b.into_inner().unwrap()
}

/// Gzip, fast.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, bytes).unwrap();
    gz.finish().unwrap()
}

/// Writes an OCI image layout of these gzip layers (bottom first) in `dir`, its one
/// manifest tagged `latest` (amd64); returns its reference.
pub fn write_layout(dir: &Path, layers: &[Vec<u8>]) -> String {
    write_labelled_layout(dir, layers, &[])
}

/// [`write_layout`], with labels in the image config (`config.Labels`).
pub fn write_labelled_layout(dir: &Path, layers: &[Vec<u8>], labels: &[(&str, &str)]) -> String {
    let blobs = dir.join("blobs/sha256");
    fs::create_dir_all(&blobs).unwrap();
    let put = |b: &[u8]| {
        let d = sha256_hex(b);
        fs::write(blobs.join(&d), b).unwrap();
        serde_json::json!({"digest": format!("sha256:{d}"), "size": b.len()})
    };
    let diff_ids: Vec<String> = layers
        .iter()
        .map(|l| {
            let mut tar = Vec::new();
            flate2::read::GzDecoder::new(&l[..])
                .read_to_end(&mut tar)
                .unwrap();
            format!("sha256:{}", sha256_hex(&tar))
        })
        .collect();
    let labels: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "config": {"Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }))
    .unwrap();
    let with_type = |mut d: serde_json::Value, t: &str| {
        d["mediaType"] = t.into();
        d
    };
    let layer_descs: Vec<_> = layers
        .iter()
        .map(|l| with_type(put(l), "application/vnd.oci.image.layer.v1.tar+gzip"))
        .collect();
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": with_type(put(&config), "application/vnd.oci.image.config.v1+json"),
        "layers": layer_descs,
    }))
    .unwrap();
    let mut entry = with_type(put(&manifest), "application/vnd.oci.image.manifest.v1+json");
    entry["annotations"] = serde_json::json!({"org.opencontainers.image.ref.name": "latest"});
    let index = serde_json::json!({"schemaVersion": 2, "manifests": [entry]});
    fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
    fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    format!("oci:{}:latest", dir.display())
}

/// A unified diff from `expected` (the committed file `name`) to `actual`, for test
/// failures; lines longer than 200 characters (base64 payloads) are cut short.
pub fn unified_diff(name: &str, expected: &[u8], actual: &[u8]) -> String {
    const MAX_LINE: usize = 200;
    let (old, new) = (
        String::from_utf8_lossy(expected),
        String::from_utf8_lossy(actual),
    );
    let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("{name} (committed)"), &format!("{name} (now)"))
        .to_string();
    diff.lines()
        .map(|l| match l.char_indices().nth(MAX_LINE) {
            Some((cut, _)) => format!("{}... ({} more bytes)\n", &l[..cut], l.len() - cut),
            None => format!("{l}\n"),
        })
        .collect()
}
