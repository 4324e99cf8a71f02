//! `baichuan_m1` (Python: `mlx_lm.models.baichuan_m1`): Baichuan-M1, a decoder whose
//! attention mixes each key and value with the previous position's (`k'_t = w0 k_{t-1} + w1
//! k_t` per key-value head, a convolution of two taps, `conv_k` / `conv_v`) before RoPE, with
//! sliding-window layers (`sliding_window_layers`, their own head counts) beside global ones,
//! and an output head whose rows are normalized at load.
//!
//! Each layer's cache is a [`LayerCache::List`] (Python: `CacheList(ArraysCache(2),
//! KVCache())`, a `RotatingKVCache` in a sliding-window layer): the last raw key and value
//! `[batch, kv_heads, 1, head_dim]`, the state of the two-tap convolution, beside the
//! keys and values.

use mlx_nn::Frozen;
use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{linalg, ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::attention::attend;
use crate::blocks::rows::{heads, merge_heads, wrong_input};
use crate::blocks::{Layer, LayerContext, LayerStack, Mlp, RotaryEmbedding, Stack};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};

/// Python: baichuan_m1's `ModelArgs`.
#[derive(Debug, Clone)]
pub struct BaichuanM1Args {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub rope_theta: f32,
    pub sliding_window: i32,
    pub sliding_window_layers: Vec<i32>,
    pub rms_norm_eps: f32,
    pub num_swa_attention_heads: Option<i32>,
    pub num_swa_key_value_heads: Option<i32>,
}

impl BaichuanM1Args {
    /// Reads the config as mlx_lm's `ModelArgs` (Baichuan-M1 has no transformers config
    /// class; its checkpoints run remote code). `conv_window` must be 2 (mlx_lm asserts it),
    /// and the output head is never tied (mlx_lm's model always calls `lm_head`).
    pub fn from_config(c: &ModelConfig) -> crate::Result<BaichuanM1Args> {
        c.require_value("conv_window", 2)?;
        c.require_value("tie_word_embeddings", false)?;
        // mlx_lm computes SiLU (the MLP's SwiGLU) whatever a config says.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Plain RoPE: the length bound sizes nothing.
        c.declare_neutral(&["max_position_embeddings", "model_max_length"]);
        let layers = c.dim("num_hidden_layers")?;
        let sliding_window_layers = match c.get("sliding_window_layers") {
            Some(Value::Array(ids)) => ids
                .iter()
                .map(|v| match v.as_i64() {
                    Some(i) if (0..i64::from(layers)).contains(&i) => Ok(i as i32),
                    _ => Err(invalid(
                        c.path(),
                        &c.key("sliding_window_layers"),
                        &format!("{v} is not a layer of {layers}"),
                    )),
                })
                .collect::<crate::Result<Vec<i32>>>()?,
            Some(v) => {
                return Err(invalid(
                    c.path(),
                    &c.key("sliding_window_layers"),
                    &format!("not a list: {v}"),
                ))
            }
            None => {
                return Err(invalid(
                    c.path(),
                    &c.key("sliding_window_layers"),
                    "missing",
                ))
            }
        };
        let optional = |key: &str| -> crate::Result<Option<i32>> {
            match c.usize(key)? {
                None | Some(0) => Ok(None),
                Some(_) => c.dim(key).map(Some),
            }
        };
        Ok(BaichuanM1Args {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: c.dim("hidden_size")?,
            intermediate_size: c.dim("intermediate_size")?,
            num_hidden_layers: layers,
            num_attention_heads: c.dim("num_attention_heads")?,
            num_key_value_heads: c.dim("num_key_value_heads")?,
            rope_theta: c
                .float("rope_theta")?
                .ok_or_else(|| invalid(c.path(), &c.key("rope_theta"), "missing"))?
                as f32,
            sliding_window: c.dim("sliding_window")?,
            sliding_window_layers,
            rms_norm_eps: c
                .float("rms_norm_eps")?
                .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?
                as f32,
            num_swa_attention_heads: optional("num_swa_attention_heads")?,
            num_swa_key_value_heads: optional("num_swa_key_value_heads")?,
        })
    }
}

/// Python: baichuan_m1's `Attention`.
#[derive(Debug, Clone, TreeNode)]
pub struct BaichuanM1Attention {
    #[tree(rename = "W_pack")]
    pub w_pack: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    /// `[1, 1, kv_heads, 1, 2]`: each head's weights of the previous and the current key.
    pub conv_k: Array,
    pub conv_v: Array,
    pub rope: RotaryEmbedding,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
    /// The sliding window of this layer, if it is one of `sliding_window_layers`.
    #[tree(static)]
    pub window: Option<i32>,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl BaichuanM1Attention {
    /// Takes layer `i`'s attention tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        i: i32,
        a: &BaichuanM1Args,
    ) -> crate::Result<BaichuanM1Attention> {
        let swa = a.sliding_window_layers.contains(&i);
        let heads = match a.num_swa_attention_heads {
            Some(h) if swa => h,
            _ => a.num_attention_heads,
        };
        let kv = match a.num_swa_key_value_heads {
            Some(h) if swa => h,
            _ => a.num_key_value_heads,
        };
        let d = a.hidden_size;
        if d % heads != 0 {
            return Err(invalid(
                ck.dir(),
                &format!("{path}.W_pack.weight"),
                &format!("hidden_size {d} is not a multiple of the layer's {heads} heads"),
            ));
        }
        let hd = d / heads;
        let p = |name: &str| format!("{path}.{name}");
        Ok(BaichuanM1Attention {
            frozen: Frozen::default(),
            w_pack: ck.linear(&p("W_pack"), d, d + 2 * kv * hd, false)?,
            o_proj: ck.linear(&p("o_proj"), heads * hd, d, false)?,
            conv_k: ck.array(&p("conv_k"), &[1, 1, kv, 1, 2])?,
            conv_v: ck.array(&p("conv_v"), &[1, 1, kv, 1, 2])?,
            // Python: `nn.RoPE(head_dim, traditional=False, base=rope_theta)`.
            rope: RotaryEmbedding::plain(hd, false, a.rope_theta),
            n_heads: heads,
            n_kv_heads: kv,
            head_dim: hd,
            // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
            scale: (hd as f64).powf(-0.5) as f32,
            window: swa.then_some(a.sliding_window),
        })
    }

    /// Python: `_custom_convolution`: `u_prev * w0 + u * w1`, `u` `[B, H, L, D]`, `u_prev` the
    /// positions shifted by one with `state` (the previous call's last, or zeros) first.
    fn convolve(&self, u: &Array, weights: &Array, state: &Array) -> Result<Array> {
        let w = ops::reshape(weights, &[1, self.n_kv_heads, 2, 1, 1])?;
        let w0 = w.index((.., .., 0))?;
        let w1 = w.index((.., .., 1))?;
        let len = u.shape()[2];
        let previous = if len > 1 {
            ops::concatenate(&[state.clone(), u.index((.., .., ..len - 1))?], 2)?
        } else {
            state.clone()
        };
        ops::add(&ops::multiply(&previous, &w0)?, &ops::multiply(u, &w1)?)
    }

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let rows = ctx.rows;
        let (state, kv_cache) = match cache {
            None => (None, None),
            Some(LayerCache::List(caches)) if caches.len() == 2 => {
                let (first, second) = caches.split_at_mut(1);
                match &mut first[0] {
                    LayerCache::Arrays(a) => (Some(a), Some(&mut second[0])),
                    other => {
                        return Err(wrong_input(&format!(
                            "a baichuan_m1 layer's CacheList holds a {} where its ArraysCache goes",
                            other.class_name()
                        )))
                    }
                }
            }
            Some(other) => {
                return Err(wrong_input(&format!(
                    "a baichuan_m1 layer needs a CacheList of an ArraysCache and a key/value \
                     cache, got a {}",
                    other.class_name()
                )))
            }
        };
        let (d, kv_dim) = (
            self.n_heads * self.head_dim,
            self.n_kv_heads * self.head_dim,
        );
        let parts = ops::split(&self.w_pack.forward(x)?, &[d, d + kv_dim][..], -1)?;
        let q = heads(&parts[0], rows, self.n_heads, None)?;
        let k = heads(&parts[1], rows, self.n_kv_heads, None)?;
        let v = heads(&parts[2], rows, self.n_kv_heads, None)?;
        let (last_k, last_v) = match &state {
            Some(s) => (s[0].clone(), s[1].clone()),
            None => {
                let zeros =
                    ops::zeros(&[rows.batch, self.n_kv_heads, 1, self.head_dim], k.dtype())?;
                (zeros.clone(), zeros)
            }
        };
        let k_conv = self.convolve(&k, &self.conv_k, &last_k)?;
        let v_conv = self.convolve(&v, &self.conv_v, &last_v)?;
        if let Some(s) = state {
            // Each sequence's last real key and value: a right-padded batch's prefill keeps
            // the position before its padding (mlx_lm keeps the padding's), and a sequence
            // with no real position in this call keeps its state.
            let (new_k, new_v) = match s.lengths.clone() {
                Some(lengths) => {
                    let len = rows.len;
                    let at = ops::clip(&ops::subtract(&lengths, 1)?, 0, len - 1)?;
                    let at = ops::reshape(&at, &[-1, 1, 1, 1])?;
                    let real = ops::reshape(&ops::greater(&lengths, 0)?, &[-1, 1, 1, 1])?;
                    let pick = |u: &Array, old: &Array| -> Result<Array> {
                        let last = ops::take_along_axis(u, &at, 2)?;
                        ops::where_(&real, &last, old)
                    };
                    (pick(&k, &last_k)?, pick(&v, &last_v)?)
                }
                None => {
                    let len = rows.len;
                    (k.index((.., .., len - 1..))?, v.index((.., .., len - 1..))?)
                }
            };
            s[0] = new_k;
            s[1] = new_v;
            s.advance(rows.len)?;
        }
        let out = attend(
            q,
            k_conv,
            v_conv,
            Some(&self.rope),
            self.scale,
            ctx.masks.for_window(self.window),
            self.window,
            ctx.kernels.fused_decode_attention,
            kv_cache,
        )?;
        self.o_proj.forward(&merge_heads(&out)?)
    }

    /// Python: `CacheList(ArraysCache(size=2), RotatingKVCache(sliding_window) or KVCache())`,
    /// the arrays allocated up front as zeros (the state a fresh sequence starts from).
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        let (kv, hd) = (self.n_kv_heads, self.head_dim);
        let zeros = ops::zeros(&[batch, kv, 1, hd], dtype)?;
        let keys_values = LayerCache::attention(batch, kv, hd, self.window, capacity, dtype)?;
        Ok(LayerCache::List(vec![
            LayerCache::Arrays(ArraysCache::new(vec![zeros.clone(), zeros])),
            keys_values,
        ]))
    }
}

/// Python: baichuan_m1's `DecoderLayer`.
#[derive(Debug, Clone, TreeNode)]
pub struct BaichuanM1Layer {
    pub self_attn: BaichuanM1Attention,
    pub mlp: Mlp,
    pub input_layernorm: RMSNorm,
    pub post_attention_layernorm: RMSNorm,
}

impl Layer for BaichuanM1Layer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let r = self
            .self_attn
            .forward(&self.input_layernorm.forward(x)?, ctx, cache)?;
        let h = ops::add(x, &r)?;
        let r = self
            .mlp
            .forward(&self.post_attention_layernorm.forward(&h)?)?;
        ops::add(&h, &r)
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        self.self_attn.make_cache(batch, capacity, dtype)
    }

    fn window(&self) -> Option<i32> {
        self.self_attn.window
    }
}

/// Python: `BaichuanModel`.
pub type BaichuanM1Model = LayerStack<BaichuanM1Layer>;

/// Python: `mlx_lm.models.baichuan_m1.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct BaichuanM1 {
    pub model: BaichuanM1Model,
    pub lm_head: MaybeQuantizedLinear,
}

impl BaichuanM1 {
    /// Python: `Model.sanitize`: a float `lm_head` (a checkpoint without `lm_head.scales`) has
    /// each row divided by its 2-norm (plus 1e-7), computed in float32 and cast back
    /// (Baichuan's `NormHead`, which normalizes at every call; mlx_lm once, at load).
    pub fn sanitize(ck: &mut Checkpoint) -> crate::Result<()> {
        let w = ck.weights_mut();
        if w.contains("lm_head.scales") {
            return Ok(());
        }
        w.map(|k, v| {
            if k != "lm_head.weight" {
                return Ok(None);
            }
            let f = v.astype(Dtype::Float32)?;
            let norm = linalg::norm(&f, None, &[-1][..], true)?;
            ops::divide(&f, &ops::add(&norm, 1e-7f32)?)?
                .astype(v.dtype())
                .map(Some)
        })
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<BaichuanM1> {
        let a = BaichuanM1Args::from_config(config)?;
        Self::sanitize(ck)?;
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            layers.push(BaichuanM1Layer {
                self_attn: BaichuanM1Attention::load(ck, &p("self_attn"), i, &a)?,
                mlp: Mlp::load(ck, &p("mlp"), d, a.intermediate_size, false)?,
                input_layernorm: ck.rms_norm(&p("input_layernorm"), d, eps)?,
                post_attention_layernorm: ck.rms_norm(&p("post_attention_layernorm"), d, eps)?,
            });
        }
        Ok(BaichuanM1 {
            model: Stack::load_around(
                ck,
                "model",
                (a.vocab_size, d),
                layers,
                |ck, path| ck.rms_norm(path, d, eps),
                options.kernels,
            )?,
            lm_head: ck.linear("lm_head", d, a.vocab_size, false)?,
        })
    }
}

crate::models::base::stack_language_model!(BaichuanM1, model, "baichuan_m1", |m| Some(&m.lm_head));
