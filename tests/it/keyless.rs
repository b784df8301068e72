//! Keyless (Fulcio certificates with Rekor SETs) and PKI sigstore signatures, and public
//! keys with Rekor, against a real registry (distribution 2.8 over TLS with Basic auth)
//! through the CLI as a user runs it.
//!
//! The CAs, certificates, Rekor key and SETs are made here (rcgen, RustCrypto's p256)
//! in the form Fulcio, Rekor and cosign give them: a root and an intermediate CA, a
//! short-lived leaf with the email SAN, the OIDC issuer extensions
//! (1.3.6.1.4.1.57264.1.1 raw, 1.3.6.1.4.1.57264.1.8 a DER UTF8String) and the
//! code-signing usage; the signature layer's annotations `dev.sigstore.cosign/certificate`
//! (the leaf), `dev.sigstore.cosign/chain` (intermediate, then root) and
//! `dev.sigstore.cosign/bundle` (the SET: `SignedEntryTimestamp`, an ECDSA signature of
//! the RFC 8785 form of `Payload`, written here not canonical as cosign writes it, whose
//! body is the hashedrekord entry of the signature). What is checked here is the reason
//! each refusal gives (the containers/image function that decides named) and the image
//! policy objects' paths; containers/image itself (trixie's skopeo) judges the verdicts
//! of Fulcio, PKI and Rekor cases in `sigstore_conformance.rs`.

use std::fs;
use std::time::{SystemTime, UNIX_EPOCH};

use p256::ecdsa::signature::Signer as _;
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, SigningKey as _,
};
use serde_json::{json, Value};

use crate::harness::registry::registries;
use crate::harness::{require_tools, sha256_hex};
use crate::sigstore::{
    b64, key_pair, payload, push_fixture, pushed, registries_d, Case, Pushed, Registry,
};

const SIG: &str = "dev.cosignproject.cosign/signature";
const CERT: &str = "dev.sigstore.cosign/certificate";
const CHAIN: &str = "dev.sigstore.cosign/chain";
const BUNDLE: &str = "dev.sigstore.cosign/bundle";
const ISSUER: &str = "https://oidc.example.com";
const EMAIL: &str = "release@example.com";
const LOG_ID: &str = "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d";

fn at(secs: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(secs).unwrap()
}

/// A CA: what signs certificates, and its own certificate (PEM).
struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

fn ca_params(name: &str, now: i64) -> CertificateParams {
    let mut p = CertificateParams::default();
    p.distinguished_name.push(DnType::CommonName, name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    p.not_before = at(now - 86_400 * 365);
    p.not_after = at(now + 86_400 * 365);
    p
}

/// A self-signed root.
fn root(name: &str, now: i64) -> Ca {
    let key = KeyPair::generate().unwrap();
    let params = ca_params(name, now);
    let pem = params.self_signed(&key).unwrap().pem();
    Ca {
        issuer: Issuer::new(params, key),
        pem,
    }
}

/// An intermediate CA under `parent`.
fn intermediate(parent: &Ca, name: &str, now: i64) -> Ca {
    let key = KeyPair::generate().unwrap();
    let params = ca_params(name, now);
    let pem = params.signed_by(&key, &parent.issuer).unwrap().pem();
    Ca {
        issuer: Issuer::new(params, key),
        pem,
    }
}

/// What a leaf certificate says.
struct Spec<'a> {
    issuer_v1: Option<&'a str>,
    issuer_v2: Option<&'a str>,
    email: Option<&'a str>,
    dns: Option<&'a str>,
    eku: Vec<ExtendedKeyUsagePurpose>,
    valid: (i64, i64),
}

impl Spec<'_> {
    /// A Fulcio leaf as Fulcio issues it: ten minutes around `t`.
    fn fulcio(t: i64) -> Spec<'static> {
        Spec {
            issuer_v1: Some(ISSUER),
            issuer_v2: Some(ISSUER),
            email: Some(EMAIL),
            dns: None,
            eku: vec![ExtendedKeyUsagePurpose::CodeSigning],
            valid: (t - 300, t + 300),
        }
    }
}

/// A signing certificate and its key.
struct Leaf {
    key: KeyPair,
    pem: String,
}

fn leaf(ca: &Ca, s: &Spec) -> Leaf {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::default();
    if let Some(e) = s.email {
        p.subject_alt_names
            .push(SanType::Rfc822Name(e.try_into().unwrap()));
    }
    if let Some(d) = s.dns {
        p.subject_alt_names
            .push(SanType::DnsName(d.try_into().unwrap()));
    }
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = s.eku.clone();
    if let Some(i) = s.issuer_v1 {
        p.custom_extensions.push(CustomExtension::from_oid_content(
            &[1, 3, 6, 1, 4, 1, 57264, 1, 1],
            i.as_bytes().to_vec(),
        ));
    }
    if let Some(i) = s.issuer_v2 {
        let mut der = vec![0x0c, i.len() as u8];
        der.extend_from_slice(i.as_bytes());
        p.custom_extensions.push(CustomExtension::from_oid_content(
            &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
            der,
        ));
    }
    p.not_before = at(s.valid.0);
    p.not_after = at(s.valid.1);
    let pem = p.signed_by(&key, &ca.issuer).unwrap().pem();
    Leaf { key, pem }
}

/// A Rekor SET for a hashedrekord entry of (`logged_key`, `sig`, `logged_payload`),
/// signed by `rekor`, integrated at `time`.
fn set(
    rekor: &p256::ecdsa::SigningKey,
    logged_key: &str,
    sig: &str,
    logged_payload: &[u8],
    time: i64,
) -> String {
    let body = json!({
        "apiVersion": "0.0.1", "kind": "hashedrekord",
        "spec": {"data": {"hash": {"algorithm": "sha256", "value": sha256_hex(logged_payload)}},
                 "signature": {"content": sig, "publicKey": {"content": b64(logged_key.as_bytes())}}}
    });
    let body = b64(&serde_json::to_vec(&body).unwrap());
    let canonical = format!(
        r#"{{"body":"{body}","integratedTime":{time},"logID":"{LOG_ID}","logIndex":4242}}"#
    );
    let ts: p256::ecdsa::Signature = rekor.sign(canonical.as_bytes());
    // cosign writes the payload in its struct's order, with spaces here: the SET signs
    // its canonical form.
    format!(
        r#"{{"SignedEntryTimestamp":"{}","Payload":{{"body": "{body}", "integratedTime": {time}, "logIndex": 4242, "logID": "{LOG_ID}"}}}}"#,
        b64(ts.to_der().as_bytes())
    )
}

/// A `sigstoreSigned` policy file, and the image policy objects rendering to the same
/// requirement, when there are such.
struct Judge {
    json: String,
    objects: Option<String>,
}

/// How a keyless signature layer is made; what is not set is as cosign makes it.
#[derive(Default)]
struct Made<'a> {
    chain: Option<String>,
    time: Option<i64>,
    rekor: Option<&'a p256::ecdsa::SigningKey>,
    logged_payload: Option<Vec<u8>>,
    logged_key: Option<String>,
    no_set: bool,
    no_cert: bool,
    /// Another key signs the payload than the certificate's.
    signer: Option<&'a KeyPair>,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn keyless_and_pki_signatures_on_a_registry() {
    require_tools(&["skopeo", "curl"]);
    let r = registries();
    let Pushed {
        sb,
        dir,
        uniq,
        repo,
        image,
        digest,
    } = pushed(&r, "keyless");
    let reg = Registry::basic(&r, &dir);
    let write = |name: &str, body: &str| {
        let p = dir.join(name);
        fs::write(&p, body).unwrap();
        p.display().to_string()
    };
    let scope = format!("{}/keyless-{uniq}", r.basic);
    let policy = |name: &str, req: Value| {
        write(
            name,
            &json!({"default": [{"type": "insecureAcceptAnything"}],
                    "transports": {"docker": {&scope: [req]}}})
            .to_string(),
        )
    };
    // The same root of trust as a ClusterImagePolicy, or an ImagePolicy of the MCO's
    // namespace, over the same scope, as `oc get -o yaml` prints it.
    let objects = |name: &str, image_policy: bool, root_of_trust: Value| {
        let mut meta = json!({"name": name});
        if image_policy {
            meta["namespace"] = json!("openshift-machine-config-operator");
        }
        let kind = if image_policy {
            "ImagePolicy"
        } else {
            "ClusterImagePolicy"
        };
        let o = json!({"apiVersion": "config.openshift.io/v1", "kind": kind, "metadata": meta,
                       "spec": {"scopes": [&scope], "policy": {"rootOfTrust": root_of_trust}}});
        write(
            &format!("{name}.yaml"),
            &serde_yaml_ng::to_string(&o).unwrap(),
        )
    };
    let judge = |json: String, objects: Option<String>| Judge { json, objects };
    let regd = registries_d(
        &dir.join("registries.d"),
        &format!(
            "docker:\n  {}/keyless-{uniq}:\n    use-sigstore-attachments: true\n",
            r.basic
        ),
    );
    // With image policies, no registries.d: they enable the attachments of their scopes.
    let no_regd = dir.join("registries.d-none");
    fs::create_dir_all(&no_regd).unwrap();
    let no_regd = no_regd.display().to_string();
    let base = write(
        "base.json",
        r#"{"default": [{"type": "insecureAcceptAnything"}]}"#,
    );
    let case = Case {
        extra: Vec::new(),
        auth: sb
            .write_auth("auth.json", &r.basic, &r.basic_user, &r.basic_password)
            .display()
            .to_string(),
        sb,
        image: image.clone(),
        ca: &r.ca_dir,
    };

    let t = now();
    let fulcio_root = root("Fulcio root", t);
    let fulcio_mid = intermediate(&fulcio_root, "Fulcio intermediate", t);
    let other_root = root("Another root", t);
    let other_mid = intermediate(&other_root, "Another intermediate", t);
    let chain = format!("{}{}", fulcio_mid.pem, fulcio_root.pem);
    let (rekor, rekor_pub) = key_pair(&dir, 31);
    let (other_rekor, _) = key_pair(&dir, 33);
    let fulcio_ca = write("fulcio-root.pem", &fulcio_root.pem);
    let rekor_pem = fs::read(&rekor_pub).unwrap();
    let fulcio = judge(
        policy(
            "fulcio.json",
            json!({"type": "sigstoreSigned",
                   "fulcio": {"caPath": fulcio_ca, "oidcIssuer": ISSUER, "subjectEmail": EMAIL},
                   "rekorPublicKeyPath": rekor_pub}),
        ),
        Some(objects(
            "keyless",
            false,
            json!({"policyType": "FulcioCAWithRekor",
                   "fulcioCAWithRekor": {"fulcioCAData": b64(fulcio_root.pem.as_bytes()),
                                         "rekorKeyData": b64(&rekor_pem),
                                         "fulcioSubject": {"oidcIssuer": ISSUER, "signedEmail": EMAIL}}}),
        )),
    );

    let signed = payload(&digest, &image);
    let layer = |leaf: &Leaf, m: Made| -> (Vec<u8>, Value) {
        let signer = m.signer.unwrap_or(&leaf.key);
        let sig = b64(&signer.sign(&signed).unwrap());
        let mut ann = json!({SIG: sig});
        if !m.no_cert {
            ann[CERT] = json!(leaf.pem);
        }
        if let Some(c) = m.chain {
            ann[CHAIN] = json!(c);
        }
        if !m.no_set {
            ann[BUNDLE] = json!(set(
                m.rekor.unwrap_or(&rekor),
                m.logged_key.as_deref().unwrap_or(&leaf.pem),
                &sig,
                m.logged_payload.as_deref().unwrap_or(&signed),
                m.time.unwrap_or(t),
            ));
        }
        (signed.clone(), ann)
    };
    let with_chain = || Made {
        chain: Some(chain.clone()),
        ..Made::default()
    };
    // Each case under the policy.json requirement, then under the image policy object
    // that renders to it: the same verdict, for the same reason.
    let decide = |l: (Vec<u8>, Value), policy: &Judge, refused_with: Option<&str>| {
        reg.attach_layers(&repo, &digest, &[l], &[]);
        let runs: Vec<(&str, &str, Vec<&str>)> =
            [Some((policy.json.as_str(), regd.as_str(), vec![]))]
                .into_iter()
                .chain([policy
                    .objects
                    .as_deref()
                    .map(|o| (base.as_str(), no_regd.as_str(), vec!["--image-policy", o]))])
                .flatten()
                .collect();
        for (json, regd, more) in runs {
            match refused_with {
                None => case.accepted_with(json, regd, &more),
                Some(want) => {
                    let e = case.refused_with(json, regd, &more);
                    assert!(
                        e.contains("refused by the signature policy") && e.contains(want),
                        "{want} ({more:?}): {e}"
                    );
                }
            }
        }
    };

    // --- Fulcio with Rekor (verifyRekorFulcio: VerifyRekorSET, then
    // verifyFulcioCertificateAtTime at the SET's integrated time).
    let good = leaf(&fulcio_mid, &Spec::fulcio(t));
    decide(layer(&good, with_chain()), &fulcio, None);
    // A certificate long expired now, valid when the log integrated the entry: accepted
    // (x509 Verify's CurrentTime is the SET's time).
    let old = leaf(&fulcio_mid, &Spec::fulcio(t - 7200));
    decide(
        layer(
            &old,
            Made {
                time: Some(t - 7200),
                ..with_chain()
            },
        ),
        &fulcio,
        None,
    );
    // Expired at the integrated time (x509 Verify: "certificate has expired").
    decide(
        layer(&old, with_chain()),
        &fulcio,
        Some("veryfing leaf certificate failed: the certificate has expired"),
    );
    // The issuer in v2 only, in v1 only: accepted; differing, wrong, missing: refused
    // (fulcioIssuerInCertificate; the issuer compared in verifyFulcioCertificateAtTime).
    for (v1, v2, want) in [
        (None, Some(ISSUER), None),
        (Some(ISSUER), None, None),
        (
            Some(ISSUER),
            Some("https://other.example.com"),
            Some("inconsistent OIDC issuer extension values"),
        ),
        (
            Some("https://other.example.com"),
            None,
            Some("Unexpected Fulcio OIDC issuer"),
        ),
        (
            None,
            None,
            Some("Fulcio certificate is missing the issuer extension"),
        ),
    ] {
        let l = leaf(
            &fulcio_mid,
            &Spec {
                issuer_v1: v1,
                issuer_v2: v2,
                ..Spec::fulcio(t)
            },
        );
        decide(layer(&l, with_chain()), &fulcio, want);
    }
    // Another email (slices.Contains of EmailAddresses), none.
    for email in [Some("someone@example.com"), None] {
        let l = leaf(
            &fulcio_mid,
            &Spec {
                email,
                ..Spec::fulcio(t)
            },
        );
        decide(
            layer(&l, with_chain()),
            &fulcio,
            Some(r#"Required email "release@example.com" not found"#),
        );
    }
    // A chain to another root, no intermediates (x509 Verify: unknown authority).
    let foreign = leaf(&other_mid, &Spec::fulcio(t));
    decide(
        layer(
            &foreign,
            Made {
                chain: Some(format!("{}{}", other_mid.pem, other_root.pem)),
                ..Made::default()
            },
        ),
        &fulcio,
        Some("certificate signed by unknown authority"),
    );
    decide(
        layer(&good, Made::default()),
        &fulcio,
        Some("certificate signed by unknown authority"),
    );
    // The code-signing usage (x509 VerifyOptions.KeyUsages).
    let server = leaf(
        &fulcio_mid,
        &Spec {
            eku: vec![ExtendedKeyUsagePurpose::ServerAuth],
            ..Spec::fulcio(t)
        },
    );
    decide(
        layer(&server, with_chain()),
        &fulcio,
        Some("incompatible key usage"),
    );
    // The SET (VerifyRekorSET): missing, by another Rekor key, for another payload,
    // for another certificate, tampered.
    decide(
        layer(
            &good,
            Made {
                no_set: true,
                ..with_chain()
            },
        ),
        &fulcio,
        Some("missing dev.sigstore.cosign/bundle annotation"),
    );
    decide(
        layer(
            &good,
            Made {
                rekor: Some(&other_rekor),
                ..with_chain()
            },
        ),
        &fulcio,
        Some("cryptographic signature verification of Rekor SET failed"),
    );
    decide(
        layer(
            &good,
            Made {
                logged_payload: Some(b"another payload".to_vec()),
                ..with_chain()
            },
        ),
        &fulcio,
        Some("payload in Rekor SET does not match"),
    );
    decide(
        layer(
            &good,
            Made {
                logged_key: Some(foreign.pem.clone()),
                ..with_chain()
            },
        ),
        &fulcio,
        Some("publicKey in Rekor SET does not match"),
    );
    let (p, mut ann) = layer(&good, with_chain());
    let tampered = ann[BUNDLE].as_str().unwrap().replace(
        &format!("\"integratedTime\": {t}"),
        &format!("\"integratedTime\": {}", t + 1),
    );
    ann[BUNDLE] = json!(tampered);
    decide(
        (p, ann),
        &fulcio,
        Some("cryptographic signature verification of Rekor SET failed"),
    );
    // No certificate; a signature by another key than the certificate's, logged as it is
    // (VerifySigstorePayload with the certificate's key).
    decide(
        layer(
            &good,
            Made {
                no_cert: true,
                ..with_chain()
            },
        ),
        &fulcio,
        Some("missing dev.sigstore.cosign/certificate annotation"),
    );
    decide(
        layer(
            &good,
            Made {
                signer: Some(&foreign.key),
                ..with_chain()
            },
        ),
        &fulcio,
        Some("not a signature of its payload by the ECDSA P-256 key of its Fulcio certificate"),
    );
    // A CA file with no certificate in it (prSigstoreSignedFulcio.prepareTrustRoot).
    // (An image policy's fulcioCAData must be PEM: the CRD refuses this one.)
    let empty_ca = judge(
        policy(
            "fulcio-empty-ca.json",
            json!({"type": "sigstoreSigned",
                   "fulcio": {"caPath": write("empty.pem", "nothing\n"), "oidcIssuer": ISSUER,
                              "subjectEmail": EMAIL},
                   "rekorPublicKeyPath": rekor_pub}),
        ),
        None,
    );
    decide(
        layer(&good, with_chain()),
        &empty_ca,
        Some("error loading Fulcio CA certificates"),
    );

    // --- PKI (verifyPKI: x509 Verify now, email, VerifyHostname).
    let pki_root = root("PKI root", t);
    let pki_mid = intermediate(&pki_root, "PKI intermediate", t);
    let pki_chain = format!("{}{}", pki_mid.pem, pki_root.pem);
    let pki_roots = write("pki-root.pem", &pki_root.pem);
    let pki_mids = write("pki-intermediate.pem", &pki_mid.pem);
    let pki_object = |name: &str, subject: Value, with_mids: bool| {
        let mut pki = json!({"caRootsData": b64(pki_root.pem.as_bytes()),
                             "pkiCertificateSubject": subject});
        if with_mids {
            pki["caIntermediatesData"] = json!(b64(pki_mid.pem.as_bytes()));
        }
        // An ImagePolicy for the e-mail, a ClusterImagePolicy for the hostname.
        Some(objects(
            name,
            !with_mids,
            json!({"policyType": "PKI", "pki": pki}),
        ))
    };
    let by_email = judge(
        policy(
            "pki-email.json",
            json!({"type": "sigstoreSigned",
                   "pki": {"caRootsPath": pki_roots, "subjectEmail": EMAIL}}),
        ),
        pki_object("pki-email", json!({"email": EMAIL}), false),
    );
    let by_host = judge(
        policy(
            "pki-host.json",
            json!({"type": "sigstoreSigned",
                   "pki": {"caRootsPath": pki_roots, "caIntermediatesPath": pki_mids,
                           "subjectHostname": "signer.example.com"}}),
        ),
        pki_object("pki-host", json!({"hostname": "signer.example.com"}), true),
    );
    let pki_spec = |t: i64| Spec {
        issuer_v1: None,
        issuer_v2: None,
        email: Some(EMAIL),
        dns: Some("signer.example.com"),
        eku: vec![ExtendedKeyUsagePurpose::CodeSigning],
        valid: (t - 86_400, t + 86_400),
    };
    let pki_leaf = leaf(&pki_mid, &pki_spec(t));
    let pki_layer = |l: &Leaf, chain: Option<&str>| {
        layer(
            l,
            Made {
                chain: chain.map(str::to_string),
                no_set: true,
                ..Made::default()
            },
        )
    };
    decide(pki_layer(&pki_leaf, Some(&pki_chain)), &by_email, None);
    // The trusted intermediates of the policy (caIntermediatesPath) stand for the chain.
    decide(pki_layer(&pki_leaf, None), &by_host, None);
    decide(
        pki_layer(&pki_leaf, None),
        &by_email,
        Some("certificate signed by unknown authority"),
    );
    // A wildcard DNS name matches; another name does not (VerifyHostname).
    let wildcard = leaf(
        &pki_mid,
        &Spec {
            dns: Some("*.example.com"),
            ..pki_spec(t)
        },
    );
    decide(pki_layer(&wildcard, None), &by_host, None);
    let elsewhere = leaf(
        &pki_mid,
        &Spec {
            dns: Some("signer.example.org"),
            ..pki_spec(t)
        },
    );
    decide(
        pki_layer(&elsewhere, None),
        &by_host,
        Some("Unexpected subject hostname"),
    );
    // Without the code-signing usage; expired now; under another root.
    let tls = leaf(
        &pki_mid,
        &Spec {
            eku: vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
            ..pki_spec(t)
        },
    );
    decide(
        pki_layer(&tls, None),
        &by_host,
        Some("incompatible key usage"),
    );
    let expired = leaf(&pki_mid, &pki_spec(t - 3 * 86_400));
    decide(
        pki_layer(&expired, None),
        &by_host,
        Some("the certificate has expired"),
    );
    let stranger = leaf(&other_mid, &pki_spec(t));
    decide(
        pki_layer(
            &stranger,
            Some(&format!("{}{}", other_mid.pem, other_root.pem)),
        ),
        &by_email,
        Some("certificate signed by unknown authority"),
    );
    decide(
        pki_layer(&pki_leaf, Some(&pki_chain)),
        &judge(
            policy(
                "pki-other-email.json",
                json!({"type": "sigstoreSigned",
                       "pki": {"caRootsPath": pki_roots, "subjectEmail": "other@example.com"}}),
            ),
            pki_object(
                "pki-other-email",
                json!({"email": "other@example.com"}),
                false,
            ),
        ),
        Some(r#"Required email "other@example.com" not found"#),
    );

    // --- A public key with Rekor (isSignatureAccepted: the SET must name the key).
    let (key, key_pub) = key_pair(&dir, 7);
    let key_pem = fs::read_to_string(&key_pub).unwrap();
    let with_rekor = judge(
        policy(
            "key-rekor.json",
            json!({"type": "sigstoreSigned", "keyPath": key_pub, "rekorPublicKeyPath": rekor_pub}),
        ),
        Some(objects(
            "key-rekor",
            false,
            json!({"policyType": "PublicKey",
                   "publicKey": {"keyData": b64(key_pem.as_bytes()), "rekorKeyData": b64(&rekor_pem)}}),
        )),
    );
    let key_layer = |logged: &str, with_set: bool| {
        let sig: p256::ecdsa::Signature = key.sign(&signed);
        let sig = b64(sig.to_der().as_bytes());
        let mut ann = json!({SIG: sig});
        if with_set {
            ann[BUNDLE] = json!(set(&rekor, logged, &sig, &signed, t));
        }
        (signed.clone(), ann)
    };
    decide(key_layer(&key_pem, true), &with_rekor, None);
    decide(
        key_layer(&good.pem, true),
        &with_rekor,
        Some("No public key verified against the RekorSET: publicKey in Rekor SET does not match"),
    );
    decide(
        key_layer(&key_pem, false),
        &with_rekor,
        Some("missing dev.sigstore.cosign/bundle annotation"),
    );

    // --- Through a mirror: the ClusterImagePolicy's scope is the source; a mirror that
    // registries.conf names serves the image, and its attachments are read from the
    // mirror's repository, whose namespace the image policy enables
    // (addScopeMirrorsSigstoreRegistriesdConfig), with no registries.d.
    let source = format!("{}/keyless-{uniq}-source", r.basic);
    let mirror = format!("{}/keyless-{uniq}/mirror", r.basic);
    push_fixture(&r, &format!("{mirror}/mco:v1"));
    let conf = write(
        "registries.conf",
        &format!(
            "[[registry]]\nprefix = \"{source}\"\nlocation = \"{source}\"\n\
             [[registry.mirror]]\nlocation = \"{mirror}\"\n"
        ),
    );
    let via = Case {
        extra: vec!["--registries-conf".into(), conf],
        auth: case.auth.clone(),
        sb: crate::harness::registry::Sandbox::new(),
        image: format!("{source}/mco:v1"),
        ca: &r.ca_dir,
    };
    let for_source = {
        let o = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterImagePolicy",
                       "metadata": {"name": "keyless-source"},
                       "spec": {"scopes": [&source], "policy": {"rootOfTrust": {
                           "policyType": "FulcioCAWithRekor",
                           "fulcioCAWithRekor": {"fulcioCAData": b64(fulcio_root.pem.as_bytes()),
                                                 "rekorKeyData": b64(&rekor_pem),
                                                 "fulcioSubject": {"oidcIssuer": ISSUER, "signedEmail": EMAIL}}}}}});
        write(
            "keyless-source.yaml",
            &serde_yaml_ng::to_string(&o).unwrap(),
        )
    };
    let via_mirror = |l: &Leaf| {
        let p = payload(&digest, &via.image);
        let sig = b64(&l.key.sign(&p).unwrap());
        let ann = json!({SIG: sig, CERT: l.pem, CHAIN: chain,
                         BUNDLE: set(&rekor, &l.pem, &sig, &p, t)});
        reg.attach_layers(
            &format!("keyless-{uniq}/mirror/mco"),
            &digest,
            &[(p, ann)],
            &[],
        );
    };
    via_mirror(&good);
    via.accepted_with(&base, &no_regd, &["--image-policy", &for_source]);
    let stranger_email = leaf(
        &fulcio_mid,
        &Spec {
            email: Some("someone@example.com"),
            ..Spec::fulcio(t)
        },
    );
    via_mirror(&stranger_email);
    let e = via.refused_with(&base, &no_regd, &["--image-policy", &for_source]);
    assert!(
        e.contains(&format!("{mirror}/mco:sha256-"))
            && e.contains(r#"Required email "release@example.com" not found"#),
        "{e}"
    );

    // --- Requirements containers/image refuses when the policy is read
    // (newPRSigstoreSigned): Fulcio without Rekor, PKI with Rekor.
    for (name, req, want) in [
        (
            "fulcio-no-rekor.json",
            json!({"type": "sigstoreSigned",
                   "fulcio": {"caPath": fulcio_ca, "oidcIssuer": ISSUER, "subjectEmail": EMAIL}}),
            "must be specified with fulcio",
        ),
        (
            "pki-rekor.json",
            json!({"type": "sigstoreSigned", "rekorPublicKeyPath": rekor_pub,
                   "pki": {"caRootsPath": pki_roots, "subjectEmail": EMAIL}}),
            "not supported with pki",
        ),
    ] {
        let e = case.refused(&policy(name, req), &regd);
        assert!(
            e.contains(name) && e.contains("not a valid signature policy") && e.contains(want),
            "{e}"
        );
    }
}
