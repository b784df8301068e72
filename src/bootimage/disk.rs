//! A CoreOS disk image's build ID: its GPT (the `gpt` crate), the partition named `boot`,
//! and in that ext4 file system (the `ext4-view` crate) the ostree BLS entries
//! `loader/entries/*.conf`, whose `title` line names the build:
//! `title Red Hat Enterprise Linux CoreOS 42.80.20191002.0 (Ootpa) (ostree)`.
//!
//! Only the first MiB (the partition table) and the blocks of `boot` that the file
//! system reader asks for are read.

use std::io::{self, Cursor};

use super::{bad, quotable, Bad, ReadAt};

/// The primary GPT lies in the first 34 sectors of 512 bytes, or 6 of 4096; the backup
/// at the end of the disk is not read (for a compressed image it would mean
/// decompressing all of it).
const GPT_WINDOW: u64 = 1 << 20;

/// A BLS entry is a few hundred bytes.
const MAX_ENTRY: u64 = 64 << 10;

/// At most this many entries are read.
const MAX_ENTRIES: usize = 64;

/// Whether a GPT header signature is where a 512- or 4096-byte-sector disk has it.
pub(super) fn has_gpt(disk: &mut impl ReadAt) -> io::Result<bool> {
    for at in [512, 4096] {
        // A disk too small to hold the header has none; a read past the end of the file
        // holding a larger disk (a truncated qcow2) is an error.
        if disk.size().is_some_and(|size| size < at + 8) {
            return Ok(false);
        }
        let mut sig = [0u8; 8];
        disk.read_at(at, &mut sig)?;
        if &sig == b"EFI PART" {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The build ID the BLS entries of the disk's `boot` partition name, and the entry.
pub(super) fn read_boot_entry(mut disk: Box<dyn ReadAt>) -> Result<(String, String), Bad> {
    if !has_gpt(&mut disk)? {
        return bad("no GUID partition table (a CoreOS disk image has one)");
    }
    let window = disk.size().map_or(GPT_WINDOW, |s| s.min(GPT_WINDOW));
    let mut head = vec![0u8; window as usize];
    disk.read_at(0, &mut head)?;
    let mut table = None;
    for lb in [
        gpt::disk::LogicalBlockSize::Lb512,
        gpt::disk::LogicalBlockSize::Lb4096,
    ] {
        let opened = gpt::GptConfig::new()
            .writable(false)
            .only_valid_headers(false)
            .logical_block_size(lb)
            .open_from_device(Cursor::new(head.as_slice().to_vec()));
        if let Ok(g) = opened {
            if g.primary_header().is_ok() {
                table = Some((lb, g.partitions().clone()));
                break;
            }
        }
    }
    let Some((lb, partitions)) = table else {
        return bad("its GUID partition table is damaged (bad header or entries checksum)");
    };
    let Some(boot) = partitions.values().find(|p| p.name == "boot") else {
        return bad(
            "no partition named boot in its GUID partition table (CoreOS keeps /boot there)",
        );
    };
    let start = boot
        .bytes_start(lb)
        .map_err(|_| Bad::Content("the boot partition's start overflows".into()))?;
    let len = boot
        .bytes_len(lb)
        .map_err(|_| Bad::Content("the boot partition's size overflows".into()))?;
    if let Some(size) = disk.size() {
        if start.saturating_add(len) > size {
            return bad(format!(
                "the boot partition ends at byte {}, past the disk's end at {size} (truncated?)",
                start + len
            ));
        }
    }
    let fs = ext4_view::Ext4::load(Box::new(Partition { disk, start, len })).map_err(|e| {
        fs_error(
            "the boot partition is not an ext4 file system CoreOS makes",
            &e,
        )
    })?;
    let entries = fs
        .read_dir("/loader/entries")
        .map_err(|e| fs_error("no loader/entries directory in the boot partition", &e))?;
    let mut found: Vec<(String, String)> = Vec::new();
    let mut names = Vec::new();
    for entry in entries.take(MAX_ENTRIES + 1) {
        let entry = entry.map_err(|e| fs_error("loader/entries cannot be read", &e))?;
        let name = entry.file_name().as_str().unwrap_or("").to_string();
        if name.ends_with(".conf") && quotable(&name) {
            names.push(name);
        }
    }
    if names.len() > MAX_ENTRIES {
        return bad(format!(
            "loader/entries holds more than {MAX_ENTRIES} entries"
        ));
    }
    names.sort();
    for name in names {
        let path = format!("/loader/entries/{name}");
        let meta = fs
            .metadata(path.as_str())
            .map_err(|e| fs_error(&format!("loader/entries/{name} cannot be read"), &e))?;
        if meta.len() > MAX_ENTRY {
            return bad(format!(
                "loader/entries/{name} is larger than a BLS entry ({} bytes)",
                meta.len()
            ));
        }
        let text = fs
            .read(path.as_str())
            .map_err(|e| fs_error(&format!("loader/entries/{name} cannot be read"), &e))?;
        let text = String::from_utf8_lossy(&text);
        let id = text
            .lines()
            .find_map(|l| l.strip_prefix("title "))
            .and_then(build_id_in_title);
        match id {
            Some(id) => found.push((id, format!("loader/entries/{name}"))),
            None => {
                return bad(format!(
                    "loader/entries/{name} has no title naming a build (as ostree writes them)"
                ))
            }
        }
    }
    found.dedup_by(|a, b| a.0 == b.0);
    match found.len() {
        0 => bad("loader/entries holds no *.conf entry (a CoreOS bootimage has one)"),
        1 => Ok(found.remove(0)),
        _ => bad(format!(
            "its BLS entries name {} builds ({}): the image has been updated since it was built; give --bootimage",
            found.len(),
            found.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// The build ID in a BLS title: the first word after the OS name that starts with a
/// digit (`42.80.20191002.0`, `410.84.202205191234-0`, `9.6.20250513-0`).
fn build_id_in_title(title: &str) -> Option<String> {
    title
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()) && w.contains('.') && quotable(w))
        .map(str::to_string)
}

fn fs_error(what: &str, e: &ext4_view::Ext4Error) -> Bad {
    match e {
        ext4_view::Ext4Error::Io(io) => match io.downcast_ref::<io::Error>() {
            Some(io) if io.kind() == io::ErrorKind::UnexpectedEof => {
                Bad::Io(io::ErrorKind::UnexpectedEof.into())
            }
            _ => Bad::Content(format!("{what}: {e}")),
        },
        _ => Bad::Content(format!("{what}: {e}")),
    }
}

/// The bytes of one partition, as the file system reader reads them.
struct Partition {
    disk: Box<dyn ReadAt>,
    start: u64,
    len: u64,
}

impl ext4_view::Ext4Read for Partition {
    fn read(
        &mut self,
        start_byte: u64,
        dst: &mut [u8],
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync + 'static>> {
        if start_byte
            .checked_add(dst.len() as u64)
            .is_none_or(|end| end > self.len)
        {
            return Err(Box::new(io::Error::new(
                io::ErrorKind::InvalidData,
                "its file system reaches past the end of the boot partition",
            )));
        }
        Ok(self.disk.read_at(self.start + start_byte, dst)?)
    }
}
