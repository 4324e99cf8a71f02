//! Learning-rate schedules (Python: `mlx.optimizers.schedulers`). Each returns a
//! [`Schedule`]: a function of the step count (a `uint64` scalar array) built from MLX ops, so
//! it runs inside a compiled step.

use std::f32::consts::PI;
use std::sync::Arc;

use mlx_rs::{ops, Array, Error, Result};

use crate::Schedule;

/// `init * decay_rate ** step` (Python: `optim.exponential_decay(init, decay_rate)`).
pub fn exponential_decay(init: f32, decay_rate: f32) -> Schedule {
    Arc::new(move |step: &Array| Ok(ops::power(decay_rate, step)? * init))
}

/// `init * decay_rate ** (step // step_size)` (Python: `optim.step_decay(init, decay_rate,
/// step_size)`).
pub fn step_decay(init: f32, decay_rate: f32, step_size: u64) -> Result<Schedule> {
    if step_size < 1 {
        return Err(Error::InvalidArgument(format!(
            "step_size must be greater than 0, but got {step_size}."
        )));
    }
    Ok(Arc::new(move |step: &Array| {
        Ok(ops::power(decay_rate, &ops::floor_divide(step, step_size as i64)?)? * init)
    }))
}

/// Cosine decay from `init` to `end` over `decay_steps`, constant after (Python:
/// `optim.cosine_decay(init, decay_steps, end=0.0)`).
pub fn cosine_decay(init: f32, decay_steps: u64, end: impl Into<Option<f32>>) -> Result<Schedule> {
    if decay_steps < 1 {
        return Err(Error::InvalidArgument(format!(
            "decay_steps must be greater than 0, but got {decay_steps}."
        )));
    }
    let end = end.into().unwrap_or(0.0);
    Ok(Arc::new(move |step: &Array| {
        let s = ops::minimum(step, decay_steps as i64)?;
        let decay = (ops::cos(&(&s * (PI / decay_steps as f32)))? + 1.0) * 0.5;
        Ok(decay * (init - end) + end)
    }))
}

/// Linear from `init` to `end` over `steps`, constant after (Python:
/// `optim.linear_schedule(init, end, steps)`); the usual warmup.
pub fn linear_schedule(init: f32, end: f32, steps: u64) -> Result<Schedule> {
    if steps < 1 {
        return Err(Error::InvalidArgument(format!(
            "steps must be greater than 0, but got {steps}."
        )));
    }
    Ok(Arc::new(move |step: &Array| {
        let s = ops::minimum(step, steps as i64)?;
        Ok(s * ((end - init) / steps as f32) + init)
    }))
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
    Ok(Arc::new(move |step: &Array| {
        let mut output = schedules[0](step)?;
        for (boundary, schedule) in boundaries.iter().zip(&schedules[1..]) {
            let later = schedule(&(step - *boundary as i64))?;
            output = ops::where_(&ops::less(step, *boundary as i64)?, &output, &later)?;
        }
        Ok(output)
    }))
}
