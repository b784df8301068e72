//! Library use: open an image and list its machine-config-daemon builds.
//!
//! `cargo run --example list_mcd -- oci:fixtures/mco-small:latest`

use anyhow::{Context, Result};
use mcd_inject::choose;
use mcd_inject::image::ImageRef;
use mcd_inject::transport::{self, OpenOptions};

fn main() -> Result<()> {
    let reference: ImageRef = std::env::args()
        .nth(1)
        .context("usage: list_mcd IMAGE-REF")?
        .parse()?;
    let img = transport::open(&reference, &OpenOptions::default(), &Default::default())?;
    let spool = tempfile::tempdir()?;
    let report = choose::inspect(&img, spool.path())?;
    for b in &report.binaries {
        println!("{} {} {}", b.sha256, b.size, b.path);
    }
    Ok(())
}
