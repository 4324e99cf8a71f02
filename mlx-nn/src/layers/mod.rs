//! The layers, one file per module of Python's `mlx/nn/layers/` (`linear.py` is `linear.rs`,
//! `convolution_transpose.py` is `convolution_transpose.rs`, ...), each type in the file
//! Python's is in. Every layer is a plain struct deriving [`TreeNode`](mlx_tree::TreeNode): its
//! array fields are its parameters, named as in Python (`weight`, `bias`, `scales`, ...), so a
//! model built from them has Python's parameter paths. The crate root re-exports every public
//! name, as `mlx.nn` does.
//!
//! This file holds only what several layer files share.

pub(crate) mod activations;
pub(crate) mod base;
pub(crate) mod containers;
pub(crate) mod convolution;
pub(crate) mod convolution_transpose;
pub(crate) mod distributed;
pub(crate) mod dropout;
pub(crate) mod embedding;
pub(crate) mod linear;
pub(crate) mod normalization;
pub(crate) mod pooling;
pub(crate) mod positional_encoding;
pub(crate) mod quantized;
pub(crate) mod recurrent;
pub(crate) mod transformer;
pub(crate) mod upsample;

use mlx_rs::random::{self, UniformOptions};
use mlx_rs::{ops, Array, Result};

/// `y + bias` when the layer has a bias; a shape error is an `Err`, not a panic.
pub(crate) fn with_bias(y: Array, bias: Option<&Array>) -> Result<Array> {
    match bias {
        Some(b) => ops::add(&y, b),
        None => Ok(y),
    }
}

/// Python's `math.sqrt(1 / n)` for an integer `n`: in f64, rounded to f32 once where it meets
/// an array. Computed in f32 it differs in the last bit for many `n` (784 among them), and so
/// do seeded initializations and attention scales.
pub(crate) fn inv_sqrt(n: f64) -> f32 {
    (1.0 / n).sqrt() as f32
}

/// Python's `mx.random.uniform(-scale, scale, shape)`, the initialization of most weights.
pub(crate) fn uniform_init(scale: f32, shape: &[i32]) -> Result<Array> {
    random::uniform(
        shape,
        UniformOptions::default().low(-scale).high(scale),
        None,
    )
}

/// A zero bias of `len` when the layer has one (Python initializes biases to zero).
pub(crate) fn zero_bias(present: bool, len: i32) -> Result<Option<Array>> {
    present.then(|| ops::zeros(&[len], None)).transpose()
}

/// How the convolution and pooling layers store a per-axis value (Python's `int` or tuple):
/// `i32` for one spatial axis, a tuple for more.
pub(crate) trait PerAxis<const N: usize>: Copy {
    fn from_array(v: [i32; N]) -> Self;
    fn to_array(self) -> [i32; N];
}

impl PerAxis<1> for i32 {
    fn from_array([v]: [i32; 1]) -> Self {
        v
    }
    fn to_array(self) -> [i32; 1] {
        [self]
    }
}

impl PerAxis<2> for (i32, i32) {
    fn from_array(v: [i32; 2]) -> Self {
        v.into()
    }
    fn to_array(self) -> [i32; 2] {
        self.into()
    }
}

impl PerAxis<3> for (i32, i32, i32) {
    fn from_array(v: [i32; 3]) -> Self {
        v.into()
    }
    fn to_array(self) -> [i32; 3] {
        self.into()
    }
}
