//! JSON objects read the way containers/image reads policies and signature payloads
//! (its `ParanoidUnmarshalJSONObject`): a duplicated key, an unknown key or a value of
//! the wrong type is an error, never ignored. Errors name keys, never values.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::io::parse;

/// The fields of one JSON object, in order, each value unparsed.
pub(crate) struct Object {
    fields: Vec<(String, Box<RawValue>)>,
}

/// Why a JSON object was refused: a message that quotes keys only.
#[derive(Debug)]
pub(crate) struct StrictError(pub String);

impl fmt::Display for StrictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StrictError {}

fn err(msg: String) -> StrictError {
    StrictError(msg)
}

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Object;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Object, A::Error> {
                let mut fields: Vec<(String, Box<RawValue>)> = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    if fields.iter().any(|(x, _)| *x == k) {
                        return Err(de::Error::custom(format!(
                            "duplicate key {}",
                            parse::name_shown(&k)
                        )));
                    }
                    let v: Box<RawValue> = m.next_value()?;
                    fields.push((k, v));
                }
                Ok(Object { fields })
            }
        }
        d.deserialize_map(V)
    }
}

/// What a serde_json error says, without the input's bytes (its messages quote only
/// types, keys it was given by us, and positions).
fn shown(e: &serde_json::Error) -> String {
    let what = match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            "not valid JSON".to_string()
        }
        _ => {
            // "invalid type: string \"…\", expected …" would quote a value: keep the
            // expectation only.
            let s = e.to_string();
            match s.split_once(", expected ") {
                Some((_, exp)) => {
                    format!("expected {}", exp.split(" at line").next().unwrap_or(exp))
                }
                None => s.split(" at line").next().unwrap_or(&s).to_string(),
            }
        }
    };
    format!("{what} (line {}, column {})", e.line(), e.column())
}

/// Parses `text` as one JSON object.
pub(crate) fn object(text: &str) -> Result<Object, StrictError> {
    serde_json::from_str::<Object>(text).map_err(|e| err(shown(&e)))
}

/// Parses `text` as a JSON array of unparsed values.
pub(crate) fn array(text: &str) -> Result<Vec<Box<RawValue>>, StrictError> {
    serde_json::from_str::<Vec<Box<RawValue>>>(text).map_err(|e| err(shown(&e)))
}

/// Parses `text` as a `T` (a string, a list of strings, a number...).
pub(crate) fn value<T: de::DeserializeOwned>(text: &str, key: &str) -> Result<T, StrictError> {
    serde_json::from_str::<T>(text).map_err(|e| err(format!("{key:?}: {}", shown(&e))))
}

impl Object {
    /// The keys, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(k, _)| k.as_str())
    }

    /// The fields, in order.
    pub(crate) fn fields(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), &**v))
    }

    /// The unparsed value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&RawValue> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| &**v)
    }

    /// Refuses any key not in `allowed`.
    pub(crate) fn only(&self, allowed: &[&str]) -> Result<(), StrictError> {
        match self.keys().find(|k| !allowed.contains(k)) {
            Some(k) => Err(err(format!("unknown key {}", parse::name_shown(k)))),
            None => Ok(()),
        }
    }

    /// Refuses any key not in `fields`, and any of `fields` missing.
    pub(crate) fn exactly(&self, fields: &[&str]) -> Result<(), StrictError> {
        self.only(fields)?;
        match fields.iter().find(|f| self.get(f).is_none()) {
            Some(f) => Err(err(format!("key {f:?} is missing"))),
            None => Ok(()),
        }
    }

    /// The value of `key` (a name of the program's, shown in messages) as a `T`, if the
    /// key is there.
    pub(crate) fn parse<T: de::DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<T>, StrictError> {
        self.get(key).map(|v| value(v.get(), key)).transpose()
    }

    /// The value of `key` as a `T`; an error when the key is missing.
    pub(crate) fn require<T: de::DeserializeOwned>(&self, key: &str) -> Result<T, StrictError> {
        self.parse(key)?
            .ok_or_else(|| err(format!("key {key:?} is missing")))
    }

    /// The object under `key`; an error when the key is missing or not an object.
    pub(crate) fn object(&self, key: &str) -> Result<Object, StrictError> {
        let v = self
            .get(key)
            .ok_or_else(|| err(format!("key {key:?} is missing")))?;
        object(v.get()).map_err(|e| err(format!("{key:?}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_unknown_and_missing_keys_are_errors() {
        let e = object(r#"{"a":1,"a":2}"#).err().unwrap();
        assert!(e.0.contains("duplicate key"), "{e}");
        let o = object(r#"{"a":1,"b":"x"}"#).unwrap();
        assert!(o.only(&["a"]).is_err());
        assert!(o.exactly(&["a", "b", "c"]).is_err());
        o.exactly(&["a", "b"]).unwrap();
        assert_eq!(o.require::<u32>("a").unwrap(), 1);
        let e = o.require::<u32>("b").unwrap_err();
        assert!(!e.0.contains("\"x\""), "a value is quoted: {e}");
        assert!(object("[1]").is_err());
        assert!(object(r#"{"a":1} x"#).is_err());
    }
}
