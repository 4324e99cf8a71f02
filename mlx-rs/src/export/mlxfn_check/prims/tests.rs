//! The descriptor table against MLX's own list of importable primitives, and each descriptor
//! against itself.

use std::collections::{BTreeSet, HashSet};

use super::super::Val;
use super::{all, check, fold, lookup, value_range, Dt, Field, Flow, Meta, State};

/// The primitive names MLX 0.32.2's importer can deserialize: the keys of `PrimitiveFactory`
/// in the vendored `export.cpp` (`SERIALIZE_PRIMITIVE(Name, aliases...)`).
fn mlx_importable() -> BTreeSet<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../mlx-sys/vendor/mlx/mlx/export.cpp"
    );
    let src = std::fs::read_to_string(path).expect("the vendored MLX source");
    let start = src
        .find("struct PrimitiveFactory")
        .expect("export.cpp has a PrimitiveFactory");
    let table = &src[start..];
    let table = &table[..table.find("};").expect("the factory table ends")];
    table
        .split("SERIALIZE_PRIMITIVE(")
        .skip(1)
        .map(|entry| {
            entry
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .collect()
}

#[test]
fn names_are_unique() {
    let mut seen = HashSet::new();
    for p in all() {
        assert!(seen.insert(p.name), "{} is described twice", p.name);
    }
}

#[test]
fn every_importable_primitive_is_described_and_nothing_else() {
    let mlx = mlx_importable();
    assert!(
        mlx.len() > 100,
        "found only {} names in export.cpp",
        mlx.len()
    );
    let ours: BTreeSet<String> = all().map(|p| p.name.to_string()).collect();
    let missing: Vec<_> = mlx.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&mlx).collect();
    assert!(missing.is_empty(), "MLX imports {missing:?}, undescribed");
    assert!(
        extra.is_empty(),
        "{extra:?} are described, but MLX cannot import them"
    );
    for name in &mlx {
        assert_eq!(lookup(name.as_bytes()).map(|p| p.name), Some(name.as_str()));
    }
    assert!(lookup(b"NotAPrimitive").is_none());
    assert!(lookup(b"Add\xff").is_none());
}

/// The value checks follow an index array back through moved and cast values to the
/// constant it comes from; a primitive that does so must carry bounds and values the same way.
#[test]
fn primitives_that_pass_values_on_fold_and_bound_them() {
    for p in all() {
        if p.flow != Flow::Computes {
            assert!(
                p.fold.is_some(),
                "{} passes values on but has no fold",
                p.name
            );
            assert!(
                p.propagates_range(),
                "{} passes values on but has no range rule",
                p.name
            );
        }
    }
}

/// A state of `layout` with plain values.
fn plain_state(layout: &[Field]) -> State {
    State(
        layout
            .iter()
            .map(|f| match f {
                Field::I32 => Val::I(0),
                Field::Bool => Val::B(false),
                Field::F32 | Field::F64 => Val::F(1.0),
                Field::U64 => Val::U(0),
                Field::Dtype => Val::D(Dt::F32),
                Field::VecI32 => Val::Is(vec![0]),
                Field::VecI64 => Val::Ls(vec![1]),
                Field::VecU64 => Val::Us(vec![0]),
                Field::Str => Val::S(b"L".to_vec()),
                Field::Null => Val::Nil,
                Field::OptF32 | Field::I32x3 | Field::VecBool3 | Field::VecScalar => Val::Walked,
            })
            .collect(),
    )
}

/// Every check, range rule and fold reads the state its layout decodes (a field of another
/// type panics), and none panics on the inputs and outputs it is given.
#[test]
fn descriptors_read_their_own_layout() {
    let metas: Vec<Meta> = [Dt::F32, Dt::I32, Dt::U32, Dt::Bool, Dt::C64]
        .into_iter()
        .flat_map(|dtype| {
            [vec![], vec![4], vec![2, 4], vec![2, 2, 4, 4]]
                .into_iter()
                .map(move |shape| Meta { shape, dtype })
        })
        .collect();
    let mut passed = 0;
    for p in all() {
        let st = plain_state(p.layout);
        for m in &metas {
            for n_in in 0..=6 {
                let ins: Vec<&Meta> = vec![m; n_in];
                for n_out in 1..=3 {
                    let outs = vec![m.clone(); n_out];
                    for gpu in [false, true] {
                        if check(p, &st, &ins, &outs, gpu).is_err() {
                            continue;
                        }
                        passed += 1;
                        let out_refs: Vec<&Meta> = outs.iter().collect();
                        let data: Vec<i128> = (0..m.size().into()).collect();
                        for known in [None, Some(&data[..])] {
                            let vals = vec![known; n_in];
                            fold(p, &st, &ins, &vals, &out_refs);
                        }
                        let ranges = vec![None; n_in];
                        let args = vec![true; n_in];
                        value_range(p, &st, &ins, &ranges, &args, &out_refs);
                    }
                }
            }
        }
    }
    assert!(
        passed > 100,
        "only {passed} plain calls passed their checks"
    );
}
