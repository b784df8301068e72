//! Spec 2.2.0 (Ignition v0.x): `filesystem: "root"` on every node, sha512 hashes only,
//! and no `compression` on `data:` URLs (it fails at run time there).

use serde_json::Value;

use super::{Config, SpecVersion};

pub(super) fn render(c: &Config) -> Value {
    super::v3::render_nodes(c, SpecVersion::V2_2, Some("root"))
}
