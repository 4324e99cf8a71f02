//! The linear attention of the bailing families (Python: `LinearAttention` and
//! `recurrent_gla` of `mlx_lm.models.bailing_moe_linear`, the same class in bailing_hybrid):
//! fused `query_key_value`, optional per-head RMSNorm of queries and keys, RoPE at the
//! model's position, then a gated linear recurrence per head whose decay is a constant per
//! head and layer (ALiBi-like slopes), the output normed in groups (`g_norm`) and gated by
//! `sigmoid(g_proj(x))` before `dense`.
//!
//! mlx_lm's two copies run the recurrence differently ([`GlaForm`]), and this block runs
//! each op for op, so its logits are mlx_lm's bits. bailing_moe_linear's runs token by token,
//! in the model's dtype, also over a prompt; mlx_lm starts its state as `None` and takes the
//! first update as it is; here it starts as zeros, and `0 * decay + update` is the update
//! exactly. mlx_lm ignores the mask there, so in a right-padded batch the padding after a
//! prompt decays and enters its state; here padding leaves the state as it was (the cache's
//! `make_mask`), so each row of a batch is that prompt run alone. bailing_hybrid's holds the
//! state in float32 and runs a prompt in chunks of up to 128 positions (one decay-weighted
//! causal attention per chunk plus one state carry), its mask counting only valid positions:
//! there mlx_lm itself keeps the padding out. The state `h` `[B, H, D, D]` is the one slot of
//! the layer's [`ArraysCache`].

use mlx_nn::Frozen;
use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::ops::{self, CumsumOptions, Ellipsis};
use mlx_rs::{fast, Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::blocks::fused::split_qkv;
use crate::blocks::rope::RotaryEmbedding;
use crate::blocks::rows::{arrays_entry, merge_heads, Rows};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::Checkpoint;

/// Python: bailing's `GroupRMSNorm`: RMSNorm (without weight) over each of `groups` equal
/// slices of the features, then one weight over all of them.
#[derive(Debug, Clone, TreeNode)]
pub struct GroupRmsNorm {
    pub weight: Array,
    #[tree(static)]
    pub groups: i32,
    #[tree(static)]
    pub eps: f32,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl Forward for GroupRmsNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        let y = ops::unflatten(x, -1, &[self.groups, -1])?;
        let y = fast::rms_norm(&y, None, self.eps)?;
        ops::multiply(&self.weight, &ops::flatten(&y, -2, -1)?)
    }
}

/// How the recurrence runs: where mlx_lm's two copies of `recurrent_gla` differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, StaticData)]
pub enum GlaForm {
    /// bailing_moe_linear.py: token by token in the activations' dtype; the slopes' depth
    /// factor counts from the layer before (`max(0, layer_idx - 1)`).
    PerToken,
    /// bailing_hybrid.py: a float32 state, a prompt in chunks of up to 128 positions, a
    /// decode step as its compiled `_recurrent_gla_step`; the depth factor counts from the
    /// layer itself.
    Chunked,
}

/// What a [`LinearAttention`] layer is, read from the config by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearAttentionConfig {
    pub hidden_size: i32,
    /// Heads of `head_dim` features (queries, keys and values alike).
    pub num_heads: i32,
    /// bailing_moe_linear: `hidden_size / num_heads`; bailing_hybrid: the config's
    /// `head_dim`, that when absent.
    pub head_dim: i32,
    pub num_hidden_layers: i32,
    pub qkv_bias: bool,
    /// The bias of `dense` (the config's `use_bias`).
    pub o_bias: bool,
    /// Per-head RMSNorm of queries and keys with this eps.
    pub qk_norm: Option<f32>,
    pub rms_norm_eps: f32,
    pub group_norm_size: i32,
    pub rope: RotaryEmbedding,
    pub form: GlaForm,
}

/// Python: bailing's `LinearAttention`.
#[derive(Debug, Clone, TreeNode)]
pub struct LinearAttention {
    pub query_key_value: MaybeQuantizedLinear,
    pub dense: MaybeQuantizedLinear,
    pub g_proj: MaybeQuantizedLinear,
    pub g_norm: GroupRmsNorm,
    pub query_layernorm: Option<RMSNorm>,
    pub key_layernorm: Option<RMSNorm>,
    pub rope: RotaryEmbedding,
    /// Each head's log decay (Python: `_slope`, a float32 constant, not a parameter).
    #[tree(static)]
    pub slope: Vec<f32>,
    #[tree(static)]
    pub num_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
    #[tree(static)]
    pub form: GlaForm,
}

/// Python: `LinearAttention._get_slopes`: ALiBi's slopes for `n` heads (Python floats,
/// then float32), negated and scaled down by the depth `layer_pos` (the layer's index, or
/// the one before it: [`GlaForm`]).
pub fn slopes(n: i32, num_hidden_layers: i32, layer_pos: i32) -> Vec<f32> {
    // Python: `2 ** (-(2 ** -(log2(n) - 3)) * (i + 1))`, one power of a product.
    let power_of_2_exact = |n: i32| -> Vec<f64> {
        let e = -(2f64.powf(-((n as f64).log2() - 3.0)));
        (0..n).map(|i| 2f64.powf(e * (i + 1) as f64)).collect()
    };
    let slopes: Vec<f64> = if (n as f64).log2().fract() == 0.0 {
        power_of_2_exact(n)
    } else {
        let p = 2f64.powf((n as f64).log2().floor()) as i32;
        let mut s = power_of_2_exact(p);
        s.extend(
            power_of_2_exact(2 * p)
                .into_iter()
                .step_by(2)
                .take((n - p) as usize),
        );
        s
    };
    let denom = (num_hidden_layers - 1).max(1) as f64;
    let layer_pos = layer_pos as f64;
    // A Python float, rounded once to float32 where it multiplies the float32 slopes.
    let layer_factor = (1.0 - (layer_pos / denom) + 1e-5) as f32;
    slopes
        .into_iter()
        .map(|s| -(s as f32) * layer_factor)
        .collect()
}

impl LinearAttention {
    /// Takes the layer's tensors under `path` (`model.layers.0.attention`).
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        layer_idx: i32,
        a: &LinearAttentionConfig,
    ) -> crate::Result<LinearAttention> {
        let (d, h, hd) = (a.hidden_size, a.num_heads, a.head_dim);
        let p = |name: &str| format!("{path}.{name}");
        let norm = |ck: &mut Checkpoint, name: &str| -> crate::Result<Option<RMSNorm>> {
            a.qk_norm
                .map(|eps| ck.rms_norm(&p(name), hd, eps))
                .transpose()
        };
        Ok(LinearAttention {
            query_key_value: ck.linear(&p("query_key_value"), d, 3 * h * hd, a.qkv_bias)?,
            dense: ck.linear(&p("dense"), h * hd, d, a.o_bias)?,
            g_proj: ck.linear(&p("g_proj"), d, h * hd, false)?,
            g_norm: GroupRmsNorm {
                frozen: Frozen::default(),
                weight: ck.array(&p("g_norm.weight"), &[h * hd])?,
                groups: a.group_norm_size,
                eps: a.rms_norm_eps,
            },
            query_layernorm: norm(ck, "query_layernorm")?,
            key_layernorm: norm(ck, "key_layernorm")?,
            rope: a.rope.clone(),
            slope: slopes(
                h,
                a.num_hidden_layers,
                match a.form {
                    GlaForm::PerToken => (layer_idx - 1).max(0),
                    GlaForm::Chunked => layer_idx,
                },
            ),
            num_heads: h,
            head_dim: hd,
            // Python: head_dim**-0.5, a Python float, rounded to the activations' dtype.
            scale: (hd as f64).powf(-0.5) as f32,
            form: a.form,
        })
    }

    /// Rows `x` `[B * L, hidden]` (already normed) to rows; `rope_offset` is the model's
    /// position (Python: the attention layers' cache offset; 0 without a cache).
    pub fn forward(
        &self,
        x: &Array,
        rows: Rows,
        rope_offset: Option<&Array>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let cache = arrays_entry(cache, "a linear-attention layer")?;
        let (h, hd) = (self.num_heads, self.head_dim);
        let (mut q, mut k, v) = split_qkv(&self.query_key_value.forward(x)?, rows, h, h, hd)?;
        if let (Some(qn), Some(kn)) = (&self.query_layernorm, &self.key_layernorm) {
            q = qn.forward(&q)?;
            k = kn.forward(&k)?;
        }
        let (q, k) = match rope_offset {
            Some(o) => (self.rope.forward(&q, o)?, self.rope.forward(&k, o)?),
            None => (self.rope.forward(&q, 0)?, self.rope.forward(&k, 0)?),
        };
        let mask = match &cache {
            Some(c) => c.make_mask(rows.len)?,
            None => None,
        };
        let state = match &cache {
            Some(c) => c[0].clone(),
            None => ops::zeros(&[rows.batch, h, hd, hd], self.state_dtype(q.dtype()))?,
        };
        let (out, state) = match self.form {
            GlaForm::PerToken => self.recurrence(&q, &k, &v, state, mask.as_ref())?,
            GlaForm::Chunked => {
                let g = Array::from_slice(&self.slope, &[self.num_heads])?;
                recurrent_gla(&q, &k, &v, &g, self.scale, state, mask.as_ref())?
            }
        };
        if let Some(c) = cache {
            c[0] = state;
            c.advance(rows.len)?;
        }
        let out = merge_heads(&out)?;
        let gate = ops::sigmoid(&self.g_proj.forward(x)?)?;
        self.dense
            .forward(&ops::multiply(&self.g_norm.forward(&out)?, &gate)?)
    }

    /// Python: `recurrent_gla`: per position `h = h * exp(g) + k^T v`, `y = (q * scale) @ h`,
    /// in the activations' dtype. Where `mask` (`bool [B, L]`) is false (a right-padded
    /// batch's padding) the state stays as it was.
    fn recurrence(
        &self,
        q: &Array,
        k: &Array,
        v: &Array,
        mut h: Array,
        mask: Option<&Array>,
    ) -> Result<(Array, Array)> {
        let len = q.shape()[2];
        let g = Array::from_slice(&self.slope, &[self.num_heads])?;
        let exp_g = ops::reshape(&ops::exp(&g)?, &[-1, 1, 1])?.astype(q.dtype())?;
        let q = ops::multiply(q, self.scale)?;
        let mut outputs = Vec::with_capacity(len as usize);
        for t in 0..len {
            let at = |x: &Array| x.index((.., .., t..t + 1));
            let (q_t, k_t, v_t) = (at(&q)?, at(k)?, at(v)?);
            let h_up = ops::matmul(&k_t.swapaxes(-1, -2)?, &v_t)?;
            let new_h = ops::add(&ops::multiply(&h, &exp_g)?, &h_up)?;
            outputs.push(ops::matmul(&q_t, &new_h)?);
            h = match mask {
                Some(m) => {
                    let keep = ops::reshape(&m.index((.., t))?, &[-1, 1, 1, 1])?;
                    ops::where_(&keep, &new_h, &h)?
                }
                None => new_h,
            };
        }
        Ok((ops::concatenate(&outputs, 2)?, h))
    }

    /// The state's dtype: the model's, or float32 in the chunked form.
    fn state_dtype(&self, dtype: Dtype) -> Dtype {
        match self.form {
            GlaForm::PerToken => dtype,
            GlaForm::Chunked => Dtype::Float32,
        }
    }

    /// The recurrent state, zeros in the model's dtype (float32 in the chunked form) (Python:
    /// `ArraysCache(size=1)`, whose slot the layer fills on its first call).
    pub fn make_cache(&self, batch: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Arrays(ArraysCache::new(vec![ops::zeros(
            &[batch, self.num_heads, self.head_dim, self.head_dim],
            self.state_dtype(dtype),
        )?])))
    }
}

/// Python: bailing_hybrid's `recurrent_gla(q, k, v, g, scale=, h=, mask=)`: the recurrence
/// `h_t = h_{t-1} exp(g) + k_t^T v_t`, `y_t = (q_t scale) h_t` with a float32 state `h`
/// `[B, H, K, V]` and the per-head log decays `g` `[H]` (float32). One position is its
/// compiled `_recurrent_gla_step`; more run in chunks of `C = min(L, 128)`: within a chunk
/// a causal attention whose weights `exp(g (r_i - r_j))` are split over queries and keys
/// about the chunk's centre, across chunks the state carried by matmuls. `r` counts the valid
/// positions (`mask`, `bool [B, L]`; all without one), so padding neither enters nor decays
/// the state. The output is in the queries' dtype.
pub fn recurrent_gla(
    q: &Array,
    k: &Array,
    v: &Array,
    g: &Array,
    scale: f32,
    h: Array,
    mask: Option<&Array>,
) -> Result<(Array, Array)> {
    let shape = q.shape();
    let (heads, len) = (shape[1], shape[2]);
    let out_dtype = q.dtype();
    if len == 1 {
        let exp_g = ops::reshape(&ops::exp(g)?, &[-1, 1, 1])?.astype(h.dtype())?;
        let q = ops::multiply(q, scale)?;
        let new_h = ops::add(
            &ops::multiply(&h, &exp_g)?,
            &ops::matmul(&k.swapaxes(-1, -2)?, v)?,
        )?;
        let y = ops::matmul(&q, &new_h)?.astype(out_dtype)?;
        return match mask {
            None => Ok((y, new_h)),
            Some(m) => {
                let keep = ops::reshape(&m.index((.., 0))?, &[-1, 1, 1, 1])?;
                let zero = Array::from_scalar(0.0f32).astype(out_dtype)?;
                Ok((
                    ops::where_(&keep, &y, &zero)?,
                    ops::where_(&keep, &new_h, &h)?,
                ))
            }
        };
    }
    // Python: "exp(|g| C / 2) must stay in float32 and |g| < 1, so 176 is the ceiling".
    let c = len.min(128);
    let n = (len + c - 1) / c;
    let pad = n * c - len;
    let m = match mask {
        None => ops::expand_dims(
            &ops::less(&ops::arange(0, n * c, 1, Dtype::Int32)?, len)?.astype(Dtype::Float32)?,
            0,
        )?,
        Some(m) => ops::pad(&m.astype(Dtype::Float32)?, vec![(0, 0), (0, pad)], None, 0)?,
    };
    let padded = |x: &Array| -> Result<Array> {
        let x = if pad > 0 {
            ops::pad(x, vec![(0, 0), (0, 0), (0, pad), (0, 0)], None, 0)?
        } else {
            x.clone()
        };
        ops::unflatten(&x, 2, &[n, c])
    };
    let (q, k) = (padded(q)?, padded(k)?);
    let v = padded(v)?.astype(Dtype::Float32)?;
    let m = ops::expand_dims(&ops::unflatten(&m, 1, &[n, c])?, 1)?;
    let rank = ops::cumsum(&m, -1, CumsumOptions::default())?;
    let total = rank.index((Ellipsis, c - 1..))?;
    let gh = ops::reshape(g, &[1, heads, 1, 1])?;
    // Python: `0.5 * C`, exact in float32.
    let centre = 0.5 * c as f32;
    let e = ops::multiply(&gh, &ops::subtract(&rank, centre)?)?;
    let eq = ops::multiply(&ops::multiply(&ops::exp(&e)?, scale)?, &m)?;
    let ek = ops::multiply(&ops::exp(&ops::negative(&e)?)?, &m)?;
    let q = ops::multiply(&q, &ops::expand_dims(&eq, -1)?)?;
    let k = ops::multiply(&k, &ops::expand_dims(&ek, -1)?)?;
    // The strict upper triangle overflows to +-inf; `tril` selects rather than multiplies.
    let kt = k.swapaxes(-1, -2)?;
    let scores = ops::tril(&ops::matmul(&q, &kt)?, 0)?;
    let intra = ops::matmul(&scores, &v)?;
    let carry = ops::matmul(&kt, &v)?;
    let decay = ops::expand_dims(
        &ops::exp(&ops::multiply(&gh, &ops::subtract(&total, centre)?)?)?,
        -1,
    )?;
    let state_decay = ops::expand_dims(&ops::exp(&ops::multiply(&gh, &total)?)?, -1)?;
    let mut h = h;
    let mut cross = Vec::with_capacity(n as usize);
    for i in 0..n {
        let at = |x: &Array| x.index((.., .., i));
        cross.push(ops::matmul(&at(&q)?, &h)?);
        h = ops::add(
            &ops::multiply(&at(&state_decay)?, &h)?,
            &ops::multiply(&at(&carry)?, &at(&decay)?)?,
        )?;
    }
    let cross = ops::stack(&cross, 2)?;
    let cross_scale = ops::reshape(&ops::exp(&ops::multiply(g, centre)?)?, &[1, heads, 1, 1, 1])?;
    let y = ops::add(&intra, &ops::multiply(&cross, &cross_scale)?)?.astype(out_dtype)?;
    let y = ops::flatten(&y, 2, 3)?.index((.., .., ..len))?;
    Ok((y, h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlx_rs::random;

    fn normal(shape: &[i32], seed: u64) -> Array {
        let key = random::key(seed).unwrap();
        let x = random::normal(shape, random::NormalOptions::default(), &key).unwrap();
        ops::multiply(&x, 0.3f32).unwrap()
    }

    fn max_diff(a: &Array, b: &Array) -> f32 {
        let d = ops::abs(&ops::subtract(a, b).unwrap()).unwrap();
        ops::max(&d, None, false).unwrap().item::<f32>().unwrap()
    }

    /// The chunked prompt (300 positions: chunks of 128, the last padded) equals the
    /// recurrence run one position at a time, outputs and final state; a wrong carry or a
    /// padded position counted in the ranks moves them by far more than float32 rounding.
    #[test]
    fn chunks_equal_the_step_by_step_recurrence() {
        let (b, h, l, d) = (1, 2, 300, 8);
        let (q, k, v) = (
            normal(&[b, h, l, d], 1),
            normal(&[b, h, l, d], 2),
            normal(&[b, h, l, d], 3),
        );
        let g = Array::from_slice(&slopes(2, 4, 1), &[2]).unwrap();
        let h0 = normal(&[b, h, d, d], 4);
        let (y, state) = recurrent_gla(&q, &k, &v, &g, 0.35, h0.clone(), None).unwrap();
        let mut hs = h0;
        let mut ys = Vec::new();
        for t in 0..l {
            let at = |x: &Array| x.index((.., .., t..t + 1)).unwrap();
            let (y, next) = recurrent_gla(&at(&q), &at(&k), &at(&v), &g, 0.35, hs, None).unwrap();
            ys.push(y);
            hs = next;
        }
        let steps = ops::concatenate(&ys, 2).unwrap();
        assert_eq!(y.shape(), steps.shape());
        // The chunked form sums each chunk's positions in one matmul, the step form one
        // position at a time: float32 rounding of another order, over 300 positions of
        // unit-variance inputs. Measured (CPU, wheel-linked): outputs 3.9e-6 apart, the
        // state 1.2e-5 (it accumulates all 300); the bounds leave room for other summation
        // orders (a GPU's) and still fail a wrong decay or a skipped position (order 1).
        // A CUDA GPU multiplies the chunks' float32 matrices in TF32 (10 bits of mantissa,
        // MLX_ENABLE_TF32 on by default) and a step's single row in float32: the outputs
        // measured 3.9e-4 apart on an H200; the state's bound keeps the CPU's ratio of the
        // two (three times the outputs'), its value there not yet printed.
        let tf32 = crate::kernels::on_cuda().unwrap_or(false)
            && std::env::var("MLX_ENABLE_TF32").map_or(true, |v| v.trim() != "0");
        let (outputs, states) = if tf32 { (4e-4, 1.2e-3) } else { (1e-4, 1e-3) };
        let (dy, ds) = (max_diff(&y, &steps), max_diff(&state, &hs));
        eprintln!("chunks against steps: outputs {dy}, state {ds}");
        assert!(dy < outputs, "{dy}");
        assert!(ds < states, "{ds}");
    }

    /// A masked position neither enters nor decays the state: a prompt with masked positions
    /// after it (right padding) leaves the state of the prompt alone, chunked and stepwise.
    #[test]
    fn masked_positions_leave_the_state_alone() {
        let (b, h, d) = (1, 2, 8);
        let (q, k, v) = (
            normal(&[b, h, 20, d], 5),
            normal(&[b, h, 20, d], 6),
            normal(&[b, h, 20, d], 7),
        );
        let g = Array::from_slice(&slopes(2, 4, 0), &[2]).unwrap();
        let h0 = ops::zeros(&[b, h, d, d], Dtype::Float32).unwrap();
        let first = |x: &Array| x.index((.., .., ..13)).unwrap();
        let (y_alone, alone) = recurrent_gla(
            &first(&q),
            &first(&k),
            &first(&v),
            &g,
            0.35,
            h0.clone(),
            None,
        )
        .unwrap();
        let valid: Vec<bool> = (0..20).map(|t| t < 13).collect();
        let mask = Array::from_slice(&valid, &[1, 20]).unwrap();
        let (y, padded) = recurrent_gla(&q, &k, &v, &g, 0.35, h0, Some(&mask)).unwrap();
        assert!(
            max_diff(&padded, &alone) < 1e-5,
            "{}",
            max_diff(&padded, &alone)
        );
        assert!(max_diff(&first(&y), &y_alone) < 1e-5);
        // One masked step keeps the state and writes zeros.
        let last = |x: &Array| x.index((.., .., 19..20)).unwrap();
        let off = Array::from_slice(&[false], &[1, 1]).unwrap();
        let (y, kept) = recurrent_gla(
            &last(&q),
            &last(&k),
            &last(&v),
            &g,
            0.35,
            alone.clone(),
            Some(&off),
        )
        .unwrap();
        assert_eq!(max_diff(&kept, &alone), 0.0);
        let largest = ops::max(&ops::abs(&y).unwrap(), None, false).unwrap();
        assert_eq!(largest.item::<f32>().unwrap(), 0.0);
    }

    /// ALiBi's slopes: for 8 heads `2^-1 ... 2^-8`; for 6 heads the 4-head slopes, then every
    /// other of the 8-head ones; the depth factor falls from one at position 0.
    #[test]
    fn slopes_are_alibi_s_scaled_by_depth() {
        let s = slopes(8, 5, 0);
        let factor = (1.0f64 + 1e-5) as f32;
        for (i, s) in s.iter().enumerate() {
            assert_eq!(*s, -(0.5f32.powi(i as i32 + 1)) * factor);
        }
        let six = slopes(6, 2, 0);
        let expected = [0.25f32, 0.0625, 0.015625, 0.00390625, 0.5, 0.125];
        for (s, e) in six.iter().zip(expected) {
            assert_eq!(*s, -e * factor);
        }
        // Position 3 of five layers: 1 - 3/4 + 1e-5.
        let last = slopes(8, 5, 3);
        assert_eq!(last[0], -0.5 * ((1.0 - 0.75 + 1e-5) as f32));
    }
}
