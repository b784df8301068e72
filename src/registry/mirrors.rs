//! Registry mirrors: where a pull may be served from, in order.
//!
//! Two ways to describe mirrors are read into one model, that of
//! containers-registries.conf(5) version 2:
//!
//! - `registries.conf` (TOML) with its `registries.conf.d/*.conf` drop-ins: `[[registry]]`
//!   tables with `prefix`, `location`, `insecure`, `blocked`, `mirror-by-digest-only`, and
//!   `[[registry.mirror]]` entries with `location`, `insecure`, `pull-from-mirror`.
//! - OpenShift objects (YAML, several documents per file): ImageDigestMirrorSet,
//!   ImageTagMirrorSet, ImageContentSourcePolicy, and an install-config's
//!   `imageDigestSources` / `imageContentSources`. They become registry entries the way
//!   the machine-config-operator writes them to the nodes' registries.conf: digest
//!   mirrors are `pull-from-mirror = "digest-only"`, tag mirrors `"tag-only"`, and
//!   `mirrorSourcePolicy: NeverContactSource` blocks the source.
//!
//! [`Mirrors::endpoints`] gives, for one reference, the repositories to try in order: the
//! mirrors that apply to it, then the source unless it is blocked. The rule whose prefix
//! matches the longest part of the reference applies.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

use crate::image::DockerRef;
use crate::io::parse;

/// Which pulls a mirror serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullFrom {
    All,
    DigestOnly,
    TagOnly,
}

impl PullFrom {
    fn parse(s: &str, at: &str) -> Result<Self> {
        match s {
            "" | "all" => Ok(PullFrom::All),
            "digest-only" => Ok(PullFrom::DigestOnly),
            "tag-only" => Ok(PullFrom::TagOnly),
            // The value is not shown (nor below): a file of these may hold credentials.
            _ => {
                bail!("{at}: pull-from-mirror is not one of \"all\", \"digest-only\", \"tag-only\"")
            }
        }
    }

    fn serves(self, by_digest: bool) -> bool {
        match self {
            PullFrom::All => true,
            PullFrom::DigestOnly => by_digest,
            PullFrom::TagOnly => !by_digest,
        }
    }
}

/// One mirror of a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mirror {
    /// `host[:port][/path]`: the mirror of the rule's prefix.
    pub location: String,
    pub insecure: bool,
    pub pull_from: PullFrom,
}

/// One `[[registry]]` entry: a prefix of references and where they are served from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// `host[:port][/path]`, or `*.domain` for every host under a domain.
    pub prefix: String,
    /// The source itself, when it is not at the prefix (`location`).
    pub location: Option<String>,
    pub insecure: bool,
    /// Never contact the source (`blocked`, `NeverContactSource`).
    pub blocked: bool,
    pub mirrors: Vec<Mirror>,
    /// Where the rule was read, for messages.
    pub origin: String,
}

/// A place to pull one image from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The registry host (and port).
    pub registry: String,
    /// The repository path.
    pub repository: String,
    /// Skip TLS verification (and allow plain http) for this endpoint.
    pub insecure: bool,
    /// A mirror rather than the source.
    pub mirror: bool,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)
    }
}

/// Every mirror rule in force.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mirrors {
    pub(crate) rules: Vec<Rule>,
}

// ------------------------------------------------------------------ registries.conf

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ConfFile {
    #[serde(default)]
    registry: Vec<ConfRegistry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ConfRegistry {
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    location: String,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    blocked: bool,
    #[serde(default)]
    mirror_by_digest_only: bool,
    #[serde(default)]
    mirror: Vec<ConfMirror>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ConfMirror {
    location: String,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    pull_from_mirror: String,
}

/// The default file, as the containers tools read it.
pub const DEFAULT_REGISTRIES_CONF: &str = "/etc/containers/registries.conf";

/// Normalises a `host[/path]` location: no scheme, no trailing `/`, Docker Hub's names.
fn clean_location(s: &str, at: &str) -> Result<String> {
    let s = s.trim();
    if s.contains("://") {
        bail!("{at}: a location must be host[:port][/path], without a scheme");
    }
    let s = s.trim_end_matches('/');
    if s.is_empty() {
        bail!("{at}: empty location");
    }
    let last = s.rsplit('/').next().unwrap_or(s);
    if s.contains('@') || (s.contains('/') && last.contains(':')) {
        bail!("{at}: a location must be a registry or repository, without a tag, digest or user");
    }
    let (host, rest) = s.split_once('/').unwrap_or((s, ""));
    let host = match host {
        "index.docker.io" | "registry-1.docker.io" => "docker.io",
        h => h,
    };
    Ok(if rest.is_empty() {
        host.to_string()
    } else {
        format!("{host}/{rest}")
    })
}

impl Mirrors {
    /// Reads a registries.conf and the `registries.conf.d/*.conf` drop-ins beside it (in
    /// name order; an entry with the same prefix as an earlier one replaces it).
    pub fn from_registries_conf(path: &Path) -> Result<Mirrors> {
        let mut m = Mirrors::default();
        m.add_registries_conf(path)?;
        let dropins = path.with_file_name("registries.conf.d");
        if dropins.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dropins)
                .with_context(|| format!("reading {}", dropins.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "conf"))
                .collect();
            files.sort();
            for f in files {
                m.add_registries_conf(&f)?;
            }
        }
        Ok(m)
    }

    fn add_registries_conf(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading registries config {}", path.display()))?;
        self.add_registries_toml(&text, &path.display().to_string())
    }

    fn add_registries_toml(&mut self, text: &str, origin: &str) -> Result<()> {
        let file: ConfFile = parse::toml(text, origin, "registries.conf (version 2)")?;
        for (i, r) in file.registry.into_iter().enumerate() {
            let at = format!("{origin}: [[registry]] #{}", i + 1);
            let prefix = match (r.prefix.is_empty(), r.location.is_empty()) {
                (false, _) => clean_location(&r.prefix, &at)?,
                (true, false) => clean_location(&r.location, &at)?,
                (true, true) => bail!("{at}: neither prefix nor location is set"),
            };
            let location = if r.location.is_empty() {
                None
            } else {
                if prefix.starts_with("*.") {
                    bail!("{at}: a wildcard prefix cannot have a location");
                }
                Some(clean_location(&r.location, &at)).transpose()?
            };
            let mut mirrors = Vec::new();
            for (j, mi) in r.mirror.iter().enumerate() {
                let mat = format!("{at}, mirror #{}", j + 1);
                let mut pull_from = PullFrom::parse(&mi.pull_from_mirror, &mat)?;
                if r.mirror_by_digest_only && pull_from == PullFrom::All {
                    pull_from = PullFrom::DigestOnly;
                }
                mirrors.push(Mirror {
                    location: clean_location(&mi.location, &mat)?,
                    insecure: mi.insecure,
                    pull_from,
                });
            }
            let rule = Rule {
                prefix,
                location: location.filter(|l| *l != r.prefix),
                insecure: r.insecure,
                blocked: r.blocked,
                mirrors,
                origin: at,
            };
            // A later entry for the same prefix replaces the earlier one.
            self.rules.retain(|old| old.prefix != rule.prefix);
            self.rules.push(rule);
        }
        Ok(())
    }

    /// Reads OpenShift mirror objects from a YAML file (see the module documentation).
    pub fn add_openshift_file(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading mirror config {}", path.display()))?;
        self.add_openshift_yaml(&text, &path.display().to_string())
    }

    fn add_openshift_yaml(&mut self, text: &str, origin: &str) -> Result<()> {
        let mut found = 0;
        for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
            let at = format!("{origin}: document {}", i + 1);
            let v = parse::yaml_value(doc, text, &at, "YAML document")?;
            if v.is_null() {
                continue;
            }
            found += self.add_openshift_value(&v, &at)?;
        }
        if found == 0 {
            bail!(
                "{origin}: no mirrors in it (expected an ImageDigestMirrorSet, \
                 ImageTagMirrorSet, ImageContentSourcePolicy, or an install-config with \
                 imageDigestSources or imageContentSources)"
            );
        }
        Ok(())
    }

    /// One YAML document (or a `List` of them); returns the number of sources read.
    fn add_openshift_value(&mut self, v: &serde_yaml_ng::Value, at: &str) -> Result<usize> {
        let kind = v.get("kind").and_then(|k| k.as_str()).unwrap_or("");
        let spec = v.get("spec");
        let list = |holder: Option<&serde_yaml_ng::Value>, key: &str| {
            holder
                .and_then(|h| h.get(key))
                .map(|l| (key.to_string(), l.clone()))
        };
        let (entries, pull_from) = match kind {
            "List" => {
                let mut n = 0;
                let items = v
                    .get("items")
                    .and_then(|i| i.as_sequence())
                    .ok_or_else(|| anyhow!("{at}: a List without items"))?;
                for (j, item) in items.iter().enumerate() {
                    n += self.add_openshift_value(item, &format!("{at}, item {}", j + 1))?;
                }
                return Ok(n);
            }
            "ImageDigestMirrorSet" => (list(spec, "imageDigestMirrors"), PullFrom::DigestOnly),
            "ImageTagMirrorSet" => (list(spec, "imageTagMirrors"), PullFrom::TagOnly),
            "ImageContentSourcePolicy" => {
                (list(spec, "repositoryDigestMirrors"), PullFrom::DigestOnly)
            }
            "" if v.get("imageDigestSources").is_some() => {
                (list(Some(v), "imageDigestSources"), PullFrom::DigestOnly)
            }
            "" if v.get("imageContentSources").is_some() => {
                (list(Some(v), "imageContentSources"), PullFrom::DigestOnly)
            }
            "InstallConfig" | "" => {
                bail!("{at}: an install-config without imageDigestSources or imageContentSources")
            }
            _ => bail!(
                "{at}: its kind holds no mirrors (expected ImageDigestMirrorSet, \
                 ImageTagMirrorSet, ImageContentSourcePolicy or an install-config)"
            ),
        };
        let Some((key, entries)) = entries else {
            bail!("{at}: {kind} without its list of mirrors");
        };
        let entries = entries
            .as_sequence()
            .ok_or_else(|| anyhow!("{at}: {key} is not a list"))?;
        for (j, e) in entries.iter().enumerate() {
            let eat = format!("{at}: {key}[{j}]");
            let source = e
                .get("source")
                .and_then(|s| s.as_str())
                .ok_or_else(|| anyhow!("{eat}: no source"))?;
            let mirrors = match e.get("mirrors") {
                None => Vec::new(),
                Some(m) => m
                    .as_sequence()
                    .ok_or_else(|| anyhow!("{eat}: mirrors is not a list"))?
                    .iter()
                    .map(|m| {
                        m.as_str()
                            .ok_or_else(|| anyhow!("{eat}: a mirror is not a string"))
                            .and_then(|s| clean_location(s, &eat))
                    })
                    .collect::<Result<Vec<_>>>()?,
            };
            let policy = e
                .get("mirrorSourcePolicy")
                .or_else(|| e.get("sourcePolicy"))
                .and_then(|p| p.as_str())
                .unwrap_or("AllowContactingSource");
            let blocked = match policy {
                "AllowContactingSource" => false,
                "NeverContactSource" => true,
                _ => bail!(
                    "{eat}: the source policy is not AllowContactingSource or NeverContactSource"
                ),
            };
            if blocked && mirrors.is_empty() {
                bail!("{eat}: NeverContactSource without mirrors would block {source}");
            }
            self.merge_source(
                &clean_location(source, &eat)?,
                mirrors,
                pull_from,
                blocked,
                &eat,
            );
        }
        Ok(entries.len())
    }

    /// Adds mirrors for a source, after those already known for it (several objects may
    /// name the same source, as on a cluster).
    fn merge_source(
        &mut self,
        prefix: &str,
        mirrors: Vec<String>,
        pull_from: PullFrom,
        blocked: bool,
        origin: &str,
    ) {
        let idx = match self.rules.iter().position(|r| r.prefix == prefix) {
            Some(i) => i,
            None => {
                self.rules.push(Rule {
                    prefix: prefix.to_string(),
                    location: None,
                    insecure: false,
                    blocked: false,
                    mirrors: Vec::new(),
                    origin: origin.to_string(),
                });
                self.rules.len() - 1
            }
        };
        let rule = &mut self.rules[idx];
        rule.blocked |= blocked;
        for location in mirrors {
            if !rule
                .mirrors
                .iter()
                .any(|m| m.location == location && m.pull_from == pull_from)
            {
                rule.mirrors.push(Mirror {
                    location,
                    insecure: false,
                    pull_from,
                });
            }
        }
    }

    /// The rule for a reference, and the part of its name after the matched prefix
    /// (empty, or starting with `/`).
    fn rule_for(&self, name: &str) -> Option<(&Rule, String)> {
        let host = name.split('/').next().unwrap_or(name);
        self.rules
            .iter()
            .filter_map(|r| {
                if let Some(domain) = r.prefix.strip_prefix("*.") {
                    let matches =
                        host.len() > domain.len() + 1 && host.ends_with(&format!(".{domain}"));
                    // A wildcard matches the host; exact prefixes are longer matches.
                    return matches.then(|| (r, 0usize, name[host.len()..].to_string()));
                }
                let rest = name.strip_prefix(r.prefix.as_str())?;
                (rest.is_empty() || rest.starts_with('/'))
                    .then(|| (r, r.prefix.len(), rest.to_string()))
            })
            .max_by_key(|(_, len, _)| *len)
            .map(|(r, _, rest)| (r, rest))
    }

    /// The registries.d namespaces MCO gives `use-sigstore-attachments: true` for these
    /// image policy scopes (`generateSigstoreRegistriesdConfig`): each scope, and the
    /// endpoints that serve it by these rules (`addScopeMirrorsSigstoreRegistriesdConfig`:
    /// the mirrors and the source of its rule, for pulls by digest and by tag), then the
    /// same for each rule whose prefix is nested in the scope. A wildcard rule's source
    /// is not an endpoint. Sorted.
    pub(crate) fn sigstore_attachment_namespaces(&self, scopes: &[String]) -> Vec<String> {
        let mut out: std::collections::BTreeSet<String> = scopes.iter().cloned().collect();
        for scope in scopes {
            self.add_scope_endpoints(scope, &mut out);
            for rule in &self.rules {
                if rule.prefix != *scope && scope_is_nested_inside(&rule.prefix, scope) {
                    self.add_scope_endpoints(&rule.prefix, &mut out);
                }
            }
        }
        out.into_iter().collect()
    }

    /// `addScopeMirrorsSigstoreRegistriesdConfig` for one scope.
    fn add_scope_endpoints(&self, scope: &str, out: &mut std::collections::BTreeSet<String>) {
        let mut name = match scope.strip_prefix("*.") {
            Some(domain) => format!("matched.{domain}"),
            None => scope.to_string(),
        };
        // The repository: without a digest, then without a tag (after the last `/`).
        if let Some(i) = name.find('@') {
            name.truncate(i);
        }
        let dummy = !name.contains('/');
        if dummy {
            name.push_str("/a");
        } else if let Some(i) = name
            .rfind(':')
            .filter(|&i| i > name.rfind('/').unwrap_or(0))
        {
            name.truncate(i);
        }
        let Some((rule, rest)) = self.rule_for(&name) else {
            return;
        };
        let shown = |location: &str| {
            let full = format!("{location}{rest}");
            match full.strip_suffix("/a").filter(|_| dummy) {
                Some(trimmed) => trimmed.to_string(),
                None => full,
            }
        };
        // Every mirror serves a pull by digest, by tag, or both.
        for m in &rule.mirrors {
            out.insert(shown(&m.location));
        }
        if !rule.prefix.starts_with("*.") {
            out.insert(match &rule.location {
                Some(l) => shown(l),
                None => shown(&rule.prefix),
            });
        }
    }

    /// Where the rule that mirrors `r`'s repository was read, when one of its mirrors
    /// serves pulls by digest only (as every ImageDigestMirrorSet and
    /// ImageContentSourcePolicy mirror does): a pull of `r` by tag would pass it by.
    pub fn digest_only_rule(&self, r: &DockerRef) -> Option<&str> {
        let (rule, _) = self.rule_for(&format!("{}/{}", r.registry, r.repository))?;
        rule.mirrors
            .iter()
            .any(|m| !m.pull_from.serves(false))
            .then_some(rule.origin.as_str())
    }

    /// Where to pull `r` from, in order. An error when every way is closed.
    pub fn endpoints(&self, r: &DockerRef) -> Result<Vec<Endpoint>> {
        let name = format!("{}/{}", r.registry, r.repository);
        let by_digest = r.digest.is_some();
        let Some((rule, rest)) = self.rule_for(&name) else {
            return Ok(vec![Endpoint {
                registry: r.registry.clone(),
                repository: r.repository.clone(),
                insecure: false,
                mirror: false,
            }]);
        };
        let mut out = Vec::new();
        for m in rule
            .mirrors
            .iter()
            .filter(|m| m.pull_from.serves(by_digest))
        {
            out.push(endpoint(
                &m.location,
                &rest,
                m.insecure,
                true,
                &rule.origin,
            )?);
        }
        if !rule.blocked {
            let source = rule.location.as_deref().unwrap_or(&name);
            let rest = if rule.location.is_some() { &rest } else { "" };
            out.push(endpoint(source, rest, rule.insecure, false, &rule.origin)?);
        }
        if out.is_empty() {
            bail!(
                "{r}: the source is blocked ({}) and no mirror serves a pull by {}",
                rule.origin,
                if by_digest { "digest" } else { "tag" }
            );
        }
        Ok(out)
    }
}

/// runtime-utils' `ScopeIsNestedInsideScope`, as MCO uses it for mirror rules.
fn scope_is_nested_inside(sub: &str, sup: &str) -> bool {
    crate::trust::image_policy::scope_is_nested_inside(sub, sup)
}

fn endpoint(
    location: &str,
    rest: &str,
    insecure: bool,
    mirror: bool,
    at: &str,
) -> Result<Endpoint> {
    let full = format!("{location}{rest}");
    let (registry, repository) = full
        .split_once('/')
        .filter(|(_, repo)| !repo.is_empty())
        .ok_or_else(|| anyhow!("{at}: {full:?} names no repository"))?;
    Ok(Endpoint {
        registry: registry.to_string(),
        repository: repository.to_string(),
        insecure,
        mirror,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> DockerRef {
        s.parse().unwrap()
    }

    const D: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000001";

    fn names(m: &Mirrors, reference: &str) -> Vec<String> {
        m.endpoints(&r(reference))
            .unwrap()
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn registries_conf_prefixes_mirrors_and_pull_modes() {
        let mut m = Mirrors::default();
        m.add_registries_toml(
            r#"
unqualified-search-registries = ["registry.example"]
[[registry]]
prefix = "registry.example/openshift-release-dev"
location = "registry.example/openshift-release-dev"
[[registry.mirror]]
location = "mirror.example:5000/ocp"
pull-from-mirror = "digest-only"
[[registry.mirror]]
location = "tags.example/ocp"
pull-from-mirror = "tag-only"
insecure = true

[[registry]]
prefix = "registry.example/openshift-release-dev/ocp-v4.0-art-dev"
blocked = true
mirror-by-digest-only = true
[[registry.mirror]]
location = "mirror.example:5000/art"

[[registry]]
prefix = "*.corp.example"
[[registry.mirror]]
location = "mirror.example:5000/corp"
"#,
            "t.conf",
        )
        .unwrap();
        let by_digest = format!("registry.example/openshift-release-dev/ocp-release@{D}");
        assert_eq!(
            names(&m, &by_digest),
            [
                "mirror.example:5000/ocp/ocp-release",
                "registry.example/openshift-release-dev/ocp-release"
            ]
        );
        let eps = m
            .endpoints(&r(
                "registry.example/openshift-release-dev/ocp-release:4.16",
            ))
            .unwrap();
        assert_eq!(eps[0].to_string(), "tags.example/ocp/ocp-release");
        assert!(eps[0].insecure && eps[0].mirror && !eps[1].mirror);
        // The longest prefix wins; blocked leaves only the mirror; digest-only by the
        // legacy flag.
        let art = format!("registry.example/openshift-release-dev/ocp-v4.0-art-dev@{D}");
        assert_eq!(names(&m, &art), ["mirror.example:5000/art"]);
        let e = m
            .endpoints(&r(
                "registry.example/openshift-release-dev/ocp-v4.0-art-dev:x",
            ))
            .unwrap_err();
        assert!(format!("{e}").contains("blocked"), "{e}");
        // Prefixes match at path boundaries only; wildcards match subdomains.
        assert_eq!(
            names(&m, "registry.example/openshift-release-devx/a:1"),
            ["registry.example/openshift-release-devx/a"]
        );
        assert_eq!(
            names(&m, "reg.corp.example/team/app:1"),
            [
                "mirror.example:5000/corp/team/app",
                "reg.corp.example/team/app"
            ]
        );
        assert_eq!(names(&m, "corp.example/a:1"), ["corp.example/a"]);
    }

    #[test]
    fn location_rewrites_the_source() {
        let mut m = Mirrors::default();
        m.add_registries_toml(
            "[[registry]]\nprefix = \"example.com/foo\"\nlocation = \"internal.example/bar\"\n",
            "t",
        )
        .unwrap();
        assert_eq!(
            names(&m, "example.com/foo/baz:1"),
            ["internal.example/bar/baz"]
        );
    }

    #[test]
    fn dropins_replace_entries_with_the_same_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("registries.conf");
        std::fs::write(
            &main,
            "[[registry]]\nprefix=\"a.example/x\"\n[[registry.mirror]]\nlocation=\"m1.example/x\"\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("registries.conf.d")).unwrap();
        std::fs::write(
            dir.path().join("registries.conf.d/50-x.conf"),
            "[[registry]]\nprefix=\"a.example/x\"\n[[registry.mirror]]\nlocation=\"m2.example/x\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("registries.conf.d/ignored.txt"), "junk").unwrap();
        let m = Mirrors::from_registries_conf(&main).unwrap();
        assert_eq!(
            names(&m, "a.example/x/y:1"),
            ["m2.example/x/y", "a.example/x/y"]
        );
    }

    /// MCO's `TestGenerateSigstoreRegistriesConfig`: the registries.d namespaces its
    /// `sigstore-registries.yaml` names for the scopes of its `test-cr2`, with these
    /// mirror sets.
    #[test]
    fn sigstore_attachment_namespaces_as_mco() {
        let scopes: Vec<String> = [
            "a.com/a1/a2",
            "a.com/a1/a2@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "*.example.com",
            "policy.scope",
            "foo.example.com/ns/repo",
        ]
        .map(String::from)
        .to_vec();
        let idms = |entries: &[(&str, &[&str])]| {
            let mut m = Mirrors::default();
            let list: Vec<String> = entries
                .iter()
                .map(|(src, mirrors)| format!("  - source: \"{src}\"\n    mirrors: {mirrors:?}\n"))
                .collect();
            m.add_openshift_yaml(
                &format!(
                    "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\n\
                     metadata: {{name: m}}\nspec:\n  imageDigestMirrors:\n{}",
                    list.concat()
                ),
                "m.yaml",
            )
            .unwrap();
            m
        };
        let sorted = |v: &[&str]| {
            let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
            v.sort();
            v
        };
        let plain = sorted(&[
            "*.example.com",
            "a.com/a1/a2",
            "a.com/a1/a2@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "foo.example.com/ns/repo",
            "policy.scope",
        ]);
        assert_eq!(
            Mirrors::default().sigstore_attachment_namespaces(&scopes),
            plain
        );
        // No mirrors of these scopes.
        let m = idms(&[("y.com/y1/y2", &["y-y1-y2.mirror/y1/y2"])]);
        assert_eq!(m.sigstore_attachment_namespaces(&scopes), plain);
        // a.com/a1/a2 holds sources.
        let m = idms(&[
            ("a.com/a1/a2", &["a-a1-a2.mirror/a1/a2"]),
            ("a.com/a1/a2/a3", &["a-a1-a2-a3.mirror/m1/m2/m3"]),
            ("a.com/a1/a2/a3-1", &["a-a1-a2-a3-1.mirror/m1/m2/m3"]),
            ("x.com/x1/x2", &["x-x1-x2.mirror/m1/m2"]),
        ]);
        let mut want = plain.clone();
        want.extend(sorted(&[
            "a-a1-a2-a3-1.mirror/m1/m2/m3",
            "a-a1-a2-a3.mirror/m1/m2/m3",
            "a-a1-a2.mirror/a1/a2",
            "a.com/a1/a2/a3",
            "a.com/a1/a2/a3-1",
        ]));
        want.sort();
        assert_eq!(m.sigstore_attachment_namespaces(&scopes), want);
        // a.com/a1/a2 is nested in sources.
        let m = idms(&[
            ("a.com", &["a.mirror"]),
            ("a.com/a1", &["a-a1.mirror/a1"]),
            ("x.com/x1/x2", &["x-x1-x2.mirror/x1/x2"]),
        ]);
        let mut want = plain.clone();
        want.push("a-a1.mirror/a1/a2".into());
        want.sort();
        assert_eq!(m.sigstore_attachment_namespaces(&scopes), want);
        // The wildcard scope is a mirror source.
        let m = idms(&[("*.example.com", &["our.mirror/example"])]);
        let mut want = plain.clone();
        want.extend([
            "our.mirror/example/ns/repo".into(),
            "our.mirror/example".into(),
        ]);
        want.sort();
        assert_eq!(m.sigstore_attachment_namespaces(&scopes), want);
        // Wildcard sources nested in the wildcard scope, or matching a scope.
        let m = idms(&[
            ("a.example.com", &["a-example.mirror"]),
            (
                "*.x.example.com",
                &["matched.example.mirror", "star-x.example.mirror"],
            ),
            ("*.scope", &["start-scope.mirror"]),
        ]);
        let mut want = plain.clone();
        want.extend(
            [
                "a-example.mirror",
                "a.example.com",
                "star-x.example.mirror",
                "matched.example.mirror",
                "start-scope.mirror",
            ]
            .map(String::from),
        );
        want.sort();
        assert_eq!(m.sigstore_attachment_namespaces(&scopes), want);
    }

    #[test]
    fn openshift_objects() {
        let mut m = Mirrors::default();
        m.add_openshift_yaml(
            r#"
apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata: {name: release}
spec:
  imageDigestMirrors:
  - source: registry.example/openshift-release-dev/ocp-release
    mirrors: [mirror.example:5000/ocp/release, backup.example/ocp/release]
    mirrorSourcePolicy: NeverContactSource
---
apiVersion: config.openshift.io/v1
kind: ImageTagMirrorSet
metadata: {name: tags}
spec:
  imageTagMirrors:
  - source: registry.example/openshift-release-dev/ocp-release
    mirrors: [tags.example/ocp/release]
---
apiVersion: operator.openshift.io/v1alpha1
kind: ImageContentSourcePolicy
metadata: {name: art}
spec:
  repositoryDigestMirrors:
  - source: registry.example/openshift-release-dev/ocp-v4.0-art-dev
    mirrors: [mirror.example:5000/ocp/art]
"#,
            "m.yaml",
        )
        .unwrap();
        let rel = format!("registry.example/openshift-release-dev/ocp-release@{D}");
        assert_eq!(
            names(&m, &rel),
            [
                "mirror.example:5000/ocp/release",
                "backup.example/ocp/release"
            ]
        );
        assert_eq!(
            names(
                &m,
                "registry.example/openshift-release-dev/ocp-release:4.16"
            ),
            ["tags.example/ocp/release"]
        );
        let art = format!("registry.example/openshift-release-dev/ocp-v4.0-art-dev@{D}");
        assert_eq!(
            names(&m, &art),
            [
                "mirror.example:5000/ocp/art",
                "registry.example/openshift-release-dev/ocp-v4.0-art-dev"
            ]
        );
    }

    #[test]
    fn install_config_forms() {
        for (key, policy) in [
            ("imageDigestSources", "\n  sourcePolicy: NeverContactSource"),
            ("imageContentSources", ""),
        ] {
            let mut m = Mirrors::default();
            m.add_openshift_yaml(
                &format!(
                    "apiVersion: v1\nbaseDomain: example.com\n{key}:\n- source: registry.example/ocp/release\n  mirrors:\n  - mirror.example/ocp/release{policy}\n"
                ),
                "install-config.yaml",
            )
            .unwrap();
            let got = names(&m, &format!("registry.example/ocp/release@{D}"));
            if policy.is_empty() {
                assert_eq!(
                    got,
                    ["mirror.example/ocp/release", "registry.example/ocp/release"]
                );
            } else {
                assert_eq!(got, ["mirror.example/ocp/release"]);
            }
        }
    }

    #[test]
    fn malformed_files_are_refused_with_where() {
        let mut m = Mirrors::default();
        for (text, want) in [
            ("kind: Pod\n", "its kind holds no mirrors"),
            ("apiVersion: v1\nbaseDomain: x\n", "without imageDigestSources"),
            (
                "kind: ImageDigestMirrorSet\nspec:\n  imageDigestMirrors:\n  - mirrors: [a.example/b]\n",
                "imageDigestMirrors[0]: no source",
            ),
            (
                "kind: ImageDigestMirrorSet\nspec:\n  imageDigestMirrors:\n  - source: a.example/b\n    mirrorSourcePolicy: Sometimes\n    mirrors: [m.example/b]\n",
                "the source policy is not",
            ),
            ("kind: ImageDigestMirrorSet\nspec: [\n", "YAML syntax error at line"),
            ("", "no mirrors in it"),
        ] {
            let e = format!("{:#}", m.add_openshift_yaml(text, "f.yaml").unwrap_err());
            assert!(e.contains("f.yaml") && e.contains(want), "{text:?}: {e}");
        }
        for (text, want) in [
            ("[[registry]]\nprefix = 3\n", "not a valid registries.conf"),
            (
                "[[registry]]\nprefix=\"a.example\"\n[[registry.mirror]]\nlocation=\"m.example\"\npull-from-mirror=\"sometimes\"\n",
                "pull-from-mirror is not one of",
            ),
            ("[[registry]]\nprefix=\"https://a.example\"\n", "without a scheme"),
        ] {
            let e = format!("{:#}", m.add_registries_toml(text, "r.conf").unwrap_err());
            assert!(e.contains("r.conf") && e.contains(want), "{text:?}: {e}");
        }
    }
}
