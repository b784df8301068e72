//! Command-line types. They are turned into plain values before any work is done.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand};

use crate::image::{ImageRef, OpenOptions, Platform};
use crate::output::Output;
use crate::registry::{AuthFiles, ProgressMode, RegistryOptions, RetryPolicy};

/// Deliver the machine-config-daemon that fits an old OpenShift bootimage through Ignition.
#[derive(Debug, Parser)]
#[command(name = "mcd-inject", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write one file of an image to a file or stdout, as the layered image defines it.
    Extract(ExtractArgs),
    /// Show an image's layers, os-release and machine-config-daemon builds.
    Inspect(InspectArgs),
    /// Fetch a registry image into the local cache, for later --offline runs.
    Pull(PullArgs),
}

/// Which image to read.
#[derive(Debug, Args)]
pub struct ImageArgs {
    /// Image reference: oci:DIR[:TAG], oci-archive:FILE[:TAG], docker-archive:FILE[:REF],
    /// docker://HOST/REPO[:TAG|@DIGEST]
    #[arg(long, value_name = "REF")]
    pub image: ImageRef,
    /// Platform to pick from a multi-arch index, os/arch[/variant].
    #[arg(long, value_name = "OS/ARCH[/VARIANT]", default_value = "linux/amd64")]
    pub platform: Platform,
    /// Registry credentials file (containers-auth.json format; an OpenShift pull secret
    /// works). Default: $REGISTRY_AUTH_FILE, else $XDG_RUNTIME_DIR/containers/auth.json,
    /// else ~/.docker/config.json.
    #[arg(long, value_name = "FILE")]
    pub authfile: Option<PathBuf>,
    /// Verify registry TLS certificates; `--tls-verify=false` also allows plain http.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = ArgAction::Set)]
    pub tls_verify: bool,
    /// A directory of extra CA certificates (*.crt) for registries.
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,
    /// The image cache (an OCI layout). Default: $XDG_CACHE_HOME/mcd-inject.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Never touch the network: registry images come from the cache only.
    #[arg(long)]
    pub offline: bool,
    /// No progress output.
    #[arg(short, long)]
    pub quiet: bool,
}

impl ImageArgs {
    pub fn open_options(&self) -> OpenOptions {
        OpenOptions {
            platform: self.platform.clone(),
            registry: RegistryOptions {
                auth_files: AuthFiles::from_env(self.authfile.clone()),
                tls_verify: self.tls_verify,
                cert_dir: self.cert_dir.clone(),
                cache_dir: self.cache_dir.clone(),
                offline: self.offline,
                progress: ProgressMode::detect(self.quiet),
                retry: RetryPolicy::default(),
            },
        }
    }
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    #[command(flatten)]
    pub image: ImageArgs,
    /// Absolute path of the file in the image.
    #[arg(long, value_name = "PATH")]
    pub path: String,
    /// Where to write it; `-` for stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Output,
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
    }

    #[test]
    fn tls_verify_takes_a_value() {
        let parse = |extra: &[&str]| {
            let mut args = vec!["mcd-inject", "pull", "--image", "127.0.0.1:5000/a:b"];
            args.extend_from_slice(extra);
            match Cli::try_parse_from(args).map(|c| c.command) {
                Ok(Command::Pull(p)) => Ok(p.image.tls_verify),
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
