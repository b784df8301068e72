//! Library use: open an image and list its machine-config-daemon builds.
//!
//! `cargo run --example list_mcd -- oci:fixtures/mco-small:latest`

use anyhow::{Context, Result};
use mcd_inject::image::{self, ImageRef, OpenOptions};
use mcd_inject::inspect;

fn main() -> Result<()> {
    let reference: ImageRef = std::env::args()
        .nth(1)
        .context("usage: list_mcd IMAGE-REF")?
        .parse()?;
    let img = image::open(&reference, &OpenOptions::default())?;
    let spool = tempfile::tempdir()?;
    let report = inspect::inspect(&img, spool.path())?;
    for b in &report.binaries {
        println!("{} {} {}", b.sha256, b.size, b.path);
    }
    Ok(())
}
