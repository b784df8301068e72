//! The command line around the jobs, on the built binary: shell completions and man
//! pages, MCD_INJECT_* environment variables (the flag wins), logging, and `--json` of
//! `extract`. Images: the small layout committed in `fixtures/`.

use std::path::Path;
use std::process::{Command, Output};

use crate::harness::{crate_root, Bin};

const MCD: &str = "/usr/bin/machine-config-daemon";

fn small_image() -> String {
    let dir = crate_root().join("fixtures/mco-small");
    format!("oci:{}:latest", dir.display())
}

/// Runs the binary with `env` set and every variable that changes its behaviour cleared.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    std::env::vars()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with("MCD_INJECT_") || k == "RUST_LOG")
        .fold(Bin::new(args), Bin::env_remove)
        .envs(env.iter().copied())
        .run()
        .into_output()
}

fn ok(args: &[&str], env: &[(&str, &str)]) -> Output {
    let out = run(args, env);
    assert!(
        out.status.success(),
        "mcd-inject {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn fails(args: &[&str], env: &[(&str, &str)], code: i32) -> String {
    let out = run(args, env);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "mcd-inject {} with {env:?}:\n{stderr}",
        args.join(" ")
    );
    stderr
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn shell(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {program} (apt-get install {program}): {e}"))
}

#[test]
fn bash_completion_loads_and_completes_subcommands() {
    let script = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        script.path(),
        ok(&["completion", "bash"], &[]).stdout.as_slice(),
    )
    .unwrap();
    // Load it, check it is registered, and ask it what follows `mcd-inject `.
    let probe = format!(
        "source {} && complete -p mcd-inject && \
         COMP_WORDS=(mcd-inject '') COMP_CWORD=1 COMP_LINE='mcd-inject ' COMP_POINT=11 && \
         \"$(complete -p mcd-inject | sed 's/.* -F \\([^ ]*\\) .*/\\1/')\" mcd-inject '' mcd-inject && \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.path().display()
    );
    let out = shell("bash", &["-c", &probe]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(
        text.contains("-F _mcd") && text.contains(" mcd-inject\n"),
        "{text}"
    );
    for sub in ["inject", "extract", "verify", "completion", "man"] {
        assert!(text.lines().any(|l| l == sub), "{sub} not offered: {text}");
    }
}

#[test]
fn zsh_and_fish_completions_parse() {
    let dir = tempfile::tempdir().unwrap();
    for (sh, check) in [("zsh", &["-n"][..]), ("fish", &["--no-execute"][..])] {
        let out = ok(&["completion", sh], &[]);
        let path = dir.path().join(format!("mcd-inject.{sh}"));
        std::fs::write(&path, &out.stdout).unwrap();
        let mut args = check.to_vec();
        let p = path.display().to_string();
        args.push(&p);
        let res = shell(sh, &args);
        assert!(res.status.success(), "{sh}: {}", stderr(&res));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("mcd-inject") && text.contains("--bootimage"),
            "{sh}"
        );
    }
    let err = fails(&["completion", "tcsh"], &[], 2);
    assert!(err.contains("tcsh"), "{err}");
}

#[test]
fn man_page_renders() {
    let out = ok(&["man"], &[]);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("mcd-inject.1");
    std::fs::write(&page, &out.stdout).unwrap();
    let rendered = Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .expect("run man (apt-get install man-db)");
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(rendered.status.success(), "{}", stderr(&rendered));
    assert!(text.contains("NAME") && text.contains("SYNOPSIS"), "{text}");
    for sub in ["inject", "verify", "extract", "completion"] {
        assert!(
            text.contains(&format!("mcd-inject-{sub}(1)")),
            "{sub}: {text}"
        );
    }
    assert!(rendered.stderr.is_empty(), "{}", stderr(&rendered));
    assert!(
        !text.contains("mcd-inject-help"),
        "no page for help: {text}"
    );
}

#[test]
fn man_dir_writes_one_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    ok(&["man", "--dir", &d], &[]);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want: Vec<String> = [
        "",
        "-completion",
        "-extract",
        "-inject",
        "-inspect",
        "-man",
        "-pull",
        "-verify",
    ]
    .iter()
    .map(|s| format!("mcd-inject{s}.1"))
    .collect();
    want.sort();
    assert_eq!(names, want);
    let out = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(dir.path().join("mcd-inject-inject.1"))
        .output()
        .expect("run groff");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        stderr(&out)
    );

    let err = fails(&["man", "--dir", "/nonexistent/dir"], &[], 1);
    assert!(err.contains("/nonexistent/dir"), "{err}");
}

fn extract_args(out: &Path) -> Vec<String> {
    let image = small_image();
    let out = out.display().to_string();
    ["extract", "--image", &image, "--path", MCD, "-o", &out]
        .map(String::from)
        .to_vec()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn environment_variables_set_flags_and_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mcd");
    let args = extract_args(&out);

    // MCD_INJECT_MAX_FILE_SIZE: the fixture's MCD is 3320 bytes.
    let err = fails(&strs(&args), &[("MCD_INJECT_MAX_FILE_SIZE", "1K")], 1);
    assert!(err.contains("over the limit of 1024 bytes"), "{err}");
    assert!(!out.exists());
    let mut with_flag = args.clone();
    with_flag.extend(["--max-file-size".into(), "1M".into()]);
    ok(&strs(&with_flag), &[("MCD_INJECT_MAX_FILE_SIZE", "1K")]);
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 3320);

    // MCD_INJECT_PLATFORM
    let image = small_image();
    let inspect = ["inspect", "--image", image.as_str()];
    let err = fails(&inspect, &[("MCD_INJECT_PLATFORM", "linux/arm64")], 1);
    assert!(err.contains("not linux/arm64"), "{err}");
    let mut flagged = inspect.to_vec();
    flagged.extend(["--platform", "linux/amd64"]);
    ok(&flagged, &[("MCD_INJECT_PLATFORM", "linux/arm64")]);
    let err = fails(&inspect, &[("MCD_INJECT_PLATFORM", "linux")], 2);
    assert!(err.contains("--platform"), "{err}");

    // MCD_INJECT_OFFLINE and MCD_INJECT_CACHE_DIR: the error names the cache it read.
    let cache = dir.path().join("cache");
    let c = cache.display().to_string();
    let remote = ["inspect", "--image", "registry.example/mco/small:v1"];
    for yes in ["1", "true", "yes"] {
        let err = fails(
            &remote,
            &[("MCD_INJECT_OFFLINE", yes), ("MCD_INJECT_CACHE_DIR", &c)],
            1,
        );
        assert!(
            err.contains("--offline forbids the network") && err.contains(&c),
            "{err}"
        );
    }
    let other = dir.path().join("other-cache").display().to_string();
    let mut flagged = remote.to_vec();
    flagged.extend(["--cache-dir", &other]);
    let err = fails(
        &flagged,
        &[("MCD_INJECT_OFFLINE", "1"), ("MCD_INJECT_CACHE_DIR", &c)],
        1,
    );
    assert!(err.contains(&other) && !err.contains(&c), "{err}");
    let err = fails(&remote, &[("MCD_INJECT_OFFLINE", "maybe")], 2);
    assert!(err.contains("--offline"), "{err}");
    let err = fails(
        &["pull", "--image", "registry.example/mco/small:v1"],
        &[("MCD_INJECT_OFFLINE", "on")],
        1,
    );
    assert!(err.contains("pull cannot run with --offline"), "{err}");

    // Every variable is shown in the help (the registry tests log in through
    // MCD_INJECT_AUTHFILE).
    let help = ok(&["pull", "--help"], &[]);
    let help = String::from_utf8_lossy(&help.stdout);
    for var in [
        "MCD_INJECT_AUTHFILE",
        "MCD_INJECT_CACHE_DIR",
        "MCD_INJECT_OFFLINE",
        "MCD_INJECT_PLATFORM",
        "MCD_INJECT_TLS_VERIFY",
        "MCD_INJECT_CERT_DIR",
    ] {
        assert!(help.contains(var), "{var} missing from pull --help");
    }
}

#[test]
fn verbose_logs_the_layers_read_and_quiet_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let args = extract_args(&dir.path().join("mcd"));
    let quiet = ok(&strs(&args), &[]);
    assert!(!stderr(&quiet).contains("INFO"), "{}", stderr(&quiet));

    let mut v = args.clone();
    v.push("-v".into());
    let log = stderr(&ok(&strs(&v), &[]));
    let line = log
        .lines()
        .find(|l| l.contains("INFO") && l.contains("reading layer 2/2 sha256:"))
        .unwrap_or_else(|| panic!("no layer line in:\n{log}"));
    assert!(line.contains("mcd_inject::image::fs"), "{line}");
    assert!(log.contains("read and verified in"), "{log}");
    assert!(!log.contains("DEBUG"), "-v is info:\n{log}");

    // RUST_LOG when no flag says; --log-level wins over -v and RUST_LOG.
    let log = stderr(&ok(&strs(&args), &[("RUST_LOG", "mcd_inject=info")]));
    assert!(log.contains("reading layer"), "{log}");
    let mut off = v.clone();
    off.extend(["--log-level".into(), "off".into()]);
    let log = stderr(&ok(&strs(&off), &[("RUST_LOG", "trace")]));
    assert!(!log.contains("reading layer"), "{log}");

    let mut bad = args.clone();
    bad.extend(["--log-level".into(), "loud".into()]);
    let err = fails(&strs(&bad), &[], 2);
    assert!(err.contains("\"loud\" is not a log level"), "{err}");
}

#[test]
fn extract_json_describes_the_file_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mcd");
    let mut args = extract_args(&out);
    args.push("--json".into());
    let run = ok(&strs(&args), &[]);
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).expect("JSON on stdout");
    assert_eq!(v["path"], MCD);
    assert_eq!(v["resolved"], MCD);
    assert_eq!(v["output"], out.display().to_string());
    assert_eq!(v["size"], 3320);
    assert_eq!(
        v["mode"], 0o755,
        "permission bits as a number, as inspect prints them"
    );
    assert_eq!(v["layer_reads"], 1);
    assert_eq!(v["image"]["platform"], "linux/amd64");
    assert_eq!(v["image"]["layers"].as_array().unwrap().len(), 2);
    assert!(v["image"]["manifest_digest"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 3320);
    assert!(run.stderr.is_empty(), "{}", stderr(&run));

    // Both on stdout cannot be: a usage error, and nothing written.
    let image = small_image();
    let err = fails(
        &[
            "extract", "--image", &image, "--path", MCD, "-o", "-", "--json",
        ],
        &[],
        2,
    );
    assert!(err.contains("--json and -o - both want stdout"), "{err}");
}

#[test]
fn cli_version_and_help_name_the_new_commands() {
    let help = ok(&["--help"], &[]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("completion") && help.contains("man"),
        "{help}"
    );
}
