//! The `mcd-inject` command: parse the command line, run the job, print its result,
//! map errors to exit codes. `src/main.rs` only calls [`main`].
//!
//! Exit codes, one rule: 2 when the command line itself cannot be used (an unknown
//! flag, a bad value of a flag or of its environment variable, flags that cannot go
//! together: found before any work); 1 for every other failure (bad input, missing
//! path, corrupt image, I/O, an output that cannot be written whole, a warning under
//! `--strict`); 0 for success, also when the reader of a report or listing on stdout
//! went away.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{CommandFactory, FromArgMatches};

pub(crate) mod cli;
mod clidoc;
mod json;
mod logging;
mod report;

use crate::image::ImageRef;
use crate::io::output::{print, Output, StdoutClosed};
use crate::io::tempfiles;
use crate::registry::{self, cache};
use crate::warnings::{self, Warning, Warnings};
use crate::{choose, extract, inject, transport, verify};
use cli::{Cli, Command, ImageArgs};

/// Writes a JSON report to stdout, or atomically to a file.
fn write_json(out: &Output, v: &serde_json::Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(v)?;
    text.push('\n');
    match out {
        Output::Stdout => print(&text)?,
        Output::File(_) => {
            let mut t = out.temp_file()?;
            t.write_all(text.as_bytes())?;
            out.commit(t, 0o644)?;
        }
    }
    Ok(())
}

/// The files and directories an image is read from, which no output may overwrite.
fn image_inputs(a: &ImageArgs) -> Vec<PathBuf> {
    let cache = || {
        a.registry
            .cache_dir
            .clone()
            .or_else(|| cache::Cache::default_dir().ok())
            .into_iter()
            .collect()
    };
    match (&a.image, &a.release) {
        (Some(ImageRef::Oci { dir, .. }), _) => vec![dir.clone()],
        (Some(ImageRef::OciArchive { file, .. } | ImageRef::DockerArchive { file, .. }), _) => {
            vec![file.clone()]
        }
        (_, Some(ImageRef::Oci { dir, .. })) => {
            let mut v: Vec<PathBuf> = cache();
            v.push(dir.clone());
            v
        }
        (_, Some(ImageRef::OciArchive { file, .. } | ImageRef::DockerArchive { file, .. })) => {
            let mut v: Vec<PathBuf> = cache();
            v.push(file.clone());
            v
        }
        _ => cache(),
    }
}

fn refuse_overlap(out: &Output, a: &ImageArgs, flag: &str) -> Result<()> {
    let inputs = image_inputs(a);
    let inputs: Vec<_> = inputs.iter().map(PathBuf::as_path).collect();
    out.refuse_overlap(&inputs, flag)
}

/// Refuses, before any work, an output that cannot be written: inside the input image,
/// a directory, in a directory that does not exist.
fn preflight(out: &Output, a: &ImageArgs, flag: &str) -> Result<()> {
    refuse_overlap(out, a, flag)?;
    out.spool_dir().context(flag.to_string())?;
    Ok(())
}

/// Whether the command was given `-q` (`MCD_INJECT_QUIET`).
fn quiet(cli: &Cli) -> bool {
    match &cli.command {
        Command::Extract(a) => a.image.registry.quiet,
        Command::Inspect(a) => a.image.registry.quiet,
        Command::Pull(a) => a.image.registry.quiet,
        Command::Inject(a) => a.image.registry.quiet,
        Command::Verify(a) => a.registry.quiet,
        Command::Completion(_) | Command::Man(_) => false,
    }
}

fn run(cli: Cli, warnings: &Warnings) -> Result<()> {
    match cli.command {
        Command::Extract(a) => {
            preflight(&a.output, &a.image, "-o")?;
            let (r, opts, _) = a.image.resolve(warnings)?;
            let img = transport::open(&r, &opts, warnings)?;
            let report = extract::extract(&img, &a.path, &a.output, warnings)?;
            if a.json {
                let mut v = json::extract(&img.info, &a.path, &a.output, &report);
                v["warnings"] = warnings::to_json(&report.warnings);
                print(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
            } else if a.output != Output::Stdout && !a.image.registry.quiet {
                note(&format!(
                    "wrote {} ({} bytes, mode {:o}) from {}",
                    a.output, report.size, report.mode, report.resolved
                ));
            }
        }
        Command::Inspect(a) => {
            let (r, opts, release) = a.image.resolve(warnings)?;
            let img = transport::open(&r, &opts, warnings)?;
            let spool =
                tempfiles::dir_in(&std::env::temp_dir()).context("creating a spool directory")?;
            let report = choose::inspect(&img, spool.path())?;
            warnings.check_strict()?;
            if a.json {
                let mut v = serde_json::to_value(&report)?;
                v["warnings"] = warnings::to_json(&warnings.list());
                if let Some(rel) = release {
                    v["release"] = serde_json::to_value(rel)?;
                }
                print(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
            } else {
                print(&report.render_text())?;
            }
        }
        Command::Pull(a) => {
            let (r, opts, release) = a.image.resolve(warnings)?;
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
            let report = registry::pull(&r, &opts.platform, &opts.registry, warnings)?;
            warnings.check_strict()?;
            if a.json {
                let mut v = json::pull(&report);
                v["warnings"] = warnings::to_json(&report.warnings);
                print(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
            } else if !a.image.registry.quiet {
                note(&format!(
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
                ));
            }
        }
        Command::Inject(a) => {
            preflight(&a.ign, &a.image, "--ign")?;
            if let Some(out) = &a.payload_out {
                preflight(out, &a.image, "--payload-out")?;
            }
            if let Some(out) = &a.json.json_out {
                out.spool_dir().context("--json-out")?;
            }
            let r = inject::inject(&a.config(warnings)?, warnings)?;
            let quiet = a.image.registry.quiet;
            for n in r.notes.iter().filter(|_| !quiet) {
                note(n);
            }
            if !quiet {
                note(&format!(
                    "chose {} (sha256 {}) for bootimage {}; wrote {} ({} bytes, spec {}); {}",
                    r.chosen,
                    r.binary_sha256,
                    r.bootimage.describe(),
                    a.ign,
                    r.config_bytes,
                    r.target.spec,
                    r.layers_read
                ));
                match (&r.boots.cluster_os, &r.boots.second) {
                    (Some(c), Some(s)) => note(&format!(
                        "the cluster's OS is {} ({}), where {} does not run: the config \
                         also carries {} (sha256 {}), installed there from the second boot on",
                        c.os, c.source, r.chosen, s.path, s.sha256
                    )),
                    (Some(c), None) => note(&format!(
                        "{} runs on the cluster's OS too, {} ({})",
                        r.chosen, c.os, c.source
                    )),
                    (None, None) | (None, Some(_)) => {}
                }
            }
            if let Some(out) = a.json.target() {
                let v = report::inject_json(&r, &a.ign.to_string(), a.payload_url.as_deref());
                write_json(&out, &v)?;
            }
        }
        Command::Verify(a) => {
            let r = match verify::verify(&a.config(warnings)?, warnings) {
                Ok(r) => r,
                Err(e) => {
                    let problem = e
                        .downcast_ref::<verify::Unreadable>()
                        .map(|u| u.to_string());
                    if let (Some(problem), Some(out)) = (problem, a.json.target()) {
                        // Not a config: still one report, not ok, with why.
                        let v = report::verify_unreadable_json(&a.ign.to_string(), &problem);
                        write_json(&out, &v)?;
                    }
                    return Err(e);
                }
            };
            warnings.check_strict()?;
            if let Some(out) = a.json.target() {
                write_json(&out, &report::verify_json(&r, &a.ign.to_string()))?;
            } else {
                // Under -q the exit code says a config passed: only problems are listed.
                let mut text = String::new();
                for p in r.passed.iter().filter(|_| !a.registry.quiet) {
                    text.push_str(&format!("ok: {p}\n"));
                }
                for p in &r.problems {
                    text.push_str(&format!("FAIL: {p}\n"));
                }
                print(&text)?;
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
            None => std::io::Write::write_all(&mut std::io::stdout().lock(), &clidoc::man_page()?)
                .map_err(crate::io::output::stdout_error)?,
        },
    }
    Ok(())
}

/// Prints a warning as it is given.
fn echo(w: &Warning) {
    note(&warnings::line(w));
}

/// A message on stderr; a failure to write it is not worth a panic.
fn note(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// Runs the command line of this process and gives its exit code.
pub fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut cmd = clidoc::with_examples(Cli::command());
    let parsed = cmd
        .try_get_matches_from_mut(&argv)
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let cli = match parsed {
        Ok((cli, m)) => {
            cli::record_env_sources(&cmd, &m);
            cli
        }
        Err(mut e) => {
            cli::note_env_source(&mut e, &cmd, &argv);
            e.exit();
        }
    };
    if let Err(e) = cli.check_usage() {
        e.exit();
    }
    logging::init(cli.log.settings());
    if let Err(e) = tempfiles::install_signal_handlers() {
        note(&format!("error: installing signal handlers: {e}"));
        return ExitCode::from(1);
    }
    if let Some(limit) = cli.timeout {
        tempfiles::set_deadline(limit);
    }
    // Warnings are printed as they are given; under -q only when the run fails (a
    // warning under --strict among the ways), before the error.
    let quiet = quiet(&cli);
    let warnings = Warnings::new(cli.strict, (!quiet).then_some(echo as fn(&Warning)));
    match run(cli, &warnings) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout went away (`| head`): nothing more to say.
        Err(e) if e.chain().any(|c| c.is::<StdoutClosed>()) => ExitCode::SUCCESS,
        Err(e) => {
            if quiet {
                for w in warnings.list() {
                    echo(&w);
                }
            }
            note(&format!("error: {e:#}"));
            ExitCode::from(1)
        }
    }
}
