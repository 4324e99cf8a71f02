//! The server's settings, as `mlx_lm.server`'s command-line flags name them.

use std::path::PathBuf;

use clap::Parser;

/// How to serve a model. The flags mirror `mlx_lm.server`'s where it has them (`--model`,
/// `--host`, `--port`, `--temp`, `--top-p`, `--top-k`, `--min-p`, `--max-tokens`,
/// `--chat-template`, `--chat-template-args`, `--decode-concurrency`, `--prompt-concurrency`,
/// `--prefill-step-size`,
/// `--prompt-cache-size`, `--prompt-cache-bytes`);
/// the rest are this server's limits and safety settings.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "server",
    about = "An OpenAI- and Anthropic-compatible server for an MLX model"
)]
pub struct ServerOptions {
    /// The model directory (Hugging Face layout: config.json, safetensors, tokenizer.json).
    #[arg(long)]
    pub model: PathBuf,
    /// The address to listen on; loopback unless told otherwise.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port (0: any free port).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The name `/v1/models` lists and requests may give as `model` (default: the model
    /// directory as given).
    #[arg(long)]
    pub served_model_name: Option<String>,
    /// Default sampling temperature.
    #[arg(long, default_value_t = 0.0)]
    pub temp: f64,
    /// Default nucleus sampling top-p.
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f64,
    /// Default top-k (0: off).
    #[arg(long, default_value_t = 0)]
    pub top_k: i32,
    /// Default min-p (0: off).
    #[arg(long, default_value_t = 0.0)]
    pub min_p: f64,
    /// Default number of tokens to generate.
    #[arg(long, default_value_t = 512)]
    pub max_tokens: usize,
    /// The most tokens a request may ask for (default: the context length).
    #[arg(long)]
    pub max_tokens_limit: Option<usize>,
    /// A chat template (Jinja source) replacing the tokenizer's.
    #[arg(long, default_value = "")]
    pub chat_template: String,
    /// JSON object of extra chat template variables, e.g. '{"enable_thinking": false}'.
    #[arg(long, default_value = "{}")]
    pub chat_template_args: String,
    /// Requests decoded together: the engine's slots. mlx_lm's default is 32; this server's
    /// is 8 because each slot holds a whole context's cache from the start.
    #[arg(long, default_value_t = 8)]
    pub decode_concurrency: usize,
    /// Positions each slot holds, prompt and generated tokens together.
    #[arg(long, default_value_t = 4096)]
    pub context_length: usize,
    /// Prompt tokens prefilled per engine step and request.
    #[arg(long, default_value_t = 2048)]
    pub prefill_step_size: usize,
    /// Waiting requests prefilled in the same engine step, a chunk each.
    #[arg(long, default_value_t = 8)]
    pub prompt_concurrency: usize,
    /// Prompt caches kept across requests (0: none): a prompt that begins as an earlier
    /// one did prefills only the rest.
    #[arg(long, default_value_t = 10)]
    pub prompt_cache_size: usize,
    /// The most bytes the prompt caches hold, as mlx_lm writes sizes (`500M`, `2GB`,
    /// `1000000`); default: no limit but `--prompt-cache-size`.
    #[arg(long, value_parser = parse_size)]
    pub prompt_cache_bytes: Option<usize>,
    /// Requests must send `Authorization: Bearer <key>` (or Anthropic's `x-api-key`).
    #[arg(long, env = "MLX_LM_SERVER_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// The largest request body accepted, in bytes.
    #[arg(long, default_value_t = 4 << 20)]
    pub max_request_bytes: usize,
    /// Requests waiting for a slot beyond which new ones get a 503.
    #[arg(long, default_value_t = 256)]
    pub max_queue: usize,
    /// Seconds a graceful shutdown lets in-flight requests finish before cancelling them.
    #[arg(long, default_value_t = 30)]
    pub shutdown_timeout: u64,
    /// Decode-step shapes traced before the server listens: `all` (every batch size with
    /// every attention view, both step kinds), `first` (one row over the shortest view: a
    /// lone request's first tokens) or `none`. Any other shape is traced the first time a
    /// step needs it, once for the server's life, and that step waits for its trace.
    #[arg(long, value_enum, default_value_t = TraceAtStart::First)]
    pub trace_at_start: TraceAtStart,
    /// Started as a group of several processes (`launch -n N -- server ...`): split the
    /// model's layers over them (pipeline parallelism) instead of each layer's heads (tensor
    /// parallelism, the default).
    #[arg(long)]
    pub pipeline: bool,
    /// Print one line per request on stderr.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub log_requests: bool,
}

/// Which decode-step shapes the server traces before it listens (`--trace-at-start`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum TraceAtStart {
    All,
    First,
    None,
}

impl ServerOptions {
    /// The options with defaults for a model directory (as the flags' defaults).
    pub fn new(model: impl Into<PathBuf>) -> Self {
        let model = model.into();
        let mut o = ServerOptions::parse_from(["server", "--model", "_"]);
        o.model = model;
        o
    }
}

/// mlx_lm's sizes (`utils._parse_size`): a decimal number, then nothing, `M`/`MB` (10^6)
/// or `G`/`GB` (10^9).
fn parse_size(text: &str) -> Result<usize, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let number: f64 = text[..split]
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 500M, 2GB)"))?;
    let unit = match text[split..].trim().to_ascii_uppercase().as_str() {
        "" => 1.0,
        "M" | "MB" => 1e6,
        "G" | "GB" => 1e9,
        u => return Err(format!("unknown size unit {u:?} (M, MB, G or GB)")),
    };
    Ok((number * unit) as usize)
}
