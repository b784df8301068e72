//! Parsing the input files that may hold secrets (auth files and pull secrets,
//! registries.conf and its drop-ins, policy.json, registries.d, mirror YAML): an error
//! names the file, the line and column and the kind of error, and never quotes the
//! file's bytes. The parsers' own messages do (TOML's shows the line, serde's quote
//! values of the wrong type), so they are not passed on.

use anyhow::{anyhow, Error};
use serde::de::DeserializeOwned;

/// A registry, repository or scope name read from such a file, for messages: as
/// written when it could be one (lowercase letters, digits and `.-_/:*@[]`, as the
/// reference grammar has them), else not shown, as it may be a secret in the wrong place.
pub fn name_shown(name: &str) -> String {
    let plausible = name.len() <= 255
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b".-_/:*@[]".contains(&b));
    if plausible {
        format!("{name:?}")
    } else {
        "(a name not shown: it may hold a secret)".to_string()
    }
}

/// A URL read from such a file, for messages: any `user:password@` taken out.
pub fn url_shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// The error for `origin`, not a valid `what`: `kind`, at a place when known.
fn refused(origin: &str, what: &str, kind: &str, at: Option<(usize, usize)>) -> Error {
    let place = at.map_or(String::new(), |(l, c)| format!(" at line {l}, column {c}"));
    anyhow!("{origin} is not a valid {what}: {kind}{place} (its content is not shown: it may hold secrets)")
}

/// A field our own schema requires, named by serde (`missing field `x``): the name is
/// ours, not the file's.
fn missing_field(msg: &str) -> Option<&str> {
    let rest = msg.strip_prefix("missing field `")?;
    let name = &rest[..rest.find('`')?];
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        .then_some(name)
}

/// The kind of a deserialisation error that does not quote the input.
fn data_kind(msg: &str) -> String {
    match missing_field(msg) {
        Some(f) => format!("the field `{f}` is missing"),
        None => "a value of the wrong type, or a key that is not known".to_string(),
    }
}

/// The kind of a JSON error, in words that quote nothing of the input.
pub fn json_kind(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match e.classify() {
        Category::Syntax => "a JSON syntax error".to_string(),
        Category::Eof => "the JSON ends too early".to_string(),
        Category::Io => "a read error".to_string(),
        Category::Data => data_kind(&e.to_string()),
    }
}

/// JSON into `T`.
pub fn json<T: DeserializeOwned>(bytes: &[u8], origin: &str, what: &str) -> Result<T, Error> {
    serde_json::from_slice(bytes).map_err(|e| {
        let at = (e.line() > 0).then(|| (e.line(), e.column()));
        refused(origin, what, &json_kind(&e), at)
    })
}

/// The 1-based line and column of a byte offset of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, column)
}

/// TOML into `T`.
pub fn toml<T: DeserializeOwned>(text: &str, origin: &str, what: &str) -> Result<T, Error> {
    toml::from_str(text).map_err(|e| {
        let syntax = toml::from_str::<toml::Table>(text).is_err();
        let kind = if syntax {
            "a TOML syntax error".to_string()
        } else {
            data_kind(e.message())
        };
        let at = e.span().map(|s| line_column(text, s.start));
        refused(origin, what, &kind, at)
    })
}

/// One YAML document into `T` (for the documents of a stream, see [`yaml_value`]).
pub fn yaml<T: DeserializeOwned>(text: &str, origin: &str, what: &str) -> Result<T, Error> {
    serde_yaml_ng::from_str(text).map_err(|e| yaml_error(&e, text, origin, what))
}

/// A document of a YAML stream, as a value.
pub fn yaml_value(
    doc: serde_yaml_ng::Deserializer,
    text: &str,
    origin: &str,
    what: &str,
) -> Result<serde_yaml_ng::Value, Error> {
    use serde::Deserialize as _;
    serde_yaml_ng::Value::deserialize(doc).map_err(|e| yaml_error(&e, text, origin, what))
}

fn yaml_error(e: &serde_yaml_ng::Error, text: &str, origin: &str, what: &str) -> Error {
    let syntax = serde_yaml_ng::Deserializer::from_str(text).any(|d| {
        use serde::Deserialize as _;
        serde_yaml_ng::Value::deserialize(d).is_err()
    });
    let kind = if syntax {
        "a YAML syntax error".to_string()
    } else {
        data_kind(&e.to_string())
    };
    let at = e.location().map(|l| (l.line(), l.column()));
    refused(origin, what, &kind, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "c2VjcmV0OnBhc3N3b3Jk";

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        auths: std::collections::BTreeMap<String, String>,
        #[serde(default)]
        n: u32,
    }

    fn refuses_without_the_secret<T: std::fmt::Debug>(r: Result<T, Error>, want: &str) {
        let msg = format!("{:#}", r.expect_err("refused"));
        assert!(!msg.contains(SECRET), "{msg}");
        assert!(!msg.contains("c2Vj"), "{msg}");
        assert!(msg.contains(want), "{msg}");
        assert!(msg.contains("f.x is not a valid thing"), "{msg}");
    }

    #[test]
    fn json_errors_name_the_place_not_the_content() {
        let cases = [
            (format!(r#"{{"auths": "{SECRET}"}}"#), "wrong type"),
            (
                format!(r#"{{"auths": {{}}, "n": "{SECRET}"}}"#),
                "wrong type",
            ),
            (format!(r#"{{"auths": {{}}, "{SECRET}": 1}}"#), "not known"),
            (
                format!(r#"{{"auths": {{"a": "{SECRET}"}}"#),
                "ends too early",
            ),
            (format!(r#"{{"auths": {{"a": {SECRET}}}}}"#), "syntax"),
            (format!(r#"{{"{SECRET}": 1}}"#), "not known"),
            (r#"{"n": 1}"#.to_string(), "the field `auths` is missing"),
        ];
        for (text, want) in cases {
            refuses_without_the_secret(json::<Doc>(text.as_bytes(), "f.x", "thing"), want);
        }
        let e = json::<Doc>(b"{\n  \"auths\": 3}", "f.x", "thing").unwrap_err();
        assert!(e.to_string().contains("at line 2, column"), "{e}");
    }

    #[test]
    fn toml_errors_name_the_place_not_the_content() {
        let cases = [
            (format!("auths = \"{SECRET}\"\n"), "wrong type"),
            (
                format!("[auths]\na = \"{SECRET}\"\n{SECRET} = 1\n"),
                "not known",
            ),
            (format!("[auths]\na = \"{SECRET}\n"), "syntax"),
            (format!("{{\"auths\": \"{SECRET}\"}}\n"), "syntax"),
        ];
        for (text, want) in cases {
            refuses_without_the_secret(toml::<Doc>(&text, "f.x", "thing"), want);
        }
        let e = toml::<Doc>("[auths]\n\nn = = 1\n", "f.x", "thing").unwrap_err();
        assert!(e.to_string().contains("at line 3, column"), "{e}");
    }

    #[test]
    fn yaml_errors_name_the_place_not_the_content() {
        let cases = [
            (format!("auths: {SECRET}\n"), "wrong type"),
            (format!("auths: {{}}\n{SECRET}: 1\n"), "not known"),
            (format!("auths:\n  a: \"{SECRET}\n"), "syntax"),
            (format!("auths: [{SECRET}\n"), "syntax"),
        ];
        for (text, want) in cases {
            refuses_without_the_secret(yaml::<Doc>(&text, "f.x", "thing"), want);
        }
    }

    #[test]
    fn names_are_shown_when_they_can_be_names() {
        assert_eq!(
            name_shown("quay.example:443/ocp"),
            "\"quay.example:443/ocp\""
        );
        assert_eq!(name_shown("*.example.com"), "\"*.example.com\"");
        assert!(!name_shown(SECRET).contains(SECRET));
    }

    #[test]
    fn urls_are_shown_without_their_user() {
        assert_eq!(
            url_shown(&format!("https://u:{SECRET}@h.example/sigs/a@b")),
            "https://h.example/sigs/a@b"
        );
        assert_eq!(url_shown("file:///var/sigs"), "file:///var/sigs");
        assert_eq!(url_shown("http://h.example:80/x"), "http://h.example:80/x");
        assert_eq!(url_shown(SECRET), SECRET);
    }

    #[test]
    fn places_count_lines_and_characters() {
        assert_eq!(line_column("ab\ncdé\nx", 0), (1, 1));
        assert_eq!(line_column("ab\ncdé\nx", 3), (2, 1));
        assert_eq!(line_column("ab\ncdé\nx", 8), (3, 1));
        assert_eq!(line_column("ab\ncdé\nx", 7), (2, 4));
    }
}
