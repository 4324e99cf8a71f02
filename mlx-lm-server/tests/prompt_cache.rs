//! The prompt cache across requests: a conversation's next turn prefills only what its
//! prompt adds to the first turn's prompt and reply (`usage.prompt_tokens_details.cached_tokens`, the
//! prompt-cache metrics), its greedy text equals `mlx_lm::generate`'s for the whole prompt
//! uncached, and `--prompt-cache-size 0` turns it off.

mod common;

use common::{get, options, post, start};
use mlx_lm::{generate, generate_step, load, ChatOptions, GenerateOptions, LoadOptions};
use serde_json::{json, Value};

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_turn_prefills_only_its_new_tokens() {
    let (model, tokenizer, _) = load(common::model_dir("qwen3"), LoadOptions::default()).unwrap();
    let render = |messages: &Value| {
        let chat = ChatOptions {
            add_generation_prompt: true,
            ..Default::default()
        };
        tokenizer
            .encode(
                &tokenizer.apply_chat_template(messages, &chat).unwrap(),
                false,
            )
            .unwrap()
    };
    let greedy = |prompt: &[u32]| {
        let o = GenerateOptions {
            max_tokens: 16,
            stop_tokens: tokenizer.eos_token_ids(),
            ..Default::default()
        };
        generate(&model, &tokenizer, prompt, &o).unwrap()
    };
    let first = json!([{"role": "system", "content": "You answer in one line."},
                       {"role": "user", "content": "Name a river in Norway."}]);
    let first_prompt = render(&first);
    let reply = greedy(&first_prompt);
    let mut second = first.as_array().unwrap().clone();
    second.push(json!({"role": "assistant", "content": reply}));
    second.push(json!({"role": "user", "content": "And one in Spain?"}));
    let second = Value::Array(second);
    let second_prompt = render(&second);
    // The engine keeps the first request's row at the end of its reply: the prompt and the
    // reply's tokens but the last (an end-of-sequence token, or the 16th); the second turn
    // reuses what it shares with that, all but its own last token at most.
    let eos = tokenizer.eos_token_ids();
    let o = GenerateOptions {
        max_tokens: 16,
        ..Default::default()
    };
    let mut reply_ids = Vec::new();
    for step in generate_step(&model, &first_prompt, &o).unwrap().take(16) {
        let token = step.unwrap().0;
        reply_ids.push(token);
        if eos.contains(&token) {
            break;
        }
    }
    let held = [&first_prompt[..], &reply_ids[..reply_ids.len() - 1]].concat();
    let shared = held
        .iter()
        .zip(&second_prompt)
        .take_while(|(a, b)| a == b)
        .count()
        .min(second_prompt.len() - 1);
    assert!(
        shared >= first_prompt.len(),
        "the turns share {shared} tokens"
    );
    // The second turn prefills only what the cache lacks, so with TF32 (a CUDA GPU) its rows
    // are rounded in other groups than the whole prompt's alone: compared up to a pick closer
    // than that rounding.
    let expected = common::greedy(&model, &tokenizer, &second_prompt, 16);

    for cache_size in [10, 0] {
        let mut o = options("qwen3");
        o.prompt_cache_size = cache_size;
        let server = start(o).await;
        let base = &server.base;
        let (status, r) = post(
            base,
            "/v1/chat/completions",
            &json!({"messages": first, "max_tokens": 16}),
        )
        .await;
        assert_eq!(status, 200, "{r}");
        assert_eq!(r["choices"][0]["message"]["content"], reply.as_str());
        assert_eq!(r["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

        let (status, r) = post(
            base,
            "/v1/chat/completions",
            &json!({"messages": second, "max_tokens": 16}),
        )
        .await;
        assert_eq!(status, 200, "{r}");
        let content = r["choices"][0]["message"]["content"].as_str().unwrap();
        common::assert_reply(content, &expected, &format!("cache size {cache_size}"));
        assert_eq!(r["usage"]["prompt_tokens"], second_prompt.len());
        let cached = if cache_size > 0 { shared } else { 0 };
        assert_eq!(
            r["usage"]["prompt_tokens_details"]["cached_tokens"], cached,
            "cache size {cache_size}: {r}"
        );

        let (_, metrics) = get(base, "/metrics").await;
        let hits = metric(&metrics, "mlx_lm_prompt_cache_hits_total");
        let tokens = metric(&metrics, "mlx_lm_prompt_cache_tokens_total");
        assert_eq!(
            (hits, tokens),
            ((cached > 0) as u8 as f64, cached as f64),
            "{metrics}"
        );
        let entries = metric(&metrics, "mlx_lm_prompt_cache_entries");
        assert_eq!(entries > 0.0, cache_size > 0, "{metrics}");
        common::assert_each_size_traced_once(&metrics, 4);
        server.shutdown().await;
    }
}
