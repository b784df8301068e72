//! The payload made from the layer's own deflate blocks, instead of compressing the
//! chosen build again: one gzip member that holds
//!
//! 1. the entry's first bytes, up to the first block boundary at least a deflate
//!    window into it, compressed here (level 6, ending with a sync flush, so on a byte
//!    boundary);
//! 2. a few bits of filler (a fixed-Huffman block of the last of those bytes, and empty
//!    fixed-Huffman blocks) that bring the stream to the same bit within a byte as the
//!    layer's next block: the layer's blocks are then copied byte for byte, and stored
//!    blocks in them stay aligned as their lengths need;
//! 3. the layer's blocks through the one that holds the entry's last byte, that one
//!    marked final;
//! 4. the gzip trailer: crc32 and length of what the member decompresses to, the entry
//!    and the rest of that last block.
//!
//! The install script cuts what follows the entry (`truncate -s`). The checks: the
//! entry's crc32 as the decoder gave it must be the capture's, so the blocks are known
//! to hold the capture's bytes where this module puts them.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::{Context, Result};
use sha2::Sha512;

use crate::image::blocks::{Boundary, Spliced, WINDOW};
use crate::payload::{HashWriter, Payload};

/// The payload's gzip header: deflate, no flags, mtime 0, no extra flags, OS unknown.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// Level of the entry's first bytes (zlib's scale).
const HEAD_LEVEL: u32 = 6;

/// The filler ends with at most this many of the head's bytes as literals.
const MAX_FILLER_LITERALS: usize = 64;

/// What a splice is made of, for `inject -v`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpliceFacts {
    /// Entry bytes compressed here (the head).
    pub(crate) head: u64,
    /// Layer blocks reused, and their compressed bytes.
    pub(crate) blocks: usize,
    pub(crate) block_bytes: u64,
    /// Bytes past the entry that the member decompresses to (cut on the node).
    pub(crate) tail: u64,
}

/// Writes bits least significant first, as deflate packs them.
struct Bits<W: Write> {
    w: W,
    acc: u64,
    n: u32,
}

impl<W: Write> Bits<W> {
    fn put(&mut self, v: u64, n: u32) -> std::io::Result<()> {
        debug_assert!(n <= 32);
        self.acc |= (v & ((1u64 << n) - 1)) << self.n;
        self.n += n;
        while self.n >= 8 {
            self.w.write_all(&[self.acc as u8])?;
            self.acc >>= 8;
            self.n -= 8;
        }
        Ok(())
    }

    /// Whole bytes, at a byte boundary.
    fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        debug_assert_eq!(self.n, 0);
        self.w.write_all(b)
    }

    /// A Huffman code (`len` bits, most significant first).
    fn code(&mut self, code: u32, len: u32) -> std::io::Result<()> {
        self.put(u64::from(code.reverse_bits() >> (32 - len)), len)
    }

    /// Zero bits up to the next byte boundary.
    fn align(&mut self) -> std::io::Result<()> {
        if self.n > 0 {
            let n = 8 - self.n;
            self.put(0, n)?;
        }
        Ok(())
    }
}

/// The fixed-Huffman code of a literal byte.
fn literal_code(b: u8) -> (u32, u32) {
    if b < 144 {
        (0x30 + u32::from(b), 8)
    } else {
        (0x190 + u32::from(b) - 144, 9)
    }
}

/// Bits of a non-final fixed-Huffman block of these literals (an empty one: 10).
fn fixed_block_bits(lits: &[u8]) -> u64 {
    3 + lits
        .iter()
        .map(|&b| u64::from(literal_code(b).1))
        .sum::<u64>()
        + 7
}

fn fixed_block(bits: &mut Bits<impl Write>, lits: &[u8]) -> std::io::Result<()> {
    bits.put(0b010, 3)?; // not final, fixed Huffman
    for &b in lits {
        let (c, l) = literal_code(b);
        bits.code(c, l)?;
    }
    bits.code(0, 7) // end of block
}

/// How many of the head's last bytes go in a literal block (0: none), and how many
/// empty blocks follow, to end `phase` bits into a byte.
fn filler(head: &[u8], phase: u32) -> Option<(usize, usize)> {
    for m in 0..=MAX_FILLER_LITERALS.min(head.len()) {
        let lits = if m == 0 {
            0
        } else {
            fixed_block_bits(&head[head.len() - m..])
        };
        for j in 0..4 {
            if (lits + 10 * j as u64) % 8 == u64::from(phase) {
                return Some((m, j));
            }
        }
    }
    None
}

/// Raw deflate of `data`, ending with a sync flush (a byte boundary, not final).
fn deflate_synced(data: &[u8]) -> Result<Vec<u8>> {
    let mut c = flate2::Compress::new(flate2::Compression::new(HEAD_LEVEL), false);
    let mut out = Vec::with_capacity(data.len() + data.len() / 8 + 1024);
    loop {
        let at = c.total_in() as usize;
        let status = c
            .compress_vec(&data[at..], &mut out, flate2::FlushCompress::Sync)
            .context("compressing the head of the payload")?;
        if c.total_in() as usize == data.len() && out.len() < out.capacity() {
            break;
        }
        if status == flate2::Status::BufError && out.len() < out.capacity() {
            break;
        }
        out.reserve(out.capacity().max(1024));
    }
    Ok(out)
}

/// crc32 of a file's first `len` bytes.
fn crc_of(file: &mut std::fs::File, len: u64) -> std::io::Result<u32> {
    let mut crc = 0;
    let mut buf = vec![0; crate::io::WIDE_BUF];
    let mut left = len;
    while left > 0 {
        let want = buf.len().min(left as usize);
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        crc = zlib_rs::crc32::crc32(crc, &buf[..n]);
        left -= n as u64;
    }
    Ok(crc)
}

/// How much bigger than our own compression the layer's blocks may be, on the samples,
/// for the payload to be made of them: every byte of payload costs an old node's
/// Ignition time and memory (docs/firstboot.md), so a splice only saves the compression
/// when the node pays about nothing for it.
const SLACK: f64 = 1.005;

/// The layer's blocks (`theirs` bytes) compress as well as we do (`ours`) on the same
/// samples.
pub(crate) fn good_enough(theirs: u64, ours: u64) -> bool {
    theirs as f64 <= ours as f64 * SLACK
}

/// How many samples compare the layer's compression with ours, and their least size:
/// about 5% of a real MCD.
pub(crate) const SAMPLES: usize = 8;
pub(crate) const SAMPLE_LEN: u64 = 512 << 10;

/// Samples of an entry of `size` bytes to compare the layer's compression with ours: up
/// to `count` runs of whole layer blocks of at least `len` bytes, spread evenly from the
/// first boundary to the entry's end, none past it. Each is (start, end) in the entry,
/// and the compressed bytes of its blocks in the layer. The samples of the boundaries
/// noted so far are the first of those of all of them, so they can be compressed while
/// the layer still streams.
pub(crate) fn samples(b: &[Boundary], size: u64, count: usize, len: u64) -> Vec<((u64, u64), u64)> {
    let Some(first) = b.first() else {
        return Vec::new();
    };
    let span = size.saturating_sub(first.out);
    let mut out = Vec::new();
    let mut from = 0;
    for k in 0..count as u64 {
        let target = first.out + span * k / count as u64;
        let Some(i) = (from..b.len()).find(|&i| b[i].out >= target) else {
            break;
        };
        let Some(j) = (i..b.len()).find(|&j| b[j].out >= b[i].out + len) else {
            break;
        };
        if b[j].out > size {
            break;
        }
        out.push(((b[i].out, b[j].out), (b[j].bit - b[i].bit) / 8));
        from = j;
    }
    out
}

/// The payload for a splice, in a temp file in `spool`; `None` when the splice does
/// not fit (its blocks are not the capture's bytes, too few blocks, no filler).
pub(crate) fn payload(sp: &Spliced, spool: &Path) -> Result<Option<(Payload, SpliceFacts)>> {
    // The capture is checked on another core while the payload is written.
    let (checked, built) = std::thread::scope(|s| {
        let check = s.spawn(|| capture_matches(sp));
        let built = build(sp, spool);
        (check.join().expect("the capture check panicked"), built)
    });
    if !checked? {
        log::info!("splice: the layer's blocks are not the capture's bytes");
        return Ok(None);
    }
    built
}

/// The capture holds the bytes the decoder gave for the entry (its crc32): the blocks
/// noted for it are its own.
fn capture_matches(sp: &Spliced) -> Result<bool> {
    let mut cap = std::fs::File::open(&sp.capture)
        .with_context(|| format!("reading {}", sp.capture.display()))?;
    Ok(cap.metadata()?.len() == sp.size && crc_of(&mut cap, sp.size)? == sp.crc)
}

/// The payload of [`payload`], once the capture is known to match.
fn build(sp: &Spliced, spool: &Path) -> Result<Option<(Payload, SpliceFacts)>> {
    let n = sp.boundaries.len();
    if n < 2 {
        return Ok(None);
    }
    let (first, last) = (sp.boundaries[0], sp.boundaries[n - 1]);
    let final_block = sp.boundaries[n - 2];
    if first.out < WINDOW || first.out > sp.size || last.out < sp.size {
        return Ok(None);
    }
    let mut cap = std::fs::File::open(&sp.capture)
        .with_context(|| format!("reading {}", sp.capture.display()))?;
    let mut head = vec![0; first.out as usize];
    cap.read_exact(&mut head)?;
    let phase = (first.bit % 8) as u32;
    let Some((m, j)) = filler(&head, phase) else {
        return Ok(None);
    };

    let file = tempfile::Builder::new()
        .prefix(".payload-")
        .tempfile_in(spool)
        .with_context(|| format!("creating a temp file in {}", spool.display()))?;
    let sink = HashWriter::<_, Sha512>::new(std::io::BufWriter::with_capacity(
        crate::io::WIDE_BUF,
        file.reopen()?,
    ));
    let mut bits = Bits {
        w: sink,
        acc: 0,
        n: 0,
    };
    bits.bytes(&GZIP_HEADER)?;
    let compressed = deflate_synced(&head[..head.len() - m])?;
    bits.bytes(&compressed)?;
    if m > 0 {
        fixed_block(&mut bits, &head[head.len() - m..])?;
    }
    for _ in 0..j {
        fixed_block(&mut bits, &[])?;
    }
    debug_assert_eq!(bits.n, phase);

    // The layer's blocks, from `first.bit` to `last.bit`, the last one marked final.
    let mut blocks = sp.blocks.reopen()?;
    let (from_byte, to_bit) = (first.bit / 8, last.bit);
    blocks.seek(SeekFrom::Start(from_byte - sp.blocks_from))?;
    let total_bytes = to_bit.div_ceil(8) - from_byte;
    let final_bit = final_block.bit - from_byte * 8;
    let mut buf = vec![0u8; crate::io::WIDE_BUF];
    let mut at = 0u64; // bytes of the range written
    while at < total_bytes {
        let want = buf.len().min((total_bytes - at) as usize);
        blocks
            .read_exact(&mut buf[..want])
            .context("reading the layer's spooled blocks")?;
        let chunk = &mut buf[..want];
        if (at..at + want as u64).contains(&(final_bit / 8)) {
            chunk[(final_bit / 8 - at) as usize] |= 1 << (final_bit % 8);
        }
        let mut rest: &[u8] = chunk;
        if at == 0 {
            // The first byte's bits below the phase belong to the block before.
            bits.put(u64::from(rest[0] >> phase), 8 - phase)?;
            rest = &rest[1..];
        }
        let end = at + want as u64 == total_bytes && to_bit % 8 != 0;
        if end && !rest.is_empty() {
            let (whole, tail) = rest.split_at(rest.len() - 1);
            bits.bytes(whole)?;
            bits.put(u64::from(tail[0]), (to_bit % 8) as u32)?;
        } else {
            bits.bytes(rest)?;
        }
        at += want as u64;
    }
    bits.align()?;
    bits.bytes(&sp.crc_through.to_le_bytes())?;
    bits.bytes(&(sp.len_through as u32).to_le_bytes())?;
    let mut sink = bits.w;
    sink.flush().context("writing the payload")?;
    let len = sink.len;
    let facts = SpliceFacts {
        head: first.out,
        blocks: n - 1,
        block_bytes: total_bytes,
        tail: sp.len_through - sp.size,
    };
    Ok(Some((
        Payload {
            file,
            len,
            sha512: sink.hex(),
        },
        facts,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::blocks::{BlockGzDecoder, Splicing};
    use std::io::BufReader;

    /// Bytes that compress like a binary's: runs of text, repeats and noise.
    fn content(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 8 {
                0 => out
                    .extend_from_slice(b"machine-config-daemon firstboot-complete-machineconfig "),
                1..=4 => out.extend((0..(x >> 8) % 64).map(|i| (x >> (i % 56)) as u8)),
                5 | 6 => {
                    let back = ((x >> 8) as usize % 4000).min(out.len());
                    let from = out.len() - back;
                    let n = ((x >> 24) as usize % 200).min(back);
                    out.extend_from_within(from..from + n);
                }
                _ => out.extend(std::iter::repeat_n((x >> 8) as u8, (x >> 16) as usize % 20)),
            }
        }
        out.truncate(len);
        out
    }

    fn gzip(data: &[u8], level: u32, flush_every: Option<usize>) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
        match flush_every {
            None => e.write_all(data).unwrap(),
            Some(n) => {
                for c in data.chunks(n) {
                    e.write_all(c).unwrap();
                    e.flush().unwrap();
                }
            }
        }
        e.finish().unwrap()
    }

    /// Reads `blob` through the block decoder with the entry at `at..at + size` armed,
    /// in input reads of `chunk` bytes; the splice taken, if any.
    fn take(
        blob: &[u8],
        at: usize,
        size: usize,
        chunk: usize,
        spool: &Path,
    ) -> (Option<Spliced>, tempfile::NamedTempFile) {
        let splicing = Splicing::new("x", spool);
        let mut dec =
            BlockGzDecoder::new(BufReader::with_capacity(chunk, blob), &splicing).unwrap();
        std::io::copy(&mut (&mut dec).take(at as u64), &mut std::io::sink()).unwrap();
        let mut cap = tempfile::NamedTempFile::new_in(spool).unwrap();
        splicing.arm(cap.path(), size as u64);
        let n = std::io::copy(&mut (&mut dec).take(size as u64), cap.as_file_mut()).unwrap();
        assert_eq!(n, size as u64);
        std::io::copy(&mut dec, &mut std::io::sink()).unwrap();
        drop(dec);
        (splicing.take(cap.path()), cap)
    }

    fn gunzip(gz: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(gz)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    /// The spliced payload decompresses to the entry, then the rest of its last block.
    fn check(blob: &[u8], data: &[u8], at: usize, size: usize, chunk: usize) -> SpliceFacts {
        let spool = tempfile::tempdir().unwrap();
        let (sp, _cap) = take(blob, at, size, chunk, spool.path());
        let sp = sp.expect("a splice");
        let (p, facts) = payload(&sp, spool.path())
            .unwrap()
            .unwrap_or_else(|| panic!("a payload: {:?}", (&sp.boundaries[..2], sp.size, chunk)));
        let gz = std::fs::read(p.file.path()).unwrap();
        assert_eq!(gz.len() as u64, p.len);
        let sha = hex::encode(<Sha512 as sha2::Digest>::digest(&gz));
        assert_eq!(sha, p.sha512);
        let out = gunzip(&gz);
        assert_eq!(out.len() as u64, sp.len_through);
        assert!(out[..size] == data[at..at + size], "the entry's bytes");
        assert_eq!(
            out[size..],
            data[at + size..at + out.len()],
            "its last block's rest"
        );
        facts
    }

    #[test]
    fn a_spliced_payload_decompresses_to_the_entry() {
        let data = content(3 << 20, 7);
        let (at, size) = (700_001, 1_900_003);
        for (level, flush) in [(6, None), (9, None), (0, None), (6, Some(256 * 1024))] {
            let blob = gzip(&data, level, flush);
            for chunk in [4096, 100_003, 1 << 20] {
                let f = check(&blob, &data, at, size, chunk);
                assert!(f.head >= WINDOW && f.blocks >= 2, "level {level}: {f:?}");
            }
        }
    }

    #[test]
    fn libdeflate_layers_splice_too() {
        let data = content(2 << 20, 11);
        let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(9).unwrap());
        let mut blob = vec![0; c.gzip_compress_bound(data.len())];
        let n = c.gzip_compress(&data, &mut blob).unwrap();
        blob.truncate(n);
        check(&blob, &data, 12_345, 1_500_000, 65536);
    }

    #[test]
    fn every_filler_phase_is_reached() {
        // Entries starting at many offsets give first blocks at every bit phase.
        let data = content(1 << 20, 3);
        let mut phases = std::collections::HashSet::new();
        for k in 0..40 {
            let blob = gzip(&data[k..], 6, None);
            let data = &data[k..];
            let at = 1000 + k * 9_973;
            let spool = tempfile::tempdir().unwrap();
            let (sp, _cap) = take(&blob, at, 500_000, 8192, spool.path());
            phases.insert(sp.expect("a splice").boundaries[0].bit % 8);
            check(&blob, data, at, 500_000, 8192);
        }
        assert!(phases.len() >= 6, "phases seen: {phases:?}");
    }

    #[test]
    fn real_gzip_reads_a_spliced_payload() {
        let data = content(2 << 20, 5);
        let blob = gzip(&data, 6, Some(300_000));
        let spool = tempfile::tempdir().unwrap();
        let (sp, _cap) = take(&blob, 4_321, 1_234_567, 65536, spool.path());
        let (p, _) = payload(&sp.unwrap(), spool.path()).unwrap().unwrap();
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(p.file.path())
            .output()
            .expect("gzip (the node's decompressor) runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout[..1_234_567] == data[4_321..4_321 + 1_234_567]);
    }

    #[test]
    fn entries_that_cannot_be_spliced_are_refused() {
        let spool = tempfile::tempdir().unwrap();
        let data = content(1 << 20, 9);
        // Across two gzip members.
        let mut blob = gzip(&data[..600_000], 6, None);
        blob.extend(gzip(&data[600_000..], 6, None));
        let (sp, _c) = take(&blob, 100_000, 700_000, 8192, spool.path());
        assert!(sp.is_none());
        // Inside the second member it is fine.
        check(&blob, &data, 650_000, 300_000, 8192);
        // Ending with the stream: its final block is the last one spliced.
        let blob = gzip(&data, 6, None);
        let f = check(&blob, &data, 100_000, data.len() - 100_000, 8192);
        assert_eq!(f.tail, 0);
        // Shorter than a window and a block.
        let (sp, _c) = take(&blob, 100_000, 20_000, 8192, spool.path());
        assert!(sp.is_none());
    }

    #[test]
    fn samples_are_whole_blocks_spread_over_the_entry() {
        let spool = tempfile::tempdir().unwrap();
        let data = content(4 << 20, 21);
        let blob = gzip(&data, 6, None);
        let (sp, _c) = take(&blob, 5_000, 3_500_000, 65536, spool.path());
        let sp = sp.unwrap();
        let s = samples(&sp.boundaries, sp.size, 4, 100_000);
        assert_eq!(s.len(), 4, "{s:?}");
        let starts: Vec<u64> = sp.boundaries.iter().map(|b| b.out).collect();
        let mut end_before = 0;
        for &((from, to), bytes) in &s {
            assert!(starts.contains(&from) && starts.contains(&to));
            assert!(from >= end_before && to - from >= 100_000 && to <= sp.size);
            assert!(bytes > 0 && bytes < to - from);
            end_before = to;
        }
        assert!(s[3].0 .0 > sp.size / 2, "spread over the entry: {s:?}");
        // Too few blocks for the samples asked.
        assert!(samples(&sp.boundaries, sp.size, 4, 3_000_000).len() < 4);
        // Those of the first boundaries are the first samples.
        for n in 0..sp.boundaries.len() {
            let some = samples(&sp.boundaries[..n], sp.size, 4, 100_000);
            assert_eq!(some[..], s[..some.len()]);
        }
    }

    /// A stored block of `data` (at most 65535 bytes), written at a byte boundary.
    fn stored(bits: &mut Bits<&mut Vec<u8>>, data: &[u8], last: bool) {
        bits.put(u64::from(last), 3).unwrap(); // BFINAL, BTYPE 00
        bits.align().unwrap();
        let n = data.len() as u16;
        bits.bytes(&n.to_le_bytes()).unwrap();
        bits.bytes(&(!n).to_le_bytes()).unwrap();
        bits.bytes(data).unwrap();
    }

    #[test]
    fn a_stream_of_empty_blocks_is_not_noted_without_bound() {
        let data = content(100_000, 23);
        let mut gz = GZIP_HEADER.to_vec();
        let mut bits = Bits {
            w: &mut gz,
            acc: 0,
            n: 0,
        };
        stored(&mut bits, &data[..50_000], false);
        for _ in 0..200_000 {
            fixed_block(&mut bits, &[]).unwrap();
        }
        bits.align().unwrap();
        stored(&mut bits, &data[50_000..], true);
        gz.extend(zlib_rs::crc32::crc32(0, &data).to_le_bytes());
        gz.extend((data.len() as u32).to_le_bytes());
        assert!(gunzip(&gz) == data);
        let spool = tempfile::tempdir().unwrap();
        let (sp, cap) = take(&gz, 0, data.len(), 65536, spool.path());
        assert!(sp.is_none(), "more boundaries than noted");
        assert!(std::fs::read(cap.path()).unwrap() == data);
    }

    #[test]
    fn a_capture_that_differs_from_the_blocks_is_refused() {
        let spool = tempfile::tempdir().unwrap();
        let data = content(1 << 20, 13);
        let blob = gzip(&data, 6, None);
        let (sp, cap) = take(&blob, 1000, 600_000, 8192, spool.path());
        let sp = sp.unwrap();
        let mut bytes = std::fs::read(cap.path()).unwrap();
        bytes[300_000] ^= 1;
        std::fs::write(cap.path(), &bytes).unwrap();
        assert!(payload(&sp, spool.path()).unwrap().is_none());
    }

    #[test]
    fn the_block_decoder_reads_what_gzip_wrote() {
        let data = content(1 << 20, 17);
        let mut blob = gzip(&data[..300_000], 9, None);
        blob.extend(gzip(&data[300_000..], 1, Some(70_000)));
        let splicing = Splicing::new("x", Path::new("/nonexistent"));
        for chunk in [1, 4096, 1 << 20] {
            let mut out = Vec::new();
            BlockGzDecoder::new(BufReader::with_capacity(chunk, &blob[..]), &splicing)
                .unwrap()
                .read_to_end(&mut out)
                .unwrap();
            assert!(out == data);
        }
        // Truncated, and corrupt.
        let mut out = Vec::new();
        let short = &blob[..blob.len() - 3];
        let e = BlockGzDecoder::new(BufReader::new(short), &splicing)
            .unwrap()
            .read_to_end(&mut out)
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
        let mut bad = blob.clone();
        let len = bad.len();
        bad[len - 5] ^= 0xff; // the crc32 of the second member
        let e = BlockGzDecoder::new(BufReader::new(&bad[..]), &splicing)
            .unwrap()
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
    }
}
