//! Random access to a compressed disk image: the stream is decompressed into a sparse
//! temporary file only as far as the reads reach (the partition table and the `boot`
//! partition of a raw image lie in its first GiB). Blocks of zeros are skipped, not
//! written, so an image's empty space takes no room on disk.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};

use super::{Compression, ReadAt};

/// No bootimage's disk is larger than this; a stream that decompresses past it is refused.
const MAX_SIZE: u64 = 64 << 30;

const CHUNK: usize = 1 << 20;

pub(super) struct Spool {
    stream: Box<dyn Read>,
    file: File,
    /// How far the stream has been decompressed into `file`.
    filled: u64,
    /// Whether the stream has ended (then `filled` is the disk's size).
    ended: bool,
}

impl Spool {
    pub(super) fn new(file: File, c: Compression) -> io::Result<Spool> {
        let mut file = file;
        file.seek(SeekFrom::Start(0))?;
        let input = BufReader::with_capacity(256 * 1024, file);
        let stream: Box<dyn Read> = match c {
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(input)),
            Compression::Xz => Box::new(liblzma::read::XzDecoder::new_multi_decoder(input)),
        };
        Ok(Spool {
            stream,
            file: tempfile::tempfile()?,
            filled: 0,
            ended: false,
        })
    }

    /// Decompresses until `end` is spooled or the stream ends.
    fn fill_to(&mut self, end: u64) -> io::Result<()> {
        let mut buf = vec![0u8; CHUNK];
        while self.filled < end && !self.ended {
            let n = super::read_up_to(&mut self.stream, &mut buf)?;
            if n == 0 {
                self.ended = true;
                break;
            }
            if self.filled + n as u64 > MAX_SIZE {
                return Err(io::Error::other(format!(
                    "it decompresses to more than {} GiB, more than a bootimage's disk",
                    MAX_SIZE >> 30
                )));
            }
            if buf[..n].iter().any(|&b| b != 0) {
                self.file.seek(SeekFrom::Start(self.filled))?;
                self.file.write_all(&buf[..n])?;
            }
            self.filled += n as u64;
        }
        // Zeros skipped at the end still count: the file is as long as what was read.
        self.file.set_len(self.filled)
    }
}

impl ReadAt for Spool {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        self.fill_to(end)?;
        if end > self.filled {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.file.read_at(offset, buf)
    }

    fn size(&self) -> Option<u64> {
        self.ended.then_some(self.filled)
    }
}
