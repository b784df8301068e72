//! A fixed VHD, as Azure takes its images: the raw disk, then a 512-byte footer
//! (Microsoft's Virtual Hard Disk Image Format Specification) whose cookie is
//! `conectix`, checked by its checksum. The footer is read only in a plain file: a
//! `.vhd.gz` is read as the raw disk it starts with, since its footer lies at the end of
//! the whole decompressed stream.
//!
//! Read by hand: it is one fixed 512-byte record.

use std::io;

use super::{bad, Bad, ReadAt};

const FOOTER: u64 = 512;

/// Whether the file ends with a VHD footer (of any disk type).
pub(super) fn has_footer(file: &mut impl ReadAt) -> io::Result<bool> {
    let Some(size) = file.size().filter(|&s| s >= FOOTER) else {
        return Ok(false);
    };
    let mut cookie = [0u8; 8];
    file.read_at(size - FOOTER, &mut cookie)?;
    Ok(&cookie == b"conectix")
}

/// The disk of a fixed VHD: its footer checked, the bytes before it.
pub(super) fn open<R: ReadAt>(mut file: R) -> Result<Disk<R>, Bad> {
    let size = file.size().unwrap_or(0);
    let mut f = [0u8; FOOTER as usize];
    file.read_at(size - FOOTER, &mut f)?;
    let be32 = |at: usize| u32::from_be_bytes(f[at..at + 4].try_into().expect("4 bytes"));
    let stored = be32(64);
    let sum = f
        .iter()
        .enumerate()
        .filter(|(i, _)| !(64..68).contains(i))
        .fold(0u32, |s, (_, &b)| s.wrapping_add(u32::from(b)));
    if !sum != stored {
        return bad("its footer's checksum does not match the footer (damaged)");
    }
    match be32(60) {
        2 => {}
        3 | 4 => {
            return bad(
                "a dynamic or differencing VHD, which is not read: convert it with qemu-img \
                 convert -O vpc -o subformat=fixed (or -O raw)",
            )
        }
        t => return bad(format!("disk type {t}, not a fixed VHD (2)")),
    }
    let current = u64::from_be_bytes(f[48..56].try_into().expect("8 bytes"));
    let len = size - FOOTER;
    if current > len {
        return bad(format!(
            "its footer says the disk is {current} bytes, but the file holds {len} before the footer (truncated?)"
        ));
    }
    Ok(Disk { file, len })
}

/// The bytes of the disk, before the footer.
pub(super) struct Disk<R> {
    file: R,
    len: u64,
}

impl<R: ReadAt> ReadAt for Disk<R> {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.len)
        {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.file.read_at(offset, buf)
    }

    fn size(&self) -> Option<u64> {
        Some(self.len)
    }
}
