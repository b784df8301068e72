//! Command-line types. They are turned into plain values before any work is done.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args, Parser, Subcommand};

use crate::choose::osrelease::OsRelease;
use crate::choose::target::TargetArgs;
use crate::choose::target::{from_os_release, NameForm, Named, NamedFile};
use crate::ignition::SpecVersion;
use crate::image::{ImageRef, Platform};
use crate::inject::{InjectConfig, Remote};
use crate::io::output::Output;
use crate::io::Input;
use crate::registry::mirrors::DEFAULT_REGISTRIES_CONF;
use crate::registry::{
    AuthFiles, Credentials, Mirrors, ProgressMode, RegistryOptions, RetryPolicy,
};
use crate::release::Release;
use crate::transport::OpenOptions;
use crate::trust::image_policy::{ImagePolicies, MCO_BASE_POLICY};
use crate::trust::{Policy, DEFAULT_POLICY, DEFAULT_REGISTRIES_D};
use crate::userdata;
use crate::verify::VerifyConfig;
use crate::warnings::Warnings;

/// Deliver the machine-config-daemon that fits an old OpenShift bootimage through Ignition.
#[derive(Debug, Parser)]
#[command(name = "mcd-inject", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Stop the whole run after this long (seconds, or with a unit: 90s, 10m, 1h),
    /// leaving no output and no temp file behind; exit code 1.
    #[arg(long, global = true, value_name = "DURATION", value_parser = duration)]
    pub timeout: Option<std::time::Duration>,
    /// Treat warnings as errors: a run that gives one fails (exit code 1) after printing
    /// it, and writes no output.
    #[arg(long, global = true, env = "MCD_INJECT_STRICT", value_parser = BoolishValueParser::new())]
    pub strict: bool,
    #[command(flatten)]
    pub log: LogArgs,
}

impl Cli {
    /// Usage errors clap's attributes cannot express (exit code 2, like theirs): flags
    /// that cannot go together, a bootimage the table and the other flags cannot make a
    /// target of.
    pub fn check_usage(&self) -> Result<(), clap::Error> {
        let usage = |sub: &str, kind: clap::error::ErrorKind, msg: String| {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            cmd.build();
            let sub = cmd.find_subcommand_mut(sub).expect("a subcommand");
            Err(sub.error(kind, msg))
        };
        use clap::error::ErrorKind::{ArgumentConflict, InvalidValue};
        let registry = match &self.command {
            Command::Extract(a) => Some(("extract", &a.image.registry)),
            Command::Inspect(a) => Some(("inspect", &a.image.registry)),
            Command::Pull(a) => Some(("pull", &a.image.registry)),
            Command::Inject(a) => Some(("inject", &a.image.registry)),
            Command::Verify(a) => Some(("verify", &a.registry)),
            _ => None,
        };
        if let Some((sub, r)) = registry {
            // Checked here rather than by a value parser, whose error would quote the
            // value: a password.
            let creds = r.mirrors.creds.as_deref();
            if creds.is_some_and(|c| c.split(':').next().unwrap_or("").is_empty()) {
                return usage(
                    sub,
                    InvalidValue,
                    "--creds: no user name: expected USER[:PASSWORD]".into(),
                );
            }
        }
        match &self.command {
            Command::Extract(a) if a.json && a.output == Output::Stdout => usage(
                "extract",
                ArgumentConflict,
                "--json and -o - both want stdout: write the file with -o FILE".into(),
            ),
            Command::Inject(a) => {
                if a.ign == Output::Stdout && a.json.target() == Some(Output::Stdout) {
                    return usage(
                        "inject",
                        ArgumentConflict,
                        "--ign - and --json both want stdout: write the JSON with --json-out FILE"
                            .into(),
                    );
                }
                let outputs = [
                    ("--ign", Some(&a.ign)),
                    ("--payload-out", a.payload_out.as_ref()),
                    ("--json-out", a.json.json_out.as_ref()),
                ];
                for (i, (f1, o1)) in outputs.iter().enumerate() {
                    for (f2, o2) in &outputs[i + 1..] {
                        if let (Some(Output::File(p1)), Some(Output::File(p2))) = (o1, o2) {
                            let same = |p: &std::path::Path| std::path::absolute(p).ok();
                            if p1 == p2 || same(p1).is_some_and(|a| Some(a) == same(p2)) {
                                return usage(
                                    "inject",
                                    ArgumentConflict,
                                    format!("{f1} and {f2} both name {}", p1.display()),
                                );
                            }
                        }
                    }
                }
                let target = match a.target.check(&a.image.platform.architecture) {
                    Ok(t) => t,
                    Err(e) => return usage("inject", InvalidValue, e),
                };
                // A scheme not even the newest spec the bootimage reads can fetch.
                if let (Some(url), Some(t)) = (&a.payload_url, target) {
                    let scheme = url.split_once(':').map_or("", |(s, _)| s);
                    let schemes = t.max_spec.url_schemes();
                    if !schemes.contains(&scheme) {
                        return usage(
                            "inject",
                            InvalidValue,
                            format!(
                                "--payload-url {url}: the Ignition of bootimage {} cannot fetch \
                                 it (spec {} reads {} URLs)",
                                t.bootimage,
                                t.max_spec.as_str(),
                                schemes.join(", ")
                            ),
                        );
                    }
                }
                Ok(())
            }
            Command::Verify(a) => match &a.bootimage {
                Some(b) if a.target_rhel.is_none() => {
                    match crate::choose::target::bootimage(b.version) {
                        Err(e) => usage(
                            "verify",
                            InvalidValue,
                            format!("--bootimage {}: {e}", b.value),
                        ),
                        Ok(_) => Ok(()),
                    }
                }
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// Diagnostics on stderr (docs/architecture.md says what is logged).
#[derive(Debug, Args)]
#[command(next_help_heading = "Logging")]
pub struct LogArgs {
    /// Log what is done: registry endpoints, layers read, cache entries, timings.
    /// Twice for debug, three times for trace.
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,
    /// Log level: off, error, warn, info, debug, trace (wins over -v). Without either,
    /// RUST_LOG is read (env_logger syntax), else warnings only.
    #[arg(long, global = true, value_name = "LEVEL", value_parser = crate::cmdline::logging::parse_level)]
    pub log_level: Option<log::LevelFilter>,
}

impl LogArgs {
    pub fn settings(&self) -> crate::cmdline::logging::LogSettings {
        crate::cmdline::logging::LogSettings {
            level: self.log_level,
            verbose: self.verbose,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write one file of an image to a file or stdout, as the layered image defines it.
    Extract(ExtractArgs),
    /// Show an image's layers, os-release and machine-config-daemon builds, with their
    /// ELF facts and a verdict for each bootimage.
    Inspect(InspectArgs),
    /// Fetch a registry image into the local cache, for later --offline runs.
    Pull(PullArgs),
    /// Write an Ignition config that delivers the MCD build fitting a bootimage.
    Inject(InjectArgs),
    /// Check an Ignition config written by inject.
    Verify(VerifyArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completion(CompletionArgs),
    /// Print the man page, or write one page per command into a directory.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write mcd-inject.1 and mcd-inject-COMMAND.1 into DIR instead of printing
    /// mcd-inject.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Which image to read. (A heading set with `next_help_heading` stays in force after a
/// flattened struct: the fields that follow one name their own `help_heading`.)
#[derive(Debug, Args)]
#[command(next_help_heading = "Image")]
pub struct ImageArgs {
    /// Image reference: `oci:DIR[:TAG]`, `oci-archive:FILE[:TAG]`,
    /// `docker-archive:FILE[:REF]`, `docker://HOST/REPO[:TAG|@DIGEST]`
    #[arg(
        long,
        value_name = "REF",
        required_unless_present = "release",
        conflicts_with = "release"
    )]
    pub image: Option<ImageRef>,
    /// An OpenShift release image, by digest, or by tag when no mirror of --idms serves
    /// it (the tag is resolved to its digest once); or a local layout of one: the
    /// machine-config-operator image it names is read.
    #[arg(long, value_name = "REF")]
    pub release: Option<ImageRef>,
    /// Platform to pick from a multi-arch index, os/arch[/variant].
    #[arg(
        long,
        value_name = "OS/ARCH[/VARIANT]",
        default_value = "linux/amd64",
        env = "MCD_INJECT_PLATFORM"
    )]
    pub platform: Platform,
    /// Largest file that may be read out of the image, from its tar header (bytes, or
    /// with a K, M or G suffix for KiB, MiB, GiB).
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "1G",
        value_parser = byte_size,
        env = "MCD_INJECT_MAX_FILE_SIZE"
    )]
    pub max_file_size: u64,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// How to reach registries, and the cache.
#[derive(Debug, Args)]
#[command(next_help_heading = "Registry")]
pub struct RegistryArgs {
    /// Registry credentials file (containers-auth.json format; an OpenShift pull secret
    /// works). Default: $REGISTRY_AUTH_FILE, else $XDG_RUNTIME_DIR/containers/auth.json,
    /// else ~/.docker/config.json.
    #[arg(long, value_name = "FILE", env = "MCD_INJECT_AUTHFILE")]
    pub authfile: Option<PathBuf>,
    /// Verify registry TLS certificates (`--tls-verify` alone is `--tls-verify=true`);
    /// `--tls-verify=false` also allows plain http.
    #[arg(
        long,
        value_name = "BOOL",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        action = ArgAction::Set,
        env = "MCD_INJECT_TLS_VERIFY"
    )]
    pub tls_verify: bool,
    /// A directory of extra CA certificates (*.crt) for registries.
    #[arg(long, value_name = "DIR", env = "MCD_INJECT_CERT_DIR")]
    pub cert_dir: Option<PathBuf>,
    /// The image cache (an OCI layout). Default: $XDG_CACHE_HOME/mcd-inject.
    #[arg(long, value_name = "DIR", env = "MCD_INJECT_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Never touch the network: registry images come from the cache only.
    #[arg(long, env = "MCD_INJECT_OFFLINE", value_parser = BoolishValueParser::new())]
    pub offline: bool,
    /// Print nothing on success but the output asked for: no progress, no summary line,
    /// no notes, no warnings (still in --json reports), no `ok:` lines of verify. A run
    /// that fails prints its warnings, then the error.
    #[arg(
        short,
        long,
        env = "MCD_INJECT_QUIET",
        value_parser = BoolishValueParser::new(),
        help_heading = "Logging"
    )]
    pub quiet: bool,
    /// A download slower than this many bytes per second for --low-speed-time is cut
    /// and resumed (like a dropped connection); 0 turns the check off.
    #[arg(long, value_name = "BYTES", default_value_t = 1024)]
    pub low_speed_limit: u64,
    /// How long a download may stay below --low-speed-limit; also the longest wait for
    /// a registry's answer or for the next bytes of a body.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration)]
    pub low_speed_time: std::time::Duration,
    #[command(flatten)]
    pub mirrors: MirrorArgs,
}

/// Mirrors and credentials given on the command line (docs/registry.md).
#[derive(Debug, Args)]
#[command(next_help_heading = "Registry")]
pub struct MirrorArgs {
    /// A containers-registries.conf(5) file (version 2), with the registries.conf.d
    /// drop-ins beside it. Default: $CONTAINERS_REGISTRIES_CONF, else
    /// ~/.config/containers/registries.conf, else /etc/containers/registries.conf.
    #[arg(long, value_name = "FILE")]
    pub registries_conf: Option<PathBuf>,
    /// OpenShift mirror objects (YAML): ImageDigestMirrorSet, ImageTagMirrorSet,
    /// ImageContentSourcePolicy, or an install-config's imageDigestSources /
    /// imageContentSources. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub idms: Vec<PathBuf>,
    /// Credentials for every registry contacted, `USER[:PASSWORD]` (prompted for on a
    /// terminal when missing); before any auth file.
    #[arg(long, value_name = "USER[:PASSWORD]")]
    pub creds: Option<String>,
    /// A containers-policy.json(5) signature policy, decided as containers/image decides
    /// it, for every image (images read from disk carry no signatures). Default:
    /// ~/.config/containers/policy.json, else /etc/containers/policy.json.
    #[arg(long, value_name = "FILE")]
    pub signature_policy: Option<PathBuf>,
    /// OpenShift ClusterImagePolicy and ImagePolicy objects (YAML or JSON,
    /// config.openshift.io v1 or v1alpha1), added as the machine-config-operator renders
    /// them for the node to the signature policy (MCO's base policy when there is none),
    /// with sigstore attachments read for their scopes and those scopes' mirrors. Only
    /// ImagePolicy objects in openshift-machine-config-operator apply. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub image_policy: Vec<PathBuf>,
    /// Where the lookaside (signature store) and sigstore attachment configuration is
    /// read, as skopeo's --registries.d. Default: ~/.config/containers/registries.d, else
    /// /etc/containers/registries.d.
    #[arg(long = "registries.d", value_name = "DIR")]
    pub registries_d: Option<PathBuf>,
}

impl MirrorArgs {
    /// The mirror rules: the registries.conf (given or default), then the OpenShift files.
    pub fn mirrors(&self) -> anyhow::Result<Mirrors> {
        let env_conf = std::env::var_os("CONTAINERS_REGISTRIES_CONF")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let conf = match self.registries_conf.clone().or(env_conf) {
            Some(p) => Some(p),
            None => first_existing(user_config("registries.conf"), DEFAULT_REGISTRIES_CONF),
        };
        let mut m = match conf {
            Some(p) => Mirrors::from_registries_conf(&p)?,
            None => Mirrors::default(),
        };
        for f in &self.idms {
            m.add_openshift_file(f)?;
        }
        Ok(m)
    }

    /// The signature policy: the given file, else the default one when it exists; with
    /// `--image-policy`, that policy (else MCO's own base policy) with the image
    /// policies added as MCO renders them.
    pub fn policy(&self, warnings: &Warnings) -> anyhow::Result<Option<Policy>> {
        let path = match &self.signature_policy {
            Some(p) => Some(p.clone()),
            None => first_existing(user_config("policy.json"), DEFAULT_POLICY),
        };
        let dir = self.registries_d.clone().unwrap_or_else(|| {
            first_existing(user_config("registries.d"), DEFAULT_REGISTRIES_D)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_REGISTRIES_D))
        });
        if self.image_policy.is_empty() {
            return match path {
                Some(p) => Ok(Some(Policy::load(&p, Some(dir))?)),
                None => Ok(None),
            };
        }
        let mut objects = ImagePolicies::default();
        for f in &self.image_policy {
            objects.add_file(f)?;
        }
        let (base, base_origin) = match &path {
            Some(p) => {
                // Checked alone first, so that its errors name it.
                Policy::load(p, None)?;
                let bytes = std::fs::read(p)
                    .with_context(|| format!("reading signature policy {}", p.display()))?;
                (bytes, p.display().to_string())
            }
            None => (
                MCO_BASE_POLICY.as_bytes().to_vec(),
                "MCO's default policy".to_string(),
            ),
        };
        let rendered = objects.render(&base, &base_origin)?;
        for w in rendered.warnings {
            warnings.warn(w);
        }
        let namespaces = self
            .mirrors()?
            .sigstore_attachment_namespaces(&rendered.attachment_scopes);
        let origin = format!(
            "{base_origin} with the image policies of {}",
            objects.files().join(", ")
        );
        log::debug!(
            "{origin}: {}; sigstore attachments for {}",
            String::from_utf8_lossy(&rendered.policy),
            namespaces.join(", ")
        );
        Ok(Some(Policy::from_image_policies(
            &rendered.policy,
            &origin,
            Some(dir),
            namespaces,
        )?))
    }

    /// `--creds`, with the password asked for on the terminal when it is missing.
    pub fn credentials(&self) -> anyhow::Result<Option<Credentials>> {
        self.creds
            .as_deref()
            .map(crate::registry::auth::parse_creds)
            .transpose()
    }
}

/// The flags of this run whose value came from their environment variable: (long
/// name, variable).
static FROM_ENV: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// Records which flags of the parsed command line took their value from their
/// environment variable, for [`flag_origin`].
pub fn record_env_sources(cmd: &clap::Command, m: &clap::ArgMatches) {
    fn walk(cmd: &clap::Command, m: &clap::ArgMatches, out: &mut Vec<(String, String)>) {
        for arg in cmd.get_arguments() {
            let (Some(long), Some(env)) = (arg.get_long(), arg.get_env()) else {
                continue;
            };
            if m.value_source(arg.get_id().as_str()) == Some(clap::parser::ValueSource::EnvVariable)
            {
                out.push((long.to_string(), env.to_string_lossy().into_owned()));
            }
        }
        if let Some((name, sub_m)) = m.subcommand() {
            if let Some(sub) = cmd.find_subcommand(name) {
                walk(sub, sub_m, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(cmd, m, &mut out);
    let _ = FROM_ENV.set(out);
}

/// `--LONG`, or `--LONG (from VAR)` when this run took its value from the variable VAR.
pub fn flag_origin(long: &str) -> String {
    match FROM_ENV
        .get()
        .and_then(|v| v.iter().find(|(l, _)| l == long))
    {
        Some((_, var)) => format!("--{long} (from {var})"),
        None => format!("--{long}"),
    }
}

/// Adds to a parse error about a flag whose value came from its environment variable
/// (the flag itself not being on the command line) which variable that was.
pub fn note_env_source(e: &mut clap::Error, cmd: &clap::Command, argv: &[std::ffi::OsString]) {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return;
    };
    let Some(long) = arg
        .split([' ', '='])
        .next()
        .and_then(|a| a.strip_prefix("--"))
    else {
        return;
    };
    let long = long.to_string();
    fn find(cmd: &clap::Command, long: &str) -> Option<(String, Option<char>)> {
        cmd.get_arguments()
            .find(|a| a.get_long() == Some(long) && a.get_env().is_some())
            .map(|a| {
                (
                    a.get_env().unwrap().to_string_lossy().into_owned(),
                    a.get_short(),
                )
            })
            .or_else(|| cmd.get_subcommands().find_map(|s| find(s, long)))
    }
    let Some((var, short)) = find(cmd, &long) else {
        return;
    };
    if std::env::var_os(&var).is_none() {
        return;
    }
    let on_command_line = argv.iter().skip(1).any(|a| {
        let a = a.to_string_lossy();
        a.strip_prefix("--")
            .is_some_and(|f| f == long || f.starts_with(&format!("{long}=")))
            || (short
                .is_some_and(|c| !a.starts_with("--") && a.starts_with('-') && a[1..].contains(c)))
    });
    if on_command_line {
        return;
    }
    let tip = format!("the value came from the environment variable {var}").into();
    let mut tips = match e.get(ContextKind::Suggested) {
        Some(ContextValue::StyledStrs(v)) => v.clone(),
        _ => Vec::new(),
    };
    tips.push(tip);
    e.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
}

/// `$XDG_CONFIG_HOME/containers/NAME` (default `~/.config`), where the containers tools
/// look for a user's own configuration before the system's.
fn user_config(name: &str) -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|h| h.join(".config")))?;
    Some(base.join("containers").join(name))
}

/// The user's file when it exists, else the system's when it exists.
fn first_existing(user: Option<PathBuf>, system: &str) -> Option<PathBuf> {
    user.into_iter()
        .chain([PathBuf::from(system)])
        .find(|p| p.exists())
}

impl RegistryArgs {
    pub fn options(&self, warnings: &Warnings) -> anyhow::Result<RegistryOptions> {
        for (flag, dir) in [("cache-dir", &self.cache_dir), ("cert-dir", &self.cert_dir)] {
            if let Some(d) = dir.as_deref().filter(|d| d.exists() && !d.is_dir()) {
                bail!("{} {}: not a directory", flag_origin(flag), d.display());
            }
        }
        if let Some(f) = self.authfile.as_deref().filter(|f| f.is_dir()) {
            bail!(
                "{} {}: a directory, not a file",
                flag_origin("authfile"),
                f.display()
            );
        }
        let mut auth_files = AuthFiles::from_env(self.authfile.clone());
        auth_files.creds = self.mirrors.credentials()?;
        Ok(RegistryOptions {
            auth_files,
            tls_verify: self.tls_verify,
            cert_dir: self.cert_dir.clone(),
            cache_dir: self.cache_dir.clone(),
            offline: self.offline,
            progress: ProgressMode::detect(self.quiet),
            retry: RetryPolicy {
                low_speed_limit: self.low_speed_limit,
                low_speed_time: self.low_speed_time,
                read_timeout: self.low_speed_time,
                ..RetryPolicy::default()
            },
            mirrors: self.mirrors.mirrors()?,
            policy: self.mirrors.policy(warnings)?,
        })
    }
}

impl ImageArgs {
    pub fn open_options(&self, warnings: &Warnings) -> anyhow::Result<OpenOptions> {
        Ok(OpenOptions {
            platform: self.platform.clone(),
            registry: self.registry.options(warnings)?,
            max_file_size: self.max_file_size,
        })
    }

    /// The image to read (`--image`, or the MCO image `--release` names), the options
    /// to open it with, and the release when one was given.
    pub fn resolve(
        &self,
        warnings: &Warnings,
    ) -> anyhow::Result<(ImageRef, OpenOptions, Option<Release>)> {
        let opts = self.open_options(warnings)?;
        match (&self.image, &self.release) {
            (Some(i), None) => Ok((i.clone(), opts, None)),
            (None, Some(r)) => {
                let rel = crate::release::resolve(r, &opts, warnings)?;
                let mco = ImageRef::Docker(rel.mco_image.parse()?);
                if !self.registry.quiet {
                    eprintln!(
                        "release {} ({}): machine-config-operator is {}",
                        rel.reference, rel.version, rel.mco_image
                    );
                }
                Ok((mco, opts, Some(rel)))
            }
            _ => bail!("give one of --image and --release"),
        }
    }
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    #[command(flatten)]
    pub image: ImageArgs,
    /// Absolute path of the file in the image.
    #[arg(
        long,
        value_name = "PATH",
        value_parser = absolute_path,
        help_heading = "Image"
    )]
    pub path: String,
    /// Where to write it; `-` for stdout.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        help_heading = "Output"
    )]
    pub output: Output,
    /// Print what was written as JSON on stdout (docs/json.md); not with `-o -`.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub image: ImageArgs,
    /// Print JSON instead of text.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PullArgs {
    #[command(flatten)]
    pub image: ImageArgs,
    /// Print what was pulled as JSON on stdout (docs/json.md).
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// The bootimage a config is for.
#[derive(Debug, Args)]
#[command(next_help_heading = "Target")]
pub struct TargetOpts {
    /// The bootimage the node boots from: its OpenShift version X.Y (a release of the
    /// table, 4.1 to 5.2; a newer one needs --target-rhel or --target-os-release, and
    /// --spec) or the release X.Y.Z the cluster was installed with (4.2.36), its RHCOS
    /// build ID (42.80.20191002.0; 9.6.20250121-0, which several releases share) or its
    /// cloud image name
    /// (rhcos-42-80-20191002-0-gcp-x86-64); for OKD, its Fedora CoreOS build ID
    /// (33.20201201.3.0), its CentOS Stream CoreOS one (scos-9.0.20250222-0), or
    /// okd-X.Y for the bootimage that OKD release's installer pins. On AWS, its AMI
    /// (ami-0123456789abcdef0) with --bootimage-file naming the installer's rhcos.json or
    /// stream metadata, which map it to its build.
    #[arg(
        long,
        value_name = "BOOTIMAGE",
        value_parser = bootimage_or_ami,
        required_unless_present_any = ["target_os_release", "bootimage_file"]
    )]
    pub bootimage: Option<BootimageName>,
    /// The bootimage as a file, read for the build it names: stream metadata JSON (as
    /// `openshift-install coreos print-stream-json` prints it, or the coreos-bootimages
    /// ConfigMap; the entry of --platform's arch), a qcow2, raw or VMDK disk image or a
    /// fixed VHD (plain, .gz or .xz), an OVA, a GCP image archive (.tar.gz of disk.raw),
    /// or a live ISO. With --bootimage ami-ID: the installer's rhcos.json or stream
    /// metadata, where that AMI is looked up.
    #[arg(long, value_name = "FILE")]
    pub bootimage_file: Option<PathBuf>,
    /// The AWS region of --bootimage ami-ID (else the region whose image it is).
    #[arg(long, value_name = "REGION", requires = "bootimage")]
    pub region: Option<String>,
    /// The bootimage's os-release file: its OpenShift version, or its Fedora CoreOS or
    /// CentOS Stream CoreOS major (unless --bootimage says), and RHEL major (unless
    /// --target-rhel says) are read from it, as MCO reads them.
    #[arg(long, value_name = "FILE")]
    pub target_os_release: Option<PathBuf>,
    /// Ignition spec to write instead of the bootimage's default (2.2, 3.0 to 3.6).
    #[arg(long, value_name = "VERSION")]
    pub spec: Option<SpecVersion>,
    /// RHEL major version of the bootimage, instead of the table's.
    #[arg(long, value_name = "N", value_parser = rhel_major)]
    pub target_rhel: Option<u32>,
    /// RHEL major version of the cluster's OS, which the node runs from the second boot
    /// of its first boot on (after MCO's in-place OS update), instead of the one read
    /// from --release or from the MCO image.
    #[arg(long, value_name = "N", value_parser = rhel_major)]
    pub cluster_rhel: Option<u32>,
}

impl TargetOpts {
    /// The target these flags make, checked against the table when they say all of it
    /// (with --target-os-release the file may say the rest: checked when it is read).
    fn check(&self, arch: &str) -> Result<Option<crate::choose::target::Target>, String> {
        let b = match (&self.bootimage, &self.bootimage_file) {
            (None, _) => return Ok(None),
            (Some(BootimageName::Ami(ami)), None) => {
                return Err(format!(
                    "--bootimage {ami}: an AMI names its build only through the installer's \
                     rhcos.json or stream metadata (`openshift-install coreos \
                     print-stream-json`): give that file with --bootimage-file"
                ))
            }
            (Some(BootimageName::Ami(_)), Some(_)) => return Ok(None),
            (Some(BootimageName::Named(b)), Some(_)) => {
                return Err(format!(
                    "--bootimage {} and --bootimage-file both name the bootimage: give one \
                     (with a file, --bootimage takes only an AMI, which the file maps)",
                    b.value
                ))
            }
            (Some(BootimageName::Named(_)), None) if self.region.is_some() => {
                return Err("--region is read only with --bootimage ami-ID".into())
            }
            (Some(BootimageName::Named(b)), None) => b,
        };
        if b.form == NameForm::CloudImageName {
            match crate::choose::target::cloud_image_arch(&b.value) {
                Some(named) if named != arch => {
                    return Err(format!(
                        "--bootimage {}: a cloud image for {named}, but the node's platform \
                         is {arch} (--platform): give --platform linux/{named}, or the name \
                         of the {arch} image",
                        b.value
                    ))
                }
                _ => {}
            }
        }
        if self.target_os_release.is_some() {
            return Ok(None);
        }
        crate::choose::target::Target::new(b.version, self.spec, self.target_rhel, arch)
            .map(Some)
            .map_err(|e| format!("--bootimage {}: {e}", b.value))
    }

    fn to_args(&self, arch: &str) -> anyhow::Result<TargetArgs> {
        let (from_file, rhel_from_file) = match &self.target_os_release {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                from_os_release(&OsRelease::parse(&text))
            }
            None => (None, None),
        };
        let bootimage = match (
            &self.bootimage,
            &self.bootimage_file,
            from_file,
            &self.target_os_release,
        ) {
            (Some(BootimageName::Named(b)), _, _, _) => b.clone(),
            (Some(BootimageName::Ami(ami)), Some(file), _, _) => {
                crate::bootimage::read_ami(file, arch, ami, self.region.as_deref())?
            }
            (Some(BootimageName::Ami(ami)), None, _, _) => {
                bail!("--bootimage {ami}: give the file that maps it with --bootimage-file")
            }
            (None, Some(file), _, _) => crate::bootimage::read_named(file, arch)?,
            (None, None, Some(b), Some(path)) => Named {
                form: NameForm::OsRelease,
                value: b.to_string(),
                file: Some(NamedFile {
                    path: path.display().to_string(),
                    kind: "os-release".into(),
                    within: "OPENSHIFT_VERSION or VERSION_ID".into(),
                }),
                version: b,
                range: Vec::new(),
            },
            (None, None, _, Some(path)) => bail!(
                "{}: it names no bootimage (OPENSHIFT_VERSION, an RHCOS VERSION_ID, ID=fedora \
                 or ID=centos with VARIANT_ID=coreos, or ID=scos); pass --bootimage",
                path.display()
            ),
            (None, None, _, None) => bail!("--bootimage is required"),
        };
        if bootimage.file.is_some() && bootimage.form != NameForm::OsRelease {
            // A file's build must be a row (or a newer release with its facts given), as
            // --bootimage's is when parsed.
            crate::choose::target::Target::new(
                bootimage.version,
                self.spec,
                self.target_rhel,
                arch,
            )
            .map_err(|e| {
                anyhow::anyhow!("--bootimage-file: bootimage {}: {e}", bootimage.describe())
            })?;
        }
        Ok(TargetArgs {
            bootimage,
            spec: self.spec,
            rhel: self.target_rhel.or(rhel_from_file),
            cluster_rhel: self.cluster_rhel,
        })
    }
}

#[derive(Debug, Args)]
pub struct InjectArgs {
    #[command(flatten)]
    pub image: ImageArgs,
    #[command(flatten)]
    pub target: TargetOpts,
    /// Where to write the Ignition config; `-` for stdout. `-o`/`--output` as in butane.
    #[arg(
        long,
        short = 'o',
        visible_alias = "output",
        value_name = "OUT",
        help_heading = "Output"
    )]
    pub ign: Output,
    /// A config to merge with (`-` for stdin); all of it is kept: an Ignition config of
    /// any spec from 2.2 to 3.6 (translated to the bootimage's spec as MCO translates),
    /// or the user-data Secret holding one, as `oc get secret -o yaml|json` prints it.
    #[arg(long, value_name = "IN.ign", help_heading = "Output")]
    pub base: Option<Input>,
    /// Also write the config as a user-data Secret manifest (openshift-machine-api,
    /// `userData`, `disableTemplating`) for a MachineSet's `userDataSecret`; at most
    /// 1 MiB, so with remote mode for a real MCD.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub secret_out: Option<Output>,
    /// The name of that Secret (default: `<pool>-user-data-mcd-inject`, the pool of
    /// the Secret given to --base, else worker).
    #[arg(
        long,
        value_name = "NAME",
        requires = "secret_out",
        value_parser = userdata::check_name,
        help_heading = "Output"
    )]
    pub secret_name: Option<String>,
    /// Deliver this binary of the image instead of the chosen one (still checked).
    #[arg(
        long,
        value_name = "PATH",
        value_parser = absolute_path,
        help_heading = "Target"
    )]
    pub binary_path: Option<String>,
    /// Deliver an incompatible binary, and replace conflicting base entries.
    #[arg(long, help_heading = "Target")]
    pub force: bool,
    /// Remote mode: the URL the payload will be served from.
    #[arg(
        long,
        value_name = "URL",
        requires = "payload_out",
        help_heading = "Output"
    )]
    pub payload_url: Option<String>,
    /// Remote mode: where to write the payload to serve.
    #[arg(
        long,
        value_name = "FILE",
        requires = "payload_url",
        help_heading = "Output"
    )]
    pub payload_out: Option<Output>,
    #[command(flatten)]
    pub json: JsonArgs,
}

/// `--json` and `--json-out` of inject and verify.
#[derive(Debug, Args)]
#[command(next_help_heading = "Output")]
pub struct JsonArgs {
    /// Print one JSON object describing the result on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write that JSON object to FILE instead (atomically); implies --json.
    #[arg(long, value_name = "FILE")]
    pub json_out: Option<Output>,
}

impl JsonArgs {
    /// Where the JSON report goes, if anywhere.
    pub fn target(&self) -> Option<Output> {
        match (&self.json_out, self.json) {
            (Some(o), _) => Some(o.clone()),
            (None, true) => Some(Output::Stdout),
            (None, false) => None,
        }
    }
}

impl InjectArgs {
    pub fn config(&self, warnings: &Warnings) -> anyhow::Result<InjectConfig> {
        if self.ign == Output::Stdout && self.json.target() == Some(Output::Stdout) {
            bail!("--ign - and --json both want stdout: write the JSON with --json-out FILE");
        }
        if let Some(o) = &self.json.json_out {
            o.spool_dir()?;
        }
        let target = self.target.to_args(&self.image.platform.architecture)?;
        let (image, open, release) = self.image.resolve(warnings)?;
        Ok(InjectConfig {
            image,
            open,
            release,
            target,
            binary_path: self.binary_path.clone(),
            force: self.force,
            ign: self.ign.clone(),
            base: self.base.clone(),
            secret_out: self
                .secret_out
                .clone()
                .map(|o| (o, self.secret_name.clone())),
            remote: match (&self.payload_url, &self.payload_out) {
                (Some(url), Some(out)) => Some(Remote {
                    url: url.clone(),
                    out: out.clone(),
                }),
                _ => None,
            },
        })
    }
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("bootimage_given").args(["bootimage", "bootimage_file"])))]
pub struct VerifyArgs {
    /// The config to check; `-` for stdin.
    #[arg(value_name = "IGN")]
    pub ign: Input,
    /// The bootimage it is for, as inject takes it (default: the one its provenance
    /// names).
    #[arg(
        long,
        value_name = "BOOTIMAGE",
        value_parser = bootimage_version,
        help_heading = "Target"
    )]
    pub bootimage: Option<Named>,
    /// The bootimage as a file, as inject takes it.
    #[arg(long, value_name = "FILE", help_heading = "Target")]
    pub bootimage_file: Option<PathBuf>,
    /// RHEL major version of the bootimage, instead of the table's.
    #[arg(
        long,
        value_name = "N",
        requires = "bootimage_given",
        value_parser = rhel_major,
        help_heading = "Target"
    )]
    pub target_rhel: Option<u32>,
    /// Also check that the payload is the binary inject chooses from this image.
    #[arg(
        long,
        value_name = "REF",
        conflicts_with = "release",
        help_heading = "Image"
    )]
    pub image: Option<ImageRef>,
    /// The same, for the MCO image of this OpenShift release image (by digest).
    #[arg(long, value_name = "REF", help_heading = "Image")]
    pub release: Option<ImageRef>,
    /// Platform of the node and of the image, os/arch[/variant].
    #[arg(
        long,
        value_name = "OS/ARCH[/VARIANT]",
        default_value = "linux/amd64",
        env = "MCD_INJECT_PLATFORM",
        help_heading = "Image"
    )]
    pub platform: Platform,
    /// The served payload, for a config in remote mode.
    #[arg(long, value_name = "FILE")]
    pub payload: Option<PathBuf>,
    /// With --image: largest file that may be read out of it, from its tar header.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "1G",
        value_parser = byte_size,
        env = "MCD_INJECT_MAX_FILE_SIZE",
        help_heading = "Image"
    )]
    pub max_file_size: u64,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub json: JsonArgs,
}

impl VerifyArgs {
    pub fn config(&self, warnings: &Warnings) -> anyhow::Result<VerifyConfig> {
        let registry = match (&self.image, &self.release) {
            (None, None) => RegistryOptions::default(),
            _ => self.registry.options(warnings)?,
        };
        let image = match &self.release {
            Some(r) => {
                let opts = OpenOptions {
                    platform: self.platform.clone(),
                    registry: registry.clone(),
                    max_file_size: self.max_file_size,
                };
                let rel = crate::release::resolve(r, &opts, warnings)?;
                Some(ImageRef::Docker(rel.mco_image.parse()?))
            }
            None => self.image.clone(),
        };
        Ok(VerifyConfig {
            ign: self.ign.clone(),
            target: match (&self.bootimage, &self.bootimage_file) {
                (Some(b), _) => Some(b.clone()),
                (None, Some(file)) => Some(crate::bootimage::read_named(
                    file,
                    &self.platform.architecture,
                )?),
                (None, None) => None,
            }
            .map(|bootimage| TargetArgs {
                bootimage,
                spec: None,
                rhel: self.target_rhel,
                cluster_rhel: None,
            }),
            image: image.map(|r| {
                (
                    r,
                    OpenOptions {
                        platform: self.platform.clone(),
                        registry: registry.clone(),
                        max_file_size: self.max_file_size,
                    },
                )
            }),
            payload: self.payload.clone(),
            arch: self.platform.architecture.clone(),
        })
    }
}

/// What `inject --bootimage` names: a bootimage, or an AMI that a file maps to one.
#[derive(Clone, Debug)]
pub enum BootimageName {
    /// A bootimage, as [`bootimage_version`] reads it.
    Named(Named),
    /// An AWS AMI ID, `ami-` and 8 or 17 hex digits.
    Ami(String),
}

/// An AMI ID, else a bootimage version.
fn bootimage_or_ami(s: &str) -> Result<BootimageName, String> {
    match s.strip_prefix("ami-") {
        Some(hex) if [8, 17].contains(&hex.len()) && hex.bytes().all(|c| c.is_ascii_hexdigit()) => {
            Ok(BootimageName::Ami(s.to_string()))
        }
        Some(_) => Err(format!(
            "{s:?} is not an AMI ID (ami- and 8 or 17 hexadecimal digits)"
        )),
        None => bootimage_version(s).map(BootimageName::Named),
    }
}

/// A bootimage version: a release of the table, or a newer one (which then needs its
/// RHEL and spec given, checked with them); nothing older than the table.
fn bootimage_version(s: &str) -> Result<Named, String> {
    let named = crate::choose::target::bootimage_name(s).map_err(|e| e.to_string())?;
    match crate::choose::target::bootimage(named.version) {
        Err(e @ crate::choose::target::VersionError::TooOld(_)) => Err(e.to_string()),
        _ => Ok(named),
    }
}

/// A RHEL major version the table has reference values for.
fn rhel_major(s: &str) -> Result<u32, String> {
    let n: u32 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a RHEL major version (7, 8, 9 or 10)"))?;
    match crate::choose::target::rhel(n) {
        Some(_) => Ok(n),
        None => Err(format!(
            "RHEL {n} is not known: only RHEL 7, 8, 9 and 10 are"
        )),
    }
}

/// `123`, `64K`, `200M`, `2G` (binary multiples).
fn byte_size(s: &str) -> Result<u64, String> {
    let (digits, shift) = match s.as_bytes().last() {
        Some(b'K' | b'k') => (&s[..s.len() - 1], 10),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 20),
        Some(b'G' | b'g') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .ok_or_else(|| format!("{s:?} is not a size (bytes, or a number with K, M or G)"))
}

/// A duration: seconds (`30`, `1.5`), or a number with `ms`, `s`, `m` or `h`.
fn duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let bad = || format!("{s:?} is not a duration (seconds, or a number with ms, s, m or h)");
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    let secs = v * scale;
    if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

fn absolute_path(s: &str) -> Result<String, String> {
    if s.starts_with('/') {
        Ok(s.to_string())
    } else {
        Err(format!("{s:?} is not an absolute path in the image"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn bad_references_fail_at_parse_time() {
        let r = Cli::try_parse_from(["mcd-inject", "inspect", "--image", "oci:"]);
        assert!(r.is_err());
        let r = Cli::try_parse_from([
            "mcd-inject",
            "inspect",
            "--image",
            "oci:x",
            "--platform",
            "linux",
        ]);
        assert!(r.is_err());
        let r = Cli::try_parse_from([
            "mcd-inject",
            "extract",
            "--image",
            "oci:x",
            "--path",
            "usr/bin/x",
            "-o",
            "f",
        ]);
        assert!(r.is_err());
    }

    #[test]
    fn inject_flags_parse_and_are_checked() {
        let ok = Cli::try_parse_from([
            "mcd-inject",
            "inject",
            "--image",
            "oci:x",
            "--bootimage",
            "4.2",
            "--ign",
            "-",
            "--spec",
            "2.2",
        ]);
        assert!(ok.is_ok(), "{ok:?}");
        for bad in [
            vec!["--bootimage", "4.x", "--ign", "-"],
            vec!["--bootimage", "4.2.x", "--ign", "-"],
            vec!["--bootimage", "3.11", "--ign", "-"],
            vec!["--bootimage", "4.2", "--ign", "-", "--spec", "2.1"],
            vec![
                "--bootimage",
                "4.2",
                "--ign",
                "-",
                "--payload-url",
                "http://x/p",
            ],
            vec!["--ign", "-"],
        ] {
            let mut args = vec!["mcd-inject", "inject", "--image", "oci:x"];
            args.extend(bad.iter().copied());
            assert!(Cli::try_parse_from(&args).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn release_and_json_flags() {
        let parse = |extra: &[&str]| {
            let mut args = vec!["mcd-inject", "inject", "--bootimage", "4.2"];
            args.extend_from_slice(extra);
            Cli::try_parse_from(args).map(|c| c.command)
        };
        // --release replaces --image; one of them is required, not both.
        assert!(parse(&["--release", "r.example/ocp/release@sha256:0000000000000000000000000000000000000000000000000000000000000000", "--ign", "x"]).is_ok());
        assert!(parse(&["--ign", "x"]).is_err());
        assert!(parse(&["--image", "oci:x", "--release", "oci:y", "--ign", "x"]).is_err());
        // The config and the JSON cannot both go to stdout.
        let Ok(Command::Inject(a)) = parse(&["--image", "oci:x", "--ign", "-", "--json"]) else {
            panic!("parse failed")
        };
        let e = a.config(&Warnings::default()).unwrap_err();
        assert!(format!("{e}").contains("--json-out"), "{e}");
        let Ok(Command::Inject(a)) =
            parse(&["--image", "oci:x", "--ign", "-", "--json-out", "r.json"])
        else {
            panic!("parse failed")
        };
        assert_eq!(a.json.target(), Some(Output::File("r.json".into())));
    }

    #[test]
    fn durations_parse() {
        use std::time::Duration;
        assert_eq!(duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "0", "-1", "x", "1d", "nan", "inf"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tls_verify_takes_a_value_or_none() {
        let parse = |extra: &[&str]| {
            let mut args = vec!["mcd-inject", "pull", "--image", "127.0.0.1:5000/a:b"];
            args.extend_from_slice(extra);
            match Cli::try_parse_from(args).map(|c| c.command) {
                Ok(Command::Pull(p)) => Ok(p.image.registry.tls_verify),
                Ok(other) => panic!("parsed as {other:?}"),
                Err(e) => Err(e),
            }
        };
        assert!(parse(&[]).unwrap());
        assert!(parse(&["--tls-verify"]).unwrap());
        assert!(parse(&["--tls-verify", "--offline"]).unwrap());
        assert!(!parse(&["--tls-verify", "false"]).unwrap());
        assert!(!parse(&["--tls-verify=false"]).unwrap());
        assert!(parse(&["--tls-verify=true"]).unwrap());
        assert!(parse(&["--tls-verify=maybe"]).is_err());
    }
}
