//! Every op family against Python MLX 0.32.2: `scripts/golden/ops.py` records each call's
//! inputs, parameters and outputs in `tests/data/ops.json`; here each `op` name maps to the
//! Rust call a port would write, and every output is compared with the dtype's tolerance.

mod support;

use mlx::core::ops::{self, Axes, Axis, Index, Scalar, Slice};
use mlx::core::{Array, Dtype, Result};
use serde_json::Value;
use support::golden::{array, assert_close, assert_close_tol, dtype_named, load};

fn opt_i32(p: &Value, k: &str) -> Option<i32> {
    p.get(k).and_then(Value::as_i64).map(|v| v as i32)
}
fn opt_f64(p: &Value, k: &str) -> Option<f64> {
    p.get(k).and_then(Value::as_f64)
}
fn opt_f32(p: &Value, k: &str) -> Option<f32> {
    opt_f64(p, k).map(|v| v as f32)
}
fn flag(p: &Value, k: &str, default: bool) -> bool {
    opt_flag(p, k).unwrap_or(default)
}
/// A recorded keyword flag; `None` where Python used its default.
fn opt_flag(p: &Value, k: &str) -> Option<bool> {
    p.get(k).and_then(Value::as_bool)
}
fn opt_dtype(p: &Value, k: &str) -> Option<Dtype> {
    p.get(k).and_then(Value::as_str).map(dtype_named)
}
fn ints(v: &Value) -> Vec<i32> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|x| x.as_i64().unwrap() as i32)
        .collect()
}
fn opt_ints(p: &Value, k: &str) -> Option<Vec<i32>> {
    p.get(k).filter(|v| !v.is_null()).map(ints)
}
/// `axis`: missing/null = all, an int, or a list.
fn axes(p: &Value) -> Axes<'static> {
    match p.get("axis") {
        None | Some(Value::Null) => Axes::All,
        Some(Value::Array(_)) => Axes::from(ints(&p["axis"])),
        Some(v) => Axes::from(v.as_i64().unwrap() as i32),
    }
}
/// Python's `axis=None | int` where None means "flatten" and missing means the default.
fn sort_axis(p: &Value) -> Axis {
    match p.get("axis") {
        Some(Value::String(s)) if s == "default" => Axis::Default,
        None => Axis::Default,
        Some(Value::Null) => Axis::Flatten,
        Some(v) => Axis::Index(v.as_i64().unwrap() as i32),
    }
}
fn scalar(v: &Value) -> Scalar {
    match v {
        Value::Bool(b) => Scalar::from(*b),
        Value::Number(n) if n.is_i64() => Scalar::Int(n.as_i64().unwrap()),
        Value::Number(n) => Scalar::Float(n.as_f64().unwrap()),
        other => panic!("not a scalar: {other}"),
    }
}
fn index(p: &Value) -> Vec<Index> {
    p["index"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| match e {
            Value::String(s) if s == "none" => Index::NewAxis,
            Value::String(s) if s == "ellipsis" => Index::Ellipsis,
            Value::Object(o) if o.contains_key("int") => Index::Int(o["int"].as_i64().unwrap()),
            Value::Object(o) if o.contains_key("slice") => {
                let part = |i: usize| o["slice"][i].as_i64().map(|v| v as i32);
                Index::Slice(Slice::new(part(0), part(1), part(2)))
            }
            Value::Object(o) if o.contains_key("array") => Index::Array(array(&o["array"])),
            other => panic!("bad index entry {other}"),
        })
        .collect()
}
fn spatial(p: &Value, k: &str, default: i32) -> Vec<i32> {
    match p.get(k) {
        None | Some(Value::Null) => vec![default],
        Some(Value::Array(_)) => ints(&p[k]),
        Some(v) => vec![v.as_i64().unwrap() as i32],
    }
}
/// `group_size`, `bits` and `mode` of a recorded quantization call; `mode` is `None` where
/// Python used its default.
fn quant_kw(p: &Value) -> (Option<i32>, Option<i32>, Option<ops::QuantizationMode>) {
    let mode = p.get("mode").and_then(Value::as_str).map(|m| match m {
        "affine" => ops::QuantizationMode::Affine,
        "mxfp4" => ops::QuantizationMode::Mxfp4,
        "mxfp8" => ops::QuantizationMode::Mxfp8,
        "nvfp4" => ops::QuantizationMode::Nvfp4,
        other => panic!("mode {other}"),
    });
    (opt_i32(p, "group_size"), opt_i32(p, "bits"), mode)
}
fn close_options(p: &Value) -> ops::IscloseOptions {
    let d = ops::IscloseOptions::default();
    ops::IscloseOptions {
        rtol: opt_f64(p, "rtol").unwrap_or(d.rtol),
        atol: opt_f64(p, "atol").unwrap_or(d.atol),
        equal_nan: flag(p, "equal_nan", d.equal_nan),
    }
}

fn one(r: Result<Array>) -> Result<Vec<Array>> {
    r.map(|a| vec![a])
}

/// Calls the Rust op that corresponds to the recorded Python call.
fn run(op: &str, x: &[Array], p: &Value) -> Result<Vec<Array>> {
    macro_rules! unary {
        ($($name:ident)*) => {
            match op {
                $(stringify!($name) => return one(ops::$name(&x[0])),)*
                _ => {}
            }
        };
    }
    unary!(abs arccos arccosh arcsin arcsinh arctan arctanh ceil conjugate cos cosh degrees erf
        erfinv exp expm1 floor imag isfinite isinf isnan isneginf isposinf log log10 log1p log2
        logical_not negative positive radians real reciprocal rsqrt sigmoid sign sin sinh sqrt
        square stop_gradient tan tanh trunc copy bitwise_invert atleast_1d atleast_2d atleast_3d);
    macro_rules! binary {
        ($($name:ident)*) => {
            match op {
                $(stringify!($name) => {
                    return one(match p.get("scalar") {
                        Some(s) if flag(p, "reversed", false) => ops::$name(scalar(s), &x[0]),
                        Some(s) => ops::$name(&x[0], scalar(s)),
                        None => ops::$name(&x[0], &x[1]),
                    })
                })*
                _ => {}
            }
        };
    }
    binary!(add subtract multiply divide remainder power maximum minimum arctan2 logaddexp
        floor_divide equal not_equal greater greater_equal less less_equal logical_and
        logical_or logical_xor bitwise_and bitwise_or bitwise_xor left_shift right_shift matmul
        inner outer kron);
    macro_rules! reductions {
        ($($name:ident)*) => {
            match op {
                $(stringify!($name) => return one(ops::$name(&x[0], axes(p), flag(p, "keepdims", false))),)*
                _ => {}
            }
        };
    }
    reductions!(sum mean max min prod all any logsumexp median count_nonzero);
    let a = x.first();
    let a0 = || a.unwrap();
    let cum = |p: &Value| {
        (
            opt_i32(p, "axis"),
            opt_flag(p, "reverse"),
            opt_flag(p, "inclusive"),
        )
    };
    let cum_options = |p: &Value| {
        let d = ops::CumsumOptions::default();
        ops::CumsumOptions {
            reverse: flag(p, "reverse", d.reverse),
            inclusive: flag(p, "inclusive", d.inclusive),
            dtype: opt_dtype(p, "dtype"),
        }
    };
    let out = match op {
        "var" => ops::var(
            a0(),
            axes(p),
            flag(p, "keepdims", false),
            opt_i32(p, "ddof"),
        ),
        "std" => a0().std(axes(p), flag(p, "keepdims", false), opt_i32(p, "ddof")),
        "argmax" => ops::argmax(a0(), opt_i32(p, "axis"), flag(p, "keepdims", false)),
        "argmin" => a0().argmin(opt_i32(p, "axis"), flag(p, "keepdims", false)),
        "cumsum" => ops::cumsum(a0(), opt_i32(p, "axis"), cum_options(p)),
        "cumprod" => a0().cumprod(opt_i32(p, "axis"), cum_options(p)),
        "cummax" => {
            let (ax, r, i) = cum(p);
            ops::cummax(a0(), ax, r, i)
        }
        "cummin" => {
            let (ax, r, i) = cum(p);
            a0().cummin(ax, r, i)
        }
        "logcumsumexp" => {
            let (ax, r, i) = cum(p);
            ops::logcumsumexp(a0(), ax, r, i)
        }
        "reshape" => a0().reshape(&ints(&p["shape"])),
        "transpose" => ops::transpose(
            a0(),
            opt_ints(p, "axes").map_or(mlx::core::ops::Axes::ALL, Into::into),
        ),
        "squeeze" => a0().squeeze(axes(p)),
        "expand_dims" => ops::expand_dims(a0(), axes(p)),
        "flatten" => a0().flatten(opt_i32(p, "start_axis"), opt_i32(p, "end_axis")),
        "unflatten" => ops::unflatten(a0(), opt_i32(p, "axis").unwrap(), &ints(&p["shape"])),
        "swapaxes" => a0().swapaxes(opt_i32(p, "axis1").unwrap(), opt_i32(p, "axis2").unwrap()),
        "moveaxis" => ops::moveaxis(
            a0(),
            opt_i32(p, "source").unwrap(),
            opt_i32(p, "destination").unwrap(),
        ),
        "broadcast_to" => ops::broadcast_to(a0(), &ints(&p["shape"])),
        "broadcast_arrays" => return ops::broadcast_arrays(x),
        "concatenate" => ops::concatenate(x, opt_i32(p, "axis")),
        "stack" => ops::stack(x, opt_i32(p, "axis")),
        "unstack" => return ops::unstack(a0(), opt_i32(p, "axis")),
        "split" => {
            let ios = &p["indices_or_sections"];
            let axis = opt_i32(p, "axis");
            return if ios.is_array() {
                a0().split(ints(ios), axis)
            } else {
                ops::split(a0(), ios.as_i64().unwrap() as i32, axis)
            };
        }
        "tile" => ops::tile(a0(), &ints(&p["reps"])),
        "repeat" => ops::repeat(a0(), opt_i32(p, "repeats").unwrap(), opt_i32(p, "axis")),
        "pad" => {
            let width: ops::PadWidth = match &p["pad_width"] {
                Value::Number(n) => (n.as_i64().unwrap() as i32).into(),
                Value::Array(v) if v[0].is_array() => v
                    .iter()
                    .map(|pr| {
                        (
                            pr[0].as_i64().unwrap() as i32,
                            pr[1].as_i64().unwrap() as i32,
                        )
                    })
                    .collect::<Vec<_>>()
                    .into(),
                Value::Array(v) => {
                    (v[0].as_i64().unwrap() as i32, v[1].as_i64().unwrap() as i32).into()
                }
                other => panic!("pad_width {other}"),
            };
            let mode = p.get("mode").and_then(Value::as_str).map(|m| match m {
                "constant" => ops::PadMode::Constant,
                "edge" => ops::PadMode::Edge,
                "reflect" => ops::PadMode::Reflect,
                "symmetric" => ops::PadMode::Symmetric,
                other => panic!("pad mode {other}"),
            });
            let value = p.get("constant_values").map_or(Scalar::Int(0), scalar);
            ops::pad(a0(), width, mode, value)
        }
        "roll" => {
            let shift: Axes = match &p["shift"] {
                Value::Array(_) => ints(&p["shift"]).into(),
                v => (v.as_i64().unwrap() as i32).into(),
            };
            ops::roll(a0(), shift, axes(p))
        }
        "flip" => ops::flip(a0(), axes(p)),
        "as_strided" => {
            let strides: Vec<i64> = ints(&p["strides"]).into_iter().map(i64::from).collect();
            let shape = opt_ints(p, "shape");
            ops::as_strided(
                a0(),
                ops::AsStridedOptions {
                    shape: shape.as_deref(),
                    strides: Some(&strides),
                    offset: opt_i32(p, "offset").map_or(0, |o| o as usize),
                },
            )
        }
        "contiguous" => ops::contiguous(a0(), opt_flag(p, "allow_col_major")),
        "view" => a0().view(opt_dtype(p, "dtype").unwrap()),
        "astype" => ops::astype(a0(), opt_dtype(p, "dtype").unwrap()),
        "take" => match opt_i32(p, "index") {
            Some(i) => ops::take(a0(), i, opt_i32(p, "axis")),
            None => ops::take(a0(), &x[1], opt_i32(p, "axis")),
        },
        "take_along_axis" => ops::take_along_axis(a0(), &x[1], opt_i32(p, "axis")),
        "put_along_axis" => ops::put_along_axis(a0(), &x[1], &x[2], opt_i32(p, "axis")),
        "where" => match p.get("y") {
            Some(y) => ops::where_(&x[0], &x[1], scalar(y)),
            None => ops::where_(&x[0], &x[1], &x[2]),
        },
        "searchsorted" => {
            let side = match p["side"].as_str().unwrap() {
                "left" => ops::Side::Left,
                _ => ops::Side::Right,
            };
            ops::searchsorted(a0(), &x[1], side)
        }
        "slice" => ops::slice(a0(), &x[1], &ints(&p["axes"]), &ints(&p["slice_size"])),
        "slice_update" => ops::slice_update(a0(), &x[1], &x[2], &ints(&p["axes"])),
        "sort" => ops::sort(a0(), sort_axis(p)),
        "argsort" => ops::argsort(a0(), sort_axis(p)),
        "partition" => ops::partition(a0(), opt_i32(p, "kth").unwrap(), sort_axis(p)),
        "argpartition" => ops::argpartition(a0(), opt_i32(p, "kth").unwrap(), sort_axis(p)),
        "topk" => ops::topk(a0(), opt_i32(p, "k").unwrap(), sort_axis(p)),
        "zeros" => ops::zeros(&ints(&p["shape"]), opt_dtype(p, "dtype")),
        "ones" => ops::ones(&ints(&p["shape"]), opt_dtype(p, "dtype")),
        "full" => match p.get("vals") {
            Some(v) => ops::full(&ints(&p["shape"]), scalar(v), opt_dtype(p, "dtype")),
            None => ops::full(&ints(&p["shape"]), a0(), opt_dtype(p, "dtype")),
        },
        "arange" => {
            if p["start"].is_i64() {
                ops::arange(
                    opt_i32(p, "start").unwrap(),
                    opt_i32(p, "stop").unwrap(),
                    opt_i32(p, "step"),
                    opt_dtype(p, "dtype"),
                )
            } else {
                ops::arange(
                    opt_f64(p, "start").unwrap(),
                    opt_f64(p, "stop").unwrap(),
                    opt_f64(p, "step"),
                    opt_dtype(p, "dtype"),
                )
            }
        }
        "eye" => ops::eye(opt_i32(p, "n").unwrap(), eye_options(p)),
        "identity" => ops::identity(opt_i32(p, "n").unwrap(), opt_dtype(p, "dtype")),
        "tri" => ops::tri(opt_i32(p, "n").unwrap(), eye_options(p)),
        "tril" => ops::tril(a0(), opt_i32(p, "k")),
        "triu" => ops::triu(a0(), opt_i32(p, "k")),
        "linspace" => ops::linspace(
            opt_f64(p, "start").unwrap(),
            opt_f64(p, "stop").unwrap(),
            ops::LinspaceOptions {
                num: opt_i32(p, "num").unwrap_or(50),
                endpoint: flag(p, "endpoint", true),
                ..Default::default()
            },
        ),
        "zeros_like" => ops::zeros_like(a0(), opt_dtype(p, "dtype")),
        "ones_like" => ops::ones_like(a0(), opt_dtype(p, "dtype")),
        "full_like" => ops::full_like(a0(), scalar(&p["vals"]), opt_dtype(p, "dtype")),
        "bartlett" => ops::bartlett(opt_i32(p, "M").unwrap()),
        "blackman" => ops::blackman(opt_i32(p, "M").unwrap()),
        "hamming" => ops::hamming(opt_i32(p, "M").unwrap()),
        "hanning" => ops::hanning(opt_i32(p, "M").unwrap()),
        "meshgrid" => return ops::meshgrid(x, opt_flag(p, "sparse"), p["indexing"].as_str()),
        "round" => a0().round(opt_i32(p, "decimals")),
        "clip" => match (p.get("a_min"), p.get("a_max")) {
            (Some(Value::Null), Some(hi)) => ops::clip(a0(), None, scalar(hi)),
            (Some(lo), Some(hi)) => ops::clip(a0(), scalar(lo), scalar(hi)),
            _ => ops::clip(a0(), &x[1], &x[2]),
        },
        "nan_to_num" => ops::nan_to_num(
            a0(),
            ops::NanToNumOptions {
                nan: opt_f32(p, "nan").unwrap_or(0.0),
                posinf: opt_f32(p, "posinf"),
                neginf: opt_f32(p, "neginf"),
            },
        ),
        "divmod" => return ops::divmod(&x[0], &x[1]).map(|(q, r)| vec![q, r]),
        "softmax" => ops::softmax(a0(), axes(p), opt_flag(p, "precise")),
        "isclose" => ops::isclose(&x[0], &x[1], close_options(p)),
        "allclose" => ops::allclose(&x[0], &x[1], close_options(p)),
        "array_equal" => ops::array_equal(&x[0], &x[1], opt_flag(p, "equal_nan")),
        "diff" => ops::diff(a0(), opt_i32(p, "n"), opt_i32(p, "axis")),
        "diag" => a0().diag(opt_i32(p, "k")),
        "diagonal" => ops::diagonal(
            a0(),
            opt_i32(p, "offset"),
            opt_i32(p, "axis1"),
            opt_i32(p, "axis2"),
        ),
        "trace" => ops::trace(
            a0(),
            opt_i32(p, "offset"),
            opt_i32(p, "axis1"),
            opt_i32(p, "axis2"),
            opt_dtype(p, "dtype"),
        ),
        "einsum" => ops::einsum(p["subscripts"].as_str().unwrap(), x),
        "tensordot" => {
            let axes: ops::TensordotAxes = match p.get("axes") {
                None => None.into(),
                Some(Value::Array(v)) => (ints(&v[0]), ints(&v[1])).into(),
                Some(v) => (v.as_i64().unwrap() as i32).into(),
            };
            ops::tensordot(&x[0], &x[1], axes)
        }
        "vecdot" => ops::vecdot(&x[0], &x[1], opt_i32(p, "axis")),
        "addmm" => ops::addmm(&x[0], &x[1], &x[2], opt_f32(p, "alpha"), opt_f32(p, "beta")),
        "hadamard_transform" => ops::hadamard_transform(a0(), opt_f32(p, "scale")),
        "block_masked_mm" => {
            let options = ops::BlockMaskedMmOptions {
                block_size: opt_i32(p, "block_size").unwrap_or(64),
                mask_out: x.get(2),
                ..Default::default()
            };
            ops::block_masked_mm(&x[0], &x[1], options)
        }
        "gather_mm" => ops::gather_mm(
            &x[0],
            &x[1],
            ops::GatherMmOptions {
                lhs_indices: x.get(2),
                rhs_indices: x.get(3),
                sorted_indices: flag(p, "sorted_indices", false),
            },
        ),
        "segmented_mm" => ops::segmented_mm(&x[0], &x[1], &x[2]),
        "conv1d" | "conv2d" | "conv3d" => {
            let o = ops::ConvOptions::default()
                .stride(spatial(p, "stride", 1))
                .padding(spatial(p, "padding", 0))
                .dilation(spatial(p, "dilation", 1))
                .groups(opt_i32(p, "groups").unwrap_or(1));
            match op {
                "conv1d" => ops::conv1d(&x[0], &x[1], o),
                "conv2d" => ops::conv2d(&x[0], &x[1], o),
                _ => ops::conv3d(&x[0], &x[1], o),
            }
        }
        "conv_transpose1d" | "conv_transpose2d" | "conv_transpose3d" => {
            let o = ops::ConvTransposeOptions::default()
                .stride(spatial(p, "stride", 1))
                .padding(spatial(p, "padding", 0))
                .dilation(spatial(p, "dilation", 1))
                .output_padding(spatial(p, "output_padding", 0))
                .groups(opt_i32(p, "groups").unwrap_or(1));
            match op {
                "conv_transpose1d" => ops::conv_transpose1d(&x[0], &x[1], o),
                "conv_transpose2d" => ops::conv_transpose2d(&x[0], &x[1], o),
                _ => ops::conv_transpose3d(&x[0], &x[1], o),
            }
        }
        "conv_general" => {
            let o = ops::ConvGeneralOptions::default()
                .stride(spatial(p, "stride", 1))
                .padding_lo_hi(ints(&p["padding"][0]), ints(&p["padding"][1]))
                .kernel_dilation(spatial(p, "kernel_dilation", 1))
                .input_dilation(spatial(p, "input_dilation", 1))
                .groups(opt_i32(p, "groups").unwrap_or(1))
                .flip(flag(p, "flip", false));
            ops::conv_general(&x[0], &x[1], o)
        }
        "quantize" => {
            let (group_size, bits, mode) = quant_kw(p);
            let d = ops::QuantizeOptions::default();
            let o = ops::QuantizeOptions {
                group_size,
                bits,
                mode: mode.unwrap_or(d.mode),
                ..d
            };
            let (wq, s, b) = ops::quantize(a0(), o)?;
            return Ok([Some(wq), Some(s), b].into_iter().flatten().collect());
        }
        "dequantize" => {
            let (group_size, bits, mode) = quant_kw(p);
            let d = ops::DequantizeOptions::default();
            let o = ops::DequantizeOptions {
                biases: x.get(2),
                group_size,
                bits,
                mode: mode.unwrap_or(d.mode),
                dtype: opt_dtype(p, "dtype"),
                ..d
            };
            ops::dequantize(&x[0], &x[1], o)
        }
        "quantized_matmul" => {
            let (group_size, bits, mode) = quant_kw(p);
            let d = ops::QuantizedMatmulOptions::default();
            let o = ops::QuantizedMatmulOptions {
                biases: x.get(3),
                transpose: flag(p, "transpose", d.transpose),
                group_size,
                bits,
                mode: mode.unwrap_or(d.mode),
            };
            ops::quantized_matmul(&x[0], &x[1], &x[2], o)
        }
        "gather_qmm" => {
            let (group_size, bits, mode) = quant_kw(p);
            let d = ops::GatherQmmOptions::default();
            let o = ops::GatherQmmOptions {
                biases: x.get(3),
                lhs_indices: x.get(4),
                rhs_indices: x.get(5),
                transpose: flag(p, "transpose", d.transpose),
                group_size,
                bits,
                mode: mode.unwrap_or(d.mode),
                sorted_indices: flag(p, "sorted_indices", d.sorted_indices),
            };
            ops::gather_qmm(&x[0], &x[1], &x[2], o)
        }
        "to_fp8" => ops::to_fp8(a0()),
        "from_fp8" => ops::from_fp8(a0(), opt_dtype(p, "dtype")),
        "index" => a0().index(index(p)),
        "index_put" => {
            let mut a = a0().clone();
            a.index_set(index(p), &x[1])?;
            Ok(a)
        }
        "at" => {
            let at = a0().at(index(p));
            match p["method"].as_str().unwrap() {
                "add" => at.add(&x[1]),
                "subtract" => at.subtract(&x[1]),
                "multiply" => at.multiply(&x[1]),
                "divide" => at.divide(&x[1]),
                "maximum" => at.maximum(&x[1]),
                "minimum" => at.minimum(&x[1]),
                other => panic!("at method {other}"),
            }
        }
        other => panic!("ops.json has op `{other}` that this test does not map"),
    };
    one(out)
}

/// A case may widen the tolerance (`"tol": [rtol, atol]`): accumulations whose summation
/// order depends on how MLX was compiled (the Python wheel vs. our source build) differ in
/// the last bits.
fn tolerance(c: &Value) -> Option<(f64, f64)> {
    let t = c.get("tol")?;
    Some((t[0].as_f64()?, t[1].as_f64()?))
}

#[test]
fn every_recorded_op_matches_python() {
    let data = load("ops");
    let cases = data["cases"].as_array().unwrap();
    assert!(cases.len() > 500, "expected the full case list");
    let mut families = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let op = c["op"].as_str().unwrap();
        let inputs: Vec<Array> = c["inputs"].as_array().unwrap().iter().map(array).collect();
        // Keep going after a mismatch so one run lists every failing case.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let outs = run(op, &inputs, &c["params"]).unwrap_or_else(|e| panic!("{name}: {e}"));
            let want = c["outputs"].as_array().unwrap();
            assert_eq!(outs.len(), want.len(), "{name}: number of outputs");
            for (i, (got, w)) in outs.iter().zip(want).enumerate() {
                let what = format!("{name}[{i}]");
                match tolerance(c) {
                    Some((rtol, atol)) => assert_close_tol(got, w, rtol, atol, &what),
                    None => assert_close(got, w, &what),
                }
            }
        }));
        if let Err(e) = result {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(msg);
        }
        families.insert(op.to_string());
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from Python:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // The JSON covers every family this test maps; a regenerated file that drops one fails.
    assert!(families.len() > 150, "only {} ops covered", families.len());
}

/// `eye`/`tri` keywords as recorded (absent ones take Python's defaults).
fn eye_options(p: &Value) -> ops::EyeOptions {
    let d = ops::EyeOptions::default();
    ops::EyeOptions {
        m: opt_i32(p, "m"),
        k: opt_i32(p, "k").unwrap_or(d.k),
        dtype: opt_dtype(p, "dtype").unwrap_or(d.dtype),
    }
}
