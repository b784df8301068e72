//! The bootimage a file holds, read only as far as the name it carries: stream metadata
//! (the installer's `coreos print-stream-json`, its older `rhcos.json`, or the cluster's
//! `coreos-bootimages` ConfigMap), a disk image (qcow2, raw, a fixed VHD, a VMDK, or a
//! tar archive of `disk.raw`; either plain, gzip or xz), an OVA, or a live ISO. The name
//! found (a build ID, or an ISO's volume ID) is what `--bootimage` would be given;
//! [`crate::choose::target::bootimage_name`] reads it.
//!
//! Each reader is bounded: stream metadata and BLS entries are read whole up to a small
//! limit, a disk image only through its partition table and its `boot` partition, a
//! compressed one decompressed (into a sparse spool file) only as far as those reads
//! reach, a VMDK one grain at a time, a tar archive's headers and the parts of its
//! member that those reads reach, an ISO only its primary volume descriptor.

mod disk;
mod iso;
mod ova;
mod qcow2;
mod spool;
mod stream;
mod tar;
mod vhd;
mod vmdk;

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::choose::target::{bootimage_name, NameError, Named, NamedFile};

/// The kind of file a bootimage was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    /// Stream metadata JSON (or the ConfigMap that carries it).
    StreamMetadata,
    /// A qcow2 disk image.
    Qcow2,
    /// A raw disk image.
    RawDisk,
    /// A live ISO.
    LiveIso,
    /// An OVA: a tar archive of an OVF descriptor and a VMDK (vSphere).
    Ova,
    /// A VMDK sparse extent (streamOptimized or monolithicSparse).
    Vmdk,
    /// A tar archive holding `disk.raw` (GCP's image archive, `.tar.gz`).
    DiskArchive,
    /// A fixed VHD: a raw disk with a footer (Azure).
    FixedVhd,
}

impl FileKind {
    /// How the report names it.
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::StreamMetadata => "stream metadata",
            FileKind::Qcow2 => "qcow2 disk image",
            FileKind::RawDisk => "raw disk image",
            FileKind::LiveIso => "live ISO",
            FileKind::Ova => "OVA",
            FileKind::Vmdk => "VMDK disk image",
            FileKind::DiskArchive => "tar archive",
            FileKind::FixedVhd => "fixed VHD",
        }
    }
}

/// A compression a disk image came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// gzip (`.gz`), as RHCOS ships its images.
    Gzip,
    /// xz (`.xz`), as Fedora CoreOS ships its images.
    Xz,
}

/// What a bootimage file says of itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Found {
    /// What the file is.
    pub kind: FileKind,
    /// The compression it came in, if any.
    pub compression: Option<Compression>,
    /// The name it carries: a build ID (`42.80.20191002.0`) or an ISO's volume ID.
    pub name: String,
    /// Where in the file the name was read (`loader/entries/ostree-1-rhcos.conf`,
    /// `architectures.x86_64.artifacts`, the volume ID).
    pub from: String,
}

/// Why a bootimage file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file cannot be opened or read.
    #[error("--bootimage-file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// None of the kinds read.
    #[error(
        "--bootimage-file {path}: not a bootimage file: expected stream metadata JSON (as \
         `openshift-install coreos print-stream-json` prints it, or the coreos-bootimages \
         ConfigMap), a qcow2 or raw disk image (plain, .gz or .xz), a live ISO, an OVA or \
         VMDK, a GCP image archive (.tar.gz of disk.raw) or a fixed VHD (plain or .gz); or \
         give --bootimage with its version or build ID"
    )]
    Unknown {
        /// The file.
        path: PathBuf,
    },
    /// The name the file holds names no bootimage of the table.
    #[error("--bootimage-file {path}: {what} {within} of this {kind}, which is not a bootimage it knows: {source}")]
    Name {
        /// The file.
        path: PathBuf,
        /// What was read (`the build ID`, `the volume ID`).
        what: &'static str,
        /// Where in the file.
        within: String,
        /// What it was read as.
        kind: String,
        /// Why the name names nothing.
        source: Box<NameError>,
    },
    /// A file of a known kind that does not hold what a bootimage of that kind holds.
    #[error("--bootimage-file {path}: {kind}: {why}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What it was read as (`qcow2 disk image`, `gzip-compressed raw disk image`).
        kind: String,
        /// What is wrong, and where.
        why: String,
    },
}

/// Why one reader stopped, before the path and kind are added.
#[derive(Debug)]
pub(crate) enum Bad {
    /// The file ended, or reading it failed.
    Io(io::Error),
    /// Its contents are not what they must be.
    Content(String),
}

impl From<io::Error> for Bad {
    fn from(e: io::Error) -> Bad {
        Bad::Io(e)
    }
}

pub(crate) fn bad<T>(why: impl Into<String>) -> Result<T, Bad> {
    Err(Bad::Content(why.into()))
}

/// Random access to the bytes of a disk: a file, a decompressed stream, a qcow2 image.
pub(crate) trait ReadAt {
    /// Fill `buf` from `offset`; an error past the end.
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// The disk's size, when known without reading it all.
    fn size(&self) -> Option<u64>;
}

impl<T: ReadAt + ?Sized> ReadAt for Box<T> {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        (**self).read_at(offset, buf)
    }
    fn size(&self) -> Option<u64> {
        (**self).size()
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &mut T {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        (**self).read_at(offset, buf)
    }
    fn size(&self) -> Option<u64> {
        (**self).size()
    }
}

impl ReadAt for File {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.seek(SeekFrom::Start(offset))?;
        self.read_exact(buf)
    }
    fn size(&self) -> Option<u64> {
        self.metadata().ok().map(|m| m.len())
    }
}

/// A name as a report may quote it: a build ID, a volume ID. Anything else read from a
/// file is described, never quoted.
pub(crate) fn quotable(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(&c))
}

/// The bootimage `path` holds; `arch` is the OCI architecture (`amd64`), which picks the
/// entry of stream metadata.
pub fn read_file(path: &Path, arch: &str) -> Result<Found, FileError> {
    let io_err = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io_err)?;
    if file.metadata().map_err(io_err)?.is_dir() {
        return Err(io_err(io::Error::other("is a directory")));
    }
    let mut head = vec![0u8; 4096];
    let n = read_up_to(&mut file, &mut head).map_err(io_err)?;
    head.truncate(n);
    let damaged = |kind: String, e: Bad| match e {
        Bad::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => FileError::Damaged {
            path: path.to_path_buf(),
            kind,
            why: "the file ends early (truncated?)".into(),
        },
        Bad::Io(e)
            if matches!(
                e.kind(),
                io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput
            ) =>
        {
            FileError::Damaged {
                path: path.to_path_buf(),
                kind,
                why: e.to_string(),
            }
        }
        Bad::Io(source) => FileError::Io {
            path: path.to_path_buf(),
            source,
        },
        Bad::Content(why) => FileError::Damaged {
            path: path.to_path_buf(),
            kind,
            why,
        },
    };
    let compression = if head.starts_with(&[0x1f, 0x8b]) {
        Some(Compression::Gzip)
    } else if head.starts_with(b"\xfd7zXZ\0") {
        Some(Compression::Xz)
    } else {
        None
    };
    let (kind, found) = if let Some(c) = compression {
        let mut spooled = spool::Spool::new(file, c).map_err(io_err)?;
        let mut inner = [0u8; 512];
        let kind = match spooled.read_at(0, &mut inner[..8]) {
            Ok(()) if inner[..4] == *qcow2::MAGIC => FileKind::Qcow2,
            // A stream shorter than a tar header holds no tar archive.
            Ok(()) if spooled.read_at(0, &mut inner).is_ok() && tar::is_header(&inner) => {
                FileKind::DiskArchive
            }
            Ok(()) => FileKind::RawDisk,
            Err(e) => return Err(damaged(format!("{} data", compressed_name(c)), Bad::Io(e))),
        };
        (kind, boot_entry(kind, Box::new(spooled)))
    } else if iso::is_iso(&mut file).map_err(io_err)? {
        (FileKind::LiveIso, iso::volume_id(&mut file))
    } else if head.starts_with(qcow2::MAGIC) {
        (FileKind::Qcow2, boot_entry(FileKind::Qcow2, Box::new(file)))
    } else if head.starts_with(vmdk::MAGIC) {
        (FileKind::Vmdk, boot_entry(FileKind::Vmdk, Box::new(file)))
    } else if tar::is_header(&head) {
        match ova::is_ova(&mut file) {
            Ok(true) => (FileKind::Ova, ova::read(file)),
            Ok(false) => (
                FileKind::DiskArchive,
                boot_entry(FileKind::DiskArchive, Box::new(file)),
            ),
            Err(e) => return Err(damaged(kind_label(FileKind::DiskArchive, None), e)),
        }
    } else if vhd::has_footer(&mut file).map_err(io_err)? {
        (
            FileKind::FixedVhd,
            boot_entry(FileKind::FixedVhd, Box::new(file)),
        )
    } else if disk::has_gpt(&mut file).map_err(io_err)? {
        (
            FileKind::RawDisk,
            boot_entry(FileKind::RawDisk, Box::new(file)),
        )
    } else if stream::looks_like(&head) {
        (FileKind::StreamMetadata, stream::read(&mut file, arch))
    } else {
        return Err(FileError::Unknown {
            path: path.to_path_buf(),
        });
    };
    let (name, from) = found.map_err(|e| damaged(kind_label(kind, compression), e))?;
    Ok(Found {
        kind,
        compression,
        name,
        from,
    })
}

/// The build ID in the BLS entries of a disk image, through its qcow2, VMDK, VHD or tar
/// layer if any.
fn boot_entry(kind: FileKind, disk: Box<dyn ReadAt>) -> Result<(String, String), Bad> {
    match kind {
        FileKind::Qcow2 => {
            qcow2::Qcow2::open(disk).and_then(|q| disk::read_boot_entry(Box::new(q)))
        }
        FileKind::Vmdk => vmdk::Vmdk::open(disk).and_then(|v| disk::read_boot_entry(Box::new(v))),
        FileKind::FixedVhd => vhd::open(disk).and_then(|d| disk::read_boot_entry(Box::new(d))),
        FileKind::DiskArchive => {
            let mut disk = disk;
            let Some(raw) = tar::members(&mut disk, &|n| n == tar::DISK_RAW)?
                .into_iter()
                .find(|m| m.name == tar::DISK_RAW)
            else {
                return bad(
                    "no disk.raw among its tar members (a GCP image archive holds its disk there)",
                );
            };
            let (id, entry) = disk::read_boot_entry(Box::new(tar::MemberFile::new(disk, raw)))?;
            Ok((id, format!("{entry} in {}", tar::DISK_RAW)))
        }
        _ => disk::read_boot_entry(disk),
    }
}

/// The bootimage `path` holds, named as `--bootimage` would name it, and with the file
/// it came from.
pub fn read_named(path: &Path, arch: &str) -> Result<Named, FileError> {
    named(path, read_file(path, arch)?)
}

/// The bootimage whose AWS image (AMI) is `ami`, as the installer's `rhcos.json` or
/// stream metadata at `path` maps it (in `region`, when given).
pub fn read_ami(
    path: &Path,
    arch: &str,
    ami: &str,
    region: Option<&str>,
) -> Result<Named, FileError> {
    let io_err = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io_err)?;
    let mut head = vec![0u8; 4096];
    let n = read_up_to(&mut file, &mut head).map_err(io_err)?;
    head.truncate(n);
    let kind = FileKind::StreamMetadata;
    if !stream::looks_like(&head) {
        return Err(FileError::Damaged {
            path: path.to_path_buf(),
            kind: kind.describe().to_string(),
            why: format!(
                "not JSON nor YAML: {ami} is looked up in the installer's rhcos.json or stream \
                 metadata (`openshift-install coreos print-stream-json`)"
            ),
        });
    }
    let (name, from) = stream::read_ami(&mut file, arch, ami, region).map_err(|e| match e {
        Bad::Io(source) => FileError::Io {
            path: path.to_path_buf(),
            source,
        },
        Bad::Content(why) => FileError::Damaged {
            path: path.to_path_buf(),
            kind: kind.describe().to_string(),
            why,
        },
    })?;
    let found = Found {
        kind,
        compression: None,
        name,
        from: format!("{from} (AMI {ami})"),
    };
    named(path, found)
}

/// A name found in `path`, read as `--bootimage` reads one.
fn named(path: &Path, found: Found) -> Result<Named, FileError> {
    let kind = found.describe_kind();
    match bootimage_name(&found.name) {
        Ok(named) => Ok(Named {
            file: Some(NamedFile {
                path: path.display().to_string(),
                kind,
                within: found.from,
            }),
            ..named
        }),
        Err(source) => Err(FileError::Name {
            path: path.to_path_buf(),
            what: match found.kind {
                FileKind::LiveIso => "the volume ID",
                _ => "the build",
            },
            within: found.from,
            kind,
            source: Box::new(source),
        }),
    }
}

impl Found {
    /// `qcow2 disk image`, `gzip-compressed raw disk image`.
    pub fn describe_kind(&self) -> String {
        kind_label(self.kind, self.compression)
    }
}

fn kind_label(kind: FileKind, compression: Option<Compression>) -> String {
    match compression {
        Some(c) => format!("{}-compressed {}", compressed_name(c), kind.describe()),
        None => kind.describe().to_string(),
    }
}

fn compressed_name(c: Compression) -> &'static str {
    match c {
        Compression::Gzip => "gzip",
        Compression::Xz => "xz",
    }
}

/// Reads until `buf` is full or the file ends; the count read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
