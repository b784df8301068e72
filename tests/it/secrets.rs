//! Input files that may hold secrets are never echoed. Every flag that reads such a file
//! (auth files and pull secrets, registries.conf and its drop-ins, mirror YAML, the
//! signature policy, registries.d, CA directories, Ignition configs, credential helpers)
//! is given files that carry one marker in many shapes: a real pull secret, the marker
//! as a bare value, as a key, on the line of a syntax error, in a truncated file, as a
//! value of the wrong type, in a URL's user part. Each subcommand that takes the flag
//! runs on them, at `--log-level trace` and at the default level; neither stdout nor
//! stderr may hold the marker, its base64 form or a prefix of it, and a refusal names
//! the file.

use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::harness::registry::{registries, Sandbox};
use crate::harness::{crate_root, Run};

/// The secret. Mixed case and digits, like a token.
const MARKER: &str = "Mq7vSecr3tZx9Lw2Kp";
const USER: &str = "robot";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// The pull-secret `auth` value carrying the marker.
fn auth() -> String {
    b64(&format!("{USER}:{MARKER}"))
}

/// What no output may hold: the marker, the forms it is stored in, and their starts.
fn needles() -> Vec<String> {
    let a = auth();
    vec![
        MARKER.to_string(),
        MARKER[..10].to_string(),
        a.clone(),
        a[..16].to_string(),
        b64(MARKER),
        format!("{USER}:{}", &MARKER[..6]),
    ]
}

/// One shape of a file carrying the marker; `broken` when no parser reads it.
struct Shape {
    name: &'static str,
    text: String,
    broken: bool,
}

/// The shapes, for a pull secret naming `registry`.
fn shapes(registry: &str) -> Vec<Shape> {
    let a = auth();
    let m = MARKER;
    let pull_secret = format!(
        r#"{{"auths":{{"{registry}":{{"auth":"{a}","email":"someone@example.com"}},"quay.example":{{"auth":"{a}"}}}}}}"#
    );
    let shape = |name, text: String, broken| Shape { name, text, broken };
    vec![
        shape("pull secret", pull_secret.clone() + "\n", false),
        shape(
            "pull secret, pretty",
            format!("{{\n  \"auths\": {{\n    \"{registry}\": {{\n      \"auth\": \"{a}\"\n    }}\n  }}\n}}\n"),
            false,
        ),
        shape("bare value", format!("{m}\n"), false),
        shape("bare base64", format!("{a}\n"), false),
        shape(
            "marker as a key",
            format!(r#"{{"{m}": {{"auth": "{a}"}}, "auths": {{"{m}": {{}}}}}}"#),
            false,
        ),
        shape(
            "JSON syntax error on the secret's line",
            format!("{{\"auths\": {{\n  \"{registry}\": {{\"auth\": \"{a}\" \"x\": {m}}}\n}}}}\n"),
            true,
        ),
        shape(
            "truncated",
            pull_secret[..pull_secret.find(&a).unwrap() + a.len() / 2].to_string(),
            true,
        ),
        shape(
            "wrong types",
            format!(r#"{{"auths": {{"{registry}": {{"auth": 5, "password": ["{m}"], "username": {{"{m}": "{a}"}}}}}}, "credHelpers": "{a}"}}"#),
            false,
        ),
        shape("auths of the wrong type", format!(r#"{{"auths": "{a}"}}"#), false),
        shape(
            "TOML syntax error on the secret's line",
            format!("[[registry]]\nprefix = \"r.example\"\nlocation = \"{a}\n{m} = = 1\n"),
            true,
        ),
        shape(
            "registries.conf with secrets in values",
            format!(
                "[[registry]]\nprefix = \"r.example/{m}\"\nlocation = \"https://{USER}:{m}@r.example/x\"\n\
                 [[registry]]\nlocation = \"{USER}:{m}@s.example/x\"\n\
                 [[registry]]\nlocation = \"t.example\"\n[[registry.mirror]]\nlocation = \"m.example\"\npull-from-mirror = \"{m}\"\n"
            ),
            false,
        ),
        shape(
            "registries.conf with a secret of the wrong type",
            format!("unqualified-search-registries = \"{m}\"\n[[registry]]\nprefix = [\"{a}\"]\n"),
            false,
        ),
        shape("YAML syntax error on the secret's line", format!("kind: [{m}\n  auth: {a}\n"), true),
        shape("YAML kind", format!("apiVersion: v1\nkind: {m}\nspec: {{}}\n"), false),
        shape(
            "mirror set with secrets in values",
            format!(
                "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nspec:\n  imageDigestMirrors:\n  \
                 - source: r.example/x\n    mirrorSourcePolicy: {m}\n    mirrors: [m.example/x]\n  \
                 - source: https://{USER}:{m}@r.example/y\n    mirrors: [{{auth: {a}}}]\n"
            ),
            false,
        ),
        shape(
            "install-config with a pull secret",
            format!("apiVersion: v1\nbaseDomain: example.com\npullSecret: '{pull_secret}'\n"),
            false,
        ),
        shape(
            "install-config with a pull secret and bad mirrors",
            format!(
                "apiVersion: v1\npullSecret: '{pull_secret}'\nimageContentSources:\n- source: {USER}:{m}@r.example/x\n  mirrors:\n  - {{{m}: {a}}}\n"
            ),
            false,
        ),
        shape(
            "policy with secrets in values",
            format!(r#"{{"default": [{{"type": "signedBy", "keyType": "{m}", "keyData": "{a}"}}], "transports": {{"docker": {{"{m}": []}}}}}}"#),
            false,
        ),
        shape("policy of an unknown type", format!(r#"{{"default": [{{"type": "{m}"}}]}}"#), false),
        shape(
            "sigstoreSigned with secrets in values",
            format!(r#"{{"default": [{{"type": "sigstoreSigned", "keyData": "{a}", "fulcio": {{"caPath": "{m}", "oidcIssuer": "{m}", "subjectEmail": "{m}"}}, "{m}": "{a}"}}]}}"#),
            false,
        ),
        shape(
            "sigstoreSigned keyData that is no key",
            format!(
                r#"{{"default": [{{"type": "sigstoreSigned", "keyData": "{}"}}]}}"#,
                b64(&format!("-----BEGIN {m}-----\n{a}\n-----END {m}-----\n"))
            ),
            false,
        ),
        shape(
            "signedBy keyData that is no key",
            format!(r#"{{"default": [{{"type": "signedBy", "keyType": "GPGKeys", "keyData": "{a}"}}]}}"#),
            false,
        ),
        shape(
            "Ignition config with secrets",
            format!(
                r#"{{"ignition": {{"version": "3.2.0"}}, "{m}": 1, "passwd": {{"users": {{"name": "{m}"}}}}, "storage": {{"files": [{{"path": "/var/lib/kubelet/config.json", "contents": {{"source": "data:;base64,{}"}}, "{m}": "{a}", "mode": "{a}"}}]}}}}"#,
                b64(&pull_secret)
            ),
            false,
        ),
        shape(
            "PEM block of a secret",
            format!("-----BEGIN CERTIFICATE-----\n{a}{m}\n-----END CERTIFICATE-----\n"),
            false,
        ),
    ]
}

/// Runs are kept or checked here.
struct World {
    sb: Sandbox,
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        World {
            sb: Sandbox::new(),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes `text` at `rel` (parents made).
    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text).unwrap();
        p
    }

    /// Runs `args` (plus a log level, when given) with `env`.
    fn run(&self, args: &[String], level: Option<&str>, env: &[(&str, &Path)]) -> Run {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        if let Some(l) = level {
            all.extend(["--log-level", l]);
        }
        env.iter()
            .fold(self.sb.bin(&all), |b, (k, v)| b.env(k, v))
            .env("MCD_INJECT_TEST_BACKOFF_MS", "10")
            .run()
    }
}

/// Neither output holds the marker; a failed run names `file` (when given).
fn check(run: &Run, shape: &Shape, flag: &str, file: Option<&Path>, failures: &mut Vec<String>) {
    let stdout = String::from_utf8_lossy(&run.stdout);
    for n in needles() {
        if stdout.contains(&n) || run.stderr.contains(&n) {
            failures.push(format!(
                "{flag}, {}: {n:?} leaked: {}\nstdout: {}",
                shape.name,
                run.describe(),
                stdout.chars().take(400).collect::<String>()
            ));
            return;
        }
    }
    if shape.broken && run.code == Some(0) {
        failures.push(format!(
            "{flag}, {}: a broken file was accepted: {}",
            shape.name,
            run.describe()
        ));
    }
    if let (Some(f), Some(c)) = (file, run.code) {
        let named = run.stderr.contains(&f.display().to_string());
        if shape.broken && !named {
            failures.push(format!(
                "{flag}, {}: the refusal does not name {}: {}",
                shape.name,
                f.display(),
                run.describe()
            ));
        }
        assert!(c == 0 || !run.stderr.is_empty(), "{}", run.describe());
    }
}

/// The committed fixture, on disk.
fn small() -> String {
    format!("oci:{}", crate_root().join("fixtures/mco-small").display())
}

/// The subcommands that read an image, with the arguments each needs besides it.
fn image_commands(w: &World, image: &str) -> Vec<Vec<String>> {
    let out = w.path("out").display().to_string();
    let cfg = w.path("good.ign");
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        s(&["inspect", "--image", image]),
        s(&[
            "extract",
            "--image",
            image,
            "--path",
            "/usr/bin/machine-config-daemon",
            "-o",
            &out,
        ]),
        s(&[
            "inject",
            "--image",
            image,
            "--bootimage",
            "4.16",
            "--ign",
            &out,
        ]),
        s(&["pull", "--image", image]),
        s(&["verify", &cfg.display().to_string(), "--image", image]),
    ]
}

/// A config to verify against the fixture.
fn good_config(w: &World) {
    let out = w.path("good.ign");
    let r = w.run(
        &[
            "inject".into(),
            "--image".into(),
            small(),
            "--bootimage".into(),
            "4.16".into(),
            "--ign".into(),
            out.display().to_string(),
        ],
        None,
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.describe());
}

/// Runs every image subcommand with `flag FILE` for every shape, at both levels.
fn each_shape_on_every_command(
    w: &World,
    image: &str,
    extra: &[&str],
    flag: &str,
    place: impl Fn(&World, &Shape) -> Placed,
    registry: &str,
    failures: &mut Vec<String>,
) {
    for shape in shapes(registry) {
        let (args, env, file) = place(w, &shape);
        for cmd in image_commands(w, image) {
            for level in [Some("trace"), None] {
                let mut all = cmd.clone();
                all.extend(extra.iter().map(|s| s.to_string()));
                all.extend(args.iter().cloned());
                let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
                let run = w.run(&all, level, &env);
                check(
                    &run,
                    &shape,
                    &format!("{} {flag}", cmd[0]),
                    file.as_deref(),
                    failures,
                );
            }
        }
    }
}

fn report(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Where a shape was put: the arguments and environment that name it, and the file a
/// refusal must name (`None` where a refusal cannot: a CA directory's garbage is no CA).
type Placed = (Vec<String>, Vec<(&'static str, PathBuf)>, Option<PathBuf>);

/// A file flag: `flag FILE`.
fn as_flag(flag: &'static str) -> impl Fn(&World, &Shape) -> Placed {
    move |w, shape| {
        let f = w.write(
            &format!("{}.input", flag.trim_start_matches('-')),
            &shape.text,
        );
        (
            vec![flag.to_string(), f.display().to_string()],
            vec![],
            Some(f),
        )
    }
}

#[test]
fn mirror_and_policy_files_never_echo_a_secret() {
    let w = World::new();
    good_config(&w);
    let mut failures = Vec::new();
    let image = small();
    for flag in ["--registries-conf", "--idms", "--signature-policy"] {
        each_shape_on_every_command(
            &w,
            &image,
            &[],
            flag,
            as_flag(flag),
            "r.example",
            &mut failures,
        );
    }
    // The environment's registries.conf, and a drop-in beside a good one.
    each_shape_on_every_command(
        &w,
        &image,
        &[],
        "CONTAINERS_REGISTRIES_CONF",
        |w, shape| {
            let f = w.write("env/registries.conf", &shape.text);
            (
                vec![],
                vec![("CONTAINERS_REGISTRIES_CONF", f.clone())],
                Some(f),
            )
        },
        "r.example",
        &mut failures,
    );
    each_shape_on_every_command(
        &w,
        &image,
        &[],
        "registries.conf.d drop-in",
        |w, shape| {
            let conf = w.write(
                "dropin/registries.conf",
                "unqualified-search-registries = []\n",
            );
            let f = w.write("dropin/registries.conf.d/50-x.conf", &shape.text);
            (
                vec!["--registries-conf".into(), conf.display().to_string()],
                vec![],
                Some(f),
            )
        },
        "r.example",
        &mut failures,
    );
    report(failures);
}

#[test]
fn the_issue_example_names_the_file_and_nothing_of_it() {
    // `inspect --registries-conf pull-secret.json` printed the TOML parser's quote of
    // the line, with every `auth` value.
    let w = World::new();
    let shape = &shapes("quay.example")[0];
    let f = w.write("pull-secret.json", &shape.text);
    for (flag, kind) in [
        ("--registries-conf", "TOML syntax error"),
        ("--idms", "is not a valid YAML document"),
        ("--signature-policy", "is not a valid signature policy"),
    ] {
        let run = w.run(
            &[
                "inspect".into(),
                "--image".into(),
                small(),
                flag.into(),
                f.display().to_string(),
            ],
            Some("trace"),
            &[],
        );
        assert_eq!(run.code, Some(1), "{}", run.describe());
        assert!(
            run.stderr.contains(&f.display().to_string()),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains(kind), "{flag}: {}", run.stderr);
        let mut failures = Vec::new();
        check(&run, shape, flag, Some(&f), &mut failures);
        report(failures);
    }
}

#[test]
fn ignition_configs_never_echo_a_secret() {
    let w = World::new();
    let mut failures = Vec::new();
    let out = w.path("out.ign").display().to_string();
    for shape in shapes("r.example") {
        let f = w.write("base.ign", &shape.text);
        for level in [Some("trace"), None] {
            let base = [
                "inject",
                "--image",
                &small(),
                "--bootimage",
                "4.16",
                "--ign",
                &out,
                "--base",
            ]
            .iter()
            .map(|s| s.to_string())
            .chain([f.display().to_string()])
            .collect::<Vec<_>>();
            let run = w.run(&base, level, &[]);
            check(&run, &shape, "inject --base", Some(&f), &mut failures);
            // From stdin too.
            let run =
                w.sb.bin(&[
                    "inject",
                    "--image",
                    &small(),
                    "--bootimage",
                    "4.16",
                    "--ign",
                    &out,
                    "--base",
                    "-",
                ])
                .stdin(shape.text.clone())
                .run();
            check(&run, &shape, "inject --base -", None, &mut failures);
            let run = w.run(&["verify".into(), f.display().to_string()], level, &[]);
            check(&run, &shape, "verify", Some(&f), &mut failures);
            if run.code == Some(0) {
                failures.push(format!("verify {}: accepted", shape.name));
            }
            let run = w.run(
                &["verify".into(), f.display().to_string(), "--json".into()],
                level,
                &[],
            );
            check(&run, &shape, "verify --json", Some(&f), &mut failures);
            // The os-release of a bootimage is no secret, but is a file read all the same.
            let run = w.run(
                &[
                    "inject".into(),
                    "--image".into(),
                    small(),
                    "--target-os-release".into(),
                    f.display().to_string(),
                    "--ign".into(),
                    out.clone(),
                ],
                level,
                &[],
            );
            check(
                &run,
                &shape,
                "inject --target-os-release",
                Some(&f),
                &mut failures,
            );
        }
    }
    report(failures);
}

/// An image of the Basic-auth registry, and the flags that reach it.
fn basic_image() -> (String, Vec<String>) {
    let r = registries();
    (
        format!("{}/mco/small:v1", r.basic),
        vec!["--cert-dir".into(), r.ca_dir.clone()],
    )
}

#[test]
fn auth_files_never_echo_a_secret() {
    let r = registries();
    let w = World::new();
    good_config(&w);
    let (image, reach) = basic_image();
    let reach: Vec<&str> = reach.iter().map(String::as_str).collect();
    let mut failures = Vec::new();
    each_shape_on_every_command(
        &w,
        &image,
        &reach,
        "--authfile",
        as_flag("--authfile"),
        &r.basic,
        &mut failures,
    );
    for var in ["REGISTRY_AUTH_FILE", "MCD_INJECT_AUTHFILE"] {
        each_shape_on_every_command(
            &w,
            &image,
            &reach,
            var,
            move |w, shape| {
                let f = w.write(&format!("{var}.json"), &shape.text);
                (vec![], vec![(var, f.clone())], Some(f))
            },
            &r.basic,
            &mut failures,
        );
    }
    // The legacy ~/.dockercfg (the `auths` map itself).
    each_shape_on_every_command(
        &w,
        &image,
        &reach,
        "~/.dockercfg",
        |w, shape| {
            let f = w.sb.path("home/.dockercfg");
            fs::write(&f, &shape.text).unwrap();
            (vec![], vec![], Some(f))
        },
        &r.basic,
        &mut failures,
    );
    let _ = fs::remove_file(w.sb.path("home/.dockercfg"));
    report(failures);
}

#[test]
fn credential_helpers_never_echo_a_secret() {
    use std::os::unix::fs::PermissionsExt;
    let r = registries();
    let w = World::new();
    good_config(&w);
    let (image, reach) = basic_image();
    let bin = w.path("bin");
    fs::create_dir_all(&bin).unwrap();
    let m = MARKER;
    let helpers = [
        // Fails, saying the secret.
        (
            "loud",
            format!("echo 'token {m} expired' >&2; echo '{m}'; exit 1"),
        ),
        // Prints half a reply.
        (
            "half",
            format!("printf '{{\"Username\":\"{USER}\",\"Secret\":\"{m}'"),
        ),
        // Prints a wrong password: the registry refuses it.
        (
            "wrong",
            format!("printf '{{\"Username\":\"{USER}\",\"Secret\":\"{m}\"}}'"),
        ),
        // An identity token the registry has no issuer for.
        (
            "token",
            format!("printf '{{\"Username\":\"<token>\",\"Secret\":\"{m}\"}}'"),
        ),
    ];
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    for (name, body) in helpers {
        let script = bin.join(format!("docker-credential-{name}"));
        fs::write(&script, format!("#!/bin/sh\nread -r server\n{body}\n")).unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        for key in ["credHelpers", "credsStore"] {
            let text = match key {
                "credHelpers" => format!(r#"{{"credHelpers": {{"{}": "{name}"}}}}"#, r.basic),
                _ => format!(r#"{{"credsStore": "{name}"}}"#),
            };
            let f = w.write("helper.json", &text);
            let shape = Shape {
                name: "credential helper",
                text,
                broken: false,
            };
            for cmd in image_commands(&w, &image) {
                for level in [Some("trace"), None] {
                    let mut all = cmd.clone();
                    all.extend(reach.iter().cloned());
                    all.extend(["--authfile".into(), f.display().to_string()]);
                    let mut all_refs: Vec<&str> = all.iter().map(String::as_str).collect();
                    if let Some(l) = level {
                        all_refs.extend(["--log-level", l]);
                    }
                    let run =
                        w.sb.bin(&all_refs)
                            .env("PATH", &path)
                            .env("MCD_INJECT_TEST_BACKOFF_MS", "10")
                            .run();
                    check(
                        &run,
                        &shape,
                        &format!("{} {name} {key}", cmd[0]),
                        Some(&f),
                        &mut failures,
                    );
                    if run.code == Some(0) {
                        failures.push(format!("{} {name} {key}: succeeded", cmd[0]));
                    }
                }
            }
        }
    }
    report(failures);
}

#[test]
fn ca_directories_never_echo_a_secret() {
    let w = World::new();
    good_config(&w);
    let (image, _) = basic_image();
    let mut failures = Vec::new();
    each_shape_on_every_command(
        &w,
        &image,
        &[],
        "--cert-dir",
        |w, shape| {
            w.write("certs/registry.crt", &shape.text);
            (
                vec!["--cert-dir".into(), w.path("certs").display().to_string()],
                vec![],
                None,
            )
        },
        "r.example",
        &mut failures,
    );
    // A file that looks like PEM but is not is refused, by name.
    let f = w.write(
        "certs/registry.crt",
        &format!(
            "-----BEGIN CERTIFICATE-----\n{}{MARKER}\n-----END CERTIFICATE-----\n",
            auth()
        ),
    );
    let run = w.run(
        &[
            "inspect".into(),
            "--image".into(),
            image.clone(),
            "--cert-dir".into(),
            w.path("certs").display().to_string(),
        ],
        Some("trace"),
        &[],
    );
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert!(
        run.stderr.contains(&f.display().to_string()),
        "{}",
        run.stderr
    );
    report(failures);
}

/// A GnuPG public key to ask signatures of.
fn public_key(dir: &Path) -> PathBuf {
    crate::harness::gpg::signing_key(dir, "signer").2
}

#[test]
fn lookaside_configuration_never_echoes_a_secret() {
    crate::harness::require_tools(&["gpg"]);
    let r = registries();
    let w = World::new();
    good_config(&w);
    let key = public_key(w.dir.path());
    let policy = w.write(
        "policy.json",
        &serde_json::json!({"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": key}]})
            .to_string(),
    );
    let image = format!("{}/mco/small:v1", r.anon);
    let reach = ["--tls-verify=false", "--signature-policy"];
    let policy_s = policy.display().to_string();
    let mut extra: Vec<&str> = reach.to_vec();
    extra.push(&policy_s);
    let mut failures = Vec::new();
    let place = |w: &World, shape: &Shape| -> Placed {
        let f = w.write("registries.d/default.yaml", &shape.text);
        (
            vec![
                "--registries.d".into(),
                w.path("registries.d").display().to_string(),
            ],
            vec![],
            Some(f),
        )
    };
    each_shape_on_every_command(
        &w,
        &image,
        &extra,
        "--registries.d",
        place,
        "r.example",
        &mut failures,
    );
    // Lookaside URLs that carry a user and password.
    let m = MARKER;
    for url in [
        format!("http://{USER}:{m}@127.0.0.1:1/sigs"),
        format!("https://{USER}:{m}@127.0.0.1:1/sigs"),
        format!("ftp://{USER}:{m}@127.0.0.1:1/sigs"),
        format!("file:///nonexistent/{USER}@sigs"),
    ] {
        let text = format!("default-docker:\n  lookaside: {url}\n");
        let shape = Shape {
            name: "lookaside URL with a password",
            text: text.clone(),
            broken: false,
        };
        let f = w.write("registries.d/default.yaml", &text);
        for level in [Some("trace"), None] {
            let mut all = vec!["inspect".to_string(), "--image".into(), image.clone()];
            all.extend(extra.iter().map(|s| s.to_string()));
            all.extend([
                "--registries.d".into(),
                w.path("registries.d").display().to_string(),
            ]);
            let run = w.run(&all, level, &[]);
            check(
                &run,
                &shape,
                "inspect --registries.d",
                Some(&f),
                &mut failures,
            );
            if run.code == Some(0) {
                failures.push(format!("{url}: the image was accepted without a signature"));
            }
        }
    }
    report(failures);
}
