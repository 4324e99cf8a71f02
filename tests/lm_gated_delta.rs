//! The one-kernel gated delta rule of `mlx_lm::kernels::gated_delta` (CUDA only) against the
//! recurrence computed on the host in f64.

use mlx_lm::kernels::gated_delta::{gated_delta_kernel, is_supported};
use mlx_rs::{ops, random, Array, Dtype, Result};

struct Case {
    batch: i32,
    steps: i32,
    k_heads: i32,
    v_heads: i32,
    dk: i32,
    dv: i32,
    dtype: Dtype,
    /// Per sequence, how many leading steps are real (the rest masked), or no mask.
    lengths: Option<Vec<i32>>,
}

fn host(a: &Array) -> Result<Vec<f64>> {
    Ok(ops::astype(a, Dtype::Float32)?
        .to_vec::<f32>()?
        .into_iter()
        .map(f64::from)
        .collect())
}

fn check(case: &Case, seed: u64) -> Result<()> {
    let (b, s, hk, hv, dk, dv) = (
        case.batch,
        case.steps,
        case.k_heads,
        case.v_heads,
        case.dk,
        case.dv,
    );
    let keys = random::split(&random::key(seed)?, 6)?;
    let normal = |i: i32, shape: &[i32], scale: f32| -> Result<Array> {
        let x = random::normal(shape, Default::default(), &keys.index(i)?)?;
        ops::multiply(&x, scale)
    };
    // Unit-norm-sized q and k (as normalize_qk makes them), decays in (0, 1), gates in (0, 1).
    let q = ops::astype(
        &normal(0, &[b, s, hk, dk], (dk as f32).powf(-0.5))?,
        case.dtype,
    )?;
    let k = ops::astype(
        &normal(1, &[b, s, hk, dk], (dk as f32).powf(-0.5))?,
        case.dtype,
    )?;
    let v = ops::astype(&normal(2, &[b, s, hv, dv], 1.0)?, case.dtype)?;
    let g = ops::exp(&ops::negative(&ops::abs(&normal(3, &[b, s, hv], 0.3)?)?)?)?;
    let beta = ops::astype(&ops::sigmoid(&normal(4, &[b, s, hv], 1.0)?)?, case.dtype)?;
    let state = normal(5, &[b, hv, dv, dk], 0.5)?;
    let mask = case
        .lengths
        .as_ref()
        .map(|lengths| -> Result<Array> {
            let steps = ops::arange(0, s, 1, Dtype::Int32)?;
            let lengths = ops::expand_dims(&Array::from_slice(lengths, &[b])?, 1)?;
            ops::less(&steps, &lengths)
        })
        .transpose()?;
    assert!(is_supported(&q, &k, &v, &g, &beta, &state, mask.as_ref())?);
    let (out, new_state) = gated_delta_kernel(&q, &k, &v, &g, &beta, &state, mask.as_ref())?;
    assert_eq!(out.shape(), v.shape());
    assert_eq!(out.dtype(), case.dtype);
    assert_eq!(new_state.shape(), state.shape());
    let (out, new_state) = (host(&out)?, host(&new_state)?);

    let (qh, kh, vh, gh, bh) = (host(&q)?, host(&k)?, host(&v)?, host(&g)?, host(&beta)?);
    let mut st = host(&state)?;
    let (b, s, hk, hv, dk, dv) = (
        b as usize,
        s as usize,
        hk as usize,
        hv as usize,
        dk as usize,
        dv as usize,
    );
    // Outputs are the f32 result rounded once to the dtype: half an ulp (2^-9 bfloat16, 2^-12
    // float16), with room for f32 sums over Dk in another order (a few f32 ulps of the terms)
    // in a small absolute part. float32, and the float32 state: the sums' order only, grown
    // over the steps.
    let (rel, abs) = match case.dtype {
        Dtype::Bfloat16 => (2f64.powi(-8), 1e-4),
        Dtype::Float16 => (2f64.powi(-11), 1e-4),
        _ => (1e-5, 1e-5),
    };
    for bi in 0..b {
        for t in 0..s {
            let keep = case.lengths.as_ref().map_or(true, |l| (t as i32) < l[bi]);
            for h in 0..hv {
                let kh_i = h / (hv / hk);
                let head = (bi * s + t) * hv + h;
                let qk_at = ((bi * s + t) * hk + kh_i) * dk;
                let (kt, qt) = (&kh[qk_at..qk_at + dk], &qh[qk_at..qk_at + dk]);
                for r in 0..dv {
                    let row = &mut st[((bi * hv + h) * dv + r) * dk..][..dk];
                    let decayed: Vec<f64> = row.iter().map(|x| x * gh[head]).collect();
                    let mem: f64 = decayed.iter().zip(kt).map(|(a, b)| a * b).sum();
                    let delta = (vh[head * dv + r] - mem) * bh[head];
                    let next: Vec<f64> =
                        decayed.iter().zip(kt).map(|(a, b)| a + b * delta).collect();
                    let y: f64 = next.iter().zip(qt).map(|(a, b)| a * b).sum();
                    let got = out[head * dv + r];
                    assert!(
                        (got - y).abs() <= rel * y.abs() + abs,
                        "batch {bi} step {t} head {h} row {r}: {got} vs {y} ({:?})",
                        case.dtype
                    );
                    if keep {
                        row.copy_from_slice(&next);
                    }
                }
            }
        }
    }
    for (i, (got, want)) in new_state.iter().zip(&st).enumerate() {
        assert!(
            (got - want).abs() <= 1e-5 * want.abs() + 1e-5,
            "state entry {i}: {got} vs {want} ({:?})",
            case.dtype
        );
    }
    Ok(())
}

fn on_cuda() -> Result<bool> {
    let x = ops::zeros(&[1, 1, 1, 32], Dtype::Float32)?;
    let h = ops::zeros(&[1, 1, 1], Dtype::Float32)?;
    is_supported(
        &x,
        &x,
        &x,
        &h,
        &h,
        &ops::zeros(&[1, 1, 32, 32], Dtype::Float32)?,
        None,
    )
}

#[test]
fn matches_the_recurrence_computed_on_the_host() -> Result<()> {
    if !on_cuda()? {
        println!("SKIPPED matches_the_recurrence_computed_on_the_host: needs MLX on a CUDA GPU");
        return Ok(());
    }
    let base = || Case {
        batch: 1,
        steps: 1,
        k_heads: 16,
        v_heads: 16,
        dk: 128,
        dv: 128,
        dtype: Dtype::Bfloat16,
        lengths: None,
    };
    let cases = [
        // Qwen3.5-0.8B's decode step.
        base(),
        // A prompt, several value heads per key head.
        Case {
            steps: 37,
            k_heads: 2,
            v_heads: 6,
            dk: 64,
            dv: 32,
            dtype: Dtype::Float32,
            ..base()
        },
        Case {
            steps: 5,
            k_heads: 1,
            v_heads: 2,
            dk: 256,
            dv: 48,
            dtype: Dtype::Float16,
            ..base()
        },
        // A right-padded batch: masked steps leave the state as it was.
        Case {
            batch: 3,
            steps: 9,
            k_heads: 2,
            v_heads: 4,
            dk: 32,
            dv: 16,
            dtype: Dtype::Float32,
            lengths: Some(vec![9, 4, 0]),
        },
    ];
    for (i, case) in cases.iter().enumerate() {
        check(case, 100 + i as u64)?;
    }
    Ok(())
}

#[test]
fn arguments_it_does_not_take_are_errors() -> Result<()> {
    let x = ops::zeros(&[1, 1, 2, 32], Dtype::Float32)?;
    let h = ops::zeros(&[1, 1, 2], Dtype::Float32)?;
    let state = ops::zeros(&[1, 2, 32, 32], Dtype::Float32)?;
    // A head dimension that is no multiple of 32; a state in bfloat16; value heads that are no
    // multiple of key heads: not supported anywhere.
    let odd = ops::zeros(&[1, 1, 2, 48], Dtype::Float32)?;
    let bf16_state = state.astype(Dtype::Bfloat16)?;
    let three = ops::zeros(&[1, 1, 3, 32], Dtype::Float32)?;
    let three_h = ops::zeros(&[1, 1, 3], Dtype::Float32)?;
    let three_state = ops::zeros(&[1, 3, 32, 32], Dtype::Float32)?;
    for (q, v, g, st) in [
        (&odd, &x, &h, &ops::zeros(&[1, 2, 32, 48], Dtype::Float32)?),
        (&x, &x, &h, &bf16_state),
        (&x, &three, &three_h, &three_state),
    ] {
        assert!(!is_supported(q, q, v, g, g, st, None)?);
        let e = gated_delta_kernel(q, q, v, g, g, st, None).unwrap_err();
        assert!(e.to_string().contains("unsupported arguments"), "{e}");
    }
    Ok(())
}
