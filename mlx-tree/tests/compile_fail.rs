//! A field that is neither a tree nor marked `#[tree(static)]`/`#[tree(skip)]` is a compile
//! error (not a runtime surprise), and so are misused attributes.

#[test]
fn derive_rejects_bad_fields_at_compile_time() {
    // trybuild type-checks the cases in a workspace of its own; building MLX there again
    // would take minutes and prove nothing, so mlx-sys only provides its (committed) bindings.
    std::env::set_var("MLX_SYS_BINDINGS_ONLY", "1");
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
