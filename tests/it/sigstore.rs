//! `sigstoreSigned` policies against a real registry (distribution 2.8 over TLS with
//! Basic auth, from `scripts/registry-services.sh`), through the CLI as a user runs it.
//!
//! The signatures are made here in the format cosign and containers/image write: an
//! ECDSA P-256 key pair, the payload `{"critical":{"identity":{"docker-reference":...},
//! "image":{"docker-manifest-digest":...},"type":"cosign container image signature"},
//! "optional":...}` as a layer of media type
//! `application/vnd.dev.cosign.simplesigning.v1+json` whose annotation
//! `dev.cosignproject.cosign/signature` is the base64 DER signature of the layer, in an
//! OCI manifest pushed to the tag `sha256-HEX.sig` of the image's repository. What is
//! checked here is what mcd-inject says (each refusal's reason, the function of
//! containers/image that gives it named in a comment), the cache and offline runs, the
//! bounds and the lookaside store; containers/image itself (trixie's skopeo) judges the
//! verdicts of these kinds of cases, and many more, in `sigstore_conformance.rs`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::EncodePublicKey as _;
use serde_json::{json, Value};

use crate::harness::registry::{registries, Registries, Sandbox};
use crate::harness::{require_tools, run_ok, sha256_hex};

const SIG_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
const SIG_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

pub(crate) fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(crate) fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

/// A cosign key pair from a fixed scalar, its public key written as PEM to `dir`.
pub(crate) fn key_pair(dir: &Path, seed: u8) -> (p256::ecdsa::SigningKey, PathBuf) {
    let sk = p256::ecdsa::SigningKey::from_slice(&[seed; 32]).unwrap();
    let pem = sk
        .verifying_key()
        .to_public_key_pem(p256::pkcs8::LineEnding::LF)
        .unwrap();
    let path = dir.join(format!("cosign-{seed}.pub"));
    fs::write(&path, pem).unwrap();
    (sk, path)
}

/// The payload cosign signs (`optional` as cosign writes it without annotations).
pub(crate) fn payload(digest: &str, reference: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "critical": {
            "identity": {"docker-reference": reference},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature"
        },
        "optional": null
    }))
    .unwrap()
}

/// One signature layer: (payload, base64 signature).
pub(crate) fn sign(sk: &p256::ecdsa::SigningKey, payload: &[u8]) -> (Vec<u8>, String) {
    let sig: p256::ecdsa::Signature = sk.sign(payload);
    (payload.to_vec(), b64(sig.to_der().as_bytes()))
}

/// A registry of the suite (the TLS one with Basic auth, or the anonymous plain HTTP
/// one), reached with curl as a client pushing artifacts would.
pub(crate) struct Registry<'a> {
    r: &'a Registries,
    dir: &'a Path,
    anon: bool,
}

impl<'a> Registry<'a> {
    /// The TLS registry with Basic auth; `dir` holds the files curl sends.
    pub(crate) fn basic(r: &'a Registries, dir: &'a Path) -> Self {
        Registry {
            r,
            dir,
            anon: false,
        }
    }

    /// The anonymous plain HTTP registry.
    pub(crate) fn anon(r: &'a Registries, dir: &'a Path) -> Self {
        Registry { r, dir, anon: true }
    }

    /// The registry's base URL.
    fn base(&self) -> String {
        if self.anon {
            format!("http://{}", self.r.anon)
        } else {
            format!("https://{}", self.r.basic)
        }
    }

    fn curl(&self) -> Command {
        let mut c = Command::new("curl");
        c.args(["-sS", "--fail"]);
        if !self.anon {
            c.arg("--cacert")
                .arg(Path::new(&self.r.ca_dir).join("ca.crt"))
                .args([
                    "-u",
                    &format!("{}:{}", self.r.basic_user, self.r.basic_password),
                ]);
        }
        c
    }

    pub(crate) fn push_blob(&self, repo: &str, bytes: &[u8]) -> String {
        let digest = digest_of(bytes);
        let out = run_ok(
            self.curl()
                .args(["-X", "POST", "-D", "-", "-o", "/dev/null"])
                .arg(format!("{}/v2/{repo}/blobs/uploads/", self.base())),
        );
        let headers = String::from_utf8(out.stdout).unwrap();
        let location = headers
            .lines()
            .find_map(|l| {
                l.split_once(':')
                    .filter(|(k, _)| k.eq_ignore_ascii_case("location"))
                    .map(|(_, v)| v.trim().to_string())
            })
            .expect("a Location header");
        let location = if location.starts_with("http") {
            location
        } else {
            format!("{}{location}", self.base())
        };
        let file = self.dir.join("blob");
        fs::write(&file, bytes).unwrap();
        let sep = if location.contains('?') { '&' } else { '?' };
        run_ok(
            self.curl()
                .args(["-X", "PUT", "-H", "Content-Type: application/octet-stream"])
                .arg("--data-binary")
                .arg(format!("@{}", file.display()))
                .arg(format!("{location}{sep}digest={digest}")),
        );
        digest
    }

    fn put_manifest(&self, repo: &str, tag: &str, media_type: &str, bytes: &[u8]) {
        let file = self.dir.join("manifest");
        fs::write(&file, bytes).unwrap();
        run_ok(
            self.curl()
                .args(["-X", "PUT", "-H", &format!("Content-Type: {media_type}")])
                .arg("--data-binary")
                .arg(format!("@{}", file.display()))
                .arg(format!("{}/v2/{repo}/manifests/{tag}", self.base())),
        );
    }

    /// Attaches these signature layers to `digest` in `repo`, as cosign does (the tag
    /// `sha256-HEX.sig`, replacing what was there); `extra` layers are added as they are.
    pub(crate) fn attach(
        &self,
        repo: &str,
        digest: &str,
        sigs: &[(Vec<u8>, String)],
        extra: &[Value],
    ) {
        let layers: Vec<(Vec<u8>, Value)> = sigs
            .iter()
            .map(|(payload, sig)| (payload.clone(), json!({SIG_ANNOTATION: sig})))
            .collect();
        self.attach_layers(repo, digest, &layers, extra);
    }

    /// Attaches signature layers, each a payload with all its annotations (a keyless
    /// signature's certificate, chain and Rekor bundle beside the signature).
    pub(crate) fn attach_layers(
        &self,
        repo: &str,
        digest: &str,
        sigs: &[(Vec<u8>, Value)],
        extra: &[Value],
    ) {
        let mut layers = Vec::new();
        for (payload, annotations) in sigs {
            let d = self.push_blob(repo, payload);
            layers.push(
                json!({"mediaType": SIG_MEDIA_TYPE, "size": payload.len(), "digest": d,
                               "annotations": annotations}),
            );
        }
        layers.extend(extra.iter().cloned());
        let config = serde_json::to_vec(&json!({
            "architecture": "", "os": "", "config": {},
            "rootfs": {"type": "layers", "diff_ids": layers.iter().map(|l| l["digest"].clone()).collect::<Vec<_>>()}
        }))
        .unwrap();
        let config_digest = self.push_blob(repo, &config);
        let manifest = serde_json::to_vec(&json!({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "size": config.len(), "digest": config_digest},
            "layers": layers
        }))
        .unwrap();
        let tag = format!("sha256-{}.sig", digest.trim_start_matches("sha256:"));
        self.put_manifest(repo, &tag, OCI_MANIFEST, &manifest);
    }
}

/// A GnuPG key (home, fingerprint, armored public key), as the release tests make them.
fn gpg_key(dir: &Path) -> (PathBuf, String, PathBuf) {
    crate::harness::gpg::signing_key(dir, "signer")
}

pub(crate) struct Case<'a> {
    pub sb: Sandbox,
    pub image: String,
    pub auth: String,
    pub ca: &'a str,
    /// More options (a registries.conf).
    pub extra: Vec<String>,
}

impl Case<'_> {
    fn args<'b>(
        &'b self,
        cmd: &'b str,
        policy: &'b str,
        regd: &'b str,
        more: &[&'b str],
    ) -> Vec<&'b str> {
        let mut v = vec![
            cmd,
            "--image",
            &self.image,
            "--authfile",
            &self.auth,
            "--cert-dir",
            self.ca,
            "--signature-policy",
            policy,
            "--registries.d",
            regd,
        ];
        v.extend(self.extra.iter().map(String::as_str));
        v.extend(more);
        v
    }

    /// `inject` with this policy: the config is written.
    pub(crate) fn accepted(&self, policy: &str, regd: &str) {
        self.accepted_with(policy, regd, &[]);
    }

    /// `inject` with this policy and more options (`--image-policy FILE`): the config is
    /// written.
    pub(crate) fn accepted_with(&self, policy: &str, regd: &str, more: &[&str]) {
        let ign = self.sb.path("out.ign");
        let _ = fs::remove_file(&ign);
        let ign_s = ign.display().to_string();
        let mut args = self.args("inject", policy, regd, more);
        args.extend(["--bootimage", "4.2", "--ign", &ign_s]);
        self.sb.ok(&args);
        let v: Value = serde_json::from_slice(&fs::read(&ign).unwrap()).unwrap();
        assert!(v["storage"]["files"]
            .as_array()
            .is_some_and(|f| !f.is_empty()));
    }

    /// `extract` with this policy: refused (exit 1), the policy named; the message.
    pub(crate) fn refused(&self, policy: &str, regd: &str) -> String {
        self.refused_with(policy, regd, &[])
    }

    /// `extract` with this policy and more options: refused (exit 1); the message.
    pub(crate) fn refused_with(&self, policy: &str, regd: &str, more: &[&str]) -> String {
        let out_file = self.sb.path("extracted").display().to_string();
        let mut args = self.args("extract", policy, regd, more);
        args.extend(["--path", "/usr/bin/machine-config-daemon", "-o", &out_file]);
        let out = self.sb.run(&args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "not refused:\n{err}");
        assert!(!self.sb.path("extracted").exists());
        assert!(!err.contains("backtrace"), "{err}");
        err
    }
}

/// A sandbox with its work directory, and the `mco-small` fixture pushed by skopeo to a
/// repository of its own on the TLS registry, `PREFIX-UNIQ/mco:v1`: the digest is what
/// signatures name.
pub(crate) struct Pushed {
    pub sb: Sandbox,
    pub dir: PathBuf,
    pub uniq: String,
    pub repo: String,
    pub image: String,
    pub digest: String,
}

/// Pushes the `mco-small` fixture with skopeo to `to` on the TLS registry: its digest.
pub(crate) fn push_fixture(r: &Registries, to: &str) -> String {
    let digestfile = tempfile::NamedTempFile::new().unwrap();
    run_ok(
        Command::new("skopeo")
            .args(["copy", "-q", "--dest-cert-dir", &r.ca_dir, "--dest-creds"])
            .arg(format!("{}:{}", r.basic_user, r.basic_password))
            .arg("--digestfile")
            .arg(digestfile.path())
            .arg(format!(
                "oci:{}:latest",
                r.fixtures.join("layouts/mco-small").display()
            ))
            .arg(format!("docker://{to}")),
    );
    fs::read_to_string(digestfile.path())
        .unwrap()
        .trim()
        .to_string()
}

/// A sandbox, its work directory `prefix`, and a name unique to it (for repositories).
pub(crate) fn sandbox(prefix: &str) -> (Sandbox, PathBuf, String) {
    let sb = Sandbox::new();
    let dir = sb.path(prefix);
    fs::create_dir_all(&dir).unwrap();
    let uniq = dir
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_lowercase()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "");
    (sb, dir, uniq)
}

/// A registries.d directory `dir` whose `default.yaml` is `yaml`: its path.
pub(crate) fn registries_d(dir: &Path, yaml: &str) -> String {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("default.yaml"), yaml).unwrap();
    dir.display().to_string()
}

pub(crate) fn pushed(r: &Registries, prefix: &str) -> Pushed {
    let (sb, dir, uniq) = sandbox(prefix);
    let repo = format!("{prefix}-{uniq}/mco");
    let image = format!("{}/{repo}:v1", r.basic);
    let digest = push_fixture(r, &image);
    Pushed {
        sb,
        dir,
        uniq,
        repo,
        image,
        digest,
    }
}

#[test]
fn sigstore_signed_policies_on_a_registry() {
    require_tools(&["skopeo", "curl", "gpg"]);
    let r = registries();
    let Pushed {
        sb,
        dir,
        uniq,
        repo,
        image,
        digest,
    } = pushed(&r, "sigstore");
    let reg = Registry::basic(&r, &dir);

    let (key, key_pub) = key_pair(&dir, 7);
    let (other_key, other_pub) = key_pair(&dir, 9);
    let write = |name: &str, body: &str| {
        let p = dir.join(name);
        fs::write(&p, body).unwrap();
        p.display().to_string()
    };
    let policy = |name: &str, req: Value| {
        write(
            name,
            &json!({"default": [{"type": "insecureAcceptAnything"}],
                    "transports": {"docker": {format!("{}/sigstore-{uniq}", r.basic): [req]}}})
            .to_string(),
        )
    };
    let sigstore_policy = policy(
        "sigstore.json",
        json!({"type": "sigstoreSigned", "keyPath": key_pub}),
    );
    let regd_dir = |name: &str, yaml: &str| registries_d(&dir.join(name), yaml);
    let attachments = regd_dir(
        "registries.d",
        &format!(
            "docker:\n  {}/sigstore-{uniq}:\n    use-sigstore-attachments: true\n",
            r.basic
        ),
    );
    let mut case = Case {
        extra: Vec::new(),
        auth: sb
            .write_auth("auth.json", &r.basic, &r.basic_user, &r.basic_password)
            .display()
            .to_string(),
        sb,
        image: image.clone(),
        ca: &r.ca_dir,
    };

    // Unsigned: no sha256-HEX.sig tag (a 404, getSigstoreAttachmentManifest gives no
    // manifest) and isRunningImageAllowed: "A signature was required, but no signature
    // exists".
    let err = case.refused(&sigstore_policy, &attachments);
    assert!(
        err.contains("refused by the signature policy")
            && err.contains("a sigstore signature was required, but none was found")
            && err.contains(&format!(
                "has no tag sha256-{}.sig",
                digest.trim_start_matches("sha256:")
            )),
        "{err}"
    );

    // Valid: accepted (VerifySigstorePayload passes: key, digest, identity).
    let good = sign(&key, &payload(&digest, &image));
    reg.attach(&repo, &digest, std::slice::from_ref(&good), &[]);
    case.accepted(&sigstore_policy, &attachments);
    // keyData and keyPaths, the other key kinds, identities, mirrors: the verdicts are
    // containers/image's in sigstore_conformance.rs; here, what the messages say.
    // The same signature, attachments not enabled for the repository: none is read
    // (useSigstoreAttachments defaults to false).
    let no_attachments = regd_dir(
        "registries.d-off",
        "default-docker:\n  use-sigstore-attachments: false\n",
    );
    let err = case.refused(&sigstore_policy, &no_attachments);
    assert!(
        err.contains("none was found")
            && err.contains("does not set use-sigstore-attachments: true"),
        "{err}"
    );

    // Refused, each with containers/image's reason. Signature checks:
    // verifySigstorePayloadBlobSignature ("cryptographic signature verification
    // failed"); digest: ValidateSignedDockerManifestDigest in
    // prSigstoreSigned.isSignatureAccepted; identity: ValidateSignedDockerReference
    // (signedIdentity.matchesDockerReference, matchRepoDigestOrExact by default).
    let other_digest = digest_of(b"another image's manifest");
    let mut tampered_sig = good.clone();
    {
        let mut raw = base64::engine::general_purpose::STANDARD
            .decode(&tampered_sig.1)
            .unwrap();
        let n = raw.len();
        raw[n - 4] ^= 0x20;
        tampered_sig.1 = b64(&raw);
    }
    let mut tampered_payload = good.clone();
    tampered_payload.0 = payload(&digest, &format!("{}/{repo}:v2", r.basic));
    for (name, sig, want) in [
        (
            "wrong key",
            sign(&other_key, &payload(&digest, &image)),
            "cryptographic signature verification failed",
        ),
        (
            "another image's signature",
            sign(&key, &payload(&other_digest, &image)),
            "it signs manifest",
        ),
        (
            "tampered signature",
            tampered_sig,
            "cryptographic signature verification failed",
        ),
        (
            "tampered payload",
            tampered_payload,
            "cryptographic signature verification failed",
        ),
        (
            "identity mismatch",
            sign(&key, &payload(&digest, &format!("{}/{repo}:v2", r.basic))),
            "which signedIdentity does not accept",
        ),
    ] {
        reg.attach(&repo, &digest, &[sig], &[]);
        let err = case.refused(&sigstore_policy, &attachments);
        assert!(
            err.contains("no sigstore signature is acceptable") && err.contains(want),
            "{name}: {err}"
        );
    }

    // Several signatures, one valid (after a bad one and an attestation that is not a
    // signature): isRunningImageAllowed, "One accepted signature is enough".
    let attestation = b"{\"an\":\"attestation\"}";
    let att_digest = reg.push_blob(&repo, attestation);
    reg.attach(
        &repo,
        &digest,
        &[sign(&other_key, &payload(&digest, &image)), good.clone()],
        &[json!({"mediaType": "application/vnd.dsse.envelope.v1+json",
                 "size": attestation.len(), "digest": att_digest})],
    );
    case.accepted(&sigstore_policy, &attachments);

    // `pull` keeps the attachments in the cache: `--offline` runs check them from there.
    case.sb
        .ok(&case.args("pull", &sigstore_policy, &attachments, &[]));
    case.extra = vec!["--offline".into()];
    case.accepted(&sigstore_policy, &attachments);
    // Online the attachment is now a single good signature; offline the two cached
    // ones are read, and the first, by the other key, satisfies a policy for that key.
    reg.attach(&repo, &digest, std::slice::from_ref(&good), &[]);
    let other_policy = policy(
        "other-key.json",
        json!({"type": "sigstoreSigned", "keyPath": other_pub}),
    );
    case.accepted(&other_policy, &attachments);
    let (_, third_pub) = key_pair(&dir, 11);
    let third_policy = policy(
        "third-key.json",
        json!({"type": "sigstoreSigned", "keyPath": third_pub}),
    );
    let err = case.refused(&third_policy, &attachments);
    assert!(
        err.contains("no sigstore signature is acceptable") && err.contains("layer 2"),
        "offline, the cached attachments (two signatures) are read: {err}"
    );
    case.extra.clear();
    let err = case.refused(&other_policy, &attachments);
    assert!(err.contains("no sigstore signature is acceptable"), "{err}");

    // Every attachment is read before any is judged (GetSignaturesWithFormat): one that
    // cannot be read (here an attestation over the 4 MiB a signature may have, which
    // getOCIDescriptorContents refuses) refuses the image, although a good signature
    // comes first.
    let big = vec![b'x'; 5 * 1024 * 1024];
    let big_digest = reg.push_blob(&repo, &big);
    reg.attach(
        &repo,
        &digest,
        std::slice::from_ref(&good),
        &[json!({"mediaType": "application/vnd.dsse.envelope.v1+json",
                 "size": big.len(), "digest": big_digest})],
    );
    let err = case.refused(&sigstore_policy, &attachments);
    assert!(
        err.contains("reading the image's signatures") && err.contains("layer 2"),
        "{err}"
    );

    // A simple signing (GPG) signature where sigstore is required, and the other way
    // round. A lookaside store holds a real `skopeo standalone-sign` signature (accepted
    // by a signedBy policy: it is a good one); prSigstoreSigned.isRunningImageAllowed
    // skips it (not a signature.Sigstore) and prSignedBy.isRunningImageAllowed skips
    // sigstore attachments, each then finding no signature.
    reg.attach(&repo, &digest, &[], &[]);
    let (home, fpr, gpg_pub) = gpg_key(&dir);
    let raw = run_ok(
        Command::new("skopeo")
            .args(["inspect", "--raw", "--cert-dir", &r.ca_dir, "--creds"])
            .arg(format!("{}:{}", r.basic_user, r.basic_password))
            .arg(format!("docker://{image}")),
    )
    .stdout;
    assert_eq!(digest_of(&raw), digest);
    fs::write(dir.join("manifest.json"), &raw).unwrap();
    let lookaside = dir.join("lookaside");
    let at = lookaside.join(format!(
        "{repo}@sha256={}",
        digest.trim_start_matches("sha256:")
    ));
    fs::create_dir_all(&at).unwrap();
    run_ok(
        Command::new("skopeo")
            .env("GNUPGHOME", &home)
            .arg("standalone-sign")
            .arg(dir.join("manifest.json"))
            .arg(&image)
            .arg(&fpr)
            .arg("-o")
            .arg(at.join("signature-1")),
    );
    let both = regd_dir(
        "registries.d-both",
        &format!(
            "docker:\n  {}/sigstore-{uniq}:\n    lookaside: file://{}\n    use-sigstore-attachments: true\n",
            r.basic,
            lookaside.display()
        ),
    );
    let gpg_policy = policy(
        "gpg.json",
        json!({"type": "signedBy", "keyType": "GPGKeys", "keyPath": gpg_pub}),
    );
    case.accepted(&gpg_policy, &both);
    let err = case.refused(&sigstore_policy, &both);
    assert!(
        err.contains("none was found") && err.contains("holds 1 simple signing signature(s)"),
        "{err}"
    );
    fs::remove_file(at.join("signature-1")).unwrap();
    reg.attach(&repo, &digest, std::slice::from_ref(&good), &[]);
    case.accepted(&sigstore_policy, &both);
    let err = case.refused(&gpg_policy, &both);
    assert!(err.contains("none was found"), "{err}");

    // A sigstore signature in the lookaside store, in containers/image's format for it
    // (signature.Blob: "\0sigstore-json\n" and JSON), with no attachment: accepted.
    reg.attach(&repo, &digest, &[], &[]);
    let mut blob = b"\0sigstore-json\n".to_vec();
    blob.extend(
        serde_json::to_vec(&json!({"mimeType": SIG_MEDIA_TYPE, "payload": b64(&good.0),
                                   "annotations": {SIG_ANNOTATION: good.1}}))
        .unwrap(),
    );
    fs::write(at.join("signature-1"), blob).unwrap();
    let err = case.refused(&sigstore_policy, &attachments);
    assert!(err.contains("none was found"), "{err}");
    case.accepted(&sigstore_policy, &both);

    // Through a mirror: the attachments are those of the mirror's repository, and
    // registries.d is read for the mirror's name, not the source's
    // (newImageSourceAttempt gives newDockerClientFromRef the physical reference, whose
    // useSigstoreAttachments decides). The identity signed is the source's.
    let source = format!("{}/sigstore-{uniq}/src", r.basic);
    let mirror = format!("{}/sigstore-{uniq}/mirror", r.basic);
    push_fixture(&r, &format!("{mirror}/mco:v1"));
    let source_image = format!("{source}/mco:v1");
    reg.attach(
        &format!("sigstore-{uniq}/mirror/mco"),
        &digest,
        &[sign(&key, &payload(&digest, &source_image))],
        &[],
    );
    let conf = write(
        "registries.conf",
        &format!(
            "[[registry]]\nprefix = \"{source}\"\nlocation = \"{source}\"\n\
             [[registry.mirror]]\nlocation = \"{mirror}\"\n"
        ),
    );
    case.image = source_image;
    case.extra = vec!["--registries-conf".into(), conf];
    let for_mirror = regd_dir(
        "registries.d-mirror",
        &format!("docker:\n  {mirror}:\n    use-sigstore-attachments: true\n"),
    );
    case.accepted(&sigstore_policy, &for_mirror);
    let for_source = regd_dir(
        "registries.d-source",
        &format!("docker:\n  {source}:\n    use-sigstore-attachments: true\n"),
    );
    let err = case.refused(&sigstore_policy, &for_source);
    assert!(
        err.contains("none was found") && err.contains(&format!("not read for {mirror}/mco")),
        "{err}"
    );
}
