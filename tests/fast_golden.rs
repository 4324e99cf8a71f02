//! mlx_rs::fast against Python MLX 0.32.2 (`scripts/golden/fast.py` -> `tests/data/fast.json`).

mod support;

use mlx::core::fast::{self, AttentionMask};
use mlx::core::{Array, Dtype, Result};
use serde_json::Value;
use support::golden::{array, assert_close_tol, default_tolerance, dtype_named, load};

fn close(actual: Result<Array>, expected: &Value, what: &str) {
    let actual = actual.unwrap_or_else(|e| panic!("{what}: {e}"));
    // Same kernels on both sides; reductions allow a little float slack (float32: 1e-5).
    let (rtol, atol) = match dtype_named(expected["dtype"].as_str().unwrap()) {
        Dtype::Float32 => (1e-5, 1e-5),
        d => default_tolerance(d),
    };
    assert_close_tol(&actual, expected, rtol, atol, what);
}

#[test]
fn norms_and_rope_match_python() {
    let g = load("fast");
    let i = &g["inputs"];
    let [x, w, bias, rx, freqs] = ["x", "w", "bias", "rx", "freqs"].map(|k| array(&i[k]));
    close(
        fast::layer_norm(&x, Some(&w), Some(&bias), 1e-5),
        &g["layer_norm"],
        "layer_norm",
    );
    close(
        fast::layer_norm(&x, None, None, 1e-5),
        &g["layer_norm_no_affine"],
        "ln plain",
    );
    close(
        fast::layer_norm(&x, Some(&w), None, 1e-3),
        &g["layer_norm_weight_only"],
        "ln w",
    );
    close(
        fast::rms_norm(&x, Some(&w), 1e-5),
        &g["rms_norm"],
        "rms_norm",
    );
    close(
        fast::rms_norm(&x, None, 1e-6),
        &g["rms_norm_no_weight"],
        "rms plain",
    );
    for (name, dt) in [("float16", Dtype::Float16), ("bfloat16", Dtype::Bfloat16)] {
        let (xd, wd, bd, rd) = (
            x.astype(dt).unwrap(),
            w.astype(dt).unwrap(),
            bias.astype(dt).unwrap(),
            rx.astype(dt).unwrap(),
        );
        close(
            fast::layer_norm(&xd, Some(&wd), Some(&bd), 1e-5),
            &g[format!("layer_norm_{name}")],
            name,
        );
        close(
            fast::rms_norm(&xd, Some(&wd), 1e-5),
            &g[format!("rms_norm_{name}")],
            name,
        );
        close(
            fast::rope(&rd, 8, false, Some(10000.0), 1.0, 0, None),
            &g[format!("rope_{name}")],
            name,
        );
    }
    close(
        fast::rope(&rx, 8, false, Some(10000.0), 1.0, 0, None),
        &g["rope"],
        "rope",
    );
    close(
        fast::rope(&rx, 8, true, Some(10000.0), 1.0, 3, None),
        &g["rope_traditional"],
        "rope trad",
    );
    close(
        fast::rope(&rx, 4, false, Some(500.0), 0.5, 2, None),
        &g["rope_partial_scale"],
        "rope partial",
    );
    let off = Array::from_scalar(5i32);
    close(
        fast::rope(&rx, 8, false, Some(10000.0), 1.0, &off, None),
        &g["rope_array_offset"],
        "rope dyn",
    );
    close(
        fast::rope(&rx, 4, false, None, 1.0, 1, Some(&freqs)),
        &g["rope_freqs"],
        "rope freqs",
    );
}

#[test]
fn attention_and_cross_entropy_match_python() {
    let g = load("fast");
    let i = &g["inputs"];
    let [q, k, v, kg, vg, bool_mask, add_mask, sinks, logits, targets] = [
        "q",
        "k",
        "v",
        "kg",
        "vg",
        "bool_mask",
        "add_mask",
        "sinks",
        "logits",
        "targets",
    ]
    .map(|n| array(&i[n]));
    let s = 0.25f32;
    close(
        fast::scaled_dot_product_attention(&q, &k, &v, s, AttentionMask::None, None),
        &g["sdpa"],
        "sdpa",
    );
    close(
        fast::scaled_dot_product_attention(&q, &k, &v, s, AttentionMask::Causal, None),
        &g["sdpa_causal"],
        "causal",
    );
    close(
        fast::scaled_dot_product_attention(&q, &k, &v, s, &bool_mask, None),
        &g["sdpa_bool_mask"],
        "bool mask",
    );
    close(
        fast::scaled_dot_product_attention(&q, &k, &v, s, &add_mask, None),
        &g["sdpa_add_mask"],
        "additive mask",
    );
    close(
        fast::scaled_dot_product_attention(&q, &k, &v, s, None, Some(&sinks)),
        &g["sdpa_sinks"],
        "sinks",
    );
    close(
        fast::scaled_dot_product_attention(&q, &kg, &vg, 0.3, AttentionMask::Causal, None),
        &g["sdpa_gqa_causal"],
        "gqa",
    );
    let [qh, kh, vh] = [&q, &k, &v].map(|a| a.astype(Dtype::Float16).unwrap());
    close(
        fast::scaled_dot_product_attention(&qh, &kh, &vh, s, None, None),
        &g["sdpa_f16"],
        "sdpa f16",
    );
    close(
        fast::cross_entropy(&logits, &targets),
        &g["cross_entropy"],
        "cross_entropy",
    );
}

#[test]
fn bad_fast_calls_are_errors() {
    let x = mlx::core::ops::ones(&[2, 4], None).unwrap();
    let w = mlx::core::ops::ones(&[3], None).unwrap();
    assert!(fast::rms_norm(&x, Some(&w), 1e-5).is_err());
    assert!(fast::layer_norm(&x, Some(&w), None, 1e-5).is_err());
    // Python requires exactly one of base and freqs.
    let err = fast::rope(&x, 4, false, None, 1.0, 0, None).unwrap_err();
    assert!(err.to_string().contains("rope"), "{err}");
    let q = mlx::core::ops::ones(&[1, 2, 3, 8], None).unwrap();
    let k = mlx::core::ops::ones(&[1, 2, 3, 4], None).unwrap();
    assert!(fast::scaled_dot_product_attention(&q, &k, &k, 1.0, None, None).is_err());
}
