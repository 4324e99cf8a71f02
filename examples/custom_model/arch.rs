//! `tiny_lm`, an architecture of this example's own, built on mlx-lm's shared blocks and
//! registered with the zoo from outside the crate: after [`register`], `mlx::lm::load`,
//! generation, prompt caches and `mlx::lm::cli` take its model directories like any other.
//!
//! Its config names its sizes its own way (`d_model`, `n_layers`, ...), its parameters live
//! under `transformer.` with a tied output head, its queries and keys are RMS-normed per
//! head, and RoPE turns only a fraction of each head (`rotary_fraction`).

use std::collections::HashMap;
use std::path::Path;

use mlx::core::random::{self, NormalOptions};
use mlx::core::{io, Array, Dtype};
use mlx::lm::blocks::{
    Attention, AttentionConfig, DecoderModel, Mlp, RotaryEmbedding, StackConfig,
};
use mlx::lm::{Checkpoint, LanguageModel, LayerCache, LoadOptions, Model, ModelConfig};
use mlx::utils::TreeNode;

/// The `model_type` it registers.
pub const MODEL_TYPE: &str = "tiny_lm";

/// The model: a decoder stack of attention and SwiGLU layers, tied output.
#[derive(Debug, Clone, TreeNode)]
pub struct TinyLm {
    pub transformer: DecoderModel<Attention, Mlp>,
}

/// What its config says.
struct Args {
    stack: StackConfig,
    attention: AttentionConfig,
    d_ff: i32,
}

impl TinyLm {
    fn args(c: &ModelConfig) -> mlx::lm::Result<Args> {
        let d = c.dim("d_model")?;
        let heads = c.dim("n_heads")?;
        let head_dim = d / heads;
        let eps = c.float_or("norm_eps", 1e-5)? as f32;
        let rotary = (head_dim as f64 * c.float_or("rotary_fraction", 1.0)?) as i32;
        Ok(Args {
            stack: StackConfig {
                vocab_size: c.dim("vocab_size")?,
                hidden_size: d,
                num_hidden_layers: c.dim("n_layers")?,
                rms_norm_eps: eps,
            },
            attention: AttentionConfig {
                hidden_size: d,
                num_heads: heads,
                num_kv_heads: c.dim_or("n_kv_heads", Some(heads))?,
                head_dim,
                qkv_bias: false,
                o_bias: false,
                qk_norm: Some(eps),
                output_gate: false,
                rope: Some(RotaryEmbedding::from_config(
                    c,
                    rotary,
                    c.float_or("rope_base", 10000.0)?,
                    false,
                )?),
                sliding_window: None,
            },
            d_ff: c.dim("d_ff")?,
        })
    }

    /// Builds the model from a checkpoint (what the registry calls).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> mlx::lm::Result<TinyLm> {
        let a = Self::args(config)?;
        ck.cast(options.dtype, |_| false)?;
        let transformer = DecoderModel::load(
            ck,
            "transformer",
            a.stack,
            options.kernels,
            |ck, path, _| Attention::load(ck, &format!("{path}.self_attn"), &a.attention),
            |ck, path, _| Mlp::load(ck, path, a.stack.hidden_size, a.d_ff, false),
        )?;
        Ok(TinyLm { transformer })
    }
}

impl LanguageModel for TinyLm {
    fn forward(
        &self,
        inputs: &Array,
        cache: Option<&mut [LayerCache]>,
    ) -> mlx::core::Result<Array> {
        self.transformer.logits(inputs, cache, None)
    }

    fn make_cache(&self, batch: i32, capacity: i32) -> mlx::core::Result<Vec<LayerCache>> {
        self.transformer.make_cache(batch, capacity)
    }

    fn dtype(&self) -> Dtype {
        self.transformer.dtype()
    }

    fn vocab_size(&self) -> i32 {
        self.transformer.vocab_size()
    }

    fn model_type(&self) -> &str {
        MODEL_TYPE
    }
}

/// Makes `tiny_lm` model directories loadable: one line.
pub fn register() {
    mlx::lm::register_model(MODEL_TYPE, |ck, config, options| {
        Ok(Model::new(TinyLm::from_checkpoint(ck, config, options)?))
    });
}

/// Writes a `tiny_lm` model directory with random weights (seeded) to `dir`: config.json,
/// model.safetensors, and the tokenizer files of `tokenizer_dir` (a 384-token vocabulary).
pub fn write_random_model(
    dir: &Path,
    tokenizer_dir: &Path,
    seed: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let (vocab, d, layers, heads, kv_heads, d_ff) = (384, 64, 2, 4, 2, 128);
    let head_dim = d / heads;
    std::fs::create_dir_all(dir)?;
    let config = serde_json::json!({
        "model_type": MODEL_TYPE,
        "vocab_size": vocab,
        "d_model": d,
        "n_layers": layers,
        "n_heads": heads,
        "n_kv_heads": kv_heads,
        "d_ff": d_ff,
        "norm_eps": 1e-5,
        "rope_base": 10000.0,
        "rotary_fraction": 0.5,
        "eos_token_id": 0,
    });
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string_pretty(&config)?,
    )?;
    random::seed(seed)?;
    let normal = |shape: &[i32], scale: f32| {
        random::normal(shape, NormalOptions::default().scale(scale), None)
    };
    let ones = |n: i32| mlx::core::ops::ones(&[n], Dtype::Float32);
    let mut weights: Vec<(String, Array)> = vec![
        (
            "transformer.embed_tokens.weight".into(),
            normal(&[vocab, d], 1.0)?,
        ),
        ("transformer.norm.weight".into(), ones(d)?),
    ];
    for i in 0..layers {
        let p = format!("transformer.layers.{i}");
        let s = 1.0 / (d as f32).sqrt();
        weights.extend([
            (
                format!("{p}.self_attn.q_proj.weight"),
                normal(&[heads * head_dim, d], s)?,
            ),
            (
                format!("{p}.self_attn.k_proj.weight"),
                normal(&[kv_heads * head_dim, d], s)?,
            ),
            (
                format!("{p}.self_attn.v_proj.weight"),
                normal(&[kv_heads * head_dim, d], s)?,
            ),
            (
                format!("{p}.self_attn.o_proj.weight"),
                normal(&[d, heads * head_dim], s)?,
            ),
            (format!("{p}.self_attn.q_norm.weight"), ones(head_dim)?),
            (format!("{p}.self_attn.k_norm.weight"), ones(head_dim)?),
            (format!("{p}.mlp.gate_proj.weight"), normal(&[d_ff, d], s)?),
            (format!("{p}.mlp.up_proj.weight"), normal(&[d_ff, d], s)?),
            (format!("{p}.mlp.down_proj.weight"), normal(&[d, d_ff], s)?),
            (format!("{p}.input_layernorm.weight"), ones(d)?),
            (format!("{p}.post_attention_layernorm.weight"), ones(d)?),
        ]);
    }
    let metadata = HashMap::from([("format".to_string(), "mlx".to_string())]);
    io::save_safetensors(
        dir.join("model.safetensors"),
        weights.iter().map(|(k, a)| (k, a)),
        Some(&metadata),
    )?;
    for file in ["tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(tokenizer_dir.join(file), dir.join(file))?;
    }
    Ok(())
}
