//! Shell completion scripts, man pages and the Markdown reference (docs/cli.md),
//! generated from the clap definitions so that they always match the binary.

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
    out.write_all(&buf).context("writing the completion script")
}

/// The man page of `mcd-inject` itself (its subcommands listed), as roff.
pub fn man_page() -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command().disable_help_subcommand(true))
        .render(&mut buf)
        .context("rendering the man page")?;
    Ok(buf)
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
fn page(cmd: clap::Command) -> Result<(String, Vec<u8>)> {
    let man = clap_mangen::Man::new(cmd);
    let mut roff = Vec::new();
    man.render(&mut roff).context("rendering a man page")?;
    Ok((man.get_filename(), roff))
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
    out
}

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
    if !args.is_empty() {
        out.push('\n');
    }
    for arg in args {
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

    /// docs/cli.md is the output of [`markdown`]; `MCD_INJECT_BLESS=1` rewrites it.
    #[test]
    fn cli_reference_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
        let want = markdown();
        if std::env::var_os("MCD_INJECT_BLESS").is_some_and(|v| v == "1") {
            std::fs::write(&path, &want).unwrap();
            return;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != want {
            let line = have
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| have.lines().count().min(want.lines().count()));
            panic!(
                "{} is stale (first difference at line {}): it is not what the clap \
                 definitions render. Review the change, then rerun with \
                 MCD_INJECT_BLESS=1 cargo test --lib clidoc",
                path.display(),
                line + 1
            );
        }
    }
}
