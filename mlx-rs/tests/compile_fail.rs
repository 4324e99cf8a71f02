//! Every "no" in the README's Threads table is a compile error, so a change that made one of
//! those types `Send` or `Sync` by accident (a new field, a removed marker) fails here.

#[test]
fn negative_send_sync_claims_hold() {
    // trybuild type-checks the cases in a workspace of its own; building MLX there again
    // would take minutes and prove nothing, so mlx-sys only provides its bindings.
    std::env::set_var("MLX_SYS_BINDINGS_ONLY", "1");
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}
