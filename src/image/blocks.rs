//! A gzip layer decoder that knows where the deflate blocks of one chosen entry lie, so
//! that the payload can reuse the layer's own compressed blocks instead of compressing
//! the entry again (see `crate::splice`).
//!
//! zlib stops at every block boundary when asked to (`Z_BLOCK`) and tells how many bits
//! of the last input byte it has not used, which gives each boundary's bit position in
//! the blob. While an entry is *armed*, the decoder records the boundaries inside it,
//! checksums its bytes, and keeps a copy of the compressed bytes from the first boundary
//! that lies at least a deflate window (32 KiB) into the entry to the end of the block
//! that holds its last byte: blocks from that point on refer back only to the entry's
//! own bytes.

use std::cell::{Cell, RefCell};
use std::io::{self, BufRead, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use libz_rs_sys as z;
use tempfile::NamedTempFile;

/// The deflate window: a block this far into an entry or further refers back only to
/// the entry's own bytes.
pub(crate) const WINDOW: u64 = 32 * 1024;

/// At most this many block boundaries are noted for an entry (1 MiB of notes): a real
/// 80 MB MCD has about 900; a hostile stream of empty blocks could have one per 10 bits.
const MAX_BOUNDARIES: usize = 1 << 16;

/// A block boundary: the bit in the blob where a block begins, and how many bytes of
/// the entry come before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Boundary {
    pub(crate) bit: u64,
    pub(crate) out: u64,
}

/// What a splice needs of one entry, taken while its layer was read.
#[derive(Debug)]
pub(crate) struct Spliced {
    /// The entry's capture (its spool file), which the splice is for.
    pub(crate) capture: PathBuf,
    /// The entry's size.
    pub(crate) size: u64,
    /// crc32 of the entry's bytes, as the decoder gave them.
    pub(crate) crc: u32,
    /// crc32 of the entry's bytes followed by the rest of the block that holds its last
    /// byte (what the spliced stream decompresses to), and that length.
    pub(crate) crc_through: u32,
    pub(crate) len_through: u64,
    /// Every boundary inside the entry, in order: the first at least [`WINDOW`] bytes in,
    /// the last at or past its end (the end of the block that holds its last byte).
    pub(crate) boundaries: Vec<Boundary>,
    /// The compressed bytes from the byte that holds the first boundary's bit through the
    /// byte that holds the last one's.
    pub(crate) blocks: NamedTempFile,
    /// The blob offset of the first byte of `blocks`.
    pub(crate) blocks_from: u64,
}

/// Which entry to splice, and the splices taken (one per layer that holds the name).
pub(crate) struct Splicing {
    name: String,
    spool: PathBuf,
    armed: RefCell<Option<Armed>>,
    taken: RefCell<Vec<Spliced>>,
    /// The position of the decoder reading a layer now, if it is a [`BlockGzDecoder`].
    pos: Cell<Option<Position>>,
    /// Told each sample of the armed entry (`splice::samples`) as its blocks are read.
    on_sample: Option<SampleSink>,
}

/// Takes the capture, the range of a sample, and its compressed bytes in the layer.
pub(crate) type SampleSink = Box<dyn Fn(&Path, (u64, u64), u64)>;

struct Armed {
    /// Decoder output position of the entry's first byte.
    from: u64,
    size: u64,
    member: u64,
    capture: PathBuf,
    crc: u32,
    crc_entry: Option<u32>,
    boundaries: Vec<Boundary>,
    blocks: Option<(BufWriter<NamedTempFile>, u64)>,
    /// This entry cannot be spliced (the reason is logged).
    broken: bool,
    /// Samples told to the sink so far.
    samples_told: usize,
    /// The entry offset the next sample can end at, at the soonest.
    sample_check: u64,
}

impl Armed {
    /// This entry cannot be spliced: its payload will be compressed.
    fn give_up(&mut self, why: &'static str) {
        log::info!("payload: not made of the layer's blocks: {why}");
        self.broken = true;
    }
}

impl Splicing {
    /// Splices the entry `name` (normalised, no leading `/`), keeping the compressed
    /// blocks in `spool`.
    pub(crate) fn new(name: &str, spool: &Path) -> Splicing {
        Splicing {
            name: name.to_string(),
            spool: spool.to_path_buf(),
            armed: RefCell::new(None),
            taken: RefCell::new(Vec::new()),
            pos: Cell::new(None),
            on_sample: None,
        }
    }

    /// Tells `sink` each sample of the entry as soon as its blocks are read.
    pub(crate) fn on_sample(mut self, sink: SampleSink) -> Self {
        self.on_sample = Some(sink);
        self
    }

    pub(crate) fn wants(&self, name: &str) -> bool {
        self.name == name
    }

    /// The splice taken for a capture, if its blocks could be kept.
    pub(crate) fn take(&self, capture: &Path) -> Option<Spliced> {
        let mut taken = self.taken.borrow_mut();
        let i = taken.iter().position(|s| s.capture == capture)?;
        Some(taken.swap_remove(i))
    }

    /// Called by the scan as it begins to copy the entry to `capture`: the decoder's
    /// next output byte is the entry's first.
    pub(crate) fn arm(&self, capture: &Path, size: u64) {
        let Some(pos) = self.pos.get() else {
            return;
        };
        *self.armed.borrow_mut() = Some(Armed {
            from: pos.out,
            size,
            member: pos.member,
            capture: capture.to_path_buf(),
            crc: 0,
            crc_entry: None,
            boundaries: Vec::new(),
            blocks: None,
            broken: false,
            samples_told: 0,
            sample_check: 0,
        });
    }

    /// Called by the scan once the entry is copied (or its copy failed: then nothing
    /// is kept).
    pub(crate) fn disarm(&self) {
        self.armed.borrow_mut().take();
    }

    /// Whether an entry armed still needs the decoder's notes (a complete one is kept
    /// and no longer armed).
    fn busy(&self) -> bool {
        self.armed.borrow().as_ref().is_some_and(|a| !a.broken)
    }

    /// What the decoder did in one step: it consumed `input` (whose first byte is at
    /// blob offset `in_at`), gave `output` (whose first byte is at output position
    /// `out_at`), in gzip member `member`, and stopped at a boundary at bit `boundary`
    /// of the blob (right after `output`) if it did.
    fn step(
        &self,
        input: &[u8],
        in_at: u64,
        output: &[u8],
        out_at: u64,
        member: u64,
        boundary: Option<u64>,
    ) {
        let mut armed = self.armed.borrow_mut();
        let Some(a) = armed.as_mut() else {
            return;
        };
        if a.broken {
            return;
        }
        if member != a.member {
            a.give_up("the entry spans gzip members");
            return;
        }
        // The checksums, over the entry and then the rest of its last block.
        let (end, out_end) = (a.from + a.size, out_at + output.len() as u64);
        let in_entry = end.saturating_sub(out_at).min(output.len() as u64) as usize;
        a.crc = zlib_rs::crc32::crc32(a.crc, &output[..in_entry]);
        if a.crc_entry.is_none() && out_end >= end {
            a.crc_entry = Some(a.crc);
        }
        a.crc = zlib_rs::crc32::crc32(a.crc, &output[in_entry..]);
        // The blocks, from the byte of the first boundary on.
        if let Some((w, _)) = &mut a.blocks {
            if w.write_all(input).is_err() {
                a.give_up("the compressed blocks could not be spooled");
                return;
            }
        }
        let Some(bit) = boundary else {
            return;
        };
        let rel = out_end - a.from;
        if a.boundaries.is_empty() {
            if rel < WINDOW {
                return;
            }
            if rel >= a.size {
                a.give_up("the entry ends in the block that holds its first window");
                return;
            }
            // The byte holding `bit`: in the input just consumed, or the next one.
            let byte = bit / 8;
            let in_end = in_at + input.len() as u64;
            let tmp = match tempfile::Builder::new()
                .prefix(".blocks-")
                .tempfile_in(&self.spool)
            {
                Ok(t) => t,
                Err(_) => {
                    a.give_up("no spool file for the compressed blocks");
                    return;
                }
            };
            let mut w = BufWriter::with_capacity(crate::io::WIDE_BUF, tmp);
            if byte < in_end {
                let from = (byte - in_at.min(byte)) as usize;
                if byte < in_at || w.write_all(&input[from..]).is_err() {
                    a.give_up("the compressed blocks could not be spooled");
                    return;
                }
            }
            a.blocks = Some((w, byte));
        }
        if a.boundaries.len() >= MAX_BOUNDARIES {
            a.give_up("too many deflate blocks");
            return;
        }
        a.boundaries.push(Boundary { bit, out: rel });
        if let Some(sink) = self.on_sample.as_ref().filter(|_| rel >= a.sample_check) {
            use crate::splice::{samples, SAMPLES, SAMPLE_LEN};
            let s = samples(&a.boundaries, a.size, SAMPLES, SAMPLE_LEN);
            for (range, theirs) in &s[a.samples_told.min(s.len())..] {
                sink(&a.capture, *range, *theirs);
            }
            a.samples_told = s.len();
            // The next sample cannot end before its target plus its length, nor before
            // the last one's end plus its length.
            let first = a.boundaries[0].out;
            let k = s.len() as u64;
            let target = first + a.size.saturating_sub(first) * k / SAMPLES as u64;
            let after = s.last().map_or(0, |l| l.0 .1);
            a.sample_check = target.max(after) + SAMPLE_LEN;
        }
        if rel >= a.size {
            let a = armed.take().expect("armed");
            self.keep(a);
        }
    }

    fn keep(&self, a: Armed) {
        let Some((w, from)) = a.blocks else {
            return;
        };
        let Ok(blocks) = w.into_inner() else {
            return;
        };
        let Some(crc) = a.crc_entry else {
            return;
        };
        let last = a.boundaries.last().expect("a boundary past the end");
        self.taken.borrow_mut().push(Spliced {
            capture: a.capture,
            size: a.size,
            crc,
            crc_through: a.crc,
            len_through: last.out,
            boundaries: a.boundaries,
            blocks,
            blocks_from: from,
        });
    }
}

/// The decoder's position, for [`Splicing::arm`].
#[derive(Clone, Copy)]
struct Position {
    out: u64,
    member: u64,
}

/// A zlib inflate stream (gzip wrapper), freed on drop. Boxed: zlib keeps its address.
struct Zlib(Box<z::z_stream>);

impl Zlib {
    fn new() -> io::Result<Zlib> {
        let mut s = Box::new(z::z_stream::default());
        let size = std::mem::size_of::<z::z_stream>() as i32;
        // SAFETY: a fresh stream, the library's own version string and stream size.
        let r = unsafe { z::inflateInit2_(&mut *s, 16 + 15, z::zlibVersion(), size) };
        if r != z::Z_OK {
            return Err(io::Error::other(format!("zlib inflateInit2: {r}")));
        }
        Ok(Zlib(s))
    }

    fn reset(&mut self) {
        // SAFETY: an initialised stream.
        unsafe { z::inflateReset(&mut *self.0) };
    }

    /// One `inflate` call with `Z_BLOCK`: (return code, input consumed, output given).
    fn inflate(&mut self, input: &[u8], output: &mut [u8]) -> (i32, usize, usize) {
        let (avail_in, avail_out) = (
            input.len().min(u32::MAX as usize),
            output.len().min(u32::MAX as usize),
        );
        let s = &mut *self.0;
        s.next_in = input.as_ptr();
        s.avail_in = avail_in as u32;
        s.next_out = output.as_mut_ptr();
        s.avail_out = avail_out as u32;
        // SAFETY: an initialised stream; next_in/next_out point to avail_in/avail_out
        // valid bytes, which outlive the call.
        let r = unsafe { z::inflate(s, z::Z_BLOCK) };
        let (left_in, left_out) = (s.avail_in as usize, s.avail_out as usize);
        s.next_in = std::ptr::null();
        s.next_out = std::ptr::null_mut();
        (r, avail_in - left_in, avail_out - left_out)
    }

    fn message(&self) -> Option<String> {
        if self.0.msg.is_null() {
            return None;
        }
        // SAFETY: zlib sets msg to a NUL-terminated static string.
        Some(
            unsafe { std::ffi::CStr::from_ptr(self.0.msg) }
                .to_string_lossy()
                .into_owned(),
        )
    }
}

impl Drop for Zlib {
    fn drop(&mut self) {
        // SAFETY: an initialised stream, ended once.
        unsafe { z::inflateEnd(&mut *self.0) };
    }
}

/// Decompresses a gzip blob (members one after another, as `gzip -d` reads them),
/// stopping at every deflate block boundary to note it for a [`Splicing`].
pub(crate) struct BlockGzDecoder<'s, R> {
    inner: R,
    z: Zlib,
    splicing: &'s Splicing,
    /// Blob bytes consumed.
    in_pos: u64,
    /// Bytes given out.
    out_pos: u64,
    member: u64,
    /// The current member has ended: the next input begins another, or the blob ends.
    between: bool,
    done: bool,
}

impl<'s, R: BufRead> BlockGzDecoder<'s, R> {
    pub(crate) fn new(inner: R, splicing: &'s Splicing) -> io::Result<Self> {
        splicing.pos.set(Some(Position { out: 0, member: 0 }));
        Ok(BlockGzDecoder {
            inner,
            z: Zlib::new()?,
            splicing,
            in_pos: 0,
            out_pos: 0,
            member: 0,
            between: false,
            done: false,
        })
    }
}

fn corrupt(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl<R: BufRead> Read for BlockGzDecoder<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.done {
                return Ok(0);
            }
            let input = self.inner.fill_buf()?;
            if self.between {
                if input.is_empty() {
                    self.done = true;
                    return Ok(0);
                }
                self.z.reset();
                self.between = false;
                self.member += 1;
                self.splicing.pos.set(Some(Position {
                    out: self.out_pos,
                    member: self.member,
                }));
            }
            let eof = input.is_empty();
            let (ret, consumed, produced) = self.z.inflate(input, buf);
            let data_type = self.z.0.data_type;
            let in_at = self.in_pos;
            self.in_pos += consumed as u64;
            let at_boundary = ret == z::Z_OK && data_type & 128 != 0;
            if self.splicing.busy() {
                let boundary = at_boundary.then(|| self.in_pos * 8 - (data_type & 63) as u64);
                self.splicing.step(
                    &input[..consumed],
                    in_at,
                    &buf[..produced],
                    self.out_pos,
                    self.member,
                    boundary,
                );
            }
            self.inner.consume(consumed);
            self.out_pos += produced as u64;
            self.splicing.pos.set(Some(Position {
                out: self.out_pos,
                member: self.member,
            }));
            match ret {
                z::Z_OK => {}
                z::Z_STREAM_END => self.between = true,
                z::Z_BUF_ERROR if eof => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the gzip stream ends early",
                    ))
                }
                z::Z_BUF_ERROR => {}
                z::Z_DATA_ERROR => {
                    let msg = self.z.message().unwrap_or_else(|| "invalid data".into());
                    return Err(corrupt(format!("corrupt gzip stream: {msg}")));
                }
                r => return Err(corrupt(format!("corrupt gzip stream: zlib error {r}"))),
            }
            if produced > 0 {
                return Ok(produced);
            }
            if eof && !self.between {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the gzip stream ends early",
                ));
            }
        }
    }
}

impl<R> Drop for BlockGzDecoder<'_, R> {
    fn drop(&mut self) {
        self.splicing.pos.set(None);
        self.splicing.disarm();
    }
}
