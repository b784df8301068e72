//! The JSON objects that `extract --json` and `pull --json` print: one object on
//! stdout, in the shapes docs/json.md documents. Fields are only ever added.

use serde_json::{json, Value};

use crate::extract::ExtractReport;
use crate::image::ImageInfo;
use crate::io::output::Output;
use crate::registry::PullReport;

/// `extract --json`: the image read, the file asked for and what was written.
pub fn extract(image: &ImageInfo, path: &str, output: &Output, r: &ExtractReport) -> Value {
    json!({
        "image": image,
        "path": path,
        "resolved": r.resolved,
        "output": output.to_string(),
        "size": r.size,
        "sha256": r.sha256,
        "mode": r.mode,
        "layer_reads": r.layer_reads,
    })
}

/// `pull --json`: the image now in the cache, and how many layers this run fetched.
pub fn pull(r: &PullReport) -> Value {
    json!({
        "image": r.image,
        "layers_fetched": r.fetched,
        "cache": r.cache.display().to_string(),
    })
}
