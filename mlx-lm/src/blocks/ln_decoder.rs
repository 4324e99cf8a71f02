//! The LayerNorm decoder layer of phi, stablelm, cohere and gpt_neox: a token mixer and an
//! MLP behind one or two LayerNorms, their outputs summed into the residual in parallel or
//! one after the other ([`Residual`]). Each family sums in its own order, kept here exactly,
//! since float addition is not associative.

use mlx_nn::{Forward, LayerNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::{Flattener, StaticData, TreeNode, Unflattener};

use crate::blocks::decoder::{ChannelMixer, TokenMixer};
use crate::blocks::layer::{Layer, LayerContext};
use crate::blocks::rows::wrong_input;
use crate::cache::LayerCache;

/// How a layer adds its mixers' outputs to its input `x` (`ln1`: `input_layernorm`, `ln2`:
/// `post_attention_layernorm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, StaticData)]
pub enum Residual {
    /// `(attn(ln1(x)) + mlp(n(x))) + x`, `n` the layer's second norm where it has one (gpt_neox),
    /// else `ln1` (phi's `PhiDecoderLayer`, cohere's `TransformerBlock`).
    Parallel,
    /// `(x + attn(h)) + mlp(h)`, `h = ln1(x)`: stablelm's `use_parallel_residual`.
    ParallelResidualFirst,
    /// `h = x + attn(ln1(x))`, then `h + mlp(ln2(h))`.
    Sequential,
}

/// Python: phi's `PhiDecoderLayer`, stablelm's `DecoderLayer`, cohere's and gpt_neox's
/// `TransformerBlock`.
#[derive(Debug, Clone)]
pub struct LnDecoderLayer<M, C> {
    /// Under the field the mixer names ([`TokenMixer::key`]: `self_attn`, gpt_neox's
    /// `attention`).
    pub mixer: M,
    pub mlp: C,
    pub input_layernorm: LayerNorm,
    /// `None` in a layer of one norm.
    pub post_attention_layernorm: Option<LayerNorm>,
    pub residual: Residual,
}

impl<M: TokenMixer, C: ChannelMixer> TreeNode for LnDecoderLayer<M, C> {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        f.struct_node("LnDecoderLayer", |f| {
            f.field(self.mixer.key(), &self.mixer);
            f.field(C::KEY, &self.mlp);
            f.field("input_layernorm", &self.input_layernorm);
            f.field("post_attention_layernorm", &self.post_attention_layernorm);
            f.static_field("residual", &self.residual);
        });
    }

    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        u.struct_node("LnDecoderLayer", |u| {
            let key = u.peek_node()?.key().unwrap_or_default();
            if !M::accepts(key) {
                return Err(u.mismatch("a token mixer's field (self_attn, attention)"));
            }
            Ok(LnDecoderLayer {
                mixer: M::unflatten_field(key, u)?,
                mlp: u.field(C::KEY)?,
                input_layernorm: u.field("input_layernorm")?,
                post_attention_layernorm: u.field("post_attention_layernorm")?,
                residual: u.static_field("residual")?,
            })
        })
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        self.mixer.leaves_mut(f)?;
        self.mlp.leaves_mut(f)?;
        self.input_layernorm.leaves_mut(f)?;
        self.post_attention_layernorm.leaves_mut(f)
    }
}

impl<M: TokenMixer, C: ChannelMixer> Layer for LnDecoderLayer<M, C> {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let h = self.input_layernorm.forward(x)?;
        match self.residual {
            Residual::Parallel => {
                let attn = self.mixer.forward(&h, ctx, cache)?;
                let ff = match &self.post_attention_layernorm {
                    Some(norm) => self.mlp.forward(&norm.forward(x)?)?,
                    None => self.mlp.forward(&h)?,
                };
                ops::add(&ops::add(&attn, &ff)?, x)
            }
            Residual::ParallelResidualFirst => {
                let attn = self.mixer.forward(&h, ctx, cache)?;
                ops::add(&ops::add(x, &attn)?, &self.mlp.forward(&h)?)
            }
            Residual::Sequential => {
                // Looked for before the mixer runs, so an `Err` leaves the cache as it was.
                let norm = self.post_attention_layernorm.as_ref().ok_or_else(|| {
                    wrong_input("a sequential layer without its post_attention_layernorm")
                })?;
                let h = ops::add(x, &self.mixer.forward(&h, ctx, cache)?)?;
                let ff = self.mlp.forward(&norm.forward(&h)?)?;
                ops::add(&h, &ff)
            }
        }
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        self.mixer.make_cache(batch, capacity, dtype)
    }

    fn window(&self) -> Option<i32> {
        self.mixer.window()
    }
}
