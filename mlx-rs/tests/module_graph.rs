//! mlx-rs's modules import each other without a cycle.
//!
//! A cycle means no module of it can be read, tested or changed without all the others: it
//! is how the lowest type (`Array`) came to depend on the distributed and io subsystems. This
//! test reads `mlx-rs/src`, builds the graph of which module names which (`use crate::..`,
//! `crate::x::y` in code, `super::`, `self::`, and a child module named by a relative path),
//! prints it, and fails naming every cycle's path. Two granularities, both must be acyclic:
//!
//! - top-level modules (`array`, `distributed`, `io`, ...), each with its submodules folded
//!   in: the layers of the crate;
//! - files (`distributed`, `distributed::lost`, `io::failed_reads`, ...), where a submodule
//!   may use its ancestors (`super::`: the module it is a part of), but no other cycle is
//!   allowed (`array -> distributed::lost -> array` was one).
//!
//! Comments and string literals are skipped; a name re-exported at the crate root
//! (`crate::Array`) counts as the module it comes from (`array`), an exported macro as the
//! file that defines it. Paths are what it reads: a method call (`a.eval()`) names no
//! module, so methods are defined in the layer they belong to (`Array::eval` in
//! `evaluation`, `Array::to_vec` in `data`, both above `array`). Inline modules belong to
//! their file; `#[cfg(test)]` items are left out (tests may use anything). The crate root
//! (`lib.rs`) is a node like the others: a module that uses an item defined there is a
//! cycle through it.
//!
//! `cargo test --release -p mlx-rs --test module_graph -- --nocapture` prints the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path from the crate root (`["distributed", "lost"]`); the root is empty.
type ModPath = Vec<String>;

/// A module dependency graph: each module and the modules it names.
type Graph = BTreeMap<ModPath, BTreeSet<ModPath>>;

fn name(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

/// Source text without comments, string, byte string and char literals (replaced by a space),
/// so that neither a doc link nor a message that names `crate::x` counts as a use.
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied();
        if at(0) == Some('/') && at(1) == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if at(0) == Some('/') && at(1) == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if raw_string_start(&c, i).is_some() {
            let (hashes, body) = raw_string_start(&c, i).unwrap();
            i = body;
            while i < c.len() {
                if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push(' ');
        } else if at(0) == Some('"')
            || (at(0) == Some('b') && at(1) == Some('"') && !ident_before(&c, i))
        {
            i += if at(0) == Some('b') { 2 } else { 1 };
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else if at(0) == Some('\'') && (at(1) == Some('\\') || at(2) == Some('\'')) {
            // A char literal ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn ident_before(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// `r"..."`, `r#"..."#`, `br"..."`: the number of `#`s and where the body starts.
fn raw_string_start(c: &[char], i: usize) -> Option<(usize, usize)> {
    if ident_before(c, i) {
        return None;
    }
    let mut j = i;
    if c.get(j) == Some(&'b') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some((hashes, j + 1))
}

/// Identifiers, `::` and single punctuation characters; numbers are dropped.
fn tokens(src: &str) -> Vec<String> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphabetic() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(c[start..i].iter().collect());
        } else if c[i].is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".to_string());
            i += 2;
        } else if c[i].is_whitespace() {
            i += 1;
        } else {
            out.push(c[i].to_string());
            i += 1;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// A path as written, each with the name it binds (`as` renames it): `crate::a::{b, c as d}`
/// is `[crate, a, b]` binding `b` and `[crate, a, c]` binding `d`.
struct Written {
    segments: Vec<String>,
    binds: String,
}

/// Parses the path (or use tree) that starts at `t[*i]`, and moves `*i` past it.
fn path_tree(t: &[String], i: &mut usize, prefix: &[String], out: &mut Vec<Written>) {
    let mut segments = prefix.to_vec();
    loop {
        match t.get(*i).map(String::as_str) {
            Some("{") => {
                *i += 1;
                while *i < t.len() && t[*i] != "}" {
                    if t[*i] == "," {
                        *i += 1;
                        continue;
                    }
                    let before = *i;
                    path_tree(t, i, &segments, out);
                    if *i == before {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            Some("*") => {
                *i += 1;
                let binds = "*".to_string();
                out.push(Written { segments, binds });
                return;
            }
            Some(s) if is_ident(s) => {
                // `self` in a braced list names the prefix itself.
                if s != "self" || segments.is_empty() {
                    segments.push(s.to_string());
                }
                *i += 1;
            }
            _ => return,
        }
        if t.get(*i).map(String::as_str) == Some("::")
            && t.get(*i + 1)
                .is_some_and(|n| n == "{" || n == "*" || is_ident(n))
        {
            *i += 1;
            continue;
        }
        let mut binds = segments.last().cloned().unwrap_or_default();
        if t.get(*i).map(String::as_str) == Some("as") {
            if let Some(alias) = t.get(*i + 1) {
                binds = alias.clone();
                *i += 2;
            }
        }
        out.push(Written { segments, binds });
        return;
    }
}

/// One source file: its module and the paths it writes, each with the module (inline
/// modules included) it is written in.
struct File {
    module: ModPath,
    paths: Vec<(ModPath, Written)>,
    /// `#[macro_export]` macros it defines: they are named from the crate root.
    macros: Vec<String>,
}

/// The paths a file writes that can name a module of this crate: those starting with
/// `crate`, `$crate`, `super` or `self`, every `use` path (its first segment may be a child
/// module), and any other path whose first segment names a child module of where it is.
fn scan(module: &[String], src: &str, children: &BTreeSet<ModPath>) -> File {
    let t = tokens(&strip(src));
    let mut paths = Vec::new();
    let mut macros = Vec::new();
    // Inline modules open at a brace depth: (name, depth inside its braces).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let here = |inline: &[(String, usize)]| -> ModPath {
        let mut m = module.to_vec();
        m.extend(inline.iter().map(|(n, _)| n.clone()));
        m
    };
    while i < t.len() {
        let tok = t[i].as_str();
        let prev = if i > 0 { t[i - 1].as_str() } else { "" };
        let attribute = |i: usize, words: &[&str]| {
            t.get(i) == Some(&"#".to_string())
                && t.get(i + 1) == Some(&"[".to_string())
                && words
                    .iter()
                    .enumerate()
                    .all(|(k, w)| t.get(i + 2 + k).is_some_and(|x| x == w))
        };
        if attribute(i, &["cfg", "(", "test", ")", "]"]) {
            // Test code may use anything: skip the item the attribute is on (to its closing
            // brace or semicolon).
            let mut j = i + 7;
            while j < t.len() && t[j] != "{" && t[j] != ";" {
                j += 1;
            }
            if t.get(j).is_some_and(|x| x == "{") {
                let mut d = 0usize;
                while j < t.len() {
                    match t[j].as_str() {
                        "{" => d += 1,
                        "}" => {
                            d -= 1;
                            if d == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
            }
            i = j + 1;
            continue;
        }
        if attribute(i, &["macro_export", "]"]) {
            let mut j = i + 4;
            while j + 2 < t.len() && !(t[j] == "macro_rules" && t[j + 1] == "!") {
                j += 1;
            }
            if let Some(name) = t.get(j + 2) {
                macros.push(name.clone());
            }
        }
        match tok {
            "{" => depth += 1,
            "}" => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            "mod" if t.get(i + 2).is_some_and(|b| b == "{") => {
                inline.push((t[i + 1].clone(), depth + 1));
            }
            "use" => {
                let at = here(&inline);
                let mut found = Vec::new();
                i += 1;
                if t.get(i).is_some_and(|s| s == "::") {
                    i += 1;
                }
                path_tree(&t, &mut i, &[], &mut found);
                paths.extend(found.into_iter().map(|w| (at.clone(), w)));
                continue;
            }
            _ if is_ident(tok)
                && prev != "::"
                && t.get(i + 1).is_some_and(|n| n == "::")
                && (matches!(tok, "crate" | "super" | "self") || {
                    let mut child = here(&inline);
                    child.push(tok.to_string());
                    children.contains(&child)
                }) =>
            {
                let at = here(&inline);
                let mut found = Vec::new();
                path_tree(&t, &mut i, &[], &mut found);
                paths.extend(found.into_iter().map(|w| (at.clone(), w)));
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    File {
        module: module.to_vec(),
        paths,
        macros,
    }
}

/// The crate's modules and what its root re-exports (`pub use array::{Array, eval}`): each
/// name and the module it comes from (`None`: another crate's, `pub use half`).
struct Crate {
    files: Vec<File>,
    modules: BTreeSet<ModPath>,
    root_names: BTreeMap<String, Option<ModPath>>,
}

impl Crate {
    /// `sources`: each file's module and text.
    fn new(sources: &[(ModPath, String)]) -> Crate {
        let modules: BTreeSet<ModPath> = sources.iter().map(|(m, _)| m.clone()).collect();
        let files: Vec<File> = sources
            .iter()
            .map(|(m, src)| scan(m, src, &modules))
            .collect();
        let mut krate = Crate {
            files: Vec::new(),
            modules,
            root_names: BTreeMap::new(),
        };
        for f in &files {
            for m in &f.macros {
                krate.root_names.insert(m.clone(), Some(f.module.clone()));
            }
        }
        if let Some(root) = files.iter().find(|f| f.module.is_empty()) {
            for (_, w) in &root.paths {
                let target = krate.resolve(&[], &w.segments);
                krate.root_names.insert(w.binds.clone(), target);
            }
        }
        krate.files = files;
        krate
    }

    /// The file module a path written in `at` names, if one of this crate.
    fn resolve(&self, at: &[String], segments: &[String]) -> Option<ModPath> {
        let mut cur: ModPath = at.to_vec();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                cur.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    cur.pop()?;
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                let mut child = cur.clone();
                child.push(first.to_string());
                if !self.modules.contains(&child) {
                    return None;
                }
            }
            None => return None,
        }
        let mut descended = false;
        while let Some(seg) = rest.first() {
            let mut next = cur.clone();
            next.push(seg.clone());
            if !self.modules.contains(&next) {
                break;
            }
            cur = next;
            rest = &rest[1..];
            descended = true;
        }
        if cur.is_empty() && !descended {
            if let Some(seg) = rest.first() {
                if let Some(target) = self.root_names.get(seg) {
                    return target.clone();
                }
            }
        }
        // Inline modules fold into their file.
        while !self.modules.contains(&cur) {
            cur.pop()?;
        }
        Some(cur)
    }

    /// The file-level graph (self edges dropped).
    fn file_graph(&self) -> Graph {
        let mut g = Graph::new();
        for f in &self.files {
            let deps = g.entry(f.module.clone()).or_default();
            for (at, w) in &f.paths {
                if let Some(target) = self.resolve(at, &w.segments) {
                    if target != f.module {
                        deps.insert(target);
                    }
                }
            }
        }
        g
    }
}

/// `g` with every module folded into its top-level ancestor (the root stays the root).
fn top_level(g: &Graph) -> Graph {
    let top = |m: &ModPath| m.iter().take(1).cloned().collect::<ModPath>();
    let mut out = Graph::new();
    for (m, deps) in g {
        let entry = out.entry(top(m)).or_default();
        entry.extend(deps.iter().map(top).filter(|d| *d != top(m)));
    }
    out
}

/// A cycle: a path that starts and ends at the same module, and every module on some cycle
/// with it (its strongly connected component).
struct Cycle {
    path: Vec<ModPath>,
    component: BTreeSet<ModPath>,
}

/// One cycle per strongly connected component of more than one module.
fn cycles(g: &Graph) -> Vec<Cycle> {
    let mut out = Vec::new();
    let mut done: BTreeSet<ModPath> = BTreeSet::new();
    for start in g.keys() {
        if done.contains(start) {
            continue;
        }
        let component = component_of(g, start);
        done.extend(component.iter().cloned());
        if component.len() > 1 {
            let path = cycle_through(g, start, &component);
            out.push(Cycle { path, component });
        }
    }
    out
}

/// `g` without the edges from a module to its ancestors: a submodule may use the module it
/// is part of (`super::`), as a helper of its parent.
fn without_ancestor_edges(g: &Graph) -> Graph {
    g.iter()
        .map(|(m, deps)| {
            let own = deps
                .iter()
                .filter(|d| !(d.len() < m.len() && m.starts_with(d)))
                .cloned()
                .collect();
            (m.clone(), own)
        })
        .collect()
}

fn reachable(g: &Graph, from: &ModPath, reverse: bool) -> BTreeSet<ModPath> {
    let mut seen = BTreeSet::from([from.clone()]);
    let mut stack = vec![from.clone()];
    while let Some(m) = stack.pop() {
        let next: Vec<ModPath> = if reverse {
            g.iter()
                .filter(|(_, deps)| deps.contains(&m))
                .map(|(k, _)| k.clone())
                .collect()
        } else {
            g.get(&m).into_iter().flatten().cloned().collect()
        };
        for n in next {
            if seen.insert(n.clone()) {
                stack.push(n);
            }
        }
    }
    seen
}

/// The modules that reach `m` and that `m` reaches.
fn component_of(g: &Graph, m: &ModPath) -> BTreeSet<ModPath> {
    let down = reachable(g, m, false);
    let up = reachable(g, m, true);
    down.intersection(&up).cloned().collect()
}

/// A shortest path from `start` back to itself inside `component` (breadth first).
fn cycle_through(g: &Graph, start: &ModPath, component: &BTreeSet<ModPath>) -> Vec<ModPath> {
    let mut parent: BTreeMap<ModPath, ModPath> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.clone()]);
    while let Some(m) = queue.pop_front() {
        for n in g.get(&m).into_iter().flatten() {
            if !component.contains(n) {
                continue;
            }
            if n == start {
                let mut path = vec![start.clone(), m.clone()];
                let mut cur = m.clone();
                while let Some(p) = parent.get(&cur) {
                    path.push(p.clone());
                    cur = p.clone();
                }
                if cur != *start {
                    path.push(start.clone());
                }
                path.reverse();
                path.dedup();
                if path.first() != path.last() {
                    path.push(start.clone());
                }
                return path;
            }
            if !parent.contains_key(n) && n != start {
                parent.insert(n.clone(), m.clone());
                queue.push_back(n.clone());
            }
        }
    }
    vec![start.clone(), start.clone()]
}

/// The graph, lowest layer first: each module after everything it uses (where acyclic).
fn render(g: &Graph) -> String {
    let mut placed: BTreeSet<ModPath> = BTreeSet::new();
    let mut order = Vec::new();
    while placed.len() < g.len() {
        let ready: Vec<ModPath> = g
            .iter()
            .filter(|(m, deps)| {
                !placed.contains(*m)
                    && deps
                        .iter()
                        .all(|d| placed.contains(d) || !g.contains_key(d))
            })
            .map(|(m, _)| m.clone())
            .collect();
        // What is left sits on a cycle: listed as it is.
        let next = if ready.is_empty() {
            g.keys().filter(|m| !placed.contains(*m)).cloned().collect()
        } else {
            ready
        };
        for m in next {
            placed.insert(m.clone());
            order.push(m);
        }
    }
    let mut out = String::new();
    for m in order {
        let deps: Vec<String> = g[&m].iter().map(|d| name(d)).collect();
        out.push_str(&format!("{} -> {}\n", name(&m), deps.join(", ")));
    }
    out
}

fn render_cycles(cs: &[Cycle]) -> String {
    let names = |ms: &mut dyn Iterator<Item = &ModPath>| ms.map(|m| name(m)).collect::<Vec<_>>();
    cs.iter()
        .map(|c| {
            let path = names(&mut c.path.iter()).join(" -> ");
            if c.component.len() + 1 == c.path.len() {
                path
            } else {
                let all = names(&mut c.component.iter()).join(", ");
                format!("{path} (one of the cycles among {all})")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `.rs` file under `dir` with its module path (`x/mod.rs` is `x`, `lib.rs` the root).
fn read_sources(dir: &Path, prefix: &[String], out: &mut Vec<(ModPath, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut p = prefix.to_vec();
            p.push(stem);
            read_sources(&path, &p, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut m = prefix.to_vec();
            if !(stem == "mod" || (prefix.is_empty() && stem == "lib")) {
                m.push(stem);
            }
            out.push((m, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn mlx_rs_modules_import_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    read_sources(&src, &[], &mut sources);
    let krate = Crate::new(&sources);
    let files = krate.file_graph();
    let top = top_level(&files);
    println!(
        "top-level modules, each after what it uses:\n{}",
        render(&top)
    );
    println!("files:\n{}", render(&files));
    let (top_cycles, file_cycles) = (cycles(&top), cycles(&without_ancestor_edges(&files)));
    assert!(
        top_cycles.is_empty() && file_cycles.is_empty(),
        "import cycles among mlx-rs's top-level modules:\n{}\namong its files (a submodule's \
         use of its ancestors aside):\n{}",
        render_cycles(&top_cycles),
        render_cycles(&file_cycles)
    );
    // The layers: the core types below the evaluation pipeline, the pipeline below the
    // subsystems that register into it.
    let core = [
        "item", "dtype", "error", "array", "handles", "memory", "backends", "device", "stream",
    ];
    let above_core = [
        "evaluation",
        "data",
        "graph",
        "ops",
        "random",
        "transforms",
        "compile",
    ];
    let subsystems = ["distributed", "io", "export"];
    let layers: [(&[&str], Vec<&str>); 2] = [
        (&core, [&above_core[..], &subsystems[..]].concat()),
        (&["evaluation"], subsystems.to_vec()),
    ];
    for (lows, highs) in layers {
        for low in lows {
            let reach = reachable(&top, &vec![low.to_string()], false);
            for high in &highs {
                assert!(
                    !reach.contains(&vec![high.to_string()]),
                    "{low} reaches {high}:\n{}",
                    render(&top)
                );
            }
        }
    }
}

#[cfg(test)]
mod check {
    use super::*;

    fn m(s: &str) -> ModPath {
        if s == "crate" {
            return Vec::new();
        }
        s.split("::").map(str::to_string).collect()
    }

    fn krate(files: &[(&str, &str)]) -> Crate {
        let sources: Vec<(ModPath, String)> =
            files.iter().map(|(p, s)| (m(p), s.to_string())).collect();
        Crate::new(&sources)
    }

    fn deps(g: &Graph, of: &str) -> Vec<String> {
        g[&m(of)].iter().map(|d| name(d)).collect()
    }

    #[test]
    fn a_cycle_is_found_with_its_path() {
        let k = krate(&[
            ("crate", "mod a; mod b; mod c; pub use a::A;"),
            ("a", "use crate::b::B; pub struct A;"),
            ("b", "pub struct B; fn f() { crate::c::g() }"),
            ("c", "pub fn g() { let _ = crate::A; }"),
        ]);
        let g = k.file_graph();
        let cs = cycles(&g);
        assert_eq!(cs.len(), 1, "{}", render(&g));
        assert_eq!(render_cycles(&cs), "a -> b -> c -> a");
    }

    #[test]
    fn an_acyclic_crate_has_no_cycle() {
        let k = krate(&[
            ("crate", "mod a; mod b; pub use a::A;"),
            ("a", "pub struct A;"),
            (
                "b",
                "use crate::A; use super::a; // crate::b::x\nfn f() { \"crate::b\"; }",
            ),
        ]);
        let g = k.file_graph();
        assert!(cycles(&g).is_empty(), "{}", render(&g));
        assert_eq!(deps(&g, "b"), ["a"]);
    }

    #[test]
    fn submodules_fold_into_their_top_level_module() {
        let k = krate(&[
            ("crate", "mod low; mod high;"),
            ("low", "mod guard; fn f() { guard::g() }"),
            ("low::guard", "pub fn g() { crate::high::h() }"),
            ("high", "pub fn h() {} fn k() { crate::low::f() }"),
        ]);
        let files = k.file_graph();
        assert_eq!(deps(&files, "low"), ["low::guard"]);
        assert_eq!(deps(&files, "low::guard"), ["high"]);
        let top = top_level(&files);
        assert_eq!(render_cycles(&cycles(&top)), "high -> low -> high");
    }

    #[test]
    fn super_self_braces_renames_and_inline_modules_resolve() {
        let k = krate(&[
            ("crate", "mod a; mod b; pub use b::{inner::X as Y, self as bee};"),
            ("a", "use crate::{b::{self, inner}, Y}; mod tests { use super::*; use super::super::b; }"),
            ("b", "pub mod inner; fn f() { self::inner::x(); }"),
            ("b::inner", "fn x() { super::super::a::z(); let c = 'c'; let s = r#\"crate::a\"#; }"),
        ]);
        let g = k.file_graph();
        assert_eq!(deps(&g, "a"), ["b", "b::inner"]);
        assert_eq!(deps(&g, "b"), ["b::inner"]);
        assert_eq!(deps(&g, "b::inner"), ["a"]);
        assert_eq!(deps(&g, "crate"), ["b", "b::inner"]);
        assert_eq!(
            render_cycles(&cycles(&g)),
            "a -> b::inner -> a (one of the cycles among a, b, b::inner)"
        );
    }

    #[test]
    fn test_code_is_left_out_and_exported_macros_belong_to_their_file() {
        let k = krate(&[
            ("crate", "mod a; mod b;"),
            (
                "a",
                "pub fn f() {}\n#[cfg(test)]\nmod tests { use crate::b::g; fn t() { g() } }",
            ),
            (
                "b",
                "#[macro_export]\nmacro_rules! m { () => {} }\npub fn g() { crate::a::f() }",
            ),
            ("b::c", "crate::m! {}"),
        ]);
        let g = k.file_graph();
        assert!(cycles(&g).is_empty(), "{}", render(&g));
        assert_eq!(deps(&g, "b::c"), ["b"]);
    }

    #[test]
    fn a_name_of_the_root_itself_is_a_cycle_through_the_root() {
        let k = krate(&[
            ("crate", "mod a; pub fn version() { a::f() }"),
            ("a", "pub fn f() { crate::version(); }"),
        ]);
        let g = k.file_graph();
        assert_eq!(render_cycles(&cycles(&g)), "crate -> a -> crate");
    }
}
