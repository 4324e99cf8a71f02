//! The facade's names: `mlx::core` lists `mlx_rs`'s root items by name (a glob would let the
//! tree `eval` shadow the array one silently), misses none of them, and its `eval` is the
//! tree-taking one of Python's `mx.eval(*trees)`.

use std::collections::BTreeSet;
use std::path::Path;

use mlx::core::{ops, Array, Result};
use mlx::utils::TreeNode;

fn parse(relative: &str) -> syn::File {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{relative}: {e}"));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// The names a `use` tree brings in, each with the path it comes from; `*` for a glob.
fn use_names(tree: &syn::UseTree, prefix: &str, out: &mut Vec<(String, String)>) {
    let join = |name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}::{name}")
        }
    };
    match tree {
        syn::UseTree::Path(p) => use_names(&p.tree, &join(&p.ident.to_string()), out),
        syn::UseTree::Name(n) => out.push((n.ident.to_string(), join(&n.ident.to_string()))),
        syn::UseTree::Rename(r) => out.push((r.rename.to_string(), join(&r.ident.to_string()))),
        syn::UseTree::Glob(_) => out.push(("*".to_string(), join("*"))),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_names(t, prefix, out)),
    }
}

fn is_pub(vis: &syn::Visibility) -> bool {
    matches!(vis, syn::Visibility::Public(_))
}

/// Every public name an item list defines or re-exports, with where it comes from.
fn public_names(items: &[syn::Item]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for item in items {
        let own = |ident: &syn::Ident| (ident.to_string(), format!("self::{ident}"));
        match item {
            syn::Item::Use(u) if is_pub(&u.vis) => use_names(&u.tree, "", &mut out),
            syn::Item::Mod(m) if is_pub(&m.vis) => out.push(own(&m.ident)),
            syn::Item::Fn(f) if is_pub(&f.vis) => out.push(own(&f.sig.ident)),
            syn::Item::Struct(s) if is_pub(&s.vis) => out.push(own(&s.ident)),
            syn::Item::Enum(e) if is_pub(&e.vis) => out.push(own(&e.ident)),
            syn::Item::Trait(t) if is_pub(&t.vis) => out.push(own(&t.ident)),
            syn::Item::Type(t) if is_pub(&t.vis) => out.push(own(&t.ident)),
            syn::Item::Const(c) if is_pub(&c.vis) => out.push(own(&c.ident)),
            syn::Item::Static(s) if is_pub(&s.vis) => out.push(own(&s.ident)),
            _ => {}
        }
    }
    out
}

fn facade_core() -> Vec<(String, String)> {
    let facade = parse("src/lib.rs");
    let core = facade
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Mod(m) if m.ident == "core" => m.content.as_ref(),
            _ => None,
        })
        .expect("src/lib.rs has an inline `pub mod core`");
    public_names(&core.1)
}

#[test]
fn core_lists_every_mlx_rs_root_item_and_globs_nothing() {
    let core = facade_core();
    let globs: Vec<_> = core.iter().filter(|(name, _)| name == "*").collect();
    assert!(globs.is_empty(), "mlx::core re-exports by glob: {globs:?}");

    let names: BTreeSet<&str> = core.iter().map(|(n, _)| n.as_str()).collect();
    let duplicates = core.len() - names.len();
    assert_eq!(duplicates, 0, "mlx::core names an item twice: {core:?}");

    let mlx_rs = public_names(&parse("mlx-rs/src/lib.rs").items);
    assert!(
        mlx_rs.len() > 20,
        "the parser found mlx-rs's items: {mlx_rs:?}"
    );
    let missing: Vec<&str> = mlx_rs
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !names.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "mlx_rs items missing from mlx::core (add them to src/lib.rs): {missing:?}"
    );
}

#[test]
fn core_eval_is_the_tree_eval() {
    let core = facade_core();
    for name in ["eval", "async_eval"] {
        let from: Vec<&str> = core
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, path)| path.as_str())
            .collect();
        assert_eq!(from, [format!("mlx_tree::{name}")], "mlx::core::{name}");
    }
}

#[derive(TreeNode)]
struct Cache {
    keys: Vec<Array>,
    offset: Array,
}

/// Everything Python's `mx.eval` takes, and the array-list forms `mlx_rs::eval` takes.
#[test]
fn core_eval_takes_trees_and_arrays() -> Result<()> {
    let lazy = |v: f32| Array::from(v) * 2.0;
    let cache = Cache {
        keys: vec![lazy(1.0), lazy(2.0)],
        offset: Array::from(1i32) + 1,
    };
    let y = lazy(3.0);
    mlx::core::eval((&y, &cache))?;
    assert!(y.is_evaluated() && cache.offset.is_evaluated());
    assert!(cache.keys.iter().all(Array::is_evaluated));

    let (a, b) = (lazy(4.0), lazy(5.0));
    mlx::core::eval([&a, &b])?;
    assert!(a.is_evaluated() && b.is_evaluated());

    let arrays = [lazy(6.0), lazy(7.0)];
    mlx::core::eval(&arrays[..])?;
    assert_eq!(arrays[1].item::<f32>()?, 14.0);

    let more = [lazy(8.0), lazy(9.0)];
    mlx::core::eval(more.iter().collect::<Vec<_>>())?;
    assert!(more.iter().all(Array::is_evaluated));

    let pending = ops::add(lazy(1.0), lazy(1.0))?;
    mlx::core::async_eval(&pending)?;
    assert_eq!(pending.item::<f32>()?, 4.0);
    Ok(())
}
