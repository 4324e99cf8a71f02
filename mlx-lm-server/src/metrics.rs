//! Counters the engine thread and the handlers update, written as Prometheus text by
//! `GET /metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Upper bounds (seconds) of the latency histograms' buckets: a decode step of a small model
/// on a GPU takes about a millisecond, a long prompt's first token many seconds.
const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// The server's counters and gauges.
#[derive(Debug, Default)]
pub struct Metrics {
    pub requests: AtomicU64,
    pub request_errors: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub generated_tokens: AtomicU64,
    pub queue_depth: AtomicU64,
    pub active_slots: AtomicU64,
    pub step_traces: AtomicU64,
    /// Shapes (batch size and attention view) the decode step was traced for.
    pub step_shapes: AtomicU64,
    /// Rows the next decode step runs over.
    pub decode_rows: AtomicU64,
    /// Requests whose prefill started from a cached prompt prefix.
    pub prompt_cache_hits: AtomicU64,
    /// Prompt tokens those prefixes saved from prefill.
    pub prompt_cache_tokens: AtomicU64,
    pub prompt_cache_entries: AtomicU64,
    pub prompt_cache_bytes: AtomicU64,
    /// Tokens per second of the engine's recent steps, as `f64` bits.
    pub tokens_per_second: AtomicU64,
    ttft: Histogram,
    prefill_chunk: Histogram,
    decode_step: Histogram,
    /// Decode steps in which a request joined the batch (they also copy its row in).
    decode_step_joined: Histogram,
}

#[derive(Debug, Default)]
struct Histogram(Mutex<Buckets>);

#[derive(Debug, Default)]
struct Buckets {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&self, seconds: f64) {
        let mut h = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for (c, bound) in h.counts.iter_mut().zip(BUCKETS) {
            if seconds <= bound {
                *c += 1;
            }
        }
        h.count += 1;
        h.sum += seconds;
    }

    /// Writes the histogram's lines under `name`, with `labels` (`key="value"` pairs, or
    /// empty) on each.
    fn render(&self, s: &mut String, name: &str, labels: &str) {
        let h = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let sep = if labels.is_empty() { "" } else { "," };
        for (c, bound) in h.counts.iter().zip(BUCKETS) {
            let _ = writeln!(s, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {c}");
        }
        let _ = writeln!(s, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", h.count);
        let braces = |l: &str| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{{{l}}}")
            }
        };
        let _ = writeln!(
            s,
            "{name}_sum{} {}\n{name}_count{} {}",
            braces(labels),
            h.sum,
            braces(labels),
            h.count
        );
    }
}

impl Metrics {
    /// Records one request's time to its first token.
    pub fn observe_ttft(&self, seconds: f64) {
        self.ttft.observe(seconds);
    }

    /// Records where one engine step's time went.
    pub fn observe_step(&self, times: &mlx_lm::StepTimes) {
        if let Some(d) = times.prefill {
            self.prefill_chunk.observe(d.as_secs_f64());
        }
        if let Some(d) = times.decode {
            let h = if times.joined {
                &self.decode_step_joined
            } else {
                &self.decode_step
            };
            h.observe(d.as_secs_f64());
        }
    }

    pub fn set_tokens_per_second(&self, v: f64) {
        self.tokens_per_second.store(v.to_bits(), Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut s = String::new();
        let mut one = |name: &str, kind: &str, help: &str, value: String| {
            let _ = writeln!(
                s,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        };
        one(
            "mlx_lm_requests_total",
            "counter",
            "Generation requests received.",
            get(&self.requests).to_string(),
        );
        one(
            "mlx_lm_request_errors_total",
            "counter",
            "Requests answered with an error.",
            get(&self.request_errors).to_string(),
        );
        one(
            "mlx_lm_prompt_tokens_total",
            "counter",
            "Prompt tokens of accepted requests.",
            get(&self.prompt_tokens).to_string(),
        );
        one(
            "mlx_lm_generated_tokens_total",
            "counter",
            "Tokens generated.",
            get(&self.generated_tokens).to_string(),
        );
        one(
            "mlx_lm_queue_depth",
            "gauge",
            "Requests waiting for a slot.",
            get(&self.queue_depth).to_string(),
        );
        one(
            "mlx_lm_active_slots",
            "gauge",
            "Requests decoding now.",
            get(&self.active_slots).to_string(),
        );
        one(
            "mlx_lm_tokens_per_second",
            "gauge",
            "Tokens generated per second over the engine's recent steps.",
            f64::from_bits(get(&self.tokens_per_second)).to_string(),
        );
        one(
            "mlx_lm_step_traces",
            "gauge",
            "Times the engine's compiled decode steps were traced, all shapes together \
             (once each: mlx_lm_step_shapes).",
            get(&self.step_traces).to_string(),
        );
        one(
            "mlx_lm_step_shapes",
            "gauge",
            "Shapes the decode step has been traced for: each batch size (1, 2, 4, ... up to \
             --decode-concurrency) with each attention view (256, 512, ... positions of a \
             slot, then all of --context-length).",
            get(&self.step_shapes).to_string(),
        );
        one(
            "mlx_lm_decode_rows",
            "gauge",
            "Rows the decode step runs over now: the fewest of its batch sizes that hold the \
             running requests.",
            get(&self.decode_rows).to_string(),
        );
        one(
            "mlx_lm_prompt_cache_hits_total",
            "counter",
            "Requests whose prefill started from a cached prompt prefix.",
            get(&self.prompt_cache_hits).to_string(),
        );
        one(
            "mlx_lm_prompt_cache_tokens_total",
            "counter",
            "Prompt tokens taken from the prompt cache instead of prefilled.",
            get(&self.prompt_cache_tokens).to_string(),
        );
        one(
            "mlx_lm_prompt_cache_entries",
            "gauge",
            "Prompt caches held.",
            get(&self.prompt_cache_entries).to_string(),
        );
        one(
            "mlx_lm_prompt_cache_bytes",
            "gauge",
            "Bytes of the prompt caches held.",
            get(&self.prompt_cache_bytes).to_string(),
        );
        let mut histogram = |name: &str, help: &str, parts: &[(&Histogram, &str)]| {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} histogram");
            for (h, labels) in parts {
                h.render(&mut s, name, labels);
            }
        };
        histogram(
            "mlx_lm_time_to_first_token_seconds",
            "Seconds from a request's arrival at the engine to its first token.",
            &[(&self.ttft, "")],
        );
        histogram(
            "mlx_lm_prefill_chunk_seconds",
            "Seconds of one step's prefill: a chunk (at most --prefill-step-size prompt tokens, batch 1) of each of up to --prompt-concurrency requests.",
            &[(&self.prefill_chunk, "")],
        );
        histogram(
            "mlx_lm_decode_step_seconds",
            "Seconds of one decode step over the batch's rows, from its inputs to its tokens \
             read back; joined=\"true\": a request joined the batch in that step (its row is \
             copied in).",
            &[
                (&self.decode_step, "joined=\"false\""),
                (&self.decode_step_joined, "joined=\"true\""),
            ],
        );
        s
    }
}
