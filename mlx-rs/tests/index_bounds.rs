//! Out-of-range index arrays: MLX's gather, scatter and dynamic-slice kernels read and write
//! outside the array for them (the process dies, or another array changes), so the checked
//! ops clamp reads, drop writes and clamp dynamic slice starts (`ops::bounds`). Each result
//! is compared with a host-side model of those rules, and the unchecked forms are checked to
//! be MLX's ops with in-range indices. The cases run in a child process: a regression
//! kills the child, and this test reports it instead of dying.

mod support;

use mlx_rs::compile::compile;
use mlx_rs::ops;
use mlx_rs::{Array, Dtype, Result};

#[test]
fn out_of_range_indices_are_defined_not_a_crash() {
    let (status, text) = support::run_child("child_index_bounds");
    assert!(
        status.success(),
        "the child died or failed ({status:?}):\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "the child test did not run:\n{text}"
    );
}

fn i32s(a: &Array) -> Vec<i32> {
    a.astype(Dtype::Int32).unwrap().to_vec::<i32>().unwrap()
}

fn arr(v: &[i32]) -> Array {
    Array::from_slice(v, &[v.len() as i32]).unwrap()
}

/// The clamped read of `i` from an axis of `n` (the rule the checked reads follow).
fn clamp(i: i64, n: i64) -> usize {
    let i = if i < 0 { i + n } else { i };
    i.clamp(0, n - 1) as usize
}

/// Where `i` is a valid index into an axis of `n` (the rule the checked writes follow).
fn inside(i: i64, n: i64) -> Option<usize> {
    let i = if i < 0 { i + n } else { i };
    (0..n).contains(&i).then_some(i as usize)
}

fn reads() -> Result<()> {
    let data: Vec<i32> = (0..10).map(|v| v * 10).collect();
    let a = arr(&data);
    let idx = [0i32, 9, -1, -10, 10, -11, 1_000_000_000, i32::MIN, i32::MAX];
    let want: Vec<i32> = idx.iter().map(|&i| data[clamp(i.into(), 10)]).collect();
    assert_eq!(i32s(&ops::take(&a, arr(&idx), 0)?), want, "take");
    assert_eq!(i32s(&ops::take(&a, arr(&idx), None)?), want, "take flat");
    assert_eq!(i32s(&a.index(arr(&idx))?), want, "index");
    assert_eq!(
        i32s(&ops::take_along_axis(&a, &arr(&idx), 0)?),
        want,
        "take_along_axis"
    );
    // A Rust integer is checked before MLX sees it.
    assert!(ops::take(&a, 10, 0).is_err());
    assert!(ops::take(&a, -11, 0).is_err());
    assert_eq!(i32s(&ops::take(&a, -1, 0)?), [90]);

    // Narrow index dtypes: int8 -5 into an axis of 1000 is 995 (the arithmetic widens);
    // uint8 255 into an axis of 10 clamps to 9.
    let long = ops::arange(0, 1000, 1, Dtype::Int32)?;
    let i8s = Array::from_slice(&[-5i8, 127, -128], &[3])?;
    assert_eq!(i32s(&ops::take(&long, &i8s, 0)?), [995, 127, 872]);
    let u8s = Array::from_slice(&[255u8, 3], &[2])?;
    assert_eq!(i32s(&ops::take(&a, &u8s, 0)?), [90, 30]);
    let i64s = Array::from_slice(&[i64::MAX, i64::MIN, -2], &[3])?;
    assert_eq!(i32s(&ops::take(&a, &i64s, 0)?), [90, 0, 80]);

    // Along an axis of a 2-D array, and gather with slices of 2: starts clamp to n - 2.
    let m = Array::from_slice(&(0..12).collect::<Vec<i32>>(), &[3, 4])?;
    assert_eq!(i32s(&ops::take(&m, arr(&[5, -4]), 1)?), [3, 0, 7, 4, 11, 8]);
    let g = ops::gather(&m, [&arr(&[2, 7, -1])], &[1], &[1, 2])?;
    assert_eq!(g.shape(), [3, 1, 2]);
    assert_eq!(i32s(&g), [2, 3, 2, 3, 2, 3]);
    let g2 = ops::gather(&m, [&arr(&[9]), &arr(&[-9])], &[0, 1], &[1, 1])?;
    assert_eq!(i32s(&g2), [8]);

    // Batched matmuls: a batch index past the batch clamps; segment bounds clamp into 0..=k.
    let batches = Array::from_slice(&(1..=12).map(|v| v as f32).collect::<Vec<_>>(), &[3, 2, 2])?;
    let eye = ops::eye(2, Default::default())?.reshape(&[1, 2, 2])?;
    let picked = |lhs: &[i32]| -> Result<Vec<f32>> {
        let lhs = arr(lhs);
        let options = ops::GatherMmOptions {
            lhs_indices: Some(&lhs),
            rhs_indices: None,
            sorted_indices: false,
        };
        ops::gather_mm(&batches, &eye, options)?.to_vec::<f32>()
    };
    assert_eq!(picked(&[9, -1, -8])?, picked(&[2, 2, 0])?);
    let lhs = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[1, 4])?;
    let rhs = Array::from_slice(&[1.0f32, 10.0, 100.0, 1000.0], &[4, 1])?;
    let seg = |s: &[i32]| -> Result<Vec<f32>> {
        let segments = Array::from_slice(s, &[s.len() as i32 / 2, 2])?;
        ops::segmented_mm(&lhs, &rhs, &segments)?.to_vec::<f32>()
    };
    assert_eq!(seg(&[2, 99, -5, 1, 3, 1])?, [4300.0, 1.0, 0.0]);

    // Picking from an empty axis is an error, not a read.
    let empty = ops::zeros(&[0], Dtype::Float32)?;
    assert!(ops::take_along_axis(&empty, &arr(&[0]), 0).is_err());
    assert!(ops::take(&empty, arr(&[0]), 0).is_err());

    // With in-range indices the unchecked forms are the same ops.
    let ok = arr(&[3, -1, 0]);
    // SAFETY: every index lies in -10..10.
    let raw = unsafe { ops::take_unchecked(&a, &ok, 0)? };
    assert_eq!(i32s(&raw), i32s(&ops::take(&a, &ok, 0)?));
    // SAFETY: as above.
    let raw = unsafe { ops::take_along_axis_unchecked(&a, &ok, 0)? };
    assert_eq!(i32s(&raw), i32s(&ops::take_along_axis(&a, &ok, 0)?));
    // SAFETY: every start leaves its slice of 2 inside the 4 columns.
    let raw = unsafe { ops::gather_unchecked(&m, [&arr(&[2])], &[1], &[1, 2])? };
    assert_eq!(
        i32s(&raw),
        i32s(&ops::gather(&m, [&arr(&[2])], &[1], &[1, 2])?)
    );
    Ok(())
}

fn writes() -> Result<()> {
    let base: Vec<f32> = (0..6).map(|v| v as f32).collect();
    let a = Array::from_slice(&base, &[6])?;
    let idx = [1i32, 6, -1, -7, 50_000_000, i32::MIN, 2];
    let upd: Vec<f32> = (0..idx.len()).map(|k| 100.0 + k as f32).collect();
    let updates = Array::from_slice(&upd, &[idx.len() as i32, 1])?;
    // The host model: each in-range index writes (or combines); the rest change nothing.
    let model = |f: &dyn Fn(f32, f32) -> f32| {
        let mut out = base.clone();
        for (&i, &u) in idx.iter().zip(&upd) {
            if let Some(p) = inside(i.into(), 6) {
                out[p] = f(out[p], u);
            }
        }
        out
    };
    let i = arr(&idx);
    let check = |got: Array, want: Vec<f32>, what: &str| {
        assert_eq!(got.to_vec::<f32>().unwrap(), want, "{what}");
    };
    check(
        ops::scatter(&a, [&i], &updates, &[0])?,
        model(&|_, u| u),
        "scatter",
    );
    check(
        ops::scatter_add(&a, [&i], &updates, &[0])?,
        model(&|x, u| x + u),
        "scatter_add",
    );
    check(
        ops::scatter_prod(&a, [&i], &updates, &[0])?,
        model(&|x, u| x * u),
        "scatter_prod",
    );
    check(
        ops::scatter_max(&a, [&i], &updates, &[0])?,
        model(&|x, u| x.max(u)),
        "scatter_max",
    );
    check(
        ops::scatter_min(&a, [&i], &updates, &[0])?,
        model(&|x, u| x.min(u)),
        "scatter_min",
    );
    check(a.at(&i).add(1.0)?, model(&|x, _| x + 1.0), "at().add");
    check(a.index_put(&i, 7.0)?, model(&|_, _| 7.0), "index_put");
    let values = Array::from_slice(&upd, &[idx.len() as i32])?;
    check(
        ops::put_along_axis(&a, &i, &values, 0)?,
        model(&|_, u| u),
        "put_along_axis",
    );
    check(
        ops::scatter_add_axis(&a, &i, &values, 0)?,
        model(&|x, u| x + u),
        "scatter_add_axis",
    );

    // The write: an index of 5e7 into 6 elements changes nothing.
    let far = arr(&[50_000_000]);
    check(a.at(&far).add(1.0)?, base.clone(), "at(5e7).add");

    // A dropped add leaves -0.0 as -0.0 (the identity it adds is -0.0, not 0.0).
    let neg_zero = Array::from_slice(&[-0.0f32], &[1])?;
    let dropped = ops::scatter_add(
        &neg_zero,
        [&arr(&[3])],
        &Array::from_slice(&[5.0f32], &[1, 1])?,
        &[0],
    )?;
    assert!(dropped.to_vec::<f32>()?[0].is_sign_negative());

    // Integer and boolean targets, 2-D with two index arrays, and a set that writes slices.
    let ints = Array::from_slice(&[5i32, 5, 5, 5], &[2, 2])?;
    let rows = arr(&[0, 2, -1]);
    let cols = arr(&[1, 0, -3]);
    let u = Array::from_slice(&[1i32, 2, 3], &[3, 1, 1])?;
    assert_eq!(
        i32s(&ops::scatter_max(&ints, [&rows, &cols], &u, &[0, 1])?),
        [5, 5, 5, 5]
    );
    assert_eq!(
        i32s(&ops::scatter_min(&ints, [&rows, &cols], &u, &[0, 1])?),
        [5, 1, 5, 5]
    );
    assert_eq!(
        i32s(&ops::scatter(&ints, [&rows, &cols], &u, &[0, 1])?),
        [5, 1, 5, 5]
    );
    let flags = Array::from_slice(&[false, true], &[2])?;
    let set = ops::scatter_min(
        &flags,
        [&arr(&[1, 9])],
        &Array::from_slice(&[false, false], &[2, 1])?,
        &[0],
    )?;
    assert_eq!(set.to_vec::<bool>()?, [false, false]);
    let grid = ops::zeros(&[3, 4], Dtype::Int32)?;
    let row_updates = ops::ones(&[2, 1, 4], Dtype::Int32)?;
    let written = ops::scatter(&grid, [&arr(&[1, 3])], &row_updates, &[0])?;
    assert_eq!(i32s(&written), [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0]);
    // An update of 2 rows may start at 0 or 1 of 3: a start of 2 is dropped whole.
    let two_rows = ops::ones(&[2, 2, 4], Dtype::Int32)?;
    let written = ops::scatter_add(&grid, [&arr(&[2, 1])], &two_rows, &[0])?;
    assert_eq!(i32s(&written), [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]);

    // With in-range indices the unchecked forms are the same ops.
    let ok = arr(&[1, -1]);
    let u2 = Array::from_slice(&[9.0f32, 8.0], &[2, 1])?;
    // SAFETY: both indices lie in -6..6.
    let raw = unsafe { ops::scatter_add_unchecked(&a, [&ok], &u2, &[0])? };
    assert_eq!(
        raw.to_vec::<f32>()?,
        ops::scatter_add(&a, [&ok], &u2, &[0])?.to_vec::<f32>()?
    );
    Ok(())
}

fn dynamic_slices() -> Result<()> {
    let a = Array::from_slice(&(0..10).collect::<Vec<i32>>(), &[10])?;
    for (start, want_first) in [(3, 3), (8, 7), (100, 7), (-1, 0), (i32::MIN, 0)] {
        let s = ops::slice(&a, &arr(&[start]), &[0], &[3])?;
        assert_eq!(
            i32s(&s),
            [want_first, want_first + 1, want_first + 2],
            "start {start}"
        );
    }
    let u = arr(&[-1, -2]);
    let put = ops::slice_update(&a, &u, &arr(&[9]), &[0])?;
    assert_eq!(i32s(&put), [0, 1, 2, 3, 4, 5, 6, 7, -1, -2]);
    let put = ops::slice_update(&a, &u, &Array::from_slice(&[u32::MAX], &[1])?, &[0])?;
    assert_eq!(i32s(&put), [0, 1, 2, 3, 4, 5, 6, 7, -1, -2]);
    // Two axes at once, with a 0-d start for one axis.
    let m = Array::from_slice(&(0..12).collect::<Vec<i32>>(), &[3, 4])?;
    let s = ops::slice(&m, &arr(&[5, -3]), &[0, 1], &[2, 2])?;
    assert_eq!(i32s(&s), [4, 5, 8, 9]);
    let s = ops::slice(&m, &Array::from_scalar(7i32), &[1], &[3, 2])?;
    assert_eq!(i32s(&s), [2, 3, 6, 7, 10, 11]);
    // Checked before MLX: a negative slice size, and an update with more dimensions.
    assert!(ops::slice(&a, &arr(&[0]), &[0], &[-2]).is_err());
    assert!(ops::slice_update(&a, &ops::zeros(&[1, 2], Dtype::Int32)?, &arr(&[0]), &[0]).is_err());
    // SAFETY: the start 2 leaves 3 elements inside 10.
    let raw = unsafe { ops::slice_unchecked(&a, &arr(&[2]), &[0], &[3])? };
    assert_eq!(i32s(&raw), [2, 3, 4]);
    Ok(())
}

fn transforms() -> Result<()> {
    // The gradient of a clamped read lands on the element read (JAX's rule).
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
    let grad = mlx_rs::transforms::grad(
        |x: &[Array]| {
            Ok(vec![ops::sum(
                &ops::take(&x[0], arr(&[7, -1, 0]), 0)?,
                None,
                false,
            )?])
        },
        0,
    )(std::slice::from_ref(&a))?;
    assert_eq!(grad[0].to_vec::<f32>()?, [1.0, 0.0, 2.0]);
    // Compiled, the guard is part of the traced graph: indices that change between calls
    // are handled without a retrace.
    let f = compile(|x: &[Array]| Ok(vec![ops::take(&x[0], &x[1], 0)?]), None);
    assert_eq!(i32s(&f.call(&[arr(&[4, 5, 6]), arr(&[9])])?[0]), [6]);
    assert_eq!(i32s(&f.call(&[arr(&[4, 5, 6]), arr(&[-9])])?[0]), [4]);
    assert_eq!(f.traces(), 1);
    Ok(())
}

#[test]
#[ignore = "runs in a child process started by out_of_range_indices_are_defined_not_a_crash"]
fn child_index_bounds() -> Result<()> {
    reads()?;
    writes()?;
    dynamic_slices()?;
    transforms()
}
