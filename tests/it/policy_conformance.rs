//! Signature policy conformance: skopeo (containers/image, which defines
//! containers-policy.json(5) and containers-registries.d(5)) and mcd-inject judge the
//! same image, pulled from the same loopback registry, under the same policy,
//! registries.d, registries.conf and signatures, case by case; any disagreement fails
//! the test. Cases where containers/image changed after the skopeo on the machine
//! (Debian's 1.9.3) carry the newer behaviour and the release that brought it.
//!
//! Keys and signatures are made here with gpg: good, unknown, expired, revoked keys,
//! signing subkeys (valid, expired, revoked), expired signatures, messages with two
//! signers, and payloads written by hand (missing `optional`, unknown keys, identities
//! without tag, Docker Hub spellings).
//!
//! Needs `skopeo`, `gpg` and the loopback registries (`scripts/registry-services.sh`).

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::harness::gpg::Gpg;
use crate::harness::registry::{registries, Sandbox};
use crate::harness::{fixture, instance_digest, require_tools, run_ok, sha256_hex};

/// A simple signing payload as containers/image writes one.
fn payload(digest: &str, identity: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "critical": {
            "identity": {"docker-reference": identity},
            "image": {"docker-manifest-digest": digest},
            "type": "atomic container signature"
        },
        "optional": {"creator": "mcd-inject conformance test", "timestamp": 1_700_000_000}
    }))
    .unwrap()
}

/// One case: the same inputs for both tools.
struct Case {
    name: String,
    policy: String,
    /// registries.d files; `None`: one `default-docker` lookaside for every image.
    registries_d: Option<Vec<(&'static str, String)>>,
    /// Signature files by repository path and the manifest digest they are stored
    /// under, in order (`signature-1`, ...).
    signatures: Vec<(String, String, Vec<Vec<u8>>)>,
    image: String,
    registries_conf: String,
    /// containers/image changed after skopeo 1.9.3: what the current release decides,
    /// and the release that changed it.
    newer: Option<(bool, &'static str)>,
}

const LOOKASIDE: &str = "@LOOKASIDE@";

fn requirement_by(key: &Path, identity: Option<Value>) -> Value {
    let mut r = json!({"type": "signedBy", "keyType": "GPGKeys", "keyPath": key});
    if let Some(i) = identity {
        r["signedIdentity"] = i;
    }
    r
}

fn default_policy(reqs: Value) -> String {
    serde_json::to_string(&json!({"default": reqs})).unwrap()
}

/// Runs one tool on one case: whether it accepted the image, and what it said.
fn outcome(out: Output) -> (bool, String) {
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    )
}

#[test]
fn signature_policies_are_decided_as_containers_image_decides_them() {
    require_tools(&["skopeo", "gpg"]);
    let regs = registries();
    let reg = regs.anon.clone();
    let sb = Sandbox::new();
    let dir = sb.path("conformance");
    fs::create_dir_all(&dir).unwrap();

    // The image, under the names the cases pull.
    let accept_all = dir.join("accept.json");
    fs::write(
        &accept_all,
        r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
    )
    .unwrap();
    for tag in ["v1", "v2", "latest"] {
        run_ok(
            Command::new("skopeo")
                .args([
                    "copy",
                    "-q",
                    "--src-tls-verify=false",
                    "--dest-tls-verify=false",
                ])
                .arg("--policy")
                .arg(&accept_all)
                .arg(format!("docker://{reg}/mco/small:v1"))
                .arg(format!("docker://{reg}/conformance/app:{tag}")),
        );
    }
    let raw = run_ok(
        Command::new("skopeo")
            .args(["inspect", "--raw", "--tls-verify=false"])
            .arg(format!("docker://{reg}/conformance/app:v1")),
    )
    .stdout;
    let digest = format!("sha256:{}", sha256_hex(&raw));
    let other_digest = format!("sha256:{}", sha256_hex(b"another manifest"));
    let app = format!("{reg}/conformance/app");
    let v1 = format!("{app}:v1");
    let by_digest = format!("{app}@{digest}");

    // Keys.
    let g = Gpg::new(&dir);
    let good = g.key("good", "sign", "never", None);
    let other = g.key("other", "sign", "never", None);
    let expired = g.key("expired", "sign", "1y", Some("20200101T000000"));
    let revoked = g.key("revoked", "sign", "never", None);
    let old = g.key("old", "sign", "never", Some("20200101T000000"));
    let with_sub = g.key("withsub", "cert", "never", None);
    let sub = g.add_signing_subkey(&with_sub, "never", None);
    let with_expired_sub = g.key("expiredsub", "cert", "never", Some("20200101T000000"));
    let expired_sub = g.add_signing_subkey(&with_expired_sub, "1y", Some("20200101T000000"));
    let with_revoked_sub = g.key("revokedsub", "cert", "never", None);
    let revoked_sub = g.add_signing_subkey(&with_revoked_sub, "never", None);

    let p = payload(&digest, &v1);
    let sig_good = g.sign(&p, &[&good], &[]);
    let sig_other = g.sign(&p, &[&other], &[]);
    let sig_expired_key = g.sign(&p, &[&expired], &["--faked-system-time", "20200601T000000"]);
    let sig_revoked = g.sign(&p, &[&revoked], &[]);
    let sig_old = g.sign(&p, &[&old], &[]);
    let sig_expired = g.sign(
        &p,
        &[&old],
        &[
            "--faked-system-time",
            "20200102T000000",
            "--default-sig-expire",
            "1d",
        ],
    );
    let sig_sub = g.sign(&p, &[&format!("{sub}!")], &[]);
    let sig_expired_sub = g.sign(
        &p,
        &[&format!("{expired_sub}!")],
        &["--faked-system-time", "20200601T000000"],
    );
    let sig_revoked_sub = g.sign(&p, &[&format!("{revoked_sub}!")], &[]);
    let sig_two = g.sign(&p, &[&good, &other], &[]);
    g.revoke_key(&revoked);
    g.revoke_first_subkey(&with_revoked_sub);

    let k_good = g.export(&good, "good.asc");
    let k_other = g.export(&other, "other.asc");
    let k_expired = g.export(&expired, "expired.asc");
    let k_revoked = g.export(&revoked, "revoked.asc");
    let k_old = g.export(&old, "old.asc");
    let k_with_sub = g.export(&with_sub, "withsub.asc");
    let k_expired_sub = g.export(&with_expired_sub, "expiredsub.asc");
    let k_revoked_sub = g.export(&with_revoked_sub, "revokedsub.asc");
    let both_keys = g.keys.join("both.asc");
    fs::write(
        &both_keys,
        [fs::read(&k_other).unwrap(), fs::read(&k_good).unwrap()].concat(),
    )
    .unwrap();

    let sign_good = |payload: &[u8]| g.sign(payload, &[&good], &[]);
    let by_good =
        |identity: Option<Value>| default_policy(json!([requirement_by(&k_good, identity)]));
    let plain_conf = String::new();
    let repo = "conformance/app".to_string();

    let mut cases: Vec<Case> = Vec::new();
    let mut case = |name: &str, policy: String, sigs: Vec<Vec<u8>>, image: &str| {
        cases.push(Case {
            name: name.to_string(),
            policy,
            registries_d: None,
            signatures: vec![(repo.clone(), digest.clone(), sigs)],
            image: image.to_string(),
            registries_conf: plain_conf.clone(),
            newer: None,
        });
    };

    // --- requirements without signatures
    case(
        "insecureAcceptAnything",
        default_policy(json!([{"type": "insecureAcceptAnything"}])),
        vec![],
        &v1,
    );
    case(
        "reject",
        default_policy(json!([{"type": "reject"}])),
        vec![],
        &v1,
    );
    case(
        "accept, then reject",
        default_policy(json!([{"type": "insecureAcceptAnything"}, {"type": "reject"}])),
        vec![],
        &v1,
    );
    case(
        "signedBaseLayer",
        default_policy(
            json!([{"type": "signedBaseLayer", "baseLayerIdentity": {"type": "matchRepository"}}]),
        ),
        vec![],
        &v1,
    );

    // --- policy files containers/image refuses as a whole
    let accept = json!([{"type": "insecureAcceptAnything"}]);
    for (name, text) in [
        ("no default", json!({"transports": {}}).to_string()),
        ("empty default", json!({"default": []}).to_string()),
        ("unknown top-level key", json!({"default": accept, "defaults": accept}).to_string()),
        (
            "duplicate key",
            r#"{"default":[{"type":"insecureAcceptAnything"}],"default":[{"type":"insecureAcceptAnything"}]}"#.to_string(),
        ),
        ("unknown requirement type", default_policy(json!([{"type": "insecureAcceptEverything"}]))),
        ("requirement without type", default_policy(json!([{}]))),
        (
            "keyPath on insecureAcceptAnything",
            default_policy(json!([{"type": "insecureAcceptAnything", "keyPath": k_good}])),
        ),
        (
            "unknown key on reject",
            default_policy(json!([{"type": "reject", "why": "no"}])),
        ),
        (
            "signedIdentty typo",
            default_policy(json!([{"type": "insecureAcceptAnything"}])).replace(
                r#"[{"type":"insecureAcceptAnything"}]"#,
                &json!([{"type": "signedBy", "keyType": "GPGKeys", "keyPath": k_good,
                         "signedIdentty": {"type": "matchRepository"}}])
                .to_string(),
            ),
        ),
        (
            "signedBy without keyType",
            default_policy(json!([{"type": "signedBy", "keyPath": k_good}])),
        ),
        (
            "unknown keyType",
            default_policy(json!([{"type": "signedBy", "keyType": "PGPKeys", "keyPath": k_good}])),
        ),
        (
            "signedBy without keys",
            default_policy(json!([{"type": "signedBy", "keyType": "GPGKeys"}])),
        ),
        (
            "keyPath and keyData",
            default_policy(json!([{"type": "signedBy", "keyType": "GPGKeys", "keyPath": k_good, "keyData": "AAAA"}])),
        ),
        (
            "exactReference without tag or digest",
            by_good(Some(json!({"type": "exactReference", "dockerReference": app}))),
        ),
        (
            "remapIdentity prefix ending in /",
            by_good(Some(json!({"type": "remapIdentity", "prefix": format!("{reg}/conformance/"), "signedPrefix": format!("{reg}/conformance")}))),
        ),
        (
            "unknown signedIdentity type",
            by_good(Some(json!({"type": "matchEverything"}))),
        ),
        (
            "matchRepository with an extra key",
            by_good(Some(json!({"type": "matchRepository", "dockerRepository": app}))),
        ),
        (
            "invalid policy in another transport",
            json!({"default": accept, "transports": {"atomic": {"x": [{"type": "maybe"}]}}}).to_string(),
        ),
        ("scopes not an object", json!({"default": accept, "transports": {"docker": []}}).to_string()),
        (
            "keyData not base64",
            default_policy(json!([{"type": "signedBy", "keyType": "GPGKeys", "keyData": "not base64!"}])),
        ),
        (
            "keyPath empty",
            default_policy(json!([{"type": "signedBy", "keyType": "GPGKeys", "keyPath": ""}])),
        ),
        (
            "keyPath null",
            default_policy(json!([{"type": "signedBy", "keyType": "GPGKeys", "keyPath": null}])),
        ),
        (
            "keyPath not a string",
            default_policy(json!([{"type": "signedBy", "keyType": "GPGKeys", "keyPath": 7}])),
        ),
        (
            "type not a string",
            default_policy(json!([{"type": ["reject"]}])),
        ),
    ] {
        case(&format!("invalid policy: {name}"), text, vec![sig_good.clone()], &v1);
    }

    // --- simple signing signatures and keys
    case(
        "signed by the policy's key",
        by_good(None),
        vec![sig_good.clone()],
        &v1,
    );
    case(
        "signed, pulled by digest",
        by_good(None),
        vec![sig_good.clone()],
        &by_digest,
    );
    case("no signature", by_good(None), vec![], &v1);
    case(
        "signed by another key",
        by_good(None),
        vec![sig_other.clone()],
        &v1,
    );
    case(
        "one of two keys in keyPath",
        default_policy(json!([requirement_by(&both_keys, None)])),
        vec![sig_good.clone()],
        &v1,
    );
    case(
        "keyData",
        default_policy(json!([{"type": "signedBy", "keyType": "GPGKeys",
            "keyData": base64_of(&fs::read(&k_good).unwrap())}])),
        vec![sig_good.clone()],
        &v1,
    );
    case(
        "keyPaths, the second file holds the key",
        default_policy(
            json!([{"type": "signedBy", "keyType": "GPGKeys", "keyPaths": [k_other, k_good]}]),
        ),
        vec![sig_good.clone()],
        &v1,
    );
    case(
        "keyPaths empty",
        default_policy(json!([{"type": "signedBy", "keyType": "GPGKeys", "keyPaths": []}])),
        vec![sig_good.clone()],
        &v1,
    );
    case(
        "key file that holds no key",
        default_policy(json!([requirement_by(&accept_all, None)])),
        vec![sig_good.clone()],
        &v1,
    );
    case(
        "missing key file",
        default_policy(json!([requirement_by(&dir.join("absent.asc"), None)])),
        vec![sig_good.clone()],
        &v1,
    );
    case(
        "X509Certificates keyType",
        default_policy(
            json!([{"type": "signedBy", "keyType": "X509Certificates", "keyPath": k_good}]),
        ),
        vec![sig_good.clone()],
        &v1,
    );
    case(
        "X509Certificates keyType in a scope not used",
        json!({"default": [requirement_by(&k_good, None)], "transports": {"docker": {
            format!("{reg}/elsewhere"): [{"type": "signedBy", "keyType": "X509Certificates", "keyPath": k_good}]}}})
        .to_string(),
        vec![sig_good.clone()],
        &v1,
    );
    case(
        "two signatures, the first by another key",
        by_good(None),
        vec![sig_other.clone(), sig_good.clone()],
        &v1,
    );
    case(
        "two signatures, the second by another key",
        by_good(None),
        vec![sig_good.clone(), sig_other.clone()],
        &v1,
    );
    let mut tampered = sig_good.clone();
    let mid = tampered.len() / 2;
    tampered[mid] ^= 0x55;
    case("tampered signature", by_good(None), vec![tampered], &v1);
    case(
        "two requirements, both met",
        default_policy(json!([
            requirement_by(&k_good, None),
            requirement_by(&both_keys, None)
        ])),
        vec![sig_good.clone()],
        &v1,
    );
    case(
        "two requirements, one not met",
        default_policy(json!([
            requirement_by(&k_good, None),
            requirement_by(&k_other, None)
        ])),
        vec![sig_good.clone()],
        &v1,
    );
    // Keys and signatures in every state, each under a policy asking for its key.
    for (name, key, sig) in [
        ("expired key", &k_expired, sig_expired_key),
        ("revoked key", &k_revoked, sig_revoked),
        ("old key, signature without expiry", &k_old, sig_old),
        ("expired signature", &k_old, sig_expired),
        ("expired signing subkey", &k_expired_sub, sig_expired_sub),
        ("revoked signing subkey", &k_revoked_sub, sig_revoked_sub),
    ] {
        case(
            name,
            default_policy(json!([requirement_by(key, None)])),
            vec![sig],
            &v1,
        );
    }
    cases.push(Case {
        name: "signed by a signing subkey of the policy's key".into(),
        policy: default_policy(json!([requirement_by(&k_with_sub, None)])),
        registries_d: None,
        signatures: vec![(repo.clone(), digest.clone(), vec![sig_sub])],
        image: v1.clone(),
        registries_conf: plain_conf.clone(),
        newer: Some((true, "containers/image pull request 2905, July 2025")),
    });
    let mut case = |name: &str, policy: String, sigs: Vec<Vec<u8>>, image: &str| {
        cases.push(Case {
            name: name.to_string(),
            policy,
            registries_d: None,
            signatures: vec![(repo.clone(), digest.clone(), sigs)],
            image: image.to_string(),
            registries_conf: plain_conf.clone(),
            newer: None,
        });
    };
    case(
        "a message with two signers",
        default_policy(json!([requirement_by(&both_keys, None)])),
        vec![sig_two],
        &v1,
    );
    // Signature subpackets: a critical notation GnuPG does not know makes the signature
    // invalid (RFC 4880 5.2.3.1; gpg's can_handle_critical_notation); a non-critical
    // one, a critical policy URL and a known critical notation do not.
    for (name, extra) in [
        (
            "a critical unknown notation",
            &["--sig-notation", "!build@example.com=1"][..],
        ),
        (
            "a non-critical notation",
            &["--sig-notation", "build@example.com=1"][..],
        ),
        (
            "a critical policy URL",
            &["--sig-policy-url", "!https://example.com/policy"][..],
        ),
        (
            "a non-critical policy URL",
            &["--sig-policy-url", "https://example.com/policy"][..],
        ),
        (
            "a critical notation GnuPG knows",
            &["--sig-notation", "!pka-address@gnupg.org=good@example.com"][..],
        ),
    ] {
        case(
            &format!("signed with {name}"),
            by_good(None),
            vec![g.sign(&p, &[&good], extra)],
            &v1,
        );
    }
    // The key algorithms gpg makes signing keys of, and the digest algorithms of its
    // signatures. secp256k1 twice: libgcrypt's ECDSA signatures have an s in either
    // half of the curve order (the upper half is what a verifier that wants low S, as
    // rPGP's k256 does, refused). The brainpool curves rPGP reads but does not verify
    // with are verified by RustCrypto's; brainpoolP512r1 has no such crate and is not
    // here: mcd-inject refuses such keys, which gpgme verifies with (docs/release.md).
    for (i, algo) in [
        "rsa3072",
        "rsa4096",
        "dsa2048",
        "ed25519",
        "nistp256",
        "nistp384",
        "nistp521",
        "secp256k1",
        "secp256k1",
        "brainpoolP256r1",
        "brainpoolP384r1",
    ]
    .into_iter()
    .enumerate()
    {
        let fpr = g.key_of(&format!("algo-{i}-{algo}"), algo, "sign", "never", None);
        let key = g.export(&fpr, &format!("algo-{i}-{algo}.asc"));
        case(
            &format!("a {algo} key ({i})"),
            default_policy(json!([requirement_by(&key, None)])),
            vec![g.sign(&p, &[&fpr], &[])],
            &v1,
        );
    }
    for algo in ["SHA1", "SHA224", "SHA384", "SHA512"] {
        case(
            &format!("a signature with digest {algo}"),
            by_good(None),
            vec![g.sign(&p, &[&good], &["--digest-algo", algo])],
            &v1,
        );
    }
    // Manifest lists and OCI indexes: copying the instance of its platform,
    // containers/image judges that instance with the signatures of its digest
    // (copy.go, copySingleImage on the instance ChooseInstance picks); the list's own
    // signatures do not count. By tag and by digest; an OCI index, and the Docker
    // manifest list skopeo converts it to.
    let mut list_cases = Vec::new();
    for (kind, format) in [("oci-index", None), ("docker-list", Some("v2s2"))] {
        let list_repo = format!("conformance/{kind}");
        let mut copy = Command::new("skopeo");
        copy.args([
            "copy",
            "-q",
            "--all",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
        ]);
        if let Some(f) = format {
            copy.args(["--format", f]);
        }
        run_ok(
            copy.arg("--policy")
                .arg(&accept_all)
                .arg(format!("docker://{reg}/mco/multiarch:v1"))
                .arg(format!("docker://{reg}/{list_repo}:v1")),
        );
        let list_raw = run_ok(
            Command::new("skopeo")
                .args(["inspect", "--raw", "--tls-verify=false"])
                .arg(format!("docker://{reg}/{list_repo}:v1")),
        )
        .stdout;
        let list_digest = format!("sha256:{}", sha256_hex(&list_raw));
        let instance = instance_digest(&list_raw, "amd64");
        let tagged = format!("{reg}/{list_repo}:v1");
        let signed = |d: &str| sign_good(&payload(d, &tagged));
        for (pulled, how) in [
            (tagged.clone(), "by tag"),
            (format!("{reg}/{list_repo}@{list_digest}"), "by digest"),
        ] {
            for (what, sigs) in [
                (
                    "the list signed, not its instance",
                    vec![(list_digest.clone(), signed(&list_digest))],
                ),
                (
                    "its instance signed",
                    vec![(instance.clone(), signed(&instance))],
                ),
                (
                    "the list and its instance signed",
                    vec![
                        (list_digest.clone(), signed(&list_digest)),
                        (instance.clone(), signed(&instance)),
                    ],
                ),
            ] {
                list_cases.push(Case {
                    name: format!("{kind} {how}: {what}"),
                    policy: by_good(None),
                    registries_d: None,
                    signatures: sigs
                        .into_iter()
                        .map(|(d, sig)| (list_repo.clone(), d, vec![sig]))
                        .collect(),
                    image: pulled.clone(),
                    registries_conf: plain_conf.clone(),
                    newer: None,
                });
            }
        }
    }
    // A signature naming the manifest's sha512 digest: containers/image's MatchesDigest
    // compares sha256 digests only.
    let sha512 = {
        use sha2::Digest as _;
        format!("sha512:{}", hex::encode(sha2::Sha512::digest(&raw)))
    };
    case(
        "a signature naming the manifest's sha512 digest",
        by_good(None),
        vec![sign_good(&payload(&sha512, &v1))],
        &v1,
    );

    // --- payloads
    let raw_payload = |critical: Value, optional: Option<Value>| {
        let mut v = json!({"critical": critical});
        if let Some(o) = optional {
            v["optional"] = o;
        }
        serde_json::to_vec(&v).unwrap()
    };
    let critical = |digest: &str, identity: &str| {
        json!({"type": "atomic container signature",
               "image": {"docker-manifest-digest": digest},
               "identity": {"docker-reference": identity}})
    };
    let mut extra = critical(&digest, &v1);
    extra["note"] = json!("x");
    let mut kind = critical(&digest, &v1);
    kind["type"] = json!("cosign container image signature");
    let plain = || critical(&digest, &v1);
    for (name, signed) in [
        ("payload without optional", raw_payload(plain(), None)),
        (
            "payload with empty optional",
            raw_payload(plain(), Some(json!({}))),
        ),
        (
            "payload with a fractional timestamp",
            raw_payload(plain(), Some(json!({"timestamp": 1.5}))),
        ),
        (
            "payload with an unknown critical key",
            raw_payload(extra, Some(json!({}))),
        ),
        (
            "payload of another type",
            raw_payload(kind, Some(json!({}))),
        ),
        ("payload of another manifest", payload(&other_digest, &v1)),
        (
            "payload with an invalid digest",
            payload("sha256:1234", &v1),
        ),
        ("payload that is not JSON", b"not json".to_vec()),
    ] {
        case(name, by_good(None), vec![sign_good(&signed)], &v1);
    }

    // --- signed identities
    let v2 = format!("{app}:v2");
    let name_only = app.clone();
    for (name, identity, signed, image) in [
        (
            "default identity, other tag signed",
            None,
            v2.clone(),
            v1.clone(),
        ),
        (
            "default identity, name only signed",
            None,
            name_only.clone(),
            v1.clone(),
        ),
        (
            "default identity, name only signed, pulled by digest",
            None,
            name_only.clone(),
            by_digest.clone(),
        ),
        (
            "default identity, other tag signed, pulled by digest",
            None,
            v2.clone(),
            by_digest.clone(),
        ),
        (
            "default identity, other repository signed",
            None,
            format!("{reg}/conformance/other:v1"),
            v1.clone(),
        ),
        (
            "default identity, :latest signed for a name-only pull",
            None,
            format!("{app}:latest"),
            name_only.clone(),
        ),
        (
            "matchExact, by tag",
            Some(json!({"type": "matchExact"})),
            v1.clone(),
            v1.clone(),
        ),
        (
            "matchExact, by digest",
            Some(json!({"type": "matchExact"})),
            v1.clone(),
            by_digest.clone(),
        ),
        (
            "matchExact, digest signed, by digest",
            Some(json!({"type": "matchExact"})),
            by_digest.clone(),
            by_digest.clone(),
        ),
        (
            "matchRepository, other tag",
            Some(json!({"type": "matchRepository"})),
            v2.clone(),
            v1.clone(),
        ),
        (
            "matchRepository, name only signed",
            Some(json!({"type": "matchRepository"})),
            name_only.clone(),
            v1.clone(),
        ),
        (
            "exactReference, matching",
            Some(json!({"type": "exactReference", "dockerReference": v1})),
            v1.clone(),
            v2.clone(),
        ),
        (
            "exactReference, not matching",
            Some(json!({"type": "exactReference", "dockerReference": v2})),
            v1.clone(),
            v1.clone(),
        ),
        (
            "exactRepository, Docker Hub signed as docker.io",
            Some(json!({"type": "exactRepository", "dockerRepository": "docker.io/library/app"})),
            "docker.io/library/app:v1".to_string(),
            v1.clone(),
        ),
        (
            "exactRepository, Docker Hub signed as a short name",
            Some(json!({"type": "exactRepository", "dockerRepository": "app"})),
            "app:v1".to_string(),
            v1.clone(),
        ),
        (
            "exactRepository, Docker Hub signed as index.docker.io",
            Some(json!({"type": "exactRepository", "dockerRepository": "docker.io/library/app"})),
            "index.docker.io/library/app:v1".to_string(),
            v1.clone(),
        ),
        (
            "exactRepository, Docker Hub signed as registry-1.docker.io",
            Some(json!({"type": "exactRepository", "dockerRepository": "docker.io/library/app"})),
            "registry-1.docker.io/library/app:v1".to_string(),
            v1.clone(),
        ),
        (
            "remapIdentity, remapped",
            Some(
                json!({"type": "remapIdentity", "prefix": format!("{reg}/conformance"), "signedPrefix": "registry.example/ocp"}),
            ),
            "registry.example/ocp/app:v1".to_string(),
            v1.clone(),
        ),
        (
            "remapIdentity, prefix not at a path boundary",
            Some(
                json!({"type": "remapIdentity", "prefix": format!("{reg}/conf"), "signedPrefix": "registry.example/ocp"}),
            ),
            "registry.example/ocpormance/app:v1".to_string(),
            v1.clone(),
        ),
        (
            "remapIdentity, prefix not matching keeps the identity",
            Some(
                json!({"type": "remapIdentity", "prefix": "registry.other/x", "signedPrefix": "registry.example/ocp"}),
            ),
            v1.clone(),
            v1.clone(),
        ),
        (
            "remapIdentity, by digest",
            Some(
                json!({"type": "remapIdentity", "prefix": format!("{reg}/conformance"), "signedPrefix": "registry.example/ocp"}),
            ),
            "registry.example/ocp/app:anything".to_string(),
            by_digest.clone(),
        ),
        (
            "invalid signed identity",
            None,
            "Not A/Reference".to_string(),
            v1.clone(),
        ),
    ] {
        case(
            name,
            by_good(identity),
            vec![sign_good(&payload(&digest, &signed))],
            &image,
        );
    }

    // --- policy scopes
    let scoped = |scopes: Value| {
        json!({"default": [{"type": "reject"}], "transports": {"docker": scopes}}).to_string()
    };
    let ok = json!([{"type": "insecureAcceptAnything"}]);
    let no = json!([{"type": "reject"}]);
    let host = reg.split(':').next().unwrap().to_string();
    let last_labels = host.split_once('.').map(|(_, r)| format!("*.{r}")).unwrap();
    for (name, scopes, image) in [
        (
            "scope host/repo:tag",
            json!({v1.clone(): ok, app.clone(): no}),
            v1.clone(),
        ),
        (
            "scope host/repo:tag, other tag",
            json!({v2.clone(): ok}),
            v1.clone(),
        ),
        (
            "scope host/repo@digest",
            json!({by_digest.clone(): ok, app.clone(): no}),
            by_digest.clone(),
        ),
        (
            "scope host/repo",
            json!({app.clone(): ok, format!("{reg}/conformance"): no}),
            v1.clone(),
        ),
        (
            "scope namespace",
            json!({format!("{reg}/conformance"): ok, reg.clone(): no}),
            v1.clone(),
        ),
        ("scope host:port", json!({reg.clone(): ok}), v1.clone()),
        (
            "scope host without port",
            json!({host.clone(): ok}),
            v1.clone(),
        ),
        (
            "scope wildcard domain",
            json!({last_labels.clone(): ok}),
            v1.clone(),
        ),
        ("scope empty string", json!({"": ok}), v1.clone()),
        (
            "scope of another repository",
            json!({format!("{reg}/conformance/other"): ok}),
            v1.clone(),
        ),
        (
            "scope prefix that is no path component",
            json!({format!("{reg}/conf"): ok}),
            v1.clone(),
        ),
    ] {
        case(name, scoped(scopes), vec![], &image);
    }

    // --- registries.d and the lookaside store
    let mut lookaside = |name: &str, files: Vec<(&'static str, String)>, sigs: Vec<Vec<u8>>| {
        cases.push(Case {
            name: name.to_string(),
            policy: by_good(None),
            registries_d: Some(files),
            signatures: vec![(repo.clone(), digest.clone(), sigs)],
            image: v1.clone(),
            registries_conf: plain_conf.clone(),
            newer: None,
        });
    };
    let ns =
        |scope: &str, key: &str| format!("docker:\n  {scope}:\n    {key}: file://{LOOKASIDE}\n");
    for (name, file, text) in [
        (
            "registries.d: namespace of the repository",
            "a.yaml",
            ns(&app, "lookaside"),
        ),
        (
            "registries.d: old key name sigstore",
            "a.yaml",
            ns(&app, "sigstore"),
        ),
        (
            "registries.d: host/repo:tag namespace",
            "a.yaml",
            ns(&v1, "lookaside"),
        ),
        (
            "registries.d: wildcard namespace",
            "a.yaml",
            ns(&last_labels, "lookaside"),
        ),
        (
            "registries.d: .yml files are not read",
            "a.yml",
            ns(&app, "lookaside"),
        ),
    ] {
        lookaside(name, vec![(file, text)], vec![sig_good.clone()]);
    }
    lookaside(
        "registries.d: a namespace in two files",
        vec![
            ("a.yaml", ns(&app, "lookaside")),
            ("b.yaml", ns(&app, "lookaside")),
        ],
        vec![sig_good.clone()],
    );
    lookaside(
        "registries.d: default-docker in two files",
        vec![
            (
                "a.yaml",
                format!("default-docker:\n  lookaside: file://{LOOKASIDE}\n"),
            ),
            (
                "b.yaml",
                format!("default-docker:\n  lookaside: file://{LOOKASIDE}\n"),
            ),
        ],
        vec![sig_good.clone()],
    );
    lookaside(
        "registries.d: a namespace without lookaside falls through",
        vec![(
            "a.yaml",
            format!("docker:\n  {app}:\n    lookaside-staging: file:///nowhere\n  {reg}:\n    lookaside: file://{LOOKASIDE}\n"),
        )],
        vec![sig_good.clone()],
    );
    lookaside(
        "registries.d: unknown keys are ignored",
        vec![(
            "a.yaml",
            format!("default-docker:\n  lookaside: file://{LOOKASIDE}\n  colour: blue\n"),
        )],
        vec![sig_good.clone()],
    );
    lookaside(
        "registries.d: no lookaside for the image",
        vec![("a.yaml", ns(&format!("{reg}/elsewhere"), "lookaside"))],
        vec![sig_good.clone()],
    );
    let mut not_a_signature = b"this is no signature".to_vec();
    not_a_signature.push(b'\n');
    lookaside(
        "lookaside: a file in no signature format, then a valid one",
        vec![("a.yaml", ns(&app, "lookaside"))],
        vec![not_a_signature, sig_good.clone()],
    );
    lookaside(
        "lookaside: an empty file",
        vec![("a.yaml", ns(&app, "lookaside"))],
        vec![vec![]],
    );
    let mut prefixed = b"\x00simple-signing\n".to_vec();
    prefixed.extend_from_slice(&sig_good);
    lookaside(
        "lookaside: the prefixed simple signing format",
        vec![("a.yaml", ns(&app, "lookaside"))],
        vec![prefixed.clone()],
    );
    prefixed.splice(1..15, b"atomic".iter().copied());
    lookaside(
        "lookaside: a prefixed format of another name",
        vec![("a.yaml", ns(&app, "lookaside"))],
        vec![prefixed],
    );
    lookaside(
        "lookaside: an unknown prefixed format",
        vec![("a.yaml", ns(&app, "lookaside"))],
        vec![b"\x00sigstore-yaml\nx".to_vec(), sig_good.clone()],
    );

    // --- mirrors: the policy judges the image asked for; signatures are where the
    // registry that served it keeps them.
    let src = format!("{reg}/conformance/src");
    let mirror_conf = format!(
        "[[registry]]\nlocation = \"{src}\"\ninsecure = true\n\n[[registry.mirror]]\nlocation = \"{app}\"\ninsecure = true\n"
    );
    let src_digest = format!("{src}@{digest}");
    let src_signed = sign_good(&payload(&digest, &format!("{src}:v1")));
    for (name, files, sig_repo, sig) in [
        (
            "mirror: lookaside for the mirror's repository",
            vec![("a.yaml", ns(&app, "lookaside"))],
            repo.clone(),
            src_signed.clone(),
        ),
        (
            "mirror: lookaside for the source's repository only",
            vec![("a.yaml", ns(&src, "lookaside"))],
            "conformance/src".to_string(),
            src_signed.clone(),
        ),
        (
            "mirror: default lookaside, signature under the mirror's path",
            vec![(
                "a.yaml",
                format!("default-docker:\n  lookaside: file://{LOOKASIDE}\n"),
            )],
            repo.clone(),
            src_signed.clone(),
        ),
        (
            "mirror: default lookaside, signature under the source's path",
            vec![(
                "a.yaml",
                format!("default-docker:\n  lookaside: file://{LOOKASIDE}\n"),
            )],
            "conformance/src".to_string(),
            src_signed.clone(),
        ),
        (
            "mirror: signature of the mirror's identity",
            vec![("a.yaml", ns(&app, "lookaside"))],
            repo.clone(),
            sig_good.clone(),
        ),
    ] {
        cases.push(Case {
            name: name.to_string(),
            policy: by_good(None),
            registries_d: Some(files),
            signatures: vec![(sig_repo, digest.clone(), vec![sig])],
            image: src_digest.clone(),
            registries_conf: mirror_conf.clone(),
            newer: None,
        });
    }
    cases.push(Case {
        name: "mirror: policy scope of the mirror does not apply".into(),
        policy: scoped(json!({app.clone(): ok})),
        registries_d: None,
        signatures: vec![],
        image: src_digest.clone(),
        registries_conf: mirror_conf.clone(),
        newer: None,
    });
    cases.push(Case {
        name: "mirror: policy scope of the source applies".into(),
        policy: scoped(json!({src.clone(): ok})),
        registries_d: None,
        signatures: vec![],
        image: src_digest.clone(),
        registries_conf: mirror_conf.clone(),
        newer: None,
    });

    cases.extend(list_cases);

    // --- run both tools on every case
    let mut divergences = Vec::new();
    let (mut accepted, mut refused) = (0, 0);
    for (i, c) in cases.iter().enumerate() {
        let cdir = dir.join(format!("case-{i}"));
        let lookaside = cdir.join("lookaside");
        for (path, at_digest, sigs) in &c.signatures {
            let at = lookaside.join(format!(
                "{path}@sha256={}",
                at_digest.trim_start_matches("sha256:")
            ));
            fs::create_dir_all(&at).unwrap();
            for (n, s) in sigs.iter().enumerate() {
                fs::write(at.join(format!("signature-{}", n + 1)), s).unwrap();
            }
        }
        let regd = cdir.join("registries.d");
        fs::create_dir_all(&regd).unwrap();
        let files = c.registries_d.clone().unwrap_or_else(|| {
            vec![(
                "default.yaml",
                format!("default-docker:\n  lookaside: file://{LOOKASIDE}\n"),
            )]
        });
        for (name, text) in files {
            fs::write(
                regd.join(name),
                text.replace(LOOKASIDE, lookaside.to_str().unwrap()),
            )
            .unwrap();
        }
        let policy = cdir.join("policy.json");
        fs::write(&policy, &c.policy).unwrap();
        let conf = cdir.join("registries.conf");
        fs::write(&conf, &c.registries_conf).unwrap();
        let home = cdir.join("home");
        fs::create_dir_all(&home).unwrap();

        let skopeo = outcome(
            Command::new("skopeo")
                .env("HOME", &home)
                .arg("--registries-conf")
                .arg(&conf)
                .args(["copy", "-q", "--src-tls-verify=false"])
                .arg("--policy")
                .arg(&policy)
                .arg("--registries.d")
                .arg(&regd)
                .arg(format!("docker://{}", c.image))
                .arg(format!("dir:{}", cdir.join("skopeo-out").display()))
                .output()
                .unwrap(),
        );
        let image = format!("docker://{}", c.image);
        let cache = cdir.join("cache");
        let ours = outcome(
            sb.bin(&[
                "pull",
                "--image",
                &image,
                "--tls-verify=false",
                "-q",
                "--signature-policy",
                policy.to_str().unwrap(),
                "--registries.d",
                regd.to_str().unwrap(),
                "--registries-conf",
                conf.to_str().unwrap(),
                "--cache-dir",
                cache.to_str().unwrap(),
            ])
            .env("HOME", &home)
            .run()
            .into_output(),
        );
        let expected = match c.newer {
            Some((accepts, _)) => accepts,
            None => skopeo.0,
        };
        if let Some((accepts, since)) = c.newer {
            // The difference is real: skopeo decides the other way.
            if skopeo.0 == accepts {
                divergences.push(format!(
                    "{}: marked as changed in {since}, but skopeo already decides so",
                    c.name
                ));
            }
        }
        if ours.0 != expected {
            divergences.push(format!(
                "{}: containers/image {}, mcd-inject {}\n    skopeo: {}\n    mcd-inject: {}",
                c.name,
                if expected { "accepts" } else { "refuses" },
                if ours.0 { "accepts" } else { "refuses" },
                skopeo.1,
                ours.1
            ));
        }
        // A refusal is the policy's, not a fault of the case.
        if !ours.0 && !ours.1.contains("signature policy") {
            divergences.push(format!(
                "{}: mcd-inject failed for another reason: {}",
                c.name, ours.1
            ));
        }
        if expected {
            accepted += 1;
        } else {
            refused += 1;
        }
    }
    assert!(
        divergences.is_empty(),
        "{} of {} cases diverge from containers/image:\n  {}",
        divergences.len(),
        cases.len(),
        divergences.join("\n  ")
    );
    eprintln!(
        "{} cases, as containers/image decides them: {accepted} accepted, {refused} refused",
        cases.len()
    );
    // Both outcomes are exercised, broadly.
    assert!(
        accepted >= 20 && refused >= 40,
        "accepted {accepted}, refused {refused}"
    );
}

fn base64_of(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// Images read from disk (`oci:`, `oci-archive:`, `docker-archive:`): their transports'
/// scopes (paths and their parents), `""`, `default`; they carry no signatures, so only
/// `insecureAcceptAnything` lets them through. Invalid scopes of these transports make the
/// whole policy invalid.
#[test]
fn local_images_are_judged_as_containers_image_judges_them() {
    require_tools(&["skopeo"]);
    let sb = Sandbox::new();
    let dir = sb.path("local");
    fs::create_dir_all(&dir).unwrap();
    let small = fixture("mco-small");
    let layout = fs::canonicalize(small.location("oci")).unwrap();
    let parent = layout.parent().unwrap().display().to_string();
    let oci = layout.display().to_string();
    let ok = json!([{"type": "insecureAcceptAnything"}]);
    let no = json!([{"type": "reject"}]);
    let signed = json!([{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/dev/null"}]);
    let with = |default: &Value, transports: Value| {
        json!({"default": default, "transports": transports}).to_string()
    };
    let cases: Vec<(&str, &str, String)> = vec![
        ("oci, default accepts", "oci", with(&ok, json!({}))),
        ("oci, default rejects", "oci", with(&no, json!({}))),
        (
            "oci, \"\" accepts",
            "oci",
            with(&no, json!({"oci": {"": ok}})),
        ),
        (
            "oci, the layout's scope rejects",
            "oci",
            with(&ok, json!({"oci": {oci.clone(): no}})),
        ),
        (
            "oci, the parent's scope rejects",
            "oci",
            with(&ok, json!({"oci": {parent.clone(): no}})),
        ),
        (
            "oci, the layout's scope accepts",
            "oci",
            with(&no, json!({"oci": {oci.clone(): ok, parent.clone(): no}})),
        ),
        ("oci, signedBy", "oci", with(&signed, json!({}))),
        (
            "oci, a relative scope",
            "oci",
            with(&ok, json!({"oci": {"relative/dir": ok}})),
        ),
        (
            "oci, a scope with a trailing slash",
            "oci",
            with(&ok, json!({"oci": {format!("{oci}/"): ok}})),
        ),
        (
            "oci, the root as a scope",
            "oci",
            with(&ok, json!({"oci": {"/": ok}})),
        ),
        (
            "oci, docker scopes do not apply",
            "oci",
            with(&no, json!({"docker": {"": ok}})),
        ),
        (
            "docker-archive, \"\" accepts",
            "docker-archive",
            with(&no, json!({"docker-archive": {"": ok}})),
        ),
        (
            "docker-archive, default rejects",
            "docker-archive",
            with(&no, json!({})),
        ),
        (
            "docker-archive, a named scope",
            "docker-archive",
            with(&ok, json!({"docker-archive": {"/x": ok}})),
        ),
        (
            "oci-archive, \"\" rejects",
            "oci-archive",
            with(&ok, json!({"oci-archive": {"": no}})),
        ),
        (
            "oci-archive, the archive's directory accepts",
            "oci-archive",
            with(
                &no,
                json!({"oci-archive": {
            fs::canonicalize(small.location("oci-archive")).unwrap().parent().unwrap().display().to_string(): ok}}),
            ),
        ),
        (
            "another transport's invalid scope",
            "oci",
            with(&ok, json!({"dir": {"relative": ok}})),
        ),
        (
            "docker-daemon, a digest as scope",
            "oci",
            with(
                &ok,
                json!({"docker-daemon": {
            "sha256:2222222222222222222222222222222222222222222222222222222222222222": ok}}),
            ),
        ),
        (
            "containers-storage, a scope without a store",
            "oci",
            with(&ok, json!({"containers-storage": {"busybox": ok}})),
        ),
        (
            "containers-storage, a valid scope",
            "oci",
            with(
                &ok,
                json!({"containers-storage": {"[overlay@/var/lib/containers/storage]busybox": no}}),
            ),
        ),
    ];
    let mut divergences = Vec::new();
    for (i, (name, transport, policy_text)) in cases.iter().enumerate() {
        let policy = dir.join(format!("policy-{i}.json"));
        fs::write(&policy, policy_text).unwrap();
        let reference = small.reference(transport);
        let skopeo = outcome(
            Command::new("skopeo")
                .env("HOME", sb.path("home"))
                .args(["copy", "-q", "--policy"])
                .arg(&policy)
                .arg(&reference)
                .arg(format!("dir:{}", dir.join(format!("out-{i}")).display()))
                .output()
                .unwrap(),
        );
        let ours = outcome(sb.run(&[
            "inspect",
            "--image",
            &reference,
            "--signature-policy",
            policy.to_str().unwrap(),
        ]));
        if skopeo.0 != ours.0 {
            divergences.push(format!(
                "{name}: skopeo {}, mcd-inject {}\n    skopeo: {}\n    mcd-inject: {}",
                if skopeo.0 { "accepts" } else { "refuses" },
                if ours.0 { "accepts" } else { "refuses" },
                skopeo.1,
                ours.1
            ));
        } else if !ours.0 && !ours.1.contains("signature policy") {
            divergences.push(format!(
                "{name}: mcd-inject failed for another reason: {}",
                ours.1
            ));
        }
    }
    assert!(
        divergences.is_empty(),
        "{} of {} cases diverge from containers/image:\n  {}",
        divergences.len(),
        cases.len(),
        divergences.join("\n  ")
    );
}
