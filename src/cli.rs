//! Command-line types. They are turned into plain values before any work is done.

use clap::{Args, Parser, Subcommand};

use crate::image::{ImageRef, OpenOptions, Platform};
use crate::output::Output;

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
}

impl ImageArgs {
    pub fn open_options(&self) -> OpenOptions {
        OpenOptions {
            platform: self.platform.clone(),
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
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub image: ImageArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
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
}
