//! Read-only file trees that hold an image: a directory, or a tar archive read in place.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use crate::io::read_at_most;

/// A tree of named files (an OCI layout, a `docker save` archive).
pub trait FileTree {
    /// Opens a member by its relative path; `None` when it does not exist.
    fn open(&self, path: &str) -> Result<Option<Member<'_>>>;
    /// Names the tree in messages.
    fn describe(&self) -> String;
}

/// An opened member and its size.
pub struct Member<'a> {
    pub reader: Box<dyn Read + 'a>,
    pub size: u64,
}

impl FileTree for Box<dyn FileTree> {
    fn open(&self, path: &str) -> Result<Option<Member<'_>>> {
        self.as_ref().open(path)
    }
    fn describe(&self) -> String {
        self.as_ref().describe()
    }
}

/// Reads a whole member up to `limit` bytes; larger members are refused.
pub fn read_member(tree: &dyn FileTree, path: &str, limit: u64) -> Result<Option<Vec<u8>>> {
    let Some(mut m) = tree.open(path)? else {
        return Ok(None);
    };
    if m.size > limit {
        bail!(
            "{}: {path} is {} bytes, more than the {limit} allowed for metadata",
            tree.describe(),
            m.size
        );
    }
    read_at_most(&mut m.reader, limit)
        .with_context(|| format!("{}: reading {path}", tree.describe()))?
        .map(Some)
        .ok_or_else(|| {
            anyhow!(
                "{}: {path} grew past {limit} bytes while read",
                tree.describe()
            )
        })
}

/// A directory on disk.
pub struct DirTree {
    root: PathBuf,
}

impl DirTree {
    pub fn new(root: &Path) -> Result<Self> {
        let meta = std::fs::metadata(root)
            .with_context(|| format!("opening image directory {}", root.display()))?;
        if !meta.is_dir() {
            bail!("{} is not a directory", root.display());
        }
        Ok(DirTree {
            root: root.to_path_buf(),
        })
    }
}

fn safe_relative(path: &str) -> bool {
    !path.starts_with('/') && path.split('/').all(|c| !c.is_empty() && c != "..")
}

impl FileTree for DirTree {
    fn open(&self, path: &str) -> Result<Option<Member<'_>>> {
        if !safe_relative(path) {
            bail!("{}: refusing path {path:?}", self.describe());
        }
        let full = self.root.join(path);
        // A blob that is a FIFO, a device or a link to one would never end (or block
        // in open): only regular files are read.
        match std::fs::metadata(&full) {
            Ok(meta) if !meta.is_file() => {
                bail!("{}: {path} is not a regular file", self.describe())
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("opening {}", full.display())),
        }
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&full)
            .with_context(|| format!("opening {}", full.display()))?;
        let meta = f
            .metadata()
            .with_context(|| format!("reading {}", full.display()))?;
        if !meta.is_file() {
            bail!("{}: {path} is not a regular file", self.describe());
        }
        let size = meta.len();
        // Never more than the size seen at open time (plus one byte, so that a file
        // that grows is noticed as a size mismatch rather than read without end).
        Ok(Some(Member {
            reader: Box::new(f.take(size + 1)),
            size,
        }))
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }
}

#[derive(Clone, Debug)]
enum ArchiveEntry {
    File { offset: u64, size: u64 },
    Symlink(String),
}

/// A tar archive, indexed once and then read in place with positioned reads.
pub struct ArchiveTree {
    path: PathBuf,
    file: File,
    entries: HashMap<String, ArchiveEntry>,
}

/// Tar member names as they appear in archives: `./a/b` and `a/b` are the same.
fn archive_name(raw: &str) -> String {
    let mut s = raw;
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    s.trim_end_matches('/').to_string()
}

impl ArchiveTree {
    pub fn open(path: &Path) -> Result<Self> {
        let describe = || format!("archive {}", path.display());
        let meta = std::fs::metadata(path).with_context(|| format!("opening {}", describe()))?;
        if !meta.is_file() {
            bail!("{} is not a regular file", describe());
        }
        let file = File::open(path).with_context(|| format!("opening {}", describe()))?;
        let len = file.metadata()?.len();
        let mut magic = [0u8; 4];
        let n = file.read_at(&mut magic, 0).unwrap_or(0);
        if n >= 2 && magic[..2] == [0x1f, 0x8b] || n == 4 && magic == [0x28, 0xb5, 0x2f, 0xfd] {
            bail!(
                "{} is compressed; an image archive must be a plain tar",
                describe()
            );
        }
        let mut entries = HashMap::new();
        let mut archive = tar::Archive::new(&file);
        let iter = archive
            .entries_with_seek()
            .with_context(|| format!("reading {}", describe()))?;
        for entry in iter {
            let entry = entry.with_context(|| format!("reading {}: corrupt tar", describe()))?;
            let name = archive_name(&String::from_utf8_lossy(&entry.path_bytes()));
            let kind = entry.header().entry_type();
            if kind.is_file() {
                let offset = entry.raw_file_position();
                let size = entry.size();
                if offset.checked_add(size).is_none_or(|end| end > len) {
                    bail!(
                        "{} is truncated: member {name} ends past the end",
                        describe()
                    );
                }
                entries.insert(name, ArchiveEntry::File { offset, size });
            } else if kind.is_symlink() || kind.is_hard_link() {
                let target = entry
                    .link_name_bytes()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                let target = if kind.is_symlink() {
                    join_relative(&name, &target)
                } else {
                    archive_name(&target)
                };
                entries.insert(name, ArchiveEntry::Symlink(target));
            }
        }
        Ok(ArchiveTree {
            path: path.to_path_buf(),
            file,
            entries,
        })
    }

    fn lookup(&self, path: &str) -> Result<Option<(u64, u64)>> {
        let mut name = path.to_string();
        for _ in 0..16 {
            match self.entries.get(&name) {
                None => return Ok(None),
                Some(ArchiveEntry::File { offset, size }) => return Ok(Some((*offset, *size))),
                Some(ArchiveEntry::Symlink(t)) => name = t.clone(),
            }
        }
        bail!("{}: too many links resolving {path}", self.describe())
    }
}

/// Resolves a symlink target written in member `name` to an archive name.
fn join_relative(name: &str, target: &str) -> String {
    let mut parts: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        name.split('/').collect::<Vec<_>>()
    };
    parts.pop();
    for c in target.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    parts.join("/")
}

/// Reads `len` bytes at `offset` of a file without moving a shared cursor.
struct RangeReader<'a> {
    file: &'a File,
    pos: u64,
    end: u64,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len().min((self.end - self.pos) as usize);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "archive member is truncated",
            ));
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl FileTree for ArchiveTree {
    fn open(&self, path: &str) -> Result<Option<Member<'_>>> {
        Ok(self
            .lookup(&archive_name(path))?
            .map(|(offset, size)| Member {
                reader: Box::new(RangeReader {
                    file: &self.file,
                    pos: offset,
                    end: offset + size,
                }),
                size,
            }))
    }

    fn describe(&self) -> String {
        format!("archive {}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_links_resolve_inside_the_archive() {
        assert_eq!(join_relative("abc/layer.tar", "../abc.tar"), "abc.tar");
        assert_eq!(join_relative("a/b", "/../../x"), "x");
        assert_eq!(archive_name("./././blobs/sha256/"), "blobs/sha256");
    }
}
