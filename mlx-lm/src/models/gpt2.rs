//! `gpt2` (Python: `mlx_lm.models.gpt2`): GPT-2, learned absolute positions (`wpe`) added to
//! the token embeddings, pre-norm layers of LayerNorms with biases, attention projected by
//! one fused `c_attn` (`[q | k | v]`, [`split_qkv`]) without rope, a `c_fc` / `c_proj` MLP
//! four times `n_embd` wide with the tanh GELU (transformers' `gelu_new`), the head tied to
//! `wte`. Parameter paths are mlx_lm's: `model.wte`, `model.wpe`, `model.h.{i}.{ln_1,
//! attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}`, `model.ln_f`.
//!
//! A Hugging Face checkpoint stores the projections as Conv1D weights `[in, out]` under
//! un-prefixed names (`h.0.attn.c_attn.weight`); mlx_lm's sanitize transposes those (only
//! those: a checkpoint mlx_lm saved has `model.h...` keys, already `[out, in]`, so loading is
//! idempotent) and prefixes `model.`. transformers' causal-mask buffers (`attn.bias`, and
//! the older `attn.masked_bias`, which mlx_lm 0.32.2 leaves in and then fails to load) are
//! dropped. `n_inner` other than 4 · `n_embd`, and transformers' attention variants mlx_lm
//! does not compute (`scale_attn_by_inverse_layer_idx`, `reorder_and_upcast_attn`,
//! unscaled attention, cross-attention), are errors.

use mlx_nn::{Forward, LayerNorm, MaybeQuantizedEmbedding, MaybeQuantizedLinear};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::attention::attend;
use crate::blocks::rows::merge_heads;
use crate::blocks::{
    split_qkv, stack_logits, Activation, Layer, LayerContext, PlainMlp, StackEnds, StackParts,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;
use crate::models::base::own_stack_language_model;

/// Python: gpt2's `ModelArgs`, over every key of transformers' `GPT2Config`.
#[derive(Debug, Clone)]
pub struct Gpt2Args {
    pub vocab_size: i32,
    pub n_embd: i32,
    pub n_head: i32,
    pub n_layer: i32,
    pub n_positions: i32,
    pub layer_norm_epsilon: f32,
}

impl Gpt2Args {
    pub fn from_config(c: &ModelConfig) -> crate::Result<Gpt2Args> {
        // transformers' "gelu_new" and "gelu_pytorch_tanh" are both the tanh GELU mlx_lm
        // computes.
        c.require(
            "activation_function",
            r#""gelu_new" (or "gelu_pytorch_tanh")"#,
            |v| v == "gelu_new" || v == "gelu_pytorch_tanh",
        )?;
        c.require_value("scale_attn_weights", true)?;
        c.require_value("scale_attn_by_inverse_layer_idx", false)?;
        c.require_value("reorder_and_upcast_attn", false)?;
        c.require_value("add_cross_attention", false)?;
        c.require_value("tie_word_embeddings", true)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; the summary_* keys describe transformers' sequence-classification head,
        // which a language model does not have; n_ctx is n_positions' old name (mlx_lm
        // requires and ignores it).
        c.declare_neutral(&[
            "resid_pdrop",
            "embd_pdrop",
            "attn_pdrop",
            "initializer_range",
            "summary_type",
            "summary_use_proj",
            "summary_activation",
            "summary_proj_to_labels",
            "summary_first_dropout",
            "n_ctx",
        ]);
        let n_embd = c.dim("n_embd")?;
        let n_head = c.dim("n_head")?;
        if n_embd % n_head != 0 {
            return Err(invalid(
                c.path(),
                &c.key("n_head"),
                &format!("{n_head} heads do not divide n_embd {n_embd}"),
            ));
        }
        // mlx_lm's MLP is 4 * n_embd wide whatever n_inner says; its attention has n_head
        // key-value heads whatever num_key_value_heads says.
        c.require_value("n_inner", 4 * n_embd)?;
        c.require_value("num_key_value_heads", n_head)?;
        Ok(Gpt2Args {
            vocab_size: c.dim("vocab_size")?,
            n_embd,
            n_head,
            n_layer: c.dim("n_layer")?,
            n_positions: c.dim("n_positions")?,
            layer_norm_epsilon: c
                .float("layer_norm_epsilon")?
                .ok_or_else(|| invalid(c.path(), &c.key("layer_norm_epsilon"), "missing"))?
                as f32,
        })
    }
}

/// Python: gpt2's `Attention`.
#[derive(Debug, Clone, TreeNode)]
pub struct Gpt2Attention {
    pub c_attn: MaybeQuantizedLinear,
    pub c_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub n_head: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
}

impl Gpt2Attention {
    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let (h, hd) = (self.n_head, self.head_dim);
        let (q, k, v) = split_qkv(&self.c_attn.forward(x)?, ctx.rows, h, h, hd)?;
        let out = attend(
            q,
            k,
            v,
            None,
            self.scale,
            ctx.masks.for_window(None),
            None,
            ctx.kernels.fused_decode_attention,
            cache,
        )?;
        self.c_proj.forward(&merge_heads(&out)?)
    }
}

/// Python: gpt2's `TransformerBlock`.
#[derive(Debug, Clone, TreeNode)]
pub struct Gpt2Layer {
    pub attn: Gpt2Attention,
    pub mlp: PlainMlp,
    pub ln_1: LayerNorm,
    pub ln_2: LayerNorm,
}

impl Layer for Gpt2Layer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let h = mlx_rs::ops::add(x, &self.attn.forward(&self.ln_1.forward(x)?, ctx, cache)?)?;
        mlx_rs::ops::add(&h, &self.mlp.forward(&self.ln_2.forward(&h)?)?)
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        let (kv, hd) = (self.attn.n_head, self.attn.head_dim);
        LayerCache::attention(batch, kv, hd, None, capacity, dtype)
    }
}

/// Python: `GPT2Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Gpt2Model {
    pub wte: MaybeQuantizedEmbedding,
    pub wpe: MaybeQuantizedEmbedding,
    pub h: Vec<Gpt2Layer>,
    pub ln_f: LayerNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

/// Python: `mlx_lm.models.gpt2.Model`: always tied to `wte`.
#[derive(Debug, Clone, TreeNode)]
pub struct Gpt2 {
    pub model: Gpt2Model,
}

/// The projections a Hugging Face checkpoint stores as Conv1D weights `[in, out]`.
const CONV1D: [&str; 4] = ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"];

impl Gpt2 {
    /// Python: `Model.sanitize`: drops each layer's causal-mask buffer (`h.{i}.attn.bias`;
    /// here `h.{i}.attn.masked_bias` too), transposes the un-prefixed Conv1D weights
    /// `h.{i}.{attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj}.weight`, and prefixes every
    /// key without it with `model.`.
    pub fn sanitize(ck: &mut Checkpoint, a: &Gpt2Args) -> crate::Result<()> {
        let dir = ck.dir().to_path_buf();
        let w = ck.weights_mut();
        for i in 0..a.n_layer {
            for buffer in ["bias", "masked_bias"] {
                w.take(&format!("h.{i}.attn.{buffer}"));
            }
            for name in CONV1D {
                let key = format!("h.{i}.{name}.weight");
                let file = w
                    .file_of(&key)
                    .map_or_else(|| dir.clone(), |p| p.to_path_buf());
                let Some(weight) = w.take(&key) else {
                    continue;
                };
                let transposed = mlx_rs::ops::transpose(&weight, [1, 0]).map_err(|source| {
                    crate::Error::Mlx {
                        path: file.clone(),
                        source,
                    }
                })?;
                w.insert(key, transposed, file);
            }
        }
        let unprefixed: Vec<String> = w
            .keys()
            .into_iter()
            .filter(|k| !k.starts_with("model."))
            .map(str::to_string)
            .collect();
        for key in unprefixed {
            w.rename(&key, format!("model.{key}"));
        }
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Gpt2> {
        let a = Gpt2Args::from_config(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.n_embd, a.layer_norm_epsilon);
        let hd = d / a.n_head;
        let mut h = Vec::with_capacity(a.n_layer as usize);
        for i in 0..a.n_layer {
            let p = |name: &str| format!("model.h.{i}.{name}");
            h.push(Gpt2Layer {
                attn: Gpt2Attention {
                    c_attn: ck.linear(&p("attn.c_attn"), d, 3 * d, true)?,
                    c_proj: ck.linear(&p("attn.c_proj"), d, d, true)?,
                    n_head: a.n_head,
                    head_dim: hd,
                    // Python: head_dim**-0.5, a Python float, rounded once to float32.
                    scale: f64::from(hd).powf(-0.5) as f32,
                },
                mlp: PlainMlp::load(ck, &p("mlp"), d, 4 * d, Activation::GeluApprox)?,
                ln_1: ck.layer_norm(&p("ln_1"), d, eps, true)?,
                ln_2: ck.layer_norm(&p("ln_2"), d, eps, true)?,
            });
        }
        Ok(Gpt2 {
            model: Gpt2Model {
                wte: ck.embedding("model.wte", a.vocab_size, d)?,
                wpe: ck.embedding("model.wpe", a.n_positions, d)?,
                h,
                ln_f: ck.layer_norm("model.ln_f", d, eps, true)?,
                kernels: options.kernels,
            },
        })
    }
}

own_stack_language_model!(
    Gpt2,
    "gpt2",
    layers: |m| &m.model.h,
    embedding: |m| &m.model.wte,
    fn forward(&self, inputs, cache) {
        let m = &self.model;
        stack_logits(
            StackParts {
                embedding: &m.wte,
                layers: &m.h,
                norm: &m.ln_f,
                kernels: m.kernels,
                ends: StackEnds::default(),
                positions: Some(&m.wpe),
                pipeline: None,
            },
            inputs,
            cache,
            None,
        )
    }
);
