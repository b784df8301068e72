//! Command-line types. They are turned into plain values before any work is done.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args, Parser, Subcommand};

use crate::ignition::SpecVersion;
use crate::image::{ImageRef, OpenOptions, Platform};
use crate::inject::{InjectConfig, Input, Remote, TargetArgs, VerifyConfig};
use crate::osrelease::OsRelease;
use crate::output::Output;
use crate::registry::{AuthFiles, ProgressMode, RegistryOptions, RetryPolicy};
use crate::target::{from_os_release, OcpVersion};

/// Deliver the machine-config-daemon that fits an old OpenShift bootimage through Ignition.
#[derive(Debug, Parser)]
#[command(name = "mcd-inject", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub log: LogArgs,
}

impl Cli {
    /// Usage errors clap's attributes cannot express (exit code 2, like theirs).
    pub fn check_usage(&self) -> Result<(), clap::Error> {
        if let Command::Extract(a) = &self.command {
            if a.json && a.output == Output::Stdout {
                let mut cmd = <Cli as clap::CommandFactory>::command();
                cmd.build();
                let sub = cmd
                    .find_subcommand_mut("extract")
                    .expect("extract is a subcommand");
                return Err(sub.error(
                    clap::error::ErrorKind::ArgumentConflict,
                    "--json and -o - both want stdout: write the file with -o FILE",
                ));
            }
        }
        Ok(())
    }
}

/// Diagnostics on stderr (docs/architecture.md says what is logged).
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Log what is done: registry endpoints, layers read, cache entries, timings.
    /// Twice for debug, three times for trace.
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,
    /// Log level: off, error, warn, info, debug, trace (wins over -v). Without either,
    /// RUST_LOG is read (env_logger syntax), else warnings only.
    #[arg(long, global = true, value_name = "LEVEL", value_parser = crate::logging::parse_level)]
    pub log_level: Option<log::LevelFilter>,
}

impl LogArgs {
    pub fn settings(&self) -> crate::logging::LogSettings {
        crate::logging::LogSettings {
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

/// Which image to read.
#[derive(Debug, Args)]
pub struct ImageArgs {
    /// Image reference: `oci:DIR[:TAG]`, `oci-archive:FILE[:TAG]`,
    /// `docker-archive:FILE[:REF]`, `docker://HOST/REPO[:TAG|@DIGEST]`
    #[arg(long, value_name = "REF")]
    pub image: ImageRef,
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
pub struct RegistryArgs {
    /// Registry credentials file (containers-auth.json format; an OpenShift pull secret
    /// works). Default: $REGISTRY_AUTH_FILE, else $XDG_RUNTIME_DIR/containers/auth.json,
    /// else ~/.docker/config.json.
    #[arg(long, value_name = "FILE", env = "MCD_INJECT_AUTHFILE")]
    pub authfile: Option<PathBuf>,
    /// Verify registry TLS certificates; `--tls-verify=false` also allows plain http.
    #[arg(
        long,
        value_name = "BOOL",
        default_value_t = true,
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
    /// No progress output.
    #[arg(short, long, env = "MCD_INJECT_QUIET", value_parser = BoolishValueParser::new())]
    pub quiet: bool,
}

impl RegistryArgs {
    pub fn options(&self) -> RegistryOptions {
        RegistryOptions {
            auth_files: AuthFiles::from_env(self.authfile.clone()),
            tls_verify: self.tls_verify,
            cert_dir: self.cert_dir.clone(),
            cache_dir: self.cache_dir.clone(),
            offline: self.offline,
            progress: ProgressMode::detect(self.quiet),
            retry: RetryPolicy::default(),
        }
    }
}

impl ImageArgs {
    pub fn open_options(&self) -> OpenOptions {
        OpenOptions {
            platform: self.platform.clone(),
            registry: self.registry.options(),
            max_file_size: self.max_file_size,
        }
    }
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    #[command(flatten)]
    pub image: ImageArgs,
    /// Absolute path of the file in the image.
    #[arg(long, value_name = "PATH", value_parser = absolute_path)]
    pub path: String,
    /// Where to write it; `-` for stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Output,
    /// Print what was written as JSON on stdout (docs/json.md); not with `-o -`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub image: ImageArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PullArgs {
    #[command(flatten)]
    pub image: ImageArgs,
    /// Print what was pulled as JSON on stdout (docs/json.md).
    #[arg(long)]
    pub json: bool,
}

/// The bootimage a config is for.
#[derive(Debug, Args)]
pub struct TargetOpts {
    /// OpenShift version of the bootimage the node boots from, X.Y (a release of the
    /// table, 4.1 to 5.2; a newer one needs --target-rhel or --target-os-release, and --spec).
    #[arg(
        long,
        value_name = "X.Y",
        value_parser = bootimage_version,
        required_unless_present = "target_os_release"
    )]
    pub bootimage: Option<OcpVersion>,
    /// The bootimage's os-release file: its OpenShift version (unless --bootimage says)
    /// and RHEL major (unless --target-rhel says) are read from it, as MCO reads them.
    #[arg(long, value_name = "FILE")]
    pub target_os_release: Option<PathBuf>,
    /// Ignition spec to write instead of the bootimage's default (2.2, 3.0 to 3.6).
    #[arg(long, value_name = "VERSION")]
    pub spec: Option<SpecVersion>,
    /// RHEL major version of the bootimage, instead of the table's.
    #[arg(long, value_name = "N")]
    pub target_rhel: Option<u32>,
}

impl TargetOpts {
    fn to_args(&self) -> anyhow::Result<TargetArgs> {
        let (from_file, rhel_from_file) = match &self.target_os_release {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                from_os_release(&OsRelease::parse(&text))
            }
            None => (None, None),
        };
        let bootimage = match (self.bootimage, from_file, &self.target_os_release) {
            (Some(b), _, _) => b,
            (None, Some(b), _) => b,
            (None, None, Some(path)) => bail!(
                "{}: no OpenShift version in it (OPENSHIFT_VERSION or an RHCOS VERSION_ID); pass --bootimage",
                path.display()
            ),
            (None, None, None) => bail!("--bootimage is required"),
        };
        Ok(TargetArgs {
            bootimage,
            spec: self.spec,
            rhel: self.target_rhel.or(rhel_from_file),
        })
    }
}

#[derive(Debug, Args)]
pub struct InjectArgs {
    #[command(flatten)]
    pub image: ImageArgs,
    #[command(flatten)]
    pub target: TargetOpts,
    /// Where to write the Ignition config; `-` for stdout.
    #[arg(long, value_name = "OUT")]
    pub ign: Output,
    /// A config to merge with (`-` for stdin); all of it is kept.
    #[arg(long, value_name = "IN.ign")]
    pub base: Option<Input>,
    /// Deliver this binary of the image instead of the chosen one (still checked).
    #[arg(long, value_name = "PATH", value_parser = absolute_path)]
    pub binary_path: Option<String>,
    /// Deliver an incompatible binary, and replace conflicting base entries.
    #[arg(long)]
    pub force: bool,
    /// Remote mode: the URL the payload will be served from.
    #[arg(long, value_name = "URL", requires = "payload_out")]
    pub payload_url: Option<String>,
    /// Remote mode: where to write the payload to serve.
    #[arg(long, value_name = "FILE", requires = "payload_url")]
    pub payload_out: Option<Output>,
}

impl InjectArgs {
    pub fn config(&self) -> anyhow::Result<InjectConfig> {
        Ok(InjectConfig {
            image: self.image.image.clone(),
            open: self.image.open_options(),
            target: self.target.to_args()?,
            binary_path: self.binary_path.clone(),
            force: self.force,
            ign: self.ign.clone(),
            base: self.base.clone(),
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
pub struct VerifyArgs {
    /// The config to check; `-` for stdin.
    #[arg(value_name = "IGN")]
    pub ign: Input,
    /// The bootimage it is for (default: the one its provenance names).
    #[arg(long, value_name = "X.Y", value_parser = bootimage_version)]
    pub bootimage: Option<OcpVersion>,
    /// RHEL major version of the bootimage, instead of the table's.
    #[arg(long, value_name = "N", requires = "bootimage")]
    pub target_rhel: Option<u32>,
    /// Also check that the payload is the binary inject chooses from this image.
    #[arg(long, value_name = "REF")]
    pub image: Option<ImageRef>,
    /// Platform of the node and of the image, os/arch[/variant].
    #[arg(
        long,
        value_name = "OS/ARCH[/VARIANT]",
        default_value = "linux/amd64",
        env = "MCD_INJECT_PLATFORM"
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
        env = "MCD_INJECT_MAX_FILE_SIZE"
    )]
    pub max_file_size: u64,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

impl VerifyArgs {
    pub fn config(&self) -> VerifyConfig {
        VerifyConfig {
            ign: self.ign.clone(),
            target: self.bootimage.map(|b| TargetArgs {
                bootimage: b,
                spec: None,
                rhel: self.target_rhel,
            }),
            image: self.image.clone().map(|r| {
                (
                    r,
                    OpenOptions {
                        platform: self.platform.clone(),
                        registry: self.registry.options(),
                        max_file_size: self.max_file_size,
                    },
                )
            }),
            payload: self.payload.clone(),
            arch: self.platform.architecture.clone(),
        }
    }
}

/// A bootimage version: a release of the table, or a newer one (which then needs its
/// RHEL and spec given, checked with them); nothing older than the table.
fn bootimage_version(s: &str) -> Result<OcpVersion, String> {
    let v: OcpVersion = s.parse().map_err(|e| format!("{e}"))?;
    match crate::target::bootimage(v) {
        Err(e @ crate::target::VersionError::TooOld(_)) => Err(e.to_string()),
        _ => Ok(v),
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
            vec!["--bootimage", "4.2.1", "--ign", "-"],
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
    fn tls_verify_takes_a_value() {
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
        assert!(!parse(&["--tls-verify=false"]).unwrap());
        assert!(parse(&["--tls-verify=true"]).unwrap());
        assert!(parse(&["--tls-verify=maybe"]).is_err());
    }
}
