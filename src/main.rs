//! `mcd-inject`: parse the command line, run, map errors to exit codes.
//!
//! Exit codes: 0 success; 1 any error (bad input, missing path, corrupt image, I/O);
//! 2 command-line usage errors.

use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Parser;
use mcd_inject::cli::{Cli, Command};
use mcd_inject::{
    clidoc, extract, image, inject, inspect, json, logging, output::Output, registry,
};

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Extract(a) => {
            let img = image::open(&a.image.image, &a.image.open_options())?;
            let report = extract::extract(&img, &a.path, &a.output)?;
            if a.json {
                let v = json::extract(&img.info, &a.path, &a.output, &report);
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else if a.output != Output::Stdout && !a.image.registry.quiet {
                eprintln!(
                    "wrote {} ({} bytes, mode {:o}) from {}",
                    a.output, report.size, report.mode, report.resolved
                );
            }
        }
        Command::Inspect(a) => {
            let img = image::open(&a.image.image, &a.image.open_options())?;
            let spool = tempfile::tempdir()?;
            let report = inspect::inspect(&img, spool.path())?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.render_text());
            }
        }
        Command::Pull(a) => {
            let report = registry::pull(&a.image.image, &a.image.open_options())?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&json::pull(&report))?);
            } else if !a.image.registry.quiet {
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
        }
        Command::Verify(a) => {
            let r = inject::verify(&a.config())?;
            for p in &r.passed {
                println!("ok: {p}");
            }
            for p in &r.problems {
                println!("FAIL: {p}");
            }
            if !r.problems.is_empty() {
                bail!("{}: {} problem(s)", a.ign, r.problems.len());
            }
        }
        Command::Completion(a) => clidoc::completion(a.shell, &mut std::io::stdout().lock())?,
        Command::Man(a) => match a.dir {
            Some(dir) => {
                for page in clidoc::man_pages_to(&dir)? {
                    eprintln!("wrote {}", page.display());
                }
            }
            None => std::io::Write::write_all(&mut std::io::stdout().lock(), &clidoc::man_page()?)?,
        },
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = cli.check_usage() {
        e.exit();
    }
    logging::init(cli.log.settings());
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
