//! Replays every kept input of the fuzz targets (`fuzz/inputs/TARGET/`: the seeds and
//! every input that once crashed a target) through the same entry points the fuzz
//! targets call, on stable Rust. A panic here is a regression.

use std::fs;
use std::path::Path;

use mcd_inject::fuzzing::TARGETS;

#[test]
fn every_kept_fuzz_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/inputs");
    for (name, target) in TARGETS {
        let dir = root.join(name);
        let mut inputs: Vec<_> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .collect();
        inputs.sort();
        assert!(!inputs.is_empty(), "no kept inputs in {}", dir.display());
        for input in inputs {
            let data = fs::read(&input).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name}: {} panics", input.display());
        }
    }
}

#[test]
fn every_target_has_a_fuzz_target_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap();
    for (name, _) in TARGETS {
        let file = root.join("fuzz_targets").join(format!("{name}.rs"));
        assert!(file.is_file(), "missing {}", file.display());
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml has no [[bin]] {name}"
        );
    }
}
