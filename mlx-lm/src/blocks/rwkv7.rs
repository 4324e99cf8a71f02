//! RWKV-7 "Goose" (Python: `mlx_lm.models.rwkv7`): the time mix (the WKV7 recurrence with
//! its LoRA-made decay, in-context learning rate, value residual and gate) and the channel
//! mix, each fed the previous position through a token shift.
//!
//! ```text
//! xx = shift(x) - x                         # shift: the state's last input, then x[:-1]
//! x_* = x + xx * mix_*                      # r, w, k, v, a, g
//! r, k, v = r_proj(x_r), k_proj(x_k), v_proj(x_v)
//! v += (v_first - v) * σ(v_lora(x_v))       # layers after the first; the first sets v_first
//! w = exp(-0.606531 σ(w_lora(x_w)))         # per channel, in float32, back to the dtype
//! kk = l2_norm(k * k_k);  iclr = σ(a_lora(x_a))
//! k = k * (1 + (iclr - 1) k_a);  a = -kk;  b = kk * iclr
//! S = S diag(w) + v kᵀ + (S a) bᵀ;  y = S r  # per head, per position (`_wkv7_step_ops`)
//! out = o_proj((g_norm(y) + sum(r k r_k) v) * g_lora(x_g))
//! channel mix: value(relu²(key(x + xx * x_k)))
//! ```
//!
//! mlx_lm runs the recurrence one position at a time on every device but Metal (where a
//! kernel takes the whole sequence), and so does [`wkv7`]: the state after each position is
//! a matrix product of the one before, `diag(w) + a bᵀ` a different matrix at every
//! position, so no cumulative sum or chunked product of plain ops yields mlx_lm's values (a
//! chunked form, as flash-linear-attention's, reorders every sum). A prefill of `T` tokens is
//! therefore `T` calls of the compiled step per layer; a kernel (the notes' K4) is where a
//! faster prefill belongs, behind [`wkv7`].
//!
//! The state stays in the model's dtype, as mlx_lm keeps it (flash-linear-attention keeps
//! it in float32; the same numbers for a float32 model). Unlike mlx_lm, a right-padded
//! batch's padding never reaches the state: the token shifts keep each sequence's last real
//! input and the recurrence holds a sequence's state still over its padding.

use mlx_nn::Frozen;
use std::sync::OnceLock;

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::compile::CompiledFn;
use mlx_rs::{fast, linalg, ops, Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::blocks::conv::keep_last;
use crate::blocks::mlp::relu2;
use crate::cache::ArraysCache;
use crate::checkpoint::Checkpoint;

/// The slot of the time mix's last input (Python: `cache[0]`), `[batch, 1, hidden]`.
pub const SHIFT_ATTN: usize = 0;
/// The slot of the WKV state (Python: `cache[1]`), `[batch, heads, head_dim (v),
/// head_dim (k)]`, in the model's dtype.
pub const WKV: usize = 1;
/// The slot of the channel mix's last input (Python: `cache[2]`), `[batch, 1, hidden]`.
pub const SHIFT_FFN: usize = 2;

/// mlx_lm's decay constant (flash-linear-attention's is `exp(-1/2)` = 0.6065306597..., a
/// relative 3.4e-7 away: mlx_lm's is kept, for its bits).
const DECAY_SCALE: f64 = -0.606531;

/// Python: `addcmul(x, y, z)`, `x + y * z`, compiled shapeless as mlx_lm compiles it (on a
/// GPU the fused kernel may round the product and the sum once).
pub fn addcmul(x: &Array, y: &Array, z: &Array) -> Result<Array> {
    static SLOT: OnceLock<CompiledFn> = OnceLock::new();
    let out =
        SLOT.get_or_init(|| CompiledFn::new(true))
            .call_with_refs(&[x, y, z], &[], &|xs| {
                Ok(vec![ops::add(&xs[0], &ops::multiply(&xs[1], &xs[2])?)?])
            })?;
    Ok(out.into_iter().next().expect("addcmul returns one array"))
}

/// Python: rwkv7's `l2_norm(x)`, `x / maximum(norm(x, axis=-1), 1e-7)`, compiled shapeless.
pub fn l2_norm(x: &Array) -> Result<Array> {
    static SLOT: OnceLock<CompiledFn> = OnceLock::new();
    let out = SLOT
        .get_or_init(|| CompiledFn::new(true))
        .call_with_refs(&[x], &[], &|xs| {
            let norm = linalg::norm(&xs[0], None, -1, true)?;
            Ok(vec![ops::divide(&xs[0], &ops::maximum(&norm, 1e-7)?)?])
        })?;
    Ok(out.into_iter().next().expect("l2_norm returns one array"))
}

/// Python: `_wkv7_step_ops` (`@mx.compile`, shapes part of the trace), one position of the
/// recurrence for `r`, `w`, `k`, `v`, `a`, `b` `[B, H, P]` and `state` `[B, H, P, P]`: the
/// output `[B, H, P, 1]` and the new state.
pub fn wkv7_step(
    r: &Array,
    w: &Array,
    k: &Array,
    v: &Array,
    a: &Array,
    b: &Array,
    state: &Array,
) -> Result<(Array, Array)> {
    static SLOT: OnceLock<CompiledFn> = OnceLock::new();
    let out = SLOT.get_or_init(|| CompiledFn::new(false)).call_with_refs(
        &[r, w, k, v, a, b, state],
        &[],
        &|xs| {
            let (r, w, k, v, a, b, state) =
                (&xs[0], &xs[1], &xs[2], &xs[3], &xs[4], &xs[5], &xs[6]);
            let sab = ops::matmul(
                &ops::matmul(state, &ops::expand_dims(a, -1)?)?,
                &ops::expand_dims(b, -2)?,
            )?;
            let state = ops::add(
                &ops::add(
                    &ops::multiply(state, &ops::expand_dims(w, 2)?)?,
                    &ops::matmul(&ops::expand_dims(v, -1)?, &ops::expand_dims(k, -2)?)?,
                )?,
                &sab,
            )?;
            let y = ops::matmul(&state, &ops::expand_dims(r, -1)?)?;
            Ok(vec![y, state])
        },
    )?;
    let [y, state]: [Array; 2] = out
        .try_into()
        .unwrap_or_else(|_| unreachable!("the WKV7 step returns two arrays"));
    Ok((y, state))
}

/// The WKV7 recurrence over `r`, `w`, `k`, `v`, `a`, `b` `[B, T, H, P]` from `state`
/// `[B, H, P, P]` (Python: `Rwkv7TimeMixing._wkv7`'s ops path): `y` `[B, T, H, P, 1]` in
/// `r`'s dtype and the state after the last position. Where `mask` (`bool [B, T]`) is false
/// the position is a right-padded batch's padding and the state does not move.
#[allow(clippy::too_many_arguments)]
pub fn wkv7(
    r: &Array,
    w: &Array,
    k: &Array,
    v: &Array,
    a: &Array,
    b: &Array,
    mut state: Array,
    mask: Option<&Array>,
) -> Result<(Array, Array)> {
    let t_len = r.shape().get(1).copied().unwrap_or(0);
    let mut ys = Vec::with_capacity(t_len as usize);
    for t in 0..t_len {
        let at = |x: &Array| x.index((.., t));
        let (y, new_state) =
            wkv7_step(&at(r)?, &at(w)?, &at(k)?, &at(v)?, &at(a)?, &at(b)?, &state)?;
        state = match mask {
            Some(m) => {
                let keep = ops::reshape(&m.index((.., t))?, &[-1, 1, 1, 1])?;
                ops::where_(&keep, &new_state, &state)?
            }
            None => new_state,
        };
        ys.push(y);
    }
    Ok((ops::stack(&ys, 1)?.astype(r.dtype())?, state))
}

/// Python: `TokenShift`: each position's previous input, `[B, L, D]`: the cache's last
/// input (zeros without a cache), then `x[:, :-1]`.
fn token_shift(x: &Array, state: Option<&Array>) -> Result<Array> {
    let &[batch, len, dims] = x.shape() else {
        return Err(mlx_rs::Error::InvalidArgument(
            "a token shift takes [batch, length, hidden]".into(),
        ));
    };
    let state = match state {
        Some(s) => s.clone(),
        None => ops::zeros(&[batch, 1, dims], x.dtype())?,
    };
    if len == 1 {
        Ok(state)
    } else {
        ops::concatenate(&[state, x.index((.., ..len - 1))?], 1)
    }
}

/// Writes `x`'s last input of each sequence into `cache[slot]` (Python: `cache[j] = x[:,
/// -1:, :]`; with a right-padded batch, each sequence's last real input).
fn keep_last_input(x: &Array, cache: &mut ArraysCache, slot: usize) -> Result<()> {
    let padded = ops::concatenate(&[cache[slot].clone(), x.clone()], 1)?;
    let len = x.shape()[1];
    cache[slot] = keep_last(&padded, cache.lengths.as_ref(), len, 1)?;
    Ok(())
}

/// The activation between a [`Lora`]'s two projections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, StaticData)]
pub enum LoraActivation {
    /// None (`v_lora`, `a_lora`).
    None,
    /// `tanh` (`w_lora`).
    Tanh,
    /// `sigmoid` (`g_lora`).
    Sigmoid,
}

/// The two projections of a [`Lora`] (Python: its `lora` list, whose entry 1 is the
/// activation and has no parameters).
#[derive(Debug, Clone, TreeNode)]
pub struct LoraProjections {
    #[tree(rename = "0")]
    pub down: MaybeQuantizedLinear,
    #[tree(rename = "2")]
    pub up: MaybeQuantizedLinear,
}

/// Python: rwkv7's `LoRA`: `lora[2](activation(lora[0](x)))`.
#[derive(Debug, Clone, TreeNode)]
pub struct Lora {
    pub lora: LoraProjections,
    #[tree(static)]
    pub activation: LoraActivation,
}

impl Lora {
    /// The LoRA at `path` (`path.lora.0`, `path.lora.2`), `hidden → rank → hidden`, the up
    /// projection biased when `bias`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        hidden: i32,
        rank: i32,
        bias: bool,
        activation: LoraActivation,
    ) -> crate::Result<Lora> {
        Ok(Lora {
            lora: LoraProjections {
                down: ck.linear(&format!("{path}.lora.0"), hidden, rank, false)?,
                up: ck.linear(&format!("{path}.lora.2"), rank, hidden, bias)?,
            },
            activation,
        })
    }
}

impl Forward for Lora {
    fn forward(&self, x: &Array) -> Result<Array> {
        let h = self.lora.down.forward(x)?;
        let h = match self.activation {
            LoraActivation::None => h,
            LoraActivation::Tanh => ops::tanh(&h)?,
            LoraActivation::Sigmoid => ops::sigmoid(&h)?,
        };
        self.lora.up.forward(&h)
    }
}

/// Python: `LayerNormPerHead`: `weight * layer_norm(x) + bias` over each head of `[..., H,
/// P]`, weight and bias `[H, P]`.
#[derive(Debug, Clone, TreeNode)]
pub struct LayerNormPerHead {
    pub weight: Array,
    pub bias: Array,
    #[tree(static)]
    pub eps: f32,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl Forward for LayerNormPerHead {
    fn forward(&self, x: &Array) -> Result<Array> {
        ops::add(
            &ops::multiply(&self.weight, &fast::layer_norm(x, None, None, self.eps)?)?,
            &self.bias,
        )
    }
}

/// The sizes of an RWKV-7 layer (Python: rwkv7's `ModelArgs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rwkv7Config {
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub head_dim: i32,
    pub a_low_rank_dim: i32,
    pub v_low_rank_dim: i32,
    pub gate_low_rank_dim: i32,
    pub decay_low_rank_dim: i32,
    /// The per-head output norm's eps (mlx_lm: 64e-5; flash-linear-attention: `head_dim *
    /// norm_eps`, the same for the released models' heads of 64).
    pub g_norm_eps: f32,
}

/// Python: `Rwkv7TimeMixing`.
#[derive(Debug, Clone, TreeNode)]
pub struct TimeMix {
    pub x_r: Array,
    pub x_w: Array,
    pub x_k: Array,
    pub x_v: Array,
    pub x_a: Array,
    pub x_g: Array,
    /// `[H, P]`.
    pub k_k: Array,
    pub k_a: Array,
    pub r_k: Array,
    pub r_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub g_norm: LayerNormPerHead,
    pub w_lora: Lora,
    /// Every layer but the first (which makes `v_first` instead of mixing it in).
    pub v_lora: Option<Lora>,
    pub a_lora: Lora,
    pub g_lora: Lora,
    #[tree(static)]
    pub head_dim: i32,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl TimeMix {
    /// Takes the time mix of layer `layer` under `path` (mlx_lm's layout: `k_k`, `k_a`,
    /// `r_k`, `g_norm.*` `[heads, head_dim]`, the token-shift mixes `[1, 1, hidden]`).
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        layer: i32,
        a: &Rwkv7Config,
    ) -> crate::Result<TimeMix> {
        let (d, p) = (a.hidden_size, a.head_dim);
        let h = d / p;
        let n = |name: &str| format!("{path}.{name}");
        let mut mix = |name: &str| ck.array(&n(name), &[1, 1, d]);
        let (x_r, x_w, x_k, x_v, x_a, x_g) = (
            mix("x_r")?,
            mix("x_w")?,
            mix("x_k")?,
            mix("x_v")?,
            mix("x_a")?,
            mix("x_g")?,
        );
        Ok(TimeMix {
            frozen: Frozen::default(),
            x_r,
            x_w,
            x_k,
            x_v,
            x_a,
            x_g,
            k_k: ck.array(&n("k_k"), &[h, p])?,
            k_a: ck.array(&n("k_a"), &[h, p])?,
            r_k: ck.array(&n("r_k"), &[h, p])?,
            r_proj: ck.linear(&n("r_proj"), d, d, false)?,
            k_proj: ck.linear(&n("k_proj"), d, d, false)?,
            v_proj: ck.linear(&n("v_proj"), d, d, false)?,
            o_proj: ck.linear(&n("o_proj"), d, d, false)?,
            g_norm: LayerNormPerHead {
                frozen: Frozen::default(),
                weight: ck.array(&n("g_norm.weight"), &[h, p])?,
                bias: ck.array(&n("g_norm.bias"), &[h, p])?,
                eps: a.g_norm_eps,
            },
            w_lora: Lora::load(
                ck,
                &n("w_lora"),
                d,
                a.decay_low_rank_dim,
                true,
                LoraActivation::Tanh,
            )?,
            v_lora: (layer > 0)
                .then(|| {
                    Lora::load(
                        ck,
                        &n("v_lora"),
                        d,
                        a.v_low_rank_dim,
                        true,
                        LoraActivation::None,
                    )
                })
                .transpose()?,
            a_lora: Lora::load(
                ck,
                &n("a_lora"),
                d,
                a.a_low_rank_dim,
                true,
                LoraActivation::None,
            )?,
            g_lora: Lora::load(
                ck,
                &n("g_lora"),
                d,
                a.gate_low_rank_dim,
                false,
                LoraActivation::Sigmoid,
            )?,
            head_dim: p,
        })
    }

    /// The time mix of `x` `[B, L, D]`, continuing `cache` (slots [`SHIFT_ATTN`], [`WKV`]);
    /// `v_first` is the first layer's values, which this layer makes when it is the first
    /// (`None` in) and mixes in otherwise. Returns `[B, L, D]`.
    pub fn forward(
        &self,
        x: &Array,
        v_first: &mut Option<Array>,
        mask: Option<&Array>,
        cache: Option<&mut ArraysCache>,
    ) -> Result<Array> {
        let &[batch, len, dims] = x.shape() else {
            return Err(mlx_rs::Error::InvalidArgument(
                "the time mix takes [batch, length, hidden]".into(),
            ));
        };
        let heads_shape = [batch, len, dims / self.head_dim, self.head_dim];
        let heads = |y: &Array| ops::reshape(y, &heads_shape);
        let x_prev = token_shift(x, cache.as_deref().map(|c| &c[SHIFT_ATTN]))?;
        let xx = ops::subtract(&x_prev, x)?;
        let xr = addcmul(x, &xx, &self.x_r)?;
        let xw = addcmul(x, &xx, &self.x_w)?;
        let xk = addcmul(x, &xx, &self.x_k)?;
        let xv = addcmul(x, &xx, &self.x_v)?;
        let xa = addcmul(x, &xx, &self.x_a)?;
        let xg = addcmul(x, &xx, &self.x_g)?;

        let key = heads(&self.k_proj.forward(&xk)?)?;
        let mut value = heads(&self.v_proj.forward(&xv)?)?;
        let receptance = heads(&self.r_proj.forward(&xr)?)?;
        let iclr = heads(&ops::sigmoid(&self.a_lora.forward(&xa)?)?)?;
        let gate = self.g_lora.forward(&xg)?;

        match (&self.v_lora, v_first.as_ref()) {
            (None, _) => *v_first = Some(value.clone()),
            (Some(v_lora), Some(first)) => {
                let vv = heads(&ops::sigmoid(&v_lora.forward(&xv)?)?)?;
                value = addcmul(&value, &ops::subtract(first, &value)?, &vv)?;
            }
            (Some(_), None) => {
                return Err(mlx_rs::Error::InvalidArgument(
                    "an RWKV-7 layer after the first needs the first layer's values".into(),
                ))
            }
        }

        let decay = ops::sigmoid(&heads(&self.w_lora.forward(&xw)?)?)?.astype(Dtype::Float32)?;
        let decay = ops::exp(&ops::multiply(&decay, DECAY_SCALE)?)?.astype(receptance.dtype())?;
        let kk = l2_norm(&ops::multiply(&key, &self.k_k)?)?;
        let key = ops::multiply(
            &key,
            &ops::add(&ops::multiply(&ops::subtract(&iclr, 1)?, &self.k_a)?, 1)?,
        )?;
        let a = ops::negative(&kk)?;
        let b = ops::multiply(&kk, &iclr)?;

        let state = match cache.as_deref() {
            Some(c) => c[WKV].clone(),
            None => ops::zeros(
                &[batch, heads_shape[2], self.head_dim, self.head_dim],
                receptance.dtype(),
            )?,
        };
        let (out, state) = wkv7(&receptance, &decay, &key, &value, &a, &b, state, mask)?;
        let out = self.g_norm.forward(&ops::reshape(&out, &heads_shape)?)?;
        let bonus = ops::sum(
            &ops::multiply(&ops::multiply(&receptance, &key)?, &self.r_k)?,
            -1,
            true,
        )?;
        let out = ops::reshape(
            &ops::add(&out, &ops::multiply(&bonus, &value)?)?,
            &[batch, len, dims],
        )?;
        if let Some(c) = cache {
            keep_last_input(x, c, SHIFT_ATTN)?;
            c[WKV] = state;
        }
        self.o_proj.forward(&ops::multiply(&out, &gate)?)
    }

    /// The time mix's slots of the layer's cache, zeros in the model's dtype (Python: the
    /// `None` slots the layer fills on its first call).
    fn make_slots(&self, batch: i32, dtype: Dtype) -> Result<(Array, Array)> {
        let dims = self.x_r.shape().last().copied().unwrap_or(0);
        let heads = dims / self.head_dim;
        Ok((
            ops::zeros(&[batch, 1, dims], dtype)?,
            ops::zeros(&[batch, heads, self.head_dim, self.head_dim], dtype)?,
        ))
    }
}

/// Python: `Rwkv7ChannelMixing`: `value(relu²(key(x + (shift(x) - x) * x_k)))`.
#[derive(Debug, Clone, TreeNode)]
pub struct ChannelMix {
    /// `[hidden]`.
    pub x_k: Array,
    pub key: MaybeQuantizedLinear,
    pub value: MaybeQuantizedLinear,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl ChannelMix {
    /// Takes the channel mix under `path`.
    pub fn load(ck: &mut Checkpoint, path: &str, a: &Rwkv7Config) -> crate::Result<ChannelMix> {
        let (d, i) = (a.hidden_size, a.intermediate_size);
        Ok(ChannelMix {
            frozen: Frozen::default(),
            x_k: ck.array(&format!("{path}.x_k"), &[d])?,
            key: ck.linear(&format!("{path}.key"), d, i, false)?,
            value: ck.linear(&format!("{path}.value"), i, d, false)?,
        })
    }

    /// The channel mix of `x` `[B, L, D]`, continuing `cache`'s slot [`SHIFT_FFN`].
    pub fn forward(&self, x: &Array, cache: Option<&mut ArraysCache>) -> Result<Array> {
        let x_prev = token_shift(x, cache.as_deref().map(|c| &c[SHIFT_FFN]))?;
        let xx = addcmul(x, &ops::subtract(&x_prev, x)?, &self.x_k)?;
        if let Some(c) = cache {
            keep_last_input(x, c, SHIFT_FFN)?;
        }
        self.value.forward(&relu2(&self.key.forward(&xx)?)?)
    }
}

/// The cache of an RWKV-7 layer: the time mix's last input, the WKV state and the channel
/// mix's last input, zeros in the model's dtype (Python: `ArraysCache(size=3)`).
pub fn make_cache(time_mix: &TimeMix, batch: i32, dtype: Dtype) -> Result<ArraysCache> {
    let (shift, state) = time_mix.make_slots(batch, dtype)?;
    Ok(ArraysCache::new(vec![shift.clone(), state, shift]))
}
