//! The command line around the jobs, on the built binary: shell completions (driven in
//! real bash, zsh and fish) and man pages, `--help` headings, exit codes (2 when the
//! command line cannot be used, 1 otherwise), `-q`, MCD_INJECT_* environment variables
//! (the flag wins; a bad value names both), logging, and the digests of the `--json`
//! reports. Images: the small layout committed in `fixtures/`.

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

/// For every subcommand, a word being typed and the one flag of that subcommand it must
/// complete to (global flags included).
const FLAG_PREFIXES: &[(&str, &str, &str)] = &[
    ("extract", "--pat", "--path"),
    ("inspect", "--jso", "--json"),
    ("pull", "--offl", "--offline"),
    ("inject", "--bootimage-f", "--bootimage-file"),
    ("verify", "--payl", "--payload"),
    ("completion", "--log-l", "--log-level"),
    ("man", "--d", "--dir"),
];

fn completion_script(sh: &str, dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, ok(&["completion", sh], &[]).stdout).unwrap();
    path
}

/// bash: the script sourced, its function called as bash calls it on TAB.
#[test]
fn bash_completes_a_flag_of_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let script = completion_script("bash", dir.path(), "mcd-inject.bash");
    let probe = r#"source "$1" || exit 3
line=$2
read -ra COMP_WORDS <<<"$line"
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$line COMP_POINT=${#line}
fn=$(complete -p mcd-inject | sed 's/.* -F \([^ ]*\) .*/\1/')
"$fn" mcd-inject "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}""#;
    for (sub, typed, want) in FLAG_PREFIXES {
        let line = format!("mcd-inject {sub} {typed}");
        let out = shell(
            "bash",
            &["-c", probe, "probe", &script.display().to_string(), &line],
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{line}: {}", stderr(&out));
        let offered: Vec<&str> = text.lines().collect();
        assert_eq!(offered, [*want], "bash: {line}<TAB>");
    }
}

/// zsh: an interactive `zsh -f` in a pseudo-terminal (zpty) with compinit and the
/// script on its fpath; TAB typed after the line, then a key bound to print the line.
const ZSH_DRIVER: &str = r#"zmodload zsh/zpty || exit 3
dir=$1 line=$2
zpty z zsh -f -i
zpty -w z "PS1=''; PS2=''; RPS1=''; fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z 'show-buffer() { zle -I; print -r -- "{{""{$BUFFER}""}}" }; zle -N show-buffer; bindkey "^X" show-buffer'
zpty -w -n z "$line"$'\t\x18'
out=
integer i
for (( i = 0; i < 400; i++ )); do
  while zpty -r -t z chunk; do out+=$chunk; done
  [[ $out == *'{{{'*'}}}'* ]] && break
  sleep 0.05
done
zpty -d z
[[ $out == *'{{{'*'}}}'* ]] || { print -r -- "no answer from zsh: $out" >&2; exit 4 }
print -r -- "${${out##*\{\{\{}%%\}\}\}*}""#;

#[test]
fn zsh_completes_a_flag_of_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    completion_script("zsh", dir.path(), "_mcd-inject");
    let driver = dir.path().join("drive.zsh");
    std::fs::write(&driver, ZSH_DRIVER).unwrap();
    for (sub, typed, want) in FLAG_PREFIXES {
        let line = format!("mcd-inject {sub} {typed}");
        let out = Command::new("timeout")
            .args(["60", "zsh", "-f"])
            .arg(&driver)
            .arg(dir.path())
            .arg(&line)
            .output()
            .expect("run zsh (apt-get install zsh)");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{line}: {}", stderr(&out));
        let completed = text.trim_end();
        let rest = completed
            .strip_prefix(&format!("mcd-inject {sub} {want}"))
            .unwrap_or_else(|| panic!("zsh: {line}<TAB> gave {completed:?}"));
        assert!(
            matches!(rest, "" | " " | "="),
            "zsh: {line}<TAB> gave {completed:?}"
        );
    }
}

#[test]
fn fish_completes_a_flag_of_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let script = completion_script("fish", dir.path(), "mcd-inject.fish");
    for (sub, typed, want) in FLAG_PREFIXES {
        let line = format!("mcd-inject {sub} {typed}");
        let out = shell(
            "fish",
            &[
                "--no-config",
                "-c",
                &format!("source {}; complete -C '{line}'", script.display()),
            ],
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{line}: {}", stderr(&out));
        let offered: Vec<&str> = text
            .lines()
            .map(|l| l.split('\t').next().unwrap())
            .collect();
        assert_eq!(offered, [*want], "fish: {line}<TAB>: {text}");
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

    // A directory that does not exist yet is made; a file cannot be one.
    let nested = dir.path().join("share/man/man1");
    ok(&["man", "--dir", &nested.display().to_string()], &[]);
    assert!(nested.join("mcd-inject-verify.1").is_file());
    let file = dir.path().join("mcd-inject.1").display().to_string();
    let err = fails(&["man", "--dir", &file], &[], 1);
    assert!(err.contains(&file), "{err}");
}

/// Renders a page the way `man` shows it.
fn render_man(page: &Path) -> String {
    let rendered = Command::new("man")
        .arg("-l")
        .arg(page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "200")
        .output()
        .expect("run man (apt-get install man-db)");
    assert!(rendered.status.success(), "{}", stderr(&rendered));
    assert!(rendered.stderr.is_empty(), "{}", stderr(&rendered));
    String::from_utf8_lossy(&rendered.stdout).into_owned()
}

#[test]
fn man_pages_have_exit_status_environment_and_examples() {
    let dir = tempfile::tempdir().unwrap();
    ok(&["man", "--dir", &dir.path().display().to_string()], &[]);
    for name in [
        "mcd-inject",
        "mcd-inject-inject",
        "mcd-inject-verify",
        "mcd-inject-man",
    ] {
        let text = render_man(&dir.path().join(format!("{name}.1")));
        let heads: Vec<&str> = text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with(' ') && l.to_uppercase() == *l)
            .map(str::trim)
            .collect();
        for h in ["EXIT STATUS", "ENVIRONMENT", "EXAMPLES"] {
            assert!(heads.contains(&h), "{name}: no {h} section in {heads:?}");
        }
        let at = |h: &str| heads.iter().position(|x| *x == h).unwrap();
        assert!(at("EXIT STATUS") < at("ENVIRONMENT") && at("ENVIRONMENT") < at("EXAMPLES"));
        // The one rule for exit codes, with the examples of the page's command. (man
        // justifies lines, so words may be apart by more than one space.)
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("The command line cannot be used"),
            "{name}: {text}"
        );
        assert!(text.contains("RUST_LOG"), "{name}");
        assert!(
            text.contains("MCD_INJECT_STRICT"),
            "{name}: a global flag's variable"
        );
        let command = name.strip_prefix("mcd-inject-").unwrap_or("inject");
        let examples = text.split("\nEXAMPLES\n").nth(1).unwrap();
        assert!(
            examples.contains(&format!("mcd-inject {command} ")),
            "{name}: no example of its command in {examples}"
        );
    }
    let inject = render_man(&dir.path().join("mcd-inject-inject.1"));
    for var in [
        "MCD_INJECT_PLATFORM",
        "MCD_INJECT_CACHE_DIR",
        "MCD_INJECT_TLS_VERIFY",
    ] {
        assert!(inject.contains(var), "{var} missing from the inject page");
    }
    assert!(inject.contains("mcd-inject inject --image oci:mco:latest --bootimage 4.7"));
    assert!(!render_man(&dir.path().join("mcd-inject-man.1")).contains("MCD_INJECT_CACHE_DIR"));
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

/// `--help` of each command ends with one or two example command lines of it, the first
/// of its man page's EXAMPLES.
#[test]
fn every_help_ends_with_examples() {
    for sub in [
        "",
        "inject",
        "verify",
        "inspect",
        "extract",
        "pull",
        "completion",
        "man",
    ] {
        let args: Vec<&str> = [sub, "--help"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let help = String::from_utf8(ok(&args, &[]).stdout).unwrap();
        let (_, tail) = help
            .rsplit_once("Examples:\n")
            .unwrap_or_else(|| panic!("{sub} --help has no examples:\n{help}"));
        let lines: Vec<&str> = tail
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("mcd-inject ") || l.starts_with("man "))
            .collect();
        assert!((1..=2).contains(&lines.len()), "{sub}: {tail}");
        let want = if sub.is_empty() { "inject" } else { sub };
        assert!(
            lines[0].starts_with(&format!("mcd-inject {want} ")),
            "{sub}: {tail}"
        );
        assert!(
            tail.lines().all(|l| l.is_empty() || l.starts_with("  ")),
            "{sub}: {tail}"
        );
    }
}

#[test]
fn inject_help_groups_its_options_under_headings() {
    let help = ok(&["inject", "--help"], &[]);
    let help = String::from_utf8_lossy(&help.stdout);
    // Each heading, and a flag that must be listed under it (before the next heading).
    let groups = [
        (
            "Image:",
            &["--image", "--release", "--platform", "--max-file-size"][..],
        ),
        (
            "Registry:",
            &[
                "--authfile",
                "--tls-verify",
                "--cache-dir",
                "--offline",
                "--idms",
            ],
        ),
        (
            "Target:",
            &[
                "--bootimage",
                "--spec",
                "--target-rhel",
                "--target-os-release",
                "--binary-path",
                "--force",
            ],
        ),
        (
            "Output:",
            &[
                "--ign",
                "--base",
                "--payload-url",
                "--payload-out",
                "--json",
                "--json-out",
            ],
        ),
        ("Logging:", &["--verbose", "--log-level", "--quiet"]),
    ];
    let sections: Vec<(String, String)> = {
        let mut v: Vec<(String, String)> = Vec::new();
        for line in help.lines() {
            if !line.starts_with(' ') && line.ends_with(':') {
                v.push((line.to_string(), String::new()));
            } else if let Some(last) = v.last_mut() {
                last.1.push_str(line);
                last.1.push('\n');
            }
        }
        v
    };
    for (heading, flags) in groups {
        let body = &sections
            .iter()
            .find(|(h, _)| h == heading)
            .unwrap_or_else(|| panic!("no {heading} in inject --help:\n{help}"))
            .1;
        for flag in flags {
            assert!(
                body.lines().any(|l| l
                    .trim_start()
                    .split([',', ' ', '='])
                    .any(|w| w.trim_end_matches("...") == *flag)),
                "{flag} not under {heading}:\n{help}"
            );
        }
    }
    // No heading holds most of the options: the longest block is a third of them.
    let longest = sections
        .iter()
        .map(|(_, b)| {
            b.lines()
                .filter(|l| l.trim_start().starts_with('-'))
                .count()
        })
        .max()
        .unwrap();
    assert!(longest <= 14, "a block of {longest} options:\n{help}");
}

fn exit_code(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = run(args, env);
    (out.status.code(), stderr(&out))
}

#[test]
fn exit_code_2_is_for_a_command_line_that_cannot_be_used() {
    let dir = tempfile::tempdir().unwrap();
    let image = small_image();
    let ign = dir.path().join("x.ign").display().to_string();
    let dotted = dir.path().join(".").join("x.ign").display().to_string();
    let inject = |extra: &[&str]| {
        let mut a = vec!["inject", "--image", image.as_str()];
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    // (arguments, what the message must name)
    let usage: Vec<(Vec<String>, &str)> = vec![
        (inject(&["--bootimage", "4.0", "--ign", &ign]), "4.0"),
        (
            inject(&["--bootimage", "4.24", "--ign", &ign]),
            "unknown bootimage 4.24",
        ),
        (
            inject(&["--bootimage", "4.24", "--spec", "3.2", "--ign", &ign]),
            "4.24",
        ),
        (
            inject(&["--bootimage", "4.2", "--spec", "3.1", "--ign", &ign]),
            "spec 3.1",
        ),
        (
            inject(&["--bootimage", "4.2", "--target-rhel", "6", "--ign", &ign]),
            "RHEL 6",
        ),
        (
            inject(&["--bootimage", "4.2", "--ign", "-", "--json"]),
            "--json-out",
        ),
        (inject(&["--bootimage", "4.2", "--ign", ""]), "--ign"),
        (
            inject(&[
                "--bootimage",
                "4.2",
                "--ign",
                &ign,
                "--payload-url",
                "gs://bucket/mcd.gz",
                "--payload-out",
                &format!("{ign}.gz"),
            ]),
            "--payload-url gs://bucket/mcd.gz",
        ),
        (
            inject(&["--bootimage", "4.2", "--ign", &ign, "--json-out", &ign]),
            "--json-out",
        ),
        (
            inject(&["--bootimage", "4.2", "--ign", &ign, "--json-out", &dotted]),
            "--ign and --json-out both name",
        ),
        (
            [
                "extract", "--image", &image, "--path", MCD, "-o", "-", "--json",
            ]
            .map(String::from)
            .to_vec(),
            "both want stdout",
        ),
        (
            ["extract", "--image", &image, "--path", MCD, "-o", ""]
                .map(String::from)
                .to_vec(),
            "-o",
        ),
        (
            ["verify", &ign, "--bootimage", "4.24"]
                .map(String::from)
                .to_vec(),
            "4.24",
        ),
        (
            ["inspect", "--image", &image, "--tls-verify=maybe"]
                .map(String::from)
                .to_vec(),
            "--tls-verify",
        ),
        (
            ["inspect", "--image", &image, "--creds", ":s3cret"]
                .map(String::from)
                .to_vec(),
            "--creds: no user name",
        ),
    ];
    for (args, needle) in &usage {
        let (code, err) = exit_code(&strs(args), &[]);
        assert!(!err.contains("s3cret"), "a password quoted: {err}");
        assert_eq!(code, Some(2), "{args:?}:\n{err}");
        assert!(
            err.contains(needle),
            "{args:?} should name {needle}:\n{err}"
        );
        assert!(
            err.contains("Usage:") || err.contains("--help"),
            "{args:?}:\n{err}"
        );
    }
    assert!(!Path::new(&ign).exists());

    // A newer bootimage with its RHEL and spec given is a command line that can be used.
    let out = dir.path().join("new.ign");
    let o = out.display().to_string();
    let args = inject(&[
        "--bootimage",
        "4.24",
        "--target-rhel",
        "9",
        "--spec",
        "3.4",
        "--ign",
        &o,
    ]);
    ok(&strs(&args), &[]);
    assert!(out.is_file());

    // What the command line names but cannot be read or written is exit 1.
    let missing = dir.path().join("missing.ign").display().to_string();
    for args in [
        vec!["verify".to_string(), missing.clone()],
        inject(&[
            "--bootimage",
            "4.2",
            "--ign",
            &dir.path().display().to_string(),
        ]),
        inject(&["--bootimage", "4.2", "--base", &missing, "--ign", &ign]),
        ["inspect", "--image", &format!("oci:{missing}:latest")]
            .map(String::from)
            .to_vec(),
    ] {
        let (code, err) = exit_code(&strs(&args), &[]);
        assert_eq!(code, Some(1), "{args:?}:\n{err}");
        assert!(err.starts_with("error: "), "{args:?}:\n{err}");
    }
}

/// `-q` (`--quiet`, `MCD_INJECT_QUIET`): a run that succeeds prints nothing, not even its
/// warnings (they are still in `--json`), but the output asked for on stdout; a run that
/// fails prints the warnings it held back, then the error (so `--strict` still fails).
#[test]
fn quiet_prints_nothing_on_success_but_the_output_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let image = small_image();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let (ign, mcd) = (path("x.ign"), path("mcd"));
    // Two inline builds: an 18 kB config, over AWS's 16 KB of user data, which warns.
    let inject = [
        "inject",
        "--image",
        &image,
        "--bootimage",
        "4.2",
        "--ign",
        &ign,
    ];
    let loud = ok(&inject, &[]);
    let warning = "warning: the config is 18 kB with the payload inline: over the \
                   user-data limit of AWS 16 KB";
    assert!(stderr(&loud).contains(warning), "{}", stderr(&loud));
    assert!(stderr(&loud).contains("chose "), "{}", stderr(&loud));
    let extract = ["extract", "--image", &image, "--path", MCD, "-o", &mcd];
    assert!(!stderr(&ok(&extract, &[])).is_empty());
    let verify = ["verify", &ign];
    assert!(String::from_utf8_lossy(&ok(&verify, &[]).stdout).contains("ok: "));
    let silent = |args: &[&str]| {
        for (flag, env) in [
            (Some("-q"), None),
            (Some("--quiet"), None),
            (None, Some("1")),
        ] {
            let mut a = args.to_vec();
            a.extend(flag);
            let env: Vec<(&str, &str)> = env.map(|v| ("MCD_INJECT_QUIET", v)).into_iter().collect();
            let out = ok(&a, &env);
            assert!(
                out.stdout.is_empty() && out.stderr.is_empty(),
                "{a:?} {env:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                stderr(&out)
            );
        }
    };
    silent(&inject);
    silent(&extract);
    silent(&verify);
    assert!(Path::new(&ign).is_file() && Path::new(&mcd).is_file());

    // What was asked for on stdout is printed, and nothing else.
    let quiet = |args: &[&str]| {
        let mut a = args.to_vec();
        a.push("-q");
        let out = ok(&a, &[]);
        assert!(out.stderr.is_empty(), "{a:?}: {}", stderr(&out));
        out
    };
    let v = json(&quiet(&[&inject[..], &["--json"]].concat()));
    assert_eq!(
        v["warnings"][0]["kind"], "inline-config-too-big-to-hand-over",
        "{v:#}"
    );
    assert_eq!(v["warnings"].as_array().unwrap().len(), 1, "{v:#}");
    let to_stdout = quiet(&[
        "inject",
        "--image",
        &image,
        "--bootimage",
        "4.2",
        "--ign",
        "-",
    ]);
    assert_eq!(to_stdout.stdout, std::fs::read(&ign).unwrap());
    let bytes = quiet(&["extract", "--image", &image, "--path", MCD, "-o", "-"]);
    assert_eq!(bytes.stdout, std::fs::read(&mcd).unwrap());
    let listing = quiet(&["inspect", "--image", &image]);
    assert!(String::from_utf8_lossy(&listing.stdout).contains(MCD));
    assert_eq!(json(&quiet(&["verify", &ign, "--json"]))["ok"], true);

    // A run that fails says why: the problems of a config, and under --strict the
    // warning that failed it, then the error.
    let out = run(&["verify", &ign, "--bootimage", "4.8", "-q"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.starts_with("FAIL: spec 2.2.0 cannot be read"),
        "{listed}"
    );
    assert!(!listed.contains("ok: "), "{listed}");
    assert!(err.starts_with("error: "), "{err}");
    let strict_ign = path("strict.ign");
    let err = fails(
        &[
            "inject",
            "--image",
            &image,
            "--bootimage",
            "4.2",
            "--ign",
            &strict_ign,
            "-q",
            "--strict",
        ],
        &[],
        1,
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].starts_with(warning), "{err}");
    assert_eq!(
        lines[1],
        "error: --strict: 1 warning (above) turned into failure; no output was written"
    );
    assert!(!Path::new(&strict_ign).exists());
}

#[test]
fn a_bare_tls_verify_means_true() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache").display().to_string();
    // Offline, nothing cached: the run gets as far as the cache, whatever --tls-verify says.
    for extra in [
        &["--tls-verify"][..],
        &["--tls-verify=true"],
        &["--tls-verify", "false"],
        &["--tls-verify", "-q"],
    ] {
        let mut args = vec![
            "inspect",
            "--image",
            "registry.example/mco/small:v1",
            "--offline",
            "--cache-dir",
            &cache,
        ];
        args.extend_from_slice(extra);
        let (code, err) = exit_code(&args, &[]);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(
            err.contains("--offline forbids the network"),
            "{args:?}: {err}"
        );
    }
    let (code, err) = exit_code(
        &[
            "inspect",
            "--image",
            "registry.example/mco/small:v1",
            "--tls-verify=maybe",
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn a_bad_value_from_a_variable_names_the_flag_and_the_variable() {
    let image = small_image();
    let inspect = ["inspect", "--image", image.as_str()];
    for (var, value, flag) in [
        ("MCD_INJECT_PLATFORM", "linux", "--platform"),
        ("MCD_INJECT_MAX_FILE_SIZE", "1X", "--max-file-size"),
        ("MCD_INJECT_TLS_VERIFY", "maybe", "--tls-verify"),
        ("MCD_INJECT_OFFLINE", "maybe", "--offline"),
        ("MCD_INJECT_QUIET", "maybe", "--quiet"),
        ("MCD_INJECT_STRICT", "maybe", "--strict"),
        ("MCD_INJECT_CACHE_DIR", "", "--cache-dir"),
        ("MCD_INJECT_AUTHFILE", "", "--authfile"),
        ("MCD_INJECT_CERT_DIR", "", "--cert-dir"),
    ] {
        let err = fails(&inspect, &[(var, value)], 2);
        assert!(err.contains(flag), "{var}={value:?}: {err}");
        assert!(
            err.contains(&format!(
                "the value came from the environment variable {var}"
            )),
            "{var}={value:?}: {err}"
        );
        // The same bad value on the command line is not blamed on the variable.
        if !value.is_empty() && !matches!(flag, "--offline" | "--quiet" | "--strict") {
            let mut a = inspect.to_vec();
            let f = format!("{flag}={value}");
            a.push(&f);
            let err = fails(&a, &[(var, value)], 2);
            assert!(!err.contains("environment variable"), "{a:?}: {err}");
        }
    }
    // A cache directory that is a file, from the variable: named with the flag and it.
    let file = crate::harness::crate_root()
        .join("Cargo.toml")
        .display()
        .to_string();
    let err = fails(
        &[
            "inspect",
            "--image",
            "registry.example/mco/small:v1",
            "--offline",
        ],
        &[("MCD_INJECT_CACHE_DIR", &file)],
        1,
    );
    assert!(
        err.contains(&format!(
            "--cache-dir (from MCD_INJECT_CACHE_DIR) {file}: not a directory"
        )),
        "{err}"
    );
    let err = fails(
        &[
            "inspect",
            "--image",
            "registry.example/mco/small:v1",
            "--offline",
            "--cache-dir",
            &file,
        ],
        &[],
        1,
    );
    assert!(
        err.contains(&format!("--cache-dir {file}: not a directory")),
        "{err}"
    );
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("one JSON object on stdout")
}

fn sha256_of(path: &Path) -> String {
    format!(
        "sha256:{}",
        crate::harness::sha256_hex(&std::fs::read(path).unwrap())
    )
}

/// Every digest of every report is `ALGORITHM:HEX` (the provenance record `verify`
/// shows included), and says what it is of.
#[test]
fn json_digests_have_one_form_everywhere() {
    use sha2::Digest as _;
    let dir = tempfile::tempdir().unwrap();
    let image = small_image();
    let ign = dir.path().join("x.ign");
    let payload = dir.path().join("p.gz");
    let (ign_s, payload_s) = (ign.display().to_string(), payload.display().to_string());
    let v = json(&ok(
        &[
            "inject",
            "--image",
            &image,
            "--bootimage",
            "4.2",
            "--ign",
            &ign_s,
            "--json",
            "--payload-url",
            "http://example.invalid/p.gz",
            "--payload-out",
            &payload_s,
        ],
        &[],
    ));
    let mcd = dir.path().join("mcd");
    let e = json(&ok(
        &[
            "extract",
            "--image",
            &image,
            "--path",
            v["binary"]["path"].as_str().unwrap(),
            "-o",
            &mcd.display().to_string(),
            "--json",
        ],
        &[],
    ));
    assert_eq!(v["config"]["sha256"], sha256_of(&ign));
    assert_eq!(v["binary"]["sha256"], sha256_of(&mcd), "{v:#}");
    assert_eq!(e["sha256"], sha256_of(&mcd), "{e:#}");
    assert_eq!(
        v["payload"]["sha512"],
        format!(
            "sha512:{}",
            hex::encode(sha2::Sha512::digest(std::fs::read(&payload).unwrap()))
        )
    );
    let r = json(&ok(
        &["verify", &ign_s, "--payload", &payload_s, "--json"],
        &[],
    ));
    assert_eq!(r["ok"], true, "{r:#}");
    // The config's provenance record, in the report: the same spelling as the rest.
    let p = &r["provenance"];
    for d in [
        &r["binary_sha256"],
        &p["binary_sha256"],
        &p["builds"][0]["binary_sha256"],
    ] {
        assert_eq!(d, &v["binary"]["sha256"], "{r:#}");
    }
    assert_eq!(
        p["builds"][1]["binary_sha256"], v["boots"]["cluster_os"]["binary"]["sha256"],
        "{r:#}"
    );
    // On the node the record keeps its own spelling: bare hex.
    let record = ign_file(&ign, "/var/lib/mcd-inject/provenance.json");
    let bare = v["binary"]["sha256"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    assert_eq!(record["binary_sha256"], bare, "{record:#}");
    let i = json(&ok(&["inspect", "--image", &image, "--json"], &[]));
    let b = i["binaries"].as_array().unwrap();
    assert!(
        b.iter().any(|b| b["sha256"] == v["binary"]["sha256"]),
        "{i:#}"
    );
    // Every digest of every report: a string under a key that names a hash or a digest.
    let mut seen = 0;
    for report in [&v, &e, &r, &i] {
        digests(report, "", &mut |key, d| {
            seen += 1;
            let algorithm = if key.ends_with("sha512") {
                "sha512:"
            } else {
                "sha256:"
            };
            assert!(d.starts_with(algorithm), "{key}: {d}");
            assert!(
                d[algorithm.len()..].bytes().all(|c| c.is_ascii_hexdigit()),
                "{key}: {d}"
            );
        });
    }
    assert!(seen > 20, "only {seen} digests");
}

/// Each string under a key ending in `sha256`, `sha512` or `digest`, with its key.
fn digests(v: &serde_json::Value, key: &str, f: &mut dyn FnMut(&str, &str)) {
    match v {
        serde_json::Value::Object(m) => m.iter().for_each(|(k, v)| digests(v, k, f)),
        serde_json::Value::Array(a) => a.iter().for_each(|v| digests(v, key, f)),
        serde_json::Value::String(s)
            if ["sha256", "sha512", "digest"]
                .iter()
                .any(|e| key.ends_with(e)) =>
        {
            f(key, s)
        }
        _ => {}
    }
}

/// The JSON of the file `path` that a spec 2.2 or 3 config carries inline.
fn ign_file(ign: &Path, path: &str) -> serde_json::Value {
    let cfg: serde_json::Value = serde_json::from_slice(&std::fs::read(ign).unwrap()).unwrap();
    let f = cfg["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} is not in the config"));
    let bytes =
        mcd_inject::ignition::decode_data_url(f["contents"]["source"].as_str().unwrap()).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn verify_json_reports_a_file_that_is_not_a_config() {
    let dir = tempfile::tempdir().unwrap();
    let image = small_image();
    let good = dir.path().join("good.ign");
    ok(
        &[
            "inject",
            "--image",
            &image,
            "--bootimage",
            "4.2",
            "--ign",
            &good.display().to_string(),
        ],
        &[],
    );
    let bytes = std::fs::read(&good).unwrap();
    let cases: Vec<(&str, Option<Vec<u8>>)> = vec![
        ("missing", None),
        ("empty", Some(Vec::new())),
        ("truncated", Some(bytes[..bytes.len() / 2].to_vec())),
        (
            "other JSON",
            Some(br#"{"apiVersion": "v1", "kind": "ConfigMap"}"#.to_vec()),
        ),
        ("not JSON", Some(b"hello\n".to_vec())),
    ];
    for (what, content) in cases {
        let path = dir.path().join(what.replace(' ', "-"));
        if let Some(c) = &content {
            std::fs::write(&path, c).unwrap();
        }
        let p = path.display().to_string();
        let out = run(&["verify", &p, "--json"], &[]);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
        let v = json(&out);
        assert_eq!(v["ok"], false, "{what}: {v:#}");
        assert_eq!(v["config"], p.as_str());
        let problems = v["problems"].as_array().unwrap();
        assert_eq!(problems.len(), 1, "{what}: {v:#}");
        assert!(!problems[0].as_str().unwrap().is_empty());
        assert_eq!(v["passed"].as_array().unwrap().len(), 0);
        assert!(
            stderr(&out).starts_with("error: "),
            "{what}: {}",
            stderr(&out)
        );
        // --json-out: the same object, in the file.
        let report = dir.path().join("report.json");
        let out = run(
            &["verify", &p, "--json-out", &report.display().to_string()],
            &[],
        );
        assert_eq!(out.status.code(), Some(1));
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        assert_eq!(r["ok"], false);
    }
}

/// `inject -o` and `--output` (butane's flag) write the same config as `--ign`.
#[test]
fn inject_takes_butanes_output_flag() {
    let dir = tempfile::tempdir().unwrap();
    let image = small_image();
    let mut configs = Vec::new();
    for flag in ["--ign", "-o", "--output"] {
        let out = dir
            .path()
            .join(format!("x{flag}.ign"))
            .display()
            .to_string();
        ok(
            &[
                "inject",
                "--image",
                &image,
                "--bootimage",
                "4.2",
                flag,
                &out,
            ],
            &[],
        );
        configs.push(std::fs::read(&out).unwrap());
    }
    assert!(!configs[0].is_empty());
    assert!(configs.iter().all(|c| *c == configs[0]));
}
