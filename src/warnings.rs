//! Warnings: what a run did that works but deserves attention, kept apart from errors.
//!
//! Every warning the tool gives is a [`Warning`], and its message is defined here, in
//! [`Warning`]'s `Display`. Each job is handed the [`Warnings`] of its run, passes it
//! down to what it calls (the registry and the cache among them), and returns what
//! was given in its report. The binary makes it with an echo, which prints each
//! warning once, as it happens, as `warning: MESSAGE` on stderr (under `-q` without
//! one, printing the run's warnings only when it fails), and puts the report's
//! warnings into its `--json` reports. Made strict (`--strict`),
//! [`Warnings::check_strict`] fails once any warning was given: the jobs call it before
//! they commit an output, so a strict run that warns leaves its outputs untouched.

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;

/// One warning, with its data. `kind` in JSON is the variant's name in kebab-case.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Warning {
    /// `--force` delivered a build that does not fit the target.
    ForcedIncompatible {
        /// The build delivered.
        binary: String,
        /// The target, described.
        target: String,
        /// Why it does not fit.
        reasons: String,
    },
    /// `--force` replaced or unmasked an entry of the `--base` config.
    ForcedBaseChange {
        /// What merging did, in its words.
        change: String,
    },
    /// A spec 2.x config with the payload inline, big enough to cost Ignition v0.x
    /// seconds of CPU and hundreds of MB of RAM at first boot.
    LargeInlineConfig {
        /// The config's size in bytes.
        bytes: u64,
        /// CPU seconds Ignition v0.35 spent per MB of such a config, as measured.
        cpu_seconds_per_mb: f64,
        /// Bytes of RAM it needed per byte of config, as measured.
        ram_per_byte: f64,
        /// CPU seconds Ignition v0.x is expected to spend in its fetch stage.
        cpu_seconds: f64,
        /// Bytes of RAM it is expected to need.
        ram_bytes: u64,
    },
    /// A config too big for the ways a config is usually handed to a node: cloud user
    /// data, and qemu's firmware config (fw_cfg), which Ignition reads in quadratic
    /// time. Named for its first case, a config with the payload inline; a config in
    /// remote mode gets it too when its own entries (a closure's, a base's) are over a
    /// limit, with `remote` set.
    InlineConfigTooBigToHandOver {
        /// The config's size in bytes.
        bytes: u64,
        /// Whether the config is in remote mode (its payloads served, not inline).
        remote: bool,
        /// The user-data limits it exceeds.
        user_data_exceeded: Vec<UserDataLimit>,
        /// Seconds Ignition spent reading 1 MB (10^6 bytes) from fw_cfg under qemu's
        /// TCG, as measured; the time grows with the square of the size.
        fw_cfg_seconds_per_mb_squared: f64,
        /// Seconds Ignition is expected to spend reading this config from fw_cfg.
        fw_cfg_seconds: f64,
    },
    /// A cached blob failed its digest; it was removed and is fetched again.
    CacheBlobDamaged {
        /// The blob's digest.
        digest: String,
        /// The cache directory.
        cache: PathBuf,
        /// What was wrong with it.
        why: String,
    },
    /// A cache index did not parse; it was rebuilt empty.
    CacheIndexRebuilt {
        /// The index file.
        index: PathBuf,
        /// Why it did not parse.
        why: String,
    },
    /// An endpoint (mirror or source) failed and a later one served instead.
    MirrorFallback {
        /// What was fetched: the image, or one of its layers.
        object: String,
        /// The endpoint that served it.
        served_by: String,
        /// Each endpoint tried before, with its error.
        failed: Vec<String>,
    },
    /// An `--image-policy` ImagePolicy in a namespace other than the MCO's: its
    /// requirements do not apply to the MCO image.
    ImagePolicyOtherNamespace {
        /// The file it was read from.
        file: String,
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
    },
    /// Scopes of an `--image-policy` ImagePolicy equal to or nested in a
    /// ClusterImagePolicy scope: only the ClusterImagePolicy applies there.
    ImagePolicyScopesShadowed {
        /// The file it was read from.
        file: String,
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// The scopes skipped.
        scopes: Vec<String>,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::ForcedIncompatible {
                binary,
                target,
                reasons,
            } => write!(
                f,
                "--force: delivering {binary} although it does NOT fit {target}: {reasons}. \
                 The node's first boot will likely fail."
            ),
            Warning::ForcedBaseChange { change } => write!(f, "--base: {change}"),
            Warning::LargeInlineConfig {
                bytes,
                cpu_seconds_per_mb,
                ram_per_byte,
                cpu_seconds,
                ram_bytes,
            } => write!(
                f,
                "the spec 2.2 config is {:.1} MB with the payload inline; Ignition v0.x \
                 (bootimages 4.1-4.5) spends about {cpu_seconds_per_mb} s of CPU per MB and \
                 about {ram_per_byte:.0} bytes of RAM per config byte parsing it (measured with v0.35): expect \
                 about {cpu_seconds:.0} s of CPU and {:.2} GB of RAM in its fetch stage \
                 at first boot. Remote mode (--payload-url URL --payload-out FILE) keeps \
                 the config to a few kB; the node then downloads the payload in the files \
                 stage for a fraction of a second of CPU and about 13 MB of RAM.",
                *bytes as f64 / 1e6,
                *ram_bytes as f64 / 1e9
            ),
            Warning::InlineConfigTooBigToHandOver {
                bytes,
                remote,
                user_data_exceeded,
                fw_cfg_seconds_per_mb_squared,
                fw_cfg_seconds,
            } => {
                let limits: Vec<String> = user_data_exceeded
                    .iter()
                    .map(|l| format!("{} {} KB", l.platform, l.bytes / 1024))
                    .collect();
                write!(
                    f,
                    "the config is {} with the payload {}: over the user-data limit of {}",
                    human_bytes(*bytes),
                    if *remote { "served (remote mode)" } else { "inline" },
                    limits.join(", ")
                )?;
                if *fw_cfg_seconds >= 1.0 {
                    write!(
                        f,
                        "; handed over qemu's fw_cfg (-fw_cfg name=opt/com.coreos/config), \
                         which Ignition reads in quadratic time, it takes about {} under TCG \
                         ({fw_cfg_seconds_per_mb_squared} s for 1 MB, four times as long for \
                         each doubling)",
                        human_seconds(*fw_cfg_seconds)
                    )?;
                }
                if *remote {
                    // The payloads are already out of it: what is left is the config's
                    // own entries, which no flag makes smaller.
                    write!(
                        f,
                        ". Its payloads are already served: what is left is the config's \
                         own entries, so hand it over a way that carries that size."
                    )
                } else {
                    write!(
                        f,
                        ". Remote mode (--payload-url URL --payload-out FILE) takes the \
                         payloads out of the config, leaving its own entries: a few kB, \
                         which every way of handing it over carries unless a closure or \
                         the --base config adds more."
                    )
                }
            }
            Warning::CacheBlobDamaged { digest, cache, why } => write!(
                f,
                "cached blob {digest} in {} was damaged ({why}); fetching it again",
                cache.display()
            ),
            Warning::CacheIndexRebuilt { index, why } => write!(
                f,
                "the cache index {} was damaged ({why}); rebuilt it empty (images pulled \
                 before need pulling again for --offline runs)",
                index.display()
            ),
            Warning::MirrorFallback {
                object,
                served_by,
                failed,
            } => write!(
                f,
                "{object}: served by {served_by} after {} failed: {}",
                if failed.len() == 1 {
                    "an endpoint".to_string()
                } else {
                    format!("{} endpoints", failed.len())
                },
                failed.join("; ")
            ),
            Warning::ImagePolicyOtherNamespace {
                file,
                name,
                namespace,
            } => write!(
                f,
                "{file}: ImagePolicy {namespace}/{name} is ignored: it is in namespace \
                 {namespace}, and only ImagePolicy objects in openshift-machine-config-operator apply to \
                 the MCO image (its scopes still get use-sigstore-attachments in registries.d, \
                 as MCO renders it)"
            ),
            Warning::ImagePolicyScopesShadowed {
                file,
                name,
                namespace,
                scopes,
            } => write!(
                f,
                "{file}: ImagePolicy {namespace}/{name}: scope(s) {} equal or nest inside a \
                 ClusterImagePolicy scope, so only the ClusterImagePolicy applies there, as \
                 MCO renders it (the cluster marks the ImagePolicy Pending)",
                scopes
                    .iter()
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// The most a cloud platform's user data carries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UserDataLimit {
    /// The platform, and what it calls user data when that differs.
    pub platform: String,
    /// The limit in bytes.
    pub bytes: u64,
}

/// `BYTES` as kB or MB (powers of ten), for messages.
fn human_bytes(bytes: u64) -> String {
    if bytes >= 1_000_000 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{:.0} kB", bytes as f64 / 1e3)
    }
}

/// `SECONDS` as seconds, minutes or hours, for messages.
fn human_seconds(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} minutes", s / 60.0)
    } else {
        format!("{:.1} hours", s / 3600.0)
    }
}

impl Warning {
    /// The JSON form: `kind`, `message` (the text printed on stderr) and the data.
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::to_value(self).expect("warnings serialize");
        v["message"] = Value::from(self.to_string());
        v
    }
}

/// The JSON array of some warnings.
pub fn to_json(warnings: &[Warning]) -> Value {
    Value::Array(warnings.iter().map(Warning::to_json).collect())
}

/// The one form of a warning on stderr.
pub fn line(w: &Warning) -> String {
    format!("warning: {w}")
}

/// The warnings of one run, in the order given. Clones share the list: the job and
/// what it calls add to the same run's warnings.
#[derive(Clone, Default)]
pub struct Warnings(Arc<Run>);

#[derive(Default)]
struct Run {
    list: Mutex<Vec<Warning>>,
    strict: bool,
    echo: Option<fn(&Warning)>,
}

impl fmt::Debug for Warnings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Warnings")
            .field("list", &self.list())
            .field("strict", &self.0.strict)
            .finish()
    }
}

impl Warnings {
    /// The warnings of a new run: `strict` makes [`Warnings::check_strict`] fail once
    /// any is given; `echo` is called with each as it is given.
    pub fn new(strict: bool, echo: Option<fn(&Warning)>) -> Self {
        Warnings(Arc::new(Run {
            list: Mutex::default(),
            strict,
            echo,
        }))
    }

    /// Gives a warning.
    pub fn warn(&self, w: Warning) {
        if let Some(echo) = self.0.echo {
            echo(&w);
        }
        self.given().push(w);
    }

    fn given(&self) -> std::sync::MutexGuard<'_, Vec<Warning>> {
        // A panic while holding the lock leaves a list that is still whole.
        self.0.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The warnings given so far, in order.
    pub fn list(&self) -> Vec<Warning> {
        self.given().clone()
    }

    /// Fails when the run is strict and a warning was given. Jobs call it before they
    /// commit an output.
    pub fn check_strict(&self) -> Result<(), StrictFailure> {
        let count = self.given().len();
        if self.0.strict && count > 0 {
            return Err(StrictFailure { count });
        }
        Ok(())
    }
}

/// Why a `--strict` run failed.
#[derive(Debug, thiserror::Error)]
#[error(
    "--strict: {count} warning{} (above) turned into failure; no output was written",
    if *count == 1 { "" } else { "s" }
)]
pub struct StrictFailure {
    /// How many warnings were given.
    pub count: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_carries_kind_message_and_data() {
        let w = Warning::CacheIndexRebuilt {
            index: PathBuf::from("cache/index.json"),
            why: "EOF".into(),
        };
        let v = w.to_json();
        assert_eq!(v["kind"], "cache-index-rebuilt");
        assert_eq!(v["index"], "cache/index.json");
        assert_eq!(v["message"], w.to_string());
        assert!(line(&w).starts_with("warning: the cache index cache/index.json"));
    }

    #[test]
    fn runs_keep_their_own_warnings_and_strictness() {
        let w = || Warning::CacheIndexRebuilt {
            index: PathBuf::from("index.json"),
            why: "EOF".into(),
        };
        let (a, b) = (Warnings::new(true, None), Warnings::new(false, None));
        assert!(a.check_strict().is_ok());
        a.clone().warn(w());
        b.warn(w());
        b.warn(w());
        assert_eq!(a.list(), vec![w()]);
        assert_eq!(b.list().len(), 2);
        assert_eq!(a.check_strict().unwrap_err().count, 1);
        assert!(b.check_strict().is_ok(), "only a strict run fails");
    }

    #[test]
    fn fallback_counts_the_endpoints() {
        let w = Warning::MirrorFallback {
            object: "docker://r.example/x@sha256:ab".into(),
            served_by: "r.example/x".into(),
            failed: vec!["m1.example/x: 404".into(), "m2.example/x: 500".into()],
        };
        assert_eq!(
            w.to_string(),
            "docker://r.example/x@sha256:ab: served by r.example/x after 2 endpoints \
             failed: m1.example/x: 404; m2.example/x: 500"
        );
    }
}
