//! Shell completion scripts and man pages, generated from the clap definitions so
//! that they always match the binary that prints them.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

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
}
