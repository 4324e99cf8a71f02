//! The engine's prompt cache ([`EngineOptions::prompt_cache_size`], mlx_lm's
//! `LRUPromptCache`) and [`Engine::insert_with_prefix`]: a prompt that begins as an earlier
//! one did (or as an earlier prompt and its reply did) prefills only the rest (reported as
//! `cached_tokens`), a diverging prompt reuses a key/value cache trimmed back to the shared
//! prefix, a recurrent model reuses only whole prefixes (its state cannot be trimmed), and
//! the greedy tokens equal those of an engine without a prompt cache; the decode step is
//! traced once throughout.
//!
//! Tolerance: the tokens must be equal. The cached prefill computes the suffix's attention
//! against the cached keys instead of within one chunk, so the logits may differ in their
//! last bits; greedy tokens of the test models do not change by that (a tie at argmax
//! would be needed). With TF32 (a CUDA GPU) the cached keys of a reply's tokens come from
//! single-row steps (float32) and the uncached engine's from a prefill (TF32): there the
//! tokens are compared up to the uncached run's first pick closer than that rounding
//! (`support::golden::tokens_to_compare`; qwen3's first pick flipped on an H200).

mod support;

use mlx::lm::{
    load_model, CachedPrefix, Engine, EngineOptions, LoadOptions, Model, RequestOptions, TokenEvent,
};
use support::golden::{tf32_bound, tokens_to_compare};
use support::lm::model_dir;

/// A request's greedy tokens, equal to another's when they have the same length and agree on
/// the tokens both compare: all of a cached run's, those of an uncached run before a
/// TF32-close pick (every one on the CPU).
#[derive(Clone, Debug)]
struct Reply {
    tokens: Vec<u32>,
    compared: usize,
}

impl PartialEq for Reply {
    fn eq(&self, other: &Reply) -> bool {
        let n = self.compared.min(other.compared);
        self.tokens.len() == other.tokens.len() && self.tokens[..n] == other.tokens[..n]
    }
}

impl std::ops::Deref for Reply {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.tokens
    }
}

fn load_named(name: &str) -> Model {
    load_model(model_dir(name), LoadOptions::default())
        .unwrap()
        .0
}

/// Deterministic tokens in `0..384` (the test models' vocabulary).
fn prompt(seed: u64, len: usize) -> Vec<u32> {
    let mut x = seed.wrapping_mul(6364136223846793005);
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) % 384) as u32
        })
        .collect()
}

fn options(prompt_cache_size: usize) -> EngineOptions {
    EngineOptions {
        max_batch: 2,
        capacity: 512,
        prefill_step_size: 32,
        prompt_cache_size,
        ..Default::default()
    }
}

/// One request through the engine to its end: its tokens and the events' `cached_tokens`.
fn one(engine: &mut Engine<'_, Model>, prompt: &[u32]) -> (Reply, usize) {
    let id = engine
        .insert(
            prompt,
            RequestOptions {
                max_tokens: 12,
                ..Default::default()
            },
        )
        .unwrap();
    collect(engine, id)
}

fn collect(engine: &mut Engine<'_, Model>, id: u64) -> (Reply, usize) {
    let mut events: Vec<TokenEvent> = Vec::new();
    while engine.contains(id) {
        events.extend(engine.step().unwrap().into_iter().filter(|e| e.id == id));
    }
    let cached = events[0].cached_tokens;
    assert!(events.iter().all(|e| e.cached_tokens == cached));
    let tokens: Vec<u32> = events.iter().map(|e| e.token).collect();
    let compared = if cached == 0 {
        let logprobs: Vec<Vec<f32>> = events
            .iter()
            .map(|e| {
                let lp = e.logprobs.astype(mlx::core::Dtype::Float32).unwrap();
                lp.to_vec::<f32>().unwrap()
            })
            .collect();
        tokens_to_compare(&logprobs, tf32_bound::ENGINE_ROWS)
    } else {
        tokens.len()
    };
    (Reply { tokens, compared }, cached)
}

/// What a finished request's row held, and the engine kept: the prompt, then the reply but
/// its last token (never fed back).
fn held(prompt: &[u32], reply: &[u32]) -> Vec<u32> {
    [prompt, &reply[..reply.len() - 1]].concat()
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Each prompt's greedy tokens from an engine without a prompt cache.
fn uncached(model: &Model, prompts: &[&[u32]]) -> Vec<Reply> {
    let mut engine = Engine::new(model, options(0)).unwrap();
    prompts
        .iter()
        .map(|p| {
            let (tokens, cached) = one(&mut engine, p);
            assert_eq!(cached, 0);
            tokens
        })
        .collect()
}

#[test]
fn key_value_prefixes_are_reused_and_trimmed() {
    let model = load_named("qwen3");
    let base = prompt(1, 70);
    let longer: Vec<u32> = base.iter().copied().chain(prompt(2, 20)).collect();
    // Shares 50 tokens with `longer`, then goes another way: a trimmed reuse.
    let diverging: Vec<u32> = base[..50].iter().copied().chain(prompt(3, 25)).collect();
    let expected = uncached(&model, &[&base, &longer, &diverging, &base]);

    let mut engine = Engine::new(&model, options(4)).unwrap();
    let (tokens, cached) = one(&mut engine, &base);
    assert_eq!((&tokens, cached), (&expected[0], 0));
    // `base`'s row at the end of its reply replaced the snapshot of `base` (a prefix of
    // it); `longer` shares at least `base` with it, trimmed back to what they share.
    let shared = common_prefix(&held(&base, &tokens), &longer);
    assert!(shared >= base.len(), "{shared}");
    let (tokens, cached) = one(&mut engine, &longer);
    assert_eq!((tokens, cached), (expected[1].clone(), shared));
    // The two replies' rows.
    assert_eq!(engine.prompt_cache().len(), 2);
    let (tokens, cached) = one(&mut engine, &diverging);
    assert_eq!((tokens, cached), (expected[2].clone(), 50));
    // The same prompt again: all but its last token, from a reply's entry, trimmed.
    let (tokens, cached) = one(&mut engine, &base);
    assert_eq!((tokens, cached), (expected[3].clone(), base.len() - 1));
    assert_eq!(
        engine.prompt_cache_stats(),
        (3, (shared + 50 + 69) as u64),
        "hits, tokens reused"
    );
    assert_eq!(engine.traces(), 1);
}

#[test]
fn a_finished_reply_is_kept_for_the_next_turn() {
    // Key/value caches, a state-space model, a hybrid of both, and sliding-window layers
    // (rings of 8 positions, wrapped by the first exchange's 41).
    for name in ["qwen3", "mamba", "falcon_h1", "gemma3_text", "gpt_oss"] {
        let model = load_named(name);
        let first = prompt(20, 30);
        let mut engine = Engine::new(&model, options(4)).unwrap();
        let (reply, cached) = one(&mut engine, &first);
        assert_eq!((reply.len(), cached), (12, 0), "{name}");
        // The next turn: the first prompt, its reply, new tokens.
        let second: Vec<u32> = [&first[..], &reply, &prompt(21, 15)].concat();
        let expected = uncached(&model, &[&second]);
        let (tokens, cached) = one(&mut engine, &second);
        // The whole first exchange comes from the cache, a recurrent state included (the
        // reply's row is a whole prefix of the new prompt).
        assert_eq!(cached, first.len() + reply.len() - 1, "{name}");
        assert_eq!(tokens, expected[0], "{name}");
        assert_eq!(engine.traces(), 1, "{name}");
    }
}

#[test]
fn recurrent_state_is_reused_only_as_a_whole_prefix() {
    // A state-space model, and a hybrid of attention and state-space layers side by side.
    for name in ["mamba", "falcon_h1"] {
        let model = load_named(name);
        let base = prompt(4, 40);
        let longer: Vec<u32> = base.iter().copied().chain(prompt(5, 10)).collect();
        let diverging: Vec<u32> = base[..30].iter().copied().chain(prompt(6, 10)).collect();
        let expected = uncached(&model, &[&base, &longer, &diverging]);

        let mut engine = Engine::new(&model, options(4)).unwrap();
        assert_eq!(one(&mut engine, &base), (expected[0].clone(), 0), "{name}");
        assert_eq!(
            one(&mut engine, &longer),
            (expected[1].clone(), base.len() - 1),
            "{name}"
        );
        // Its state is at position 39 or 49: it cannot go back to 30.
        assert_eq!(
            one(&mut engine, &diverging),
            (expected[2].clone(), 0),
            "{name}"
        );
        // Each request left two snapshots, its prompt's and its reply's (neither can be
        // cut from the other); the cache holds the four most recently used.
        assert_eq!(engine.prompt_cache().len(), 4, "{name}");
        assert_eq!(engine.traces(), 1, "{name}");
    }
}

#[test]
fn the_cache_is_bounded_least_recently_used_first() {
    let model = load_named("qwen3");
    let prompts: Vec<Vec<u32>> = (10..14).map(|s| prompt(s, 20)).collect();
    let mut engine = Engine::new(&model, options(2)).unwrap();
    for p in &prompts {
        one(&mut engine, p);
    }
    assert_eq!(engine.prompt_cache().len(), 2);
    // The two oldest are gone, the two newest hit.
    assert_eq!(one(&mut engine, &prompts[0]).1, 0);
    assert_eq!(one(&mut engine, &prompts[3]).1, 19);
    let mut engine = Engine::new(
        &model,
        EngineOptions {
            prompt_cache_bytes: 1,
            ..options(8)
        },
    )
    .unwrap();
    one(&mut engine, &prompts[0]);
    assert!(engine.prompt_cache().is_empty(), "over the byte budget");
}

#[test]
fn insert_with_prefix_starts_from_a_given_cache() {
    let model = load_named("qwen3");
    let base = prompt(7, 40);
    let longer: Vec<u32> = base.iter().copied().chain(prompt(8, 10)).collect();
    let expected = uncached(&model, &[&longer]);
    // A cache of `base` but its last token, from a prefill of it.
    let mut cache = model.make_cache(1, 256).unwrap();
    let ids = mlx::core::Array::from_slice(&base[..39], &[1, 39]).unwrap();
    model.forward(&ids, Some(&mut cache)).unwrap();
    let prefix = CachedPrefix { cache, tokens: 39 };

    let mut engine = Engine::new(&model, options(0)).unwrap();
    let greedy = RequestOptions {
        max_tokens: 12,
        ..Default::default()
    };
    // Covering the whole prompt, or at the wrong position: refused, nothing queued.
    assert!(engine
        .insert_with_prefix(&base[..39], greedy.clone(), prefix.clone())
        .is_err());
    let wrong = CachedPrefix {
        tokens: 38,
        ..prefix.clone()
    };
    let err = engine
        .insert_with_prefix(&longer, greedy.clone(), wrong)
        .unwrap_err();
    assert!(err.to_string().contains("position 39"), "{err}");
    let other = load_named("mamba").make_cache(1, 256).unwrap();
    assert!(engine
        .insert_with_prefix(
            &longer,
            greedy.clone(),
            CachedPrefix {
                cache: other,
                tokens: 39
            }
        )
        .is_err());
    assert!(engine.is_idle());

    let id = engine.insert_with_prefix(&longer, greedy, prefix).unwrap();
    assert_eq!(collect(&mut engine, id), (expected[0].clone(), 39));
    assert_eq!(engine.traces(), 1);
}

#[test]
fn a_sliding_window_prefix_is_reused_whole() {
    // Rings of 8 positions cannot be cut back (mlx_lm's `RotatingKVCache` is not
    // trimmable): a prompt that extends an earlier one reuses its ring, wrapped many times,
    // and one that diverges inside it prefills anew; the tokens are the uncached engine's.
    let model = load_named("olmo3");
    let base = prompt(30, 45);
    let longer: Vec<u32> = base.iter().copied().chain(prompt(31, 12)).collect();
    let diverging: Vec<u32> = base[..20].iter().copied().chain(prompt(32, 9)).collect();
    let expected = uncached(&model, &[&base, &longer, &diverging]);
    let mut engine = Engine::new(&model, options(4)).unwrap();
    assert_eq!(one(&mut engine, &base), (expected[0].clone(), 0));
    assert_eq!(
        one(&mut engine, &longer),
        (expected[1].clone(), base.len() - 1)
    );
    assert_eq!(one(&mut engine, &diverging), (expected[2].clone(), 0));
    // A ring from a prefill of the caller's own.
    let mut cache = model.make_cache(1, 256).unwrap();
    let ids = mlx::core::Array::from_slice(&longer[..50], &[1, 50]).unwrap();
    model.forward(&ids, Some(&mut cache)).unwrap();
    let greedy = RequestOptions {
        max_tokens: 12,
        ..Default::default()
    };
    let id = engine
        .insert_with_prefix(&longer, greedy, CachedPrefix { cache, tokens: 50 })
        .unwrap();
    assert_eq!(collect(&mut engine, id), (expected[1].clone(), 50));
    assert_eq!(engine.traces(), 1);
}

#[test]
fn a_reply_that_ends_with_the_next_step_queued_is_kept_as_it_ended() {
    // A stop token ends the reply while the step after it is already queued (pipelined):
    // that step writes one position past the reply into the row, which the kept cache must
    // leave out (key/value caches: the offset set back). Caches that cannot be set back
    // (state-space, sliding-window) queue nothing ahead while a prompt cache keeps rows.
    // Either way the next turn reuses the whole first exchange and decodes what an engine
    // without a prompt cache decodes.
    for name in ["qwen3", "mamba", "gemma3_text"] {
        let model = load_named(name);
        let first = prompt(40, 30);
        let free = uncached(&model, &[&first]).remove(0);
        // The last token of the free run that did not come before: it ends the reply there.
        let at = (0..free.len())
            .rev()
            .find(|i| !free[..*i].contains(&free[*i]))
            .unwrap_or(0);
        let mut engine = Engine::new(&model, options(4)).unwrap();
        let id = engine
            .insert(
                &first,
                RequestOptions {
                    max_tokens: 16,
                    stop_tokens: vec![free[at]],
                    ..Default::default()
                },
            )
            .unwrap();
        let mut reply = Vec::new();
        let mut ahead_at_end = None;
        while engine.contains(id) {
            for e in engine.step().unwrap() {
                reply.push(e.token);
                if e.finish_reason.is_some() {
                    ahead_at_end = Some(engine.last_step_times().queued_ahead);
                }
            }
        }
        assert_eq!(reply, free[..=at], "{name}");
        let kv_only = name == "qwen3";
        assert_eq!(
            ahead_at_end,
            Some(kv_only),
            "{name}: a step queued past the end"
        );
        let second: Vec<u32> = [&first[..], &reply, &prompt(41, 15)].concat();
        let expected = uncached(&model, &[&second]);
        let (tokens, cached) = one(&mut engine, &second);
        assert_eq!(cached, first.len() + reply.len() - 1, "{name}");
        assert_eq!(tokens, expected[0], "{name}");
        assert_eq!(engine.traces(), 1, "{name}");
    }
}
