//! Validation against the published Ignition JSON schemas (`schemas/`), plus strict
//! key checks: the schemas never forbid unknown keys, so a misspelt key or a key of
//! the other spec family would pass them alone.
//!
//! The schemas use only `type`, `properties`, `items`, `required`, `allOf` and local
//! `$ref`s (draft-04); anything else in a schema is a bug here, reported loudly.

use serde_json::Value;

use super::SpecVersion;

fn schema_text(spec: SpecVersion) -> &'static str {
    match spec {
        SpecVersion::V2_2 => include_str!("schemas/ignition-2.2.json"),
        SpecVersion::V3_0 => include_str!("schemas/ignition-3.0.json"),
        SpecVersion::V3_1 => include_str!("schemas/ignition-3.1.json"),
        SpecVersion::V3_2 => include_str!("schemas/ignition-3.2.json"),
        SpecVersion::V3_3 => include_str!("schemas/ignition-3.3.json"),
        SpecVersion::V3_4 => include_str!("schemas/ignition-3.4.json"),
        SpecVersion::V3_5 => include_str!("schemas/ignition-3.5.json"),
        SpecVersion::V3_6 => include_str!("schemas/ignition-3.6.json"),
    }
}

/// What a config breaks, each with its JSON pointer.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Schema violations.
    pub errors: Vec<String>,
    /// Keys that the spec does not define.
    pub unknown_keys: Vec<String>,
}

impl Report {
    /// True when the config breaks nothing.
    pub fn is_clean(&self) -> bool {
        self.errors.is_empty() && self.unknown_keys.is_empty()
    }
}

/// Validates a config against the schema of `spec`, with strict keys.
pub fn validate(config: &Value, spec: SpecVersion) -> Report {
    Schema::load(spec).validate(config)
}

/// The schema of one spec, loaded once for checking a config part by part.
pub struct Schema {
    root: Value,
}

impl Schema {
    /// The bundled schema of `spec`, parsed.
    pub fn load(spec: SpecVersion) -> Schema {
        Schema {
            root: serde_json::from_str(schema_text(spec)).expect("bundled schemas parse"),
        }
    }

    /// Validates a whole config, with strict keys.
    pub fn validate(&self, config: &Value) -> Report {
        let mut report = Report::default();
        self.validator().check(&self.root, config, "", &mut report);
        report
    }

    /// Validates one entry of the array `section.key` (such as `storage.files`) against
    /// the schema of that array's items, reporting with the pointer `at`.
    pub fn validate_entry(
        &self,
        section: &str,
        key: &str,
        entry: &Value,
        at: &str,
        r: &mut Report,
    ) {
        let v = self.validator();
        let items = v
            .property(&self.root, section)
            .and_then(|s| v.property(s, key))
            .and_then(|a| v.resolve(a).get("items"))
            .expect("every bundled schema defines the entry arrays");
        v.check(items, entry, at, r);
    }

    fn validator(&self) -> Validator<'_> {
        Validator { root: &self.root }
    }
}

struct Validator<'a> {
    root: &'a Value,
}

/// The JSON type of a value, for messages: a config's values are never quoted, since a
/// config may carry secrets (pull secrets, tokens in data URLs).
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An unknown key, for messages: as written when some Ignition spec has a key of that
/// name, or when it is a short word (a misspelt key); otherwise not shown, as a key of a
/// config could be a secret pasted in the wrong place.
fn shown_key(k: &str) -> String {
    static KNOWN: std::sync::OnceLock<std::collections::BTreeSet<String>> =
        std::sync::OnceLock::new();
    let known = KNOWN.get_or_init(|| {
        fn walk(v: &Value, out: &mut std::collections::BTreeSet<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::Object(p)) = m.get("properties") {
                        out.extend(p.keys().cloned());
                    }
                    m.values().for_each(|c| walk(c, out));
                }
                Value::Array(a) => a.iter().for_each(|c| walk(c, out)),
                _ => {}
            }
        }
        let mut out = std::collections::BTreeSet::new();
        for spec in super::SPECS {
            let v: Value = serde_json::from_str(schema_text(spec)).expect("bundled schemas parse");
            walk(&v, &mut out);
        }
        out
    });
    let word = k.len() <= 24
        && !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'-');
    if word || known.contains(k) {
        k.to_string()
    } else {
        "(a key no spec knows; not shown, it may be a secret)".to_string()
    }
}

fn type_ok(want: &str, v: &Value) -> bool {
    match want {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        other => panic!("schema type {other:?} is not handled"),
    }
}

impl<'a> Validator<'a> {
    fn resolve(&self, mut s: &'a Value) -> &'a Value {
        while let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let ptr = r.strip_prefix('#').expect("only local $refs");
            s = self.root.pointer(ptr).expect("bundled $refs resolve");
        }
        s
    }

    /// The schema of property `name`, through `$ref` and `allOf`.
    fn property(&self, s: &'a Value, name: &str) -> Option<&'a Value> {
        let s = self.resolve(s);
        if let Some(p) = s.get("properties").and_then(|p| p.get(name)) {
            return Some(p);
        }
        s.get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(|b| self.property(b, name))
    }

    /// Every property name a schema allows, through `$ref` and `allOf`.
    fn allowed(&self, s: &'a Value, out: &mut Vec<&'a str>) {
        let s = self.resolve(s);
        if let Some(p) = s.get("properties").and_then(Value::as_object) {
            out.extend(p.keys().map(String::as_str));
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            for b in all {
                self.allowed(b, out);
            }
        }
    }

    fn check(&self, schema: &'a Value, v: &Value, at: &str, r: &mut Report) {
        self.check_inner(schema, v, at, r);
        if let Value::Object(m) = v {
            let mut allowed = Vec::new();
            self.allowed(schema, &mut allowed);
            for k in m.keys() {
                if !allowed.contains(&k.as_str()) {
                    r.unknown_keys.push(format!("{at}/{}", shown_key(k)));
                }
            }
        }
    }

    /// Checks one schema node, without the strict key check (done once per value).
    fn check_inner(&self, schema: &'a Value, v: &Value, at: &str, r: &mut Report) {
        let s = self.resolve(schema);
        for k in s.as_object().expect("schemas are objects").keys() {
            assert!(
                matches!(
                    k.as_str(),
                    "type"
                        | "properties"
                        | "items"
                        | "required"
                        | "allOf"
                        | "$ref"
                        | "$schema"
                        | "title"
                        | "definitions"
                ),
                "schema keyword {k:?} is not handled"
            );
        }
        if let Some(t) = s.get("type") {
            let ok = match t {
                Value::String(t) => type_ok(t, v),
                Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap_or(""), v)),
                _ => panic!("bad schema type"),
            };
            if !ok {
                r.errors
                    .push(format!("{at}: expected type {t}, found {}", type_name(v)));
                return;
            }
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            for b in all {
                self.check_inner(b, v, at, r);
            }
        }
        if let (Some(props), Value::Object(m)) = (s.get("properties"), v) {
            for (k, ps) in props.as_object().expect("properties is an object") {
                if let Some(child) = m.get(k) {
                    self.check(ps, child, &format!("{at}/{k}"), r);
                }
            }
        }
        if let (Some(req), Value::Object(m)) = (s.get("required").and_then(Value::as_array), v) {
            for k in req.iter().filter_map(Value::as_str) {
                if !m.contains_key(k) {
                    r.errors.push(format!("{at}: missing required key {k:?}"));
                }
            }
        }
        if let (Some(items), Value::Array(a)) = (s.get("items"), v) {
            for (i, child) in a.iter().enumerate() {
                self.check(items, child, &format!("{at}/{i}"), r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_bundled_schema_loads_and_accepts_a_minimal_config() {
        for spec in super::super::SPECS {
            let r = validate(&json!({"ignition": {"version": spec.as_str()}}), spec);
            assert!(r.is_clean(), "{spec}: {r:?}");
        }
    }

    #[test]
    fn strict_keys_catch_the_other_family() {
        let c = json!({
            "ignition": {"version": "3.2.0"},
            "storage": {"files": [{"filesystem": "root", "path": "/x"}]}
        });
        let r = validate(&c, SpecVersion::V3_2);
        assert_eq!(r.unknown_keys, vec!["/storage/files/0/filesystem"]);
        assert!(validate(&c, SpecVersion::V2_2).is_clean());
    }

    #[test]
    fn type_errors_are_reported() {
        let c = json!({"ignition": {"version": "2.2.0"}, "storage": {"files": [{"path": 1}]}});
        let r = validate(&c, SpecVersion::V2_2);
        assert_eq!(r.errors.len(), 1, "{r:?}");
        let r = validate(&json!({}), SpecVersion::V2_2);
        assert!(r.errors[0].contains("ignition"));
    }

    #[test]
    fn reports_quote_no_value_and_no_odd_key() {
        const SECRET: &str = "c2VjcmV0OnBhc3N3b3Jk";
        let c = json!({
            "ignition": {"version": "3.2.0"},
            "passwd": {"users": {"name": SECRET}},
            "storage": {"files": [{"path": "/x", "httpHeaders": 1, "owner": 1, SECRET: 1}]}
        });
        let r = validate(&c, SpecVersion::V3_2);
        let text = format!("{r:?}");
        assert!(!text.contains(SECRET), "{text}");
        assert!(text.contains("/passwd/users: expected type"), "{text}");
        assert!(text.contains("found an object"), "{text}");
        assert!(text.contains("/storage/files/0/httpHeaders"), "{text}");
        assert!(text.contains("/storage/files/0/owner"), "{text}");
        assert!(
            text.contains("/storage/files/0/(a key no spec knows"),
            "{text}"
        );
    }
}
