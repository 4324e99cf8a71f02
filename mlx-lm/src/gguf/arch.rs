//! A GGUF file's `general.architecture` and `{arch}.*` metadata as the `config.json` of the
//! Hugging Face checkpoint it was converted from, and llama.cpp's tensor names as that
//! checkpoint's, for the families whose conventions llama.cpp's convert_hf_to_gguf.py fixes
//! and this crate implements: `llama` (Llama, Mistral, SmolLM), `qwen2`, `qwen3`, `qwen3moe`,
//! `gemma2`, `gemma3` (the text model) and `phi3`.

use serde_json::{json, Map, Value};

use super::reader::{GgufFile, MetaValue};
use crate::config::invalid;
use crate::error::Result;

/// The architectures read, as (`general.architecture`, `model_type`).
const ARCHITECTURES: &[(&str, &str)] = &[
    ("llama", "llama"),
    ("qwen2", "qwen2"),
    ("qwen3", "qwen3"),
    ("qwen3moe", "qwen3_moe"),
    ("gemma2", "gemma2"),
    ("gemma3", "gemma3_text"),
    ("phi3", "phi3"),
];

/// What the loader needs beyond the config.
pub struct Architecture {
    pub config: Map<String, Value>,
    /// llama.cpp stores llama's Q and K rows permuted (`LlamaModel.permute`): the head counts
    /// to undo it with, `(query heads, key-value heads)`.
    pub permuted_qk: Option<(i32, i32)>,
    /// llama.cpp's converter stores gemma's RMSNorm weights plus one (its norm multiplies by
    /// the weight, gemma's by one plus it): subtract it again, as transformers' GGUF loader
    /// does (`Gemma2TensorProcessor`).
    pub norms_plus_one: bool,
    /// `general.architecture`, which tensor names depend on.
    pub name: String,
}

pub fn architecture(file: &GgufFile) -> Result<Architecture> {
    let arch = string(file, "general.architecture")?;
    let Some(&(_, model_type)) = ARCHITECTURES.iter().find(|(a, _)| *a == arch) else {
        let known: Vec<&str> = ARCHITECTURES.iter().map(|(a, _)| *a).collect();
        return Err(invalid(
            &file.path,
            "general.architecture",
            &format!(
                "{arch} is not supported (GGUF architectures read: {})",
                known.join(", ")
            ),
        ));
    };
    if file.tensor("rope_freqs.weight").is_some() && arch != "llama" {
        return Err(invalid(
            &file.path,
            "rope_freqs.weight",
            &format!("rope frequency factors are read for llama files, not {arch}"),
        ));
    }
    let key = |k: &str| format!("{arch}.{k}");
    let int = |k: &str| -> Result<i64> {
        let k = key(k);
        file.metadata
            .get(&k)
            .and_then(MetaValue::as_i64)
            .ok_or_else(|| invalid(&file.path, &k, "missing or not an integer"))
    };
    let opt_int = |k: &str| file.metadata.get(&key(k)).and_then(MetaValue::as_i64);
    let float = |k: &str| file.metadata.get(&key(k)).and_then(MetaValue::as_f64);

    let embed = file
        .tensor("token_embd.weight")
        .ok_or_else(|| invalid(&file.path, "token_embd.weight", "missing"))?;
    let heads = int("attention.head_count")?;
    let kv_heads = opt_int("attention.head_count_kv").unwrap_or(heads);
    let mut c = Map::new();
    c.insert("model_type".into(), json!(model_type));
    c.insert("hidden_size".into(), json!(int("embedding_length")?));
    c.insert("num_hidden_layers".into(), json!(int("block_count")?));
    c.insert(
        "intermediate_size".into(),
        json!(int("feed_forward_length")?),
    );
    c.insert("num_attention_heads".into(), json!(heads));
    c.insert("num_key_value_heads".into(), json!(kv_heads));
    c.insert("vocab_size".into(), json!(embed.shape()[0]));
    let eps = float("attention.layer_norm_rms_epsilon").ok_or_else(|| {
        invalid(
            &file.path,
            &key("attention.layer_norm_rms_epsilon"),
            "missing",
        )
    })?;
    c.insert("rms_norm_eps".into(), json!(eps));
    if let Some(theta) = float("rope.freq_base") {
        c.insert("rope_theta".into(), json!(theta));
    }
    if let Some(n) = opt_int("context_length") {
        c.insert("max_position_embeddings".into(), json!(n));
    }
    if let Some(d) = opt_int("attention.key_length") {
        c.insert("head_dim".into(), json!(d));
    }
    if let Some(scaling) = rope_scaling(file, &arch)? {
        c.insert("rope_scaling".into(), scaling);
    }
    if file.tensor("rope_freqs.weight").is_some() {
        if c.contains_key("rope_scaling") {
            return Err(invalid(
                &file.path,
                "rope_freqs.weight",
                "rope frequency factors and a rope scaling type together are not supported",
            ));
        }
        // Llama 3.1's scaling as llama.cpp stores it: the factors, filled in by the loader.
        c.insert(
            "rope_scaling".into(),
            json!({"rope_type": "gguf_rope_freqs"}),
        );
    }
    c.insert(
        "tie_word_embeddings".into(),
        json!(file.tensor("output.weight").is_none()),
    );
    if model_type != "qwen2" {
        // qwen2 always has q/k/v biases; llama and qwen3 have them (and an o bias) by this flag.
        c.insert(
            "attention_bias".into(),
            json!(file.tensor("blk.0.attn_q.bias").is_some()),
        );
    }
    if let Some(eos) = file
        .metadata
        .get("tokenizer.ggml.eos_token_id")
        .and_then(MetaValue::as_i64)
    {
        c.insert("eos_token_id".into(), json!(eos));
    }
    match arch.as_str() {
        "qwen3moe" => {
            // llama.cpp's qwen3moe: every layer sparse, top-k weights renormalized.
            c.insert("num_experts".into(), json!(int("expert_count")?));
            c.insert(
                "num_experts_per_tok".into(),
                json!(int("expert_used_count")?),
            );
            c.insert(
                "moe_intermediate_size".into(),
                json!(int("expert_feed_forward_length")?),
            );
            c.insert("norm_topk_prob".into(), json!(true));
            c.insert("decoder_sparse_step".into(), json!(1));
            c.insert("mlp_only_layers".into(), json!([]));
        }
        "gemma2" | "gemma3" => {
            let head_dim = int("attention.key_length")?;
            let layers = int("block_count")?;
            // llama.cpp's attention scale: 1/sqrt(head_dim), but 1/sqrt(hidden / heads) for
            // the 27B models (46 layers in Gemma 2, 62 in Gemma 3), which have
            // query_pre_attn_scalar = hidden / heads.
            let big = if arch == "gemma2" { 46 } else { 62 };
            let scalar = if layers == big {
                int("embedding_length")? / heads
            } else {
                head_dim
            };
            c.insert("query_pre_attn_scalar".into(), json!(scalar));
            c.insert("hidden_activation".into(), json!("gelu_pytorch_tanh"));
            if let Some(w) = opt_int("attention.sliding_window") {
                c.insert("sliding_window".into(), json!(w));
            }
            if arch == "gemma2" {
                for k in ["attn_logit_softcapping", "final_logit_softcapping"] {
                    let cap = float(k).ok_or_else(|| invalid(&file.path, &key(k), "missing"))?;
                    c.insert(k.into(), json!(cap));
                }
            } else {
                // Fixed in llama.cpp for Gemma 3: five sliding layers to a global one, the
                // sliding layers' rotary base 10000.
                c.insert("sliding_window_pattern".into(), json!(6));
                c.insert("rope_local_base_freq".into(), json!(10000.0));
            }
            c.remove("attention_bias");
            if arch == "gemma2" {
                // Gemma 2 always ties its output head to the embedding.
                c.remove("tie_word_embeddings");
                if file.tensor("output.weight").is_some() {
                    return Err(invalid(
                        &file.path,
                        "output.weight",
                        "gemma2 ties its output head to the embedding",
                    ));
                }
            }
        }
        "phi3" => {
            c.remove("attention_bias");
            match opt_int("attention.sliding_window") {
                Some(w) if w > 0 => {
                    c.insert("sliding_window".into(), json!(w));
                }
                _ => {}
            }
            let original = opt_int("rope.scaling.original_context_length");
            let attn_factor = float("rope.scaling.attn_factor");
            if let Some(scaling) = phi3_longrope(file)? {
                let original = original.ok_or_else(|| {
                    invalid(
                        &file.path,
                        &key("rope.scaling.original_context_length"),
                        "missing (LongRoPE needs it)",
                    )
                })?;
                c.insert("rope_scaling".into(), scaling);
                c.insert("original_max_position_embeddings".into(), json!(original));
                // The converter derives the attention factor from the two lengths, as mlx_lm's
                // SuScaledRoPE does: a file whose factor is another is an error, not ignored.
                if let (Some(f), Some(max)) = (attn_factor, opt_int("context_length")) {
                    let scale = max as f64 / original as f64;
                    let expected = if scale > 1.0 {
                        (1.0 + scale.ln() / (original as f64).ln()).sqrt()
                    } else {
                        1.0
                    };
                    if f as f32 != expected as f32 {
                        return Err(invalid(
                            &file.path,
                            &key("rope.scaling.attn_factor"),
                            &format!(
                                "{f} differs from the {expected} of the context lengths \
                                 (not supported)"
                            ),
                        ));
                    }
                }
            } else if attn_factor.is_some_and(|f| f != 1.0) {
                return Err(invalid(
                    &file.path,
                    &key("rope.scaling.attn_factor"),
                    "an attention factor without LongRoPE factors is not supported",
                ));
            }
        }
        _ => {}
    }
    let permuted_qk = (arch == "llama").then_some((heads as i32, kv_heads as i32));
    let norms_plus_one = matches!(arch.as_str(), "gemma2" | "gemma3");
    Ok(Architecture {
        config: c,
        permuted_qk,
        norms_plus_one,
        name: arch,
    })
}

/// Phi-3's LongRoPE factors, which llama.cpp stores as the tensors `rope_factors_long` and
/// `rope_factors_short` (read by the loader, see [`is_rope_factors`]): the config's
/// `rope_scaling` with placeholders the loader fills in.
fn phi3_longrope(file: &GgufFile) -> Result<Option<Value>> {
    let long = file.tensor("rope_factors_long.weight");
    let short = file.tensor("rope_factors_short.weight");
    match (long, short) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Ok(Some(json!({"type": "longrope"}))),
        _ => Err(invalid(
            &file.path,
            "rope_factors_long.weight",
            "LongRoPE needs both rope_factors_long and rope_factors_short",
        )),
    }
}

/// Whether `name` is one of the rotary-factor tensors that become config values.
pub fn is_rope_factors(name: &str) -> bool {
    matches!(
        name,
        "rope_factors_long.weight" | "rope_factors_short.weight" | "rope_freqs.weight"
    )
}

fn string(file: &GgufFile, key: &str) -> Result<String> {
    file.metadata
        .get(key)
        .and_then(MetaValue::as_str)
        .map(str::to_string)
        .ok_or_else(|| invalid(&file.path, key, "missing or not a string"))
}

/// `{arch}.rope.scaling.*` as transformers' `rope_scaling` (linear and yarn; llama.cpp's
/// YaRN tuning keys, which convert_hf_to_gguf.py writes only when the config set them, are
/// an error rather than dropped).
fn rope_scaling(file: &GgufFile, arch: &str) -> Result<Option<Value>> {
    let key = |k: &str| format!("{arch}.rope.scaling.{k}");
    let Some(ty) = file.metadata.get(&key("type")) else {
        return Ok(None);
    };
    let ty = ty
        .as_str()
        .ok_or_else(|| invalid(&file.path, &key("type"), "not a string"))?;
    let factor = || {
        file.metadata
            .get(&key("factor"))
            .and_then(MetaValue::as_f64)
            .ok_or_else(|| invalid(&file.path, &key("factor"), "missing or not a number"))
    };
    for k in file.metadata.keys() {
        let known = ["type", "factor", "original_context_length", "finetuned"];
        if let Some(rest) = k.strip_prefix(&key("")) {
            if !known.contains(&rest) {
                return Err(invalid(
                    &file.path,
                    k,
                    "this rope scaling parameter is not supported",
                ));
            }
        }
    }
    Ok(match ty {
        "none" => None,
        "linear" => Some(json!({"type": "linear", "factor": factor()?})),
        "yarn" => {
            let original = file
                .metadata
                .get(&key("original_context_length"))
                .and_then(MetaValue::as_i64)
                .ok_or_else(|| invalid(&file.path, &key("original_context_length"), "missing"))?;
            Some(json!({
                "type": "yarn",
                "factor": factor()?,
                "original_max_position_embeddings": original,
            }))
        }
        other => {
            return Err(invalid(
                &file.path,
                &key("type"),
                &format!("rope scaling {other} is not supported (linear, yarn are)"),
            ))
        }
    })
}

/// The Hugging Face name of llama.cpp's tensor `name` in architecture `arch` (gguf-py's
/// `tensor_mapping.py`, the entries of these families), `None` for a name these families do not
/// have.
pub fn hf_name(arch: &str, name: &str) -> Option<String> {
    let (base, suffix) = name.rsplit_once('.')?;
    let top = match base {
        "token_embd" => Some("model.embed_tokens"),
        "output_norm" => Some("model.norm"),
        "output" => Some("lm_head"),
        _ => None,
    };
    if let Some(top) = top {
        return Some(format!("{top}.{suffix}"));
    }
    let rest = base.strip_prefix("blk.")?;
    let (layer, part) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let gemma = matches!(arch, "gemma2" | "gemma3");
    let part = match part {
        "attn_norm" => "input_layernorm",
        // Gemma's four norms a layer: ffn_norm is the one before its MLP.
        "ffn_norm" if gemma => "pre_feedforward_layernorm",
        "post_attention_norm" if gemma => "post_attention_layernorm",
        "post_ffw_norm" if gemma => "post_feedforward_layernorm",
        "ffn_norm" => "post_attention_layernorm",
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_qkv" if arch == "phi3" => "self_attn.qkv_proj",
        "attn_output" => "self_attn.o_proj",
        "attn_q_norm" => "self_attn.q_norm",
        "attn_k_norm" => "self_attn.k_norm",
        "ffn_gate" => "mlp.gate_proj",
        // Phi-3 stores its fused gate and up projection as ffn_up.
        "ffn_up" if arch == "phi3" => "mlp.gate_up_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        // qwen3moe's router and its experts, stacked [experts, out, in] as MLX's switch layers
        // hold them.
        "ffn_gate_inp" if arch == "qwen3moe" => "mlp.gate",
        "ffn_gate_exps" if arch == "qwen3moe" => "mlp.switch_mlp.gate_proj",
        "ffn_up_exps" if arch == "qwen3moe" => "mlp.switch_mlp.up_proj",
        "ffn_down_exps" if arch == "qwen3moe" => "mlp.switch_mlp.down_proj",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{part}.{suffix}"))
}
