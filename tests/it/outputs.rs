//! Where results go, on the built binary: character devices and FIFOs are written into
//! and never replaced, other non-regular outputs and outputs inside the input image are
//! refused, and a failed write to stdout is an error (exit 1) or, for a reader that went
//! away, a quiet end, never a panic. Every run gets its own TMPDIR, which must be empty
//! afterwards.

use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;

use crate::harness::{copy_tree, crate_root, Bin};

/// The small image committed in the repository.
fn small() -> String {
    format!(
        "oci:{}:latest",
        crate_root().join("fixtures/mco-small").display()
    )
}

const MCD: &str = "/usr/bin/machine-config-daemon";

struct Done {
    code: Option<i32>,
    stderr: String,
}

/// A sandbox with its own TMPDIR (checked empty at the end of each run).
struct Sandbox {
    dir: TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("tmp")).unwrap();
        Sandbox { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Runs the binary with `stdout`, waits (killing it if it hangs), and checks that it
    /// did not panic and left nothing in TMPDIR.
    fn run(&self, args: &[&str], stdout: Stdio) -> Done {
        let run = Bin::new(args)
            .env("TMPDIR", self.path("tmp"))
            .env("XDG_CACHE_HOME", self.path("cache"))
            .stdout(stdout)
            .run();
        assert!(!run.timed_out, "mcd-inject {args:?} hung");
        let (status, stderr) = (run.status, run.stderr);
        assert!(
            !stderr.contains("panicked") && status.code() != Some(101),
            "mcd-inject {args:?} panicked: {stderr}"
        );
        let left: Vec<_> = fs::read_dir(self.path("tmp")).unwrap().flatten().collect();
        assert!(left.is_empty(), "{args:?} left {left:?} in TMPDIR");
        Done {
            code: status.code(),
            stderr,
        }
    }

    fn ok(&self, args: &[&str]) -> Done {
        let d = self.run(args, Stdio::null());
        assert_eq!(d.code, Some(0), "{args:?}: {}", d.stderr);
        d
    }

    fn fails(&self, args: &[&str], stdout: Stdio) -> String {
        let d = self.run(args, stdout);
        assert_eq!(d.code, Some(1), "{args:?} should fail with 1: {}", d.stderr);
        assert!(d.stderr.contains("error: "), "{args:?}: {}", d.stderr);
        d.stderr
    }
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn inject_args(out: &str) -> Vec<String> {
    [
        "inject",
        "--image",
        &small(),
        "--bootimage",
        "4.2",
        "--ign",
        out,
    ]
    .map(String::from)
    .to_vec()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Every command that writes to stdout, with stdout as its output.
fn stdout_commands(sb: &Sandbox) -> Vec<Vec<String>> {
    let img = small();
    let ign = sb.path("ok.ign");
    if !ign.exists() {
        sb.ok(&strs(&inject_args(&s(&ign))));
    }
    let mut v: Vec<Vec<String>> = vec![
        vec!["inspect".into(), "--image".into(), img.clone()],
        vec![
            "inspect".into(),
            "--json".into(),
            "--image".into(),
            img.clone(),
        ],
        vec![
            "extract".into(),
            "--image".into(),
            img.clone(),
            "--path".into(),
            MCD.into(),
            "-o".into(),
            "-".into(),
        ],
        vec!["verify".into(), s(&ign)],
        vec!["--help".into()],
    ];
    v.push(inject_args("-"));
    v
}

#[test]
fn a_full_stdout_is_an_error_for_every_command() {
    let sb = Sandbox::new();
    for args in stdout_commands(&sb) {
        if args[0] == "--help" {
            continue; // clap prints help itself
        }
        let full = fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let err = sb.fails(&strs(&args), Stdio::from(full));
        assert!(err.contains("writing to stdout"), "{args:?}: {err}");
    }
}

#[test]
fn a_closed_stdout_ends_quietly_for_every_command() {
    let sb = Sandbox::new();
    for args in stdout_commands(&sb) {
        // A socket whose other end is closed: every write fails with EPIPE.
        let (ours, theirs) = UnixStream::pair().unwrap();
        drop(ours);
        let d = sb.run(
            &strs(&args),
            Stdio::from(std::os::fd::OwnedFd::from(theirs)),
        );
        assert_eq!(d.code, Some(0), "{args:?}: {}", d.stderr);
        assert!(!d.stderr.contains("error"), "{args:?}: {}", d.stderr);
    }
}

#[test]
fn character_devices_are_written_into_not_replaced() {
    let sb = Sandbox::new();
    let devnull = Path::new("/dev/null");
    let before = fs::metadata(devnull).unwrap();
    sb.ok(&strs(&inject_args("/dev/null")));
    sb.ok(&[
        "extract",
        "--image",
        &small(),
        "--path",
        MCD,
        "-o",
        "/dev/null",
    ]);
    let mut remote = inject_args(&s(&sb.path("remote.ign")));
    remote.extend(
        [
            "--payload-url",
            "http://example.invalid/p",
            "--payload-out",
            "/dev/null",
        ]
        .map(String::from),
    );
    sb.ok(&strs(&remote));
    let after = fs::metadata(devnull).unwrap();
    assert!(after.file_type().is_char_device());
    assert_eq!(
        std::os::unix::fs::MetadataExt::rdev(&before),
        std::os::unix::fs::MetadataExt::rdev(&after)
    );
    let dir: Vec<_> = fs::read_dir(sb.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        dir.iter().all(|n| !n.starts_with(".mcd-inject-")),
        "temp entries left: {dir:?}"
    );
}

#[test]
fn a_fifo_receives_the_same_bytes_as_a_file() {
    let sb = Sandbox::new();
    let file = sb.path("file.ign");
    sb.ok(&strs(&inject_args(&s(&file))));
    let fifo = sb.path("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read(fifo).unwrap())
    };
    sb.ok(&strs(&inject_args(&s(&fifo))));
    assert_eq!(reader.join().unwrap(), fs::read(&file).unwrap());
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn sockets_and_dangling_links_are_refused_and_left_alone() {
    let sb = Sandbox::new();
    let sock = sb.path("sock");
    let _listener = UnixListener::bind(&sock).unwrap();
    let err = sb.fails(&strs(&inject_args(&s(&sock))), Stdio::null());
    assert!(err.contains("is a socket"), "{err}");
    assert!(fs::metadata(&sock).unwrap().file_type().is_socket());

    let link = sb.path("link");
    std::os::unix::fs::symlink(sb.path("nowhere/x"), &link).unwrap();
    let err = sb.fails(&strs(&inject_args(&s(&link))), Stdio::null());
    assert!(err.contains("symbolic link to nothing"), "{err}");
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());

    let err = sb.fails(&strs(&inject_args(&s(sb.dir.path()))), Stdio::null());
    assert!(err.contains("is a directory"), "{err}");
}

#[test]
fn a_link_to_a_file_is_followed_and_stays_a_link() {
    let sb = Sandbox::new();
    let real = sb.path("real.ign");
    fs::write(&real, b"old").unwrap();
    let link = sb.path("link.ign");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    sb.ok(&strs(&inject_args(&s(&link))));
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::read(&real).unwrap().starts_with(b"{"));
}

#[test]
fn an_output_inside_the_input_image_is_refused() {
    let sb = Sandbox::new();
    let layout = sb.path("layout");
    copy_tree(&crate_root().join("fixtures/mco-small"), &layout);
    let image = format!("oci:{}:latest", layout.display());
    let index = layout.join("index.json");
    let before = fs::read(&index).unwrap();
    let blob = fs::read_dir(layout.join("blobs/sha256"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let blob_before = fs::read(&blob).unwrap();
    // Named directly, through `..`, and through a symlink to the layout.
    std::os::unix::fs::symlink(&layout, sb.path("alias")).unwrap();
    for out in [
        s(&index),
        format!("{}/../layout/index.json", layout.display()),
        s(&sb.path("alias/index.json")),
        s(&blob),
        s(&layout.join("new-file")),
    ] {
        let err = sb.fails(
            &["extract", "--image", &image, "--path", MCD, "-o", &out],
            Stdio::null(),
        );
        assert!(err.contains("part of the input image"), "{out}: {err}");
        let mut args = vec![
            "inject",
            "--image",
            &image,
            "--bootimage",
            "4.2",
            "--ign",
            &out,
        ];
        let err = sb.fails(&args, Stdio::null());
        assert!(err.contains("--ign"), "{out}: {err}");
        let remote_ign = s(&sb.path("r.ign"));
        args[6] = &remote_ign;
        args.extend([
            "--payload-url",
            "http://example.invalid/p",
            "--payload-out",
            &out,
        ]);
        let err = sb.fails(&args, Stdio::null());
        assert!(err.contains("--payload-out"), "{out}: {err}");
    }
    assert_eq!(fs::read(&index).unwrap(), before);
    assert_eq!(fs::read(&blob).unwrap(), blob_before);
    assert!(!layout.join("new-file").exists());

    // An archive read in place cannot be its own output either.
    let archive = sb.path("img.tar");
    let tarred = Command::new("tar")
        .arg("-cf")
        .arg(&archive)
        .arg("-C")
        .arg(&layout)
        .arg(".")
        .status()
        .unwrap();
    assert!(tarred.success());
    let archive_before = fs::read(&archive).unwrap();
    let image = format!("oci-archive:{}:latest", archive.display());
    let err = sb.fails(
        &[
            "extract",
            "--image",
            &image,
            "--path",
            MCD,
            "-o",
            &s(&archive),
        ],
        Stdio::null(),
    );
    assert!(err.contains("part of the input image"), "{err}");
    assert_eq!(fs::read(&archive).unwrap(), archive_before);
}
