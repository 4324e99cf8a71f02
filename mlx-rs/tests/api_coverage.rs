//! The Rust twin of `scripts/api-coverage`: every function the vendored mlx-c headers in
//! [`STRICT_HEADERS`] declare must be called by mlx-rs (as `sys::<name>` in `src/`) or listed
//! in `api-exclusions.txt` with a reason. Widen `STRICT_HEADERS` as more headers are covered;
//! the script reports every header.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Headers whose every function must be wrapped or excluded.
const STRICT_HEADERS: &[&str] = &["ops.h"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Removes `/* */` and `//` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |i| &r[i + 2..]);
        } else if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |i| &r[i..]);
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Names of the functions a header declares: in each `;`-terminated statement that is not a
/// typedef or preprocessor line, the first `mlx_*` / `_mlx_*` identifier directly followed
/// by `(`.
fn declared_functions(header: &str) -> Vec<String> {
    let text = strip_comments(header);
    let text: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = Vec::new();
    for stmt in text.split(';') {
        let stmt = stmt.trim();
        if stmt.starts_with("typedef") || stmt.contains("typedef ") {
            continue;
        }
        let chars: Vec<(usize, char)> = stmt.char_indices().collect();
        let mut i = 0;
        while i < chars.len() {
            let (start, c) = chars[i];
            let boundary = i == 0 || !is_ident(chars[i - 1].1);
            if boundary && is_ident(c) {
                let mut j = i;
                while j < chars.len() && is_ident(chars[j].1) {
                    j += 1;
                }
                let end = chars.get(j).map_or(stmt.len(), |&(e, _)| e);
                let word = &stmt[start..end];
                let next = stmt[end..].trim_start().chars().next();
                if (word.starts_with("mlx_") || word.starts_with("_mlx_")) && next == Some('(') {
                    names.push(word.to_string());
                    break;
                }
                i = j;
            } else {
                i += 1;
            }
        }
    }
    names
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `sys::<name>` mentioned in mlx-rs/src.
fn wrapped() -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_sources(&root().join("mlx-rs/src"), &mut files);
    let mut names = BTreeSet::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, _) in text.match_indices("sys::") {
            let name: String = text[i + 5..].chars().take_while(|&c| is_ident(c)).collect();
            if name.starts_with("mlx_") || name.starts_with("_mlx_") {
                names.insert(name);
            }
        }
    }
    names
}

fn exclusions() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(root().join("mlx-rs/api-exclusions.txt")).unwrap();
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap().trim();
        if line.is_empty() {
            continue;
        }
        let (name, reason) = line
            .split_once(char::is_whitespace)
            .unwrap_or_else(|| panic!("api-exclusions.txt:{}: `{line}` needs a reason", n + 1));
        assert!(!reason.trim().is_empty(), "{name}: empty reason");
        out.insert(name.to_string(), reason.trim().to_string());
    }
    out
}

fn headers_dir() -> PathBuf {
    root().join("vendor/mlx-c/mlx/c")
}

#[test]
fn every_strict_header_function_is_wrapped_or_excluded() {
    let wrapped = wrapped();
    let excluded = exclusions();
    let mut missing = Vec::new();
    let mut total = 0;
    for header in STRICT_HEADERS {
        let text = std::fs::read_to_string(headers_dir().join(header)).unwrap();
        let names = declared_functions(&text);
        assert!(!names.is_empty(), "{header}: no declarations found");
        for name in names {
            total += 1;
            if !wrapped.contains(&name) && !excluded.contains_key(&name) {
                missing.push(format!("{header}: {name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {total} functions are neither wrapped nor in api-exclusions.txt:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn exclusions_name_real_functions_and_never_ops() {
    let mut declared = BTreeSet::new();
    for entry in std::fs::read_dir(headers_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "h") {
            declared.extend(declared_functions(&std::fs::read_to_string(&path).unwrap()));
        }
    }
    let ops: BTreeSet<String> =
        declared_functions(&std::fs::read_to_string(headers_dir().join("ops.h")).unwrap())
            .into_iter()
            .collect();
    // ops.h has 265 functions in mlx-c 0.7.0; a parser that finds far fewer is broken.
    assert_eq!(ops.len(), 265, "ops.h parse");
    for name in exclusions().keys() {
        assert!(
            declared.contains(name),
            "stale exclusion: {name} is in no header"
        );
        assert!(
            !ops.contains(name),
            "{name}: ops are wrapped, never excluded"
        );
    }
}

#[test]
fn the_parser_reads_multi_line_prototypes_and_skips_typedefs() {
    let header = "/* c */\n#include <x.h>\ntypedef int (*mlx_fn)(int);\nint mlx_a(\n  mlx_array* res,\n  const mlx_array a);\nmlx_string mlx_b(void); // tail\nint _mlx_c(int x);\n";
    assert_eq!(declared_functions(header), vec!["mlx_a", "mlx_b", "_mlx_c"]);
}
