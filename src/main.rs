//! `mcd-inject`: parse the command line, run, map errors to exit codes.
//!
//! Exit codes: 0 success; 1 any error (bad input, missing path, corrupt image, I/O);
//! 2 command-line usage errors.

use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Parser;
use mcd_inject::cli::{Cli, Command};
use mcd_inject::{extract, image, inject, inspect, output::Output, registry, report};

/// Writes a JSON report to stdout, or atomically to a file.
fn write_json(out: &Output, v: &serde_json::Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(v)?;
    text.push('\n');
    match out {
        Output::Stdout => print!("{text}"),
        Output::File(_) => {
            use std::io::Write as _;
            let mut t = out.temp_file()?;
            t.write_all(text.as_bytes())?;
            out.commit(t, 0o644)?;
        }
    }
    Ok(())
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Extract(a) => {
            let (r, opts, _) = a.image.resolve()?;
            let img = image::open(&r, &opts)?;
            let report = extract::extract(&img, &a.path, &a.output)?;
            if a.output != Output::Stdout && !a.image.registry.quiet {
                eprintln!(
                    "wrote {} ({} bytes, mode {:o}) from {}",
                    a.output, report.size, report.mode, report.resolved
                );
            }
        }
        Command::Inspect(a) => {
            let (r, opts, release) = a.image.resolve()?;
            let img = image::open(&r, &opts)?;
            let spool = tempfile::tempdir()?;
            let report = inspect::inspect(&img, spool.path())?;
            if a.json {
                let mut v = serde_json::to_value(&report)?;
                if let Some(rel) = release {
                    v["release"] = serde_json::to_value(rel)?;
                }
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print!("{}", report.render_text());
            }
        }
        Command::Pull(a) => {
            let (r, opts, release) = a.image.resolve()?;
            if let Some(rel) = &release {
                // Reading the release cached what `--release ... --offline` needs of it
                // (its manifests and the layers that hold /release-manifests), not the
                // rest of the release image.
                if !a.image.registry.quiet {
                    eprintln!(
                        "{}: release {}: its manifests are cached",
                        rel.reference, rel.version
                    );
                }
            }
            let report = registry::pull(&r, &opts)?;
            if !a.image.registry.quiet {
                eprintln!(
                    "{}: manifest {} with {} layers in {} ({} fetched now)",
                    report.image.reference,
                    report
                        .image
                        .manifest_digest
                        .as_ref()
                        .map_or("?".to_string(), |d| d.to_string()),
                    report.image.layers.len(),
                    report.cache.display(),
                    report.fetched
                );
            }
        }
        Command::Inject(a) => {
            let r = inject::inject(&a.config()?)?;
            for n in &r.notes {
                eprintln!("{n}");
            }
            eprintln!(
                "chose {} (sha256 {}) for bootimage {}; wrote {} ({} bytes, spec {})",
                r.chosen, r.binary_sha256, r.target.bootimage, a.ign, r.config_bytes, r.target.spec
            );
            if let Some(out) = a.json.target() {
                let v = report::inject_json(&r, &a.ign.to_string(), a.payload_url.as_deref());
                write_json(&out, &v)?;
            }
        }
        Command::Verify(a) => {
            let r = inject::verify(&a.config()?)?;
            match a.json.target() {
                Some(out) => write_json(&out, &report::verify_json(&r, &a.ign.to_string()))?,
                None => {
                    for p in &r.passed {
                        println!("ok: {p}");
                    }
                    for p in &r.problems {
                        println!("FAIL: {p}");
                    }
                }
            }
            if !r.problems.is_empty() {
                bail!("{}: {} problem(s)", a.ign, r.problems.len());
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
