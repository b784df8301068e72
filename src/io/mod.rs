//! Small I/O adapters shared by the image, registry and cache code: readers and writers
//! that count and hash what passes through them, pad a short tar stream, share one stream between
//! two readers, fail below a transfer speed, and read a small document whole up to a
//! limit. Nothing here knows about images or registries; it depends on no other module
//! of the crate.

pub mod output;
pub mod parse;
pub(crate) mod tempfiles;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io::{self, Read, Write};
use std::path::PathBuf;

use anyhow::Context as _;
use std::rc::Rc;
use std::time::{Duration, Instant};

use sha2::{Digest as _, Sha256};

/// The buffer size for moving big files and streams: 32 times fewer calls than the
/// standard library's 8 KiB.
pub const WIDE_BUF: usize = 256 * 1024;

/// [`io::copy`] with a [`WIDE_BUF`] buffer when `len` (the bytes expected) is at least
/// that: a big entry of a layer reaches the inflater and the spool in fewer calls. Small
/// ones keep `io::copy`'s buffer on the stack (a layer may hold millions).
pub fn copy_wide(
    r: &mut (impl Read + ?Sized),
    w: &mut (impl Write + ?Sized),
    len: u64,
) -> io::Result<u64> {
    if len < WIDE_BUF as u64 {
        return io::copy(r, w);
    }
    let mut buf = vec![0; WIDE_BUF];
    let mut total = 0;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        w.write_all(&buf[..n])?;
        total += n as u64;
    }
}

/// Writes through to `inner` and hashes what passes: a spooled layer entry (sha256), the
/// payload (sha512, the spec 2.x hash), the config as written (sha256).
pub struct HashWriter<W, H> {
    pub inner: W,
    hasher: H,
    /// Bytes written so far.
    pub len: u64,
}

impl<W: Write, H: sha2::Digest> HashWriter<W, H> {
    pub fn new(inner: W) -> Self {
        HashWriter {
            inner,
            hasher: H::new(),
            len: 0,
        }
    }

    /// The digest of what was written, and the writer.
    pub fn finish(self) -> (sha2::digest::Output<H>, W) {
        (self.hasher.finalize(), self.inner)
    }

    /// The hex digest of what was written.
    pub fn hex(self) -> String {
        hex::encode(self.finish().0)
    }
}

impl<W: Write, H: sha2::Digest> Write for HashWriter<W, H> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A named input; `-` is stdin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Standard input (`-`).
    Stdin,
    /// A file.
    File(PathBuf),
}

impl std::str::FromStr for Input {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(if s == "-" {
            Input::Stdin
        } else {
            Input::File(PathBuf::from(s))
        })
    }
}

impl std::fmt::Display for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Input::Stdin => f.write_str("<stdin>"),
            Input::File(p) => write!(f, "{}", p.display()),
        }
    }
}

impl Input {
    /// Reads it all.
    pub fn read(&self) -> anyhow::Result<Vec<u8>> {
        match self {
            Input::Stdin => {
                let mut b = Vec::new();
                std::io::stdin()
                    .read_to_end(&mut b)
                    .context("reading stdin")?;
                Ok(b)
            }
            Input::File(p) => std::fs::read(p).with_context(|| format!("reading {}", p.display())),
        }
    }
}

/// Installs rustls's ring crypto provider for the process, once: every HTTPS client of
/// the crate (registries, signature stores) needs it.
pub(crate) fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Another part of the process may have installed one already; that is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Reads `r` to its end, or `None` when it holds more than `limit` bytes (of which at
/// most `limit + 1` are read): for manifests, configs, signatures and error bodies,
/// which are refused when too big rather than read without bound.
pub fn read_at_most(r: impl Read, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    r.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// What a [`HashingReader`] has seen so far; shared so that it can be read after the
/// reader has been moved into a decompressor or a tar parser.
#[derive(Clone, Default)]
pub struct HashState(Rc<RefCell<Seen>>);

#[derive(Clone, Default)]
struct Seen {
    /// `None` when the reader only counts.
    hasher: Option<Sha256>,
    len: u64,
    at_end: bool,
}

impl HashState {
    /// Bytes seen so far.
    pub fn len(&self) -> u64 {
        self.0.borrow().len
    }

    /// True once the inner reader has reported its end.
    pub fn at_end(&self) -> bool {
        self.0.borrow().at_end
    }

    /// The sha256 of everything read so far, when the reader hashes.
    pub fn sha256(&self) -> Option<Sha256> {
        self.0.borrow().hasher.clone()
    }
}

/// A reader that counts, and optionally hashes (sha256), every byte that passes through
/// it, and notes when its inner reader ends.
pub struct HashingReader<R> {
    inner: R,
    state: HashState,
}

impl<R: Read> HashingReader<R> {
    /// A reader that hashes.
    #[cfg(test)]
    pub fn new(inner: R) -> (Self, HashState) {
        Self::maybe(inner, true)
    }

    /// A reader that hashes only when `hash`, so that a chain can skip digests it
    /// does not need; it always counts.
    pub fn maybe(inner: R, hash: bool) -> (Self, HashState) {
        let state = HashState(Rc::new(RefCell::new(Seen {
            hasher: hash.then(Sha256::new),
            ..Seen::default()
        })));
        (
            HashingReader {
                inner,
                state: state.clone(),
            },
            state,
        )
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut seen = self.state.0.borrow_mut();
        if n == 0 && !buf.is_empty() {
            seen.at_end = true;
        }
        if let Some(h) = seen.hasher.as_mut() {
            h.update(&buf[..n]);
        }
        seen.len += n as u64;
        Ok(n)
    }
}

/// Pads a tar stream that ends without the end-of-archive blocks (some tools write such
/// layers) with zeros to the next 512-byte boundary plus two blocks, and remembers how
/// many real bytes there were.
pub struct TarPad<R> {
    inner: R,
    real: Rc<Cell<u64>>,
    padding_left: Option<u64>,
}

impl<R: Read> TarPad<R> {
    /// The padded stream, and the count of real bytes read from `inner` so far.
    pub fn new(inner: R) -> (Self, Rc<Cell<u64>>) {
        let real = Rc::new(Cell::new(0));
        let pad = TarPad {
            inner,
            real: real.clone(),
            padding_left: None,
        };
        (pad, real)
    }
}

impl<R: Read> Read for TarPad<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(left) = self.padding_left.as_mut() {
            let n = buf.len().min(*left as usize);
            buf[..n].fill(0);
            *left -= n as u64;
            return Ok(n);
        }
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            let real = self.real.get();
            let left = (512 - real % 512) % 512 + 1024;
            self.padding_left = Some(left);
            return self.read(buf);
        }
        self.real.set(self.real.get() + n as u64);
        Ok(n)
    }
}

/// One stream read by several readers in turn (a parser, and code that reads data
/// behind it); each clone reads from the same position.
pub struct SharedReader<R>(Rc<RefCell<R>>);

impl<R> SharedReader<R> {
    pub fn new(inner: R) -> Self {
        SharedReader(Rc::new(RefCell::new(inner)))
    }
}

impl<R> Clone for SharedReader<R> {
    fn clone(&self) -> Self {
        SharedReader(self.0.clone())
    }
}

impl<R: Read> Read for SharedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.borrow_mut().read(buf)
    }
}

/// A transfer speed below a limit over a whole window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TooSlow {
    /// Bytes per second over the window.
    pub rate: f64,
    pub limit: u64,
    pub window: Duration,
}

impl fmt::Display for TooSlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.0} bytes/s for {:.0} s, below the low-speed limit of {} bytes/s",
            self.rate,
            self.window.as_secs_f64(),
            self.limit
        )
    }
}

/// Bytes received since a point in time: a low-speed check looks at each window.
#[derive(Debug)]
pub struct SpeedWindow {
    start: Instant,
    bytes: u64,
}

impl Default for SpeedWindow {
    fn default() -> Self {
        SpeedWindow {
            start: Instant::now(),
            bytes: 0,
        }
    }
}

impl SpeedWindow {
    /// Counts `n` bytes; [`TooSlow`] when a whole `window` has passed below `limit`
    /// bytes per second (the window starts again either way). A `limit` of 0 never
    /// fails.
    pub fn add(&mut self, n: u64, limit: u64, window: Duration) -> Option<TooSlow> {
        self.bytes += n;
        let elapsed = self.start.elapsed();
        if limit == 0 || elapsed < window {
            return None;
        }
        let rate = self.bytes as f64 / elapsed.as_secs_f64();
        *self = SpeedWindow::default();
        (rate < limit as f64).then_some(TooSlow {
            rate,
            limit,
            window,
        })
    }
}

/// A reader that fails with [`io::ErrorKind::TimedOut`] when its data arrives below
/// `limit` bytes per second over a whole `window`.
pub struct LowSpeedReader<R> {
    inner: R,
    limit: u64,
    window: Duration,
    seen: SpeedWindow,
}

impl<R: Read> LowSpeedReader<R> {
    pub fn new(inner: R, limit: u64, window: Duration) -> Self {
        LowSpeedReader {
            inner,
            limit,
            window,
            seen: SpeedWindow::default(),
        }
    }
}

impl<R: Read> Read for LowSpeedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(slow) = self.seen.add(n as u64, self.limit, self.window) {
            return Err(io::Error::new(io::ErrorKind::TimedOut, slow.to_string()));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Interrupted once, then a few bytes per read.
    struct Choppy {
        data: Vec<u8>,
        at: usize,
        interrupted: bool,
    }

    impl Read for Choppy {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if !self.interrupted {
                self.interrupted = true;
                return Err(io::ErrorKind::Interrupted.into());
            }
            let n = buf.len().min(7).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn copy_wide_copies_everything_through_short_and_interrupted_reads() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut r = Choppy {
            data: data.clone(),
            at: 0,
            interrupted: false,
        };
        let mut out = Vec::new();
        assert_eq!(
            copy_wide(&mut r, &mut out, u64::MAX).unwrap(),
            data.len() as u64
        );
        assert!(out == data);
        // Whatever the length expected.
        for len in [0, 100, data.len() as u64] {
            let mut big = &data[..];
            let mut out = Vec::new();
            assert_eq!(
                copy_wide(&mut big, &mut out, len).unwrap(),
                data.len() as u64
            );
            assert!(out == data);
        }
    }

    #[test]
    fn read_at_most_refuses_one_byte_more() {
        assert_eq!(
            read_at_most(&b"abcd"[..], 4).unwrap(),
            Some(b"abcd".to_vec())
        );
        assert_eq!(read_at_most(&b"abcde"[..], 4).unwrap(), None);
        assert_eq!(read_at_most(&b""[..], 0).unwrap(), Some(Vec::new()));
        assert_eq!(
            read_at_most(&b"a"[..], u64::MAX).unwrap(),
            Some(b"a".to_vec())
        );
    }

    #[test]
    fn hashing_reader_hashes_counts_and_sees_the_end() {
        let data = b"hello layer";
        let (mut r, st) = HashingReader::new(&data[..]);
        io::copy(&mut r, &mut io::sink()).unwrap();
        assert_eq!(
            st.sha256().map(|h| hex::encode(h.finalize())),
            Some(hex::encode(Sha256::digest(data)))
        );
        assert_eq!(st.len(), data.len() as u64);
        assert!(st.at_end());
        let (mut r, st) = HashingReader::maybe(&data[..], false);
        io::copy(&mut (&mut r).take(3), &mut io::sink()).unwrap();
        assert_eq!(
            (st.sha256().is_none(), st.len(), st.at_end()),
            (true, 3, false)
        );
    }

    #[test]
    fn padding_completes_a_short_stream() {
        let (mut pad, real) = TarPad::new(&[1u8; 700][..]);
        let mut out = Vec::new();
        pad.read_to_end(&mut out).unwrap();
        assert_eq!(out.len(), 1024 + 1024);
        assert_eq!(real.get(), 700);
        assert!(out[700..].iter().all(|&b| b == 0));
        let (mut pad, _) = TarPad::new(&[1u8; 1024][..]);
        out.clear();
        pad.read_to_end(&mut out).unwrap();
        assert_eq!(out.len(), 1024 + 1024);
    }

    #[test]
    fn shared_readers_continue_each_other() {
        let mut a = SharedReader::new(&b"abcdef"[..]);
        let mut b = a.clone();
        let mut two = [0u8; 2];
        a.read_exact(&mut two).unwrap();
        assert_eq!(&two, b"ab");
        b.read_exact(&mut two).unwrap();
        assert_eq!(&two, b"cd");
    }

    #[test]
    fn slow_windows_are_reported_once_per_window() {
        let mut w = SpeedWindow::default();
        assert_eq!(w.add(10, 1024, Duration::from_secs(3600)), None);
        let mut w = SpeedWindow::default();
        std::thread::sleep(Duration::from_millis(20));
        let slow = w.add(1, 1024, Duration::from_millis(10)).unwrap();
        assert!(slow
            .to_string()
            .contains("below the low-speed limit of 1024 bytes/s"));
        assert_eq!(w.bytes, 0);
        let mut w = SpeedWindow::default();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(w.add(1 << 20, 1024, Duration::from_millis(10)), None);
        let mut w = SpeedWindow::default();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(w.add(1, 0, Duration::from_millis(10)), None);
    }

    #[test]
    fn slow_readers_time_out() {
        struct Trickle;
        impl Read for Trickle {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                std::thread::sleep(Duration::from_millis(5));
                buf[0] = 0;
                Ok(1)
            }
        }
        let mut r = LowSpeedReader::new(Trickle, 1 << 20, Duration::from_millis(10));
        let e = io::copy(&mut r, &mut io::sink()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        let mut fast = LowSpeedReader::new(&[0u8; 4096][..], 1, Duration::from_secs(60));
        assert_eq!(io::copy(&mut fast, &mut io::sink()).unwrap(), 4096);
    }
}
