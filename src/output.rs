//! Where results go: a file written atomically, or stdout.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use tempfile::NamedTempFile;

/// An output named on the command line; `-` is stdout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    Stdout,
    File(PathBuf),
}

impl FromStr for Output {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(if s == "-" {
            Output::Stdout
        } else {
            Output::File(PathBuf::from(s))
        })
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Output::Stdout => write!(f, "-"),
            Output::File(p) => write!(f, "{}", p.display()),
        }
    }
}

impl Output {
    /// The directory in which temp files for this output are made: the output's own
    /// directory, so that committing is a rename on one filesystem.
    pub fn spool_dir(&self) -> Result<PathBuf> {
        match self {
            Output::Stdout => Ok(std::env::temp_dir()),
            Output::File(p) => {
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                if !dir.is_dir() {
                    bail!("output directory {} does not exist", dir.display());
                }
                if p.is_dir() {
                    bail!("output {} is a directory", p.display());
                }
                Ok(dir)
            }
        }
    }

    /// A temp file to fill, beside the output.
    pub fn temp_file(&self) -> Result<NamedTempFile> {
        let dir = self.spool_dir()?;
        NamedTempFile::new_in(&dir)
            .with_context(|| format!("creating a temp file in {}", dir.display()))
    }

    /// Makes a complete temp file the output: renamed into place, or copied to stdout.
    pub fn commit(&self, mut tmp: NamedTempFile, mode: u32) -> Result<()> {
        match self {
            Output::Stdout => {
                let mut f = tmp.reopen().context("reopening the spooled output")?;
                let stdout = io::stdout();
                let mut lock = stdout.lock();
                io::copy(&mut f, &mut lock).context("writing to stdout")?;
                lock.flush().context("writing to stdout")?;
                Ok(())
            }
            Output::File(path) => {
                tmp.as_file_mut().flush()?;
                tmp.as_file()
                    .set_permissions(fs::Permissions::from_mode(mode))
                    .with_context(|| format!("setting the mode of {}", path.display()))?;
                tmp.as_file()
                    .sync_all()
                    .with_context(|| format!("syncing {}", path.display()))?;
                tmp.persist(path)
                    .with_context(|| format!("writing {}", path.display()))?;
                Ok(())
            }
        }
    }

    /// Writes `bytes` as the whole output, atomically.
    pub fn write_all(&self, bytes: &[u8], mode: u32) -> Result<()> {
        if *self == Output::Stdout {
            let mut lock = io::stdout().lock();
            lock.write_all(bytes).context("writing to stdout")?;
            return lock.flush().context("writing to stdout");
        }
        let mut tmp = self.temp_file()?;
        tmp.write_all(bytes)
            .with_context(|| format!("writing {self}"))?;
        self.commit(tmp, mode)
    }

    /// The file path, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Output::File(p) => Some(p),
            Output::Stdout => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_is_atomic_and_sets_mode() {
        let dir = tempfile::tempdir().unwrap();
        let out = Output::File(dir.path().join("x"));
        out.write_all(b"abc", 0o640).unwrap();
        let meta = fs::metadata(dir.path().join("x")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o640);
        assert_eq!(fs::read(dir.path().join("x")).unwrap(), b"abc");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn missing_directory_is_refused() {
        let out: Output = "/nonexistent-dir/x".parse().unwrap();
        assert!(out.spool_dir().is_err());
    }
}
