//! Recurrent layers (Python: `mlx.nn.layers.recurrent`): [`RNN`], [`GRU`], [`LSTM`].
//!
//! Parameters carry Python's names (`Wxh`, `Whh`, `bias`; `Wx`, `Wh`, `b`, `bhn`; `Wx`, `Wh`,
//! `bias`), so weights written by Python load by name, and a seeded construction draws them in
//! Python's order with Python's scale, `1 / sqrt(hidden_size)` computed in f64 and rounded once.
//! The step loop is Python's, op for op.
//!
//! The inputs are `[..., L, D]`: `[N, L, D]` (batched) or `[L, D]`; the states `[..., H]`
//! (`[N, H]` or `[H]`). Each layer returns the state at every step, `[..., L, H]`.

use mlx_rs::ops::{self, Ellipsis};
use mlx_rs::{Array, Error, Result};
use mlx_tree::TreeNode;

use super::uniform_init;
use crate::{Activation, Frozen};

/// Python's `scale = 1.0 / math.sqrt(hidden_size)`: in f64, rounded to f32 once where it meets
/// the sampler (in f32 it differs in the last bit for some sizes, and so do the samples).
fn init_scale(hidden_size: i32) -> f32 {
    (1.0 / f64::from(hidden_size).sqrt()) as f32
}

/// `mx.addmm(bias, x, w.T)` with a bias, `x @ w.T` without: Python's input projection.
fn project(x: &Array, w: &Array, bias: Option<&Array>) -> Result<Array> {
    match bias {
        Some(b) => ops::addmm(b, x, &w.t()?, None, None),
        None => ops::matmul(x, &w.t()?),
    }
}

/// Checks a sequence `[..., L, D]` against the layer's input size and returns `L`. Python
/// indexes `x.shape[-2]` and multiplies by the weights without checks; these are its failures
/// (and an empty sequence, on which Python's `mx.stack([])` fails), reported before MLX sees
/// the input.
fn check_sequence(layer: &str, x: &Array, input_size: i32) -> Result<i32> {
    let shape = x.shape();
    if shape.len() < 2 {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] expects a sequence of shape [N, L, D] or [L, D], got shape {shape:?}"
        )));
    }
    let (length, features) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    if features != input_size {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] the input has {features} features, the layer's input size is \
             {input_size} (input shape {shape:?})"
        )));
    }
    if length == 0 {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] the input sequence is empty (shape {shape:?})"
        )));
    }
    Ok(length)
}

/// Checks an initial state (`what`: "hidden" or "cell") of shape `[..., H]` against the
/// sequence `[..., L, D]`: the state has no sequence axis.
fn check_state(layer: &str, what: &str, state: &Array, x: &Array, hidden_size: i32) -> Result<()> {
    let shape = state.shape();
    if shape.is_empty() || shape.len() >= x.ndim() || shape[shape.len() - 1] != hidden_size {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] the {what} state must have shape [N, {hidden_size}] (batched input) or \
             [{hidden_size}], got {shape:?} for an input of shape {:?}",
            x.shape()
        )));
    }
    Ok(())
}

/// `x[..., idx, :]`.
fn step(x: &Array, idx: i32) -> Result<Array> {
    x.index((Ellipsis, idx, ..))
}

// ---------------------------------------------------------------------------------------------
// RNN

/// An Elman recurrent layer, `h[t+1] = nonlinearity(Wxh x[t] + Whh h[t] + bias)` (Python:
/// `nn.RNN(input_size, hidden_size, bias=True, nonlinearity=None)`).
///
/// ```
/// use mlx_nn::{Module, RNN};
/// use mlx_rs::ops;
/// let rnn = RNN::new(3, 4, None, None)?; // nn.RNN(3, 4)
/// let names: Vec<String> = rnn.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names, ["Wxh", "Whh", "bias"]);
/// let x = ops::ones(&[2, 5, 3], None)?; // [N, L, D]
/// assert_eq!(rnn.forward(&x, None)?.shape(), &[2, 5, 4]);
/// let h0 = ops::zeros(&[2, 4], None)?;
/// assert_eq!(rnn.forward(&x, &h0)?.shape(), &[2, 5, 4]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
// Python's class name, which code ported from Python looks for.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, TreeNode)]
pub struct RNN {
    /// `[hidden_size, input_size]` (Python: `Wxh`).
    #[tree(rename = "Wxh")]
    pub wxh: Array,
    /// `[hidden_size, hidden_size]` (Python: `Whh`).
    #[tree(rename = "Whh")]
    pub whh: Array,
    /// `[hidden_size]`.
    pub bias: Option<Array>,
    #[tree(static)]
    pub hidden_size: i32,
    #[tree(static)]
    pub nonlinearity: Activation,
    #[tree(static)]
    pub frozen: Frozen,
}

impl RNN {
    /// A new layer with Python's initialization (uniform in `±1 / sqrt(hidden_size)`, drawn in
    /// the order `Wxh`, `Whh`, `bias`); `bias` `None` is `true`, `nonlinearity` `None` is
    /// [`Activation::TANH`].
    pub fn new(
        input_size: i32,
        hidden_size: i32,
        bias: impl Into<Option<bool>>,
        nonlinearity: impl Into<Option<Activation>>,
    ) -> Result<RNN> {
        let scale = init_scale(hidden_size);
        let wxh = uniform_init(scale, &[hidden_size, input_size])?;
        let whh = uniform_init(scale, &[hidden_size, hidden_size])?;
        let bias = if bias.into().unwrap_or(true) {
            Some(uniform_init(scale, &[hidden_size])?)
        } else {
            None
        };
        Ok(RNN {
            wxh,
            whh,
            bias,
            hidden_size,
            nonlinearity: nonlinearity.into().unwrap_or(Activation::TANH),
            frozen: Frozen::default(),
        })
    }

    /// The hidden state at every step, `[..., L, hidden_size]`, for `x` of shape `[..., L,
    /// input_size]` from the initial state `hidden` (`None`: zeros, as Python's `hidden=None`)
    /// (Python: `rnn(x, hidden=None)`).
    pub fn forward<'h>(&self, x: &Array, hidden: impl Into<Option<&'h Array>>) -> Result<Array> {
        let input_size = self.wxh.shape().get(1).copied().unwrap_or(-1);
        let length = check_sequence("RNN", x, input_size)?;
        let mut hidden = hidden.into().cloned();
        if let Some(h) = &hidden {
            check_state("RNN", "hidden", h, x, self.hidden_size)?;
        }
        let x = project(x, &self.wxh, self.bias.as_ref())?;
        let whh_t = self.whh.t()?;
        let mut all_hidden = Vec::with_capacity(length as usize);
        for idx in 0..length {
            let x_t = step(&x, idx)?;
            let h = match &hidden {
                Some(h) => ops::addmm(&x_t, h, &whh_t, None, None)?,
                None => x_t,
            };
            let h = self.nonlinearity.apply(&h)?;
            all_hidden.push(h.clone());
            hidden = Some(h);
        }
        ops::stack(&all_hidden, -2)
    }
}

// ---------------------------------------------------------------------------------------------
// GRU

/// A gated recurrent unit (Python: `nn.GRU(input_size, hidden_size, bias=True)`):
///
/// ```text
/// r = σ(Wxr x + Whr h + br)        z = σ(Wxz x + Whz h + bz)
/// n = tanh(Wxn x + bn + r ⊙ (Whn h + bhn))
/// h' = (1 - z) ⊙ n + z ⊙ h
/// ```
///
/// with the gates stacked in `Wx` (`[3 * hidden_size, input_size]`, rows `r, z, n`), `Wh` and
/// `b`.
///
/// ```
/// use mlx_nn::{Module, GRU};
/// use mlx_rs::ops;
/// let gru = GRU::new(3, 4, None)?;
/// let names: Vec<String> = gru.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names, ["Wx", "Wh", "b", "bhn"]);
/// let x = ops::ones(&[5, 3], None)?; // unbatched [L, D]
/// assert_eq!(gru.forward(&x, None)?.shape(), &[5, 4]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
// Python's class name, which code ported from Python looks for.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, TreeNode)]
pub struct GRU {
    /// `[3 * hidden_size, input_size]` (Python: `Wx`).
    #[tree(rename = "Wx")]
    pub wx: Array,
    /// `[3 * hidden_size, hidden_size]` (Python: `Wh`).
    #[tree(rename = "Wh")]
    pub wh: Array,
    /// `[3 * hidden_size]`, the input projection's bias.
    pub b: Option<Array>,
    /// `[hidden_size]`, the bias of the hidden projection of `n`.
    pub bhn: Option<Array>,
    #[tree(static)]
    pub hidden_size: i32,
    #[tree(static)]
    pub frozen: Frozen,
}

impl GRU {
    /// A new layer with Python's initialization (uniform in `±1 / sqrt(hidden_size)`, drawn in
    /// the order `Wx`, `Wh`, `b`, `bhn`); `bias` `None` is `true` (both `b` and `bhn`).
    pub fn new(input_size: i32, hidden_size: i32, bias: impl Into<Option<bool>>) -> Result<GRU> {
        let scale = init_scale(hidden_size);
        let wx = uniform_init(scale, &[3 * hidden_size, input_size])?;
        let wh = uniform_init(scale, &[3 * hidden_size, hidden_size])?;
        let (b, bhn) = if bias.into().unwrap_or(true) {
            let b = uniform_init(scale, &[3 * hidden_size])?;
            (Some(b), Some(uniform_init(scale, &[hidden_size])?))
        } else {
            (None, None)
        };
        Ok(GRU {
            wx,
            wh,
            b,
            bhn,
            hidden_size,
            frozen: Frozen::default(),
        })
    }

    /// The hidden state at every step, `[..., L, hidden_size]`, for `x` of shape `[..., L,
    /// input_size]` from the initial state `hidden` (`None`: zeros) (Python: `gru(x,
    /// hidden=None)`).
    pub fn forward<'h>(&self, x: &Array, hidden: impl Into<Option<&'h Array>>) -> Result<Array> {
        let hs = self.hidden_size;
        let input_size = self.wx.shape().get(1).copied().unwrap_or(-1);
        let length = check_sequence("GRU", x, input_size)?;
        let mut hidden = hidden.into().cloned();
        if let Some(h) = &hidden {
            check_state("GRU", "hidden", h, x, hs)?;
        }
        let x = project(x, &self.wx, self.b.as_ref())?;
        let x_rz = x.index((Ellipsis, ..-hs))?;
        let x_n = x.index((Ellipsis, -hs..))?;
        let wh_t = self.wh.t()?;
        let mut all_hidden = Vec::with_capacity(length as usize);
        for idx in 0..length {
            let mut rz = step(&x_rz, idx)?;
            let mut h_proj_n = None;
            if let Some(h) = &hidden {
                let h_proj = ops::matmul(h, &wh_t)?;
                let h_proj_rz = h_proj.index((Ellipsis, ..-hs))?;
                let mut proj_n = h_proj.index((Ellipsis, -hs..))?;
                if let Some(bhn) = &self.bhn {
                    proj_n = ops::add(&proj_n, bhn)?;
                }
                rz = ops::add(&rz, &h_proj_rz)?;
                h_proj_n = Some(proj_n);
            }
            let rz = ops::sigmoid(&rz)?;
            let (r, z) = match ops::split(&rz, 2, -1)?.as_slice() {
                [r, z] => (r.clone(), z.clone()),
                _ => return Err(Error::Mlx("[GRU] split did not give two gates".into())),
            };
            let mut n = step(&x_n, idx)?;
            if let Some(proj_n) = &h_proj_n {
                n = ops::add(&n, &ops::multiply(&r, proj_n)?)?;
            } else if let Some(bhn) = &self.bhn {
                n = ops::add(&n, &ops::multiply(&r, bhn)?)?;
            }
            let n = ops::tanh(&n)?;
            let one_minus_z = ops::subtract(1.0f32, &z)?;
            let h = match &hidden {
                Some(h) => ops::add(&ops::multiply(&one_minus_z, &n)?, &ops::multiply(&z, h)?)?,
                None => ops::multiply(&one_minus_z, &n)?,
            };
            all_hidden.push(h.clone());
            hidden = Some(h);
        }
        ops::stack(&all_hidden, -2)
    }
}

// ---------------------------------------------------------------------------------------------
// LSTM

/// A long short-term memory layer (Python: `nn.LSTM(input_size, hidden_size, bias=True)`):
///
/// ```text
/// i = σ(Wxi x + Whi h + bi)    f = σ(Wxf x + Whf h + bf)
/// g = tanh(Wxg x + Whg h + bg) o = σ(Wxo x + Who h + bo)
/// c' = f ⊙ c + i ⊙ g           h' = o ⊙ tanh(c')
/// ```
///
/// with the gates stacked in `Wx` (`[4 * hidden_size, input_size]`, rows `i, f, g, o`), `Wh`
/// and `bias`.
///
/// ```
/// use mlx_nn::{Module, LSTM};
/// use mlx_rs::ops;
/// let lstm = LSTM::new(3, 4, None)?;
/// let names: Vec<String> = lstm.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names, ["Wx", "Wh", "bias"]);
/// let x = ops::ones(&[2, 5, 3], None)?;
/// let (hidden, cell) = lstm.forward(&x, None, None)?;
/// assert_eq!((hidden.shape(), cell.shape()), (&[2, 5, 4][..], &[2, 5, 4][..]));
/// # Ok::<(), mlx_rs::Error>(())
/// ```
// Python's class name, which code ported from Python looks for.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, TreeNode)]
pub struct LSTM {
    /// `[4 * hidden_size, input_size]` (Python: `Wx`).
    #[tree(rename = "Wx")]
    pub wx: Array,
    /// `[4 * hidden_size, hidden_size]` (Python: `Wh`).
    #[tree(rename = "Wh")]
    pub wh: Array,
    /// `[4 * hidden_size]`.
    pub bias: Option<Array>,
    #[tree(static)]
    pub hidden_size: i32,
    #[tree(static)]
    pub frozen: Frozen,
}

impl LSTM {
    /// A new layer with Python's initialization (uniform in `±1 / sqrt(hidden_size)`, drawn in
    /// the order `Wx`, `Wh`, `bias`); `bias` `None` is `true`.
    pub fn new(input_size: i32, hidden_size: i32, bias: impl Into<Option<bool>>) -> Result<LSTM> {
        let scale = init_scale(hidden_size);
        let wx = uniform_init(scale, &[4 * hidden_size, input_size])?;
        let wh = uniform_init(scale, &[4 * hidden_size, hidden_size])?;
        let bias = if bias.into().unwrap_or(true) {
            Some(uniform_init(scale, &[4 * hidden_size])?)
        } else {
            None
        };
        Ok(LSTM {
            wx,
            wh,
            bias,
            hidden_size,
            frozen: Frozen::default(),
        })
    }

    /// The hidden and cell states at every step, both `[..., L, hidden_size]`, for `x` of
    /// shape `[..., L, input_size]` from the initial states (`None`: zeros) (Python: `lstm(x,
    /// hidden=None, cell=None)`).
    pub fn forward<'h, 'c>(
        &self,
        x: &Array,
        hidden: impl Into<Option<&'h Array>>,
        cell: impl Into<Option<&'c Array>>,
    ) -> Result<(Array, Array)> {
        let input_size = self.wx.shape().get(1).copied().unwrap_or(-1);
        let length = check_sequence("LSTM", x, input_size)?;
        let mut hidden = hidden.into().cloned();
        let mut cell = cell.into().cloned();
        for (what, state) in [("hidden", &hidden), ("cell", &cell)] {
            if let Some(s) = state {
                check_state("LSTM", what, s, x, self.hidden_size)?;
            }
        }
        let x = project(x, &self.wx, self.bias.as_ref())?;
        let wh_t = self.wh.t()?;
        let mut all_hidden = Vec::with_capacity(length as usize);
        let mut all_cell = Vec::with_capacity(length as usize);
        for idx in 0..length {
            let mut ifgo = step(&x, idx)?;
            if let Some(h) = &hidden {
                ifgo = ops::addmm(&ifgo, h, &wh_t, None, None)?;
            }
            let (i, f, g, o) = match ops::split(&ifgo, 4, -1)?.as_slice() {
                [i, f, g, o] => (
                    ops::sigmoid(i)?,
                    ops::sigmoid(f)?,
                    ops::tanh(g)?,
                    ops::sigmoid(o)?,
                ),
                _ => return Err(Error::Mlx("[LSTM] split did not give four gates".into())),
            };
            let c = match &cell {
                Some(c) => ops::add(&ops::multiply(&f, c)?, &ops::multiply(&i, &g)?)?,
                None => ops::multiply(&i, &g)?,
            };
            let h = ops::multiply(&o, &ops::tanh(&c)?)?;
            all_cell.push(c.clone());
            all_hidden.push(h.clone());
            cell = Some(c);
            hidden = Some(h);
        }
        Ok((ops::stack(&all_hidden, -2)?, ops::stack(&all_cell, -2)?))
    }
}
