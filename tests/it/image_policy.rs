//! `--image-policy`: ClusterImagePolicy and ImagePolicy objects, as a cluster holds
//! them, judging images on a real registry (the TLS registry of
//! `scripts/registry-services.sh`) through the CLI, with sigstore signatures made as
//! cosign makes them (the helpers of [`crate::sigstore`]).
//!
//! The objects are the cluster's: the `openshift` ClusterImagePolicy (a PublicKey root
//! of trust, scopes for the release repository and the component repository), an
//! ImagePolicy in openshift-machine-config-operator, one in another namespace. No
//! registries.d enables attachments: only the image policies do, for their scopes and
//! for the mirrors an ImageDigestMirrorSet gives them.

use std::fs;

use serde_json::{json, Value};

use crate::harness::registry::registries;
use crate::harness::require_tools;
use crate::sigstore::{b64, key_pair, payload, push_fixture, sandbox, sign, Registry};

/// A ClusterImagePolicy or ImagePolicy (`namespace`) with a PublicKey root of trust.
fn object(kind: &str, name: &str, namespace: Option<&str>, scopes: &[String], pem: &[u8]) -> Value {
    let mut meta = json!({"name": name, "uid": "0d9c7c58", "resourceVersion": "12345"});
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": kind,
        "metadata": meta,
        "spec": {
            "scopes": scopes,
            "policy": {"rootOfTrust": {"policyType": "PublicKey", "publicKey": {"keyData": b64(pem)}}}
        },
        "status": {"conditions": [{"type": "Pending", "status": "False", "reason": "x",
                                   "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}
    })
}

/// As YAML (what `oc get -o yaml` prints), to a file; `list` wraps them in a `List`.
fn write_yaml(path: &std::path::Path, objects: &[Value], list: bool) -> String {
    let text = if list {
        serde_yaml_ng::to_string(
            &json!({"apiVersion": "v1", "kind": "List", "items": objects,
                                          "metadata": {"resourceVersion": ""}}),
        )
        .unwrap()
    } else {
        objects
            .iter()
            .map(|o| serde_yaml_ng::to_string(o).unwrap())
            .collect::<Vec<_>>()
            .join("---\n")
    };
    fs::write(path, text).unwrap();
    path.display().to_string()
}

#[test]
fn image_policies_on_a_registry() {
    require_tools(&["skopeo", "curl"]);
    let r = registries();
    let (sb, dir, uniq) = sandbox("ip");
    let ns = format!("ip-{uniq}");
    let host = &r.basic;
    let release = format!("{host}/{ns}/ocp/release");
    let art = format!("{host}/{ns}/ocp/art-dev");
    let team = format!("{host}/{ns}/team/mco");
    let mirror = format!("{host}/{ns}/mirror/release");
    let push = |to: &str| push_fixture(&r, to);
    let digest = push(&format!("{art}:v1"));
    assert_eq!(push(&format!("{team}:v1")), digest);
    // The release repository's image only on the mirror: pulled by digest through it.
    assert_eq!(push(&format!("{mirror}:v1")), digest);
    let reg = Registry::basic(&r, &dir);
    let repo_of = |name: &str| name.trim_start_matches(&format!("{host}/")).to_string();

    let (openshift_key, openshift_pub) = key_pair(&dir, 11);
    let (team_key, team_pub) = key_pair(&dir, 12);
    let (_, stranger_pub) = key_pair(&dir, 13);
    let pem = |p: &std::path::Path| fs::read(p).unwrap();
    // The component image signed by the openshift key, the team's by the team key, the
    // mirror's copy of the release image by the openshift key (for the source's name).
    reg.attach(
        &repo_of(&art),
        &digest,
        &[sign(
            &openshift_key,
            &payload(&digest, &format!("{art}:v1")),
        )],
        &[],
    );
    reg.attach(
        &repo_of(&team),
        &digest,
        &[sign(&team_key, &payload(&digest, &format!("{team}:v1")))],
        &[],
    );
    reg.attach(
        &repo_of(&mirror),
        &digest,
        &[sign(
            &openshift_key,
            &payload(&digest, &format!("{release}@{digest}")),
        )],
        &[],
    );

    let openshift = |key: &[u8]| {
        object(
            "ClusterImagePolicy",
            "openshift",
            None,
            &[release.clone(), art.clone()],
            key,
        )
    };
    let mco_ns = "openshift-machine-config-operator";
    // The team's ImagePolicy, with a scope the ClusterImagePolicy already has (skipped:
    // the ClusterImagePolicy wins there).
    let team_policy = |key: &[u8]| {
        object(
            "ImagePolicy",
            "team",
            Some(mco_ns),
            &[format!("{host}/{ns}/team"), art.clone()],
            key,
        )
    };
    // Another namespace's ImagePolicy for the team's scope, with a key that signed
    // nothing: warned about and ignored.
    let elsewhere = object(
        "ImagePolicy",
        "strict",
        Some("my-app"),
        std::slice::from_ref(&team),
        &pem(&stranger_pub),
    );
    let cip = write_yaml(
        &dir.join("cip.yaml"),
        &[openshift(&pem(&openshift_pub))],
        false,
    );
    let ips = write_yaml(
        &dir.join("ip.yaml"),
        &[team_policy(&pem(&team_pub)), elsewhere.clone()],
        true,
    );
    // An empty registries.d: attachments are read only where the image policies say.
    let regd = dir.join("registries.d");
    fs::create_dir_all(&regd).unwrap();
    let regd = regd.display().to_string();
    let base = dir.join("base.json");
    fs::write(
        &base,
        json!({"default": [{"type": "insecureAcceptAnything"}]}).to_string(),
    )
    .unwrap();
    let base = base.display().to_string();
    let auth = sb
        .write_auth("auth.json", host, &r.basic_user, &r.basic_password)
        .display()
        .to_string();
    let idms = dir.join("idms.yaml");
    fs::write(
        &idms,
        format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: \
             {{name: release}}\nspec:\n  imageDigestMirrors:\n  - source: {release}\n    \
             mirrors: [{mirror}]\n"
        ),
    )
    .unwrap();
    let idms = idms.display().to_string();

    let args = |cmd: &str, image: &str, policies: &[&str], extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            cmd,
            "--image",
            image,
            "--authfile",
            &auth,
            "--cert-dir",
            &r.ca_dir,
            "--registries.d",
            &regd,
            "--idms",
            &idms,
        ]
        .map(String::from)
        .to_vec();
        for p in policies {
            v.extend(["--image-policy".to_string(), p.to_string()]);
        }
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let accepted = |image: &str, policies: &[&str], extra: &[&str]| -> String {
        let ign = sb.path("out.ign");
        let _ = fs::remove_file(&ign);
        let ign_s = ign.display().to_string();
        let mut a = args("inject", image, policies, extra);
        a.extend(["--bootimage", "4.2", "--ign", &ign_s].map(String::from));
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = sb.ok(&a);
        let v: Value = serde_json::from_slice(&fs::read(&ign).unwrap()).unwrap();
        assert!(v["storage"]["files"]
            .as_array()
            .is_some_and(|f| !f.is_empty()));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let refused = |image: &str, policies: &[&str], extra: &[&str]| -> String {
        let out_file = sb.path("extracted").display().to_string();
        let mut a = args("extract", image, policies, extra);
        a.extend(["--path", "/usr/bin/machine-config-daemon", "-o", &out_file].map(String::from));
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = sb.run(&a);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "not refused:\n{err}");
        assert!(!sb.path("extracted").exists());
        err
    };
    let sig = "--signature-policy";

    // The component image under the openshift ClusterImagePolicy: accepted, its
    // attachments read although registries.d does not enable them. The ImagePolicy
    // scope the ClusterImagePolicy has is skipped, the other namespace's ignored, each
    // with a warning.
    let art_image = format!("{art}:v1");
    let err = accepted(&art_image, &[&cip, &ips], &[sig, &base]);
    assert!(
        err.contains(&format!(
            "warning: {ips}: ImagePolicy {mco_ns}/team: scope(s) \"{art}\" equal or nest inside \
             a ClusterImagePolicy scope"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "warning: {ips}: ImagePolicy my-app/strict is ignored: it is in namespace my-app"
        )),
        "{err}"
    );
    // The same with the ClusterImagePolicy holding another key: refused, the policy
    // named as rendered.
    let wrong = write_yaml(
        &dir.join("cip-wrong.yaml"),
        &[openshift(&pem(&stranger_pub))],
        false,
    );
    let err = refused(&art_image, &[&wrong], &[sig, &base]);
    assert!(
        err.contains("refused by the signature policy")
            && err.contains(&format!("{base} with the image policies of {wrong}"))
            && err.contains(&format!("transports.docker.\"{art}\""))
            && err.contains("no sigstore signature is acceptable"),
        "{err}"
    );
    // Without the image policies, the base alone accepts anything.
    accepted(&art_image, &[], &[sig, &base]);

    // The team's image under the ImagePolicy of openshift-machine-config-operator:
    // accepted with the team's key (the other namespace's stricter policy does not
    // apply), refused when it holds another key.
    let team_image = format!("{team}:v1");
    accepted(&team_image, &[&cip, &ips], &[sig, &base]);
    let ips_wrong = write_yaml(
        &dir.join("ip-wrong.yaml"),
        &[team_policy(&pem(&stranger_pub))],
        false,
    );
    let err = refused(&team_image, &[&cip, &ips_wrong], &[sig, &base]);
    assert!(
        err.contains(&format!("transports.docker.\"{host}/{ns}/team\""))
            && err.contains("no sigstore signature is acceptable"),
        "{err}"
    );
    // Moved to another namespace, that ImagePolicy is ignored: the base's default
    // accepts the team's image, signed or not.
    let moved = write_yaml(
        &dir.join("ip-moved.yaml"),
        &[object(
            "ImagePolicy",
            "team",
            Some("my-app"),
            std::slice::from_ref(&team),
            &pem(&stranger_pub),
        )],
        false,
    );
    accepted(&team_image, &[&cip, &moved], &[sig, &base]);

    // The release image by digest, through the IDMS mirror: the mirror's attachments
    // are read (the scope's mirror gets use-sigstore-attachments), and its signature,
    // for the source's name, is accepted; with the wrong key it is refused, the
    // mirror's attachments named.
    let release_image = format!("{release}@{digest}");
    accepted(&release_image, &[&cip], &[sig, &base]);
    let err = refused(&release_image, &[&wrong], &[sig, &base]);
    assert!(
        err.contains("no sigstore signature is acceptable") && err.contains(&mirror),
        "{err}"
    );

    // Without --signature-policy the user's default policy is the base: here one that
    // rejects what no scope names, so an image outside every scope is refused, while
    // the ClusterImagePolicy's scope accepts.
    let user_policy = sb.path("home/.config/containers/policy.json");
    fs::create_dir_all(user_policy.parent().unwrap()).unwrap();
    fs::write(
        &user_policy,
        json!({"default": [{"type": "reject"}]}).to_string(),
    )
    .unwrap();
    accepted(&art_image, &[&cip], &[]);
    let outside = format!("{host}/{ns}/mirror/release:v1");
    let err = refused(&outside, &[&cip], &[]);
    assert!(
        err.contains(&format!(
            "with the image policies of {cip}: default: images here are rejected"
        )),
        "{err}"
    );

    // The same ClusterImagePolicy as v1alpha1, in JSON (as `oc get -o json` prints it).
    let mut alpha = openshift(&pem(&openshift_pub));
    alpha["apiVersion"] = json!("config.openshift.io/v1alpha1");
    let alpha_file = dir.join("cip-alpha.json");
    fs::write(&alpha_file, serde_json::to_vec_pretty(&alpha).unwrap()).unwrap();
    accepted(
        &art_image,
        &[&alpha_file.display().to_string()],
        &[sig, &base],
    );

    // signedIdentity: a signature naming the image under another prefix is refused by
    // the default (matchRepoDigestOrExact), accepted with a RemapIdentity from the
    // scope's prefix to that one.
    reg.attach(
        &repo_of(&art),
        &digest,
        &[sign(
            &openshift_key,
            &payload(&digest, &format!("{host}/{ns}/signed/art-dev:v1")),
        )],
        &[],
    );
    let err = refused(&art_image, &[&cip], &[sig, &base]);
    assert!(
        err.contains("which signedIdentity does not accept"),
        "{err}"
    );
    let mut remap = openshift(&pem(&openshift_pub));
    remap["spec"]["policy"]["signedIdentity"] = json!({
        "matchPolicy": "RemapIdentity",
        "remapIdentity": {"prefix": format!("{host}/{ns}/ocp"),
                          "signedPrefix": format!("{host}/{ns}/signed")}
    });
    let remap = write_yaml(&dir.join("cip-remap.yaml"), &[remap], false);
    accepted(&art_image, &[&remap], &[sig, &base]);

    // A file the CRD would refuse: nothing is opened, the file, object and field named,
    // the key not quoted.
    let mut bad = openshift(b"-----BEGIN PRIVATE KEY-----\nTOPSECRETTOPSECRETTOPSECRETTOPSECRETTOPSECRETTOPSECRET\n-----END PRIVATE KEY-----\n");
    let bad_b64 = bad["spec"]["policy"]["rootOfTrust"]["publicKey"]["keyData"]
        .as_str()
        .unwrap()
        .to_string();
    bad["spec"]["scopes"] = json!([art.clone()]);
    let bad = write_yaml(&dir.join("bad.yaml"), &[bad], false);
    let err = refused(&art_image, &[&bad], &[sig, &base]);
    assert!(
        err.contains(&format!(
            "{bad}: ClusterImagePolicy openshift: spec.policy.rootOfTrust.publicKey.keyData: \
             does not start with -----BEGIN PUBLIC KEY----- once decoded"
        )) && !err.contains("TOPSECRET")
            && !err.contains(&bad_b64[..24]),
        "{err}"
    );
}
