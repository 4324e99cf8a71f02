//! Python's `mlx.nn.layers.dropout`: [`Dropout`], [`Dropout2d`] and [`Dropout3d`].

use mlx_rs::{random, Array, Error, Result};
use mlx_tree::TreeNode;

use crate::Forward;

/// Zeroes entries with probability `p` and scales the rest by `1 / (1 - p)` in training mode;
/// the identity in evaluation mode (Python: `nn.Dropout(p=0.5)`).
///
/// The mask is drawn from MLX's global random state, as in Python; [`Dropout::forward_with_key`]
/// takes an explicit key (use that inside compiled functions, passing the key as state).
#[derive(Debug, Clone, TreeNode)]
pub struct Dropout {
    /// The probability of zeroing an element (f64 as Python's float: the keep probability
    /// `1 - p` and the scale `1 / (1 - p)` are computed before they meet an array).
    #[tree(static)]
    pub p: f64,
    #[tree(static)]
    pub training: bool,
}

/// Python's check of a dropout probability.
fn check_dropout(p: f64) -> Result<()> {
    if !(0.0..1.0).contains(&p) {
        return Err(Error::InvalidArgument(format!(
            "The dropout probability {p} is not in [0, 1)"
        )));
    }
    Ok(())
}

/// `(mask * x) * (1 / keep)` with a Bernoulli(`keep`) mask of `mask_shape`, `keep = 1 - p`
/// (f64, rounded once where it meets an array, as Python's `self._p_1`).
fn drop_out(x: &Array, p: f64, mask_shape: &[i32], key: Option<&Array>) -> Result<Array> {
    let keep = 1.0 - p;
    let mask = random::bernoulli(keep as f32, Some(mask_shape), key)?;
    Ok((&mask * x) * (1.0 / keep) as f32)
}

impl Dropout {
    /// `p` defaults to `0.5`; errors unless `0 <= p < 1`. A new layer is in training mode.
    pub fn new(p: impl Into<Option<f64>>) -> Result<Dropout> {
        let p = p.into().unwrap_or(0.5);
        check_dropout(p)?;
        Ok(Dropout { p, training: true })
    }

    /// Applies the layer with a mask drawn from `key`.
    pub fn forward_with_key(&self, x: &Array, key: Option<&Array>) -> Result<Array> {
        if self.p == 0.0 || !self.training {
            return Ok(x.clone());
        }
        drop_out(x, self.p, x.shape(), key)
    }
}

impl Forward for Dropout {
    /// Applies the layer with a mask from the global random state.
    fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_with_key(x, None)
    }
}

macro_rules! channel_dropout {
    ($( $(#[$doc:meta])* $name:ident: $spatial:literal; )+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, TreeNode)]
        pub struct $name {
            /// The probability of zeroing a channel (f64, as [`Dropout::p`]).
            #[tree(static)]
            pub p: f64,
            #[tree(static)]
            pub training: bool,
        }

        impl $name {
            /// `p` defaults to `0.5`; errors unless `0 <= p < 1`. A new layer is in training
            /// mode.
            pub fn new(p: impl Into<Option<f64>>) -> Result<$name> {
                let p = p.into().unwrap_or(0.5);
                check_dropout(p)?;
                Ok($name { p, training: true })
            }

            /// Applies the layer with a mask drawn from `key`.
            pub fn forward_with_key(&self, x: &Array, key: Option<&Array>) -> Result<Array> {
                let ndim = x.ndim();
                if ndim != $spatial + 1 && ndim != $spatial + 2 {
                    return Err(Error::InvalidArgument(format!(
                        "Received input with {ndim} dimensions. Expected {} or {} dimensions.",
                        $spatial + 1,
                        $spatial + 2
                    )));
                }
                if self.p == 0.0 || !self.training {
                    return Ok(x.clone());
                }
                // One draw per channel (and batch entry): the spatial axes are 1.
                let mut mask_shape = x.shape().to_vec();
                for d in &mut mask_shape[ndim - 1 - $spatial..ndim - 1] {
                    *d = 1;
                }
                drop_out(x, self.p, &mask_shape, key)
            }
        }

        impl Forward for $name {
            /// Applies the layer with a mask from the global random state.
            fn forward(&self, x: &Array) -> Result<Array> {
                self.forward_with_key(x, None)
            }
        }
    )+};
}

channel_dropout! {
    /// Zeroes whole channels of `[B, H, W, C]` (or `[H, W, C]`) inputs (Python:
    /// `nn.Dropout2d(p=0.5)`), scaling the rest by `1 / (1 - p)`.
    Dropout2d: 2;
    /// Zeroes whole channels of `[B, D, H, W, C]` (or `[D, H, W, C]`) inputs (Python:
    /// `nn.Dropout3d(p=0.5)`), scaling the rest by `1 / (1 - p)`.
    Dropout3d: 3;
}
