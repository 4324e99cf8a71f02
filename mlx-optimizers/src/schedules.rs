//! Learning-rate schedules (Python: `mlx.optimizers.schedulers`).
//!
//! Python's schedules are closures; here a [`Schedule`] is *data* (an enum of the schedule
//! kinds with their numbers). That makes it static data of the optimizer's tree: it is part of
//! the structure, so it survives every transform (a compiled step rebuilds the optimizer from
//! its structure and leaves) and serializes with it. [`Schedule::call`] evaluates it with MLX
//! ops on the step count (a `uint64` scalar array), so inside a compiled step the rate changes
//! every call without retracing.

use std::f64::consts::PI;

use mlx_rs::{ops, Array, Error, Result};
use mlx_tree::StaticData;

/// A learning-rate schedule; build one with [`exponential_decay`], [`step_decay`],
/// [`cosine_decay`], [`linear_schedule`] or [`join_schedules`].
///
/// Values are `f64`, as Python's floats: what Python derives from them before they meet an
/// array (`init - end`, `math.pi / decay_steps`) is computed in f64 and rounded to f32 once.
#[derive(Debug, Clone, PartialEq, StaticData)]
pub enum Schedule {
    /// `init * decay_rate ** step`.
    ExponentialDecay { init: f64, decay_rate: f64 },
    /// `init * decay_rate ** (step // step_size)`.
    StepDecay {
        init: f64,
        decay_rate: f64,
        step_size: u64,
    },
    /// Cosine from `init` to `end` over `decay_steps`, then constant.
    CosineDecay {
        init: f64,
        decay_steps: u64,
        end: f64,
    },
    /// Linear from `init` to `end` over `steps`, then constant.
    Linear { init: f64, end: f64, steps: u64 },
    /// `schedules[i + 1]` from `boundaries[i]` on, counting steps from the boundary.
    Join {
        schedules: Vec<Schedule>,
        boundaries: Vec<u64>,
    },
}

impl Schedule {
    /// The value at `step` (Python: `schedule(step)`), computed as Python computes it.
    pub fn call(&self, step: &Array) -> Result<Array> {
        match self {
            Schedule::ExponentialDecay { init, decay_rate } => {
                Ok(ops::power(*decay_rate as f32, step)? * *init as f32)
            }
            Schedule::StepDecay {
                init,
                decay_rate,
                step_size,
            } => Ok(ops::power(
                *decay_rate as f32,
                &ops::floor_divide(step, *step_size as i64)?,
            )? * *init as f32),
            Schedule::CosineDecay {
                init,
                decay_steps,
                end,
            } => {
                let s = ops::minimum(step, *decay_steps as i64)?;
                let decay = (ops::cos(&(&s * (PI / *decay_steps as f64) as f32))? + 1.0) * 0.5;
                Ok(decay * (init - end) as f32 + *end as f32)
            }
            Schedule::Linear { init, end, steps } => {
                let s = ops::minimum(step, *steps as i64)?;
                Ok(s * ((end - init) / *steps as f64) as f32 + *init as f32)
            }
            Schedule::Join {
                schedules,
                boundaries,
            } => {
                let mut output = schedules[0].call(step)?;
                for (boundary, schedule) in boundaries.iter().zip(&schedules[1..]) {
                    let b = *boundary as i64;
                    let later = schedule.call(&(step - b))?;
                    output = ops::where_(&ops::less(step, b)?, &output, &later)?;
                }
                Ok(output)
            }
        }
    }
}

fn positive(name: &str, v: u64) -> Result<()> {
    if v < 1 {
        return Err(Error::InvalidArgument(format!(
            "{name} must be greater than 0, but got {v}."
        )));
    }
    Ok(())
}

/// `init * decay_rate ** step` (Python: `optim.exponential_decay(init, decay_rate)`).
pub fn exponential_decay(init: f64, decay_rate: f64) -> Schedule {
    Schedule::ExponentialDecay { init, decay_rate }
}

/// `init * decay_rate ** (step // step_size)` (Python: `optim.step_decay(init, decay_rate,
/// step_size)`).
pub fn step_decay(init: f64, decay_rate: f64, step_size: u64) -> Result<Schedule> {
    positive("step_size", step_size)?;
    Ok(Schedule::StepDecay {
        init,
        decay_rate,
        step_size,
    })
}

/// Cosine decay from `init` to `end` over `decay_steps`, constant after (Python:
/// `optim.cosine_decay(init, decay_steps, end=0.0)`).
pub fn cosine_decay(init: f64, decay_steps: u64, end: impl Into<Option<f64>>) -> Result<Schedule> {
    positive("decay_steps", decay_steps)?;
    Ok(Schedule::CosineDecay {
        init,
        decay_steps,
        end: end.into().unwrap_or(0.0),
    })
}

/// Linear from `init` to `end` over `steps`, constant after (Python:
/// `optim.linear_schedule(init, end, steps)`); the usual warmup.
pub fn linear_schedule(init: f64, end: f64, steps: u64) -> Result<Schedule> {
    positive("steps", steps)?;
    Ok(Schedule::Linear { init, end, steps })
}

/// Runs `schedules[i + 1]` from `boundaries[i]` on, with the step counted from that boundary
/// (Python: `optim.join_schedules(schedules, boundaries)`).
pub fn join_schedules(schedules: Vec<Schedule>, boundaries: Vec<u64>) -> Result<Schedule> {
    if schedules.is_empty() {
        return Err(Error::InvalidArgument(
            "Must provide at least 1 schedule to join.".into(),
        ));
    }
    if schedules.len() != boundaries.len() + 1 {
        return Err(Error::InvalidArgument(format!(
            "Received {} boundaries but expected {}.",
            boundaries.len(),
            schedules.len() - 1
        )));
    }
    Ok(Schedule::Join {
        schedules,
        boundaries,
    })
}
