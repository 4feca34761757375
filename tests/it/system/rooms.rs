//! The direction of imports between rooms (issue 36, `docs/architecture.md`): no two rooms of
//! `src/` import each other, directly or through others. A room is a folder or a file directly
//! under `src/`; an import is a `crate::<room>` path in code (comment lines aside). A failure
//! names every room of the cycle with the files that import across it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// room -> (room it imports -> files importing it).
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn graph(src: &Path) -> Graph {
    let mut rooms: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            rooms.insert(name, files(&path));
        } else if name != "lib" && name != "main" {
            rooms.insert(name, vec![path]);
        }
    }
    let mut g = Graph::new();
    for (room, paths) in &rooms {
        let edges = g.entry(room.clone()).or_default();
        for path in paths {
            let text = std::fs::read_to_string(path).unwrap();
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (at, _) in line.match_indices("crate::") {
                    let rest = &line[at + "crate::".len()..];
                    let end = rest
                        .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                        .unwrap_or(rest.len());
                    let target = &rest[..end];
                    if target != room && rooms.contains_key(target) {
                        let file = path.strip_prefix(src).unwrap().display().to_string();
                        edges.entry(target.to_owned()).or_default().insert(file);
                    }
                }
            }
        }
    }
    g
}

/// The rooms from which `from` is reachable and which it reaches: its strongly connected
/// component.
fn component(g: &Graph, from: &str) -> BTreeSet<String> {
    let reach = |forward: bool| {
        let mut seen = BTreeSet::from([from.to_owned()]);
        let mut todo = vec![from.to_owned()];
        while let Some(room) = todo.pop() {
            let next: Vec<&String> = if forward {
                g[&room].keys().collect()
            } else {
                g.iter()
                    .filter(|(_, to)| to.contains_key(&room))
                    .map(|(r, _)| r)
                    .collect()
            };
            for n in next {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    reach(true).intersection(&reach(false)).cloned().collect()
}

#[test]
fn no_two_rooms_import_each_other() {
    let g = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(g.len() > 20, "rooms found: {:?}", g.keys());
    // The graph is read, not empty: the rooms above the store import it.
    assert!(g["data"].contains_key("store") && g["http"].contains_key("data"));
    let mut cycles = Vec::new();
    let mut done = BTreeSet::new();
    for room in g.keys() {
        let c = component(&g, room);
        if c.len() > 1 && done.insert(c.clone()) {
            let arrows: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    g[a].iter()
                        .filter(|(b, _)| c.contains(*b))
                        .map(move |(b, f)| format!("  {a} -> {b} in {f:?}"))
                })
                .collect();
            cycles.push(format!("{c:?}:\n{}", arrows.join("\n")));
        }
    }
    assert!(
        cycles.is_empty(),
        "rooms importing each other:\n{}",
        cycles.join("\n")
    );
}
