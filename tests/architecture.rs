//! The shape rules, checked on the source text: no import cycle between the
//! top-level modules of `src/`, none between the modules of `src/session/`,
//! the session's three layers (core `engine`, `protocol`, `client`)
//! importing only downward, and the supervisor above the session.

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
/// the first unindented `#[cfg(test)]` on (the test module closes a file here). Files that
/// are test modules themselves (`tests.rs`, `*_tests.rs`) have none.
fn code_lines(path: &Path) -> Vec<String> {
    let name = path.file_name().unwrap().to_string_lossy();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return Vec::new();
    }
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .take_while(|line| *line != "#[cfg(test)]")
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
fn the_supervisor_sits_above_the_session() {
    // The supervisor (issue 33) holds clients and reconnects them; no module
    // it builds on may know it, so a session never depends on being supervised.
    let graph = module_graph(&src());
    assert!(
        graph["supervisor"].contains("session"),
        "the scan sees the supervisor's imports: {:?}",
        graph["supervisor"]
    );
    let importers: Vec<&String> = graph
        .iter()
        .filter(|(module, targets)| *module != "supervisor" && targets.contains("supervisor"))
        .map(|(module, _)| module)
        .collect();
    assert!(
        importers.is_empty(),
        "modules importing the supervisor: {importers:?}"
    );
}

/// The module path of a file under `src/` (`session/protocol/legacy.rs` →
/// `session::protocol::legacy`; a `mod.rs` is its directory's module).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let mut segments: Vec<String> = file
        .strip_prefix(src)
        .unwrap()
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if segments.last().is_some_and(|last| last == "mod") {
        segments.pop();
    }
    segments
}

/// Module → the modules its non-test code names, for every file under
/// `src/<root>/`: paths through `crate::<root>::`, `super::` (as far up as it
/// goes) and, from a `mod.rs`, its own children. A module naming one of its
/// ancestors or descendants is left out (a module and the modules it declares
/// are one unit); what remains are the imports between siblings and cousins.
fn submodule_graph(root: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = src();
    let files = rust_files(&src.join(root));
    let modules: Vec<Vec<String>> = files.iter().map(|f| module_path(&src, f)).collect();
    let known: BTreeSet<Vec<String>> = modules.iter().cloned().collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, module) in files.iter().zip(&modules) {
        let is_mod_rs = file.file_name().is_some_and(|n| n == "mod.rs");
        let mut bases: Vec<(String, Vec<String>)> =
            vec![(format!("crate::{root}::"), vec![root.to_owned()])];
        // From `a/b.rs` (module a::b), `super::` is `a`; from `a/b/mod.rs`
        // (module a::b) it is `a` as well.
        let mut prefix = String::new();
        let mut base = module.clone();
        while base.len() > 1 {
            base.pop();
            prefix.push_str("super::");
            bases.push((prefix.clone(), base.clone()));
        }
        let children: Vec<&Vec<String>> = if is_mod_rs {
            known
                .iter()
                .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
                .collect()
        } else {
            Vec::new()
        };
        let entry = graph.entry(module.join("::")).or_default();
        for line in code_lines(file) {
            let mut named: Vec<Vec<String>> = Vec::new();
            for (prefix, base) in &bases {
                // `super::super::x` also contains `super::x`: take the longest.
                for name in names_after(&line, prefix) {
                    if name == "super" {
                        continue;
                    }
                    let mut target = base.clone();
                    target.push(name.to_owned());
                    named.push(target);
                }
            }
            for child in &children {
                let name = child.last().unwrap();
                let bare = format!("{name}::");
                if segments_after(&line, &bare).is_empty() && !line.contains(&format!("{{{bare}")) {
                    continue;
                }
                named.push((*child).clone());
            }
            for mut target in named {
                while !target.is_empty() && !known.contains(&target) {
                    target.pop();
                }
                let related = target.starts_with(module) || module.starts_with(&target);
                if !target.is_empty() && !related {
                    entry.insert(target.join("::"));
                }
            }
        }
    }
    graph
}

#[test]
fn no_import_cycle_inside_the_session() {
    let found = cycles(&submodule_graph("session"));
    assert!(
        found.is_empty(),
        "import cycles between the session's modules: {found:?}"
    );
}

#[test]
fn the_session_layers_import_only_downward() {
    // The core (`engine`) knows no era and no client; the protocol layer knows
    // the core and not the client; the client sits on both (issue 31 §1).
    let layer = |module: &str| match module.split("::").nth(1) {
        Some("engine") => Some(0),
        Some("protocol") => Some(1),
        Some("client") => Some(2),
        _ => None,
    };
    let graph = submodule_graph("session");
    assert!(
        graph.contains_key("session::protocol::legacy")
            && graph["session::client"].contains("session::protocol"),
        "the scan sees the session's modules: {graph:?}"
    );
    let mut upward = Vec::new();
    for (from, targets) in &graph {
        for to in targets {
            if let (Some(a), Some(b)) = (layer(from), layer(to))
                && a < b
            {
                upward.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "the session's layers import upward: {upward:?}"
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
