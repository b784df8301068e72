//! A qcow2 image's guest disk, read through its L1 and L2 tables (qemu's
//! docs/interop/qcow2.txt), with compressed clusters (deflate, or zstd when the header
//! says so) as `qemu-img convert -c` and coreos-assembler write them.
//!
//! Read by hand: the one crate that reads compressed clusters (`qcow`) builds a second,
//! 2021 copy of zstd's C library, and the others are async or read no compressed
//! clusters. Only what a bootimage uses is read: no backing file, no encryption, no
//! external data file, no extended L2 entries (each refused by name).

use std::io;

use super::{bad, Bad, ReadAt};

pub(super) const MAGIC: &[u8; 4] = b"QFI\xfb";

/// The L1 table of a 64 GiB disk with 64 KiB clusters is 128 entries; this bounds it at
/// 2 PiB of guest disk with 64 KiB clusters.
const MAX_L1_ENTRIES: u64 = 1 << 22;

const OFFSET_MASK: u64 = 0x00ff_ffff_ffff_fe00;
const COMPRESSED: u64 = 1 << 62;
const ZERO: u64 = 1;

pub(super) struct Qcow2<R> {
    inner: R,
    cluster_bits: u32,
    size: u64,
    l1: Vec<u64>,
    zstd: bool,
    /// The last L2 table read: its offset and entries.
    l2: Option<(u64, Vec<u64>)>,
    /// The last compressed cluster decompressed: its entry and data.
    cluster: Option<(u64, Vec<u8>)>,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl<R: ReadAt> Qcow2<R> {
    pub(super) fn open(mut inner: R) -> Result<Qcow2<R>, Bad> {
        let mut h = [0u8; 112];
        inner.read_at(0, &mut h[..72])?;
        let version = be32(&h, 4);
        if !(2..=3).contains(&version) {
            return bad(format!("qcow2 version {version}, not 2 or 3"));
        }
        if be64(&h, 8) != 0 {
            return bad("it has a backing file: give the image it was made from, or convert it with qemu-img convert");
        }
        let cluster_bits = be32(&h, 20);
        if !(9..=21).contains(&cluster_bits) {
            return bad(format!("cluster_bits {cluster_bits}, outside 9 to 21"));
        }
        let size = be64(&h, 24);
        if be32(&h, 32) != 0 {
            return bad("it is encrypted");
        }
        let l1_entries = u64::from(be32(&h, 36));
        let l1_offset = be64(&h, 40);
        let mut zstd = false;
        if version == 3 {
            inner.read_at(72, &mut h[72..104])?;
            let incompatible = be64(&h, 72);
            let header_length = be32(&h, 100);
            for (bit, what) in [
                (1, "marked corrupt"),
                (2, "has an external data file"),
                (4, "uses extended L2 entries"),
            ] {
                if incompatible & (1 << bit) != 0 {
                    return bad(format!("it {what}"));
                }
            }
            if incompatible & !0b1_1111 != 0 {
                return bad(format!(
                    "it has unknown incompatible features ({incompatible:#x})"
                ));
            }
            if incompatible & (1 << 3) != 0 && header_length > 104 {
                inner.read_at(104, &mut h[104..105])?;
                zstd = match h[104] {
                    0 => false,
                    1 => true,
                    t => return bad(format!("compression type {t}, not deflate (0) or zstd (1)")),
                };
            }
        }
        let l2_bits = cluster_bits - 3;
        let needed = size.div_ceil(1 << (cluster_bits + l2_bits));
        if l1_entries > MAX_L1_ENTRIES || l1_entries < needed {
            return bad(format!(
                "its L1 table has {l1_entries} entries, where a {size}-byte disk needs {needed}"
            ));
        }
        let mut raw = vec![0u8; l1_entries as usize * 8];
        inner.read_at(l1_offset, &mut raw)?;
        let l1 = raw.chunks_exact(8).map(|c| be64(c, 0)).collect();
        Ok(Qcow2 {
            inner,
            cluster_bits,
            size,
            l1,
            zstd,
            l2: None,
            cluster: None,
        })
    }

    fn cluster_size(&self) -> u64 {
        1 << self.cluster_bits
    }

    /// The L2 entry of the guest cluster holding `offset`; 0 when unallocated.
    fn l2_entry(&mut self, offset: u64) -> io::Result<u64> {
        let l2_bits = self.cluster_bits - 3;
        let cluster = offset >> self.cluster_bits;
        let l1_index = (cluster >> l2_bits) as usize;
        let table = self.l1.get(l1_index).copied().unwrap_or(0) & OFFSET_MASK;
        if table == 0 {
            return Ok(0);
        }
        if self.l2.as_ref().map(|(at, _)| *at) != Some(table) {
            let mut raw = vec![0u8; self.cluster_size() as usize];
            self.inner.read_at(table, &mut raw)?;
            self.l2 = Some((table, raw.chunks_exact(8).map(|c| be64(c, 0)).collect()));
        }
        let entries = &self.l2.as_ref().expect("just read").1;
        Ok(entries[(cluster & ((1 << l2_bits) - 1)) as usize])
    }

    /// Fills `buf` (within one guest cluster) from guest `offset`.
    fn read_in_cluster(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let entry = self.l2_entry(offset)?;
        let within = offset & (self.cluster_size() - 1);
        if entry & COMPRESSED != 0 {
            if self.cluster.as_ref().map(|(e, _)| *e) != Some(entry) {
                let data = self.decompress(entry)?;
                self.cluster = Some((entry, data));
            }
            let data = &self.cluster.as_ref().expect("just read").1;
            buf.copy_from_slice(&data[within as usize..within as usize + buf.len()]);
            return Ok(());
        }
        let host = entry & OFFSET_MASK;
        if host == 0 || entry & ZERO != 0 {
            buf.fill(0);
            return Ok(());
        }
        self.inner.read_at(host + within, buf)
    }

    /// A compressed cluster, inflated to one cluster exactly.
    fn decompress(&mut self, entry: u64) -> io::Result<Vec<u8>> {
        let x = 62 - (self.cluster_bits - 8);
        let host = entry & ((1 << x) - 1);
        let sectors = (entry & ((1 << 62) - 1)) >> x;
        let len = (sectors + 1) * 512 - (host & 511);
        let mut raw = vec![0u8; len as usize];
        // The last compressed cluster may end before the sector its length rounds to.
        match self.inner.read_at(host, &mut raw) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && self.inner.size().is_some() => {
                let end = self.inner.size().expect("known");
                let have = end.checked_sub(host).filter(|&h| h > 0).ok_or(e)?;
                raw.truncate(have as usize);
                self.inner.read_at(host, &mut raw)?;
            }
            Err(e) => return Err(e),
        }
        let mut out = vec![0u8; self.cluster_size() as usize];
        let damaged = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a compressed cluster at host offset {host} is damaged"),
            )
        };
        if self.zstd {
            // One frame, then whatever pads the cluster to its last sector (as qemu reads it).
            let mut d = zstd::stream::read::Decoder::with_buffer(raw.as_slice())
                .map_err(|_| damaged())?
                .single_frame();
            std::io::Read::read_exact(&mut d, &mut out).map_err(|_| damaged())?;
        } else {
            let mut d = flate2::Decompress::new(false);
            d.decompress(&raw, &mut out, flate2::FlushDecompress::Finish)
                .map_err(|_| damaged())?;
            if d.total_out() != out.len() as u64 {
                return Err(damaged());
            }
        }
        Ok(out)
    }
}

impl<R: ReadAt> ReadAt for Qcow2<R> {
    fn read_at(&mut self, mut offset: u64, mut buf: &mut [u8]) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.size)
        {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        while !buf.is_empty() {
            let room = self.cluster_size() - (offset & (self.cluster_size() - 1));
            let n = room.min(buf.len() as u64) as usize;
            let (now, rest) = buf.split_at_mut(n);
            self.read_in_cluster(offset, now)?;
            offset += n as u64;
            buf = rest;
        }
        Ok(())
    }

    fn size(&self) -> Option<u64> {
        Some(self.size)
    }
}
