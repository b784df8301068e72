//! Where results go: a file written atomically, stdout, or an existing character device
//! or FIFO written into (never replaced).

use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use tempfile::NamedTempFile;

use crate::io::tempfiles;

/// An output named on the command line; `-` is stdout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Standard output (`-`).
    Stdout,
    /// A file, written through a temp file beside it and renamed into place.
    File(PathBuf),
}

impl FromStr for Output {
    type Err = String;
    /// `-` is stdout; an empty name names no file.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "" => Err("an empty path names no file: give a file name, or - for stdout".into()),
            "-" => Ok(Output::Stdout),
            _ => Ok(Output::File(PathBuf::from(s))),
        }
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

/// stdout was closed by its reader (a broken pipe): the run ends quietly, as `| head`
/// expects.
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed by its reader")]
pub(crate) struct StdoutClosed;

/// The error for a failed write to stdout: [`StdoutClosed`] for a broken pipe, else the
/// error itself, named.
pub(crate) fn stdout_error(e: io::Error) -> anyhow::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        anyhow::Error::new(StdoutClosed)
    } else {
        anyhow::Error::new(e).context("writing to stdout")
    }
}

/// The error for a failed write of an output itself (the config, the extracted file) to
/// stdout: the reader going away leaves it incomplete, which is a failure.
fn product_stdout_error(e: io::Error) -> anyhow::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        anyhow::anyhow!(
            "writing to stdout: its reader went away before the whole output was written"
        )
    } else {
        anyhow::Error::new(e).context("writing to stdout")
    }
}

/// Writes `text` to stdout and flushes it; never panics.
pub(crate) fn print(text: &str) -> Result<()> {
    let mut lock = io::stdout().lock();
    lock.write_all(text.as_bytes())
        .and_then(|()| lock.flush())
        .map_err(stdout_error)
}

/// What an output names, once looked at.
enum Target {
    Stdout,
    /// An existing character device or FIFO: written into, never replaced.
    Stream(PathBuf),
    /// A regular file (existing or not; a symlink is followed to it): replaced
    /// atomically.
    File(PathBuf),
}

/// Copies a spooled file to `out`, telling read errors from write errors.
fn copy_out(
    from: &mut fs::File,
    out: &mut dyn Write,
    write_error: &dyn Fn(io::Error) -> anyhow::Error,
) -> Result<()> {
    let mut buf = vec![0; crate::io::WIDE_BUF];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("reading the spooled output"),
        };
        out.write_all(&buf[..n]).map_err(write_error)?;
    }
    out.flush().map_err(write_error)
}

impl Output {
    fn target(&self) -> Result<Target> {
        let path = match self {
            Output::Stdout => return Ok(Target::Stdout),
            Output::File(p) => p,
        };
        match fs::metadata(path) {
            Ok(m) => {
                let t = m.file_type();
                if t.is_file() {
                    let link = fs::symlink_metadata(path).is_ok_and(|l| l.file_type().is_symlink());
                    if link {
                        let real = fs::canonicalize(path)
                            .with_context(|| format!("resolving output {}", path.display()))?;
                        return Ok(Target::File(real));
                    }
                    Ok(Target::File(path.clone()))
                } else if t.is_char_device() || t.is_fifo() {
                    Ok(Target::Stream(path.clone()))
                } else if t.is_dir() {
                    bail!("output {} is a directory", path.display())
                } else {
                    let what = if t.is_block_device() {
                        "a block device"
                    } else if t.is_socket() {
                        "a socket"
                    } else {
                        "not a regular file"
                    };
                    bail!(
                        "output {} is {what}: refused (name a regular file, a character \
                         device, a FIFO, or - for stdout)",
                        path.display()
                    )
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if fs::symlink_metadata(path).is_ok() {
                    bail!(
                        "output {} is a symbolic link to nothing: refused",
                        path.display()
                    );
                }
                Ok(Target::File(path.clone()))
            }
            Err(e) => Err(e).with_context(|| format!("output {}", path.display())),
        }
    }

    /// The directory in which temp files for this output are made: a file's own
    /// directory, so that committing is a rename on one filesystem; the temp directory
    /// for stdout, a character device or a FIFO.
    pub fn spool_dir(&self) -> Result<PathBuf> {
        match self.target()? {
            Target::Stdout | Target::Stream(_) => Ok(std::env::temp_dir()),
            Target::File(p) => {
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                if !dir.is_dir() {
                    bail!("output directory {} does not exist", dir.display());
                }
                Ok(dir)
            }
        }
    }

    /// A temp file to fill, beside the output (`.mcd-inject-PID-NS-*`, removed when the
    /// run is interrupted).
    pub fn temp_file(&self) -> Result<NamedTempFile> {
        let dir = self.spool_dir()?;
        tempfiles::file_in(&dir)
            .with_context(|| format!("creating a temp file in {}", dir.display()))
    }

    /// Makes a complete temp file the output: renamed into place, or copied to stdout,
    /// a character device or a FIFO. On stdout a reader that goes away before the end
    /// is an error: the output is incomplete.
    pub fn commit(&self, mut tmp: NamedTempFile, mode: u32) -> Result<()> {
        match self.target()? {
            Target::Stdout => {
                let mut f = tmp.reopen().context("reopening the spooled output")?;
                let mut lock = io::stdout().lock();
                copy_out(&mut f, &mut lock, &product_stdout_error)
            }
            Target::Stream(path) => {
                let mut f = tmp.reopen().context("reopening the spooled output")?;
                let mut out = open_stream(&path)?;
                copy_out(&mut f, &mut out, &|e| {
                    anyhow::Error::new(e).context(format!("writing {}", path.display()))
                })
            }
            Target::File(path) => {
                tmp.as_file_mut().flush()?;
                tmp.as_file()
                    .set_permissions(fs::Permissions::from_mode(mode))
                    .with_context(|| format!("setting the mode of {}", path.display()))?;
                tmp.as_file()
                    .sync_all()
                    .with_context(|| format!("syncing {}", path.display()))?;
                tmp.persist(&path)
                    .map_err(|e| e.error)
                    .with_context(|| format!("writing {}", path.display()))?;
                Ok(())
            }
        }
    }

    /// Writes `bytes` as the whole output, atomically for a file.
    pub fn write_all(&self, bytes: &[u8], mode: u32) -> Result<()> {
        match self.target()? {
            Target::Stdout => {
                let mut lock = io::stdout().lock();
                lock.write_all(bytes)
                    .and_then(|()| lock.flush())
                    .map_err(product_stdout_error)
            }
            Target::Stream(path) => {
                let mut out = open_stream(&path)?;
                out.write_all(bytes)
                    .and_then(|()| out.flush())
                    .with_context(|| format!("writing {}", path.display()))
            }
            Target::File(_) => {
                let mut tmp = self.temp_file()?;
                tmp.write_all(bytes)
                    .with_context(|| format!("writing {self}"))?;
                self.commit(tmp, mode)
            }
        }
    }

    /// The file path, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Output::File(p) => Some(p),
            Output::Stdout => None,
        }
    }

    /// Refuses an output that would overwrite part of the input: a file inside (or
    /// equal to) one of `inputs` (an image layout directory, an archive, the cache).
    pub fn refuse_overlap(&self, inputs: &[&Path], flag: &str) -> Result<()> {
        let Output::File(path) = self else {
            return Ok(());
        };
        let Some(out) = canonical_output(path) else {
            return Ok(());
        };
        let out_meta = fs::metadata(&out).ok();
        for input in inputs {
            let Ok(input) = fs::canonicalize(input) else {
                continue;
            };
            let same_file = match (&out_meta, fs::metadata(&input)) {
                (Some(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            };
            if same_file || out.starts_with(&input) {
                bail!(
                    "{flag} {}: refused, it is part of the input image ({})",
                    path.display(),
                    input.display()
                );
            }
        }
        Ok(())
    }
}

/// The output path with its directory resolved (symlinks followed), and the file name
/// resolved too when it is a symlink.
fn canonical_output(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = fs::canonicalize(path) {
        return Some(p);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(fs::canonicalize(dir).ok()?.join(path.file_name()?))
}

/// Opens an existing character device or FIFO for writing (a FIFO waits for its reader).
fn open_stream(path: &Path) -> Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("opening {} for writing", path.display()))
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
