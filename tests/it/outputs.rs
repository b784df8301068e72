//! Where results go, on the built binary: character devices and FIFOs are written into
//! and never replaced, other non-regular outputs (a directory), an empty path and
//! outputs inside the input image are refused, and a failed write to stdout is an error
//! (exit 1) or, for a reader of a report or listing that went away, a quiet end; the
//! config or extracted file itself cut short by its reader going away is an error.
//! Never a panic. Every run gets its own TMPDIR, which must be empty afterwards.

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
        // One build (the fixture's RHEL 8 one, for a RHEL 8 cluster): a config under
        // 16 KB, which warns of nothing.
        "--cluster-rhel",
        "8",
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

/// The output itself (the config of `inject --ign -`, the file of `extract -o -`), as
/// opposed to a report or a listing.
fn writes_the_product(args: &[String]) -> bool {
    matches!(args[0].as_str(), "inject" | "extract")
}

#[test]
fn a_closed_stdout_fails_the_product_and_ends_the_rest_quietly() {
    let sb = Sandbox::new();
    for args in stdout_commands(&sb) {
        // A pipe whose reader is gone, and a socket whose other end is closed: every
        // write fails with EPIPE.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let (ours, theirs) = UnixStream::pair().unwrap();
        drop(ours);
        for stdout in [
            Stdio::from(writer),
            Stdio::from(std::os::fd::OwnedFd::from(theirs)),
        ] {
            let d = sb.run(&strs(&args), stdout);
            if writes_the_product(&args) {
                assert_eq!(d.code, Some(1), "{args:?}: {}", d.stderr);
                assert_eq!(
                    d.stderr,
                    "error: writing to stdout: its reader went away before the whole output \
                     was written\n",
                    "{args:?}"
                );
            } else {
                assert_eq!(d.code, Some(0), "{args:?}: {}", d.stderr);
                assert!(!d.stderr.contains("error"), "{args:?}: {}", d.stderr);
            }
        }
    }
}

/// The same through a shell pipeline whose reader has exited before the output comes
/// (`set -o pipefail`: the pipeline fails with the writer).
#[test]
fn a_shell_pipeline_whose_reader_left_fails_inject_and_extract() {
    let sb = Sandbox::new();
    let img = small();
    for (args, product) in [
        (inject_args("-"), true),
        (
            ["extract", "--image", &img, "--path", MCD, "-o", "-"]
                .map(String::from)
                .to_vec(),
            true,
        ),
        (
            ["inspect", "--image", &img].map(String::from).to_vec(),
            false,
        ),
    ] {
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        // The reader exits at once; the writer starts once it is gone.
        let script = format!(
            "set -o pipefail; {{ sleep 1; '{}' {}; }} | true",
            crate::harness::BIN,
            quoted.join(" ")
        );
        let out = Command::new("bash")
            .args(["-c", &script])
            .env("TMPDIR", sb.path("tmp"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if product {
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(err.contains("its reader went away"), "{args:?}: {err}");
        } else {
            assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
            assert!(err.is_empty(), "{args:?}: {err}");
        }
    }
}

#[test]
fn an_empty_path_or_a_directory_is_refused_as_an_output() {
    let sb = Sandbox::new();
    let img = small();
    let dir = s(sb.dir.path());
    let ign = s(&sb.path("x.ign"));
    let extract = |out: &str| -> Vec<String> {
        ["extract", "--image", &img, "--path", MCD, "-o", out]
            .map(String::from)
            .to_vec()
    };
    let remote = |out: &str| -> Vec<String> {
        let mut a = inject_args(&ign);
        a.extend(
            [
                "--payload-url",
                "http://example.invalid/p",
                "--payload-out",
                out,
            ]
            .map(String::from),
        );
        a
    };
    let json_out = |out: &str| -> Vec<String> {
        let mut a = inject_args(&ign);
        a.extend(["--json-out", out].map(String::from));
        a
    };
    // (the flag, its long name, a command line with it)
    type Args<'a> = Box<dyn Fn(&str) -> Vec<String> + 'a>;
    let cases: Vec<(&str, &str, Args)> = vec![
        ("--ign", "--ign", Box::new(|o: &str| inject_args(o))),
        ("-o", "--output", Box::new(extract)),
        ("--payload-out", "--payload-out", Box::new(remote)),
        ("--json-out", "--json-out", Box::new(json_out)),
    ];
    for (flag, long, args) in &cases {
        // Empty: the command line names no file (exit 2), said once, plainly.
        let d = sb.run(&strs(&args("")), Stdio::null());
        assert_eq!(d.code, Some(2), "{flag} '': {}", d.stderr);
        assert!(
            d.stderr.contains(&format!("for '{long}"))
                && d.stderr.contains("an empty path names no file"),
            "{flag} '': {}",
            d.stderr
        );
        assert!(!d.stderr.contains("persist"), "{}", d.stderr);
        // A directory: named, with the flag, before any work (exit 1).
        let err = sb.fails(&strs(&args(&dir)), Stdio::null());
        assert_eq!(
            err,
            format!("error: {flag}: output {dir} is a directory\n"),
            "{flag} DIR"
        );
    }
    assert!(!sb.path("x.ign").exists());
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
