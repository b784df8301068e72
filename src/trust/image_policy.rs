//! OpenShift's ClusterImagePolicy and ImagePolicy objects (`config.openshift.io/v1`
//! and `v1alpha1`), validated as their CRDs validate them and rendered into the
//! signature policy and the registries.d namespaces the machine-config-operator writes
//! for the node (its container-runtime-config controller: `policyItemFromSpec`,
//! `getValidScopePolicies`, `updatePolicyJSON`, `updateNamespacedPolicyJSONs`,
//! `generateSigstoreRegistriesdConfig`).
//!
//! - **Reading**: a file is YAML or JSON: one object, a multi-document YAML stream, a
//!   plain list of objects, or a `List` (`kind: List`, `ClusterImagePolicyList`,
//!   `ImagePolicyList`) with `items`, as `oc get -o yaml` prints them. `metadata` and
//!   `status` are read for the name and namespace only; an unknown key in `spec` is
//!   refused, as the API server's strict field validation refuses it.
//! - **Validation**: each kubebuilder marker of the API types, for the object's
//!   version: the `policyType` union (its member required, the others forbidden), the
//!   PEM markers of key and certificate data, lengths, the scope grammar, the number of
//!   scopes, the `signedIdentity` union. Errors name the file, the object, the field,
//!   what is wrong and what to do, and never quote key or certificate data.
//! - **Rendering**: each object gives one `sigstoreSigned` requirement; every
//!   ClusterImagePolicy scope gets the requirements of the ClusterImagePolicies naming
//!   it, set on `transports.docker` (and `transports.atomic` for scopes with fewer than
//!   three `/`) of the base policy; the scopes of ImagePolicies in
//!   [`MCO_NAMESPACE`] are then appended there, except those equal to or nested in a
//!   ClusterImagePolicy scope, which MCO skips (the ClusterImagePolicy wins). The
//!   scopes of every ImagePolicy MCO keeps, of any namespace, and of every
//!   ClusterImagePolicy get `use-sigstore-attachments: true` (their mirrors are added by
//!   the caller, which knows the mirror rules).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use serde_json::{json, Map, Value as Json};
use serde_yaml_ng::Value;

use crate::io::parse;
use crate::warnings::Warning;

/// The namespace the cluster runs the MCO image in: the only one whose ImagePolicy
/// objects apply to it (CRI-O judges a pod's images with its namespace's policy).
pub(crate) const MCO_NAMESPACE: &str = "openshift-machine-config-operator";

/// MCO's own base policy (`templates/*/01-*-container-runtime/_base/files/policy.yaml`),
/// which its rendering starts from when the cluster's Image config sets no registries.
pub(crate) const MCO_BASE_POLICY: &str = r#"{
    "default": [
        {
            "type": "insecureAcceptAnything"
        }
    ],
    "transports":
        {
            "docker-daemon":
                {
                    "": [{"type":"insecureAcceptAnything"}]
                }
        }
}
"#;

/// The CRDs' limit on scopes per object (`+kubebuilder:validation:MaxItems=256`).
const MAX_SCOPES: usize = 256;
/// `+kubebuilder:validation:MaxLength=512` of `ImageScope` and `IdentityRepositoryPrefix`.
const MAX_SCOPE_LEN: usize = 512;
/// `+kubebuilder:validation:MaxLength=8192` of every key and certificate field.
const MAX_DATA_LEN: usize = 8192;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Cluster,
    Namespaced,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1,
    V1alpha1,
}

/// One object, validated, with its requirement rendered.
#[derive(Clone, Debug)]
struct Object {
    kind: Kind,
    name: String,
    namespace: String,
    file: String,
    scopes: Vec<String>,
    requirement: Json,
}

impl Object {
    fn shown(&self) -> String {
        match self.kind {
            Kind::Cluster => format!("ClusterImagePolicy {}", self.name),
            Kind::Namespaced => format!("ImagePolicy {}/{}", self.namespace, self.name),
        }
    }
}

/// The objects of every `--image-policy` file, in the order read.
#[derive(Clone, Debug, Default)]
pub(crate) struct ImagePolicies {
    objects: Vec<Object>,
    files: Vec<String>,
}

/// What the objects render to, as MCO writes it for the node.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rendered {
    /// The policy.json: the base with the objects' scopes.
    pub policy: Vec<u8>,
    /// The scopes MCO's `sigstore-registries.yaml` gives `use-sigstore-attachments:
    /// true`, before their mirrors are added; sorted.
    pub attachment_scopes: Vec<String>,
    /// ImagePolicy objects, or some of their scopes, that do not apply.
    pub warnings: Vec<Warning>,
}

impl ImagePolicies {
    /// Reads one file of objects.
    pub(crate) fn add_file(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading image policy file {}", path.display()))?;
        self.add_text(&text, &path.display().to_string())
    }

    fn add_text(&mut self, text: &str, file: &str) -> Result<()> {
        let mut found = Vec::new();
        for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
            let at = format!("document {}", i + 1);
            let v = parse::yaml_value(doc, text, &format!("{file}: {at}"), "YAML document")?;
            collect(&v, &at, file, &mut found)?;
        }
        if found.is_empty() {
            bail!(
                "{file}: no ClusterImagePolicy or ImagePolicy in it (expected objects of \
                 config.openshift.io/v1 or v1alpha1, as `oc get clusterimagepolicy,imagepolicy \
                 -A -o yaml` prints them)"
            );
        }
        for o in found {
            if let Some(first) = self
                .objects
                .iter()
                .find(|p| p.kind == o.kind && p.name == o.name && p.namespace == o.namespace)
            {
                bail!(
                    "{file}: {} is given twice (also in {}): a cluster holds one object of a \
                     name; keep one",
                    o.shown(),
                    first.file
                );
            }
            self.objects.push(o);
        }
        self.files.push(file.to_string());
        Ok(())
    }

    /// The files read, for messages.
    pub(crate) fn files(&self) -> &[String] {
        &self.files
    }

    /// Renders the objects onto `base` (a policy.json already checked to be valid), as
    /// MCO renders them: `updatePolicyJSON` for the ClusterImagePolicies, then
    /// `updateNamespacedPolicyJSONs` for the ImagePolicies of [`MCO_NAMESPACE`].
    pub(crate) fn render(&self, base: &[u8], base_origin: &str) -> Result<Rendered> {
        let mut top: Map<String, Json> = serde_json::from_slice(base)
            .map_err(|e| anyhow!("{base_origin}: not a JSON object: {}", parse::json_kind(&e)))?;
        let mut warnings = Vec::new();
        // getValidScopePolicies: the ClusterImagePolicy scopes, then the ImagePolicy
        // scopes not equal to or nested in one of them.
        let mut cluster: BTreeMap<&str, Vec<Json>> = BTreeMap::new();
        for o in self.objects.iter().filter(|o| o.kind == Kind::Cluster) {
            for s in &o.scopes {
                cluster
                    .entry(s.as_str())
                    .or_default()
                    .push(o.requirement.clone());
            }
        }
        let mut namespaced: BTreeMap<&str, Vec<Json>> = BTreeMap::new();
        let mut attachment: BTreeSet<String> = cluster.keys().map(|s| s.to_string()).collect();
        for o in self.objects.iter().filter(|o| o.kind == Kind::Namespaced) {
            let (kept, shadowed): (Vec<&String>, Vec<&String>) = o
                .scopes
                .iter()
                .partition(|s| !cluster.keys().any(|c| scope_is_nested_inside(s, c)));
            attachment.extend(kept.iter().map(|s| s.to_string()));
            if o.namespace != MCO_NAMESPACE {
                warnings.push(Warning::ImagePolicyOtherNamespace {
                    file: o.file.clone(),
                    name: o.name.clone(),
                    namespace: o.namespace.clone(),
                });
                continue;
            }
            if !shadowed.is_empty() {
                warnings.push(Warning::ImagePolicyScopesShadowed {
                    file: o.file.clone(),
                    name: o.name.clone(),
                    namespace: o.namespace.clone(),
                    scopes: shadowed.iter().map(|s| s.to_string()).collect(),
                });
            }
            for s in kept {
                namespaced
                    .entry(s.as_str())
                    .or_default()
                    .push(o.requirement.clone());
            }
        }
        let transports = top
            .entry("transports")
            .or_insert_with(|| Json::Object(Map::new()));
        if transports.is_null() {
            *transports = Json::Object(Map::new());
        }
        let transports = transports
            .as_object_mut()
            .ok_or_else(|| anyhow!("{base_origin}: transports is not an object"))?;
        // updatePolicyJSON: each ClusterImagePolicy scope gets its requirements (an
        // entry of the base for that scope is replaced, as MCO rebuilds it).
        for (name, scopes) in [("docker", &cluster), ("atomic", &cluster)] {
            if scopes.is_empty() {
                continue;
            }
            let t = transport(transports, name, base_origin)?;
            for (scope, reqs) in scopes.iter() {
                if name == "atomic" && scope.matches('/').count() >= 3 {
                    continue;
                }
                t.insert(scope.to_string(), Json::Array(reqs.clone()));
            }
        }
        // updateNamespacedPolicyJSONs: the namespace's ImagePolicy requirements are
        // appended to what the scope has.
        if !namespaced.is_empty() {
            for name in ["docker", "atomic"] {
                let t = transport(transports, name, base_origin)?;
                for (scope, reqs) in &namespaced {
                    if name == "atomic" && scope.matches('/').count() >= 3 {
                        continue;
                    }
                    let entry = t
                        .entry(scope.to_string())
                        .or_insert_with(|| Json::Array(Vec::new()));
                    let list = entry.as_array_mut().ok_or_else(|| {
                        anyhow!(
                            "{base_origin}: transports.{name}.{}: not a list of requirements",
                            parse::name_shown(scope)
                        )
                    })?;
                    list.extend(reqs.iter().cloned());
                }
            }
        }
        sort_transports(transports);
        let mut policy = serde_json::to_vec_pretty(&Json::Object(top)).expect("JSON serializes");
        policy.push(b'\n');
        Ok(Rendered {
            policy,
            attachment_scopes: attachment.into_iter().collect(),
            warnings,
        })
    }
}

/// The scopes of `transports[name]`, made when missing.
fn transport<'a>(
    transports: &'a mut Map<String, Json>,
    name: &str,
    origin: &str,
) -> Result<&'a mut Map<String, Json>> {
    let t = transports
        .entry(name.to_string())
        .or_insert_with(|| Json::Object(Map::new()));
    if t.is_null() {
        *t = Json::Object(Map::new());
    }
    t.as_object_mut()
        .ok_or_else(|| anyhow!("{origin}: transports.{name} is not an object"))
}

/// Transports and their scopes in sorted order, as Go's encoder writes MCO's maps.
fn sort_transports(transports: &mut Map<String, Json>) {
    let mut all: Vec<(String, Json)> = std::mem::take(transports).into_iter().collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, mut scopes) in all {
        if let Some(s) = scopes.as_object_mut() {
            let mut list: Vec<(String, Json)> = std::mem::take(s).into_iter().collect();
            list.sort_by(|a, b| a.0.cmp(&b.0));
            s.extend(list);
        }
        transports.insert(name, scopes);
    }
}

/// runtime-utils' `ScopeIsNestedInsideScope`: whether `sub` is `sup`, a namespace or
/// repository inside it, or (for `*.domain`) a host or wildcard under the domain.
pub(crate) fn scope_is_nested_inside(sub: &str, sup: &str) -> bool {
    if sub == sup {
        return true;
    }
    if sub.len() > sup.len() && sub.starts_with(sup) && sub.as_bytes()[sup.len()] == b'/' {
        return true;
    }
    if let Some(domain) = sup.strip_prefix('*') {
        if sub.contains(':') {
            let host = sub.split(':').next().unwrap_or("");
            return host.ends_with(domain) && !host.contains('/');
        }
        let host = sub.split('/').next().unwrap_or("");
        return host.ends_with(domain);
    }
    false
}

// ------------------------------------------------------------------ reading

/// The objects of one YAML value: an object, a list, or a `List`.
fn collect(v: &Value, at: &str, file: &str, out: &mut Vec<Object>) -> Result<()> {
    match v {
        Value::Null => Ok(()),
        Value::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                collect(item, &format!("{at}, item {}", i + 1), file, out)?;
            }
            Ok(())
        }
        Value::Mapping(_) => {
            let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
            if matches!(kind, "List" | "ClusterImagePolicyList" | "ImagePolicyList") {
                let items = v.get("items").and_then(Value::as_sequence).ok_or_else(|| {
                    anyhow!("{file}: {at}: a {kind} without items: give its objects in `items`")
                })?;
                for (i, item) in items.iter().enumerate() {
                    collect(item, &format!("{at}, item {}", i + 1), file, out)?;
                }
                return Ok(());
            }
            out.push(object(v, at, file)?);
            Ok(())
        }
        _ => bail!(
            "{file}: {at}: not an object: expected a ClusterImagePolicy or ImagePolicy, a \
             list of them, or a List"
        ),
    }
}

/// A word of the file (a kind, a version, an enum value, a key), for messages: quoted
/// when it looks like one, else not shown, as it may be a secret in the wrong place.
fn word(w: &str) -> String {
    let plausible = w.len() <= 100
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_/".contains(&b));
    if plausible {
        format!("{w:?}")
    } else {
        "(a value not shown: it may hold a secret)".to_string()
    }
}

/// Where an error is: the file, the object, the field.
struct Place<'a> {
    file: &'a str,
    object: String,
}

impl Place<'_> {
    fn err(&self, field: &str, why: impl std::fmt::Display) -> anyhow::Error {
        anyhow!("{}: {}: {field}: {why}", self.file, self.object)
    }
}

/// A mapping's value at `key`.
fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_mapping()
        .and_then(|m| m.get(key))
        .filter(|x| !x.is_null())
}

/// Refuses keys of `v` not in `known` (`v` must be a mapping).
fn only(v: &Value, known: &[&str], place: &Place, field: &str) -> Result<()> {
    let m = v
        .as_mapping()
        .ok_or_else(|| place.err(field, "not an object"))?;
    for k in m.keys() {
        let name = k.as_str().unwrap_or("");
        if !known.contains(&name) {
            return Err(place.err(
                field,
                format!(
                    "the key {} is not known (known: {}); remove it or fix its spelling",
                    word(name),
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// A string field: `None` when absent.
fn string<'a>(v: &'a Value, key: &str, place: &Place, field: &str) -> Result<Option<&'a str>> {
    match get(v, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(place.err(&format!("{field}.{key}"), "not a string")),
    }
}

fn required<'a>(v: &'a Value, key: &str, place: &Place, field: &str) -> Result<&'a str> {
    string(v, key, place, field)?
        .ok_or_else(|| place.err(&format!("{field}.{key}"), "missing; it is required"))
}

fn object(v: &Value, at: &str, file: &str) -> Result<Object> {
    let kind_s = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let api = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = match kind_s {
        "ClusterImagePolicy" => Kind::Cluster,
        "ImagePolicy" => Kind::Namespaced,
        "" => bail!("{file}: {at}: no kind: expected kind ClusterImagePolicy or ImagePolicy"),
        other => bail!(
            "{file}: {at}: kind {} is not a ClusterImagePolicy or ImagePolicy; give only \
             those (or a List of them) to --image-policy",
            word(other)
        ),
    };
    let version = match api {
        "config.openshift.io/v1" => Version::V1,
        "config.openshift.io/v1alpha1" => Version::V1alpha1,
        _ => bail!(
            "{file}: {at}: {kind_s} of apiVersion {}: expected config.openshift.io/v1 or \
             config.openshift.io/v1alpha1",
            word(api)
        ),
    };
    let meta = get(v, "metadata");
    let text = |key: &str| {
        meta.and_then(|m| get(m, key))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let name = text("name");
    if name.is_empty() {
        bail!("{file}: {at}: a {kind_s} without metadata.name: every object needs a name");
    }
    let namespace = match kind {
        Kind::Cluster => String::new(),
        Kind::Namespaced => {
            let ns = text("namespace");
            if ns.is_empty() {
                bail!(
                    "{file}: {at}: ImagePolicy {name} has no metadata.namespace: ImagePolicy \
                     objects are namespaced; set it ({MCO_NAMESPACE} for the policy to apply \
                     to the MCO image)"
                );
            }
            ns
        }
    };
    let place = Place {
        file,
        object: match kind {
            Kind::Cluster => format!("ClusterImagePolicy {name}"),
            Kind::Namespaced => format!("ImagePolicy {namespace}/{name}"),
        },
    };
    only(
        v,
        &["apiVersion", "kind", "metadata", "spec", "status"],
        &place,
        "the object",
    )?;
    let spec = get(v, "spec").ok_or_else(|| place.err("spec", "missing; it is required"))?;
    only(spec, &["scopes", "policy"], &place, "spec")?;
    let scopes = scopes(spec, &place)?;
    let policy =
        get(spec, "policy").ok_or_else(|| place.err("spec.policy", "missing; it is required"))?;
    let requirement = requirement(policy, version, &place)?;
    Ok(Object {
        kind,
        name,
        namespace,
        file: file.to_string(),
        scopes,
        requirement,
    })
}

fn scopes(spec: &Value, place: &Place) -> Result<Vec<String>> {
    let list = match get(spec, "scopes") {
        None => return Err(place.err("spec.scopes", "missing; it is required")),
        Some(Value::Sequence(l)) => l,
        Some(_) => return Err(place.err("spec.scopes", "not a list of scopes")),
    };
    if list.len() > MAX_SCOPES {
        return Err(place.err(
            "spec.scopes",
            format!(
                "{} scopes, more than the {MAX_SCOPES} one object may have; split them \
                 into several objects",
                list.len()
            ),
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for (i, s) in list.iter().enumerate() {
        let field = format!("spec.scopes[{i}]");
        let s = s
            .as_str()
            .ok_or_else(|| place.err(&field, "not a string"))?;
        valid_image_scope(s).map_err(|why| place.err(&field, format!("{s:?}: {why}")))?;
        if out.iter().any(|o| o == s) {
            return Err(place.err(
                &field,
                format!("{s:?} is given twice (the list is a set); remove one"),
            ));
        }
        out.push(s.to_string());
    }
    Ok(out)
}

// ------------------------------------------------------------------ the requirement

/// What a key or certificate field must hold (the CRD's CEL rules on the decoded bytes).
#[derive(Clone, Copy)]
struct Pem {
    /// `PUBLIC KEY` or `CERTIFICATE`.
    label: &'static str,
    /// Whether the BEGIN and END markers must be as many (certificate bundles).
    bundle: bool,
}

const PUBLIC_KEY: Pem = Pem {
    label: "PUBLIC KEY",
    bundle: false,
};
const CERTIFICATES: Pem = Pem {
    label: "CERTIFICATE",
    bundle: true,
};
const CERTIFICATE: Pem = Pem {
    label: "CERTIFICATE",
    bundle: false,
};

/// Reads a base64 `[]byte` field: the CRD's lengths apply to the base64 text, its PEM
/// rules (when `pem` is given) to the decoded bytes. Returns the base64 of the bytes.
fn data(
    v: &Value,
    key: &str,
    field: &str,
    place: &Place,
    pem: Option<Pem>,
    min_len: usize,
) -> Result<Option<String>> {
    let Some(text) = string(v, key, place, field)? else {
        return Ok(None);
    };
    let field = format!("{field}.{key}");
    if text.len() > MAX_DATA_LEN {
        return Err(place.err(
            &field,
            format!(
                "{} characters of base64, more than the {MAX_DATA_LEN} allowed",
                text.len()
            ),
        ));
    }
    if text.len() < min_len {
        return Err(place.err(
            &field,
            format!(
                "{} characters of base64, fewer than the {min_len} a valid value has; give \
                 the whole PEM file, base64-encoded",
                text.len()
            ),
        ));
    }
    let compact: String = text.chars().filter(|c| !matches!(c, '\n' | '\r')).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .map_err(|_| {
            place.err(
                &field,
                "not base64 (the field holds the PEM file base64-encoded, e.g. `base64 -w0 \
                 FILE`); its content is not shown",
            )
        })?;
    if let Some(pem) = pem {
        let begin = format!("-----BEGIN {}-----", pem.label);
        let end = format!("-----END {}-----", pem.label);
        let what = if pem.label == "PUBLIC KEY" {
            "a PEM public key"
        } else {
            "PEM certificates"
        };
        if !bytes.starts_with(begin.as_bytes()) {
            return Err(place.err(
                &field,
                format!(
                    "does not start with {begin} once decoded: it must be {what}, \
                     base64-encoded; its content is not shown"
                ),
            ));
        }
        if !(bytes.ends_with(end.as_bytes()) || bytes.ends_with(format!("{end}\n").as_bytes())) {
            return Err(place.err(
                &field,
                format!(
                    "does not end with {end} (or it and a newline) once decoded: it must \
                     be {what}, base64-encoded; its content is not shown"
                ),
            ));
        }
        if pem.bundle {
            let count = |m: &str| {
                bytes
                    .windows(m.len())
                    .filter(|w| *w == m.as_bytes())
                    .count()
            };
            if count(&begin) != count(&end) {
                return Err(place.err(
                    &field,
                    format!(
                        "has {} {begin} and {} {end} markers once decoded; they must be as \
                         many (whole PEM certificates)",
                        count(&begin),
                        count(&end)
                    ),
                ));
            }
        }
    }
    Ok(Some(
        base64::engine::general_purpose::STANDARD.encode(&bytes),
    ))
}

/// `policyItemFromSpec`: the `sigstoreSigned` requirement of `spec.policy`.
fn requirement(policy: &Value, version: Version, place: &Place) -> Result<Json> {
    only(
        policy,
        &["rootOfTrust", "signedIdentity"],
        place,
        "spec.policy",
    )?;
    let root = get(policy, "rootOfTrust")
        .ok_or_else(|| place.err("spec.policy.rootOfTrust", "missing; it is required"))?;
    let f = "spec.policy.rootOfTrust";
    only(
        root,
        &["policyType", "publicKey", "fulcioCAWithRekor", "pki"],
        place,
        f,
    )?;
    let policy_type = required(root, "policyType", place, f)?;
    let members = [
        ("PublicKey", "publicKey"),
        ("FulcioCAWithRekor", "fulcioCAWithRekor"),
        ("PKI", "pki"),
    ];
    let Some(&(_, member)) = members.iter().find(|(t, _)| *t == policy_type) else {
        return Err(place.err(
            &format!("{f}.policyType"),
            format!(
                "{} is not a policy type: use PublicKey, FulcioCAWithRekor or PKI",
                word(policy_type)
            ),
        ));
    };
    for (t, m) in members {
        if m != member && get(root, m).is_some() {
            return Err(place.err(
                &format!("{f}.{m}"),
                format!(
                    "given with policyType {policy_type}: {m} is for policyType {t} only; \
                     remove it or change policyType"
                ),
            ));
        }
    }
    let body = get(root, member).ok_or_else(|| {
        place.err(
            &format!("{f}.{member}"),
            format!("missing; policyType {policy_type} requires it"),
        )
    })?;
    let fm = format!("{f}.{member}");
    let v1 = version == Version::V1;
    let mut req = Map::new();
    req.insert("type".into(), json!("sigstoreSigned"));
    match policy_type {
        "PublicKey" => {
            only(body, &["keyData", "rekorKeyData"], place, &fm)?;
            let pem = v1.then_some(PUBLIC_KEY);
            let key = data(body, "keyData", &fm, place, pem, if v1 { 68 } else { 0 })?
                .ok_or_else(|| place.err(&format!("{fm}.keyData"), "missing; it is required"))?;
            req.insert("keyData".into(), json!(key));
            if let Some(rekor) = data(body, "rekorKeyData", &fm, place, pem, 0)? {
                req.insert("rekorPublicKeyData".into(), json!(rekor));
            }
        }
        "FulcioCAWithRekor" => {
            only(
                body,
                &["fulcioCAData", "rekorKeyData", "fulcioSubject"],
                place,
                &fm,
            )?;
            let ca = data(
                body,
                "fulcioCAData",
                &fm,
                place,
                v1.then_some(CERTIFICATE),
                0,
            )?
            .ok_or_else(|| place.err(&format!("{fm}.fulcioCAData"), "missing; it is required"))?;
            let rekor = data(
                body,
                "rekorKeyData",
                &fm,
                place,
                v1.then_some(PUBLIC_KEY),
                0,
            )?
            .ok_or_else(|| place.err(&format!("{fm}.rekorKeyData"), "missing; it is required"))?;
            let fs = format!("{fm}.fulcioSubject");
            let subject = get(body, "fulcioSubject")
                .ok_or_else(|| place.err(&fs, "missing; it is required"))?;
            only(subject, &["oidcIssuer", "signedEmail"], place, &fs)?;
            let issuer = required(subject, "oidcIssuer", place, &fs)?;
            if v1 && issuer.len() > 2048 {
                return Err(place.err(
                    &format!("{fs}.oidcIssuer"),
                    "longer than the 2048 characters allowed",
                ));
            }
            if !is_url(issuer) {
                return Err(place.err(
                    &format!("{fs}.oidcIssuer"),
                    format!("{issuer:?} is not a valid URL: give the issuer's absolute URL, e.g. https://oidc.example.com"),
                ));
            }
            let email = required(subject, "signedEmail", place, &fs)?;
            valid_email(email, v1).map_err(|why| place.err(&format!("{fs}.signedEmail"), why))?;
            req.insert(
                "fulcio".into(),
                json!({"caData": ca, "oidcIssuer": issuer, "subjectEmail": email}),
            );
            req.insert("rekorPublicKeyData".into(), json!(rekor));
        }
        _ => {
            only(
                body,
                &[
                    "caRootsData",
                    "caIntermediatesData",
                    "pkiCertificateSubject",
                ],
                place,
                &fm,
            )?;
            let min = if v1 { 72 } else { 0 };
            let roots = data(body, "caRootsData", &fm, place, Some(CERTIFICATES), min)?
                .ok_or_else(|| {
                    place.err(&format!("{fm}.caRootsData"), "missing; it is required")
                })?;
            let inter = data(
                body,
                "caIntermediatesData",
                &fm,
                place,
                Some(CERTIFICATES),
                min,
            )?;
            let fs = format!("{fm}.pkiCertificateSubject");
            let subject = get(body, "pkiCertificateSubject")
                .ok_or_else(|| place.err(&fs, "missing; it is required"))?;
            only(subject, &["email", "hostname"], place, &fs)?;
            let email = string(subject, "email", place, &fs)?.filter(|e| !e.is_empty());
            let host = string(subject, "hostname", place, &fs)?.filter(|h| !h.is_empty());
            if email.is_none() && host.is_none() {
                return Err(place.err(
                    &fs,
                    "neither email nor hostname is set: set at least one of them",
                ));
            }
            if let Some(e) = email {
                valid_email(e, true).map_err(|why| place.err(&format!("{fs}.email"), why))?;
            }
            if let Some(h) = host {
                valid_pki_hostname(h).map_err(|why| place.err(&format!("{fs}.hostname"), why))?;
            }
            let mut pki = Map::new();
            pki.insert("caRootsData".into(), json!(roots));
            if let Some(i) = inter {
                pki.insert("caIntermediatesData".into(), json!(i));
            }
            if let Some(e) = email {
                pki.insert("subjectEmail".into(), json!(e));
            }
            if let Some(h) = host {
                pki.insert("subjectHostname".into(), json!(h));
            }
            req.insert("pki".into(), Json::Object(pki));
        }
    }
    req.insert("signedIdentity".into(), signed_identity(policy, place)?);
    Ok(Json::Object(req))
}

/// `spec.policy.signedIdentity` as a policy.json `signedIdentity` (default
/// `matchRepoDigestOrExact`).
fn signed_identity(policy: &Value, place: &Place) -> Result<Json> {
    let f = "spec.policy.signedIdentity";
    let Some(id) = get(policy, "signedIdentity") else {
        return Ok(json!({"type": "matchRepoDigestOrExact"}));
    };
    only(
        id,
        &["matchPolicy", "exactRepository", "remapIdentity"],
        place,
        f,
    )?;
    let m = required(id, "matchPolicy", place, f)?;
    let forbid = |key: &str, needs: &str| -> Result<()> {
        if get(id, key).is_some() && m != needs {
            return Err(place.err(
                &format!("{f}.{key}"),
                format!(
                    "given with matchPolicy {m}: it is for matchPolicy {needs} only; remove it"
                ),
            ));
        }
        Ok(())
    };
    forbid("exactRepository", "ExactRepository")?;
    forbid("remapIdentity", "RemapIdentity")?;
    let need = |key: &str| {
        get(id, key).ok_or_else(|| {
            place.err(
                &format!("{f}.{key}"),
                format!("missing; matchPolicy {m} requires it"),
            )
        })
    };
    let prefix = |v: &Value, key: &str, at: &str| -> Result<String> {
        let s = required(v, key, place, at)?;
        valid_identity_prefix(s)
            .map_err(|why| place.err(&format!("{at}.{key}"), format!("{s:?}: {why}")))?;
        Ok(s.to_string())
    };
    Ok(match m {
        "MatchRepoDigestOrExact" => json!({"type": "matchRepoDigestOrExact"}),
        "MatchRepository" => json!({"type": "matchRepository"}),
        "ExactRepository" => {
            let at = format!("{f}.exactRepository");
            let e = need("exactRepository")?;
            only(e, &["repository"], place, &at)?;
            json!({"type": "exactRepository", "dockerRepository": prefix(e, "repository", &at)?})
        }
        "RemapIdentity" => {
            let at = format!("{f}.remapIdentity");
            let r = need("remapIdentity")?;
            only(r, &["prefix", "signedPrefix"], place, &at)?;
            json!({"type": "remapIdentity", "prefix": prefix(r, "prefix", &at)?,
                   "signedPrefix": prefix(r, "signedPrefix", &at)?})
        }
        other => {
            return Err(place.err(
                &format!("{f}.matchPolicy"),
                format!(
                    "{} is not a match policy: use MatchRepoDigestOrExact, MatchRepository, \
                     ExactRepository or RemapIdentity",
                    word(other)
                ),
            ))
        }
    })
}

// ------------------------------------------------------------------ the CRDs' grammars

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// `[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]`.
fn valid_label(l: &str) -> bool {
    let b = l.as_bytes();
    !b.is_empty()
        && alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter().all(|&c| alnum(c) || c == b'-')
}

/// `LABEL(\.LABEL)+(:[0-9]+)?|localhost(:[0-9]+)?`.
fn valid_host_port(s: &str) -> bool {
    let (host, port) = match s.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    if let Some(p) = port {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
    }
    if host == "localhost" {
        return true;
    }
    let labels: Vec<&str> = host.split('.').collect();
    labels.len() >= 2 && labels.iter().all(|l| valid_label(l))
}

/// A path component: `[a-z0-9]+((\.|_|__|-*)[a-z0-9]+)*`.
fn valid_component(c: &str) -> bool {
    let b = c.as_bytes();
    let lower = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !lower(b[0]) || !lower(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if lower(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !lower(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-')) {
            return false;
        }
    }
    true
}

/// `[\w][\w.-]{0,127}`.
fn valid_tag(t: &str) -> bool {
    let w = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let b = t.as_bytes();
    !b.is_empty() && b.len() <= 128 && w(b[0]) && b.iter().all(|&c| w(c) || c == b'.' || c == b'-')
}

/// `[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[[:xdigit:]]{32,}`.
fn valid_digest(d: &str) -> bool {
    let Some((algo, hex)) = d.split_once(':') else {
        return false;
    };
    let algo_ok = algo.split(['-', '_', '+', '.']).all(|part| {
        let b = part.as_bytes();
        !b.is_empty() && b[0].is_ascii_alphabetic() && b.iter().all(|c| c.is_ascii_alphanumeric())
    });
    algo_ok && hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The three CEL rules of `ImageScope`, and its length.
fn valid_image_scope(s: &str) -> Result<(), String> {
    if s.len() > MAX_SCOPE_LEN {
        return Err(format!(
            "longer than the {MAX_SCOPE_LEN} characters allowed"
        ));
    }
    let first = s.split('/').next().unwrap_or("");
    if !first.contains('.') && first.split(':').next() != Some("localhost") {
        return Err(
            "the scope must start with a fully qualified domain name or localhost (e.g. \
             registry.example.com/ns/repo, not ns/repo)"
                .into(),
        );
    }
    if s.contains('*') {
        let ok = s
            .strip_prefix("*.")
            .is_some_and(|rest| rest.split('.').all(valid_label));
        if !ok {
            return Err(
                "a wildcard may only start a domain, as *.example.com, with no port \
                        or path: it matches subdomains only"
                    .into(),
            );
        }
        return Ok(());
    }
    let bad = || {
        Err(
            "not a repository namespace or image: expected HOST[:PORT][/PATH][:TAG][@DIGEST], \
             lowercase path components"
                .to_string(),
        )
    };
    let (rest, digest) = match s.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (s, None),
    };
    if digest.is_some_and(|d| !valid_digest(d)) {
        return bad();
    }
    let ok = match rest.split_once('/') {
        None => {
            // HOST, HOST:PORT, HOST:TAG or HOST:PORT:TAG.
            let parts: Vec<&str> = rest.split(':').collect();
            match parts.len() {
                1 => valid_host_port(rest),
                2 => valid_host_port(rest) || (valid_host_port(parts[0]) && valid_tag(parts[1])),
                3 => valid_host_port(&format!("{}:{}", parts[0], parts[1])) && valid_tag(parts[2]),
                _ => false,
            }
        }
        Some((host, path)) => {
            let (path, tag) = match path.rsplit_once('/') {
                Some((dirs, last)) => match last.split_once(':') {
                    Some((name, tag)) => (format!("{dirs}/{name}"), Some(tag)),
                    None => (path.to_string(), None),
                },
                None => match path.split_once(':') {
                    Some((name, tag)) => (name.to_string(), Some(tag)),
                    None => (path.to_string(), None),
                },
            };
            valid_host_port(host)
                && path.split('/').all(valid_component)
                && tag.is_none_or(valid_tag)
        }
    };
    if ok {
        Ok(())
    } else {
        bad()
    }
}

/// `IdentityRepositoryPrefix`: a host, namespace or repository, no tag or digest.
fn valid_identity_prefix(s: &str) -> Result<(), String> {
    if s.len() > MAX_SCOPE_LEN {
        return Err(format!(
            "longer than the {MAX_SCOPE_LEN} characters allowed"
        ));
    }
    // `.*:([\w][\w.-]{0,127})$` ? `^(localhost:[0-9]+)$` : true
    if let Some((_, after)) = s.rsplit_once(':') {
        if valid_tag(after)
            && !(s.starts_with("localhost:") && valid_host_port(s) && !s.contains('/'))
        {
            return Err(
                "it should not include a tag or digest: give a host[:port], a \
                        namespace or a repository (a port is only accepted as localhost:PORT)"
                    .into(),
            );
        }
    }
    let (host, path) = match s.split_once('/') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    if valid_host_port(host) && path.is_none_or(|p| p.split('/').all(valid_component)) {
        Ok(())
    } else {
        Err(
            "not a repository or prefix: it must start with localhost or a '.'-separated \
             domain, and its path components be lowercase letters and digits separated by \
             one '.', one or two '_' or any number of '-'"
                .into(),
        )
    }
}

/// `^\S+@\S+$`, and the v1 length.
fn valid_email(e: &str, limit: bool) -> Result<(), String> {
    if limit && e.len() > 320 {
        return Err("longer than the 320 characters allowed".into());
    }
    let ok = !e.chars().any(char::is_whitespace)
        && e.find('@').is_some_and(|i| i > 0)
        && e.rfind('@').is_some_and(|i| i + 1 < e.len());
    if ok {
        Ok(())
    } else {
        Err(format!("{e:?} is not a valid email address (NAME@DOMAIN)"))
    }
}

/// A DNS-1123 subdomain, optionally after `*.`; at most 253 characters.
fn valid_pki_hostname(h: &str) -> Result<(), String> {
    if h.len() > 253 {
        return Err("longer than the 253 characters allowed".into());
    }
    let name = h.strip_prefix("*.").unwrap_or(h);
    let label = |l: &str| {
        let b = l.as_bytes();
        let ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        !b.is_empty() && ok(b[0]) && ok(b[b.len() - 1]) && b.iter().all(|&c| ok(c) || c == b'-')
    };
    if !name.is_empty() && name.len() <= 253 && name.split('.').all(label) {
        Ok(())
    } else {
        Err(format!(
            "{h:?} is not a valid DNS-1123 subdomain, optionally prefixed by '*.': lowercase \
             letters, digits, '-' and '.' only"
        ))
    }
}

/// CEL's `isURL`: an absolute URL.
fn is_url(s: &str) -> bool {
    url::Url::parse(s).is_ok_and(|u| u.has_host() || !u.cannot_be_a_base())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::Policy;

    /// MCO's test certificate data (helpers_test.go's `testCertsData`), decoded: a PEM
    /// certificate block, enough for the CRD's rules.
    const CERT_B64: &str =
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJBVEE9Ci0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0=";

    fn b64(b: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    /// A real P-256 public key, PEM, base64 (as keyData holds it).
    fn key_b64(seed: u8) -> String {
        use p256::pkcs8::EncodePublicKey as _;
        let sk = p256::ecdsa::SigningKey::from_slice(&[seed; 32]).unwrap();
        let pem = sk
            .verifying_key()
            .to_public_key_pem(p256::pkcs8::LineEnding::LF)
            .unwrap();
        b64(pem.as_bytes())
    }

    fn cip(name: &str, scopes: &[&str], root: &str) -> String {
        let scopes: Vec<String> = scopes.iter().map(|s| format!("\"{s}\"")).collect();
        format!(
            "apiVersion: config.openshift.io/v1\nkind: ClusterImagePolicy\nmetadata:\n  name: \
             {name}\nspec:\n  scopes: [{}]\n  policy:\n{root}",
            scopes.join(", ")
        )
    }

    fn ip(ns: &str, name: &str, scopes: &[&str], root: &str) -> String {
        cip(name, scopes, root)
            .replace("kind: ClusterImagePolicy", "kind: ImagePolicy")
            .replace(
                &format!("  name: {name}\n"),
                &format!("  name: {name}\n  namespace: {ns}\n"),
            )
    }

    fn public_key(key: &str) -> String {
        format!(
            "    rootOfTrust:\n      policyType: PublicKey\n      publicKey:\n        keyData: {key}\n"
        )
    }

    fn read(text: &str) -> Result<ImagePolicies> {
        let mut p = ImagePolicies::default();
        p.add_text(text, "f.yaml")?;
        Ok(p)
    }

    fn err(text: &str) -> String {
        format!("{:#}", read(text).expect_err("refused"))
    }

    fn render(text: &str) -> (Json, Rendered) {
        let r = read(text)
            .unwrap()
            .render(MCO_BASE_POLICY.as_bytes(), "base")
            .unwrap();
        (serde_json::from_slice(&r.policy).unwrap(), r.clone())
    }

    #[test]
    fn forms_of_a_file() {
        let k = key_b64(1);
        let one = cip("a", &["registry.example.com/ns"], &public_key(&k));
        let two = ip(MCO_NAMESPACE, "b", &["other.example.com"], &public_key(&k));
        let stream = format!("{one}\n---\n{two}\n---\n");
        let n = |t: &str| read(t).unwrap().objects.len();
        assert_eq!(n(&one), 1);
        assert_eq!(n(&stream), 2);
        // `oc get -o yaml`'s List, with the metadata and status the server adds.
        let indent = |t: &str| t.replace('\n', "\n    ");
        let list = format!(
            "apiVersion: v1\nkind: List\nitems:\n  - {}\n    status: {{conditions: []}}\n  - {}\n\
             metadata:\n  resourceVersion: \"\"\n",
            indent(&one).replace(
                "  name: a",
                "  name: a\n      uid: 1234\n      resourceVersion: \"7\""
            ),
            indent(&two)
        );
        assert_eq!(n(&list), 2, "{list}");
        let typed = list.replace("kind: List", "kind: ClusterImagePolicyList");
        assert_eq!(n(&typed), 2);
        let plain = format!(
            "- {}\n- {}\n",
            indent(&one).replace("\n    ", "\n  "),
            indent(&two).replace("\n    ", "\n  ")
        );
        assert_eq!(n(&plain), 2, "{plain}");
        // JSON, as `oc get -o json` prints it.
        let v: Value = serde_yaml_ng::from_str(&one).unwrap();
        let json_text = serde_json::to_string(&v).unwrap();
        assert_eq!(n(&json_text), 1);
        assert!(err("").contains("no ClusterImagePolicy or ImagePolicy"));
        assert!(err("kind: List\n").contains("without items"));
        assert!(
            err("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
                .contains("kind \"ConfigMap\" is not a")
        );
        assert!(
            err(&one.replace("config.openshift.io/v1", "config.openshift.io/v2"))
                .contains("expected config.openshift.io/v1 or")
        );
        assert!(
            err(&one.replace("  name: a\n", "  labels: {}\n")).contains("without metadata.name")
        );
        assert!(
            err(&two.replace(&format!("  namespace: {MCO_NAMESPACE}\n"), ""))
                .contains("has no metadata.namespace")
        );
        assert!(err(&format!("{one}\n---\n{one}")).contains("ClusterImagePolicy a is given twice"));
        // Two objects of one name but of two kinds, or namespaces, are two objects.
        let other = ip("elsewhere", "b", &["other.example.com"], &public_key(&k));
        assert_eq!(n(&format!("{two}\n---\n{other}")), 2);
    }

    #[test]
    fn the_crd_rules() {
        let k = key_b64(1);
        let obj = |scope: &str, root: &str| cip("p", &[scope], root);
        let pk = public_key(&k);
        let base = obj("registry.example.com/ns/repo", &pk);
        read(&base).unwrap();
        let place = "f.yaml: ClusterImagePolicy p: ";
        // Unknown keys, at each level.
        for (from, to, field) in [
            (
                "  scopes:",
                "  scope: []\n  scopes:",
                "spec: the key \"scope\" is not known",
            ),
            (
                "  policy:\n",
                "  policy:\n    extra: 1\n",
                "spec.policy: the key \"extra\"",
            ),
            (
                "      policyType:",
                "      bogus: 1\n      policyType:",
                "spec.policy.rootOfTrust: the key \"bogus\"",
            ),
            (
                "        keyData:",
                "        keydata: x\n        keyData:",
                "publicKey: the key \"keydata\"",
            ),
        ] {
            let e = err(&base.replace(from, to));
            assert!(e.starts_with(place) && e.contains(field), "{e}");
        }
        assert!(err(&base.replace("spec:", "specs:")).contains("the key \"specs\" is not known"));
        // The union: its member required, the others forbidden, the type known.
        let e = err(&base.replace("policyType: PublicKey", "policyType: FulcioCAWithRekor"));
        assert!(
            e.contains("rootOfTrust.publicKey: given with policyType FulcioCAWithRekor"),
            "{e}"
        );
        let e = err(&base.replace("policyType: PublicKey", "policyType: Keyless"));
        assert!(
            e.contains("\"Keyless\" is not a policy type: use PublicKey, FulcioCAWithRekor or PKI"),
            "{e}"
        );
        let e = err(&base.replace("      policyType: PublicKey\n", ""));
        assert!(
            e.contains("rootOfTrust.policyType: missing; it is required"),
            "{e}"
        );
        let e = err(&obj(
            "registry.example.com",
            "    rootOfTrust:\n      policyType: PKI\n",
        ));
        assert!(
            e.contains("rootOfTrust.pki: missing; policyType PKI requires it"),
            "{e}"
        );
        let e = err(&base.replace("  policy:\n", "  policyx: {}\n  policy:\n"));
        assert!(e.contains("spec: the key \"policyx\""), "{e}");
        // keyData: base64 of a PEM public key (markers once decoded), 68 to 8192
        // characters; never quoted.
        let secretish = b64(b"-----BEGIN PRIVATE KEY-----\nSECRETSECRETSECRETSECRETSECRETSECRETSECRET\n-----END PRIVATE KEY-----\n");
        for (bad, want) in [
            (secretish.clone(), "does not start with -----BEGIN PUBLIC KEY----- once decoded"),
            (b64(b"-----BEGIN PUBLIC KEY-----\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n-----END PUBLIC"), "does not end with -----END PUBLIC KEY-----"),
            ("QUFB".to_string(), "fewer than the 68"),
            ("A".repeat(8193), "more than the 8192 allowed"),
            (format!("{}!!", &k[..80]), "not base64"),
        ] {
            let e = err(&obj("registry.example.com", &public_key(&bad)));
            assert!(e.contains(&format!("{place}spec.policy.rootOfTrust.publicKey.keyData: ")), "{e}");
            assert!(e.contains(want), "{want}: {e}");
            assert!(!e.contains("SECRET") && !e.contains(&bad[..20.min(bad.len())]), "{e}");
        }
        // A key ending in a newline, or not, and base64 wrapped over lines, are fine.
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----",
            "A".repeat(60)
        );
        read(&obj(
            "registry.example.com",
            &public_key(&b64(pem.as_bytes())),
        ))
        .unwrap();
        // v1alpha1 has no PEM rules for keyData.
        let alpha = obj("registry.example.com", &public_key(&b64(&[7u8; 60])));
        assert!(err(&alpha).contains("does not start with"));
        read(&alpha.replace("config.openshift.io/v1", "config.openshift.io/v1alpha1")).unwrap();

        // Scopes: the grammar, the count, no repeats.
        for good in [
            "registry.example.com",
            "registry.example.com:5000",
            "registry.example.com/ns",
            "registry.example.com:5000/ns/my-repo__x.y",
            "registry.example.com/ns/repo:v1.2_x",
            "registry.example.com/ns/repo@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "localhost",
            "localhost:5000/repo",
            "*.example.com",
            "*.com",
            "Registry.Example.com/ns",
        ] {
            read(&obj(good, &pk)).unwrap_or_else(|e| panic!("{good}: {e:#}"));
        }
        for (bad, want) in [
            ("ns/repo", "fully qualified domain name or localhost"),
            ("registry/ns", "fully qualified domain name or localhost"),
            ("*", "fully qualified domain name or localhost"),
            ("*.example.com/ns", "a wildcard may only start a domain"),
            ("foo.*.example.com", "a wildcard may only start a domain"),
            ("*.example.com:5000", "a wildcard may only start a domain"),
            (
                "registry.example.com/NS",
                "not a repository namespace or image",
            ),
            (
                "registry.example.com/ns/",
                "not a repository namespace or image",
            ),
            (
                "registry.example.com//ns",
                "not a repository namespace or image",
            ),
            (
                "registry.example.com/-ns",
                "not a repository namespace or image",
            ),
            (
                "registry.example.com/a._b",
                "not a repository namespace or image",
            ),
            (
                "registry.example.com/a@sha256:abc",
                "not a repository namespace or image",
            ),
            (
                "registry.example.com/a:-tag",
                "not a repository namespace or image",
            ),
            (
                "registry.example.com:port/a",
                "not a repository namespace or image",
            ),
            (
                "-registry.example.com/a",
                "not a repository namespace or image",
            ),
        ] {
            let e = err(&obj(bad, &pk));
            assert!(
                e.contains(&format!("{place}spec.scopes[0]: {bad:?}: ")) && e.contains(want),
                "{bad}: {e}"
            );
        }
        let long = format!("registry.example.com/{}", "a".repeat(500));
        assert!(err(&obj(&long, &pk)).contains("longer than the 512 characters allowed"));
        let many: Vec<String> = (0..257).map(|i| format!("r{i}.example.com")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(err(&cip("p", &many, &pk)).contains("257 scopes, more than the 256"));
        read(&cip("p", &many[..256], &pk)).unwrap();
        let e = err(&cip("p", &["a.example.com", "a.example.com"], &pk));
        assert!(
            e.contains("spec.scopes[1]: \"a.example.com\" is given twice"),
            "{e}"
        );
        assert!(
            err(&base.replace("  scopes: [\"registry.example.com/ns/repo\"]\n", ""))
                .contains("spec.scopes: missing; it is required")
        );

        // signedIdentity: matchPolicy and its members.
        let with_id = |id: &str| format!("{base}    signedIdentity:\n{id}");
        for (id, want) in [
            ("      matchPolicy: MatchRepoDigestOrExact\n", json!({"type": "matchRepoDigestOrExact"})),
            ("      matchPolicy: MatchRepository\n", json!({"type": "matchRepository"})),
            (
                "      matchPolicy: ExactRepository\n      exactRepository:\n        repository: registry.example.com/ns/repo\n",
                json!({"type": "exactRepository", "dockerRepository": "registry.example.com/ns/repo"}),
            ),
            (
                "      matchPolicy: RemapIdentity\n      remapIdentity:\n        prefix: mirror.example.com:5000/ocp\n        signedPrefix: localhost:5000\n",
                json!({"type": "remapIdentity", "prefix": "mirror.example.com:5000/ocp", "signedPrefix": "localhost:5000"}),
            ),
        ] {
            let p = read(&with_id(id)).unwrap();
            assert_eq!(p.objects[0].requirement["signedIdentity"], want, "{id}");
        }
        assert_eq!(
            read(&base).unwrap().objects[0].requirement["signedIdentity"],
            json!({"type": "matchRepoDigestOrExact"})
        );
        for (id, want) in [
            ("      matchPolicy: MatchExact\n", "\"MatchExact\" is not a match policy"),
            ("      exactRepository: {repository: a.example.com}\n", "signedIdentity.matchPolicy: missing"),
            ("      matchPolicy: ExactRepository\n", "signedIdentity.exactRepository: missing; matchPolicy ExactRepository requires it"),
            ("      matchPolicy: MatchRepository\n      remapIdentity: {prefix: a.example.com, signedPrefix: b.example.com}\n", "signedIdentity.remapIdentity: given with matchPolicy MatchRepository"),
            ("      matchPolicy: ExactRepository\n      exactRepository: {repository: a.example.com/r:v1}\n", "should not include a tag or digest"),
            ("      matchPolicy: ExactRepository\n      exactRepository: {repository: a.example.com:5000}\n", "should not include a tag or digest"),
            ("      matchPolicy: ExactRepository\n      exactRepository: {repository: repo}\n", "must start with localhost or a '.'-separated"),
            ("      matchPolicy: RemapIdentity\n      remapIdentity: {prefix: a.example.com/A, signedPrefix: b.example.com}\n", "remapIdentity.prefix: \"a.example.com/A\": not a repository or prefix"),
            ("      matchPolicy: RemapIdentity\n      remapIdentity: {prefix: a.example.com}\n", "remapIdentity.signedPrefix: missing"),
        ] {
            let e = err(&with_id(id));
            assert!(e.contains(want), "{id}: {e}");
        }
    }

    fn fulcio(ca: &str, rekor: &str, issuer: &str, email: &str) -> String {
        format!(
            "    rootOfTrust:\n      policyType: FulcioCAWithRekor\n      fulcioCAWithRekor:\n        \
             fulcioCAData: {ca}\n        rekorKeyData: {rekor}\n        fulcioSubject:\n          \
             oidcIssuer: {issuer}\n          signedEmail: {email}\n"
        )
    }

    fn pki(roots: &str, inter: Option<&str>, email: Option<&str>, host: Option<&str>) -> String {
        let mut s = format!(
            "    rootOfTrust:\n      policyType: PKI\n      pki:\n        caRootsData: {roots}\n"
        );
        if let Some(i) = inter {
            s += &format!("        caIntermediatesData: {i}\n");
        }
        s += "        pkiCertificateSubject:\n";
        if let Some(e) = email {
            s += &format!("          email: {e}\n");
        }
        if let Some(h) = host {
            s += &format!("          hostname: \"{h}\"\n");
        }
        if email.is_none() && host.is_none() {
            s += "          {}\n";
        }
        s
    }

    #[test]
    fn fulcio_and_pki_rules() {
        let rekor = key_b64(2);
        let ok = fulcio(
            CERT_B64,
            &rekor,
            "https://oidc.example.com",
            "signer@example.com",
        );
        read(&cip("f", &["a.example.com"], &ok)).unwrap();
        for (root, want) in [
            (fulcio(&rekor, &rekor, "https://oidc.example.com", "s@example.com"), "fulcioCAData: does not start with -----BEGIN CERTIFICATE-----"),
            (fulcio(CERT_B64, CERT_B64, "https://oidc.example.com", "s@example.com"), "rekorKeyData: does not start with -----BEGIN PUBLIC KEY-----"),
            (fulcio(CERT_B64, &rekor, "oidc.example.com", "s@example.com"), "oidcIssuer: \"oidc.example.com\" is not a valid URL"),
            (fulcio(CERT_B64, &rekor, "https://oidc.example.com", "signer"), "signedEmail: \"signer\" is not a valid email address"),
            (fulcio(CERT_B64, &rekor, "https://oidc.example.com", "\"a b@example.com\""), "is not a valid email address"),
            (
                fulcio(CERT_B64, &rekor, &format!("https://oidc.example.com/{}", "a".repeat(2048)), "s@example.com"),
                "oidcIssuer: longer than the 2048 characters allowed",
            ),
            (
                format!("    rootOfTrust:\n      policyType: FulcioCAWithRekor\n      fulcioCAWithRekor:\n        fulcioCAData: {CERT_B64}\n"),
                "fulcioCAWithRekor.rekorKeyData: missing",
            ),
        ] {
            let e = err(&cip("f", &["a.example.com"], &root));
            assert!(e.contains(want), "{want}: {e}");
        }
        let two_certs = b64(
            b"-----BEGIN CERTIFICATE-----\nMIIBATA=\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nMIIBATA=\n-----END CERTIFICATE-----\n",
        );
        read(&cip(
            "p",
            &["a.example.com"],
            &pki(&two_certs, Some(CERT_B64), Some("s@example.com"), None),
        ))
        .unwrap();
        read(&cip(
            "p",
            &["a.example.com"],
            &pki(CERT_B64, None, None, Some("*.example.com")),
        ))
        .unwrap();
        let unbalanced = b64(b"-----BEGIN CERTIFICATE-----\nMIIBATA=\n-----BEGIN CERTIFICATE-----\nMIIBATA=\n-----END CERTIFICATE-----\n");
        for (root, want) in [
            (pki(&unbalanced, None, Some("s@example.com"), None), "caRootsData: has 2 -----BEGIN CERTIFICATE----- and 1 -----END CERTIFICATE----- markers"),
            (pki("QUFB", None, Some("s@example.com"), None), "caRootsData: 4 characters of base64, fewer than the 72"),
            (pki(CERT_B64, Some(&rekor), Some("s@example.com"), None), "caIntermediatesData: does not start with -----BEGIN CERTIFICATE-----"),
            (pki(CERT_B64, None, None, None), "pkiCertificateSubject: neither email nor hostname is set"),
            (pki(CERT_B64, None, None, Some("Host.example.com")), "hostname: \"Host.example.com\" is not a valid DNS-1123 subdomain"),
            (pki(CERT_B64, None, None, Some("a.*.example.com")), "is not a valid DNS-1123 subdomain"),
            (pki(CERT_B64, None, Some("nobody"), None), "email: \"nobody\" is not a valid email address"),
        ] {
            let e = err(&cip("p", &["a.example.com"], &root));
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    /// MCO's `TestGeneratePolicyJSON`, with data the CRDs accept: a FulcioCAWithRekor
    /// ClusterImagePolicy with a remapIdentity and a PKI one, onto MCO's base policy.
    #[test]
    fn renders_as_mco_does() {
        let rekor = key_b64(2);
        let cr0 = cip(
            "test-cr0",
            &["test0.com"],
            &format!(
                "{}    signedIdentity:\n      matchPolicy: RemapIdentity\n      remapIdentity:\n        \
                 prefix: test-remap-prefix.example.com\n        signedPrefix: test-remap-signed-prefix.example.com\n",
                fulcio(CERT_B64, &rekor, "https://OIDC.example.com", "test-user@example.com")
            ),
        );
        let cr3 = cip(
            "test-cr3",
            &["test3.com/ns/repo"],
            &pki(
                CERT_B64,
                Some(CERT_B64),
                Some("test-user@example.com"),
                Some("my-host.example.com"),
            ),
        );
        let fulcio_req = json!({
            "type": "sigstoreSigned",
            "fulcio": {"caData": CERT_B64, "oidcIssuer": "https://OIDC.example.com",
                       "subjectEmail": "test-user@example.com"},
            "rekorPublicKeyData": rekor,
            "signedIdentity": {"type": "remapIdentity", "prefix": "test-remap-prefix.example.com",
                               "signedPrefix": "test-remap-signed-prefix.example.com"}
        });
        let pki_req = json!({
            "type": "sigstoreSigned",
            "pki": {"caRootsData": CERT_B64, "caIntermediatesData": CERT_B64,
                    "subjectEmail": "test-user@example.com", "subjectHostname": "my-host.example.com"},
            "signedIdentity": {"type": "matchRepoDigestOrExact"}
        });
        let (got, r) = render(&format!("{cr0}\n---\n{cr3}"));
        let want = json!({
            "default": [{"type": "insecureAcceptAnything"}],
            "transports": {
                "atomic": {"test0.com": [fulcio_req], "test3.com/ns/repo": [pki_req]},
                "docker": {"test0.com": [fulcio_req], "test3.com/ns/repo": [pki_req]},
                "docker-daemon": {"": [{"type": "insecureAcceptAnything"}]}
            }
        });
        assert_eq!(got, want);
        // The keys in Go's order: transports and scopes sorted, requirement fields as
        // the struct declares them.
        let text = String::from_utf8(r.policy.clone()).unwrap();
        let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} in {text}"));
        assert!(at("\"atomic\"") < at("\"docker\"") && at("\"docker\"") < at("\"docker-daemon\""));
        assert!(
            at("\"fulcio\"") < at("\"rekorPublicKeyData\"")
                && at("\"rekorPublicKeyData\"") < at("\"signedIdentity\"")
        );
        assert_eq!(r.attachment_scopes, ["test0.com", "test3.com/ns/repo"]);
        assert!(r.warnings.is_empty());
        // The rendered fulcio, pki and keys-with-Rekor requirements are a valid policy.
        Policy::from_image_policies(&r.policy, "rendered", None, r.attachment_scopes.clone())
            .unwrap();
        // A PublicKey object with keyData only loads.
        let k = key_b64(1);
        let (got, r) = render(&cip(
            "openshift",
            &[
                "registry.example.com/ocp/release",
                "registry.example.com/ocp/art-dev",
            ],
            &public_key(&k),
        ));
        let req = json!({"type": "sigstoreSigned", "keyData": k, "signedIdentity": {"type": "matchRepoDigestOrExact"}});
        assert_eq!(
            got["transports"]["docker"],
            json!({"registry.example.com/ocp/art-dev": [req], "registry.example.com/ocp/release": [req]})
        );
        Policy::from_image_policies(&r.policy, "rendered", None, Vec::new()).unwrap();
        // With a Rekor key, the requirement carries it.
        let with_rekor = public_key(&k) + &format!("        rekorKeyData: {}\n", key_b64(2));
        let (got, _) = render(&cip("r", &["registry.example.com"], &with_rekor));
        assert_eq!(
            got["transports"]["docker"]["registry.example.com"][0]["rekorPublicKeyData"],
            json!(key_b64(2))
        );
    }

    /// MCO's `TestGetValidScopePolicies` and `TestUpdateNamespacedPolicyJSONs`: the
    /// requirements of ClusterImagePolicies naming one scope add up; an ImagePolicy scope
    /// equal to or nested in a ClusterImagePolicy scope is skipped; the ImagePolicy
    /// requirements of the MCO's namespace are appended to the base's; other namespaces
    /// do not apply.
    #[test]
    fn cluster_wins_and_namespaces() {
        let (k0, k1, k2) = (key_b64(1), key_b64(2), key_b64(3));
        let req = |k: &str| json!({"type": "sigstoreSigned", "keyData": k, "signedIdentity": {"type": "matchRepoDigestOrExact"}});
        let text = [
            cip("test-cr0", &["test0.example.com"], &public_key(&k0)),
            cip(
                "test-cr1",
                &[
                    "test0.example.com",
                    "test1.example.com",
                    "*.wild.example.com",
                ],
                &public_key(&k1),
            ),
            ip(
                MCO_NAMESPACE,
                "mine",
                &[
                    "test0.example.com",
                    "test1.example.com/ns",
                    "a.wild.example.com",
                    "test2.example.com/ns/repo/x",
                    "test1.example.com:5000",
                ],
                &public_key(&k2),
            ),
            ip(
                "testnamespace",
                "theirs",
                &["test3.example.com"],
                &public_key(&k2),
            ),
        ]
        .join("\n---\n");
        let (got, r) = render(&text);
        assert_eq!(
            got["transports"]["docker"],
            json!({
                "*.wild.example.com": [req(&k1)],
                "test0.example.com": [req(&k0), req(&k1)],
                "test1.example.com": [req(&k1)],
                "test1.example.com:5000": [req(&k2)],
                "test2.example.com/ns/repo/x": [req(&k2)],
            })
        );
        // atomic: only scopes with fewer than three `/`.
        assert!(got["transports"]["atomic"]
            .get("test2.example.com/ns/repo/x")
            .is_none());
        assert_eq!(
            got["transports"]["atomic"]["test1.example.com:5000"],
            json!([req(&k2)])
        );
        assert_eq!(
            r.attachment_scopes,
            [
                "*.wild.example.com",
                "test0.example.com",
                "test1.example.com",
                "test1.example.com:5000",
                "test2.example.com/ns/repo/x",
                "test3.example.com"
            ]
        );
        assert_eq!(
            r.warnings,
            [
                Warning::ImagePolicyScopesShadowed {
                    file: "f.yaml".into(),
                    name: "mine".into(),
                    namespace: MCO_NAMESPACE.into(),
                    scopes: vec![
                        "test0.example.com".into(),
                        "test1.example.com/ns".into(),
                        "a.wild.example.com".into()
                    ],
                },
                Warning::ImagePolicyOtherNamespace {
                    file: "f.yaml".into(),
                    name: "theirs".into(),
                    namespace: "testnamespace".into(),
                },
            ]
        );
        // Onto a base with docker scopes of its own: those stay; a ClusterImagePolicy
        // scope replaces the base's entry; an ImagePolicy's is appended to it.
        let base = json!({
            "default": [{"type": "reject"}],
            "transports": {"docker": {
                "blocked.example.com": [{"type": "reject"}],
                "test0.example.com": [{"type": "insecureAcceptAnything"}],
                "test2.example.com/ns/repo/x": [{"type": "insecureAcceptAnything"}]
            }}
        });
        let r = read(&text)
            .unwrap()
            .render(base.to_string().as_bytes(), "base.json")
            .unwrap();
        let got: Json = serde_json::from_slice(&r.policy).unwrap();
        assert_eq!(got["default"], json!([{"type": "reject"}]));
        let d = &got["transports"]["docker"];
        assert_eq!(d["blocked.example.com"], json!([{"type": "reject"}]));
        assert_eq!(d["test0.example.com"], json!([req(&k0), req(&k1)]));
        assert_eq!(
            d["test2.example.com/ns/repo/x"],
            json!([{"type": "insecureAcceptAnything"}, req(&k2)])
        );
        // Only ImagePolicies: the base is kept but for their scopes.
        let (got, r) = render(&ip(
            MCO_NAMESPACE,
            "only",
            &["test2.example.com"],
            &public_key(&k2),
        ));
        assert_eq!(
            got["transports"]["docker"],
            json!({"test2.example.com": [req(&k2)]})
        );
        assert_eq!(
            got["transports"]["docker-daemon"],
            json!({"": [{"type": "insecureAcceptAnything"}]})
        );
        assert_eq!(r.attachment_scopes, ["test2.example.com"]);
    }

    #[test]
    fn nested_scopes_as_runtime_utils() {
        for (sub, sup, want) in [
            ("a.com", "a.com", true),
            ("a.com/ns", "a.com", true),
            ("a.com/ns/r", "a.com/ns", true),
            ("a.com/nsx", "a.com/ns", false),
            ("a.com/ns:tag", "a.com/ns", false),
            ("a.com", "a.com/ns", false),
            ("b.a.com", "*.a.com", true),
            ("b.a.com/r", "*.a.com", true),
            ("*.b.a.com", "*.a.com", true),
            ("b.a.com:5000", "*.a.com", true),
            ("quay/bar.a.com:5000", "*.a.com", false),
            ("a.com", "*.a.com", false),
            ("ba.com", "*.a.com", false),
        ] {
            assert_eq!(scope_is_nested_inside(sub, sup), want, "{sub} in {sup}");
        }
    }
}
