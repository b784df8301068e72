//! Shell completion scripts, man pages and the Markdown reference (docs/cli.md),
//! generated from the clap definitions so that they always match the binary; and the
//! bootimage table of docs/inject.md, generated from the code's table.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cmdline::cli::Cli;

/// The name the completion scripts complete and the man pages are titled with.
const BIN: &str = "mcd-inject";

/// Writes the completion script for `shell` to `out`.
pub fn completion(shell: Shell, out: &mut dyn Write) -> Result<()> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, BIN, &mut buf);
    if shell == Shell::Bash {
        buf = fix_bash_names(&String::from_utf8(buf).context("the bash script")?).into_bytes();
    }
    out.write_all(&buf).map_err(crate::io::output::stdout_error)
}

/// clap_complete's bash script tracks the command typed so far as `BIN__subcmd__NAME`,
/// with the `-` of the binary's name written `__` (`mcd__inject__subcmd__inject`), but
/// names the case of each subcommand with that `-` written `__subcmd__`
/// (`mcd__subcmd__inject__subcmd__inject`): no case matches, and no subcommand's
/// options are ever offered. The cases are renamed to what the script computes.
fn fix_bash_names(script: &str) -> String {
    const SEP: &str = "__subcmd__";
    let wrong = format!("{}{SEP}", BIN.replace('-', SEP));
    let right = format!("{}{SEP}", BIN.replace('-', "__"));
    script.replace(&wrong, &right)
}

/// The man page of `mcd-inject` itself (its subcommands listed), as roff.
pub fn man_page() -> Result<Vec<u8>> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    Ok(page(cmd)?.1)
}

/// Writes `mcd-inject.1` and one `mcd-inject-COMMAND.1` per subcommand into `dir`,
/// each page through a temp file renamed into place. Returns the pages written.
pub fn man_pages_to(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = vec![page(cmd.clone())?];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages.push(page(sub.clone())?);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    for (name, roff) in pages {
        let path = dir.join(&name);
        let mut tmp = tempfile::Builder::new()
            .prefix(".mcd-inject-man-")
            .tempfile_in(dir)
            .with_context(|| format!("creating a temp file in {}", dir.display()))?;
        tmp.write_all(&roff)
            .with_context(|| format!("writing {}", path.display()))?;
        tmp.persist(&path)
            .map_err(|e| e.error)
            .with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// One page: its file name and roff text. Subcommands are built with their full
/// name (`mcd-inject-inject`), so the page title and file name say which command.
/// clap_mangen's sections come first, then EXIT STATUS, ENVIRONMENT and EXAMPLES.
fn page(cmd: clap::Command) -> Result<(String, Vec<u8>)> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut roff = Vec::new();
    man.render(&mut roff).context("rendering a man page")?;
    let mut text = String::from_utf8(roff).context("rendering a man page")?;
    let extra = extra_sections(&cmd);
    // Before VERSION (the last section clap_mangen writes), as man-pages(7) orders them.
    match text.find("\n.SH VERSION") {
        Some(at) => text.insert_str(at + 1, &extra),
        None => text.push_str(&extra),
    }
    Ok((man.get_filename(), text.into_bytes()))
}

/// What every page says of exit codes.
const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Success (also when the reader of stdout went away from a report or a listing).",
    ),
    (
        "1",
        "Any other failure: an image, config, file or registry that cannot be read or is \
         wrong, an output that cannot be written (the config or file written to stdout \
         included), --timeout, a warning under --strict. No output is left behind.",
    ),
    (
        "2",
        "The command line cannot be used: an unknown flag or command, a missing or bad value \
         (from the command line or from its environment variable), flags that cannot go \
         together. Nothing is read or written.",
    ),
    (
        "129, 130, 143",
        "Stopped by SIGHUP, SIGINT or SIGTERM (temp files removed).",
    ),
];

/// Variables read besides those bound to a flag (which each page lists with its flag).
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "RUST_LOG",
        "Log filter (env_logger syntax) when neither -v nor --log-level is given.",
    ),
    (
        "TMPDIR",
        "Where outputs written to stdout, devices and FIFOs are spooled.",
    ),
    (
        "XDG_CACHE_HOME",
        "The default cache is $XDG_CACHE_HOME/mcd-inject (else ~/.cache/mcd-inject).",
    ),
    (
        "REGISTRY_AUTH_FILE, XDG_RUNTIME_DIR",
        "Registry credentials when --authfile is not given: $REGISTRY_AUTH_FILE, else \
         $XDG_RUNTIME_DIR/containers/auth.json, else ~/.docker/config.json.",
    ),
    (
        "CONTAINERS_REGISTRIES_CONF, XDG_CONFIG_HOME",
        "The registries.conf to read when --registries-conf is not given, and where the \
         user's containers configuration is looked for.",
    ),
];

/// `cmd` with the first two examples of each command (the man pages' EXAMPLES) at the end
/// of its `--help`.
pub fn with_examples(cmd: clap::Command) -> clap::Command {
    let text = |sub: &str| {
        let lines: Vec<String> = examples(sub)
            .iter()
            .take(2)
            .map(|(what, line)| format!("  # {what}\n  {line}"))
            .collect();
        format!("Examples:\n{}", lines.join("\n"))
    };
    let names: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect();
    let mut cmd = cmd.after_help(text(""));
    for name in names {
        let t = text(&name);
        cmd = cmd.mut_subcommand(&name, |s| s.after_help(t));
    }
    cmd
}

/// Examples per command (`""` for the top page).
fn examples(command: &str) -> &'static [(&'static str, &'static str)] {
    match command {
        "inject" => &[
            (
                "A config for a 4.2 bootimage, from the MCO image of a release:",
                "mcd-inject inject --release HOST/ocp/release@sha256:HEX --bootimage 4.2 --ign mcd.ign",
            ),
            (
                "From a local image layout, merged with the installer's config, with a report:",
                "mcd-inject inject --image oci:mco:latest --bootimage 4.7 --base worker.ign --ign out.ign --json-out report.json",
            ),
            (
                "Remote mode: the config fetches the payload from a URL:",
                "mcd-inject inject --image oci:mco:latest --bootimage 4.2 --ign out.ign --payload-url http://HOST/mcd.gz --payload-out mcd.gz",
            ),
        ],
        "verify" => &[
            ("Check a config written by inject:", "mcd-inject verify out.ign"),
            (
                "Check it is the build inject chooses from an image, as JSON:",
                "mcd-inject verify out.ign --image oci:mco:latest --json",
            ),
        ],
        "extract" => &[(
            "Copy one file out of an image:",
            "mcd-inject extract --image oci:mco:latest --path /usr/bin/machine-config-daemon -o mcd",
        )],
        "inspect" => &[(
            "The builds an image holds and the bootimages each fits:",
            "mcd-inject inspect --image docker://HOST/ocp/mco@sha256:HEX",
        )],
        "pull" => &[(
            "Fill the cache, then work without the network:",
            "mcd-inject pull --image HOST/ocp/mco@sha256:HEX && mcd-inject inject --offline --image HOST/ocp/mco@sha256:HEX --bootimage 4.2 --ign out.ign",
        )],
        "completion" => &[(
            "Install the bash completion for the current user:",
            "mcd-inject completion bash > ~/.local/share/bash-completion/completions/mcd-inject",
        )],
        "man" => &[(
            "Install one page per command:",
            "mcd-inject man --dir /usr/local/share/man/man1",
        )],
        _ => &[
            (
                "A config that delivers the right machine-config-daemon to a 4.2 bootimage:",
                "mcd-inject inject --image oci:mco:latest --bootimage 4.2 --ign mcd.ign",
            ),
            ("Check it:", "mcd-inject verify mcd.ign"),
            ("Read the page of one command:", "man mcd-inject-inject"),
        ],
    }
}

/// Text for a roff text line: backslashes and hyphens escaped, a leading `.` or `'`
/// kept from being read as a request.
fn roff_text(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// EXIT STATUS, ENVIRONMENT (the variables bound to this command's flags, then the
/// others) and EXAMPLES, as roff.
fn extra_sections(cmd: &clap::Command) -> String {
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    for (code, text) in EXIT_STATUS {
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            roff_text(code),
            roff_text(text)
        ));
    }
    out.push_str(".SH ENVIRONMENT\n");
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) else {
            continue;
        };
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            roff_text(&env.to_string_lossy()),
            roff_text(&format!(
                "Sets --{long} when the flag is not given; a bad value is reported under the \
                 flag's name and this variable's (exit code 2)."
            ))
        ));
    }
    for (var, text) in ENVIRONMENT {
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            roff_text(var),
            roff_text(text)
        ));
    }
    out.push_str(".SH EXAMPLES\n");
    let name = cmd.get_name();
    let sub = name
        .strip_prefix(BIN)
        .unwrap_or(name)
        .trim_start_matches('-');
    for (what, line) in examples(sub) {
        out.push_str(&format!(
            ".PP\n{}\n.PP\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
            roff_text(what),
            roff_text(line)
        ));
    }
    out
}

/// The command-line reference in Markdown, as committed in `docs/cli.md`: every
/// command with its usage, and each argument with its help, default, accepted values
/// and environment variable. Global options are listed once, under `mcd-inject`.
/// Only the test that keeps `docs/cli.md` current renders it.
#[cfg(test)]
fn markdown() -> String {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         Generated from the clap definitions of the command line (module `clidoc`);\n\
         `mcd-inject COMMAND --help` shows the same text. A unit test fails when this\n\
         file is stale. This rewrites it:\n\n\
         ```sh\nMCD_INJECT_BLESS=1 cargo test --lib clidoc\n```\n",
    );
    markdown_command(&cmd, true, &mut out);
    while out.contains("\n\n\n") {
        out = out.replace("\n\n\n", "\n\n");
    }
    out
}

/// The bootimage table of docs/inject.md, rendered from the code's table: rows that
/// differ only in their release (and their source note) are one line, `4.16-4.18`.
#[cfg(test)]
fn bootimage_table() -> String {
    use crate::choose::target::{Bootimage, BOOTIMAGES};
    let cells = |b: &Bootimage| {
        [
            b.os_name(),
            b.glibc.to_string(),
            b.libcrypto.to_string(),
            b.kernel.to_string(),
            b.ignition_release.to_string(),
            b.max_spec.as_str().to_string(),
            b.default_spec.as_str().to_string(),
        ]
    };
    let mut out = String::from(
        "| bootimage | OS | glibc | libcrypto | kernel | Ignition | newest spec read | default spec |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for rows in BOOTIMAGES.chunk_by(|a, b| cells(a) == cells(b)) {
        let (first, last) = (rows[0].id, rows[rows.len() - 1].id);
        let name = if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        };
        out.push_str(&format!("| {name} | {} |\n", cells(&rows[0]).join(" | ")));
    }
    out
}

/// Where the generated table sits in docs/inject.md.
#[cfg(test)]
const TABLE_BEGIN: &str =
    "<!-- generated from src/choose/target.rs: MCD_INJECT_BLESS=1 cargo test --lib clidoc -->\n";
#[cfg(test)]
const TABLE_END: &str = "<!-- end of the generated table -->\n";

#[cfg(test)]
fn markdown_command(cmd: &clap::Command, top: bool, out: &mut String) {
    let name = cmd.get_bin_name().unwrap_or(cmd.get_name());
    out.push_str(&format!("\n## `{name}`\n\n"));
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        out.push_str(&format!("{}\n\n", markdown_text(&about.to_string())));
    }
    let usage = cmd.clone().render_usage().to_string();
    out.push_str(&format!("```text\n{}\n```\n", usage.trim_end()));
    let args: Vec<_> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .filter(|a| top || !a.is_global_set())
        .collect();
    // Under the headings of `--help`, in its order (positional arguments, the options
    // without a heading, then each heading as it first appears).
    let mut headings: Vec<Option<&str>> = Vec::new();
    for arg in &args {
        let h = arg.get_help_heading();
        if !headings.contains(&h) {
            headings.push(h);
        }
    }
    headings.sort_by_key(|h| h.is_some());
    let args: Vec<_> = headings
        .iter()
        .flat_map(|h| args.iter().filter(move |a| a.get_help_heading() == *h))
        .copied()
        .collect();
    let mut heading = None;
    if !args.is_empty() {
        out.push('\n');
    }
    for arg in args {
        if arg.get_help_heading().is_some() && arg.get_help_heading() != heading {
            heading = arg.get_help_heading();
            out.push_str(&format!("\n**{}**\n\n", heading.unwrap_or_default()));
        }
        out.push_str(&format!("- `{}`", arg_name(arg)));
        if let Some(help) = arg.get_long_help().or(arg.get_help()) {
            let help = markdown_text(&help.to_string()).replace('\n', "\n  ");
            out.push_str(&format!(": {help}"));
            if !help.ends_with('.') {
                out.push('.');
            }
        }
        let mut facts = Vec::new();
        let values: Vec<_> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        if !values.is_empty() && arg.get_action().takes_values() {
            facts.push(format!("Values: {}.", values.join(", ")));
        }
        // A flag's default (`false`, `0`) says nothing its help does not.
        let defaults: Vec<_> = arg
            .get_default_values()
            .iter()
            .map(|v| format!("`{}`", v.to_string_lossy()))
            .collect();
        if !defaults.is_empty() && arg.get_action().takes_values() {
            facts.push(format!("Default: {}.", defaults.join(", ")));
        }
        if let Some(env) = arg.get_env() {
            facts.push(format!("Environment: `{}`.", env.to_string_lossy()));
        }
        if !facts.is_empty() {
            out.push_str(&format!(" {}", facts.join(" ")));
        }
        out.push('\n');
    }
    if top {
        out.push_str("\nThe options above apply to every command.\n");
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        markdown_command(sub, false, out);
    }
}

/// `-o, --output <FILE>`, `--offline`, or `<IGN>` for a positional argument.
#[cfg(test)]
fn arg_name(arg: &clap::Arg) -> String {
    let value = arg
        .get_value_names()
        .map(|names| {
            names
                .iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", arg.get_id().as_str().to_uppercase()));
    if arg.is_positional() {
        return value;
    }
    let mut name = String::new();
    if let Some(short) = arg.get_short() {
        name.push_str(&format!("-{short}, "));
    }
    if let Some(long) = arg.get_long() {
        name.push_str(&format!("--{long}"));
    }
    if arg.get_action().takes_values() {
        name.push_str(&format!(" {value}"));
    }
    name
}

/// Help text made safe for Markdown outside code spans: `<FILE>` and `*` are
/// escaped so that they show as written.
#[cfg(test)]
fn markdown_text(text: &str) -> String {
    text.trim_end()
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                return part.to_string();
            }
            let mut escaped = String::with_capacity(part.len());
            for c in part.chars() {
                if matches!(c, '<' | '>' | '*') {
                    escaped.push('\\');
                }
                escaped.push(c);
            }
            escaped
        })
        .collect::<Vec<_>>()
        .join("`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_name_every_subcommand() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut out = Vec::new();
            completion(shell, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            for sub in [
                "extract",
                "inspect",
                "pull",
                "inject",
                "verify",
                "completion",
            ] {
                assert!(text.contains(sub), "{shell}: {sub} missing");
            }
        }
    }

    #[test]
    fn man_pages_one_per_command() {
        let dir = tempfile::tempdir().unwrap();
        let pages = man_pages_to(dir.path()).unwrap();
        let names: Vec<_> = pages
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert!(names.contains(&"mcd-inject.1".to_string()), "{names:?}");
        assert!(
            names.contains(&"mcd-inject-inject.1".to_string()),
            "{names:?}"
        );
        let inject = std::fs::read_to_string(dir.path().join("mcd-inject-inject.1")).unwrap();
        assert!(inject.contains("bootimage"));
    }

    /// `path` must hold what `want` makes of it; `MCD_INJECT_BLESS=1` rewrites it.
    fn check_generated(path: &Path, want: impl Fn(&str) -> String, from: &str) {
        let have = std::fs::read_to_string(path).unwrap_or_default();
        let want = want(&have);
        if std::env::var_os("MCD_INJECT_BLESS").is_some_and(|v| v == "1") {
            std::fs::write(path, &want).unwrap();
            return;
        }
        if have != want {
            let line = have
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| have.lines().count().min(want.lines().count()));
            panic!(
                "{} is stale (first difference at line {}): it is not what {from} \
                 renders. Review the change, then rerun with \
                 MCD_INJECT_BLESS=1 cargo test --lib clidoc",
                path.display(),
                line + 1
            );
        }
    }

    /// docs/cli.md is the output of [`markdown`].
    #[test]
    fn cli_reference_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
        check_generated(&path, |_| markdown(), "the clap definitions");
    }

    /// The table of docs/inject.md, between its markers, is [`bootimage_table`].
    #[test]
    fn bootimage_table_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/inject.md");
        let splice = |have: &str| {
            let (Some(a), Some(b)) = (have.find(TABLE_BEGIN), have.find(TABLE_END)) else {
                panic!(
                    "{} lacks the markers of the generated table",
                    path.display()
                );
            };
            let a = a + TABLE_BEGIN.len();
            format!("{}{}{}", &have[..a], bootimage_table(), &have[b..])
        };
        check_generated(&path, splice, "the bootimage table of src/choose/target.rs");
    }
}
