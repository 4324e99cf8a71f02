//! Python's `mlx.nn.layers.normalization`: [`LayerNorm`], [`RMSNorm`], [`BatchNorm`],
//! [`GroupNorm`] and [`InstanceNorm`].
//!
//! Every layer computes Python's formula op for op, so the results are Python's bit for bit
//! when both use the same libmlx. `eps` and `momentum` of the last three are Python floats:
//! they are kept in f64 and rounded to f32 once where they meet an array, as Python converts a
//! float (to float32 first, then to a float16 or bfloat16 array's dtype).

use mlx_rs::{fast, ops, Array, Error, Result};
use mlx_tree::TreeNode;

use super::base::{Frozen, Module};
use super::zero_bias;
use crate::Forward;

/// Python's check of `eps` (`if eps <= 0.0: raise ValueError`).
fn check_eps(layer: &str, eps: f64) -> Result<()> {
    if eps <= 0.0 {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] 'eps' must be positive but got {eps}."
        )));
    }
    Ok(())
}

/// The input's last axis must be the layer's feature count. Checked before MLX sees the input:
/// a mismatch would otherwise broadcast against the per-feature arrays (a last axis of 1) or
/// fail with a message about broadcasting rather than about the layer. Python has no such
/// check, so a layer without per-feature arrays (no affine parameters, no running statistics)
/// takes any feature count there; here that is an error too.
fn check_features(layer: &str, x: &Array, features: i32) -> Result<()> {
    match x.shape().last() {
        Some(&last) if last == features => Ok(()),
        last => Err(Error::InvalidArgument(format!(
            "[{layer}] the input's last axis has {} features, the layer {features} (input shape {:?})",
            last.map_or_else(|| "no".to_string(), i32::to_string),
            x.shape()
        ))),
    }
}

/// Python's `(self.weight * x + self.bias) if "weight" in self else x`.
fn affine(x: Array, weight: Option<&Array>, bias: Option<&Array>) -> Result<Array> {
    let x = match weight {
        Some(w) => ops::multiply(w, &x)?,
        None => x,
    };
    match bias {
        Some(b) => ops::add(&x, b),
        None => Ok(x),
    }
}

/// `(x - mean) * rsqrt(var + eps)`, Python's normalization step of [`BatchNorm`] and
/// [`GroupNorm`].
fn normalize(x: &Array, mean: &Array, var: &Array, eps: f64) -> Result<Array> {
    let inv_std = ops::rsqrt(&ops::add(var, eps as f32)?)?;
    ops::multiply(&ops::subtract(x, mean)?, &inv_std)
}

// ---------------------------------------------------------------------------------------------
// RMSNorm and LayerNorm (the fused kernels)

/// Root-mean-square normalization over the last axis (Python: `nn.RMSNorm(dims, eps=1e-5)`).
#[derive(Debug, Clone, TreeNode)]
pub struct RMSNorm {
    pub weight: Array,
    #[tree(static)]
    pub eps: f32,
    #[tree(static)]
    pub frozen: Frozen,
}

impl RMSNorm {
    /// `eps` defaults to `1e-5`.
    pub fn new(dims: i32, eps: impl Into<Option<f32>>) -> Result<RMSNorm> {
        Ok(RMSNorm {
            weight: ops::ones(&[dims], None)?,
            eps: eps.into().unwrap_or(1e-5),
            frozen: Frozen::default(),
        })
    }
}

impl Forward for RMSNorm {
    /// Applies the layer (Python: `norm(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        fast::rms_norm(x, Some(&self.weight), self.eps)
    }
}

/// Layer normalization over the last axis (Python: `nn.LayerNorm(dims, eps=1e-5, affine=True,
/// bias=True)`).
#[derive(Debug, Clone, TreeNode)]
pub struct LayerNorm {
    pub weight: Option<Array>,
    pub bias: Option<Array>,
    #[tree(static)]
    pub eps: f32,
    #[tree(static)]
    pub frozen: Frozen,
}

mlx_rs::options! {
    /// The keyword arguments of [`LayerNorm::new`], with Python's defaults (`eps=1e-5`,
    /// `affine=True`, `bias=True`). `affine` and `bias` decide which parameters exist, so they are
    /// given before the layer is built.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct LayerNormOptions {
        eps: plain f32 = 1e-5,
        affine: plain bool = true,
        bias: plain bool = true,
    }
}

impl LayerNorm {
    /// A new layer (weight ones, bias zeros, as Python).
    ///
    /// ```
    /// use mlx_nn::{LayerNorm, LayerNormOptions, Module};
    /// let ln = LayerNorm::new(8, LayerNormOptions::default().bias(false))?;
    /// assert_eq!(ln.num_parameters()?, 8);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn new(dims: i32, options: LayerNormOptions) -> Result<LayerNorm> {
        let LayerNormOptions { eps, affine, bias } = options;
        Ok(LayerNorm {
            weight: if affine {
                Some(ops::ones(&[dims], None)?)
            } else {
                None
            },
            bias: zero_bias(affine && bias, dims)?,
            eps,
            frozen: Frozen::default(),
        })
    }
}

impl Forward for LayerNorm {
    /// Applies the layer (Python: `norm(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        fast::layer_norm(x, self.weight.as_ref(), self.bias.as_ref(), self.eps)
    }
}

// ---------------------------------------------------------------------------------------------
// BatchNorm

mlx_rs::options! {
    /// The keyword arguments of [`BatchNorm::new`], with Python's defaults (`eps=1e-5`,
    /// `momentum=0.1`, `affine=True`, `track_running_stats=True`). `affine` and
    /// `track_running_stats` decide which arrays exist, so they are given before the layer is
    /// built.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct BatchNormOptions {
        /// Added to the variance (a Python float).
        eps: plain f64 = 1e-5,
        /// The weight of the current batch in the running statistics (a Python float).
        momentum: plain f64 = 0.1,
        /// Whether the layer has a learned `weight` and `bias`.
        affine: plain bool = true,
        /// Whether the layer keeps `running_mean` and `running_var`.
        track_running_stats: plain bool = true,
    }
}

/// Batch normalization over every axis but the last of a `[N, C]`, `[N, L, C]` or
/// `[N, H, W, C]` input (Python: `nn.BatchNorm(num_features, eps=1e-5, momentum=0.1,
/// affine=True, track_running_stats=True)`). `C` must be `num_features`.
///
/// # Running statistics
///
/// `running_mean` and `running_var` are arrays of the tree, as in Python: they are in
/// [`Module::parameters`] and in the files [`Module::save_weights`] writes, under the same
/// names, and they are frozen, so they are not in [`Module::trainable_parameters`] (the
/// optimizers and [`value_and_grad`](crate::value_and_grad) leave them alone).
/// [`BatchNorm::unfreeze`] keeps them frozen, as Python's override does; unfreezing a model
/// that contains the layer unfreezes them, as in Python.
///
/// Python updates them as a side effect of calling the layer in training mode. A Rust call
/// through [`Forward`] borrows the layer, so the update is a method of its own:
///
/// - [`BatchNorm::forward_mut`] normalizes with the batch statistics and, in training mode,
///   updates the running statistics (Python's `bn(x)`). Use it in training steps, eager or
///   inside [`mlx_tree::compile_mut`] with the model as the state.
/// - [`Forward::forward`] normalizes with the running statistics in evaluation mode. In
///   training mode it works for a layer without running statistics and is an `Err` for one with
///   them, naming `forward_mut`: the update is never skipped silently.
///
/// Inside a loss function (which borrows the model), call `forward_mut` on a clone and return
/// the new statistics next to the loss:
///
/// ```
/// use mlx_nn::{value_and_grad, BatchNorm, Module};
/// use mlx_rs::{ops, Array, Result};
///
/// let mut bn = BatchNorm::new(3, Default::default())?;
/// let x = ops::arange(0.0f32, 12.0, None, None)?.reshape(&[4, 3])?;
/// let loss = |m: &BatchNorm, x: &Array| -> Result<(Array, Option<Array>, Option<Array>)> {
///     let mut m = m.clone();
///     let y = m.forward_mut(x)?;
///     Ok((y.square()?.mean(None, false)?, m.running_mean, m.running_var))
/// };
/// let ((_, mean, var), grads) = value_and_grad(loss)(&bn, &x)?;
/// (bn.running_mean, bn.running_var) = (mean, var);
/// // 0.9 * 0 + 0.1 * [4.5, 5.5, 6.5]
/// let mean = bn.running_mean.as_ref().unwrap().to_vec::<f32>()?;
/// assert!(mean.iter().zip([0.45, 0.55, 0.65]).all(|(a, b)| (a - b).abs() < 1e-6));
/// assert!(grads.weight.is_some());
///
/// let names: Vec<String> = bn.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names, ["weight", "bias", "running_mean", "running_var"]);
/// let trainable: Vec<String> = bn.named_trainable_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(trainable, ["weight", "bias"]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct BatchNorm {
    pub weight: Option<Array>,
    pub bias: Option<Array>,
    pub running_mean: Option<Array>,
    pub running_var: Option<Array>,
    #[tree(static)]
    pub num_features: i32,
    /// Added to the variance (f64, as Python's float).
    #[tree(static)]
    pub eps: f64,
    /// The weight of the current batch in the running statistics (f64, as Python's float:
    /// `1 - momentum` is computed in f64 too).
    #[tree(static)]
    pub momentum: f64,
    #[tree(static)]
    pub training: bool,
    #[tree(static)]
    pub frozen: Frozen,
}

/// The arrays of [`BatchNorm`] that are state, not parameters to train.
const RUNNING_STATS: [&str; 2] = ["running_mean", "running_var"];

impl BatchNorm {
    /// A new layer in training mode: weight ones, bias zeros, running mean zeros, running
    /// variance ones, as Python. Errors unless `eps > 0`.
    ///
    /// ```
    /// use mlx_nn::{BatchNorm, BatchNormOptions, Module};
    /// let bn = BatchNorm::new(4, BatchNormOptions::default().affine(false))?;
    /// assert_eq!(bn.num_parameters()?, 8); // running_mean and running_var
    /// let plain = BatchNorm::new(4, BatchNormOptions::default().track_running_stats(false))?;
    /// assert!(!plain.track_running_stats());
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn new(num_features: i32, options: BatchNormOptions) -> Result<BatchNorm> {
        let BatchNormOptions {
            eps,
            momentum,
            affine,
            track_running_stats,
        } = options;
        check_eps("BatchNorm", eps)?;
        let (weight, bias) = if affine {
            (
                Some(ops::ones(&[num_features], None)?),
                Some(ops::zeros(&[num_features], None)?),
            )
        } else {
            (None, None)
        };
        let (running_mean, running_var, frozen) = if track_running_stats {
            (
                Some(ops::zeros(&[num_features], None)?),
                Some(ops::ones(&[num_features], None)?),
                Frozen(RUNNING_STATS.iter().map(|s| s.to_string()).collect()),
            )
        } else {
            (None, None, Frozen::default())
        };
        Ok(BatchNorm {
            weight,
            bias,
            running_mean,
            running_var,
            num_features,
            eps,
            momentum,
            training: true,
            frozen,
        })
    }

    /// Whether the layer keeps running statistics (Python: `bn.track_running_stats`).
    pub fn track_running_stats(&self) -> bool {
        self.running_mean.is_some() || self.running_var.is_some()
    }

    /// Unfreezes parameters as [`Module::unfreeze`] does, then freezes the running statistics
    /// again (Python's `BatchNorm.unfreeze` override). Like Python's, it applies when called on
    /// the layer itself; unfreezing an enclosing model goes through [`Module::unfreeze`].
    pub fn unfreeze(&mut self, keys: Option<&[&str]>) -> Result<()> {
        Module::unfreeze(self, keys)?;
        if self.track_running_stats() {
            let present: Vec<&str> = RUNNING_STATS
                .into_iter()
                .zip([&self.running_mean, &self.running_var])
                .filter_map(|(name, a)| a.is_some().then_some(name))
                .collect();
            self.freeze(Some(&present))?;
        }
        Ok(())
    }

    /// The running statistics, both present or both absent.
    fn running_stats(&self) -> Result<Option<(&Array, &Array)>> {
        match (&self.running_mean, &self.running_var) {
            (Some(mean), Some(var)) => Ok(Some((mean, var))),
            (None, None) => Ok(None),
            _ => Err(Error::InvalidArgument(
                "[BatchNorm] the layer has one of running_mean and running_var but not the other"
                    .into(),
            )),
        }
    }

    /// Python's input checks (rank; more than one value per channel in training mode) and
    /// the feature count.
    fn check_input(&self, x: &Array) -> Result<()> {
        let ndim = x.ndim();
        if !(2..=4).contains(&ndim) {
            return Err(Error::InvalidArgument(format!(
                "[BatchNorm] Expected input tensor to have 2, 3 or 4 dimensions, but got {ndim}"
            )));
        }
        check_features("BatchNorm", x, self.num_features)?;
        if self.training {
            let stats_size: i64 = x.shape()[..ndim - 1]
                .iter()
                .map(|&d| i64::from(d))
                .product();
            if stats_size == 1 {
                return Err(Error::InvalidArgument(
                    "[BatchNorm] BatchNorm training requires more than one value per channel."
                        .into(),
                ));
            }
        }
        Ok(())
    }

    /// Python's `_calc_stats`: mean and variance over every axis but the last.
    fn batch_stats(x: &Array) -> Result<(Array, Array)> {
        let axes = Self::reduction_axes(x);
        Ok((ops::mean(x, &axes, false)?, ops::var(x, &axes, false, 0)?))
    }

    fn reduction_axes(x: &Array) -> Vec<i32> {
        (0..x.ndim() as i32 - 1).collect()
    }

    fn output(&self, x: &Array, mean: &Array, var: &Array) -> Result<Array> {
        let y = normalize(x, mean, var, self.eps)?;
        affine(y, self.weight.as_ref(), self.bias.as_ref())
    }

    /// Applies the layer as Python's `bn(x)` does, updating the running statistics in training
    /// mode: `running = (1 - momentum) * running + momentum * batch`, with the unbiased
    /// (`ddof=1`) batch variance. Outside training mode, or without running statistics, it is
    /// [`Forward::forward`]. On `Err` the layer is unchanged.
    ///
    /// ```
    /// use mlx_nn::{BatchNorm, Forward, Module};
    /// use mlx_rs::ops;
    /// let mut bn = BatchNorm::new(2, Default::default())?;
    /// let x = ops::arange(0.0f32, 8.0, None, None)?.reshape(&[4, 2])?;
    /// assert!(bn.forward(&x).is_err()); // training mode: the update needs `&mut`
    /// bn.forward_mut(&x)?;
    /// assert_eq!(bn.running_mean.as_ref().unwrap().to_vec::<f32>()?, [0.3, 0.4]);
    /// bn.eval_mode()?;
    /// assert_eq!(bn.forward(&x)?.shape(), &[4, 2]); // normalized with the running statistics
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn forward_mut(&mut self, x: &Array) -> Result<Array> {
        let running = match self.running_stats()? {
            Some(stats) if self.training => stats,
            _ => return self.forward(x),
        };
        self.check_input(x)?;
        let (mean, var) = Self::batch_stats(x)?;
        let unbiased = ops::var(x, Self::reduction_axes(x), false, 1)?;
        let mu = self.momentum;
        // `1 - mu` is a Python float: computed in f64, rounded once.
        let update = |old: &Array, new: &Array| -> Result<Array> {
            ops::add(
                &ops::multiply((1.0 - mu) as f32, old)?,
                &ops::multiply(mu as f32, new)?,
            )
        };
        let running_mean = update(running.0, &mean)?;
        let running_var = update(running.1, &unbiased)?;
        let y = self.output(x, &mean, &var)?;
        self.running_mean = Some(running_mean);
        self.running_var = Some(running_var);
        Ok(y)
    }
}

impl Forward for BatchNorm {
    /// Applies the layer without updating anything: with the running statistics in evaluation
    /// mode, with the batch statistics for a layer that has none. In training mode a layer with
    /// running statistics is an `Err`: use [`BatchNorm::forward_mut`].
    fn forward(&self, x: &Array) -> Result<Array> {
        self.check_input(x)?;
        match self.running_stats()? {
            Some(_) if self.training => Err(Error::InvalidArgument(
                "[BatchNorm] in training mode the layer updates its running statistics: call \
                 `BatchNorm::forward_mut(&mut self, x)` (or switch to evaluation mode with \
                 `eval()`)"
                    .into(),
            )),
            Some((mean, var)) => self.output(x, mean, var),
            None => {
                let (mean, var) = Self::batch_stats(x)?;
                self.output(x, &mean, &var)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GroupNorm

mlx_rs::options! {
    /// The keyword arguments of [`GroupNorm::new`], with Python's defaults (`eps=1e-5`,
    /// `affine=True`, `pytorch_compatible=False`).
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct GroupNormOptions {
        /// Added to the variance (a Python float).
        eps: plain f64 = 1e-5,
        /// Whether the layer has a learned `weight` and `bias`.
        affine: plain bool = true,
        /// Groups of consecutive features, as PyTorch's `GroupNorm`; otherwise Python MLX's
        /// default grouping (feature `f` in group `f % num_groups`).
        pytorch_compatible: plain bool = false,
    }
}

/// Group normalization (Python: `nn.GroupNorm(num_groups, dims, eps=1e-5, affine=True,
/// pytorch_compatible=False)`): the features (last axis) are split into `num_groups` groups and
/// each group is normalized over it and the spatial axes (every axis but the first and last).
///
/// ```
/// use mlx_nn::{Forward, GroupNorm, GroupNormOptions, Module};
/// use mlx_rs::ops;
/// let gn = GroupNorm::new(2, 4, GroupNormOptions::default().pytorch_compatible(true))?;
/// let names: Vec<String> = gn.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names, ["bias", "weight"]); // Python's order
/// let y = gn.forward(&ops::arange(0.0f32, 24.0, None, None)?.reshape(&[2, 3, 4])?)?;
/// assert_eq!(y.shape(), &[2, 3, 4]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct GroupNorm {
    // Python assigns the bias first, so its parameters are listed in this order.
    pub bias: Option<Array>,
    pub weight: Option<Array>,
    #[tree(static)]
    pub num_groups: i32,
    #[tree(static)]
    pub dims: i32,
    /// Added to the variance (f64, as Python's float).
    #[tree(static)]
    pub eps: f64,
    #[tree(static)]
    pub pytorch_compatible: bool,
    #[tree(static)]
    pub frozen: Frozen,
}

impl GroupNorm {
    /// A new layer (weight ones, bias zeros). Errors as Python does: `eps <= 0`, a group count
    /// or feature count that is not positive, or features not divisible into the groups.
    pub fn new(num_groups: i32, dims: i32, options: GroupNormOptions) -> Result<GroupNorm> {
        let GroupNormOptions {
            eps,
            affine,
            pytorch_compatible,
        } = options;
        check_eps("GroupNorm", eps)?;
        let invalid = |m: String| Err(Error::InvalidArgument(format!("[GroupNorm] {m}")));
        if num_groups <= 0 {
            return invalid(format!(
                "The number of groups ({num_groups}) must be a positive integer."
            ));
        }
        if dims <= 0 {
            return invalid(format!(
                "The number of features ({dims}) must be a positive integer."
            ));
        }
        if dims % num_groups != 0 {
            return invalid(format!(
                "The number of features ({dims}) must be evenly divisible by the number of \
                 groups ({num_groups})."
            ));
        }
        let (bias, weight) = if affine {
            (
                Some(ops::zeros(&[dims], None)?),
                Some(ops::ones(&[dims], None)?),
            )
        } else {
            (None, None)
        };
        Ok(GroupNorm {
            bias,
            weight,
            num_groups,
            dims,
            eps,
            pytorch_compatible,
            frozen: Frozen::default(),
        })
    }

    /// Python's `_pytorch_compatible_group_norm` (groups of consecutive features), up to its
    /// final reshape to the input's shape.
    fn pytorch_compatible_group_norm(&self, x: &Array) -> Result<Array> {
        let g = self.num_groups;
        let batch = x.shape()[0];
        let group_size = self.dims / g;
        let x = x.reshape(&[batch, -1, g, group_size])?;
        let x = x.transpose([0, 2, 1, 3])?.reshape(&[batch, g, -1])?;
        let x = fast::layer_norm(&x, None, None, self.eps as f32)?;
        x.reshape(&[batch, g, -1, group_size])?
            .transpose([0, 2, 1, 3])
    }

    /// Python's `_group_norm` (feature `f` in group `f % num_groups`), up to its final reshape
    /// to the input's shape.
    fn group_norm(&self, x: &Array) -> Result<Array> {
        let batch = x.shape()[0];
        let x = x.reshape(&[batch, -1, self.num_groups])?;
        let means = ops::mean(&x, 1, true)?;
        let var = ops::var(&x, 1, true, 0)?;
        normalize(&x, &means, &var, self.eps)
    }
}

impl Forward for GroupNorm {
    /// Normalizes `x` of shape `[batch, ..., dims]` (Python: `norm(x)`); another feature
    /// count is an `Err`.
    fn forward(&self, x: &Array) -> Result<Array> {
        if x.ndim() < 2 {
            return Err(Error::InvalidArgument(format!(
                "[GroupNorm] expects inputs with at least 2 dimensions (N, ..., C) but the \
                 input has {} dimensions.",
                x.ndim()
            )));
        }
        check_features("GroupNorm", x, self.dims)?;
        let y = if self.pytorch_compatible {
            self.pytorch_compatible_group_norm(x)?
        } else {
            self.group_norm(x)?
        };
        // Python's final reshape to `(batch, *rest, dims)`: the input's own shape.
        let y = y.reshape(x.shape())?;
        affine(y, self.weight.as_ref(), self.bias.as_ref())
    }
}

// ---------------------------------------------------------------------------------------------
// InstanceNorm

mlx_rs::options! {
    /// The keyword arguments of [`InstanceNorm::new`], with Python's defaults (`eps=1e-5`,
    /// `affine=False`). `affine` decides which parameters exist.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct InstanceNormOptions {
        /// Added to the variance (a Python float).
        eps: plain f64 = 1e-5,
        /// Whether the layer has a learned `weight` and `bias`.
        affine: plain bool = false,
    }
}

/// Instance normalization (Python: `nn.InstanceNorm(dims, eps=1e-5, affine=False)`): each
/// feature of each batch entry is normalized over the spatial axes of an `[N, ..., C]` input
/// (at least 3 dimensions).
///
/// ```
/// use mlx_nn::{Forward, InstanceNorm, InstanceNormOptions, Module};
/// use mlx_rs::ops;
/// let norm = InstanceNorm::new(3, InstanceNormOptions::default().affine(true))?;
/// assert_eq!(norm.num_parameters()?, 6);
/// let y = norm.forward(&ops::arange(0.0f32, 24.0, None, None)?.reshape(&[2, 4, 3])?)?;
/// assert_eq!(y.shape(), &[2, 4, 3]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct InstanceNorm {
    pub weight: Option<Array>,
    pub bias: Option<Array>,
    #[tree(static)]
    pub dims: i32,
    /// Added to the variance (f64, as Python's float).
    #[tree(static)]
    pub eps: f64,
    #[tree(static)]
    pub frozen: Frozen,
}

impl InstanceNorm {
    /// A new layer (with `affine`: weight ones, bias zeros). Errors unless `eps > 0`.
    pub fn new(dims: i32, options: InstanceNormOptions) -> Result<InstanceNorm> {
        let InstanceNormOptions { eps, affine } = options;
        check_eps("InstanceNorm", eps)?;
        let (weight, bias) = if affine {
            (
                Some(ops::ones(&[dims], None)?),
                Some(ops::zeros(&[dims], None)?),
            )
        } else {
            (None, None)
        };
        Ok(InstanceNorm {
            weight,
            bias,
            dims,
            eps,
            frozen: Frozen::default(),
        })
    }
}

impl Forward for InstanceNorm {
    /// Normalizes `x` of shape `[N, ..., dims]` (Python: `norm(x)`); another feature count is
    /// an `Err`.
    fn forward(&self, x: &Array) -> Result<Array> {
        let ndim = x.ndim();
        if ndim < 3 {
            return Err(Error::InvalidArgument(format!(
                "[InstanceNorm] expects inputs with at least 3 dimensions (N, ..., C) but the \
                 input has {ndim} dimensions."
            )));
        }
        check_features("InstanceNorm", x, self.dims)?;
        let shape = x.shape();
        let (batch, features) = (shape[0], shape[ndim - 1]);
        let spatial = &shape[1..ndim - 1];
        let n = ndim as i32;
        // Channels first, so layer_norm's last axis is the spatial positions of one channel.
        let channels_first: Vec<i32> = [0, n - 1].into_iter().chain(1..n - 1).collect();
        let x = x
            .transpose(channels_first)?
            .reshape(&[batch, features, -1])?;
        let x = fast::layer_norm(&x, None, None, self.eps as f32)?;
        let unflat: Vec<i32> = [batch, features].iter().chain(spatial).copied().collect();
        let channels_last: Vec<i32> = [0].into_iter().chain(2..n).chain([1]).collect();
        let x = x.reshape(&unflat)?.transpose(channels_last)?;
        affine(x, self.weight.as_ref(), self.bias.as_ref())
    }
}
