//! Loss functions (Python: `mlx.nn.losses`), each computing Python's formula with Python's
//! default reduction.

use mlx_rs::ops;
use mlx_rs::{Array, Error, Result};

/// How a per-element loss is reduced (Python: `reduction="none" | "mean" | "sum"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    /// No reduction.
    None,
    /// The mean of all elements.
    Mean,
    /// The sum of all elements.
    Sum,
}

fn reduce(loss: Array, reduction: Reduction) -> Result<Array> {
    match reduction {
        Reduction::None => Ok(loss),
        Reduction::Mean => loss.mean(None, false),
        Reduction::Sum => loss.sum(None, false),
    }
}

fn apply_weights(loss: Array, weights: Option<&Array>) -> Result<Array> {
    match weights {
        None => Ok(loss),
        Some(w) if w.shape() == loss.shape() => Ok(loss * w),
        Some(w) => Err(Error::InvalidArgument(format!(
            "Weights with shape {:?} is not the same as output loss with shape {:?}.",
            w.shape(),
            loss.shape()
        ))),
    }
}

fn norm_axis(axis: i32, ndim: usize) -> Result<usize> {
    let n = ndim as i32;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n {
        return Err(Error::InvalidArgument(format!(
            "axis {axis} is out of bounds for an array of dimension {ndim}"
        )));
    }
    Ok(a as usize)
}

mlx_rs::options! {
    /// The keyword arguments of [`cross_entropy`], with Python's defaults (`weights=None`,
    /// `axis=-1`, `label_smoothing=0.0`, `reduction="none"`).
    ///
    /// ```
    /// use mlx_nn::losses::{CrossEntropyOptions, Reduction};
    /// let o = CrossEntropyOptions::default().label_smoothing(0.1).reduction(Reduction::Mean);
    /// assert_eq!((o.axis, o.label_smoothing, o.reduction), (-1, 0.1, Reduction::Mean));
    /// ```
    #[derive(Debug, Clone)]
    pub struct CrossEntropyOptions<'a> {
        /// Per-element weights of the loss, shaped like it.
        weights: array = None,
        /// The class axis of `logits`.
        axis: plain i32 = -1,
        /// Label smoothing in `[0, 1)`.
        label_smoothing: plain f32 = 0.0,
        /// The reduction.
        reduction: plain Reduction = Reduction::None,
    }
}

/// Cross entropy between `logits` and `targets` (class indices, or probabilities of the
/// logits' shape) along `axis` (Python: `nn.losses.cross_entropy(logits, targets,
/// weights=None, axis=-1, label_smoothing=0.0, reduction="none")`).
///
/// ```
/// use mlx_nn::losses::{cross_entropy, CrossEntropyOptions, Reduction};
/// use mlx_rs::Array;
/// let logits = Array::from_slice(&[2.0f32, 0.0, 0.0, 2.0], &[2, 2])?;
/// let targets = Array::from_slice(&[0i32, 1], &[2])?;
/// let opts = CrossEntropyOptions::default().reduction(Reduction::Mean);
/// let loss = cross_entropy(&logits, &targets, opts)?;
/// assert!((loss.item::<f32>()? - 0.126_928).abs() < 1e-5); // log(1 + e^-2)
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn cross_entropy(
    logits: &Array,
    targets: &Array,
    options: CrossEntropyOptions<'_>,
) -> Result<Array> {
    let CrossEntropyOptions {
        weights,
        axis,
        label_smoothing,
        reduction,
    } = options;
    if !(0.0..1.0).contains(&label_smoothing) {
        return Err(Error::InvalidArgument(format!(
            "Label smoothing must be in [0, 1), got {label_smoothing}."
        )));
    }
    let targets_as_probs = targets.ndim() == logits.ndim();
    let ax = norm_axis(axis, logits.ndim())?;
    let mut dropped = logits.shape().to_vec();
    dropped.remove(ax);
    if (targets_as_probs && targets.shape() != logits.shape())
        || (!targets_as_probs && targets.shape() != dropped.as_slice())
    {
        return Err(Error::InvalidArgument(format!(
            "Targets shape {:?} does not match logits shape {:?}.",
            targets.shape(),
            logits.shape()
        )));
    }
    let logits = logits - ops::stop_gradient(&logits.max(axis, true)?)?;
    let score = if targets_as_probs {
        (&logits * targets).sum(axis, false)?
    } else {
        ops::take_along_axis(&logits, &ops::expand_dims(targets, axis)?, axis)?.squeeze(axis)?
    };
    let lse = ops::logsumexp(&logits, axis, false)?;
    let loss = if label_smoothing > 0.0 {
        let adjusted = score * (1.0 - label_smoothing);
        let smoothed = -logits.mean(axis, false)? * label_smoothing;
        lse - adjusted + smoothed
    } else {
        lse - score
    };
    reduce(apply_weights(loss, weights)?, reduction)
}

mlx_rs::options! {
    /// The keyword arguments of [`binary_cross_entropy`], with Python's defaults
    /// (`weights=None`, `with_logits=True`, `reduction="mean"`).
    #[derive(Debug, Clone)]
    pub struct BinaryCrossEntropyOptions<'a> {
        /// Per-element weights of the loss, shaped like it.
        weights: array = None,
        /// Whether `inputs` are logits (`true`) or probabilities.
        with_logits: plain bool = true,
        /// The reduction.
        reduction: plain Reduction = Reduction::Mean,
    }
}

/// Binary cross entropy of `inputs` (logits by default, or probabilities) against `targets`
/// (Python: `nn.losses.binary_cross_entropy(inputs, targets, weights=None, with_logits=True,
/// reduction="mean")`).
pub fn binary_cross_entropy(
    inputs: &Array,
    targets: &Array,
    options: BinaryCrossEntropyOptions<'_>,
) -> Result<Array> {
    let BinaryCrossEntropyOptions {
        weights,
        with_logits,
        reduction,
    } = options;
    if inputs.shape() != targets.shape() {
        return Err(Error::InvalidArgument(format!(
            "Inputs shape {:?} does not match targets shape {:?}.",
            inputs.shape(),
            targets.shape()
        )));
    }
    let loss = if with_logits {
        ops::logaddexp(0.0, inputs)? - inputs * targets
    } else {
        let log_in = ops::clip(&ops::log(inputs)?, -100.0, None)?;
        let log_inv = ops::clip(&ops::log(&(1.0 - inputs))?, -100.0, None)?;
        -(targets * &log_in + (1.0 - targets) * &log_inv)
    };
    reduce(apply_weights(loss, weights)?, reduction)
}

fn check_same(predictions: &Array, targets: &Array) -> Result<()> {
    if predictions.shape() != targets.shape() {
        return Err(Error::InvalidArgument(format!(
            "Predictions shape {:?} does not match targets shape {:?}.",
            predictions.shape(),
            targets.shape()
        )));
    }
    Ok(())
}

/// Mean squared error (Python: `nn.losses.mse_loss(predictions, targets, reduction="mean")`).
pub fn mse_loss(
    predictions: &Array,
    targets: &Array,
    reduction: impl Into<Option<Reduction>>,
) -> Result<Array> {
    check_same(predictions, targets)?;
    reduce(
        ops::square(&(predictions - targets))?,
        reduction.into().unwrap_or(Reduction::Mean),
    )
}

/// Mean absolute error (Python: `nn.losses.l1_loss(predictions, targets, reduction="mean")`).
pub fn l1_loss(
    predictions: &Array,
    targets: &Array,
    reduction: impl Into<Option<Reduction>>,
) -> Result<Array> {
    check_same(predictions, targets)?;
    reduce(
        ops::abs(&(predictions - targets))?,
        reduction.into().unwrap_or(Reduction::Mean),
    )
}

/// Negative log likelihood of log-probabilities `inputs` at class `targets` (Python:
/// `nn.losses.nll_loss(inputs, targets, axis=-1, reduction="none")`).
pub fn nll_loss(
    inputs: &Array,
    targets: &Array,
    axis: impl Into<Option<i32>>,
    reduction: impl Into<Option<Reduction>>,
) -> Result<Array> {
    let axis = axis.into().unwrap_or(-1);
    let picked =
        ops::take_along_axis(inputs, &ops::expand_dims(targets, axis)?, axis)?.squeeze(axis)?;
    reduce(-picked, reduction.into().unwrap_or(Reduction::None))
}

/// Kullback-Leibler divergence of log-probabilities (Python: `nn.losses.kl_div_loss(inputs,
/// targets, axis=-1, reduction="none")`).
pub fn kl_div_loss(
    inputs: &Array,
    targets: &Array,
    axis: impl Into<Option<i32>>,
    reduction: impl Into<Option<Reduction>>,
) -> Result<Array> {
    let axis = axis.into().unwrap_or(-1);
    let loss = (ops::exp(targets)? * (targets - inputs)).sum(axis, false)?;
    reduce(loss, reduction.into().unwrap_or(Reduction::None))
}

/// Smooth L1 loss (Python: `nn.losses.smooth_l1_loss(predictions, targets, beta=1.0,
/// reduction="mean")`).
pub fn smooth_l1_loss(
    predictions: &Array,
    targets: &Array,
    beta: impl Into<Option<f32>>,
    reduction: impl Into<Option<Reduction>>,
) -> Result<Array> {
    check_same(predictions, targets)?;
    let beta = beta.into().unwrap_or(1.0);
    let diff = ops::abs(&(predictions - targets))?;
    let loss = ops::where_(
        &ops::less(&diff, beta)?,
        &(ops::square(&diff)? * 0.5 / beta),
        &(ops::abs(&diff)? - 0.5 * beta),
    )?;
    reduce(loss, reduction.into().unwrap_or(Reduction::Mean))
}
