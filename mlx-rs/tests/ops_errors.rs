//! Bad input for every op family returns `Err` with a message naming the op; nothing aborts.
//!
//! Each check is `(label, result, expected substring)`. MLX validates most arguments itself
//! (its message is passed through, prefixed with `[op]`); mlx-rs adds checks where MLX would
//! not catch the mistake or where Rust-side argument handling can fail first (integer index
//! bounds, zero slice steps, conv option lengths, `expand_dims` without an axis).
//!
//! Out-of-range *array* indices are not errors (only the data knows them, and checking would
//! force evaluation inside a lazy graph): reads clamp and writes drop, which
//! `tests/index_bounds.rs` checks.

use mlx_rs::ops::{self, Axes, ConvOptions, Ellipsis, QuantizeOptions, Slice};
use mlx_rs::{Array, Dtype, Result};

fn check(label: &str, r: Result<impl std::fmt::Debug>, want: &str) {
    match r {
        Ok(v) => panic!("{label}: expected an error containing {want:?}, got Ok({v:?})"),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.to_lowercase().contains(&want.to_lowercase()),
                "{label}: message {msg:?} does not mention {want:?}"
            );
        }
    }
}

/// Errors some ops report only when the graph is evaluated.
fn evaluated(r: Result<Array>) -> Result<Array> {
    let a = r?;
    a.eval()?;
    Ok(a)
}

fn f32s(shape: &[i32]) -> Array {
    ops::ones(shape, None).unwrap()
}

#[test]
fn element_wise_ops() {
    let a = f32s(&[2, 3]);
    check("add shapes", ops::add(&a, f32s(&[4])), "broadcast");
    check(
        "multiply shapes",
        ops::multiply(&a, f32s(&[3, 2])),
        "broadcast",
    );
    check("bitwise on floats", ops::bitwise_and(&a, &a), "bitwise_and");
    check(
        "bitwise_invert on floats",
        ops::bitwise_invert(&a),
        "bitwise_invert",
    );
    check(
        "where shapes",
        ops::where_(f32s(&[2]), &a, 0.0),
        "broadcast",
    );
    check("matmul shapes", ops::matmul(&a, &a), "matmul");
    check("addmm shapes", ops::addmm(&a, &a, &a, None, None), "addmm");
    check(
        "divmod complex",
        ops::divmod(Array::from_scalar(num_complex()), 1.0),
        "divmod",
    );
}

fn num_complex() -> mlx_rs::num_complex::Complex32 {
    mlx_rs::num_complex::Complex32::new(1.0, 1.0)
}

#[test]
fn reductions_and_scans() {
    let a = f32s(&[2, 3]);
    check("sum axis", ops::sum(&a, 2, false), "axis");
    check("var axes", ops::var(&a, [0, 4], false, None), "axis");
    check("std axis", a.std(-3, false, 1), "axis");
    check("argmax axis", ops::argmax(&a, 2, false), "axis");
    check(
        "cumsum axis",
        ops::cumsum(&a, 5, Default::default()),
        "axis",
    );
    check(
        "logcumsumexp axis",
        ops::logcumsumexp(&a, -3, None, None),
        "axis",
    );
    check("softmax axis", ops::softmax(&a, 3, None), "axis");
}

#[test]
fn shape_ops() {
    let a = f32s(&[2, 3]);
    check("reshape size", a.reshape(&[4, 2]), "reshape");
    check("squeeze non-unit", ops::squeeze(&a, 0), "squeeze");
    check(
        "expand_dims without axis",
        ops::expand_dims(&a, Axes::All),
        "axis is required",
    );
    check("expand_dims axis", ops::expand_dims(&a, 5), "expand_dims");
    check("transpose axes", ops::transpose(&a, [0, 0]), "transpose");
    check("swapaxes", ops::swapaxes(&a, 0, 2), "swapaxes");
    check("moveaxis", ops::moveaxis(&a, 3, 0), "moveaxis");
    check("broadcast_to", ops::broadcast_to(&a, &[4, 3]), "broadcast");
    check(
        "concatenate",
        ops::concatenate([&a, &f32s(&[2, 2])], 0),
        "concatenate",
    );
    check("stack", ops::stack([&a, &f32s(&[3, 2])], 0), "stack");
    check("split uneven", ops::split(&a, 2, 1), "split");
    check("tile negative", ops::tile(&a, &[-1, 1]), "tile");
    check("repeat negative", ops::repeat(&a, -1, 0), "repeat");
    check(
        "pad pairs",
        ops::pad(&a, [(1, 1), (1, 1), (1, 1)], None, 0),
        "pad",
    );
    check(
        "pad negative",
        ops::pad(&a, -1, ops::PadMode::Reflect, 0),
        "pad",
    );
    check("flatten axes", ops::flatten(&a, 1, 0), "flatten");
    check(
        "unflatten size",
        ops::unflatten(&a, 1, &[2, 2]),
        "unflatten",
    );
    check("view size", ops::view(f32s(&[3]), Dtype::Float64), "view");
    check(
        "unstack scalar",
        ops::unstack(&Array::from_scalar(1.0f32), None),
        "unstack",
    );
}

#[test]
fn gather_and_scatter_ops() {
    let a = f32s(&[3, 4]);
    let idx = Array::from_slice(&[0i32, 1], &[2]).unwrap();
    check(
        "take float indices",
        ops::take(&a, f32s(&[2]), 0),
        "integral",
    );
    check("take axis", ops::take(&a, &idx, 2), "take");
    check(
        "take_along_axis ndim",
        ops::take_along_axis(&a, &idx, 0),
        "take_along_axis",
    );
    check(
        "put_along_axis ndim",
        ops::put_along_axis(&a, &idx, 1.0, 0),
        "put_along_axis",
    );
    check(
        "searchsorted 2-D",
        ops::searchsorted(&a, &f32s(&[2]), None),
        "searchsorted",
    );
    check("slice sizes", ops::slice(&a, &idx, &[0, 1], &[1]), "slice");
    check(
        "slice_update shape",
        ops::slice_update(&a, &f32s(&[5, 5]), &idx, &[0, 1]),
        "broadcast",
    );
    check(
        "gather axes",
        ops::gather(&a, [&idx], &[2], &[1, 1]),
        "gather",
    );
    check(
        "scatter updates",
        ops::scatter(&a, [&idx], &f32s(&[7]), &[0]),
        "scatter",
    );
    check(
        "scatter_add updates",
        ops::scatter_add(&a, [&idx], &f32s(&[7]), &[0]),
        "scatter",
    );
    // MLX throws a bare C string here, which mlx-c cannot catch (found by fuzzing).
    let mask = Array::from_slice(&[true, false, true], &[3]).unwrap();
    check(
        "scatter bool indices",
        ops::scatter(&a, [&mask], &f32s(&[3, 1, 4]), &[0]),
        "boolean indices",
    );
    check(
        "scatter_min bool indices",
        ops::scatter_min(&a, [&mask, &idx], &f32s(&[3, 1, 1]), &[0, 1]),
        "boolean indices",
    );
    // SAFETY: the call is refused before MLX sees any index.
    let unchecked = unsafe { ops::scatter_add_unchecked(&a, [&mask], &f32s(&[3, 1, 4]), &[0]) };
    check(
        "scatter_add_unchecked bool indices",
        unchecked,
        "boolean indices",
    );
    check(
        "masked_scatter mask shape",
        ops::masked_scatter(&a, &Array::from_slice(&[true, false], &[2]).unwrap(), &a),
        "masked_scatter",
    );
}

#[test]
fn sorting_ops() {
    let a = f32s(&[3, 4]);
    check("sort axis", ops::sort(&a, 2), "axis");
    check("argsort axis", ops::argsort(&a, -3), "axis");
    check("partition kth", ops::partition(&a, 9, None), "partition");
    check("topk k", ops::topk(&a, 9, None), "topk");
}

#[test]
fn creation_ops() {
    check("zeros negative", ops::zeros(&[-1, 2], None), "negative");
    check(
        "full shape",
        ops::full(&[2, 2], f32s(&[3]), None),
        "broadcast",
    );
    check("arange step", ops::arange(0, 5, 0, None), "step");
    check("eye negative", ops::eye(-1, Default::default()), "eye");
    check(
        "linspace negative",
        ops::linspace(0.0, 1.0, ops::LinspaceOptions::default().num(-2)),
        "linspace",
    );
    check("tril 1-D", ops::tril(&f32s(&[3]), None), "tril");
    check(
        "identity negative",
        ops::identity(-3, Dtype::Bool),
        "positive",
    );
    check(
        "meshgrid indexing",
        ops::meshgrid([&f32s(&[2])], None, "zz"),
        "meshgrid",
    );
}

#[test]
fn linear_algebra_style_ops() {
    let a = f32s(&[2, 3]);
    check(
        "einsum subscripts",
        ops::einsum("ij,jk->ik", [&a, &a]),
        "einsum",
    );
    check("einsum operands", ops::einsum("ij->", [&a, &a]), "einsum");
    check("tensordot", ops::tensordot(&a, &a, 1), "tensordot");
    check("vecdot", ops::vecdot(&a, &f32s(&[2, 4]), None), "vecdot");
    check("diag 3-D", ops::diag(&f32s(&[2, 2, 2]), None), "diag");
    check("diagonal axes", ops::diagonal(&a, None, 0, 0), "diagonal");
    check(
        "trace 1-D",
        ops::trace(&f32s(&[3]), None, None, None, None),
        "trace",
    );
    // MLX checks the size when the graph runs: the error arrives from `eval`.
    check(
        "hadamard size",
        evaluated(ops::hadamard_transform(&a, None)),
        "hadamard",
    );
    check(
        "gather_mm shapes",
        ops::gather_mm(&a, &a, Default::default()),
        "must match",
    );
    check(
        "segmented_mm shapes",
        ops::segmented_mm(&a, &a, &f32s(&[1, 2])),
        "segmented_mm",
    );
    check(
        "block_masked_mm",
        ops::block_masked_mm(&a, &a, ops::BlockMaskedMmOptions::default().block_size(3)),
        "must match",
    );
    check(
        "isclose shapes",
        ops::isclose(&a, &f32s(&[4]), Default::default()),
        "broadcast",
    );
    check(
        "clip without bounds",
        ops::clip(&a, None, None),
        "at most one",
    );
    check("diff axis", ops::diff(&a, None, 4), "diff");
}

#[test]
fn convolutions() {
    let x = f32s(&[1, 5, 5, 3]);
    let w = f32s(&[2, 3, 3, 4]);
    check(
        "conv2d channels",
        ops::conv2d(&x, &w, ConvOptions::default()),
        "conv",
    );
    check(
        "conv2d option length",
        ops::conv2d(
            &x,
            &f32s(&[2, 3, 3, 3]),
            ConvOptions::default().stride([1, 1, 1]),
        ),
        "stride has 3 values",
    );
    check(
        "conv1d input rank",
        ops::conv1d(&x, &w, ConvOptions::default()),
        "conv1d",
    );
    check(
        "conv_transpose3d rank",
        ops::conv_transpose3d(&x, &w, Default::default()),
        "conv_transpose3d",
    );
    check(
        "conv_general groups",
        ops::conv_general(
            &x,
            &f32s(&[2, 3, 3, 3]),
            ops::ConvGeneralOptions::default().groups(2),
        ),
        "conv",
    );
}

#[test]
fn quantization() {
    let w = f32s(&[4, 48]);
    check(
        "quantize group size",
        ops::quantize(&w, QuantizeOptions::default().group_size(32)),
        "quantize",
    );
    check(
        "quantize bits",
        ops::quantize(&f32s(&[4, 64]), QuantizeOptions::default().bits(7)),
        "quantize",
    );
    let (wq, s, b) = ops::quantize(&f32s(&[4, 64]), QuantizeOptions::default()).unwrap();
    check(
        "dequantize missing biases",
        ops::dequantize(&wq, &s, Default::default()),
        "biases",
    );
    check(
        "quantized_matmul shapes",
        ops::quantized_matmul(
            &f32s(&[2, 32]),
            &wq,
            &s,
            ops::QuantizedMatmulOptions {
                biases: b.as_ref(),
                ..Default::default()
            },
        ),
        "quantized_matmul",
    );
    check(
        "gather_qmm shapes",
        ops::gather_qmm(
            &f32s(&[2, 32]),
            &wq,
            &s,
            ops::GatherQmmOptions {
                biases: b.as_ref(),
                ..Default::default()
            },
        ),
        "does not match",
    );
    check("to_fp8 int", ops::to_fp8(&Array::from_scalar(1i32)), "fp8");
}

#[test]
fn indexing() {
    let a = ops::arange_to(12).unwrap().reshape(&[3, 4]).unwrap();
    check("int out of range", a.index(3), "out of bounds");
    check(
        "negative int out of range",
        a.index((0, -5)),
        "out of bounds",
    );
    check("too many indices", a.index((0, 0, 0)), "too many indices");
    check(
        "scalar",
        Array::from_scalar(1.0f32).index(0),
        "0-dimensional",
    );
    check(
        "two ellipses",
        a.index((Ellipsis, Ellipsis)),
        "single ellipsis",
    );
    check(
        "zero step",
        a.index(Slice::new(None, None, 0)),
        "step cannot be zero",
    );
    let mask = ops::greater(&a, 5).unwrap();
    check("mask read", a.index(&mask), "boolean mask");
    check("put shape", a.index_put(0..2, f32s(&[3])), "broadcast");
    check("put out of range", a.index_put((1, 7), 0), "out of bounds");
    check("at on mask", a.at(&mask).add(1), "boolean");
    check("float index array", a.index(f32s(&[2])), "gather");
    let mut b = a.clone();
    check(
        "index_set keeps self on error",
        b.index_set(9, 0),
        "out of bounds",
    );
    assert_eq!(b.to_vec::<i32>().unwrap(), a.to_vec::<i32>().unwrap());
    // Indices beyond i64 are out of bounds, not wrapped to a negative index (`usize::MAX`
    // was `-1`, the last row).
    check("usize::MAX", a.index(usize::MAX), "out of bounds");
    check("u64::MAX", a.index((0, u64::MAX)), "out of bounds");
    // An inclusive end of i32::MAX runs to the axis' end (its `+ 1` overflowed to an empty
    // slice before).
    assert_eq!(a.index(0..=i32::MAX).unwrap().shape(), &[3, 4]);
    assert_eq!(a.index((.., ..=i32::MAX)).unwrap().shape(), &[3, 4]);
    let put = a
        .index_put(1..=i32::MAX, 9)
        .unwrap()
        .to_vec::<i32>()
        .unwrap();
    assert_eq!(put[..4], [0, 1, 2, 3]);
    assert!(put[4..].iter().all(|&v| v == 9));
}

/// Empty inputs whose results are empty: MLX's kernels for these divide by the axis length
/// and would kill the process (SIGFPE, in Python MLX too); here the result is the empty array
/// of the shape and dtype MLX gives it.
#[test]
fn empty_inputs_give_empty_results_not_a_crash() -> Result<()> {
    use mlx_rs::linalg;
    // MLX has these factorizations on the CPU only (Python passes `stream=mx.cpu`).
    let cpu = |f: &dyn Fn() -> Result<Array>| mlx_rs::with_device(&mlx_rs::Device::cpu(), f)?;
    let empty = |shape: &[i32]| ops::zeros(shape, Dtype::Float32);
    let cases: Vec<(&str, Result<Array>, Vec<i32>, Dtype)> = vec![
        (
            "sort axis 0",
            ops::sort(&empty(&[0, 3])?, 0),
            vec![0, 3],
            Dtype::Float32,
        ),
        (
            "argsort axis 1",
            ops::argsort(&empty(&[3, 0])?, 1),
            vec![3, 0],
            Dtype::Uint32,
        ),
        (
            "cumsum flat",
            ops::cumsum(&empty(&[0])?, None, Default::default()),
            vec![0],
            Dtype::Float32,
        ),
        (
            "cumsum of bool",
            ops::cumsum(&ops::zeros(&[0], Dtype::Bool)?, 0, Default::default()),
            vec![0],
            // What MLX makes of a bool scan (its own dtype rule, the graph built but not run).
            ops::cumsum(&ops::zeros(&[1], Dtype::Bool)?, 0, Default::default())?.dtype(),
        ),
        (
            "cumprod axis 1",
            ops::cumprod(&empty(&[2, 0])?, 1, Default::default()),
            vec![2, 0],
            Dtype::Float32,
        ),
        (
            "cummax",
            ops::cummax(&empty(&[0, 3])?, 0, None, None),
            vec![0, 3],
            Dtype::Float32,
        ),
        (
            "cummin",
            ops::cummin(&empty(&[0])?, None, None, None),
            vec![0],
            Dtype::Float32,
        ),
        (
            "logcumsumexp",
            ops::logcumsumexp(&empty(&[0])?, None, None, None),
            vec![0],
            Dtype::Float32,
        ),
        (
            "inv",
            cpu(&|| linalg::inv(&empty(&[0, 0])?)),
            vec![0, 0],
            Dtype::Float32,
        ),
        (
            "inv batch",
            cpu(&|| linalg::inv(&empty(&[2, 0, 0])?)),
            vec![2, 0, 0],
            Dtype::Float32,
        ),
        (
            "tri_inv",
            cpu(&|| linalg::tri_inv(&empty(&[0, 0])?, None)),
            vec![0, 0],
            Dtype::Float32,
        ),
        (
            "solve",
            cpu(&|| linalg::solve(&empty(&[0, 0])?, &empty(&[0])?)),
            vec![0],
            Dtype::Float32,
        ),
    ];
    for (label, result, shape, dtype) in cases {
        let out = result?;
        assert_eq!(out.shape(), &shape[..], "{label}");
        assert_eq!(out.dtype(), dtype, "{label}");
        out.eval()?;
    }
    let (p, l, u) = mlx_rs::with_device(&mlx_rs::Device::cpu(), || linalg::lu(&empty(&[0, 0])?))??;
    for f in [p, l, u] {
        assert_eq!(f.size(), 0);
        f.eval()?;
    }
    // Not empty: still MLX's kernels, still the right values.
    let a = Array::from_slice(&[3.0f32, 1.0, 2.0], &[3])?;
    assert_eq!(ops::sort(&a, 0)?.to_vec::<f32>()?, [1.0, 2.0, 3.0]);
    assert_eq!(
        ops::cumsum(&a, 0, Default::default())?.to_vec::<f32>()?,
        [3.0, 4.0, 6.0]
    );
    Ok(())
}

/// Arguments MLX divides by: 0 would kill the process (SIGFPE) in MLX, so they are checked.
#[test]
fn zero_divisors_among_the_arguments_are_errors() -> Result<()> {
    let x = f32s(&[1, 8, 4]);
    let w = f32s(&[4, 3, 4]);
    for groups in [0, -1] {
        check(
            "conv1d groups",
            ops::conv1d(&x, &w, ConvOptions::default().groups(groups)),
            "groups must be positive",
        );
        check(
            "conv_transpose1d groups",
            ops::conv_transpose1d(&x, &w, ops::ConvTransposeOptions::default().groups(groups)),
            "groups must be positive",
        );
    }
    let m = f32s(&[4, 64]);
    check(
        "quantize group_size 0",
        ops::quantize(&m, QuantizeOptions::default().group_size(0)),
        "group_size must be positive",
    );
    check(
        "quantize bits 0",
        ops::quantize(&m, QuantizeOptions::default().bits(0)),
        "bits must be positive",
    );
    // The defaults still quantize.
    assert_eq!(
        ops::quantize(&m, QuantizeOptions::default())?.0.shape()[0],
        4
    );
    Ok(())
}

/// Shapes MLX accepts but cannot hold: negative dimensions, and element counts that wrap
/// (`[65536; 4]` has 2^64 elements, which MLX's count wraps to 0).
#[test]
fn shapes_that_cannot_exist_are_errors() -> Result<()> {
    let four = f32s(&[4]);
    check("reshape -2", ops::reshape(&four, &[-2, -2]), "non-negative");
    check(
        "reshape two -1",
        ops::reshape(&four, &[-1, -1]),
        "non-negative",
    );
    let empty = ops::zeros(&[0], Dtype::Float32)?;
    check(
        "reshape that wraps",
        ops::reshape(&empty, &[65536; 4]),
        "more elements than an array can hold",
    );
    check(
        "broadcast_to that wraps",
        ops::broadcast_to(&ops::zeros(&[1], Dtype::Float32)?, &[65536; 4]),
        "more elements",
    );
    check(
        "broadcast_to -1",
        ops::broadcast_to(&four, &[-1]),
        "non-negative",
    );
    // What stays fine: one inferred axis, empty shapes with large other axes.
    assert_eq!(ops::reshape(&four, &[2, -1])?.shape(), &[2, 2]);
    assert_eq!(
        ops::reshape(&empty, &[0, i32::MAX])?.shape(),
        &[0, i32::MAX]
    );
    Ok(())
}

/// A result no machine here could hold: MLX's CPU allocator returns null and MLX writes
/// through it (SIGSEGV). Refused when the op is built; views that allocate nothing are not.
#[test]
fn results_larger_than_the_machine_are_errors() -> Result<()> {
    let huge = [100_000, 1_000_000]; // 400 GB of float32
    check(
        "zeros",
        ops::zeros(&huge, None),
        "more than this machine's memory",
    );
    let view = ops::broadcast_to(1.0f32, &huge)?;
    assert_eq!(view.shape(), &huge);
    check(
        "view + 1",
        ops::add(&view, 1.0),
        "more than this machine's memory",
    );
    // int32, not float64: the GPU has no float64, and would refuse for that reason first.
    check(
        "astype",
        view.astype(Dtype::Int32),
        "more than this machine's memory",
    );
    // Reducing the view needs no buffer of its size.
    assert_eq!(
        ops::broadcast_to(1.0f32, &[1000, 1000])?
            .sum(None, false)?
            .item::<f32>()?,
        1e6
    );
    Ok(())
}

/// A strided view must stay inside its array: outside, MLX reads whatever memory is there
/// (or dies).
#[test]
fn strided_views_outside_the_array_are_errors() -> Result<()> {
    use ops::AsStridedOptions;
    let a = ops::arange_to(4)?;
    let view = |shape: &'static [i32], strides: &'static [i64], offset: usize| {
        ops::as_strided(
            &a,
            AsStridedOptions::default()
                .shape(shape)
                .strides(strides)
                .offset(offset),
        )
    };
    check(
        "far stride",
        view(&[1000], &[1_000_000], 0),
        "outside the array's 4",
    );
    check(
        "one past the end",
        view(&[2, 2], &[2, 1], 1),
        "elements 1..=4",
    );
    check("negative reach", view(&[2], &[-1], 0), "elements -1..=0");
    check("offset past the end", view(&[1], &[1], 4), "outside");
    check(
        "stride count",
        view(&[2, 2], &[1], 0),
        "1 strides for a shape of 2",
    );
    check("negative dimension", view(&[-2], &[1], 0), "non-negative");
    // Inside: overlapping windows, a reversed view, an empty one.
    assert_eq!(
        view(&[3, 2], &[1, 1], 0)?.to_vec::<i32>()?,
        [0, 1, 1, 2, 2, 3]
    );
    assert_eq!(view(&[4], &[-1], 3)?.to_vec::<i32>()?, [3, 2, 1, 0]);
    assert_eq!(view(&[0, 5], &[100, 100], 0)?.size(), 0);
    Ok(())
}
