//! PEM blocks found as Go's `encoding/pem.Decode` finds them, which is how
//! containers/image and sigstore read keys and certificates: the first block whose
//! BEGIN line starts a line, headers (`Key: value` lines) skipped, the base64 body with
//! spaces, tabs and line breaks ignored, and what follows the END line's line break
//! left as the rest. A candidate that is not a whole block is skipped and the search
//! goes on after its BEGIN line, as in Go.

use base64::engine::{general_purpose::GeneralPurpose, DecodePaddingMode, GeneralPurposeConfig};
use base64::Engine as _;

/// Go's `base64.StdEncoding`: padding required, trailing bits not checked.
const GO_STD: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

/// Decodes base64 as Go's `base64.StdEncoding` does (`\r` and `\n` ignored).
pub(crate) fn go_base64(text: &[u8]) -> Option<Vec<u8>> {
    let clean: Vec<u8> = text
        .iter()
        .copied()
        .filter(|b| *b != b'\r' && *b != b'\n')
        .collect();
    GO_STD.decode(clean).ok()
}

/// One PEM block.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Block {
    /// The label of the BEGIN line (`CERTIFICATE`, `PUBLIC KEY`).
    pub kind: String,
    /// Whether the block had `Key: value` header lines.
    pub has_headers: bool,
    /// The decoded body.
    pub bytes: Vec<u8>,
}

/// Go's `getLine`: the line without its line break and trailing spaces and tabs, and
/// what follows the line break.
fn line(data: &[u8]) -> (&[u8], &[u8]) {
    let (mut end, next) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (i, i + 1),
        None => (data.len(), data.len()),
    };
    if end > 0 && end < data.len() && data[end - 1] == b'\r' {
        end -= 1;
    }
    let mut l = &data[..end];
    while let [rest @ .., b' ' | b'\t'] = l {
        l = rest;
    }
    (l, &data[next..])
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The first PEM block of `data` and what follows it, or `None` when there is none.
pub(crate) fn decode(data: &[u8]) -> Option<(Block, &[u8])> {
    const START: &[u8] = b"\n-----BEGIN ";
    const END: &[u8] = b"\n-----END ";
    const EOL: &[u8] = b"-----";
    let mut rest = data;
    loop {
        if rest.starts_with(&START[1..]) {
            rest = &rest[START.len() - 1..];
        } else if let Some(i) = find(rest, START) {
            rest = &rest[i + START.len()..];
        } else {
            return None;
        }
        let (type_line, after) = line(rest);
        rest = after;
        let Some(kind) = type_line.strip_suffix(EOL) else {
            continue;
        };
        let mut has_headers = false;
        loop {
            if rest.is_empty() {
                return None;
            }
            let (l, next) = line(rest);
            if !l.contains(&b':') {
                break;
            }
            has_headers = true;
            rest = next;
        }
        let (end, trailer_at) = if !has_headers && rest.starts_with(&END[1..]) {
            (0, END.len() - 1)
        } else {
            match find(rest, END) {
                Some(i) => (i, i + END.len()),
                None => continue,
            }
        };
        let trailer = &rest[trailer_at..];
        let trailer_len = kind.len() + EOL.len();
        if trailer.len() < trailer_len {
            continue;
        }
        let (head, rest_of_end_line) = trailer.split_at(trailer_len);
        if !head.starts_with(kind) || !head.ends_with(EOL) {
            continue;
        }
        if !line(rest_of_end_line).0.is_empty() {
            continue;
        }
        let body: Vec<u8> = rest[..end]
            .iter()
            .copied()
            .filter(|b| *b != b' ' && *b != b'\t')
            .collect();
        let Some(bytes) = go_base64(&body) else {
            continue;
        };
        let (_, after_end) = line(&rest[end + END.len() - 1..]);
        let block = Block {
            kind: String::from_utf8_lossy(kind).into_owned(),
            has_headers,
            bytes,
        };
        return Some((block, after_end));
    }
}

/// Go's `bytes.TrimSpace` for ASCII whitespace.
pub(crate) fn trim(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if !first.is_ascii_whitespace() && *first != 0x0b {
            break;
        }
        b = rest;
    }
    while let [rest @ .., last] = b {
        if !last.is_ascii_whitespace() && *last != 0x0b {
            break;
        }
        b = rest;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_found_as_go_finds_them() {
        let (b, rest) = decode(b"junk\n-----BEGIN X-----\nAAEC\n-----END X-----\nmore").unwrap();
        assert_eq!(
            (b.kind.as_str(), b.bytes.as_slice()),
            ("X", &[0u8, 1, 2][..])
        );
        assert_eq!(rest, b"more");
        // Headers are skipped; a CRLF file reads the same.
        let (b, rest) =
            decode(b"-----BEGIN X-----\r\nProc-Type: 4\r\n\r\nAA\r\n EC\r\n-----END X-----\r\n")
                .unwrap();
        assert!(b.has_headers);
        assert_eq!(b.bytes, [0, 1, 2]);
        assert!(rest.is_empty());
        // The END line must name the same type and end the line; a broken candidate is
        // skipped for the next one.
        assert!(decode(b"-----BEGIN X-----\nAAEC\n-----END Y-----\n").is_none());
        assert!(decode(b"-----BEGIN X-----\nAAEC\n-----END X----- z\n").is_none());
        let (b, _) = decode(
            b"-----BEGIN X-----\n!!\n-----END X-----\n-----BEGIN Z-----\nAAEC\n-----END Z-----\n",
        )
        .unwrap();
        assert_eq!(b.kind, "Z");
        // BEGIN must start a line; a block with trailing blank lines leaves them.
        assert!(decode(b"x-----BEGIN X-----\nAAEC\n-----END X-----\n").is_none());
        let (_, rest) = decode(b"-----BEGIN X-----\nAAEC\n-----END X-----\n\n").unwrap();
        assert_eq!(rest, b"\n");
        // An empty body.
        let (b, _) = decode(b"-----BEGIN X-----\n-----END X-----\n").unwrap();
        assert!(b.bytes.is_empty());
        assert_eq!(trim(b" \n x \t"), b"x");
    }
}
