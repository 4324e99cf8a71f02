//! Shared helpers for the integration tests. Include with `mod support;`.
#![allow(dead_code)]

pub mod golden;
pub mod lm;
