//! Ignition configs: one neutral model of what to put on the node, rendered by one
//! module per spec family (`v2` for 2.2.0, `v3` for 3.0.0-3.6.0). Only this module
//! knows spec versions.

pub(crate) mod document;
pub(crate) mod merge;
pub(crate) mod node;
pub(crate) mod rules;
pub mod schema;
pub mod translate;
pub(crate) mod units;
mod v2;
mod v3;
pub(crate) mod verify;

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

/// An Ignition config spec version that this tool reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SpecVersion {
    /// Spec 2.2.0, read by Ignition v0.x (bootimages 4.1-4.5).
    V2_2,
    /// Spec 3.0.0.
    V3_0,
    /// Spec 3.1.0.
    V3_1,
    /// Spec 3.2.0.
    V3_2,
    /// Spec 3.3.0.
    V3_3,
    /// Spec 3.4.0.
    V3_4,
    /// Spec 3.5.0.
    V3_5,
    /// Spec 3.6.0.
    V3_6,
}

/// All spec versions, oldest first.
pub const SPECS: [SpecVersion; 8] = [
    SpecVersion::V2_2,
    SpecVersion::V3_0,
    SpecVersion::V3_1,
    SpecVersion::V3_2,
    SpecVersion::V3_3,
    SpecVersion::V3_4,
    SpecVersion::V3_5,
    SpecVersion::V3_6,
];

/// Why a spec version was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unsupported Ignition spec {0:?}: this tool writes 2.2.0 and 3.0.0 to 3.6.0")]
pub struct SpecError(pub String);

impl SpecVersion {
    /// `major.minor.0`, as `ignition.version` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SpecVersion::V2_2 => "2.2.0",
            SpecVersion::V3_0 => "3.0.0",
            SpecVersion::V3_1 => "3.1.0",
            SpecVersion::V3_2 => "3.2.0",
            SpecVersion::V3_3 => "3.3.0",
            SpecVersion::V3_4 => "3.4.0",
            SpecVersion::V3_5 => "3.5.0",
            SpecVersion::V3_6 => "3.6.0",
        }
    }

    /// Spec 2.x (Ignition v0.x) rather than 3.x.
    pub fn is_v2(self) -> bool {
        self == SpecVersion::V2_2
    }

    /// URL schemes a `source` may use in this spec.
    pub fn url_schemes(self) -> &'static [&'static str] {
        match self {
            SpecVersion::V2_2 => &["http", "https", "tftp", "s3", "data", "oem"],
            SpecVersion::V3_0 => &["http", "https", "tftp", "s3", "data"],
            SpecVersion::V3_1 | SpecVersion::V3_2 | SpecVersion::V3_3 => {
                &["http", "https", "tftp", "s3", "gs", "data"]
            }
            // 3.4 added `arn`; 3.5 and 3.6 add no scheme (Ignition's migrating-configs).
            SpecVersion::V3_4 | SpecVersion::V3_5 | SpecVersion::V3_6 => {
                &["http", "https", "tftp", "s3", "arn", "gs", "data"]
            }
        }
    }
}

impl FromStr for SpecVersion {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let full = match s.matches('.').count() {
            1 => format!("{s}.0"),
            _ => s.to_string(),
        };
        SPECS
            .iter()
            .copied()
            .find(|v| v.as_str() == full)
            .ok_or_else(|| SpecError(s.to_string()))
    }
}

impl fmt::Display for SpecVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for SpecVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Reads a config of any spec from 2.0.0 to 3.6.0, checks it against its own spec and
/// writes it translated to `to`, as `inject --base` reads a base.
pub fn translate_config(name: &str, bytes: &[u8], to: SpecVersion) -> anyhow::Result<Vec<u8>> {
    let doc = document::Document::parse(name, bytes)?;
    let (doc, _) = merge::translated(doc, to)?;
    let mut out = Vec::new();
    doc.write(&mut out)?;
    Ok(out)
}

/// Where a file's bytes come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Inline, as a `data:;base64,` URL.
    Inline(Vec<u8>),
    /// Inline too, but too big to hold in memory: the rendered config carries
    /// [`stream_mark`] of this index in its place, and [`write_streamed`] writes the
    /// base64 of that payload there while writing the config out.
    Streamed(usize),
    /// A URL Ignition fetches.
    Url(String),
}

/// Stands for the base64 of the `i`th [`Source::Streamed`] payload in a rendered
/// config. It is valid base64 itself (of "mcd-inject:payload-I-goes-here"), so the
/// config validates.
pub(crate) fn stream_mark(i: usize) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("mcd-inject:payload-{i}-goes-here"))
}

/// The length of the base64 of `n` bytes.
pub(crate) fn base64_len(n: u64) -> u64 {
    n.div_ceil(3) * 4
}

/// One payload to splice in: its bytes, read as they are written, and their length.
pub(crate) struct Streamed<'p> {
    pub read: Box<dyn std::io::Read + 'p>,
    pub len: u64,
}

/// Writes a config through `write_config`, replacing the data URL that holds the
/// [`stream_mark`] of each payload with the base64 of that payload. Every payload must
/// be spliced in exactly once. Returns the bytes written.
pub(crate) fn write_streamed<'p, W: std::io::Write>(
    write_config: impl FnOnce(&mut Splice<'p, W>) -> std::io::Result<()>,
    payloads: Vec<Streamed<'p>>,
    out: W,
) -> anyhow::Result<u64> {
    let mut splice = Splice {
        out,
        marks: (0..payloads.len())
            .map(|i| format!("data:;base64,{}", stream_mark(i)).into_bytes())
            .collect(),
        pending: Vec::new(),
        payloads: payloads.into_iter().map(Some).collect(),
        written: 0,
    };
    write_config(&mut splice)?;
    splice.pass(true)?;
    if splice.payloads.iter().any(Option::is_some) {
        anyhow::bail!("the config must hold each streamed payload exactly once");
    }
    Ok(splice.written)
}

/// The writer [`write_streamed`] hands out: passes the config through and writes a
/// payload's base64 where its mark is.
pub(crate) struct Splice<'p, W> {
    out: W,
    marks: Vec<Vec<u8>>,
    /// Bytes not yet written that may begin a mark.
    pending: Vec<u8>,
    payloads: Vec<Option<Streamed<'p>>>,
    written: u64,
}

impl<W: std::io::Write> Splice<'_, W> {
    /// The first mark in what is pending: its place and index.
    fn next_mark(&self) -> Option<(usize, usize)> {
        self.marks
            .iter()
            .enumerate()
            .filter_map(|(k, m)| {
                self.pending
                    .windows(m.len())
                    .position(|w| w == m.as_slice())
                    .map(|i| (i, k))
            })
            .min()
    }

    /// Writes what cannot be part of a mark (everything, at the end), splicing a
    /// payload in at its mark.
    fn pass(&mut self, end: bool) -> std::io::Result<()> {
        let other = |msg: &str| std::io::Error::other(msg.to_string());
        while let Some((i, k)) = self.next_mark() {
            let head = i + "data:;base64,".len();
            self.out.write_all(&self.pending[..head])?;
            let mut payload = self.payloads[k]
                .take()
                .ok_or_else(|| other("the config must hold each streamed payload exactly once"))?;
            let mut enc = base64::write::EncoderWriter::new(
                &mut self.out,
                &base64::engine::general_purpose::STANDARD,
            );
            let copied = crate::io::copy_wide(&mut payload.read, &mut enc, payload.len)?;
            enc.finish()?;
            drop(enc);
            if copied != payload.len {
                return Err(other(&format!(
                    "the payload changed while it was written ({copied} bytes, expected {})",
                    payload.len
                )));
            }
            self.written += head as u64 + base64_len(copied);
            let mark_len = self.marks[k].len();
            self.pending.drain(..i + mark_len);
        }
        let longest = self.marks.iter().map(Vec::len).max().unwrap_or(1);
        let keep = if end {
            0
        } else {
            self.pending.len().min(longest - 1)
        };
        let n = self.pending.len() - keep;
        self.out.write_all(&self.pending[..n])?;
        self.written += n as u64;
        self.pending.drain(..n);
        Ok(())
    }
}

impl<W: std::io::Write> std::io::Write for Splice<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        self.pass(false)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// A regular file to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct File {
    pub path: String,
    pub mode: u32,
    pub source: Source,
    /// Hex sha512 of the bytes as stored (the only hash spec 2.x knows).
    pub sha512: String,
}

/// A symbolic link to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub path: String,
    pub target: String,
}

/// A systemd drop-in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Dropin {
    pub name: String,
    pub contents: String,
}

/// A systemd unit: written, enabled, masked, or only given drop-ins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    pub name: String,
    pub contents: Option<String>,
    pub enabled: bool,
    pub mask: bool,
    pub dropins: Vec<Dropin>,
}

/// What to put on the node, independent of any spec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Config {
    pub files: Vec<File>,
    pub links: Vec<Link>,
    pub units: Vec<Unit>,
}

/// A model that a spec cannot express, or a broken model.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum RenderError {
    #[error("spec {spec} cannot express {what}")]
    Unsupported { spec: SpecVersion, what: String },
    #[error("the config would hold {what} twice")]
    Duplicate { what: String },
}

impl Config {
    /// Renders the config for a spec version, refusing what that spec cannot say.
    pub fn render(&self, spec: SpecVersion) -> Result<Value, RenderError> {
        self.check(spec)?;
        Ok(if spec.is_v2() {
            v2::render(self)
        } else {
            v3::render(self, spec)
        })
    }

    fn check(&self, spec: SpecVersion) -> Result<(), RenderError> {
        let mut paths = std::collections::BTreeSet::new();
        for p in self
            .files
            .iter()
            .map(|f| &f.path)
            .chain(self.links.iter().map(|l| &l.path))
        {
            if !paths.insert(p) {
                return Err(RenderError::Duplicate {
                    what: format!("path {p}"),
                });
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for u in &self.units {
            if !names.insert(&u.name) {
                return Err(RenderError::Duplicate {
                    what: format!("unit {}", u.name),
                });
            }
        }
        for f in &self.files {
            if let Source::Url(u) = &f.source {
                let scheme = u.split_once(':').map(|(s, _)| s).unwrap_or("");
                if !spec.url_schemes().contains(&scheme) {
                    return Err(RenderError::Unsupported {
                        spec,
                        what: format!("a {scheme:?} URL ({u}) for {}", f.path),
                    });
                }
            }
        }
        Ok(())
    }
}

/// A `data:` URL of bytes, base64-encoded, with no media type.
pub fn data_url(bytes: &[u8]) -> String {
    use base64::Engine;
    format!(
        "data:;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// The bytes of a `data:` URL (base64 or percent-encoded).
pub fn decode_data_url(url: &str) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context;
    use base64::Engine;
    let rest = url.strip_prefix("data:").context("not a data: URL")?;
    let (meta, data) = rest.split_once(',').context("data: URL without a comma")?;
    if meta.ends_with(";base64") {
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .context("bad base64 in data: URL")
    } else {
        percent_decode(data)
    }
}

fn percent_decode(s: &str) -> anyhow::Result<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).unwrap_or("");
            out.push(
                u8::from_str_radix(hex, 16)
                    .map_err(|_| anyhow::anyhow!("bad percent escape in data: URL"))?,
            );
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// Serialises a config the one way this tool does: pretty, keys in insertion order,
/// one trailing newline. Same value, same bytes.
pub(crate) fn to_bytes(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("JSON values always serialise");
    out.push(b'\n');
    out
}

/// A config that does not parse as JSON, with where.
#[derive(Debug, thiserror::Error)]
#[error("{name}: invalid JSON at line {line}, column {column}: {msg}")]
pub struct ParseError {
    /// The input's name (a path, or `<stdin>`).
    pub name: String,
    /// Where the JSON parser stopped (1-based).
    pub line: usize,
    /// The column on that line (1-based).
    pub column: usize,
    /// The kind of error, in words that quote nothing of the config (a config may
    /// hold secrets: `--base` is the cluster's own).
    pub msg: String,
}

impl ParseError {
    /// The error serde_json gives for `name`: its place and kind.
    pub fn new(name: &str, e: serde_json::Error) -> ParseError {
        ParseError {
            name: name.to_string(),
            line: e.line(),
            column: e.column(),
            msg: crate::io::parse::json_kind(&e),
        }
    }
}

/// Parses a config's JSON, naming the line and column of any error.
pub fn parse_json(name: &str, bytes: &[u8]) -> Result<Value, ParseError> {
    serde_json::from_slice(bytes).map_err(|e| ParseError::new(name, e))
}

/// The `ignition.version` of a config, as written.
pub(crate) fn version_of(v: &Value) -> Option<&str> {
    v.get("ignition")?.get("version")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn spec_versions_parse_and_order() {
        assert_eq!("3.2".parse::<SpecVersion>().unwrap(), SpecVersion::V3_2);
        assert_eq!("2.2.0".parse::<SpecVersion>().unwrap(), SpecVersion::V2_2);
        assert!("2.1.0".parse::<SpecVersion>().is_err());
        assert_eq!("3.6".parse::<SpecVersion>().unwrap(), SpecVersion::V3_6);
        assert_eq!("3.5.0".parse::<SpecVersion>().unwrap().as_str(), "3.5.0");
        for bad in ["3.7.0", "3.6.0-experimental", "3.7.0-experimental"] {
            assert!(bad.parse::<SpecVersion>().is_err(), "{bad}");
        }
        assert!(SpecVersion::V2_2 < SpecVersion::V3_0);
        assert!(SpecVersion::V3_4 < SpecVersion::V3_5 && SpecVersion::V3_5 < SpecVersion::V3_6);
    }

    #[test]
    fn streamed_payloads_are_spliced_in() {
        let payload = b"\x1f\x8b any payload bytes";
        let second = b"\x1f\x8b another";
        let one = |p: &'static [u8]| Streamed {
            read: Box::new(p),
            len: p.len() as u64,
        };
        let (m0, m1) = (stream_mark(0), stream_mark(1));
        let rendered = format!(r#"{{"a":"data:;base64,{m1}","b":"data:;base64,{m0}"}}"#);
        let want = format!(
            r#"{{"a":"{}","b":"{}"}}"#,
            data_url(second),
            data_url(payload)
        );
        // Whole, and a byte at a time (a mark split over writes); in any order.
        for piece in [rendered.len(), 1] {
            let mut out = Vec::new();
            let write = |w: &mut Splice<'_, &mut Vec<u8>>| {
                rendered
                    .as_bytes()
                    .chunks(piece)
                    .try_for_each(|c| w.write_all(c))
            };
            let n = write_streamed(write, vec![one(payload), one(second)], &mut out).unwrap();
            assert_eq!(n, out.len() as u64);
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
        let single = format!(r#"{{"a":"data:;base64,{m0}"}}"#);
        let twice = format!("{single}{single}");
        let write = |w: &mut Splice<'_, Vec<u8>>| w.write_all(twice.as_bytes());
        assert!(write_streamed(write, vec![one(payload)], Vec::new()).is_err());
        let none = |w: &mut Splice<'_, Vec<u8>>| w.write_all(b"{}");
        assert!(write_streamed(none, vec![one(payload)], Vec::new()).is_err());
        let missing = |w: &mut Splice<'_, Vec<u8>>| w.write_all(single.as_bytes());
        assert!(write_streamed(missing, vec![one(payload), one(second)], Vec::new()).is_err());
        let short = Streamed {
            read: Box::new(&payload[..]),
            len: 3,
        };
        let write = |w: &mut Splice<'_, Vec<u8>>| w.write_all(single.as_bytes());
        assert!(write_streamed(write, vec![short], Vec::new()).is_err());
    }

    #[test]
    fn data_urls_round_trip() {
        let u = data_url(b"\x00\x01hello");
        assert!(u.starts_with("data:;base64,"));
        assert_eq!(decode_data_url(&u).unwrap(), b"\x00\x01hello");
        assert_eq!(decode_data_url("data:,a%20b").unwrap(), b"a b");
    }

    #[test]
    fn parse_errors_name_line_and_column() {
        let e = parse_json("base.ign", b"{\n  \"a\": 1,\n  oops\n}").unwrap_err();
        assert_eq!((e.line, e.column), (3, 3));
        assert!(e
            .to_string()
            .starts_with("base.ign: invalid JSON at line 3, column 3"));
    }

    #[test]
    fn named_error_for_inexpressible_sources() {
        let c = Config {
            files: vec![File {
                path: "/x".into(),
                mode: 0o644,
                source: Source::Url("gs://b/x".into()),
                sha512: "0".repeat(128),
            }],
            ..Default::default()
        };
        assert!(matches!(
            c.render(SpecVersion::V2_2),
            Err(RenderError::Unsupported { .. })
        ));
        assert!(c.render(SpecVersion::V3_2).is_ok());
    }
}
