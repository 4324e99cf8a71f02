//! Batched generation against mlx_lm 0.32.2's `batch_generate` (`scripts/golden/lm_batch.py`):
//! prompts of one length and of different lengths (right-padded prefill rolled into left
//! padding, the linear-attention state kept clear of the padding), chunked prefill, sliding
//! windows, samplers, logit bias, per-sequence limits and stop tokens; one trace per
//! generation; the errors of what a batch does not support. Where mlx_lm's batch lets the
//! padding into a recurrent state (mamba), the reference is each prompt generated alone
//! (the case's `alone`), which the batch must reproduce.

mod support;

use mlx::core::Dtype;
use mlx::lm::{
    batch_generate, batch_generate_step, generate_step, load, load_model, FinishReason,
    GenerateOptions, LoadOptions, LogitsProcessors, Model, SamplerOptions,
};
use serde_json::Value;
use support::golden::{cuda_bound, on_cuda, tf32_bound};
use support::lm::{ids, model_dir};

fn golden() -> Value {
    support::lm::golden("batch.json")
}

fn load_named(name: &str) -> Model {
    load_model(model_dir(name), LoadOptions::default())
        .unwrap()
        .0
}

/// A golden case's options (the sampler and processors mlx_lm was given).
fn options(case: &Value) -> GenerateOptions {
    let max_tokens = match &case["max_tokens"] {
        Value::Array(limits) => limits.iter().map(|m| m.as_u64().unwrap()).max().unwrap(),
        m => m.as_u64().unwrap(),
    } as usize;
    let mut options = GenerateOptions {
        max_tokens,
        seed: Some(case["seed"].as_u64().unwrap_or(0)),
        stop_tokens: ids(&case["eos"]),
        ..Default::default()
    };
    if let Some(temp) = case["temp"].as_f64() {
        options.sampler = SamplerOptions {
            temperature: temp,
            top_p: case["top_p"].as_f64().unwrap_or(0.0),
            top_k: case["top_k"].as_i64().unwrap_or(0) as i32,
            ..Default::default()
        };
    }
    if let Some(bias) = case["logit_bias"].as_object() {
        options.processors = LogitsProcessors {
            logit_bias: bias
                .iter()
                .map(|(k, v)| (k.parse().unwrap(), v.as_f64().unwrap()))
                .collect(),
            ..LogitsProcessors::none()
        };
    }
    if let Some(n) = case["prefill_step_size"].as_u64() {
        options.prefill_step_size = n as usize;
    }
    options
}

#[test]
fn batch_tokens_equal_mlx_lm_batch_generate() {
    // The same ops on the same rows, so the same tokens: wheel-linked bit for bit; the
    // source build's logits differ from the wheel's by ~1e-6, which no case is close enough
    // to a tie for. mlx_lm drops a finished sequence's row where this keeps it; the other
    // rows' values do not depend on it (the qwen3-4bit and mistral cases finish rows early).
    let golden = golden();
    let mut leaked = 0;
    for case in golden["cases"].as_array().unwrap() {
        let name = case["model"].as_str().unwrap();
        let model = load_named(name);
        if on_cuda() && model.dtype() == Dtype::Bfloat16 {
            // The compiled bfloat16 step keeps intermediates in float32 that mlx_lm's ops
            // round (compiled_bfloat16_generation_departs_from_mlx_lm_only_at_near_ties in
            // lm_models.rs); on an H200 this parted from mlx_lm's batch tokens (the
            // mamba2-codestral case); the batch records carry no margins to tell a near tie.
            eprintln!("{name}: bfloat16 batch tokens are compared on the CPU only");
            continue;
        }
        let prompts: Vec<Vec<u32>> = case["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .map(ids)
            .collect();
        let options = options(case);
        let mut generator = batch_generate_step(&model, &prompts, &options).unwrap();
        if let Value::Array(limits) = &case["max_tokens"] {
            let limits: Vec<usize> = limits
                .iter()
                .map(|m| m.as_u64().unwrap() as usize)
                .collect();
            generator.set_max_tokens(&limits).unwrap();
        }
        let mut got = vec![Vec::new(); prompts.len()];
        for step in generator.by_ref() {
            let step = step.unwrap();
            for (i, (t, r)) in step.tokens.iter().zip(&step.finish_reasons).enumerate() {
                if let (Some(t), false) = (t, *r == Some(FinishReason::Stop)) {
                    got[i].push(*t);
                }
            }
        }
        assert_eq!(generator.traces(), 1, "{name}: one trace per generation");
        let want: Vec<Vec<u32>> = case["tokens"].as_array().unwrap().iter().map(ids).collect();
        assert_eq!(got, want, "{name} {:?}", case["lengths"]);
        if let Some(leaky) = case["mlx_lm_batch_tokens"].as_array() {
            let leaky: Vec<Vec<u32>> = leaky.iter().map(ids).collect();
            leaked += want.iter().zip(&leaky).filter(|(a, b)| a != b).count();
        }
    }
    // mlx_lm's own batch, with the padding in the state, gave other tokens for some of the
    // padded sequences: the per-prompt reference is what tells the two apart.
    assert!(leaked > 0, "no case where mlx_lm's padded batch differs");
}

#[test]
fn batch_generate_texts_and_a_batch_of_one_equal_generate_step() {
    let (model, tokenizer, _) = load(model_dir("qwen3"), LoadOptions::default()).unwrap();
    let prompts = [
        tokenizer.encode("The river", false).unwrap(),
        tokenizer.encode("Three words: one, two,", false).unwrap(),
    ];
    let options = GenerateOptions {
        max_tokens: 12,
        ..Default::default()
    };
    let response = batch_generate(&model, &tokenizer, &prompts, &options).unwrap();
    for (i, prompt) in prompts.iter().enumerate() {
        // A batch of one has no padding: the tokens a single generation produces.
        let alone = batch_generate(&model, &tokenizer, &[prompt], &options).unwrap();
        let single: Vec<u32> = generate_step(&model, prompt, &options)
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect();
        assert_eq!(alone.token_ids[0], single);
        assert_eq!(
            response.texts[i],
            tokenizer.decode(&response.token_ids[i], false).unwrap()
        );
        assert_eq!(response.finish_reasons[i], FinishReason::Length);
        assert_eq!(response.token_ids[i].len(), 12);
    }
    assert_eq!(
        response.stats.prompt_tokens,
        prompts.iter().map(Vec::len).sum::<usize>()
    );
    assert!(response.stats.peak_memory > 0);
}

#[test]
fn what_a_batch_does_not_support_is_an_error() {
    let qwen3 = load_named("qwen3");
    let err =
        |model: &Model, prompts: &[Vec<u32>], options: &GenerateOptions| match batch_generate_step(
            model, prompts, options,
        ) {
            Ok(_) => panic!("accepted {prompts:?}"),
            Err(e) => e.to_string(),
        };
    let plain = GenerateOptions::default();
    assert!(err(&qwen3, &[], &plain).contains("no prompts"));
    assert!(err(&qwen3, &[vec![5], vec![]], &plain).contains("prompt 1: the prompt is empty"));
    assert!(err(&qwen3, &[vec![5, 100_000]], &plain).contains("outside the vocabulary"));
    let penalty = GenerateOptions {
        processors: LogitsProcessors {
            repetition_penalty: Some(1.3),
            ..LogitsProcessors::none()
        },
        ..Default::default()
    };
    assert!(err(&qwen3, &[vec![5, 6]], &penalty).contains("repetition penalty"));
    let stops = GenerateOptions {
        stop_strings: vec!["x".into()],
        ..Default::default()
    };
    assert!(err(&qwen3, &[vec![5, 6]], &stops).contains("stop strings"));

    let options = GenerateOptions {
        max_tokens: 4,
        ..Default::default()
    };
    let mut g = batch_generate_step(&qwen3, &[vec![5, 6], vec![7]], &options).unwrap();
    assert!(g.set_max_tokens(&[1]).is_err());
    assert!(g.set_max_tokens(&[2, 5]).is_err());
    g.set_max_tokens(&[2, 0]).unwrap();
    let steps: Vec<_> = g.by_ref().map(|s| s.unwrap().tokens).collect();
    assert_eq!(steps.len(), 2);
    assert!(steps.iter().all(|s| s[0].is_some() && s[1].is_none()));
    assert!(g.set_max_tokens(&[1, 1]).is_err());
}

/// Where mlx_lm's batch leaks the padding into the recurrent state (nemotron_h: its mixer does
/// not pass the lengths to the SSD), the golden batch tokens are each prompt generated alone,
/// and the record keeps how far mlx_lm's own batch is from them: the logits of the prompts'
/// last tokens after a right-padded prefill. Ours, the same prefill (`prepare`, forward,
/// `finalize`), stays as close to each prompt alone as a batch of equal lengths does in
/// mlx_lm (rows of a batch round a few matmul sums differently from a single row).
#[test]
fn padding_never_reaches_the_ssm_state_where_mlx_lm_s_batch_leaks_it() {
    use mlx::core::{ops, Array};
    use mlx::lm::LayerCache;
    let golden = golden();
    let mut checked = 0;
    for case in golden["cases"].as_array().unwrap() {
        if !case["alone"].as_bool().unwrap_or(false) {
            continue;
        }
        let name = case["model"].as_str().unwrap();
        let prompts: Vec<Vec<u32>> = case["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .map(ids)
            .collect();
        let heads: Vec<&[u32]> = prompts.iter().map(|p| &p[..p.len() - 1]).collect();
        let longest = heads.iter().map(|h| h.len()).max().unwrap();
        let unequal = heads.iter().any(|h| h.len() != longest);
        let model = load_named(name);
        let batch = prompts.len() as i32;
        let mut cache = model.make_cache(batch, 256).unwrap();
        if cache.iter().any(LayerCache::has_rotating) {
            // A ring cannot roll padding out: such a batch prefills each prompt alone into its
            // row (the token checks above cover it).
            continue;
        }
        let theirs = case["mlx_lm_batch_first_logits_max_diff"].as_f64().unwrap();
        if unequal {
            // mlx_lm's batch is off by logit differences no rounding explains.
            assert!(theirs > 1e-3, "{name}: mlx_lm's batch within {theirs}");
        }
        let padded: Vec<u32> = heads
            .iter()
            .flat_map(|h| h.iter().copied().chain(std::iter::repeat(0)).take(longest))
            .collect();
        let lengths: Vec<i32> = heads.iter().map(|h| h.len() as i32).collect();
        let padding: Vec<i32> = lengths.iter().map(|n| longest as i32 - n).collect();
        let lengths = Array::from_slice(&lengths, &[batch]).unwrap();
        cache
            .iter_mut()
            .for_each(|c: &mut LayerCache| c.prepare(&lengths));
        let ids = Array::from_slice(&padded, &[batch, longest as i32]).unwrap();
        model.forward(&ids, Some(&mut cache)).unwrap();
        let padding = Array::from_slice(&padding, &[batch]).unwrap();
        for c in cache.iter_mut() {
            c.finalize(&padding).unwrap();
        }
        let last: Vec<u32> = prompts.iter().map(|p| *p.last().unwrap()).collect();
        let last = Array::from_slice(&last, &[batch, 1]).unwrap();
        let ours = model.forward(&last, Some(&mut cache)).unwrap();
        let mut worst = 0.0f32;
        for (i, p) in prompts.iter().enumerate() {
            let alone = model
                .forward(&Array::from_slice(p, &[1, p.len() as i32]).unwrap(), None)
                .unwrap();
            let alone = alone.index((0, -1)).unwrap();
            let row = ours.index((i as i32, -1)).unwrap();
            let diff = ops::max(
                &ops::abs(
                    &ops::subtract(
                        row.astype(Dtype::Float32).unwrap(),
                        alone.astype(Dtype::Float32).unwrap(),
                    )
                    .unwrap(),
                )
                .unwrap(),
                None,
                false,
            )
            .unwrap()
            .item::<f32>()
            .unwrap();
            worst = worst.max(diff);
        }
        eprintln!(
            "{name} {}: ours within {worst} of each prompt alone, mlx_lm's batch within {theirs}",
            case["lengths"]
        );
        // Measured on the CPU: float32 7.2e-7 (mlx_lm's own equal-length batch: 6.6e-7),
        // bfloat16 0; a bfloat16 row may still round a logit near 4 once or twice the other
        // way (0.0156 each). mlx_lm's leak moves them by 0.014 and 0.026 here. On a CUDA GPU
        // the batch's matmuls group their sums otherwise than one row's: float32 measured
        // 9.8e-5 (nemotron_h, H200), so 1e-3 there, still well below the leak. With TF32 the
        // batch's rows are rounded to 10 bits of mantissa and a prompt alone through the
        // cache's single-row steps is not: `tf32_bound::SSM_BATCH` (above mlx_lm's leak, so
        // there this test shows only that ours runs; `MLX_ENABLE_TF32=0` restores 1e-3).
        let tol = if model.dtype() == Dtype::Bfloat16 {
            0.0313
        } else if on_cuda() {
            cuda_bound(1e-3, tf32_bound::SSM_BATCH)
        } else {
            1e-5
        };
        assert!(worst <= tol, "{name}: our batch is off by {worst}");
        checked += 1;
    }
    assert!(checked >= 3);
}
