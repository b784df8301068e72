//! The user-data Secret that holds a pointer config on a cluster
//! (`openshift-machine-api/<pool>-user-data`, and `<pool>-user-data-managed` that MCO's
//! operator writes): reading the config out of one as `oc get secret -o yaml|json`
//! prints it, and writing a config as one for a MachineSet's `userDataSecret`.
//!
//! Nothing here quotes the bytes of a Secret in a message: they may hold credentials.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;
#[cfg(test)]
use serde_json::Value;

/// The key of the config in a user-data Secret.
pub const USER_DATA: &str = "userData";

/// The namespace of the user-data Secrets MachineSets read.
pub const NAMESPACE: &str = "openshift-machine-api";

/// The most a Secret may hold: the sum of its decoded data (Kubernetes' `MaxSecretSize`).
pub const MAX_SECRET_BYTES: usize = 1024 * 1024;

/// Where a config was read from, when it was a Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretSource {
    /// `metadata.name`, if the Secret has one.
    pub name: Option<String>,
    /// `metadata.namespace`, if the Secret has one.
    pub namespace: Option<String>,
    /// `data.userData` or `stringData.userData`.
    pub key: &'static str,
}

/// Why a Secret could not give a config.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UserDataError {
    /// Not JSON, and not YAML either.
    #[error("neither an Ignition config (JSON) nor a Kubernetes Secret (YAML): the YAML does not parse at line {line}, column {column}")]
    NotYaml {
        /// Where the YAML breaks.
        line: usize,
        /// Where in that line.
        column: usize,
    },
    /// A Kubernetes object of another kind.
    #[error("a YAML document whose kind is not Secret: pass an Ignition config, or the Secret that holds one (oc get secret -n openshift-machine-api worker-user-data-managed -o yaml)")]
    NotASecret,
    /// A Secret without the key.
    #[error("the Secret has no {USER_DATA} in data or stringData (it has {keys} other keys); the pointer config of a pool is in the Secret <pool>-user-data-managed or <pool>-user-data of openshift-machine-api")]
    NoUserData {
        /// How many other keys it has (their names are bytes of the input: not shown).
        keys: usize,
    },
    /// A `data` value that is not base64.
    #[error("data.{USER_DATA} of the Secret is not base64 (as Kubernetes writes data values)")]
    NotBase64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Probe {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    data: Option<BTreeMap<String, Option<String>>>,
    #[serde(default)]
    string_data: Option<BTreeMap<String, Option<String>>>,
}

#[derive(Deserialize, Default)]
struct Metadata {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
}

/// The config in `bytes`: the bytes themselves when they are JSON that is not a Secret
/// (an Ignition config, checked later by its reader), else the `userData` of the
/// Secret they hold, in YAML or JSON.
pub fn config_of(bytes: Vec<u8>) -> Result<(Vec<u8>, Option<SecretSource>), UserDataError> {
    let json = bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{');
    let probe: Probe = if json {
        match serde_json::from_slice::<Probe>(&bytes) {
            Ok(p) if p.kind.as_deref() == Some("Secret") => p,
            // A config, or JSON that does not parse: the config reader says where.
            _ => return Ok((bytes, None)),
        }
    } else {
        serde_yaml_ng::from_slice(&bytes).map_err(|e| {
            let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
            UserDataError::NotYaml { line, column }
        })?
    };
    if probe.kind.as_deref() != Some("Secret") {
        return Err(UserDataError::NotASecret);
    }
    let name = probe.metadata.name.clone();
    let source = |key| SecretSource {
        name: name.clone(),
        namespace: probe.metadata.namespace.clone(),
        key,
    };
    // stringData is written over data, as the API server does.
    if let Some(Some(text)) = probe.string_data.as_ref().and_then(|d| d.get(USER_DATA)) {
        return Ok((
            text.clone().into_bytes(),
            Some(source("stringData.userData")),
        ));
    }
    if let Some(Some(b64)) = probe.data.as_ref().and_then(|d| d.get(USER_DATA)) {
        let compact: String = b64.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(compact)
            .map_err(|_| UserDataError::NotBase64)?;
        return Ok((decoded, Some(source("data.userData"))));
    }
    let keys = [&probe.data, &probe.string_data]
        .into_iter()
        .flatten()
        .map(BTreeMap::len)
        .sum();
    Err(UserDataError::NoUserData { keys })
}

/// Why a config cannot go into a Secret.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretOutError {
    #[error("the config is {size} bytes, over the 1 MiB ({MAX_SECRET_BYTES} bytes) a Secret holds: use remote mode (--payload-url URL --payload-out FILE), which keeps the config to a few kB")]
    /// Over Kubernetes' limit.
    TooBig {
        /// The bytes the Secret would hold.
        size: usize,
    },
}

/// A user-data Secret holding `config`, as YAML: `openshift-machine-api/NAME`, with
/// `userData` and `disableTemplating` (the config is used as it is, as MCO's own
/// managed Secret says), for a MachineSet's `spec.template.spec.providerSpec.value.
/// userDataSecret.name`.
pub fn secret_yaml(name: &str, config: &[u8]) -> Result<Vec<u8>, SecretOutError> {
    let disable = b"true\n";
    let size = config.len() + disable.len();
    if size > MAX_SECRET_BYTES {
        return Err(SecretOutError::TooBig { size });
    }
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/managed-by": "mcd-inject"},
        },
        "type": "Opaque",
        "data": {
            "disableTemplating": b64(disable),
            USER_DATA: b64(config),
        },
    });
    Ok(serde_yaml_ng::to_string(&secret)
        .expect("a JSON value serialises as YAML")
        .into_bytes())
}

/// The Secret name for the result: `<pool>-user-data-mcd-inject` after the pool of the
/// Secret the base came from, else the worker pool's.
pub fn default_name(base: Option<&SecretSource>) -> String {
    let pool = base
        .and_then(|s| s.name.as_deref())
        .and_then(|n| {
            n.strip_suffix("-user-data-managed")
                .or_else(|| n.strip_suffix("-user-data"))
        })
        .filter(|p| !p.is_empty())
        .unwrap_or("worker");
    format!("{pool}-user-data-mcd-inject")
}

/// A Kubernetes object name (RFC 1123 subdomain), as `--secret-name` takes it.
pub fn check_name(name: &str) -> Result<String, String> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if ok {
        Ok(name.to_string())
    } else {
        Err(format!(
            "{name:?} is not a Kubernetes object name (lower-case letters, digits, '-' and '.', at most 253)"
        ))
    }
}

/// The value a YAML Secret's data holds, for tests of the round trip.
#[cfg(test)]
fn data_of(yaml: &[u8], key: &str) -> Vec<u8> {
    let v: Value = serde_yaml_ng::from_slice(yaml).unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(v["data"][key].as_str().unwrap())
        .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STUB: &str = r#"{"ignition":{"version":"3.5.0"}}"#;

    #[test]
    fn reads_the_config_of_a_secret_in_yaml_and_json() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(STUB);
        let yaml = format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: worker-user-data-managed\n  namespace: openshift-machine-api\ntype: Opaque\ndata:\n  disableTemplating: dHJ1ZQo=\n  userData: {b64}\n"
        );
        let (cfg, src) = config_of(yaml.into_bytes()).unwrap();
        assert_eq!(cfg, STUB.as_bytes());
        let src = src.unwrap();
        assert_eq!(src.name.as_deref(), Some("worker-user-data-managed"));
        assert_eq!(src.key, "data.userData");
        assert_eq!(default_name(Some(&src)), "worker-user-data-mcd-inject");
        let json = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "infra-user-data"},
            "stringData": {"userData": STUB}});
        let (cfg, src) = config_of(json.to_string().into_bytes()).unwrap();
        assert_eq!(cfg, STUB.as_bytes());
        assert_eq!(src.as_ref().unwrap().key, "stringData.userData");
        assert_eq!(default_name(src.as_ref()), "infra-user-data-mcd-inject");
        // A config passes through as it is.
        let (cfg, src) = config_of(STUB.as_bytes().to_vec()).unwrap();
        assert_eq!((cfg.as_slice(), src), (STUB.as_bytes(), None));
    }

    #[test]
    fn a_secret_without_user_data_is_named_with_its_keys_not_its_values() {
        let yaml = "kind: Secret\nmetadata:\n  name: pull\ndata:\n  .dockerconfigjson: c2VjcmV0\n";
        let e = config_of(yaml.as_bytes().to_vec()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("the Secret has no userData"), "{msg}");
        assert!(msg.contains("it has 1 other keys"), "{msg}");
        assert!(
            !msg.contains("c2VjcmV0") && !msg.contains("dockerconfigjson"),
            "{msg}"
        );
        let bad = "kind: Secret\nmetadata:\n  name: s\ndata:\n  userData: 'not base64!'\n";
        assert!(matches!(
            config_of(bad.as_bytes().to_vec()),
            Err(UserDataError::NotBase64)
        ));
        let cm = "kind: ConfigMap\ndata:\n  userData: x\n";
        assert!(matches!(
            config_of(cm.as_bytes().to_vec()),
            Err(UserDataError::NotASecret)
        ));
        let e = config_of(b"kind: Secret\n  data: [secret-value\n".to_vec()).unwrap_err();
        assert!(!e.to_string().contains("secret-value"), "{e}");
    }

    #[test]
    fn writes_a_secret_of_at_most_one_mib() {
        let yaml = secret_yaml("worker-user-data-mcd-inject", STUB.as_bytes()).unwrap();
        assert_eq!(data_of(&yaml, "userData"), STUB.as_bytes());
        assert_eq!(data_of(&yaml, "disableTemplating"), b"true\n");
        let (cfg, src) = config_of(yaml).unwrap();
        assert_eq!(cfg, STUB.as_bytes());
        assert_eq!(src.unwrap().namespace.as_deref(), Some(NAMESPACE));
        let big = vec![b' '; MAX_SECRET_BYTES];
        assert!(matches!(
            secret_yaml("x", &big),
            Err(SecretOutError::TooBig { .. })
        ));
        assert!(secret_yaml("x", &big[..MAX_SECRET_BYTES - 5]).is_ok());
        assert!(check_name("worker-user-data").is_ok());
        assert!(check_name("Worker").is_err());
        assert!(check_name("-x").is_err());
    }
}
