#!/usr/bin/env python3
"""Keyless sigstore cases for an independent verifier (tests/it/keyless_oracle.rs).

    keyless_cases.py PAYLOAD OUT

PAYLOAD is the cosign payload that every case signs (the file's bytes, as they are).
Writes into OUT:

- `cases.json`: {"identity", "issuer", "cases": [{"name", "intent", "annotations",
  "bundle"}]}: per case the annotations of the cosign signature layer, as cosign writes
  them (`dev.cosignproject.cosign/signature`, `dev.sigstore.cosign/certificate`,
  `dev.sigstore.cosign/chain`, `dev.sigstore.cosign/bundle` with the Rekor SET), what the
  case is meant to show ("accept" or "refuse"), and the file of its Sigstore bundle
  (media type v0.3, the same certificate, signature and SET);
- `fulcio-root.pem`, `rekor.pub`: the Fulcio root and the Rekor key of a
  containers-policy.json `sigstoreSigned` requirement;
- `trust-config.json`: the same roots as a Sigstore client trust configuration (the
  Fulcio CA as intermediate and root, the Rekor key, a certificate transparency log key;
  no timestamp authority), for `sigstore --trust-config` (sigstore-python).

Everything is made here with `cryptography`, as Fulcio, its CT log and Rekor make it: a
root and an intermediate CA, a leaf with an empty subject, the email SAN (critical), the
OIDC issuer extensions 1.3.6.1.4.1.57264.1.1 (raw) and .8 (DER UTF8String), digital
signature and code signing, and an embedded SCT (the CT log's signature over the
precertificate); the hashedrekord entry of the signature and its SET (the Rekor key's
signature of the RFC 8785 form of body, integratedTime, logID, logIndex).

sigstore-python does not accept a log entry with an inclusion promise only: its
TransparencyLogEntry requires an inclusion proof with a signed checkpoint, whatever the
bundle's version. So each bundle also carries the proof of the entry in a log of one
entry (the root is the entry's leaf hash) and a checkpoint signed by the trusted Rekor
key, always valid: what the cases vary is in the SET, the certificate, the chain and
the entry, which the cosign annotations carry too. mcd-inject, as containers/image,
reads no inclusion proof.
"""

import base64
import datetime
import hashlib
import json
import os
import struct
import sys
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

ISSUER = "https://oidc.example.com"
EMAIL = "release@example.com"
OTHER_ISSUER = "https://other.example.com"
OTHER_EMAIL = "someone@example.com"
ORIGIN = "rekor.example.invalid"
OID_ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
OID_ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
OID_SCT_LIST = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")


def b64(data):
    return base64.b64encode(data).decode()


def der_length(n):
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def der(tag, body):
    return bytes([tag]) + der_length(len(body)) + body


def key():
    return ec.generate_private_key(ec.SECP256R1())


def spki(public_key):
    return public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def key_id(public_key):
    """RFC 6962's key ID: SHA-256 of the SubjectPublicKeyInfo."""
    return hashlib.sha256(spki(public_key)).digest()


def when(secs):
    return datetime.datetime.fromtimestamp(secs, datetime.timezone.utc)


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM).decode()


class Ca:
    """A CA: its key and certificate."""

    def __init__(self, name, now, parent=None):
        self.key = key()
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        issuer_key = parent.key if parent else self.key
        b = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(parent.cert.subject if parent else subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(when(now - 86_400 * 365))
            .not_valid_after(when(now + 86_400 * 365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None if parent is None else 0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=True,
                    crl_sign=True, encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
        )
        if parent:
            b = b.add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(parent.key.public_key()),
                critical=False,
            )
        self.cert = b.sign(issuer_key, hashes.SHA256())


def sct_list(ct_key, issuer, tbs, timestamp_ms):
    """The SignedCertificateTimestampList (RFC 6962 3.3) of one SCT by `ct_key` for the
    precertificate `tbs` issued by `issuer`, as the extension's DER value."""
    signed = (
        struct.pack("!BBQH", 0, 0, timestamp_ms, 1)  # v1, certificate_timestamp, precert_entry
        + key_id(issuer.key.public_key())
        + struct.pack("!I", len(tbs))[1:]
        + tbs
        + struct.pack("!H", 0)  # no extensions
    )
    sig = ct_key.sign(signed, ec.ECDSA(hashes.SHA256()))
    sct = (
        struct.pack("!B", 0)
        + key_id(ct_key.public_key())
        + struct.pack("!QH", timestamp_ms, 0)
        + struct.pack("!BBH", 4, 3, len(sig))  # sha256, ecdsa
        + sig
    )
    listed = struct.pack("!H", len(sct)) + sct
    return der(0x04, struct.pack("!H", len(listed)) + listed)


def leaf(ca, ct_key, valid, issuer=ISSUER, email=EMAIL, eku=(ExtendedKeyUsageOID.CODE_SIGNING,)):
    """A Fulcio-like leaf under `ca`, valid over `valid` (seconds), with an embedded SCT."""
    k = key()
    serial = x509.random_serial_number()

    def builder():
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
            .issuer_name(ca.cert.subject)
            .public_key(k.public_key())
            .serial_number(serial)
            .not_valid_before(when(valid[0]))
            .not_valid_after(when(valid[1]))
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=False,
                    crl_sign=False, encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage(list(eku)), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(k.public_key()), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
                critical=False,
            )
            .add_extension(x509.SubjectAlternativeName([x509.RFC822Name(email)]), critical=True)
            .add_extension(x509.UnrecognizedExtension(OID_ISSUER_V1, issuer.encode()), critical=False)
            .add_extension(
                x509.UnrecognizedExtension(OID_ISSUER_V2, der(0x0C, issuer.encode())),
                critical=False,
            )
        )

    pre = builder().sign(ca.key, hashes.SHA256())
    scts = sct_list(ct_key, ca, pre.tbs_certificate_bytes, valid[0] * 1000)
    cert = (
        builder()
        .add_extension(x509.UnrecognizedExtension(OID_SCT_LIST, scts), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    assert cert.tbs_precertificate_bytes == pre.tbs_certificate_bytes
    return k, cert


def hashedrekord(logged_cert, sig, logged_payload):
    """The body Rekor logs for a hashedrekord 0.0.1 entry."""
    return json.dumps(
        {
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": hashlib.sha256(logged_payload).hexdigest()}},
                "signature": {"content": b64(sig), "publicKey": {"content": b64(pem(logged_cert).encode())}},
            },
        },
        separators=(",", ":"),
    ).encode()


def set_of(rekor_key, body, integrated, log_id, log_index):
    """The SET: the Rekor key's signature of the RFC 8785 form of the entry."""
    canonical = json.dumps(
        {"body": b64(body), "integratedTime": integrated, "logID": log_id.hex(), "logIndex": log_index},
        sort_keys=True,
        separators=(",", ":"),
    ).encode()
    return rekor_key.sign(canonical, ec.ECDSA(hashes.SHA256()))


def checkpoint(rekor_key, log_id, root):
    """A signed note of a checkpoint of a log of one entry (size 1, this root)."""
    note = f"{ORIGIN}\n1\n{b64(root)}\n"
    sig = rekor_key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
    return f"{note}\n\u2014 {ORIGIN} {b64(log_id[:4] + sig)}\n"


def trust_config(fulcio_root, fulcio_mid, rekor_key, ct_key, since):
    start = {"start": since}

    def log(k, url):
        return {
            "baseUrl": url,
            "hashAlgorithm": "SHA2_256",
            "publicKey": {"rawBytes": b64(spki(k.public_key())), "keyDetails": "PKIX_ECDSA_P256_SHA_256", "validFor": start},
            "logId": {"keyId": b64(key_id(k.public_key()))},
        }

    def service(url):
        return {"url": url, "majorApiVersion": 1, "validFor": start, "operator": "example"}

    der_of = lambda c: {"rawBytes": b64(c.public_bytes(serialization.Encoding.DER))}
    return {
        "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
        "trustedRoot": {
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [log(rekor_key, f"https://{ORIGIN}")],
            "certificateAuthorities": [
                {
                    "subject": {"organization": "example", "commonName": "Fulcio"},
                    "uri": "https://fulcio.example.invalid",
                    "certChain": {"certificates": [der_of(fulcio_mid.cert), der_of(fulcio_root.cert)]},
                    "validFor": start,
                }
            ],
            "ctlogs": [log(ct_key, "https://ctfe.example.invalid")],
            "timestampAuthorities": [],
        },
        "signingConfig": {
            "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
            "caUrls": [service("https://fulcio.example.invalid")],
            "oidcUrls": [service(ISSUER)],
            "rekorTlogUrls": [service(f"https://{ORIGIN}")],
            "tsaUrls": [],
            "rekorTlogConfig": {"selector": "ANY"},
            "tsaConfig": {"selector": "ANY"},
        },
    }


def main():
    payload_path, out = sys.argv[1], sys.argv[2]
    signed = open(payload_path, "rb").read()
    os.makedirs(os.path.join(out, "bundles"), exist_ok=True)
    t = int(time.time())
    fulcio_root = Ca("Fulcio root", t)
    fulcio_mid = Ca("Fulcio intermediate", t, fulcio_root)
    other_root = Ca("Another root", t)
    other_mid = Ca("Another intermediate", t, other_root)
    ct_key, rekor_key, other_rekor = key(), key(), key()
    log_id = key_id(rekor_key.public_key())
    chain = pem(fulcio_mid.cert) + pem(fulcio_root.cert)
    around = lambda at: (at - 300, at + 300)  # Fulcio's ten minutes

    good = leaf(fulcio_mid, ct_key, around(t))
    old = leaf(fulcio_mid, ct_key, around(t - 7200))
    foreign = leaf(other_mid, ct_key, around(t))

    def case(name, intent, signer, chain=chain, integrated=t, rekor=rekor_key,
             logged_payload=signed, logged_cert=None, shown_time=None):
        k, cert = signer
        sig = k.sign(signed, ec.ECDSA(hashes.SHA256()))
        body = hashedrekord(logged_cert or cert, sig, logged_payload)
        ts = set_of(rekor, body, integrated, log_id, 0)
        shown = integrated if shown_time is None else shown_time
        bundle_ann = json.dumps(
            {
                "SignedEntryTimestamp": b64(ts),
                "Payload": {"body": b64(body), "integratedTime": shown, "logIndex": 0, "logID": log_id.hex()},
            }
        )
        annotations = {
            "dev.cosignproject.cosign/signature": b64(sig),
            "dev.sigstore.cosign/certificate": pem(cert),
            "dev.sigstore.cosign/chain": chain,
            "dev.sigstore.cosign/bundle": bundle_ann,
        }
        leaf_hash = hashlib.sha256(b"\x00" + body).digest()
        bundle = {
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {
                "certificate": {"rawBytes": b64(cert.public_bytes(serialization.Encoding.DER))},
                "tlogEntries": [
                    {
                        "logIndex": "0",
                        "logId": {"keyId": b64(log_id)},
                        "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                        "integratedTime": str(shown),
                        "inclusionPromise": {"signedEntryTimestamp": b64(ts)},
                        "inclusionProof": {
                            "logIndex": "0",
                            "rootHash": b64(leaf_hash),
                            "treeSize": "1",
                            "hashes": [],
                            "checkpoint": {"envelope": checkpoint(rekor_key, log_id, leaf_hash)},
                        },
                        "canonicalizedBody": b64(body),
                    }
                ],
            },
            "messageSignature": {
                "messageDigest": {"algorithm": "SHA2_256", "digest": b64(hashlib.sha256(signed).digest())},
                "signature": b64(sig),
            },
        }
        path = os.path.join("bundles", f"{name}.json")
        with open(os.path.join(out, path), "w") as f:
            json.dump(bundle, f, indent=1)
        return {"name": name, "intent": intent, "annotations": annotations, "bundle": path}

    cases = [
        case("valid", "accept", good),
        # The leaf's ten minutes were two hours before the log integrated the entry.
        case("expired-at-integrated-time", "refuse", old),
        # Expired now, valid when the entry was integrated.
        case("valid-at-integrated-time-expired-now", "accept", old, integrated=t - 7200),
        case("wrong-oidc-issuer", "refuse", leaf(fulcio_mid, ct_key, around(t), issuer=OTHER_ISSUER)),
        case("wrong-email", "refuse", leaf(fulcio_mid, ct_key, around(t), email=OTHER_EMAIL)),
        case("chain-to-another-root", "refuse", foreign, chain=pem(other_mid.cert) + pem(other_root.cert)),
        # The SET of integratedTime t, shown with t + 1.
        case("tampered-set", "refuse", good, shown_time=t + 1),
        case("set-by-another-rekor-key", "refuse", good, rekor=other_rekor),
        case("body-for-another-payload", "refuse", good, logged_payload=b"another payload"),
        case("body-for-another-certificate", "refuse", good, logged_cert=foreign[1]),
        case(
            "leaf-without-code-signing",
            "refuse",
            leaf(fulcio_mid, ct_key, around(t), eku=(ExtendedKeyUsageOID.SERVER_AUTH,)),
        ),
    ]

    with open(os.path.join(out, "fulcio-root.pem"), "w") as f:
        f.write(pem(fulcio_root.cert))
    with open(os.path.join(out, "rekor.pub"), "wb") as f:
        f.write(
            rekor_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
    with open(os.path.join(out, "trust-config.json"), "w") as f:
        json.dump(trust_config(fulcio_root, fulcio_mid, rekor_key, ct_key, "2000-01-01T00:00:00Z"), f, indent=1)
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"identity": EMAIL, "issuer": ISSUER, "cases": cases}, f, indent=1)


if __name__ == "__main__":
    main()
