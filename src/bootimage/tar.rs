//! The members of a tar archive, read in place: an OVA (a ustar archive of the OVF
//! descriptor first, then the disk), or the `disk.raw` of a GCP image, a GNU sparse
//! member (`tar --sparse --format=oldgnu`) whose holes are not stored. Only headers are
//! read while walking; a member's data is read where a read of it reaches.
//!
//! Read by hand: the `tar` crate reads an archive as a stream, front to back, where a
//! disk image inside must be read at the places its partition table names; the headers
//! are a fixed 512-byte layout (POSIX ustar, and GNU's old sparse map).

use std::io;

use super::{bad, quotable, Bad, ReadAt};

const BLOCK: u64 = 512;

/// The member of a GCP image archive that holds the disk.
pub(super) const DISK_RAW: &str = "disk.raw";

/// An OVA holds a descriptor, a manifest, a certificate and its disks.
const MAX_MEMBERS: usize = 64;

/// A sparse map of a bootimage's disk is tens of entries; GNU tar writes 21 per
/// extension block.
const MAX_CHUNKS: usize = 1 << 16;

/// One member: where its data starts, and how the data maps to the file it holds.
#[derive(Debug)]
pub(super) struct Member {
    pub(super) name: String,
    data: u64,
    size: u64,
    sparse: Option<Sparse>,
}

/// A GNU sparse member's map: the file's size, and its stored chunks (offset in the
/// file, length), stored back to back from the member's data.
#[derive(Debug)]
struct Sparse {
    size: u64,
    chunks: Vec<(u64, u64)>,
}

/// Whether a 512-byte block is a tar header (`ustar` magic, POSIX or GNU, and a valid
/// checksum).
pub(super) fn is_header(block: &[u8]) -> bool {
    block.len() >= 512 && &block[257..262] == b"ustar" && checksum_ok(block)
}

fn checksum_ok(h: &[u8]) -> bool {
    let sum: u64 = h[..512]
        .iter()
        .enumerate()
        .map(|(i, &b)| u64::from(if (148..156).contains(&i) { b' ' } else { b }))
        .sum();
    number(&h[148..156]) == Some(sum)
}

/// An octal field (NUL or space terminated), or GNU's base-256 form (high bit set).
fn number(f: &[u8]) -> Option<u64> {
    if f.first().is_some_and(|&b| b & 0x80 != 0) {
        return f[1..].iter().try_fold(u64::from(f[0] & 0x7f), |v, &b| {
            v.checked_mul(256).map(|v| v | u64::from(b))
        });
    }
    let text = std::str::from_utf8(f).ok()?;
    let digits = text.trim_matches(|c: char| c == '\0' || c == ' ');
    if digits.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(digits, 8).ok()
}

fn text(f: &[u8]) -> String {
    let end = f.iter().position(|&b| b == 0).unwrap_or(f.len());
    String::from_utf8_lossy(&f[..end]).into_owned()
}

/// The archive's regular members, in order, up to the first that `stop` accepts (then
/// the members after it are not read), with no member's data read. `size` is the
/// archive's, when known: a member that reaches past it is refused.
pub(super) fn members(
    archive: &mut dyn ReadAt,
    stop: &dyn Fn(&str) -> bool,
) -> Result<Vec<Member>, Bad> {
    let mut out = Vec::new();
    let mut at = 0u64;
    let mut long_name: Option<String> = None;
    for _ in 0..MAX_MEMBERS * 2 {
        let mut h = [0u8; 512];
        match archive.read_at(at, &mut h) {
            Ok(()) => {}
            // An archive may end without its two blocks of zeros.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && at > 0 => return Ok(out),
            Err(e) => return Err(e.into()),
        }
        if h.iter().all(|&b| b == 0) {
            return Ok(out);
        }
        if !checksum_ok(&h) {
            return bad(format!("the tar header at byte {at} has a bad checksum"));
        }
        let size = number(&h[124..136])
            .ok_or_else(|| Bad::Content(format!("the tar header at byte {at} has no size")))?;
        let mut data = at + BLOCK;
        let name = long_name.take().unwrap_or_else(|| {
            let prefix = if &h[257..263] == b"ustar\0" {
                text(&h[345..500])
            } else {
                String::new()
            };
            let name = text(&h[..100]);
            if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            }
        });
        let name = name.trim_start_matches("./").to_string();
        let mut sparse = None;
        match h[156] {
            b'0' | 0 => {}
            b'S' => {
                let (map, extension_blocks) = sparse_map(archive, &h, at)?;
                data += extension_blocks * BLOCK;
                let stored: u64 = map.chunks.iter().map(|c| c.1).sum();
                if stored != size {
                    return bad(format!(
                        "the sparse map of tar member at byte {at} stores {stored} bytes, but its header says {size}"
                    ));
                }
                sparse = Some(map);
            }
            b'L' if size <= 4096 => {
                let mut n = vec![0u8; size as usize];
                archive.read_at(data, &mut n)?;
                long_name = Some(text(&n));
            }
            b'x' if size <= 1 << 20 => {
                let mut pax = vec![0u8; size as usize];
                archive.read_at(data, &mut pax)?;
                if String::from_utf8_lossy(&pax).contains("GNU.sparse.") {
                    return bad(format!(
                        "the tar member after byte {at} is a PAX sparse file, which is not read: \
                         pack it with GNU tar --sparse --format=oldgnu, as GCP images are"
                    ));
                }
            }
            _ => {}
        }
        if let Some(total) = archive.size() {
            if data.checked_add(size).is_none_or(|end| end > total) {
                let shown = if quotable(&name) {
                    name.as_str()
                } else {
                    "a member"
                };
                return bad(format!(
                    "tar member {shown} (header at byte {at}) holds {size} bytes, past the end of the archive at byte {total} (truncated?)"
                ));
            }
        }
        let next = data
            .checked_add(size.div_ceil(BLOCK) * BLOCK)
            .ok_or_else(|| Bad::Content("a tar member's size overflows".into()))?;
        if matches!(h[156], b'0' | 0 | b'S') {
            let done = stop(&name);
            out.push(Member {
                name,
                data,
                size,
                sparse,
            });
            if done || out.len() >= MAX_MEMBERS {
                return Ok(out);
            }
        }
        at = next;
    }
    bad(format!("more than {MAX_MEMBERS} tar members"))
}

/// A GNU (old) sparse map: the file's size and its chunks, read from the header and the
/// extension blocks after it; and how many extension blocks there were.
fn sparse_map(archive: &mut dyn ReadAt, h: &[u8; 512], at: u64) -> Result<(Sparse, u64), Bad> {
    let real = number(&h[483..495])
        .ok_or_else(|| Bad::Content(format!("the sparse tar member at byte {at} has no size")))?;
    let mut chunks = Vec::new();
    entries(&h[386..482], 4, &mut chunks, at)?;
    let mut extended = h[482] != 0;
    let mut blocks = 0u64;
    while extended {
        if chunks.len() > MAX_CHUNKS || blocks as usize > MAX_CHUNKS / 21 {
            return bad(format!(
                "the sparse map of tar member at byte {at} has more than {MAX_CHUNKS} entries"
            ));
        }
        let mut b = [0u8; 512];
        blocks += 1;
        archive.read_at(at + blocks * BLOCK, &mut b)?;
        entries(&b[..504], 21, &mut chunks, at)?;
        extended = b[504] != 0;
    }
    let mut end = 0;
    for &(o, l) in &chunks {
        if o < end || o.checked_add(l).is_none_or(|e| e > real) {
            return bad(format!(
                "the sparse map of tar member at byte {at} has chunks out of order or past its size"
            ));
        }
        end = o + l;
    }
    Ok((Sparse { size: real, chunks }, blocks))
}

/// Up to `n` entries (offset, length; 12 octal bytes each) of a sparse map, until an
/// empty one.
fn entries(b: &[u8], n: usize, chunks: &mut Vec<(u64, u64)>, at: u64) -> Result<(), Bad> {
    for e in b.chunks_exact(24).take(n) {
        if e[0] == 0 {
            break;
        }
        match (number(&e[..12]), number(&e[12..])) {
            (Some(o), Some(l)) => chunks.push((o, l)),
            _ => {
                return bad(format!(
                    "the sparse map of tar member at byte {at} is damaged"
                ))
            }
        }
    }
    Ok(())
}

/// A member's file, read through the archive.
pub(super) struct MemberFile<R> {
    archive: R,
    member: Member,
}

impl<R: ReadAt> MemberFile<R> {
    pub(super) fn new(archive: R, member: Member) -> MemberFile<R> {
        MemberFile { archive, member }
    }
}

impl<R: ReadAt> ReadAt for MemberFile<R> {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let m = &self.member;
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.size().expect("known"))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        let Some(Sparse { chunks, .. }) = &m.sparse else {
            return self.archive.read_at(m.data + offset, buf);
        };
        buf.fill(0);
        let mut stored = m.data;
        for &(o, l) in chunks {
            let (from, to) = (offset.max(o), end.min(o + l));
            if from < to {
                let dst = &mut buf[(from - offset) as usize..(to - offset) as usize];
                self.archive.read_at(stored + (from - o), dst)?;
            }
            if o >= end {
                break;
            }
            stored += l;
        }
        Ok(())
    }

    fn size(&self) -> Option<u64> {
        Some(
            self.member
                .sparse
                .as_ref()
                .map_or(self.member.size, |s| s.size),
        )
    }
}
