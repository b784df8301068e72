//! The crate's layering, read from its source: no import cycle between the modules of
//! `src/`, and every dependency points down the pipeline (docs/architecture.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The crate's top-level modules, from the command line down to the adapters. A module
/// may use modules of its own level or below, never above.
const LEVELS: &[&[&str]] = &[
    &["cmdline"],
    &["inject", "verify", "extract", "release", "bootimage"],
    &["choose", "payload", "ignition", "userdata", "transport"],
    &["registry"],
    &["trust"],
    &["image"],
    &["io", "warnings"],
];

/// The entry points of the fuzz targets: they reach into every layer on purpose.
const OUTSIDE: &[&str] = &["fuzzing"];

fn level(module: &str) -> Option<usize> {
    LEVELS.iter().position(|l| l.contains(&module))
}

/// The code of a file without comments and without its unit tests.
fn code(text: &str) -> String {
    let text = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default();
    text.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a piece of code names through `crate::`.
fn crate_uses(code: &str) -> BTreeSet<String> {
    let mut uses = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d::{e, f}}`: the first name of each item at depth 0.
            let mut depth = 0;
            let mut at_item = true;
            for (j, ch) in group.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        rest = &group[j..];
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => at_item = true,
                    c if at_item && (c.is_ascii_lowercase() || c == '_') => {
                        let name: String = group[j..]
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if name != "self" {
                            uses.insert(name);
                        }
                        at_item = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                uses.insert(name);
            }
        }
    }
    uses
}

/// Each top-level module of `src/` and the top-level modules it uses.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap();
            let top = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string();
            if top == "lib" || top == "main" {
                continue;
            }
            let uses = crate_uses(&code(&std::fs::read_to_string(&path).unwrap()));
            let deps = graph.entry(top.clone()).or_default();
            deps.extend(uses.into_iter().filter(|u| *u != top));
        }
    }
    graph
}

/// A cycle through `from`, if any: the path back to it.
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![(from.to_string(), vec![from.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == from {
                let mut cycle = path.clone();
                cycle.push(from.to_string());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

fn src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_import_cycle_between_modules() {
    let graph = graph(&src());
    assert!(graph.len() >= 10, "the source was not read: {graph:?}");
    let cycles: Vec<String> = graph
        .keys()
        .filter_map(|m| cycle_from(&graph, m))
        .map(|c| c.join(" -> "))
        .collect();
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn dependencies_point_down() {
    let graph = graph(&src());
    let mut wrong = Vec::new();
    for (module, deps) in &graph {
        if OUTSIDE.contains(&module.as_str()) {
            continue;
        }
        let Some(own) = level(module) else {
            wrong.push(format!("{module}: not placed in LEVELS"));
            continue;
        };
        for dep in deps {
            match level(dep) {
                Some(l) if l < own => wrong.push(format!("{module} uses {dep}, above it")),
                Some(_) => {}
                None if OUTSIDE.contains(&dep.as_str()) => {
                    wrong.push(format!("{module} uses {dep}"))
                }
                None => wrong.push(format!("{module} uses {dep}, not placed in LEVELS")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_reader_sees_every_form_of_use() {
    let uses = crate_uses(&code(
        "use crate::io::HashWriter;\n\
         use crate::{choose, image::{Digest, Image}, warnings::{self, Warning}};\n\
         // use crate::cmdline;\n\
         fn f() { crate::payload::threads(); }\n\
         #[cfg(test)]\nmod tests { use crate::inject; }\n",
    ));
    let want: BTreeSet<String> = ["io", "choose", "image", "warnings", "payload"]
        .map(String::from)
        .into();
    assert_eq!(uses, want);
    // A cycle is found, and its path given.
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_string(), ["b".to_string()].into()),
        ("b".to_string(), ["c".to_string()].into()),
        ("c".to_string(), ["a".to_string()].into()),
    ]
    .into();
    assert_eq!(
        cycle_from(&g, "a").unwrap().join(" -> "),
        "a -> b -> c -> a"
    );
}
