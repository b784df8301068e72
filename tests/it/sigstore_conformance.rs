//! Sigstore conformance: containers/image (Debian trixie's skopeo 1.18, sigstore compiled
//! in) and mcd-inject judge the same image, pulled from the same loopback registry, under
//! the same policy.json, registries.d and registries.conf, with the same signatures, case
//! by case; any disagreement fails the test, except the ones docs/release.md states
//! (`Case::difference`), which must still be differences.
//!
//! The signatures are cosign's where cosign can make them: `cosign generate-key-pair` and
//! `cosign sign --key … --tlog-upload=false` (P-256, and `--recursive` over an index),
//! `cosign import-key-pair` (Ed25519, the one kind Debian's cosign imports). The other
//! keys' payloads (P-224, P-384, P-521, RSA) and the payloads written by hand are signed
//! with openssl and attached with `cosign attach signature`, with the certificates,
//! chains and Rekor bundles of keyless and PKI signatures, which openssl makes here: a
//! Fulcio-like CA (root, intermediate, leaves with the OIDC issuer extensions and the
//! email SAN), a Rekor key and its SETs (ECDSA over the RFC 8785 form of the entry).
//! Attachments cosign would not write (a layer of another media type) are pushed with
//! curl.
//!
//! skopeo runs in the trixie root (`tests/support/trixie-root.sh`, made by
//! scripts/test.sh) with chroot, which shares the loopback network. The cases' files are
//! inside that root, and the root holds a link from its own path to `/`, so that every
//! path names the same file for both tools.
//!
//! Needs the trixie root, `openssl`, `curl`, `skopeo` and the loopback registries.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::harness::registry::{registries, Sandbox};
use crate::harness::{crate_root, require_tools, run_ok, sha256_hex};
use crate::sigstore::Registry;

const SIG_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
const ISSUER: &str = "https://oidc.example.com";
const EMAIL: &str = "release@example.com";
const LOG_ID: &str = "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d";

/// The trixie root, made (or waited for, while scripts/test.sh makes it) by its script.
fn trixie_root() -> PathBuf {
    let root = std::env::var_os("MCD_INJECT_TRIXIE_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_root().join("target/trixie-root"));
    let out = Command::new("bash")
        .arg(crate_root().join("tests/support/trixie-root.sh"))
        .arg(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the trixie root with skopeo 1.18 and cosign, the judge of these cases, could not \
         be made at {} (tests/support/trixie-root.sh needs root and a Debian mirror): {}",
        root.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let root = fs::canonicalize(root).unwrap();
    // The root's own path, inside it, leads back to its top.
    let link = root.join(root.strip_prefix("/").unwrap());
    if fs::symlink_metadata(&link).is_err() {
        fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink("/", &link).unwrap();
    }
    root
}

/// trixie's openssl (3.5: `x509 -new -not_before`), in the root.
fn openssl(root: &Path, args: &[&str]) -> Output {
    run_ok(Command::new("chroot").arg(root).arg("openssl").args(args))
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A key made by openssl: its private key file, and its public key as PEM.
#[derive(Clone)]
struct Key {
    root: PathBuf,
    private: PathBuf,
    public: PathBuf,
    ed25519: bool,
}

impl Key {
    fn public_pem(&self) -> String {
        fs::read_to_string(&self.public).unwrap()
    }

    /// The base64 signature of `data`, as cosign makes it: ECDSA (any curve) and RSA
    /// PKCS#1 v1.5 over SHA-256, Ed25519 over the data.
    fn sign(&self, dir: &Path, data: &[u8]) -> String {
        let input = dir.join("to-sign");
        fs::write(&input, data).unwrap();
        let (k, i) = (self.private.to_str().unwrap(), input.to_str().unwrap());
        let out = if self.ed25519 {
            openssl(
                &self.root,
                &["pkeyutl", "-sign", "-inkey", k, "-rawin", "-in", i],
            )
        } else {
            openssl(&self.root, &["dgst", "-sha256", "-sign", k, i])
        };
        b64(&out.stdout)
    }
}

/// What the cases' files are made with: a directory inside the trixie root.
struct Maker {
    root: PathBuf,
    dir: PathBuf,
    n: std::cell::Cell<u32>,
}

impl Maker {
    fn path(&self, name: &str) -> PathBuf {
        self.n.set(self.n.get() + 1);
        self.dir.join(format!("{}-{name}", self.n.get()))
    }

    fn write(&self, name: &str, data: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(name);
        fs::write(&p, data).unwrap();
        p
    }

    /// An openssl key: `algorithm` is an EC curve (prime256v1, secp384r1, ...), `ed25519`
    /// or `rsaBITS`.
    fn key(&self, algorithm: &str) -> Key {
        let private = self.path(&format!("{algorithm}.key"));
        let p = private.to_str().unwrap();
        if let Some(bits) = algorithm.strip_prefix("rsa") {
            let opt = format!("rsa_keygen_bits:{bits}");
            openssl(
                &self.root,
                &["genpkey", "-algorithm", "RSA", "-pkeyopt", &opt, "-out", p],
            );
        } else if algorithm == "ed25519" {
            openssl(&self.root, &["genpkey", "-algorithm", "ed25519", "-out", p]);
        } else {
            let opt = format!("ec_paramgen_curve:{algorithm}");
            openssl(
                &self.root,
                &["genpkey", "-algorithm", "EC", "-pkeyopt", &opt, "-out", p],
            );
        }
        let public = self.path(&format!("{algorithm}.pub"));
        openssl(
            &self.root,
            &[
                "pkey",
                "-in",
                p,
                "-pubout",
                "-out",
                public.to_str().unwrap(),
            ],
        );
        Key {
            root: self.root.clone(),
            private,
            public,
            ed25519: algorithm == "ed25519",
        }
    }

    /// A command run in the trixie root, in the cases' directory.
    fn chroot(&self, program: &str) -> Command {
        let mut c = Command::new("chroot");
        c.arg(&self.root)
            .arg("env")
            .arg(format!("HOME={}", self.dir.display()))
            .arg("COSIGN_PASSWORD=")
            .arg("COSIGN_YES=true")
            .arg(program);
        c
    }

    fn cosign(&self, args: &[&str]) -> Output {
        run_ok(self.chroot("cosign").args(args))
    }

    /// cosign on the (plain HTTP) registry.
    fn cosign_registry(&self, args: &[&str]) -> Output {
        run_ok(
            self.chroot("cosign")
                .args(args)
                .args(["--allow-http-registry", "--allow-insecure-registry"]),
        )
    }

    /// A certificate signed by `issuer` (self-signed without one) for `key`, with these
    /// openssl x509v3 extension lines and validity.
    fn cert(
        &self,
        name: &str,
        key: &Key,
        issuer: Option<(&Path, &Key)>,
        extensions: &str,
        days: (i64, i64),
    ) -> PathBuf {
        let ext = self.write(&format!("{name}.ext"), format!("[ext]\n{extensions}\n"));
        let out = self.path(&format!("{name}.pem"));
        let start = offset_time(days.0);
        let end = offset_time(days.1);
        let mut args: Vec<String> = vec![
            "x509".into(),
            "-new".into(),
            if issuer.is_some() {
                "-force_pubkey"
            } else {
                "-key"
            }
            .into(),
            if issuer.is_some() {
                &key.public
            } else {
                &key.private
            }
            .display()
            .to_string(),
            "-subj".into(),
            format!("/CN={name}"),
            "-not_before".into(),
            start,
            "-not_after".into(),
            end,
            "-extfile".into(),
            ext.display().to_string(),
            "-extensions".into(),
            "ext".into(),
            "-out".into(),
            out.display().to_string(),
        ];
        if let Some((ca, ca_key)) = issuer {
            args.extend([
                "-CA".into(),
                ca.display().to_string(),
                "-CAkey".into(),
                ca_key.private.display().to_string(),
            ]);
        }
        run_ok(
            Command::new("chroot")
                .arg(&self.root)
                .arg("openssl")
                .args(&args),
        );
        out
    }
}

/// openssl's time form, `days` days from now (negative: ago).
fn offset_time(days: i64) -> String {
    let t = time::OffsetDateTime::now_utc() + time::Duration::seconds(days * 86_400);
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

const CA_EXT: &str = "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash";

/// A leaf's extensions: code signing, the email SAN and Fulcio's issuer extensions.
fn leaf_ext(issuer: &str, email: &str) -> String {
    format!(
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
         extendedKeyUsage=codeSigning\nsubjectAltName=email:{email}\n\
         1.3.6.1.4.1.57264.1.1=DER:{}\n\
         1.3.6.1.4.1.57264.1.8=ASN1:UTF8String:{issuer}",
        hex::encode(issuer)
    )
}

/// The payload cosign signs: the repository without tag (cosign's), or any identity.
fn payload(digest: &str, identity: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "critical": {
            "identity": {"docker-reference": identity},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature"
        },
        "optional": null
    }))
    .unwrap()
}

/// The hashedrekord entry (the log's body JSON) of (`logged_key` PEM, `sig`,
/// `payload`), its keys spelled by `spec` (Rekor writes `spec`).
fn entry(logged_key: &str, sig: &str, payload: &[u8], spec: &str) -> String {
    format!(
        r#"{{"apiVersion":"0.0.1","kind":"hashedrekord","{spec}":{{"data":{{"hash":{{"algorithm":"sha256","value":"{}"}}}},"signature":{{"content":"{sig}","publicKey":{{"content":"{}"}}}}}}}}"#,
        sha256_hex(payload),
        b64(logged_key.as_bytes())
    )
}

/// A Rekor bundle (`dev.sigstore.cosign/bundle`) of `entry`, its SET signed by `rekor`
/// (ECDSA over the RFC 8785 form of the log entry), integrated at `time` in `log_id`.
fn bundle_of(m: &Maker, rekor: &Key, entry: &str, time: i64, log_id: &str) -> String {
    let body = b64(entry.as_bytes());
    let canonical = format!(
        r#"{{"body":"{body}","integratedTime":{time},"logID":"{log_id}","logIndex":4242}}"#
    );
    let set = rekor.sign(&m.dir, canonical.as_bytes());
    format!(
        r#"{{"SignedEntryTimestamp":"{set}","Payload":{{"body":"{body}","integratedTime":{time},"logIndex":4242,"logID":"{log_id}"}}}}"#
    )
}

/// The bundle of the entry of (`logged_key`, `sig`, `payload`) in the test's log.
fn bundle(
    m: &Maker,
    rekor: &Key,
    logged_key: &str,
    sig: &str,
    payload: &[u8],
    time: i64,
) -> String {
    bundle_of(
        m,
        rekor,
        &entry(logged_key, sig, payload, "spec"),
        time,
        LOG_ID,
    )
}

/// The differences docs/release.md states: mcd-inject refuses, containers/image accepts.
const DIFFERENCES: &[(&str, &str)] = &[
    (
        "PKI: a leaf that is itself a CA",
        "WebPKI refuses a CA certificate as the end entity",
    ),
    (
        "PKI: a leaf with critical certificatePolicies",
        "WebPKI refuses a critical extension it does not process",
    ),
];

/// The image policy object's `spec.policy` with the same root of trust and identity as
/// `requirement`, and the requirement MCO renders from it (helpers.go): keys, CAs and
/// certificates as base64 data. `None` where no object says the same (several keys,
/// identities the CRD has no matchPolicy for, a repository with a port, a hostname the
/// CRD does not admit).
fn image_policy_of(requirement: &Value) -> Option<(Value, Value)> {
    let o = requirement.as_object()?;
    let several = [
        "keyPaths",
        "keyDatas",
        "rekorPublicKeyPaths",
        "rekorPublicKeyDatas",
    ];
    if several.iter().any(|k| o.contains_key(*k))
        || (o.contains_key("keyPath") && o.contains_key("keyData"))
    {
        return None;
    }
    let data = |path: &Value| b64(&fs::read(path.as_str().unwrap()).unwrap());
    let data_of = |v: &Value, path_key: &str, data_key: &str| -> Option<String> {
        v.get(path_key)
            .map(data)
            .or_else(|| v[data_key].as_str().map(str::to_string))
    };
    let rekor = data_of(requirement, "rekorPublicKeyPath", "rekorPublicKeyData");
    let (trust, mut rendered) = if let Some(key) = data_of(requirement, "keyPath", "keyData") {
        let mut public_key = json!({"keyData": key});
        let mut r = json!({"type": "sigstoreSigned", "keyData": key});
        if let Some(k) = &rekor {
            public_key["rekorKeyData"] = json!(k);
            r["rekorPublicKeyData"] = json!(k);
        }
        (
            json!({"policyType": "PublicKey", "publicKey": public_key}),
            r,
        )
    } else if let Some(f) = requirement.get("fulcio") {
        let ca = data_of(f, "caPath", "caData")?;
        let (issuer, email) = (f["oidcIssuer"].clone(), f["subjectEmail"].clone());
        (
            json!({"policyType": "FulcioCAWithRekor", "fulcioCAWithRekor": {
                "fulcioCAData": ca, "rekorKeyData": rekor.clone()?,
                "fulcioSubject": {"oidcIssuer": issuer, "signedEmail": email}}}),
            json!({"type": "sigstoreSigned",
                   "fulcio": {"caData": ca, "oidcIssuer": issuer, "subjectEmail": email},
                   "rekorPublicKeyData": rekor?}),
        )
    } else if let Some(p) = requirement.get("pki") {
        let roots = data_of(p, "caRootsPath", "caRootsData")?;
        let mut object = json!({"caRootsData": roots, "pkiCertificateSubject": {}});
        let mut pki = json!({"caRootsData": roots});
        // The CRD admits only a lowercase DNS-1123 hostname (the API server refuses others).
        if p["subjectHostname"]
            .as_str()
            .is_some_and(|h| h.chars().any(|c| c.is_ascii_uppercase()))
        {
            return None;
        }
        for (field, subject) in [("subjectEmail", "email"), ("subjectHostname", "hostname")] {
            if let Some(v) = p.get(field) {
                object["pkiCertificateSubject"][subject] = v.clone();
                pki[field] = v.clone();
            }
        }
        if let Some(i) = data_of(p, "caIntermediatesPath", "caIntermediatesData") {
            object["caIntermediatesData"] = json!(i);
            pki["caIntermediatesData"] = json!(i);
        }
        (
            json!({"policyType": "PKI", "pki": object}),
            json!({"type": "sigstoreSigned", "pki": pki}),
        )
    } else {
        return None;
    };
    let identity = requirement["signedIdentity"]["type"].as_str();
    let match_policy = match identity {
        None | Some("matchRepoDigestOrExact") => "MatchRepoDigestOrExact",
        Some("matchRepository") => "MatchRepository",
        Some(_) => return None,
    };
    let mut first = match_policy.chars();
    let lower = first.next().unwrap().to_ascii_lowercase().to_string() + first.as_str();
    rendered["signedIdentity"] = json!({"type": lower});
    Some((
        json!({"rootOfTrust": trust, "signedIdentity": {"matchPolicy": match_policy}}),
        rendered,
    ))
}

/// One signature layer to attach.
#[derive(Clone, Default)]
struct Sig {
    payload: Vec<u8>,
    signature: String,
    certificate: Option<PathBuf>,
    chain: Option<PathBuf>,
    bundle: Option<String>,
}

/// One case: the same inputs for both tools.
struct Case {
    name: String,
    /// The requirement, for the cases' repository scope (every other image: accepted).
    requirement: Value,
    /// The reference both tools pull (`docker://` is added).
    image: String,
    /// registries.d `default.yaml`.
    registries_d: String,
    registries_conf: String,
    /// A difference docs/release.md states: what mcd-inject decides instead, and why.
    difference: Option<&'static str>,
}

fn verdict(accepted: bool) -> &'static str {
    if accepted {
        "accepts"
    } else {
        "refuses"
    }
}

/// How the two verdicts on a case fail the test, if they do: they differ, or a stated
/// difference (`difference`: why mcd-inject refuses what containers/image accepts) is
/// no longer one.
fn divergence(
    name: &str,
    difference: Option<&str>,
    skopeo: &(bool, String),
    ours: &(bool, String),
) -> Option<String> {
    match difference {
        Some(why) if ours.0 || !skopeo.0 => Some(format!(
            "{name}: stated as a difference ({why}: containers/image accepts, mcd-inject \
             refuses), but containers/image {}, mcd-inject {}",
            verdict(skopeo.0),
            verdict(ours.0)
        )),
        None if ours.0 != skopeo.0 => Some(format!(
            "{name}: containers/image {}, mcd-inject {}\n    skopeo: {}\n    mcd-inject: {}",
            verdict(skopeo.0),
            verdict(ours.0),
            skopeo.1,
            ours.1
        )),
        _ => None,
    }
}

/// Whether a tool accepted the image, and what it said.
fn outcome(out: Output) -> (bool, String) {
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    )
}

#[test]
fn sigstore_signatures_are_judged_as_containers_image_judges_them() {
    require_tools(&["skopeo", "openssl", "curl"]);
    let root = trixie_root();
    let regs = registries();
    let reg = regs.anon.clone();
    fs::create_dir_all(root.join("tmp")).unwrap();
    let sb = Sandbox::new_in(&root.join("tmp"));
    let dir = sb.path("conformance");
    fs::create_dir_all(&dir).unwrap();
    let m = Maker {
        root: root.clone(),
        dir: dir.clone(),
        n: Default::default(),
    };
    let uniq: String = sb
        .dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_lowercase()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "");
    let scope = format!("{reg}/sigc-{uniq}");
    // An attachment of layers of any media type (payload, media type, annotations), as
    // cosign would not write it.
    let registry = Registry::anon(&regs, &dir);
    let attachment = |repo: &str, digest: &str, layers: &[(Vec<u8>, &str, Value)]| {
        let descriptors: Vec<Value> = layers
            .iter()
            .map(|(data, media_type, annotations)| {
                json!({"mediaType": media_type, "size": data.len(),
                       "digest": registry.push_blob(repo, data), "annotations": annotations})
            })
            .collect();
        registry.attach_layers(repo, digest, &[], &descriptors);
    };

    // The image, in a repository of each group of cases (its signatures are its own).
    let accept_all = m.write(
        "accept.json",
        r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
    );
    let copy = |from: &str, to: &str, all: bool| {
        let mut c = Command::new("skopeo");
        c.args([
            "copy",
            "-q",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
        ]);
        if all {
            c.arg("--all");
        }
        run_ok(
            c.arg("--policy")
                .arg(&accept_all)
                .arg(format!("docker://{from}"))
                .arg(format!("docker://{to}")),
        );
    };
    let new_repo = |name: &str| -> String {
        let repo = format!("sigc-{uniq}/{name}");
        copy(
            &format!("{reg}/mco/small:v1"),
            &format!("{reg}/{repo}:v1"),
            false,
        );
        repo
    };
    // The manifest as the copies hold it: what signatures name.
    let probe = new_repo("probe");
    let raw = run_ok(
        Command::new("skopeo")
            .args(["inspect", "--raw", "--tls-verify=false"])
            .arg(format!("docker://{reg}/{probe}:v1")),
    )
    .stdout;
    let digest = format!("sha256:{}", sha256_hex(&raw));
    let attach = |repo: &str, at: &str, s: &Sig| {
        let p = m.write("payload.json", &s.payload);
        let sig = m.write("sig.b64", &s.signature);
        let mut args: Vec<String> = vec![
            "attach".into(),
            "signature".into(),
            "--payload".into(),
            p.display().to_string(),
            "--signature".into(),
            sig.display().to_string(),
        ];
        if let Some(c) = &s.certificate {
            args.extend(["--certificate".into(), c.display().to_string()]);
        }
        if let Some(c) = &s.chain {
            args.extend(["--certificate-chain".into(), c.display().to_string()]);
        }
        if let Some(b) = &s.bundle {
            // cosign reads the Rekor response as its LocalSignedPayload (fetch.go), whose
            // `rekorBundle` it attaches.
            let local = json!({
                "base64Signature": s.signature,
                "rekorBundle": serde_json::from_str::<Value>(b).unwrap(),
            });
            let f = m.write("bundle.json", local.to_string());
            args.extend(["--rekor-response".into(), f.display().to_string()]);
        }
        args.push(format!("{reg}/{repo}@{at}"));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        m.cosign_registry(&args);
    };
    // A payload signed by `key`, attached to `repo`'s manifest `at`.
    let attach_signed = |repo: &str, at: &str, key: &Key, payload: Vec<u8>| {
        attach(
            repo,
            at,
            &Sig {
                signature: key.sign(&dir, &payload),
                payload,
                ..Default::default()
            },
        )
    };
    let sigstore_d = "default-docker:\n  use-sigstore-attachments: true\n".to_string();
    let no_conf = String::new();

    let mut cases: Vec<Case> = Vec::new();
    let mut case = |name: String, requirement: Value, image: String| {
        cases.push(Case {
            name,
            requirement,
            image,
            registries_d: sigstore_d.clone(),
            registries_conf: no_conf.clone(),
            difference: None,
        });
    };
    let by_key = |k: &Key| json!({"type": "sigstoreSigned", "keyPath": k.public});

    // --- keys: cosign's own (P-256 from generate-key-pair; Ed25519 imported) sign with
    // `cosign sign`; the others' payloads are signed by openssl. The payload names the
    // repository without tag, as cosign's does: pulled by digest.
    {
        let repo = new_repo("cosign-p256");
        m.cosign(&[
            "generate-key-pair",
            "--output-key-prefix",
            &format!("{}/cosign", dir.display()),
        ]);
        let public = dir.join("cosign.pub");
        m.cosign_registry(&[
            "sign",
            "--key",
            &format!("{}/cosign.key", dir.display()),
            "--tlog-upload=false",
            &format!("{reg}/{repo}@{digest}"),
        ]);
        let image = format!("{reg}/{repo}@{digest}");
        case(
            "cosign sign, P-256 key, keyPath".into(),
            json!({"type": "sigstoreSigned", "keyPath": public}),
            image.clone(),
        );
        case(
            "cosign sign, P-256 key, keyData".into(),
            json!({"type": "sigstoreSigned", "keyData": b64(&fs::read(&public).unwrap())}),
            image.clone(),
        );
        let other = m.key("prime256v1");
        case(
            "cosign sign, P-256 key, keyPaths with it second".into(),
            json!({"type": "sigstoreSigned", "keyPaths": [other.public, public]}),
            image.clone(),
        );
        case(
            "cosign sign, P-256 key, another key".into(),
            by_key(&other),
            image.clone(),
        );
        case(
            "cosign sign, P-256 key, keyPaths without it".into(),
            json!({"type": "sigstoreSigned", "keyPaths": [other.public, m.key("secp384r1").public]}),
            image.clone(),
        );
        let other_data = b64(other.public_pem().as_bytes());
        case(
            "cosign sign, P-256 key, keyDatas with it second".into(),
            json!({"type": "sigstoreSigned", "keyDatas": [other_data, b64(&fs::read(&public).unwrap())]}),
            image.clone(),
        );
        case(
            "cosign sign, P-256 key, keyDatas without it".into(),
            json!({"type": "sigstoreSigned", "keyDatas": [other_data]}),
            image.clone(),
        );
        case(
            "cosign sign, pulled by tag, default signedIdentity".into(),
            json!({"type": "sigstoreSigned", "keyPath": public}),
            format!("{reg}/{repo}:v1"),
        );

        let repo = new_repo("cosign-ed25519");
        let ed = m.key("ed25519");
        m.cosign(&[
            "import-key-pair",
            "--key",
            ed.private.to_str().unwrap(),
            "--output-key-prefix",
            &format!("{}/imported", dir.display()),
        ]);
        m.cosign_registry(&[
            "sign",
            "--key",
            &format!("{}/imported.key", dir.display()),
            "--tlog-upload=false",
            &format!("{reg}/{repo}@{digest}"),
        ]);
        case(
            "cosign sign, imported Ed25519 key".into(),
            by_key(&ed),
            format!("{reg}/{repo}@{digest}"),
        );
        case(
            "cosign sign, imported Ed25519 key, keyData".into(),
            json!({"type": "sigstoreSigned", "keyData": b64(ed.public_pem().as_bytes())}),
            format!("{reg}/{repo}@{digest}"),
        );
    }
    for algorithm in [
        "prime256v1",
        "secp384r1",
        "secp521r1",
        "secp224r1",
        "rsa2048",
        "rsa3072",
        "rsa4096",
        "ed25519",
    ] {
        let repo = new_repo(&format!("key-{}", algorithm.to_lowercase()));
        let k = m.key(algorithm);
        let p = payload(&digest, &format!("{reg}/{repo}"));
        attach_signed(&repo, &digest, &k, p);
        case(
            format!("a {algorithm} key, keyPath"),
            by_key(&k),
            format!("{reg}/{repo}@{digest}"),
        );
        case(
            format!("a {algorithm} key, keyData"),
            json!({"type": "sigstoreSigned", "keyData": b64(k.public_pem().as_bytes())}),
            format!("{reg}/{repo}@{digest}"),
        );
    }

    // --- signedIdentity kinds, pulled by tag and by digest, for cosign's payload (the
    // repository) and one naming the tag.
    let id_key = m.key("prime256v1");
    for (what, identity_of) in [("the repository", ""), ("the tag", ":v1")] {
        let repo = new_repo(&format!("identity{}", identity_of.len()));
        let p = payload(&digest, &format!("{reg}/{repo}{identity_of}"));
        attach_signed(&repo, &digest, &id_key, p);
        let name = format!("{reg}/{repo}");
        for (kind, identity) in [
            ("default", None),
            (
                "matchRepoDigestOrExact",
                Some(json!({"type": "matchRepoDigestOrExact"})),
            ),
            ("matchExact", Some(json!({"type": "matchExact"}))),
            ("matchRepository", Some(json!({"type": "matchRepository"}))),
            (
                "exactReference",
                Some(json!({"type": "exactReference", "dockerReference": format!("{name}:v1")})),
            ),
            (
                "exactRepository",
                Some(json!({"type": "exactRepository", "dockerRepository": name})),
            ),
            (
                "exactRepository of another",
                Some(
                    json!({"type": "exactRepository", "dockerRepository": format!("{name}-other")}),
                ),
            ),
            (
                "remapIdentity",
                Some(
                    json!({"type": "remapIdentity", "prefix": format!("{reg}/sigc-{uniq}"), "signedPrefix": format!("{reg}/sigc-{uniq}")}),
                ),
            ),
        ] {
            for (how, image) in [
                ("by tag", format!("{name}:v1")),
                ("by digest", format!("{name}@{digest}")),
            ] {
                let mut r = by_key(&id_key);
                if let Some(i) = &identity {
                    r["signedIdentity"] = i.clone();
                }
                case(
                    format!("payload naming {what}, signedIdentity {kind}, pulled {how}"),
                    r,
                    image,
                );
            }
        }
    }

    // --- several signatures, some bad; another image's; a tampered one.
    {
        let k = m.key("prime256v1");
        let other = m.key("prime256v1");
        let good_payload = |repo: &str| payload(&digest, &format!("{reg}/{repo}"));
        let another = format!("sha256:{}", sha256_hex(b"another"));
        for (i, what) in [
            "a bad signature, then a good one",
            "two bad signatures",
            "a tampered payload",
            "a payload of another type",
        ]
        .into_iter()
        .enumerate()
        {
            let repo = new_repo(&format!("several{i}"));
            let p = good_payload(&repo);
            let plain = |key: &Key, signed: &[u8], sent: &[u8]| Sig {
                signature: key.sign(&dir, signed),
                payload: sent.to_vec(),
                ..Default::default()
            };
            let sigs = match i {
                0 => vec![plain(&other, &p, &p), plain(&k, &p, &p)],
                1 => {
                    let elsewhere = payload(&another, &format!("{reg}/{repo}"));
                    vec![plain(&other, &p, &p), plain(&k, &elsewhere, &elsewhere)]
                }
                2 => vec![plain(&k, &p, &payload(&digest, &format!("{reg}/{repo}-x")))],
                _ => {
                    let atomic = String::from_utf8(p.clone())
                        .unwrap()
                        .replace(
                            "cosign container image signature",
                            "atomic container signature",
                        )
                        .into_bytes();
                    vec![plain(&k, &atomic, &atomic)]
                }
            };
            for s in &sigs {
                attach(&repo, &digest, s);
            }
            case(
                what.to_string(),
                by_key(&k),
                format!("{reg}/{repo}@{digest}"),
            );
        }
        // The payload's JSON as containers/image reads it (untrustedSigstorePayload's
        // strictUnmarshalJSON: exactly `critical` and `optional`, exact fields within
        // `critical`, no duplicate keys; in `optional`, `creator` a string and
        // `timestamp` a number, others ignored), each payload signed by the key.
        let identity = r#"{"docker-reference":"REF"}"#;
        let image = r#"{"docker-manifest-digest":"DIGEST"}"#;
        let kind = r#""type":"cosign container image signature""#;
        let critical = format!(r#"{{"identity":{identity},"image":{image},{kind}}}"#);
        let with = |critical: &str, rest: &str| format!(r#"{{"critical":{critical}{rest}}}"#);
        let forms = [
            (
                "pretty-printed",
                serde_json::to_string_pretty(
                    &serde_json::from_str::<Value>(&with(&critical, r#","optional":null"#))
                        .unwrap(),
                )
                .unwrap(),
            ),
            (
                "optional with creator, timestamp and other fields",
                with(
                    &critical,
                    r#","optional":{"creator":"me","timestamp":1700000000,"sha":"abc"}"#,
                ),
            ),
            (
                "optional's timestamp a string",
                with(&critical, r#","optional":{"timestamp":"yesterday"}"#),
            ),
            ("optional an array", with(&critical, r#","optional":[]"#)),
            ("no optional", with(&critical, "")),
            (
                "an unknown top-level field",
                with(&critical, r#","optional":null,"extra":1"#),
            ),
            (
                "critical with an unknown field",
                with(
                    &format!(r#"{{"identity":{identity},"image":{image},{kind},"extra":1}}"#),
                    r#","optional":null"#,
                ),
            ),
            (
                "image with an unknown field",
                with(
                    &critical.replace(r#""DIGEST""#, r#""DIGEST","extra":1"#),
                    r#","optional":null"#,
                ),
            ),
            (
                "identity with an unknown field",
                with(
                    &critical.replace(r#""REF""#, r#""REF","extra":1"#),
                    r#","optional":null"#,
                ),
            ),
            (
                "critical twice",
                with(
                    &critical,
                    &format!(r#","critical":{critical},"optional":null"#),
                ),
            ),
            (
                "the digest in upper case",
                with(
                    &critical.replace("DIGEST", "sha256:UPPER"),
                    r#","optional":null"#,
                ),
            ),
        ];
        for (i, (what, form)) in forms.into_iter().enumerate() {
            let repo = new_repo(&format!("payload{i}"));
            let p = form
                .replace("REF", &format!("{reg}/{repo}"))
                .replace(
                    "sha256:UPPER",
                    &digest.to_uppercase().replacen("SHA256", "sha256", 1),
                )
                .replace("DIGEST", &digest)
                .into_bytes();
            attach_signed(&repo, &digest, &k, p);
            case(
                format!("a payload, {what}"),
                by_key(&k),
                format!("{reg}/{repo}@{digest}"),
            );
        }
        // Attachments of another media type: not signatures.
        let repo = new_repo("mediatype");
        let p = good_payload(&repo);
        let annotations = json!({"dev.cosignproject.cosign/signature": k.sign(&dir, &p)});
        attachment(
            &repo,
            &digest,
            &[(
                p.clone(),
                "application/vnd.dsse.envelope.v1+json",
                annotations.clone(),
            )],
        );
        case(
            "a good signature in a layer of another media type".into(),
            by_key(&k),
            format!("{reg}/{repo}@{digest}"),
        );
        let repo = new_repo("mediatype2");
        let p = good_payload(&repo);
        let annotations = json!({"dev.cosignproject.cosign/signature": k.sign(&dir, &p)});
        attachment(
            &repo,
            &digest,
            &[
                (
                    b"{}".to_vec(),
                    "application/vnd.dsse.envelope.v1+json",
                    json!({}),
                ),
                (p, SIG_MEDIA_TYPE, annotations),
            ],
        );
        case(
            "an attestation, then a good signature".into(),
            by_key(&k),
            format!("{reg}/{repo}@{digest}"),
        );
    }

    // --- an index and its instances: `cosign sign --recursive`, and the index alone.
    {
        // A copy of the multi-arch image: its repository, its index and the index's digest.
        let new_index = |name: &str| -> (String, Vec<u8>, String) {
            let repo = format!("sigc-{uniq}/{name}");
            copy(
                &format!("{reg}/mco/multiarch:v1"),
                &format!("{reg}/{repo}:v1"),
                true,
            );
            let list = run_ok(
                Command::new("skopeo")
                    .args(["inspect", "--raw", "--tls-verify=false"])
                    .arg(format!("docker://{reg}/{repo}:v1")),
            )
            .stdout;
            let digest = format!("sha256:{}", sha256_hex(&list));
            (repo, list, digest)
        };
        let key = dir.join("cosign.key");
        let public = dir.join("cosign.pub");
        for (what, recursive) in [
            ("cosign sign --recursive", true),
            ("cosign sign of the index alone", false),
        ] {
            let (repo, _, list_digest) = new_index(&format!("index{}", recursive as u8));
            let mut args = vec![
                "sign",
                "--key",
                key.to_str().unwrap(),
                "--tlog-upload=false",
            ];
            if recursive {
                args.push("--recursive");
            }
            let image = format!("{reg}/{repo}@{list_digest}");
            args.push(&image);
            m.cosign_registry(&args);
            for (how, pulled) in [
                ("by tag", format!("{reg}/{repo}:v1")),
                ("by digest", image.clone()),
            ] {
                case(
                    format!("{what}, pulled {how}"),
                    json!({"type": "sigstoreSigned", "keyPath": public, "signedIdentity": {"type": "matchRepository"}}),
                    pulled,
                );
            }
        }
        // The index signed, each instance's signature in a layer of another media type
        // (and, as the control, of the signature's own type): the instances are judged
        // too.
        let k = m.key("prime256v1");
        for (what, media_type) in [
            (
                "an index signed, its instances' signatures in layers of another media type",
                "application/vnd.dsse.envelope.v1+json",
            ),
            ("an index signed, its instances signed", SIG_MEDIA_TYPE),
        ] {
            let (repo, list, list_digest) = new_index(&format!("index-{}", m.n.get()));
            let p = payload(&list_digest, &format!("{reg}/{repo}"));
            attach_signed(&repo, &list_digest, &k, p);
            let list: Value = serde_json::from_slice(&list).unwrap();
            for instance in list["manifests"].as_array().unwrap() {
                let d = instance["digest"].as_str().unwrap();
                let p = payload(d, &format!("{reg}/{repo}"));
                let annotations = json!({"dev.cosignproject.cosign/signature": k.sign(&dir, &p)});
                attachment(&repo, d, &[(p, media_type, annotations)]);
            }
            case(
                what.into(),
                json!({"type": "sigstoreSigned", "keyPath": k.public, "signedIdentity": {"type": "matchRepository"}}),
                format!("{reg}/{repo}:v1"),
            );
        }
    }

    // --- Rekor with a key: the bundle's SET by the Rekor key, over the entry of this
    // signature.
    let rekor = m.key("prime256v1");
    let rekor_other = m.key("prime256v1");
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    {
        let k = m.key("prime256v1");
        // The log entry and its SET as containers/image reads them (VerifyRekorSET): the
        // Rekor key, the time, the log, and the entry's spelling, version, kind, hash,
        // payload, key and signature.
        let other = m.key("prime256v1");
        let mut good = String::new();
        for (i, what) in [
            "",
            ", the SET by another Rekor key",
            ", the entry of another payload",
            ", the entry spelling \"Spec\"",
            ", integrated an hour from now",
            ", in another log",
            ", an entry of apiVersion 0.0.2",
            ", an entry of kind rekord",
            ", an entry naming sha512",
            ", an entry logging another key",
            ", an entry logging another signature",
        ]
        .into_iter()
        .enumerate()
        {
            let repo = new_repo(&format!("rekor-entry{i}"));
            let p = payload(&digest, &format!("{reg}/{repo}"));
            let sig = k.sign(&dir, &p);
            let e = entry(&k.public_pem(), &sig, &p, "spec");
            let (mut signer, mut time, mut log) = (&rekor, now - 60, LOG_ID.to_string());
            let e = match i {
                1 => {
                    signer = &rekor_other;
                    e
                }
                2 => entry(&k.public_pem(), &sig, b"another payload", "spec"),
                3 => entry(&k.public_pem(), &sig, &p, "Spec"),
                4 => {
                    time = now + 3600;
                    e
                }
                5 => {
                    log = "ab".repeat(32);
                    e
                }
                6 => e.replace(r#""0.0.1""#, r#""0.0.2""#),
                7 => e.replace(r#""hashedrekord""#, r#""rekord""#),
                8 => e.replace(r#""sha256""#, r#""sha512""#),
                9 => entry(&other.public_pem(), &sig, &p, "spec"),
                10 => entry(&k.public_pem(), &other.sign(&dir, &p), &p, "spec"),
                _ => e,
            };
            attach(
                &repo,
                &digest,
                &Sig {
                    payload: p,
                    signature: sig,
                    bundle: Some(bundle_of(&m, signer, &e, time, &log)),
                    ..Default::default()
                },
            );
            let image = format!("{reg}/{repo}@{digest}");
            case(
                format!("a key with Rekor{what}"),
                json!({"type": "sigstoreSigned", "keyPath": k.public, "rekorPublicKeyPath": rekor.public}),
                image.clone(),
            );
            if i == 0 {
                good = image;
            }
        }
        // Several Rekor keys: one of them signed the SET, or none did.
        let other_rekor = b64(rekor_other.public_pem().as_bytes());
        let rekor_data = b64(rekor.public_pem().as_bytes());
        for (what, requirement) in [
            (
                "rekorPublicKeyPaths with it second",
                json!({"type": "sigstoreSigned", "keyPath": k.public,
                       "rekorPublicKeyPaths": [rekor_other.public, rekor.public]}),
            ),
            (
                "rekorPublicKeyDatas with it second",
                json!({"type": "sigstoreSigned", "keyPath": k.public,
                       "rekorPublicKeyDatas": [other_rekor, rekor_data]}),
            ),
            (
                "rekorPublicKeyPaths without it",
                json!({"type": "sigstoreSigned", "keyPath": k.public,
                       "rekorPublicKeyPaths": [rekor_other.public]}),
            ),
            (
                "rekorPublicKeyDatas without it",
                json!({"type": "sigstoreSigned", "keyPath": k.public,
                       "rekorPublicKeyDatas": [other_rekor]}),
            ),
        ] {
            case(
                format!("a key with Rekor, {what}"),
                requirement,
                good.clone(),
            );
        }
        // Requirements containers/image refuses when it reads the policy
        // (newPRSigstoreSigned), whatever the image.
        for (what, requirement) in [
            ("no key", json!({"type": "sigstoreSigned"})),
            (
                "keyPath and keyData",
                json!({"type": "sigstoreSigned", "keyPath": k.public, "keyData": b64(k.public_pem().as_bytes())}),
            ),
            (
                "keyPath and keyPaths",
                json!({"type": "sigstoreSigned", "keyPath": k.public, "keyPaths": [k.public]}),
            ),
            (
                "empty keyPaths",
                json!({"type": "sigstoreSigned", "keyPaths": []}),
            ),
            (
                "rekorPublicKeyPath and rekorPublicKeyPaths",
                json!({"type": "sigstoreSigned", "keyPath": k.public, "rekorPublicKeyPath": rekor.public, "rekorPublicKeyPaths": [rekor.public]}),
            ),
        ] {
            case(format!("a policy with {what}"), requirement, good.clone());
        }
        // Rekor required, the signature has no bundle.
        let repo = new_repo("rekor-none");
        let p = payload(&digest, &format!("{reg}/{repo}"));
        attach_signed(&repo, &digest, &k, p);
        case(
            "a key with Rekor, no bundle".into(),
            json!({"type": "sigstoreSigned", "keyPath": k.public, "rekorPublicKeyPath": rekor.public}),
            format!("{reg}/{repo}@{digest}"),
        );
        case(
            "a key with Rekor keys (rekorPublicKeyData), no bundle".into(),
            json!({"type": "sigstoreSigned", "keyPath": k.public, "rekorPublicKeyData": b64(rekor.public_pem().as_bytes())}),
            format!("{reg}/{repo}@{digest}"),
        );
    }

    // --- Fulcio: a root, an intermediate, leaves valid around the SET's time.
    let root_key = m.key("prime256v1");
    let root_ca = m.cert("fulcio-root", &root_key, None, CA_EXT, (-365, 365));
    let inter_key = m.key("prime256v1");
    let inter = m.cert(
        "fulcio-intermediate",
        &inter_key,
        Some((&root_ca, &root_key)),
        CA_EXT,
        (-300, 300),
    );
    let chain = m.write(
        "chain.pem",
        format!(
            "{}{}",
            fs::read_to_string(&inter).unwrap(),
            fs::read_to_string(&root_ca).unwrap()
        ),
    );
    let fulcio = json!({"caPath": root_ca, "oidcIssuer": ISSUER, "subjectEmail": EMAIL});
    let keyless = |name: &str,
                   ext: &str,
                   days: (i64, i64),
                   ca: (&Path, &Key),
                   chain: Option<&Path>,
                   time: i64|
     -> String {
        let repo = new_repo(name);
        let leaf_key = m.key("prime256v1");
        let cert = m.cert(name, &leaf_key, Some(ca), ext, days);
        let p = payload(&digest, &format!("{reg}/{repo}"));
        let sig = leaf_key.sign(&dir, &p);
        let b = bundle(
            &m,
            &rekor,
            &fs::read_to_string(&cert).unwrap(),
            &sig,
            &p,
            time,
        );
        attach(
            &repo,
            &digest,
            &Sig {
                payload: p,
                signature: sig,
                certificate: Some(cert),
                chain: chain.map(Path::to_path_buf),
                bundle: Some(b),
            },
        );
        format!("{reg}/{repo}@{digest}")
    };
    {
        let req = |f: Value| json!({"type": "sigstoreSigned", "fulcio": f, "rekorPublicKeyPath": rekor.public, "signedIdentity": {"type": "matchRepository"}});
        let ok_ext = leaf_ext(ISSUER, EMAIL);
        let image = keyless(
            "fulcio-good",
            &ok_ext,
            (-1, 1),
            (&inter, &inter_key),
            Some(&chain),
            now - 60,
        );
        case(
            "Fulcio: a good signature".into(),
            req(fulcio.clone()),
            image.clone(),
        );
        case(
            "Fulcio: another issuer required".into(),
            req(
                json!({"caPath": root_ca, "oidcIssuer": "https://other.example.com", "subjectEmail": EMAIL}),
            ),
            image.clone(),
        );
        case(
            "Fulcio: another email required".into(),
            req(
                json!({"caPath": root_ca, "oidcIssuer": ISSUER, "subjectEmail": "other@example.com"}),
            ),
            image.clone(),
        );
        case(
            "Fulcio: caData".into(),
            req(
                json!({"caData": b64(&fs::read(&root_ca).unwrap()), "oidcIssuer": ISSUER, "subjectEmail": EMAIL}),
            ),
            image.clone(),
        );
        // The CA file holding the intermediate too (every certificate of it a root).
        let root_and_inter = m.write(
            "root-and-inter.pem",
            format!(
                "{}{}",
                fs::read_to_string(&root_ca).unwrap(),
                fs::read_to_string(&inter).unwrap()
            ),
        );
        case(
            "Fulcio: a caPath holding the root and the intermediate".into(),
            req(json!({"caPath": root_and_inter, "oidcIssuer": ISSUER, "subjectEmail": EMAIL})),
            image.clone(),
        );
        case(
            "Fulcio: a caPath holding the intermediate only".into(),
            req(json!({"caPath": inter, "oidcIssuer": ISSUER, "subjectEmail": EMAIL})),
            image.clone(),
        );
        // The chain annotation: its order, a certificate more, the intermediate missing.
        let pem = |p: &Path| fs::read_to_string(p).unwrap();
        let stranger_key = m.key("prime256v1");
        let stranger = m.cert("stranger", &stranger_key, None, CA_EXT, (-365, 365));
        for (name, chain_pem, what) in [
            (
                "fulcio-chain-reversed",
                format!("{}{}", pem(&root_ca), pem(&inter)),
                "root first",
            ),
            (
                "fulcio-chain-stranger",
                format!("{}{}{}", pem(&stranger), pem(&inter), pem(&root_ca)),
                "an unrelated CA first",
            ),
            ("fulcio-chain-root-only", pem(&root_ca), "the root only"),
            (
                "fulcio-chain-inter-only",
                pem(&inter),
                "the intermediate only",
            ),
        ] {
            let chain_file = m.write(&format!("{name}.pem"), chain_pem);
            let image = keyless(
                name,
                &ok_ext,
                (-1, 1),
                (&inter, &inter_key),
                Some(&chain_file),
                now - 60,
            );
            case(
                format!("Fulcio: the chain, {what}"),
                req(fulcio.clone()),
                image,
            );
        }
        case(
            "Fulcio: another Rekor key".into(),
            json!({"type": "sigstoreSigned", "fulcio": fulcio, "rekorPublicKeyPath": rekor_other.public, "signedIdentity": {"type": "matchRepository"}}),
            image.clone(),
        );
        let other_root_key = m.key("prime256v1");
        let other_root = m.cert("other-root", &other_root_key, None, CA_EXT, (-365, 365));
        case(
            "Fulcio: another CA".into(),
            req(json!({"caPath": other_root, "oidcIssuer": ISSUER, "subjectEmail": EMAIL})),
            image,
        );
        let other_issuer = leaf_ext("https://other.example.com", EMAIL);
        for (name, ext, days, ca, chain, time, what) in [
            (
                "fulcio-late",
                &ok_ext,
                (-1, 1),
                (&inter, &inter_key),
                Some(&chain),
                now - 3 * 86_400,
                "Fulcio: integrated before the certificate's validity",
            ),
            (
                "fulcio-expired",
                &ok_ext,
                (-3, -2),
                (&inter, &inter_key),
                Some(&chain),
                now - 60,
                "Fulcio: certificate expired at the integrated time",
            ),
            (
                "fulcio-other-issuer",
                &other_issuer,
                (-1, 1),
                (&inter, &inter_key),
                Some(&chain),
                now - 60,
                "Fulcio: the certificate names another issuer",
            ),
            (
                "fulcio-no-chain",
                &ok_ext,
                (-1, 1),
                (&inter, &inter_key),
                None,
                now - 60,
                "Fulcio: no chain attached",
            ),
            (
                "fulcio-from-root",
                &ok_ext,
                (-1, 1),
                (&root_ca, &root_key),
                None,
                now - 60,
                "Fulcio: a leaf of the root",
            ),
        ] {
            let image = keyless(
                name,
                ext,
                days,
                (ca.0.as_path(), ca.1),
                chain.map(|c| c.as_path()),
                time,
            );
            case(what.into(), req(fulcio.clone()), image);
        }
        // Where the certificate names its issuer (fulcioIssuerInCertificate: the v1
        // extension's raw bytes, the v2 one's DER UTF8String, equal when both are there),
        // and a certificate of several e-mails.
        let no_issuer = format!(
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
             extendedKeyUsage=codeSigning\nsubjectAltName=email:{EMAIL}"
        );
        let v1 = |issuer: &str| format!("1.3.6.1.4.1.57264.1.1=DER:{}", hex::encode(issuer));
        let v2 = |issuer: &str| format!("1.3.6.1.4.1.57264.1.8=ASN1:UTF8String:{issuer}");
        let other = "https://other.example.com";
        for (name, ext, what) in [
            (
                "fulcio-v1",
                format!("{no_issuer}\n{}", v1(ISSUER)),
                "the issuer in the v1 extension only",
            ),
            (
                "fulcio-v2",
                format!("{no_issuer}\n{}", v2(ISSUER)),
                "the issuer in the v2 extension only",
            ),
            (
                "fulcio-v1-v2-differ",
                format!("{no_issuer}\n{}\n{}", v1(ISSUER), v2(other)),
                "the v1 and v2 issuers differing",
            ),
            ("fulcio-no-issuer", no_issuer.clone(), "no issuer extension"),
            (
                "fulcio-two-emails",
                leaf_ext(ISSUER, &format!("other@example.com,email:{EMAIL}")),
                "a certificate of two e-mails, the required one second",
            ),
        ] {
            let image = keyless(
                name,
                &ext,
                (-1, 1),
                (&inter, &inter_key),
                Some(&chain),
                now - 60,
            );
            case(format!("Fulcio: {what}"), req(fulcio.clone()), image);
        }
        // SET tampering: the bundle's integrated time changed after signing.
        let repo = new_repo("fulcio-set-tampered");
        let leaf_key = m.key("prime256v1");
        let cert = m.cert(
            "fulcio-set",
            &leaf_key,
            Some((&inter, &inter_key)),
            &ok_ext,
            (-1, 1),
        );
        let p = payload(&digest, &format!("{reg}/{repo}"));
        let sig = leaf_key.sign(&dir, &p);
        let b = bundle(
            &m,
            &rekor,
            &fs::read_to_string(&cert).unwrap(),
            &sig,
            &p,
            now - 60,
        )
        .replace(
            &format!("\"integratedTime\":{}", now - 60),
            &format!("\"integratedTime\":{}", now - 61),
        );
        attach(
            &repo,
            &digest,
            &Sig {
                payload: p,
                signature: sig,
                certificate: Some(cert),
                chain: Some(chain.clone()),
                bundle: Some(b),
            },
        );
        case(
            "Fulcio: the SET's entry tampered".into(),
            req(fulcio.clone()),
            format!("{reg}/{repo}@{digest}"),
        );
    }

    // --- PKI: roots, intermediates, expiry, key usage; the leaf chains to the roots now.
    {
        let pki = |roots: &Path, inters: Option<&Path>| {
            let mut p = json!({"caRootsPath": roots, "subjectEmail": EMAIL});
            if let Some(i) = inters {
                p["caIntermediatesPath"] = json!(i);
            }
            json!({"type": "sigstoreSigned", "pki": p, "signedIdentity": {"type": "matchRepository"}})
        };
        let plain_leaf = format!("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=codeSigning\nsubjectAltName=email:{EMAIL}");
        let pki_case = |name: &str,
                        ext: &str,
                        days: (i64, i64),
                        ca: (&Path, &Key),
                        chain: Option<&Path>|
         -> String {
            let repo = new_repo(name);
            let leaf_key = m.key("prime256v1");
            let cert = m.cert(name, &leaf_key, Some(ca), ext, days);
            let p = payload(&digest, &format!("{reg}/{repo}"));
            attach(
                &repo,
                &digest,
                &Sig {
                    signature: leaf_key.sign(&dir, &p),
                    payload: p,
                    certificate: Some(cert),
                    chain: chain.map(Path::to_path_buf),
                    ..Default::default()
                },
            );
            format!("{reg}/{repo}@{digest}")
        };
        let image = pki_case(
            "pki-root-leaf",
            &plain_leaf,
            (-1, 30),
            (&root_ca, &root_key),
            None,
        );
        case(
            "PKI: a leaf of the root".into(),
            pki(&root_ca, None),
            image.clone(),
        );
        let other_root_key = m.key("prime256v1");
        let other_root = m.cert("pki-other-root", &other_root_key, None, CA_EXT, (-365, 365));
        case(
            "PKI: another root".into(),
            pki(&other_root, None),
            image.clone(),
        );
        case(
            "PKI: another email required".into(),
            json!({"type": "sigstoreSigned", "pki": {"caRootsPath": root_ca, "subjectEmail": "other@example.com"}, "signedIdentity": {"type": "matchRepository"}}),
            image,
        );
        let inter_only = m.write("inter.pem", fs::read(&inter).unwrap());
        let image = pki_case(
            "pki-inter-leaf",
            &plain_leaf,
            (-1, 30),
            (&inter, &inter_key),
            None,
        );
        case(
            "PKI: a leaf of an intermediate in caIntermediatesPath".into(),
            pki(&root_ca, Some(&inter_only)),
            image.clone(),
        );
        case(
            "PKI: a leaf of an intermediate in caRootsPath".into(),
            pki(&inter_only, None),
            image.clone(),
        );
        case(
            "PKI: a leaf of an intermediate nobody names".into(),
            pki(&root_ca, None),
            image,
        );
        // The intermediate in the chain annotation, not in the policy.
        let image = pki_case(
            "pki-inter-in-chain",
            &plain_leaf,
            (-1, 30),
            (&inter, &inter_key),
            Some(&inter_only),
        );
        case(
            "PKI: a leaf of an intermediate in the chain annotation only".into(),
            pki(&root_ca, None),
            image,
        );
        let server_auth = plain_leaf.replace("codeSigning", "serverAuth");
        let no_eku = plain_leaf.replace("extendedKeyUsage=codeSigning\n", "");
        let ca_leaf =
            format!("{CA_EXT}\nextendedKeyUsage=codeSigning\nsubjectAltName=email:{EMAIL}");
        let critical = format!("{plain_leaf}\ncertificatePolicies=critical,1.2.3.4");
        for (name, ext, days, what) in [
            (
                "pki-expired",
                &plain_leaf,
                (-30, -1),
                "PKI: an expired leaf",
            ),
            (
                "pki-future",
                &plain_leaf,
                (1, 30),
                "PKI: a leaf not yet valid",
            ),
            (
                "pki-server-auth",
                &server_auth,
                (-1, 30),
                "PKI: a leaf for serverAuth only",
            ),
            (
                "pki-no-eku",
                &no_eku,
                (-1, 30),
                "PKI: a leaf without extended key usage",
            ),
            (
                "pki-ca-leaf",
                &ca_leaf,
                (-1, 30),
                "PKI: a leaf that is itself a CA",
            ),
            (
                "pki-critical-policies",
                &critical,
                (-1, 30),
                "PKI: a leaf with critical certificatePolicies",
            ),
        ] {
            let image = pki_case(name, ext, days, (&root_ca, &root_key), None);
            case(what.into(), pki(&root_ca, None), image);
        }
        // Hostnames (x509 VerifyHostname): a DNS SAN, a wildcard, an IP; with the e-mail.
        let host_leaf = |san: &str| {
            format!(
                "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
                 extendedKeyUsage=codeSigning\nsubjectAltName={san}"
            )
        };
        let by_host = |host: &str, email: Option<&str>| {
            let mut p = json!({"caRootsPath": root_ca, "subjectHostname": host});
            if let Some(e) = email {
                p["subjectEmail"] = json!(e);
            }
            json!({"type": "sigstoreSigned", "pki": p, "signedIdentity": {"type": "matchRepository"}})
        };
        let on_root = (root_ca.as_path(), &root_key);
        let dns = pki_case(
            "pki-dns",
            &host_leaf(&format!("DNS:node.example.com,email:{EMAIL}")),
            (-1, 30),
            on_root,
            None,
        );
        let wildcard = pki_case(
            "pki-wildcard",
            &host_leaf("DNS:*.example.com"),
            (-1, 30),
            on_root,
            None,
        );
        let ip = pki_case(
            "pki-ip",
            &host_leaf("IP:192.0.2.7"),
            (-1, 30),
            on_root,
            None,
        );
        for (what, requirement, image) in [
            ("a DNS SAN", by_host("node.example.com", None), &dns),
            (
                "a DNS SAN in other case",
                by_host("NODE.Example.com", None),
                &dns,
            ),
            (
                "and the e-mail",
                by_host("node.example.com", Some(EMAIL)),
                &dns,
            ),
            ("another name", by_host("other.example.com", None), &dns),
            (
                "and another e-mail",
                by_host("node.example.com", Some("other@example.com")),
                &dns,
            ),
            (
                "a wildcard DNS SAN",
                by_host("node.example.com", None),
                &wildcard,
            ),
            (
                "a wildcard DNS SAN, a label deeper",
                by_host("a.node.example.com", None),
                &wildcard,
            ),
            ("an IP SAN", by_host("192.0.2.7", None), &ip),
            ("another IP", by_host("192.0.2.8", None), &ip),
        ] {
            case(
                format!("PKI: subjectHostname, {what}"),
                requirement,
                image.clone(),
            );
        }
        // Requirements containers/image refuses when it reads the policy: Fulcio without
        // a Rekor key, PKI with one.
        case(
            "a policy with fulcio and no Rekor key".into(),
            json!({"type": "sigstoreSigned", "fulcio": fulcio, "signedIdentity": {"type": "matchRepository"}}),
            dns.clone(),
        );
        case(
            "a policy with pki and a Rekor key".into(),
            json!({"type": "sigstoreSigned", "pki": {"caRootsPath": root_ca, "subjectEmail": EMAIL},
                   "rekorPublicKeyPath": rekor.public, "signedIdentity": {"type": "matchRepository"}}),
            dns,
        );
        // Intermediates of other keys: RSA-1024 and P-521.
        for algorithm in ["rsa1024", "secp521r1", "secp384r1", "rsa2048"] {
            let k = m.key(algorithm);
            let i = m.cert(
                &format!("pki-inter-{algorithm}"),
                &k,
                Some((&root_ca, &root_key)),
                CA_EXT,
                (-300, 300),
            );
            let image = pki_case(
                &format!("pki-under-{algorithm}"),
                &plain_leaf,
                (-1, 30),
                (&i, &k),
                None,
            );
            case(
                format!("PKI: a leaf of a {algorithm} intermediate"),
                pki(&root_ca, Some(&i)),
                image,
            );
        }
    }

    // --- mirrors: the signature is the mirror's attachment; registries.d is read for the
    // mirror's name.
    {
        let k = m.key("prime256v1");
        let source = format!("{scope}/src/app");
        let mirror_repo = new_repo("mirror/app");
        let p = payload(&digest, &source);
        attach_signed(&mirror_repo, &digest, &k, p);
        let conf = format!(
            "[[registry]]\nprefix = \"{source}\"\nlocation = \"{source}\"\n\
             [[registry.mirror]]\nlocation = \"{reg}/{mirror_repo}\"\ninsecure = true\n"
        );
        for (what, d) in [
            (
                "registries.d for the mirror",
                format!("docker:\n  {reg}/{mirror_repo}:\n    use-sigstore-attachments: true\n"),
            ),
            (
                "registries.d for the source",
                format!("docker:\n  {source}:\n    use-sigstore-attachments: true\n"),
            ),
        ] {
            cases.push(Case {
                name: format!("through a mirror, {what}"),
                requirement: by_key(&k),
                image: format!("{source}@{digest}"),
                registries_d: d,
                registries_conf: conf.clone(),
                difference: None,
            });
        }
    }

    // A signature in a lookaside store, in containers/image's format for a sigstore one
    // there ("\0sigstore-json\n" and JSON), no attachment; with attachments on and off.
    {
        let k = m.key("prime256v1");
        let repo = new_repo("lookaside");
        let p = payload(&digest, &format!("{reg}/{repo}"));
        let store = dir.join("lookaside");
        let at = store.join(format!(
            "{repo}@sha256={}",
            digest.trim_start_matches("sha256:")
        ));
        fs::create_dir_all(&at).unwrap();
        let mut blob = b"\0sigstore-json\n".to_vec();
        blob.extend(
            serde_json::to_vec(&json!({"mimeType": SIG_MEDIA_TYPE, "payload": b64(&p),
                "annotations": {"dev.cosignproject.cosign/signature": k.sign(&dir, &p)}}))
            .unwrap(),
        );
        fs::write(at.join("signature-1"), blob).unwrap();
        for (what, attachments) in [("attachments on", true), ("attachments off", false)] {
            let mut d = format!("default-docker:\n  lookaside: file://{}\n", store.display());
            if attachments {
                d.push_str("  use-sigstore-attachments: true\n");
            }
            cases.push(Case {
                name: format!("a signature in a lookaside store, {what}"),
                requirement: by_key(&k),
                image: format!("{reg}/{repo}@{digest}"),
                registries_d: d,
                registries_conf: no_conf.clone(),
                difference: None,
            });
        }
    }

    // cosign's payload names the repository without tag, which the default
    // signedIdentity refuses for a pull by tag and by digest alike (the identity cases
    // show it): the cases of keys, signatures and roots of trust that do not name their
    // identity match the repository.
    for c in &mut cases {
        if c.requirement.get("signedIdentity").is_none() && !c.name.contains("default") {
            c.requirement["signedIdentity"] = json!({"type": "matchRepository"});
        }
        c.difference = DIFFERENCES
            .iter()
            .find(|(name, _)| *name == c.name)
            .map(|(_, why)| *why);
    }
    assert_eq!(
        cases.iter().filter(|c| c.difference.is_some()).count(),
        DIFFERENCES.len()
    );

    // --- judge every case with both tools.
    // trixie's skopeo copies the case's image under a policy and registries.d.
    let skopeo_copy = |c: &Case, conf: &Path, policy: &Path, regd: &Path, out: PathBuf| {
        outcome(
            m.chroot("skopeo")
                .arg("--registries-conf")
                .arg(conf)
                .args(["copy", "-q", "--src-tls-verify=false", "--policy"])
                .arg(policy)
                .arg("--registries.d")
                .arg(regd)
                .arg(format!("docker://{}", c.image))
                .arg(format!("dir:{}", out.display()))
                .output()
                .unwrap(),
        )
    };
    // mcd-inject pulls it under these policy flags, registries.d and a cache of its own.
    let pull = |c: &Case, conf: &Path, policy: &[&str], regd: &Path, cache: PathBuf| {
        let image = format!("docker://{}", c.image);
        let mut args = vec!["pull", "--image", &image, "--tls-verify=false", "-q"];
        args.extend(policy);
        args.extend([
            "--registries.d",
            regd.to_str().unwrap(),
            "--registries-conf",
            conf.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
        ]);
        outcome(sb.bin(&args).run().into_output())
    };
    let mut divergences = Vec::new();
    let (mut accepted, mut refused, mut object_cases) = (0, 0, 0);
    let mut accepted_names: Vec<&str> = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let cdir = dir.join(format!("case-{i}"));
        let regd = cdir.join("registries.d");
        fs::create_dir_all(&regd).unwrap();
        fs::write(regd.join("default.yaml"), &c.registries_d).unwrap();
        let policy = cdir.join("policy.json");
        fs::write(
            &policy,
            serde_json::to_vec_pretty(&json!({
                "default": [{"type": "insecureAcceptAnything"}],
                "transports": {"docker": {scope.as_str(): [c.requirement]}}
            }))
            .unwrap(),
        )
        .unwrap();
        let conf = cdir.join("registries.conf");
        fs::write(&conf, &c.registries_conf).unwrap();
        let skopeo = skopeo_copy(c, &conf, &policy, &regd, cdir.join("skopeo-out"));
        let ours = pull(
            c,
            &conf,
            &["--signature-policy", policy.to_str().unwrap()],
            &regd,
            cdir.join("cache"),
        );
        // Shown when the test fails (or with --nocapture).
        eprintln!(
            "{}: containers/image {}, mcd-inject {}",
            c.name,
            verdict(skopeo.0),
            verdict(ours.0)
        );
        divergences.extend(divergence(&c.name, c.difference, &skopeo, &ours));
        // A refusal is the policy's, named, never a debug dump.
        if !ours.0 && (!ours.1.contains("signature policy") || ours.1.contains(" { ")) {
            divergences.push(format!(
                "{}: mcd-inject's refusal does not name its cause: {}",
                c.name, ours.1
            ));
        }
        if skopeo.0 {
            accepted += 1;
            accepted_names.push(&c.name);
        } else {
            refused += 1;
        }

        // The same case through a ClusterImagePolicy: mcd-inject with the object (on
        // MCO's base policy, no registries.d), containers/image with the policy.json and
        // sigstore-registries.yaml MCO renders from it.
        let Some((object_policy, rendered)) = (c.registries_conf.is_empty())
            .then(|| image_policy_of(&c.requirement))
            .flatten()
        else {
            continue;
        };
        let objects = cdir.join("image-policy.yaml");
        fs::write(
            &objects,
            serde_yaml_ng::to_string(&json!({
                "apiVersion": "config.openshift.io/v1", "kind": "ClusterImagePolicy",
                "metadata": {"name": "conformance"},
                "spec": {"scopes": [scope], "policy": object_policy}
            }))
            .unwrap(),
        )
        .unwrap();
        let rendered_policy = cdir.join("rendered-policy.json");
        fs::write(
            &rendered_policy,
            serde_json::to_vec_pretty(&json!({
                "default": [{"type": "insecureAcceptAnything"}],
                "transports": {"docker": {scope.as_str(): [rendered]},
                               "docker-daemon": {"": [{"type": "insecureAcceptAnything"}]}}
            }))
            .unwrap(),
        )
        .unwrap();
        let rendered_d = cdir.join("rendered-registries.d");
        fs::create_dir_all(&rendered_d).unwrap();
        fs::write(
            rendered_d.join("sigstore-registries.yaml"),
            format!("docker:\n  {scope}:\n    use-sigstore-attachments: true\n"),
        )
        .unwrap();
        let base = cdir.join("mco-base-policy.json");
        fs::write(
            &base,
            r#"{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker-daemon":{"":[{"type":"insecureAcceptAnything"}]}}}"#,
        )
        .unwrap();
        let empty_d = cdir.join("empty-registries.d");
        fs::create_dir_all(&empty_d).unwrap();
        let skopeo = skopeo_copy(
            c,
            &conf,
            &rendered_policy,
            &rendered_d,
            cdir.join("skopeo-out-2"),
        );
        let ours = pull(
            c,
            &conf,
            &[
                "--signature-policy",
                base.to_str().unwrap(),
                "--image-policy",
                objects.to_str().unwrap(),
            ],
            &empty_d,
            cdir.join("cache-2"),
        );
        object_cases += 1;
        let name = format!("{} (ClusterImagePolicy)", c.name);
        divergences.extend(divergence(&name, c.difference, &skopeo, &ours));
    }
    assert!(
        divergences.is_empty(),
        "{} of {} cases diverge from containers/image:\n  {}",
        divergences.len(),
        cases.len(),
        divergences.join("\n  ")
    );
    eprintln!(
        "{} sigstore cases, as containers/image decides them: {accepted} accepted, {refused} \
         refused; {object_cases} of them again through a ClusterImagePolicy",
        cases.len()
    );
    assert!(
        object_cases >= 40,
        "only {object_cases} cases through image policies"
    );
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    assert!(
        accepted >= 20 && refused >= 20,
        "accepted {accepted}, refused {refused}"
    );
    // Each family has verdicts of acceptance too: a refusal of every case of a family
    // (a bundle or chain neither tool can read) would judge nothing.
    for family in [
        "a key with Rekor",
        "Fulcio:",
        "PKI:",
        "cosign sign",
        "through a mirror",
    ] {
        assert!(
            accepted_names.iter().any(|n| n.starts_with(family)),
            "containers/image accepts no case of \"{family}\": the signatures made for them \
             are not ones it can read"
        );
    }
}
