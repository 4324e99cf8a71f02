//! A GGUF file's `general.architecture` and `{arch}.*` metadata as the `config.json` of the
//! Hugging Face checkpoint it was converted from, and llama.cpp's tensor names as that
//! checkpoint's, for the families whose conventions llama.cpp's convert_hf_to_gguf.py fixes
//! and this crate implements: `llama` (Llama, Mistral, SmolLM), `qwen2`, `qwen3`.

use serde_json::{json, Map, Value};

use super::reader::{GgufFile, MetaValue};
use crate::config::invalid;
use crate::error::Result;

/// The architectures read, as (`general.architecture`, `model_type`).
const ARCHITECTURES: &[(&str, &str)] =
    &[("llama", "llama"), ("qwen2", "qwen2"), ("qwen3", "qwen3")];

/// What the loader needs beyond the config.
pub struct Architecture {
    pub config: Map<String, Value>,
    /// llama.cpp stores llama's Q and K rows permuted (`LlamaModel.permute`): the head counts
    /// to undo it with, `(query heads, key-value heads)`.
    pub permuted_qk: Option<(i32, i32)>,
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
    if file.tensor("rope_freqs.weight").is_some() {
        // llama.cpp's Llama 3 rope scaling: per-frequency factors as a tensor rather than the
        // `rope_scaling` parameters they came from.
        return Err(invalid(
            &file.path,
            "rope_freqs.weight",
            "rope frequency factors (Llama 3.1-style rope scaling) are not supported",
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
    let permuted_qk = (arch == "llama").then_some((heads as i32, kv_heads as i32));
    Ok(Architecture {
        config: c,
        permuted_qk,
    })
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

/// The Hugging Face name of llama.cpp's tensor `name` (gguf-py's `tensor_mapping.py`, the
/// entries of these families), `None` for a name these families do not have.
pub fn hf_name(name: &str) -> Option<String> {
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
    let part = match part {
        "attn_norm" => "input_layernorm",
        "ffn_norm" => "post_attention_layernorm",
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "attn_q_norm" => "self_attn.q_norm",
        "attn_k_norm" => "self_attn.k_norm",
        "ffn_gate" => "mlp.gate_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{part}.{suffix}"))
}
