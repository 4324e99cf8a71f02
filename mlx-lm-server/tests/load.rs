//! A bounded load test on loopback: 64 concurrent streaming clients, prompts of mixed
//! lengths (long ones prefilled in chunks while others decode), some clients leaving
//! mid-stream. Every completed stream's greedy text must equal `mlx_lm::generate`'s for
//! its prompt alone; afterwards the server still answers, no slot is held, the memory held
//! by live arrays is back to what it was before the load but for the prompt caches the
//! server keeps, and the decode step was traced once.

mod common;

use std::time::Duration;

use common::{get, options, post, start, stream};
use mlx_lm::{load, LoadOptions};
use serde_json::{json, Value};

const CLIENTS: usize = 64;

/// Deterministic token ids in the test tokenizer's vocabulary, avoiding its special tokens.
fn prompt(i: usize) -> Vec<u32> {
    let len = 2 + (i * 37) % 150;
    (0..len)
        .map(|j| ((i * 131 + j * 17) % 250 + 20) as u32)
        .collect()
}

fn max_tokens(i: usize) -> usize {
    6 + i % 19
}

/// Every fifth client leaves after its third event.
fn leaves_after(i: usize) -> Option<usize> {
    (i % 5 == 3).then_some(3)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_streams_equal_single_requests() {
    let (model, tokenizer, _) = load(common::model_dir("qwen3"), LoadOptions::default()).unwrap();
    // Each alone; with TF32 (a CUDA GPU) the batched rows are compared up to a pick closer
    // than its rounding.
    let expected: Vec<common::Greedy> = (0..CLIENTS)
        .map(|i| common::greedy(&model, &tokenizer, &prompt(i), max_tokens(i)))
        .collect();

    let mut o = options("qwen3");
    o.decode_concurrency = 8;
    o.prefill_step_size = 32;
    let server = start(o).await;
    // Memory held by live arrays once the server has served a request (its slots, the
    // compiled step, the test's own reference model): the baseline to come back to.
    let (status, _) = post(
        &server.base,
        "/v1/completions",
        &json!({"prompt": prompt(1), "max_tokens": 4}),
    )
    .await;
    assert_eq!(status, 200);
    let baseline = mlx_rs::memory::get_active_memory().unwrap();
    let started = std::time::Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let base = server.base.clone();
            tokio::spawn(async move {
                let body =
                    json!({"prompt": prompt(i), "max_tokens": max_tokens(i), "stream": true});
                stream(&base, "/v1/completions", &body, leaves_after(i)).await
            })
        })
        .collect();
    // A bound against a hang, not a timing assertion: the whole run takes seconds.
    let results = tokio::time::timeout(Duration::from_secs(600), async {
        let mut out = Vec::new();
        for c in clients {
            out.push(c.await.unwrap());
        }
        out
    })
    .await
    .expect("the clients did not finish within 10 minutes");
    eprintln!("{CLIENTS} clients in {:.2?}", started.elapsed());

    let mut completed = 0;
    for (i, (status, events)) in results.iter().enumerate() {
        assert_eq!(*status, 200);
        if leaves_after(i).is_some() {
            continue;
        }
        assert_eq!(events.last().unwrap().data, "[DONE]", "client {i}");
        let mut text = String::new();
        for e in &events[..events.len() - 1] {
            let v: Value = serde_json::from_str(&e.data).unwrap();
            text.push_str(v["choices"][0]["text"].as_str().unwrap());
        }
        common::assert_reply(&text, &expected[i], &format!("client {i}"));
        completed += 1;
    }
    assert_eq!(
        completed,
        CLIENTS - (0..CLIENTS).filter(|i| leaves_after(*i).is_some()).count()
    );

    let (status, r) = post(
        &server.base,
        "/v1/completions",
        &json!({"prompt": prompt(0), "max_tokens": max_tokens(0)}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(r["choices"][0]["text"], expected[0].text.as_str());
    // The slots of the clients that left are free: the gauges go back to zero once the
    // engine has published its last step (polled, bounded).
    let mut metrics = String::new();
    for _ in 0..100 {
        metrics = get(&server.base, "/metrics").await.1;
        if metrics.contains("mlx_lm_active_slots 0\n") && metrics.contains("mlx_lm_queue_depth 0\n")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(metrics.contains("mlx_lm_active_slots 0\n"), "{metrics}");
    assert!(metrics.contains("mlx_lm_queue_depth 0\n"), "{metrics}");
    common::assert_each_size_traced_once(&metrics, 8);
    // Every request's arrays are gone: what is live is what was before the load, and the
    // prompt caches the server keeps (bounded by --prompt-cache-size).
    let active = mlx_rs::memory::get_active_memory().unwrap();
    let cached = metric(&metrics, "mlx_lm_prompt_cache_bytes") as usize;
    assert!(
        metric(&metrics, "mlx_lm_prompt_cache_entries") <= 10.0,
        "{metrics}"
    );
    eprintln!(
        "active memory: {baseline} bytes before the load, {active} after, {cached} of them \
         prompt caches"
    );
    assert!(
        active <= baseline + cached,
        "{active} bytes live after the load, {baseline} before, {cached} in prompt caches"
    );
    server.shutdown().await;
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}
