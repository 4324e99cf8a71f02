//! A field that is neither a tree nor marked `#[tree(static)]`/`#[tree(skip)]` is a compile
//! error (not a runtime surprise), and so are misused attributes.

#[test]
fn derive_rejects_bad_fields_at_compile_time() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
