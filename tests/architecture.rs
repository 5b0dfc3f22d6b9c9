//! The shape rules, checked on the source text: no import cycle between the
//! top-level modules of `src/`, and the session core (`src/session/engine/`)
//! naming no more of the protocol layer than it does today.
//!
//! Each rule carries the debt the redesign (issue 31) still has to pay as an
//! explicit list, and fails both when something new joins it and when an entry
//! is paid off but still listed: the lists only shrink, and they end empty.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The lines of a file's non-test code: comments dropped, and everything from
/// the first `#[cfg(test)]` on (the test module closes a file here). Files that
/// are test modules themselves (`tests.rs`, `*_tests.rs`) have none.
fn code_lines(path: &Path) -> Vec<String> {
    let name = path.file_name().unwrap().to_string_lossy();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return Vec::new();
    }
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .take_while(|line| line.trim() != "#[cfg(test)]")
        .map(str::trim)
        .filter(|line| !line.starts_with("//"))
        .map(str::to_owned)
        .collect()
}

/// The names that follow `prefix` in `line` (`crate::` → the top-level module),
/// and in a group (`crate::{auth::X, layer::Y}`) the first segment of each
/// path in it, as far as the line goes.
fn names_after<'a>(line: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut names = segments_after(line, prefix);
    let grouped = format!("{prefix}{{");
    for (at, _) in line.match_indices(&grouped) {
        let group = &line[at + grouped.len()..];
        let mut depth = 0usize;
        let mut start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    names.push(first_segment(&group[start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    names.push(first_segment(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
    }
    names.retain(|name| !name.is_empty());
    names
}

/// `auth` of ` auth::X as Y`.
fn first_segment(path: &str) -> &str {
    let path = path.trim();
    let end = path
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(path.len());
    &path[..end]
}

/// The path segments that follow `prefix` in `line`.
fn segments_after<'a>(line: &'a str, prefix: &str) -> Vec<&'a str> {
    line.match_indices(prefix)
        .filter(|(at, _)| {
            // A whole path segment: not `foo_crate::`.
            line[..*at]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
        })
        .map(|(at, _)| {
            let rest = &line[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// Top-level module → the top-level modules its non-test code names.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in rust_files(src) {
        let rel = path.strip_prefix(src).unwrap();
        let first = rel.iter().next().unwrap().to_string_lossy();
        let top = first.trim_end_matches(".rs").to_owned();
        if top == "lib" || top == "main" || top == "bin" {
            continue;
        }
        let entry = graph.entry(top.clone()).or_default();
        for line in code_lines(&path) {
            for name in names_after(&line, "crate::") {
                if name != top {
                    entry.insert(name.to_owned());
                }
            }
        }
    }
    graph
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<BTreeSet<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, node: &'g str) {
            let at = self.index.len();
            self.index.insert(node, at);
            self.low.insert(node, at);
            self.stack.push(node);
            for next in self.graph.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.graph.contains_key(next) {
                    continue;
                }
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.stack.contains(&next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = BTreeSet::new();
                while let Some(member) = self.stack.pop() {
                    component.insert(member.to_owned());
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.found
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    // The last one (`auth`, `layer`, `transport`) went with issue 31 §3: the HTTP
    // utilities live in `http`, which imports none of the three, and the OAuth
    // layer knows the chain through a trait the chain implements.
    let found = cycles(&module_graph(&src()));
    assert!(
        found.is_empty(),
        "import cycles between top-level modules: {found:?}"
    );
}

#[test]
fn the_session_core_names_no_new_part_of_the_protocol_layer() {
    // What the core (`session/engine/`) still names of the protocol layer,
    // file by file: the era's state and the host's inputs it holds until the
    // protocol layer owns them (issue 31).
    const PROTOCOL: &[&str] = &["era", "inputs", "legacy", "modern", "negotiate", "facts"];
    let known: BTreeSet<(String, String)> = [
        ("mod.rs", "era"),
        ("mod.rs", "inputs"),
        ("mod.rs", "legacy"),
    ]
    .into_iter()
    .map(|(file, module)| (file.to_owned(), module.to_owned()))
    .collect();
    let core = src().join("session").join("engine");
    let mut found = BTreeSet::new();
    for path in rust_files(&core) {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        // From `engine/mod.rs`, `super::` is the session module; from the
        // files under it, `super::super::` is.
        let parent = if file == "mod.rs" {
            "super::"
        } else {
            "super::super::"
        };
        for line in code_lines(&path) {
            for prefix in ["crate::session::", parent] {
                for name in names_after(&line, prefix) {
                    if PROTOCOL.contains(&name) {
                        found.insert((file.clone(), name.to_owned()));
                    }
                }
            }
        }
    }
    let new: Vec<_> = found.difference(&known).collect();
    assert!(
        new.is_empty(),
        "the session core names more of the protocol layer: {new:?}"
    );
    let paid: Vec<_> = known.difference(&found).collect();
    assert!(
        paid.is_empty(),
        "no longer named by the core, remove from this test's list: {paid:?}"
    );
}

#[test]
fn the_scan_sees_imports_and_paths() {
    assert_eq!(
        names_after("use crate::transport::{A, B};", "crate::"),
        ["transport"]
    );
    assert_eq!(
        names_after("let x = crate::auth::f(crate::layer::g());", "crate::"),
        ["auth", "layer"]
    );
    assert!(names_after("use my_crate::x;", "crate::").is_empty());
    assert_eq!(
        names_after("use crate::{auth::X, layer::{Y, Z}, http};", "crate::"),
        ["auth", "layer", "http"]
    );
    let mut graph = BTreeMap::new();
    graph.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    graph.insert("b".to_owned(), BTreeSet::from(["c".to_owned()]));
    graph.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    graph.insert("d".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(
        cycles(&graph),
        [BTreeSet::from([
            "a".to_owned(),
            "b".to_owned(),
            "c".to_owned()
        ])]
    );
}
