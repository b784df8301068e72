//! A live ISO's name: the volume ID of its ISO 9660 primary volume descriptor, which
//! coreos-assembler sets to the build (`rhcos-42.80.20191002.0`). Read by hand: it is one
//! fixed field of one 2 KiB sector (ECMA-119 8.4), which no crate is needed for.

use std::fs::File;
use std::io;

use super::{bad, quotable, Bad, ReadAt};

/// The volume descriptors start at sector 16; the first is the primary one.
const PVD_OFFSET: u64 = 16 * 2048;

/// Whether the file has an ISO 9660 primary volume descriptor (type 1, `CD001`).
pub(super) fn is_iso(file: &mut File) -> io::Result<bool> {
    let mut d = [0u8; 7];
    match file.read_at(PVD_OFFSET, &mut d) {
        Ok(()) => Ok(d[0] == 1 && &d[1..6] == b"CD001" && d[6] == 1),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// The volume ID (bytes 40-71 of the descriptor, space-padded).
pub(super) fn volume_id(file: &mut File) -> Result<(String, String), Bad> {
    let mut d = [0u8; 72];
    file.read_at(PVD_OFFSET, &mut d)?;
    let id = std::str::from_utf8(&d[40..72])
        .map(|s| s.trim_end_matches([' ', '\0']).to_string())
        .unwrap_or_default();
    if !quotable(&id) {
        return bad(
            "its volume ID is empty or not a build name (an ISO not made by coreos-assembler?)",
        );
    }
    Ok((id, "the ISO 9660 volume ID".to_string()))
}
