//! `olmo3` (Python: `mlx_lm.models.olmo3`): OLMo 3, OLMo 2's layers ([`PostNormLayer`](crate::blocks::PostNormLayer) over
//! [`WholeQkNormAttention`]) with sliding-window attention in the layers `layer_types` names
//! `sliding_attention` (by default three of every four) and full attention in the others.
//! The sliding layers rotate with the plain rope at `rope_theta`; only the full layers take
//! the config's rope scaling (OLMo 3's long-context yarn). A sliding layer's cache is a
//! rotating cache of the window (Python: `RotatingKVCache(max_size=sliding_window)`).
//!
//! mlx_lm 0.32.2 raises on a `layer_types` without both kinds (its model looks up the first
//! of each); here any mix runs. Without a `tie_word_embeddings` key the head is untied (both
//! mlx_lm's and transformers' default).

use mlx_nn::MaybeQuantizedLinear;
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::{rope_theta, RotaryEmbedding, WholeQkNormAttention};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::olmo2::{OlmoArgs, OlmoStack};

/// olmo3's reading of a config: [`OlmoArgs`], the layer kinds, the window and both ropes.
#[derive(Debug, Clone)]
pub struct Olmo3Args {
    pub olmo: OlmoArgs,
    /// Per layer: whether it slides.
    pub sliding: Vec<bool>,
    pub sliding_window: i32,
    /// The full layers' rope (scaled as the config says).
    pub rope: RotaryEmbedding,
    /// The sliding layers' rope: plain, at `rope_theta`.
    pub sliding_rope: RotaryEmbedding,
}

/// Python: `mlx_lm.models.olmo3.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Olmo3 {
    pub model: OlmoStack<WholeQkNormAttention>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Olmo3 {
    /// Python: olmo3's `ModelArgs`, over every key of transformers' `Olmo3Config`:
    /// `sliding_window` and `rope_theta` required (mlx_lm has no default), `layer_types`
    /// by default `full_attention` every fourth layer, `sliding_attention` the others.
    pub fn args(c: &ModelConfig) -> crate::Result<Olmo3Args> {
        let olmo = OlmoArgs::common(c, false)?;
        let n = olmo.num_hidden_layers as usize;
        let sliding = match c.get("layer_types") {
            None | Some(Value::Null) => (0..n).map(|i| (i + 1) % 4 != 0).collect(),
            Some(Value::Array(kinds)) if kinds.len() == n => kinds
                .iter()
                .map(|k| match k.as_str() {
                    Some("sliding_attention") => Ok(true),
                    Some("full_attention") => Ok(false),
                    _ => Err(invalid(
                        c.path(),
                        &c.key("layer_types"),
                        &format!(
                            "{k} is not a layer type of olmo3 (supported: \"sliding_attention\", \
                             \"full_attention\")"
                        ),
                    )),
                })
                .collect::<crate::Result<Vec<bool>>>()?,
            Some(v) => {
                return Err(invalid(
                    c.path(),
                    &c.key("layer_types"),
                    &format!("expected {n} layer types (one per layer), found {v}"),
                ))
            }
        };
        let (rope, sliding_rope) = match per_layer_type(c)? {
            Some((full, sliding)) => (
                RotaryEmbedding::plain(olmo.head_dim, false, full as f32),
                RotaryEmbedding::plain(olmo.head_dim, false, sliding as f32),
            ),
            None => {
                // mlx_lm requires rope_theta.
                let theta = rope_theta(c, None)?;
                (
                    RotaryEmbedding::from_config(c, olmo.head_dim, theta, false)?,
                    RotaryEmbedding::plain(olmo.head_dim, false, theta as f32),
                )
            }
        };
        // Only a scaled rope needs it (read there).
        c.declare_neutral(&["max_position_embeddings"]);
        Ok(Olmo3Args {
            sliding,
            sliding_window: c.dim("sliding_window")?,
            sliding_rope,
            rope,
            olmo,
        })
    }

    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Olmo3> {
        let a = Self::args(config)?;
        ck.cast(options.dtype, |_| false)?;
        let full = a.olmo.attention(a.rope.clone(), None);
        let sliding = a
            .olmo
            .attention(a.sliding_rope.clone(), Some(a.sliding_window));
        let layers = (0..a.olmo.num_hidden_layers)
            .map(|i| {
                let attention = if a.sliding[i as usize] {
                    &sliding
                } else {
                    &full
                };
                a.olmo.layer(ck, i, attention, false)
            })
            .collect::<crate::Result<Vec<_>>>()?;
        let (model, lm_head) = a.olmo.stack(ck, options, layers)?;
        Ok(Olmo3 { model, lm_head })
    }
}

/// transformers 5's `rope_parameters` per layer type (`{"sliding_attention": {...},
/// "full_attention": {...}}`, what `Olmo3Config` writes), which mlx_lm cannot read: the full
/// and the sliding layers' bases, each of the plain rope. A scaled rope there is an error
/// (it is read from `rope_scaling`, as OLMo 3's released configs write it). `None` when the
/// config's rope parameters are not per layer type.
fn per_layer_type(c: &ModelConfig) -> crate::Result<Option<(f64, f64)>> {
    let Some(p) = c.section("rope_parameters") else {
        return Ok(None);
    };
    if !["full_attention", "sliding_attention"]
        .iter()
        .any(|k| p.values().contains_key(*k))
    {
        return Ok(None);
    }
    let theta = |kind: &str| -> crate::Result<f64> {
        let s = p
            .section(kind)
            .ok_or_else(|| invalid(c.path(), &p.key(kind), "missing"))?;
        s.require_value("rope_type", "default")?;
        s.float("rope_theta")?
            .ok_or_else(|| invalid(c.path(), &s.key("rope_theta"), "missing"))
    };
    Ok(Some((
        theta("full_attention")?,
        theta("sliding_attention")?,
    )))
}

crate::models::base::stack_language_model!(Olmo3, model, "olmo3");
