//! A VMDK sparse extent's guest disk (VMware's Virtual Disk Format 5.0), as an OVA
//! carries it: `streamOptimized`, whose grains are each deflated behind a grain marker,
//! as `qemu-img convert -O vmdk -o subformat=streamOptimized` and VMware write them; also
//! a `monolithicSparse` extent's plain grains. Read through its grain directory and
//! tables, one grain inflated when a read reaches it; the whole disk is never inflated.
//!
//! Read by hand: it is a header, two tables of 32-bit sector numbers and a marker per
//! grain, and no crate reads compressed grains without the whole extent in memory.

use std::io;

use super::{bad, Bad, ReadAt};

pub(super) const MAGIC: &[u8; 4] = b"KDMV";

const SECTOR: u64 = 512;

/// `gdOffset` when the grain directory is found through the footer, near the end.
const GD_AT_END: u64 = u64::MAX;

const COMPRESSED: u32 = 1 << 16;
const MARKERS: u32 = 1 << 17;

/// No bootimage's disk is larger than this.
const MAX_CAPACITY: u64 = 64 << 40;

/// A 64 GiB disk of 64 KiB grains has 128 grain tables.
const MAX_TABLES: u64 = 1 << 16;

/// A grain is 4 KiB to 1 MiB (64 KiB as VMware and qemu write them).
const GRAIN_SECTORS: std::ops::RangeInclusive<u64> = 8..=2048;

pub(super) struct Vmdk<R> {
    inner: R,
    capacity: u64,
    grain: u64,
    per_table: u64,
    directory: Vec<u32>,
    compressed: bool,
    /// The last grain table read: its sector and entries.
    table: Option<(u32, Vec<u32>)>,
    /// The last grain inflated: its index and data.
    cached: Option<(u64, Vec<u8>)>,
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn damaged(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

impl<R: ReadAt> Vmdk<R> {
    pub(super) fn open(mut inner: R) -> Result<Vmdk<R>, Bad> {
        let mut h = [0u8; 512];
        inner.read_at(0, &mut h)?;
        if h[..4] != *MAGIC {
            return bad(
                "no sparse extent header (a descriptor-only or flat VMDK has no data of its own)",
            );
        }
        let mut gd_offset = le64(&h, 56);
        if gd_offset == GD_AT_END {
            // The footer: a copy of the header in the sector before the end-of-stream
            // marker, with the directory's place filled in.
            let Some(size) = inner.size() else {
                return bad("its grain directory is at its end, which is not known");
            };
            let at = size
                .checked_sub(2 * SECTOR)
                .ok_or_else(|| Bad::Io(io::ErrorKind::UnexpectedEof.into()))?;
            inner.read_at(at, &mut h)?;
            if h[..4] != *MAGIC {
                return bad(
                    "its grain directory is at its end, but no footer is there (truncated?)",
                );
            }
            gd_offset = le64(&h, 56);
        }
        let version = le32(&h, 4);
        if !(1..=3).contains(&version) {
            return bad(format!("VMDK version {version}, not 1 to 3"));
        }
        let flags = le32(&h, 8);
        let capacity = le64(&h, 12);
        let grain = le64(&h, 20);
        let per_table = u64::from(le32(&h, 44));
        let algorithm = u16::from_le_bytes([h[77], h[78]]);
        let compressed = flags & COMPRESSED != 0;
        if compressed && algorithm != 1 {
            return bad(format!(
                "compression algorithm {algorithm}, not deflate (1)"
            ));
        }
        if compressed && flags & MARKERS == 0 {
            return bad("compressed grains without markers (not streamOptimized)");
        }
        if !GRAIN_SECTORS.contains(&grain) || !grain.is_power_of_two() {
            return bad(format!("a grain of {grain} sectors, outside 8 to 2048"));
        }
        if !(128..=4096).contains(&per_table) || !per_table.is_power_of_two() {
            return bad(format!(
                "{per_table} entries per grain table, not 128 to 4096"
            ));
        }
        let capacity = capacity
            .checked_mul(SECTOR)
            .filter(|&c| c <= MAX_CAPACITY)
            .ok_or_else(|| {
                Bad::Content(format!(
                    "a capacity of {capacity} sectors, more than a bootimage's disk"
                ))
            })?;
        let tables = capacity.div_ceil(grain * SECTOR * per_table);
        if tables > MAX_TABLES {
            return bad(format!(
                "{tables} grain tables, more than a bootimage's disk needs"
            ));
        }
        if gd_offset == 0 || gd_offset == GD_AT_END {
            return bad("no grain directory");
        }
        let mut raw = vec![0u8; tables as usize * 4];
        inner.read_at(sector(gd_offset)?, &mut raw)?;
        Ok(Vmdk {
            inner,
            capacity,
            grain: grain * SECTOR,
            per_table,
            directory: raw.chunks_exact(4).map(|c| le32(c, 0)).collect(),
            compressed,
            table: None,
            cached: None,
        })
    }

    /// The grain table entry of guest grain `g`: the sector of its data (or marker), 0
    /// (or 1) when it holds zeros.
    fn entry(&mut self, g: u64) -> io::Result<u32> {
        let table = self.directory[(g / self.per_table) as usize];
        if table == 0 {
            return Ok(0);
        }
        if self.table.as_ref().map(|(at, _)| *at) != Some(table) {
            let mut raw = vec![0u8; self.per_table as usize * 4];
            self.read_past_end_checked(u64::from(table) * SECTOR, &mut raw, "a grain table")?;
            self.table = Some((table, raw.chunks_exact(4).map(|c| le32(c, 0)).collect()));
        }
        Ok(self.table.as_ref().expect("just read").1[(g % self.per_table) as usize])
    }

    /// A read of the extent, refused by name when it starts past the extent's end.
    fn read_past_end_checked(&mut self, at: u64, buf: &mut [u8], what: &str) -> io::Result<()> {
        if self.inner.size().is_some_and(|size| at >= size) {
            return Err(damaged(format!(
                "{what} points to byte {at}, past the end of the extent (damaged or truncated)"
            )));
        }
        self.inner.read_at(at, buf)
    }

    /// Guest grain `g`, whole.
    fn grain_data(&mut self, g: u64) -> io::Result<Vec<u8>> {
        let entry = self.entry(g)?;
        let mut out = vec![0u8; self.grain as usize];
        if entry <= 1 {
            return Ok(out);
        }
        let at = u64::from(entry) * SECTOR;
        let what = format!("the grain table entry of grain {g}");
        if !self.compressed {
            self.read_past_end_checked(at, &mut out, &what)?;
            return Ok(out);
        }
        let mut marker = [0u8; 12];
        self.read_past_end_checked(at, &mut marker, &what)?;
        let (lba, size) = (le64(&marker, 0), u64::from(le32(&marker, 8)));
        if lba != g * (self.grain / SECTOR) || size == 0 || size > 2 * self.grain {
            return Err(damaged(format!(
                "the grain marker at byte {at} is not the marker of grain {g}"
            )));
        }
        let mut raw = vec![0u8; size as usize];
        self.inner.read_at(at + 12, &mut raw)?;
        let mut d = flate2::Decompress::new(true);
        let bad_grain = || damaged(format!("the compressed grain at byte {at} is damaged"));
        d.decompress(&raw, &mut out, flate2::FlushDecompress::Finish)
            .map_err(|_| bad_grain())?;
        // The last grain may end with the disk, before a whole grain.
        let want = self.grain.min(self.capacity - g * self.grain);
        if d.total_out() < want {
            return Err(bad_grain());
        }
        Ok(out)
    }
}

fn sector(s: u64) -> Result<u64, Bad> {
    s.checked_mul(SECTOR)
        .ok_or_else(|| Bad::Content("a sector number overflows".into()))
}

impl<R: ReadAt> ReadAt for Vmdk<R> {
    fn read_at(&mut self, mut offset: u64, mut buf: &mut [u8]) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.capacity)
        {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        while !buf.is_empty() {
            let g = offset / self.grain;
            let within = (offset % self.grain) as usize;
            let n = (self.grain as usize - within).min(buf.len());
            if self.cached.as_ref().map(|(i, _)| *i) != Some(g) {
                let data = self.grain_data(g)?;
                self.cached = Some((g, data));
            }
            let data = &self.cached.as_ref().expect("just read").1;
            let (now, rest) = buf.split_at_mut(n);
            now.copy_from_slice(&data[within..within + n]);
            offset += n as u64;
            buf = rest;
        }
        Ok(())
    }

    fn size(&self) -> Option<u64> {
        Some(self.capacity)
    }
}
