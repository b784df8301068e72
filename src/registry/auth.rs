//! Registry credentials, found the way containers-auth.json(5) describes.
//!
//! `--creds USER[:PASSWORD]` comes first, for every registry. Then files, in order:
//! `--authfile`, else `REGISTRY_AUTH_FILE` (either one, when given, is the only file
//! read, as skopeo and podman do); otherwise `$XDG_RUNTIME_DIR/containers/auth.json`,
//! `$XDG_CONFIG_HOME/containers/auth.json` (default `~/.config`),
//! `$DOCKER_CONFIG/config.json` (default `~/.docker`), then the legacy `~/.dockercfg`
//! (the same entries without the `auths` wrapper). All share the
//! `{"auths": {KEY: {"auth": base64(user:password)}}}` format, as do OpenShift pull
//! secrets; an entry with an `identitytoken` gets a registry token through the OAuth2
//! refresh-token flow instead of a password. KEY is a host or a path prefix (`host/ns/repo`); the longest prefix that
//! matches the repository wins, and the first file with a match is used. Within a file,
//! a `credHelpers` entry for the registry comes first, then `auths`, then `credsStore`;
//! a helper is the program `docker-credential-NAME` (its `get` protocol).

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use serde::Deserialize;

use crate::io::parse;

/// A user name and password (or token). Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub username: String,
    /// The password or token.
    pub password: String,
    /// An OAuth2 refresh token (`identitytoken`), used instead of the password.
    pub identity_token: Option<String>,
    /// Which file and key they came from, for messages.
    pub source: String,
}

/// Parses `--creds USER[:PASSWORD]`; a missing password is asked for on the terminal.
pub fn parse_creds(s: &str) -> Result<Credentials> {
    let (username, password) = match s.split_once(':') {
        Some((u, p)) => (u.to_string(), p.to_string()),
        None => {
            let prompt = format!("Password for {s}: ");
            let p = rpassword::prompt_password(prompt).map_err(|e| {
                anyhow!("--creds {s}: no password given and none could be asked for ({e})")
            })?;
            (s.to_string(), p)
        }
    };
    if username.is_empty() {
        bail!("--creds: empty user name");
    }
    Ok(Credentials {
        username,
        password,
        identity_token: None,
        source: "--creds".to_string(),
    })
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// Where credential files are looked for; [`AuthFiles::from_env`] reads the process
/// environment, tests build it by hand.
#[derive(Clone, Debug, Default)]
pub struct AuthFiles {
    /// `--authfile`.
    pub explicit: Option<PathBuf>,
    /// `REGISTRY_AUTH_FILE`.
    pub registry_auth_file: Option<PathBuf>,
    /// `XDG_RUNTIME_DIR`.
    pub xdg_runtime_dir: Option<PathBuf>,
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `DOCKER_CONFIG`.
    pub docker_config: Option<PathBuf>,
    /// `--creds`: used for every registry, before any file.
    pub creds: Option<Credentials>,
}

impl AuthFiles {
    /// The auth files of this environment: `explicit` (`--authfile`), else
    /// `REGISTRY_AUTH_FILE`, else the containers and docker default locations under
    /// `XDG_RUNTIME_DIR`, `XDG_CONFIG_HOME`, `HOME` and `DOCKER_CONFIG`.
    pub fn from_env(explicit: Option<PathBuf>) -> Self {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        AuthFiles {
            explicit,
            registry_auth_file: var("REGISTRY_AUTH_FILE"),
            xdg_runtime_dir: var("XDG_RUNTIME_DIR"),
            home: var("HOME"),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            docker_config: var("DOCKER_CONFIG"),
            creds: None,
        }
    }

    /// The files to read, in order, and whether each must exist.
    fn candidates(&self) -> Vec<(PathBuf, bool)> {
        if let Some(f) = self.explicit.as_ref().or(self.registry_auth_file.as_ref()) {
            return vec![(f.clone(), true)];
        }
        let mut v = Vec::new();
        if let Some(d) = &self.xdg_runtime_dir {
            v.push((d.join("containers").join("auth.json"), false));
        }
        let config = self
            .xdg_config_home
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".config")));
        if let Some(d) = config {
            v.push((d.join("containers").join("auth.json"), false));
        }
        let docker = self
            .docker_config
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".docker")));
        if let Some(d) = docker {
            v.push((d.join("config.json"), false));
        }
        if let Some(h) = &self.home {
            v.push((h.join(".dockercfg"), false));
        }
        v
    }

    /// The credentials for `registry/repository`: `--creds`, else the first file that
    /// has some.
    pub fn find(&self, registry: &str, repository: &str) -> Result<Option<Credentials>> {
        if let Some(c) = &self.creds {
            return Ok(Some(c.clone()));
        }
        for (path, required) in self.candidates() {
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("reading auth file {}", path.display()))
                }
            };
            if let Some(c) = find_in(&bytes, &path, registry, repository)? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }
}

#[derive(Deserialize)]
struct AuthFile {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, AuthEntry>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: std::collections::BTreeMap<String, String>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
}

/// What `docker-credential-NAME get` prints.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct HelperReply {
    username: String,
    secret: String,
}

/// The server name a credential helper is asked about (Docker Hub's legacy URL).
fn helper_server(registry: &str) -> &str {
    if registry == "docker.io" {
        "https://index.docker.io/v1/"
    } else {
        registry
    }
}

/// Runs `docker-credential-NAME get` for `registry`. `None` when the helper has none.
/// Neither its output nor its errors are echoed: they may hold the secret.
fn run_helper(name: &str, registry: &str, file: &Path) -> Result<Option<Credentials>> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let program = format!("docker-credential-{name}");
    let source = format!("{} (credential helper {program})", file.display());
    let mut child = Command::new(&program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("{source}: cannot run {program}"))?;
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(helper_server(registry).as_bytes())
        .with_context(|| format!("{source}: writing to {program}"))?;
    let out = child
        .wait_with_output()
        .with_context(|| format!("{source}: running {program}"))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stdout).to_lowercase()
            + &String::from_utf8_lossy(&out.stderr).to_lowercase();
        if said.contains("credentials not found") {
            return Ok(None);
        }
        bail!(
            "{source}: {program} get failed for {registry} ({})",
            out.status
        );
    }
    let reply: HelperReply = serde_json::from_slice(&out.stdout)
        .map_err(|_| anyhow!("{source}: {program} printed no Username/Secret JSON"))?;
    if reply.username == "<token>" {
        // The helper holds an identity token (a refresh token), not a password.
        return Ok(Some(Credentials {
            username: String::new(),
            password: String::new(),
            identity_token: Some(reply.secret),
            source,
        }));
    }
    Ok(Some(Credentials {
        username: reply.username,
        password: reply.secret,
        identity_token: None,
        source,
    }))
}

#[derive(Deserialize)]
struct AuthEntry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    identitytoken: Option<String>,
}

/// Normalises a key: legacy docker keys are URLs (`https://index.docker.io/v1/`).
fn normalise_key(key: &str) -> String {
    let k = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"));
    let k = match k {
        // A URL key names a host only; its path is an API version, not a namespace.
        Some(rest) => rest.split('/').next().unwrap_or(rest),
        None => key.trim_end_matches('/'),
    };
    match k {
        "index.docker.io" | "registry-1.docker.io" => "docker.io".to_string(),
        k => k.to_string(),
    }
}

fn find_in(
    bytes: &[u8],
    path: &Path,
    registry: &str,
    repository: &str,
) -> Result<Option<Credentials>> {
    // Never echo the file's content: `parse` names the place and the kind only.
    let origin = path.display().to_string();
    let file: AuthFile = if path.file_name().is_some_and(|n| n == ".dockercfg") {
        // The legacy format: the `auths` map itself.
        AuthFile {
            auths: parse::json(bytes, &origin, "auth file")?,
            cred_helpers: Default::default(),
            creds_store: None,
        }
    } else {
        parse::json(bytes, &origin, "auth file")?
    };
    if let Some(helper) = file
        .cred_helpers
        .iter()
        .find(|(k, _)| normalise_key(k) == registry)
        .map(|(_, h)| h)
    {
        return run_helper(helper, registry, path);
    }
    let full = format!("{registry}/{repository}");
    let best = file
        .auths
        .iter()
        .map(|(k, v)| (normalise_key(k), k, v))
        .filter(|(k, _, _)| full == *k || full.starts_with(&format!("{k}/")))
        .max_by_key(|(k, _, _)| k.len());
    let Some((_, key, entry)) = best else {
        return match &file.creds_store {
            Some(store) => run_helper(store, registry, path),
            None => Ok(None),
        };
    };
    let source = format!("{} (key {key:?})", path.display());
    let identity_token = entry.identitytoken.clone().filter(|t| !t.is_empty());
    let (username, password) = match (&entry.auth, &entry.username, &entry.password) {
        (Some(a), _, _) if !a.is_empty() => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(a.trim())
                .map_err(|_| anyhow!("{source}: \"auth\" is not valid base64"))?;
            let s = String::from_utf8(decoded)
                .map_err(|_| anyhow!("{source}: \"auth\" is not UTF-8"))?;
            let (u, p) = s
                .split_once(':')
                .ok_or_else(|| anyhow!("{source}: \"auth\" is not user:password"))?;
            (u.to_string(), p.to_string())
        }
        (_, Some(u), Some(p)) => (u.clone(), p.clone()),
        _ if identity_token.is_some() => (String::new(), String::new()),
        _ => bail!("{source}: the entry has neither \"auth\" nor username and password"),
    };
    Ok(Some(Credentials {
        username,
        password,
        identity_token,
        source,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn write(dir: &Path, rel: &str, body: &str) -> PathBuf {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn longest_path_prefix_wins() {
        let body = format!(
            r#"{{"auths": {{
                "registry.example": {{"auth": "{}"}},
                "registry.example/openshift": {{"auth": "{}"}},
                "registry.example/openshift/mco": {{"auth": "{}"}},
                "registry.example/openshift/mc": {{"auth": "{}"}}
            }}}}"#,
            b64("host:1"),
            b64("ns:2"),
            b64("repo:3"),
            b64("partial:4")
        );
        let p = Path::new("x.json");
        let user = |repo: &str| {
            find_in(body.as_bytes(), p, "registry.example", repo)
                .unwrap()
                .map(|c| c.username)
        };
        assert_eq!(user("openshift/mco").as_deref(), Some("repo"));
        assert_eq!(user("openshift/mcd").as_deref(), Some("ns"));
        assert_eq!(user("other/x").as_deref(), Some("host"));
        assert_eq!(
            find_in(body.as_bytes(), p, "registry.example:443", "openshift/mco").unwrap(),
            None
        );
    }

    #[test]
    fn legacy_docker_keys_and_plain_fields() {
        let body = r#"{"auths": {
            "https://registry.example/v1/": {"username": "u", "password": "p"},
            "http://127.0.0.1:5000/v2/": {"auth": "YTpi"}
        }}"#;
        let p = Path::new("c.json");
        let c = find_in(body.as_bytes(), p, "registry.example", "library/busybox")
            .unwrap()
            .unwrap();
        assert_eq!((c.username.as_str(), c.password.as_str()), ("u", "p"));
        let c = find_in(body.as_bytes(), p, "127.0.0.1:5000", "a/b")
            .unwrap()
            .unwrap();
        assert_eq!((c.username.as_str(), c.password.as_str()), ("a", "b"));
    }

    #[test]
    fn file_order_and_exclusive_explicit_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let entry = |u: &str| format!(r#"{{"auths":{{"r.io":{{"auth":"{}"}}}}}}"#, b64(u));
        write(d, "run/containers/auth.json", &entry("xdg:x"));
        write(d, "home/.docker/config.json", &entry("docker:x"));
        let explicit = write(d, "explicit.json", r#"{"auths":{}}"#);
        let mut files = AuthFiles {
            explicit: None,
            registry_auth_file: None,
            xdg_runtime_dir: Some(d.join("run")),
            home: Some(d.join("home")),
            xdg_config_home: None,
            docker_config: None,
            creds: None,
        };
        let user = |f: &AuthFiles| f.find("r.io", "a").unwrap().map(|c| c.username);
        assert_eq!(user(&files).as_deref(), Some("xdg"));
        files.xdg_runtime_dir = Some(d.join("nowhere"));
        assert_eq!(user(&files).as_deref(), Some("docker"));
        files.registry_auth_file = Some(explicit.clone());
        assert_eq!(user(&files), None, "an explicit file is the only one read");
        files.explicit = Some(d.join("missing.json"));
        assert!(files.find("r.io", "a").is_err(), "a named file must exist");
    }

    #[test]
    fn containers_auth_order_and_legacy_dockercfg() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let entry = |u: &str| format!(r#"{{"auths":{{"r.io":{{"auth":"{}"}}}}}}"#, b64(u));
        let mut files = AuthFiles {
            home: Some(d.join("home")),
            ..AuthFiles::default()
        };
        let user = |f: &AuthFiles| f.find("r.io", "a").unwrap().map(|c| c.username);
        assert_eq!(user(&files), None);
        // ~/.dockercfg: the legacy format, without "auths".
        write(
            d,
            "home/.dockercfg",
            &format!(
                r#"{{"https://r.io":{{"auth":"{}","email":"e"}}}}"#,
                b64("cfg:x")
            ),
        );
        assert_eq!(user(&files).as_deref(), Some("cfg"));
        write(d, "home/.docker/config.json", &entry("docker:x"));
        assert_eq!(user(&files).as_deref(), Some("docker"));
        files.docker_config = Some(d.join("dc"));
        write(d, "dc/config.json", &entry("dockerconfig:x"));
        assert_eq!(user(&files).as_deref(), Some("dockerconfig"));
        write(d, "home/.config/containers/auth.json", &entry("config:x"));
        assert_eq!(user(&files).as_deref(), Some("config"));
        files.xdg_config_home = Some(d.join("xdg"));
        write(d, "xdg/containers/auth.json", &entry("xdgconfig:x"));
        assert_eq!(user(&files).as_deref(), Some("xdgconfig"));
        files.xdg_runtime_dir = Some(d.join("run"));
        write(d, "run/containers/auth.json", &entry("runtime:x"));
        assert_eq!(user(&files).as_deref(), Some("runtime"));
        files.creds = Some(parse_creds("flag:pw").unwrap());
        assert_eq!(user(&files).as_deref(), Some("flag"));
    }

    #[test]
    fn identity_tokens_and_creds() {
        let body = r#"{"auths": {"r.io": {"auth": "PHRva2VuPjo=", "identitytoken": "rt"}}}"#;
        let c = find_in(body.as_bytes(), Path::new("f"), "r.io", "a")
            .unwrap()
            .unwrap();
        assert_eq!(c.identity_token.as_deref(), Some("rt"));
        let only = r#"{"auths": {"r.io": {"identitytoken": "rt"}}}"#;
        let c = find_in(only.as_bytes(), Path::new("f"), "r.io", "a")
            .unwrap()
            .unwrap();
        assert_eq!(c.identity_token.as_deref(), Some("rt"));
        let c = parse_creds("u:p:with:colons").unwrap();
        assert_eq!(
            (c.username.as_str(), c.password.as_str()),
            ("u", "p:with:colons")
        );
        assert!(parse_creds(":p").is_err());
    }

    #[test]
    fn secrets_stay_out_of_debug_and_errors() {
        let c = Credentials {
            username: "user".into(),
            password: "hunter2".into(),
            identity_token: Some("hunter3".into()),
            source: "f".into(),
        };
        assert!(!format!("{c:?}").contains("hunter2"));
        assert!(!format!("{c:?}").contains("hunter3"));
        let bad = r#"{"auths": {"r.io": {"auth": "hunter2-not-base64!"}}}"#;
        let e = find_in(bad.as_bytes(), Path::new("f"), "r.io", "a").unwrap_err();
        assert!(!format!("{e:#}").contains("hunter2"));
    }
}
