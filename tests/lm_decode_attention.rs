//! The one-kernel decode attention of `mlx_lm::kernels::decode_attention` (CUDA only) against
//! attention computed on the host in f64 over exactly the written slots. The slots it must not
//! read hold NaN, so reading one shows up as a NaN in the output. And a cache that writes in
//! place against one that updates functionally.

use mlx_lm::kernels::decode_attention::{decode_attention, is_supported};
use mlx_lm::{Cache, LayerCache};
use mlx_rs::{ops, random, with_device, Array, Device, Dtype, Result};
use mlx_tree::{async_eval, compile_mut, eval};

struct Case {
    batch: i32,
    q_heads: i32,
    kv_heads: i32,
    capacity: i32,
    dim: i32,
    dtype: Dtype,
    end: i32,
    left_padding: Option<Vec<i32>>,
    window: Option<i32>,
}

/// Host values of `a` as f32.
fn host(a: &Array) -> Result<Vec<f32>> {
    ops::astype(a, Dtype::Float32)?.to_vec::<f32>()
}

/// The written slots of each sequence: `[max(padding, end - window), end)`.
fn slots(case: &Case, b: usize) -> (i32, i32) {
    let pad = case.left_padding.as_ref().map_or(0, |p| p[b]);
    let first = match case.window {
        Some(w) => pad.max(case.end - w),
        None => pad,
    };
    (first, case.end.min(case.capacity))
}

fn check(case: &Case, seed: u64) -> Result<()> {
    let (b, hq, hkv, cap, d) = (
        case.batch,
        case.q_heads,
        case.kv_heads,
        case.capacity,
        case.dim,
    );
    let key = random::key(seed)?;
    let keys3 = random::split(&key, 3)?;
    let sample = |i: i32, shape: &[i32]| -> Result<Array> {
        let k = keys3.index(i)?;
        ops::astype(&random::normal(shape, Default::default(), &k)?, case.dtype)
    };
    let q = sample(0, &[b, hq, 1, d])?;
    let (k_clean, v_clean) = (sample(1, &[b, hkv, cap, d])?, sample(2, &[b, hkv, cap, d])?);
    // NaN in every slot outside each sequence's range.
    let (mut kh, mut vh) = (host(&k_clean)?, host(&v_clean)?);
    for bi in 0..b as usize {
        let (first, stop) = slots(case, bi);
        for h in 0..hkv as usize {
            for s in 0..cap as usize {
                if (s as i32) < first || (s as i32) >= stop {
                    let at = ((bi * hkv as usize + h) * cap as usize + s) * d as usize;
                    kh[at..at + d as usize].fill(f32::NAN);
                    vh[at..at + d as usize].fill(f32::NAN);
                }
            }
        }
    }
    let shape = [b, hkv, cap, d];
    let k = ops::astype(&Array::from_slice(&kh, &shape)?, case.dtype)?;
    let v = ops::astype(&Array::from_slice(&vh, &shape)?, case.dtype)?;
    let scale = 1.0 / (d as f32).sqrt();
    let end = Array::from_scalar(case.end);
    let padding = case
        .left_padding
        .as_ref()
        .map(|p| Array::from_slice(p, &[b]))
        .transpose()?;
    assert!(is_supported(&q, scale, &k, &v, &end, padding.as_ref())?);
    let out = host(&decode_attention(
        &q,
        &k,
        &v,
        scale,
        &end,
        padding.as_ref(),
        case.window,
    )?)?;

    let qh = host(&q)?;
    // bfloat16 / float16 outputs are the f32 result rounded once: half an ulp of the output
    // (2^-9, 2^-12 relative), with room for the f32 sums' order (a few f32 ulps of the
    // largest term) folded into a small absolute part. float32: sums in another order only.
    let (rel, abs) = match case.dtype {
        Dtype::Bfloat16 => (2f64.powi(-8), 1e-5),
        Dtype::Float16 => (2f64.powi(-11), 1e-5),
        _ => (1e-5, 1e-6),
    };
    for bi in 0..b as usize {
        let (first, stop) = slots(case, bi);
        for h in 0..hq as usize {
            let kvh = h / (hq / hkv) as usize;
            let qv = &qh[(bi * hq as usize + h) * d as usize..][..d as usize];
            let scores: Vec<f64> = (first..stop)
                .map(|s| {
                    let at = ((bi * hkv as usize + kvh) * cap as usize + s as usize) * d as usize;
                    let dot: f64 = qv
                        .iter()
                        .zip(&kh[at..at + d as usize])
                        .map(|(a, b)| *a as f64 * *b as f64)
                        .sum();
                    dot * scale as f64
                })
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            for j in 0..d as usize {
                let expected: f64 = (first..stop)
                    .zip(&weights)
                    .map(|(s, w)| {
                        let at =
                            ((bi * hkv as usize + kvh) * cap as usize + s as usize) * d as usize;
                        w * vh[at + j] as f64
                    })
                    .sum::<f64>()
                    / total;
                let expected = if total > 0.0 { expected } else { 0.0 };
                let got = out[(bi * hq as usize + h) * d as usize + j] as f64;
                assert!(
                    (got - expected).abs() <= rel * expected.abs() + abs,
                    "batch {bi} head {h} feature {j}: {got} vs {expected} (dtype {:?}, dim {d}, \
                     end {}, slots {first}..{stop})",
                    case.dtype,
                    case.end
                );
            }
        }
    }
    Ok(())
}

fn on_cuda() -> Result<bool> {
    let q = ops::zeros(&[1, 1, 1, 32], Dtype::Float32)?;
    let kv = ops::zeros(&[1, 1, 4, 32], Dtype::Float32)?;
    is_supported(&q, 1.0, &kv, &kv, &Array::from_scalar(1i32), None)
}

#[test]
fn matches_attention_over_the_written_slots() -> Result<()> {
    if !on_cuda()? {
        println!("SKIPPED matches_attention_over_the_written_slots: needs MLX on a CUDA GPU");
        return Ok(());
    }
    let base = || Case {
        batch: 1,
        q_heads: 16,
        kv_heads: 8,
        capacity: 640,
        dim: 128,
        dtype: Dtype::Bfloat16,
        end: 513,
        left_padding: None,
        window: None,
    };
    let cases = [
        base(),
        // One written slot; fewer keys than warps.
        Case {
            end: 1,
            capacity: 16,
            ..base()
        },
        Case {
            end: 40,
            dtype: Dtype::Float32,
            ..base()
        },
        Case {
            end: 300,
            dtype: Dtype::Float16,
            dim: 64,
            q_heads: 8,
            kv_heads: 8,
            ..base()
        },
        // Qwen3.5's full-attention layers: 8 query heads of 256 over 2 key heads.
        Case {
            dim: 256,
            q_heads: 8,
            kv_heads: 2,
            end: 700,
            capacity: 768,
            ..base()
        },
        Case {
            dim: 96,
            q_heads: 6,
            kv_heads: 2,
            ..base()
        },
        // A batch with left padding, and a sliding window.
        Case {
            batch: 3,
            left_padding: Some(vec![0, 5, 200]),
            end: 260,
            capacity: 300,
            ..base()
        },
        Case {
            window: Some(64),
            end: 500,
            ..base()
        },
        Case {
            batch: 2,
            window: Some(100),
            left_padding: Some(vec![450, 3]),
            end: 520,
            ..base()
        },
        // The whole buffer written.
        Case { end: 640, ..base() },
    ];
    for (i, case) in cases.iter().enumerate() {
        check(case, 17 + i as u64)?;
    }
    Ok(())
}

#[test]
fn unsupported_arguments_are_a_clear_error() -> Result<()> {
    let q = ops::zeros(&[1, 4, 1, 64], Dtype::Float32)?;
    let kv = ops::zeros(&[1, 2, 8, 64], Dtype::Float32)?;
    let end = Array::from_scalar(3i32);
    // The CPU never takes it; nor a head dimension off the 32 grid, two query positions, or
    // float positions, on any device.
    let cpu = with_device(&Device::cpu(), || {
        decode_attention(&q, &kv, &kv, 0.5, &end, None, None)
    })?;
    assert!(cpu.unwrap_err().to_string().contains("CUDA"));
    let odd = ops::zeros(&[1, 2, 8, 48], Dtype::Float32)?;
    let q48 = ops::zeros(&[1, 4, 1, 48], Dtype::Float32)?;
    let two = ops::zeros(&[1, 4, 2, 64], Dtype::Float32)?;
    let float_end = Array::from_scalar(3.0f32);
    for (q, kv, end, scale) in [
        (&q48, &odd, &end, 0.5),
        (&two, &kv, &end, 0.5),
        (&q, &kv, &float_end, 0.5),
        (&q, &kv, &end, -0.5),
    ] {
        assert!(!is_supported(q, scale, kv, kv, end, None)?);
        assert!(decode_attention(q, kv, kv, scale, end, None, None).is_err());
    }
    Ok(())
}

/// Greedy decode of `steps` tokens after `prompt`, pipelined as generation runs it (compiled,
/// or eager), with the key/value layers writing in place or not: the tokens, the last logits
/// and the cache, plus a clone of the cache taken halfway.
#[allow(clippy::type_complexity)]
fn decode(
    model: &mlx_lm::Model,
    prompt: &[u32],
    steps: usize,
    in_place: bool,
    compiled: bool,
) -> Result<(Vec<u32>, Array, Cache, Cache)> {
    let n = prompt.len();
    let mut cache = model.make_cache(1, 256)?;
    model.forward(
        &Array::from_slice(&prompt[..n - 1], &[1, n as i32 - 1])?,
        Some(&mut cache),
    )?;
    eval(&cache)?;
    for layer in cache.iter_mut() {
        if let LayerCache::Kv(kv) = layer {
            kv.set_writes_in_place(in_place)?;
        }
    }
    let greedy = |cache: &mut Cache, token: &Array| -> Result<(Array, Array)> {
        let logits = model.forward(&ops::expand_dims(token, 0)?, Some(cache))?;
        let logits = logits.index((.., -1, ..))?;
        Ok((ops::argmax(&logits, -1, false)?, logits))
    };
    let step = compile_mut(greedy, None);
    let call = |cache: &mut Cache, token: &Array| {
        if compiled {
            step.call(cache, token)
        } else {
            greedy(cache, token)
        }
    };
    let mut pending = call(&mut cache, &Array::from_slice(&prompt[n - 1..], &[1])?)?;
    async_eval(&pending)?;
    let (mut tokens, mut snapshot) = (Vec::new(), None);
    for i in 0..steps {
        let next = call(&mut cache, &pending.0)?;
        async_eval(&next)?;
        tokens.push(pending.0.item::<u32>()?);
        if i == steps / 2 {
            snapshot = Some(cache.clone());
        }
        pending = next;
    }
    eval(&pending)?;
    assert_eq!(step.stats().traces, u64::from(compiled));
    Ok((tokens, pending.1, cache, snapshot.unwrap_or_default()))
}

/// The test models whose head size (32) the fused attention takes, so that on a CUDA GPU the
/// in-place write and the one-kernel attention run; qwen3_5 mixes linear-attention layers in.
fn fused_models() -> std::result::Result<Vec<(&'static str, mlx_lm::Model)>, mlx_lm::Error> {
    ["llama3", "qwen3_5"]
        .into_iter()
        .map(|name| {
            let dir = golden_models::model_dir(name);
            Ok((name, mlx_lm::load(&dir, Default::default())?.0))
        })
        .collect()
}

fn test_prompt(model: &mlx_lm::Model) -> Vec<u32> {
    let vocab = model.vocab_size() as u32;
    (1..40).map(|i| (i * 37) % vocab).collect()
}

#[test]
fn compiled_decode_equals_eager_decode() -> std::result::Result<(), Box<dyn std::error::Error>> {
    for (name, model) in fused_models()? {
        let prompt = test_prompt(&model);
        let (tokens, logits, _, _) = decode(&model, &prompt, 24, true, true)?;
        let (tokens_e, logits_e, _, _) = decode(&model, &prompt, 24, true, false)?;
        assert_eq!(tokens, tokens_e, "{name}");
        // The compiled step runs chains of element-wise ops as one kernel, which rounds
        // differently in the last float32 bits than one kernel per op.
        let worst = ops::max(&ops::abs(&ops::subtract(&logits, &logits_e)?)?, None, false)?
            .item::<f32>()?;
        assert!(
            worst <= 1e-5,
            "{name}: compiled logits off eager by {worst}"
        );
    }
    Ok(())
}

#[test]
fn writing_the_cache_in_place_equals_updating_it(
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    for (name, model) in fused_models()? {
        compare_in_place(&model, name)?;
    }
    Ok(())
}

fn compare_in_place(
    model: &mlx_lm::Model,
    name: &str,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let prompt = test_prompt(model);
    let (tokens, logits, cache, snapshot) = decode(model, &prompt, 24, true, true)?;
    let (tokens_f, logits_f, cache_f, snapshot_f) = decode(model, &prompt, 24, false, true)?;
    // Both write the same slots with the same values and attend with the same kernels.
    assert_eq!(tokens, tokens_f, "{name}");
    assert!(
        ops::array_equal(&logits, &logits_f, false)?.item::<bool>()?,
        "{name}"
    );
    for (layers, layers_f) in [(&cache, &cache_f), (&snapshot, &snapshot_f)] {
        for (a, b) in layers.iter().zip(layers_f.iter()) {
            let (LayerCache::Kv(a), LayerCache::Kv(b)) = (a, b) else {
                continue;
            };
            let end = a.offset.item::<i32>()?;
            assert_eq!(end, b.offset.item::<i32>()?);
            // The written slots: a snapshot's stay as they were, whatever the generation
            // writes after it (it is a clone, and clones never write in place).
            let written = |x: &Array| x.index((.., .., ..end, ..));
            assert!(
                ops::array_equal(&written(&a.keys)?, &written(&b.keys)?, false)?.item::<bool>()?
            );
            assert!(
                ops::array_equal(&written(&a.values)?, &written(&b.values)?, false)?
                    .item::<bool>()?
            );
        }
    }
    for layer in &snapshot {
        if let LayerCache::Kv(kv) = layer {
            assert!(!kv.writes_in_place());
        }
    }
    Ok(())
}
