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
    // Python takes MLX's fused kernel where it has one: class indices, no smoothing, the
    // last axis, with a CUDA GPU as the default device. It rounds (and its gradient sums)
    // differently from the ops below, so only the same choice gives Python's bits there.
    let use_fast = !targets_as_probs
        && label_smoothing == 0.0
        && ax + 1 == logits.ndim()
        && logits.dtype().is_floating()
        && targets.dtype().is_integer()
        && mlx_rs::cuda::is_available()?
        && mlx_rs::Device::default_device()?.device_type() == mlx_rs::DeviceType::Gpu;
    if use_fast {
        let loss = mlx_rs::fast::cross_entropy(logits, targets)?.astype(logits.dtype())?;
        return reduce(apply_weights(loss, weights)?, reduction);
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
    check_shapes(("Predictions", predictions), ("targets", targets))
}

/// Python's "`A` shape (..) does not match `b` shape (..)." unless the two shapes are equal.
fn check_shapes((a_name, a): (&str, &Array), (b_name, b): (&str, &Array)) -> Result<()> {
    if a.shape() != b.shape() {
        return Err(Error::InvalidArgument(format!(
            "{a_name} shape {:?} does not match {b_name} shape {:?}.",
            a.shape(),
            b.shape()
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

/// Hinge loss `max(1 - inputs * targets, 0)` for targets in {-1, 1} (Python:
/// `nn.losses.hinge_loss(inputs, targets, reduction="none")`).
pub fn hinge_loss(
    inputs: &Array,
    targets: &Array,
    reduction: impl Into<Option<Reduction>>,
) -> Result<Array> {
    let loss = ops::maximum(&(1.0 - &(inputs * targets)), 0.0)?;
    reduce(loss, reduction.into().unwrap_or(Reduction::None))
}

/// Huber loss: quadratic within `delta` (default 1.0) of the target, linear beyond (Python:
/// `nn.losses.huber_loss(inputs, targets, delta=1.0, reduction="none")`).
pub fn huber_loss(
    inputs: &Array,
    targets: &Array,
    delta: impl Into<Option<f32>>,
    reduction: impl Into<Option<Reduction>>,
) -> Result<Array> {
    let delta = delta.into().unwrap_or(1.0);
    let abs_errors = ops::abs(&(inputs - targets))?;
    let quadratic = ops::minimum(&abs_errors, delta)?;
    let linear = &abs_errors - &quadratic;
    // Python's `quadratic**2` is `mx.power`, not `mx.square`.
    let loss = ops::power(&quadratic, 2.0)? * 0.5 + linear * delta;
    reduce(loss, reduction.into().unwrap_or(Reduction::None))
}

/// `log(cosh(inputs - targets))`, computed as `logaddexp(e, -e) - log(2)` (Python:
/// `nn.losses.log_cosh_loss(inputs, targets, reduction="none")`).
pub fn log_cosh_loss(
    inputs: &Array,
    targets: &Array,
    reduction: impl Into<Option<Reduction>>,
) -> Result<Array> {
    let errors = inputs - targets;
    // Python's `math.log(2)`: f64, rounded once.
    let loss = ops::logaddexp(&errors, &(-&errors))? - std::f64::consts::LN_2 as f32;
    reduce(loss, reduction.into().unwrap_or(Reduction::None))
}

mlx_rs::options! {
    /// The keyword arguments of [`cosine_similarity_loss`], with Python's defaults (`axis=1`,
    /// `eps=1e-8`, `reduction="none"`).
    #[derive(Debug, Clone, Copy)]
    pub struct CosineSimilarityLossOptions {
        /// The axis the vectors lie along.
        axis: plain i32 = 1,
        /// The smallest product of norms divided by.
        eps: plain f32 = 1e-8,
        /// The reduction.
        reduction: plain Reduction = Reduction::None,
    }
}

/// The cosine similarity of `x1` and `x2` along an axis (Python:
/// `nn.losses.cosine_similarity_loss(x1, x2, axis=1, eps=1e-8, reduction="none")`).
pub fn cosine_similarity_loss(
    x1: &Array,
    x2: &Array,
    options: CosineSimilarityLossOptions,
) -> Result<Array> {
    let CosineSimilarityLossOptions {
        axis,
        eps,
        reduction,
    } = options;
    let x1_norm = mlx_rs::linalg::norm(x1, None, axis, false)?;
    let x2_norm = mlx_rs::linalg::norm(x2, None, axis, false)?;
    let loss = (x1 * x2).sum(axis, false)? / ops::maximum(&(&x1_norm * &x2_norm), eps)?;
    reduce(loss, reduction)
}

/// `max(0, -targets * (inputs1 - inputs2) + margin)`, all three of one shape (Python:
/// `nn.losses.margin_ranking_loss(inputs1, inputs2, targets, margin=0.0,
/// reduction="none")`).
pub fn margin_ranking_loss(
    inputs1: &Array,
    inputs2: &Array,
    targets: &Array,
    margin: impl Into<Option<f32>>,
    reduction: impl Into<Option<Reduction>>,
) -> Result<Array> {
    if inputs1.shape() != inputs2.shape() || inputs1.shape() != targets.shape() {
        return Err(Error::InvalidArgument(format!(
            "The shapes of the arguments do not match. The provided shapes are \
             inputs1.shape={:?}, inputs2.shape={:?}, and targets.shape={:?}.",
            inputs1.shape(),
            inputs2.shape(),
            targets.shape()
        )));
    }
    let differences = inputs1 - inputs2;
    let loss = ops::maximum(
        0.0,
        &(&(-targets) * &differences + margin.into().unwrap_or(0.0)),
    )?;
    reduce(loss, reduction.into().unwrap_or(Reduction::None))
}

mlx_rs::options! {
    /// The keyword arguments of [`gaussian_nll_loss`], with Python's defaults (`full=False`,
    /// `eps=1e-6`, `reduction="mean"`).
    #[derive(Debug, Clone, Copy)]
    pub struct GaussianNllLossOptions {
        /// Adds the constant `0.5 * log(2 * pi)`.
        full: plain bool = false,
        /// The smallest variance (for stability).
        eps: plain f32 = 1e-6,
        /// The reduction.
        reduction: plain Reduction = Reduction::Mean,
    }
}

/// The negative log likelihood of `targets` under Gaussians of mean `inputs` and variance
/// `vars`, all three of one shape (Python: `nn.losses.gaussian_nll_loss(inputs, targets, vars,
/// full=False, eps=1e-6, reduction="mean")`).
pub fn gaussian_nll_loss(
    inputs: &Array,
    targets: &Array,
    vars: &Array,
    options: GaussianNllLossOptions,
) -> Result<Array> {
    let GaussianNllLossOptions {
        full,
        eps,
        reduction,
    } = options;
    check_shapes(("Inputs", inputs), ("targets", targets))?;
    check_shapes(("Inputs", inputs), ("vars", vars))?;
    let vars = ops::maximum(vars, eps)?;
    let mut loss = (ops::log(&vars)? + ops::square(&(targets - inputs))? / &vars) * 0.5;
    if full {
        // Python's `0.5 * math.log(2 * math.pi)`: f64, rounded once.
        loss = loss + (0.5 * (2.0 * std::f64::consts::PI).ln()) as f32;
    }
    reduce(loss, reduction)
}

mlx_rs::options! {
    /// The keyword arguments of [`triplet_loss`], with Python's defaults (`axis=-1`, `p=2`,
    /// `margin=1.0`, `eps=1e-6`, `reduction="none"`).
    #[derive(Debug, Clone, Copy)]
    pub struct TripletLossOptions {
        /// The axis of the embeddings.
        axis: plain i32 = -1,
        /// The norm's degree.
        p: plain i32 = 2,
        /// The margin between positive and negative distances.
        margin: plain f32 = 1.0,
        /// Added inside the norm (for stability).
        eps: plain f32 = 1e-6,
        /// The reduction.
        reduction: plain Reduction = Reduction::None,
    }
}

/// The triplet margin loss `max(d(a, p) - d(a, n) + margin, 0)` with `p`-norm distances
/// (Python: `nn.losses.triplet_loss(anchors, positives, negatives, axis=-1, p=2, margin=1.0,
/// eps=1e-6, reduction="none")`).
pub fn triplet_loss(
    anchors: &Array,
    positives: &Array,
    negatives: &Array,
    options: TripletLossOptions,
) -> Result<Array> {
    let TripletLossOptions {
        axis,
        p,
        margin,
        eps,
        reduction,
    } = options;
    // Python's `1.0 / p`: f64, rounded once.
    let inv_p = (1.0 / f64::from(p)) as f32;
    let distance = |other: &Array| -> Result<Array> {
        let powered = ops::power(&ops::abs(&(anchors - other))?, p as f32)?;
        ops::power(&(powered.sum(axis, false)? + eps), inv_p)
    };
    let loss = ops::maximum(&(distance(positives)? - distance(negatives)? + margin), 0.0)?;
    reduce(loss, reduction)
}
