//! Rotary position embeddings as mlx_lm's `initialize_rope` builds them from a config's
//! `rope_scaling` / `rope_parameters`: `default`, `linear`, `llama3` and `yarn`; and the RoPE
//! settings of a config read in one place, at the top level or under transformers 5's
//! `rope_parameters` ([`rope_theta`]). Every key of the scaling object a type takes is read
//! (where transformers and mlx_lm differ on one, as transformers reads it: see
//! [`RotaryEmbedding::from_config`]); any other is left unread for the loader to report.
//!
//! [`RotaryEmbedding`] is not `mlx_nn::RoPE` (the plain layer): it is whichever RoPE variant
//! a config asks for, as Python's `initialize_rope` returns `nn.RoPE`, `Llama3RoPE` or
//! `YarnRoPE`.
//!
//! Frequencies that Python computes with MLX ops at construction (llama3, yarn) are computed
//! here with the same MLX ops on the same float32 values, then kept as static data (exact
//! bits), so the rope survives every tree transform and a compiled step sees them as
//! constants. Constants Python derives from Python floats are computed in f64 and rounded
//! once, as Python does.

use mlx_rs::fast::{self, RopeOffset};
use mlx_rs::ops::{self, Ellipsis};
use mlx_rs::{Array, Dtype};
use mlx_tree::{StaticData, TreeNode};
use serde_json::Value;

use crate::config::{invalid, ModelConfig};
use crate::error::Result;

/// A rotary embedding over the first `dims` features of each head.
#[derive(Debug, Clone, PartialEq, TreeNode)]
pub struct RotaryEmbedding {
    #[tree(static)]
    pub dims: i32,
    #[tree(static)]
    pub traditional: bool,
    /// The base of the default frequencies; `None` when `freqs` are given.
    #[tree(static)]
    pub base: Option<f32>,
    /// Positions are multiplied by it (`linear` scaling: `1 / factor`).
    #[tree(static)]
    pub scale: f32,
    /// Explicit inverse frequencies (`llama3`, `yarn`).
    #[tree(static)]
    pub freqs: Option<Vec<f32>>,
    /// The rotated features are scaled by it first (`yarn`'s mscale).
    #[tree(static)]
    pub input_scale: Option<f32>,
    /// Dynamic NTK scaling: the base grows with the sequence past `max_position_embeddings`.
    #[tree(static)]
    pub dynamic: Option<DynamicNtk>,
}

/// Python: rope_utils' `DynamicNTKScalingRoPE`: at a call whose last position `n = offset +
/// length` passes `max_position_embeddings`, the base is
/// `base * (factor * n / max_position_embeddings - (factor - 1)) ** (dims / (dims - 2))` for
/// all of the call's positions (keys already cached keep the base they were rotated with);
/// up to there it is the plain base.
#[derive(Debug, Clone, Copy, PartialEq, StaticData)]
pub struct DynamicNtk {
    /// The config's base, unrounded (Python scales the Python float).
    pub base: f64,
    pub max_position_embeddings: f64,
    pub factor: f64,
}

/// What an architecture's `ModelArgs` default the position limits a scaled rope reads to,
/// where the config does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RopeDefaults {
    /// `max_position_embeddings` (a dynamic or longrope rope's; the scale of longrope).
    pub max_position_embeddings: Option<f64>,
    /// `original_max_position_embeddings` at the config's top level (phi3's; a longrope
    /// section's own key comes first).
    pub original_max_position_embeddings: Option<f64>,
}

/// Python: `initialize_rope(dims, base, traditional, scaling_config)` with the scaling read from
/// `config` ([`RotaryEmbedding::from_config`]).
pub fn initialize_rope(
    config: &ModelConfig,
    dims: i32,
    base: f64,
    traditional: bool,
) -> Result<RotaryEmbedding> {
    RotaryEmbedding::from_config(config, dims, base, traditional)
}

/// A config's `rope_theta`: at the top level, under transformers 5's `rope_parameters` or in
/// `rope_scaling`, else `default` (`None`: required). transformers 5 writes it under
/// `rope_parameters` only; mlx_lm reads the top level only for most architectures and
/// silently takes its default. Where two places disagree, transformers takes the nested value
/// and mlx_lm the top-level one, so a config that says both is an error naming them.
pub fn rope_theta(config: &ModelConfig, default: Option<f64>) -> Result<f64> {
    rope_setting(config, "rope_theta", default)
}

/// A config's `partial_rotary_factor` (the share of each head's features that rotate), found
/// as [`rope_theta`] is: at the top level (mlx_lm), under `rope_parameters` (transformers 5)
/// or in `rope_scaling`, else `default`; places that disagree are an error naming them.
pub fn partial_rotary_factor(config: &ModelConfig, default: Option<f64>) -> Result<f64> {
    rope_setting(config, "partial_rotary_factor", default)
}

fn rope_setting(config: &ModelConfig, key: &str, default: Option<f64>) -> Result<f64> {
    let mut found: Vec<(String, f64)> = Vec::new();
    if let Some(theta) = config.float(key)? {
        found.push((config.key(key), theta));
    }
    for section in ["rope_parameters", "rope_scaling"] {
        if let Some(s) = config.section(section) {
            if let Some(theta) = s.float(key)? {
                found.push((s.key(key), theta));
            }
        }
    }
    match found.as_slice() {
        [] => default.ok_or_else(|| invalid(config.path(), &config.key(key), "missing")),
        [(key, theta), rest @ ..] => match rest.iter().find(|(_, t)| t != theta) {
            None => Ok(*theta),
            Some((other, t)) => Err(invalid(
                config.path(),
                key,
                &format!("{theta}, but {other} is {t}: which one applies is ambiguous"),
            )),
        },
    }
}

/// The rope parameters of a config: `rope_scaling`, else transformers 5's `rope_parameters`
/// (transformers' `rope_scaling or rope_parameters`), as a section whose keys are recorded as
/// they are read. A null or empty one means no scaling.
fn scaling_section(config: &ModelConfig) -> Result<Option<ModelConfig>> {
    let mut chosen = None;
    for key in ["rope_scaling", "rope_parameters"] {
        match config.values().get(key) {
            None => {}
            Some(Value::Object(map)) if !map.is_empty() && chosen.is_none() => {
                chosen = config.section(key);
            }
            // Beside a `rope_scaling`, which transformers takes instead: left unread.
            Some(Value::Object(map)) if !map.is_empty() => {}
            Some(Value::Null | Value::Object(_)) => config.declare_neutral(&[key]),
            Some(v) => {
                return Err(invalid(
                    config.path(),
                    &config.key(key),
                    &format!("expected an object, found {v}"),
                ))
            }
        }
    }
    Ok(chosen)
}

/// The rope type of a scaling section: `type` or `rope_type` (mlx_lm reads the first,
/// transformers the second; they must agree where both are given).
fn rope_type(s: &ModelConfig) -> Result<String> {
    match (s.string("type")?, s.string("rope_type")?) {
        (Some(a), Some(b)) if a != b => Err(invalid(
            s.path(),
            &s.key("type"),
            &format!("{a:?}, but rope_type is {b:?}"),
        )),
        (Some(t), _) | (None, Some(t)) => Ok(t.to_string()),
        (None, None) => Ok("default".to_string()),
    }
}

impl RotaryEmbedding {
    /// Python: `nn.RoPE(dims, traditional, base)`.
    pub fn plain(dims: i32, traditional: bool, base: f32) -> RotaryEmbedding {
        RotaryEmbedding {
            dims,
            traditional,
            base: Some(base),
            scale: 1.0,
            freqs: None,
            input_scale: None,
            dynamic: None,
        }
    }

    /// Python: `SuScaledRoPE(dims, base, max_position_embeddings,
    /// original_max_position_embeddings, long_factor=long_factor, long_mscale=long_mscale)`
    /// (its short factors and `short_mscale` are never used): frequencies `long_factor * base **
    /// (arange(0, dims, 2) / dims)`, the rotated features scaled first by `long_mscale` when it
    /// is given and not 0, else by `sqrt(1 + ln(factor) / ln(original))` for `factor = max /
    /// original` above 1.
    pub fn su_scaled(
        dims: i32,
        base: f64,
        long_factor: Vec<f32>,
        max_position_embeddings: f64,
        original_max_position_embeddings: f64,
        long_mscale: Option<f64>,
    ) -> mlx_rs::Result<RotaryEmbedding> {
        let su = SuScaled {
            dims,
            base,
            long_factor,
            max_position_embeddings,
            original_max_position_embeddings,
        };
        // Python: `long_mscale or ...`: a zero scale counts as none.
        let scale = long_mscale
            .filter(|&m| m != 0.0)
            .unwrap_or_else(|| su.scale());
        Ok(RotaryEmbedding {
            base: None,
            freqs: Some(su.freqs()?),
            input_scale: Some(scale as f32),
            ..RotaryEmbedding::plain(dims, false, base as f32)
        })
    }

    /// Python: `initialize_rope(dims, base, traditional, scaling_config,
    /// max_position_embeddings)`, with the scaling read from `config`'s `rope_scaling` or
    /// `rope_parameters`. Every key of that object is read here except `rope_theta` (read by
    /// [`rope_theta`]) and `partial_rotary_factor` (the architecture's, which gives `dims`):
    /// one this code does not know is left unread, for the loader to report.
    ///
    /// Where transformers 5.23 and mlx_lm 0.32.2 compute a type differently, this follows
    /// transformers: a llama3 or yarn `original_max_position_embeddings` defaults to the
    /// config's `max_position_embeddings` (mlx_lm: 8192, 4096); yarn's `attention_factor`
    /// is the scale when given, `mscale` / `mscale_all_dim` count only together (mlx_lm uses
    /// either alone), and `truncate: false` leaves the correction range unrounded. mlx_lm's
    /// own `deepseek_yarn` and `telechat3-yarn` keep mlx_lm's rules.
    pub fn from_config(
        config: &ModelConfig,
        dims: i32,
        base: f64,
        traditional: bool,
    ) -> Result<RotaryEmbedding> {
        Self::from_config_or(config, dims, base, traditional, None)
    }

    /// [`from_config`](Self::from_config) for an architecture whose `max_position_embeddings`
    /// has a default (a dynamic rope's; internlm3: 32768).
    pub fn from_config_or(
        config: &ModelConfig,
        dims: i32,
        base: f64,
        traditional: bool,
        max_position_embeddings_default: Option<f64>,
    ) -> Result<RotaryEmbedding> {
        Self::from_config_with(
            config,
            dims,
            base,
            traditional,
            RopeDefaults {
                max_position_embeddings: max_position_embeddings_default,
                original_max_position_embeddings: None,
            },
        )
    }

    /// [`from_config`](Self::from_config) for an architecture whose position limits have
    /// defaults (phi3's: 131072 and 4096).
    pub fn from_config_with(
        config: &ModelConfig,
        dims: i32,
        base: f64,
        traditional: bool,
        defaults: RopeDefaults,
    ) -> Result<RotaryEmbedding> {
        let max_position_embeddings_default = defaults.max_position_embeddings;
        let path = config.path();
        let plain = RotaryEmbedding::plain(dims, traditional, base as f32);
        let Some(s) = scaling_section(config)? else {
            return Ok(plain);
        };
        // Multimodal RoPE: text positions are equal along every section, where it is the
        // plain rope (mlx_lm serves text models so).
        s.declare_neutral(&["mrope_section", "mrope_interleaved"]);
        let number = |name: &str, default: Option<f64>| -> Result<f64> {
            s.float(name)?
                .or(default)
                .ok_or_else(|| invalid(path, &s.key(name), "missing"))
        };
        let max_position_embeddings = || -> Result<Option<f64>> {
            Ok(config
                .float("max_position_embeddings")?
                .or(max_position_embeddings_default))
        };
        let mlx = |source| crate::Error::Mlx {
            path: path.to_path_buf(),
            source,
        };
        let rope_type = rope_type(&s)?;
        match rope_type.as_str() {
            "default" | "mrope" => Ok(plain),
            "linear" => Ok(RotaryEmbedding {
                scale: (1.0 / number("factor", None)?) as f32,
                ..plain
            }),
            // transformers computes its frequencies in another order of operations (and keeps
            // the largest base seen); this is mlx_lm's `DynamicNTKScalingRoPE`.
            "dynamic" => Ok(RotaryEmbedding {
                dynamic: Some(DynamicNtk {
                    base,
                    max_position_embeddings: max_position_embeddings()?.ok_or_else(|| {
                        invalid(
                            path,
                            &config.key("max_position_embeddings"),
                            "missing (a dynamic rope needs it)",
                        )
                    })?,
                    factor: number("factor", None)?,
                }),
                ..plain
            }),
            "llama3" => {
                let freqs = llama3_freqs(
                    dims,
                    base,
                    number("factor", None)?,
                    number("low_freq_factor", Some(1.0))?,
                    number("high_freq_factor", Some(4.0))?,
                    number(
                        "original_max_position_embeddings",
                        max_position_embeddings()?,
                    )?,
                )
                .map_err(mlx)?;
                Ok(RotaryEmbedding {
                    base: None,
                    freqs: Some(freqs),
                    ..plain
                })
            }
            "yarn" | "deepseek_yarn" | "telechat3-yarn" => {
                let transformers = rope_type == "yarn";
                let factor = number("factor", None)?;
                let original = if transformers {
                    max_position_embeddings()?
                } else {
                    Some(4096.0)
                };
                // transformers: `rope_parameters.get("beta_fast") or 32`.
                let beta = |name: &str, default: f64| -> Result<f64> {
                    let v = number(name, Some(default))?;
                    Ok(if transformers && v == 0.0 { default } else { v })
                };
                let yarn = Yarn {
                    dims,
                    base,
                    factor,
                    original_max_position_embeddings: number(
                        "original_max_position_embeddings",
                        original,
                    )?,
                    beta_fast: beta("beta_fast", 32.0)?,
                    beta_slow: beta("beta_slow", 1.0)?,
                    truncate: !transformers || s.bool("truncate")?.unwrap_or(true),
                };
                let mscale = s.float("mscale")?;
                let mscale_all_dim = s.float("mscale_all_dim")?;
                let mscale = if !transformers {
                    yarn_mscale(factor, mscale.unwrap_or(1.0))
                        / yarn_mscale(factor, mscale_all_dim.unwrap_or(0.0))
                } else if let Some(a) = s.float("attention_factor")? {
                    a
                } else {
                    match (mscale, mscale_all_dim) {
                        (Some(m), Some(a)) if m != 0.0 && a != 0.0 => {
                            yarn_mscale(factor, m) / yarn_mscale(factor, a)
                        }
                        _ => yarn_mscale(factor, 1.0),
                    }
                };
                Ok(RotaryEmbedding {
                    base: None,
                    freqs: Some(yarn.freqs().map_err(mlx)?),
                    input_scale: (mscale != 1.0).then_some(mscale as f32),
                    ..plain
                })
            }
            // Python: `SuScaledRoPE` (phi3 builds it for `su` too). The `original_max_position_
            // embeddings` is the section's (initialize_rope's) or the config's (phi3's).
            "longrope" | "su" => {
                let original = match (
                    s.float("original_max_position_embeddings")?,
                    config.float("original_max_position_embeddings")?,
                ) {
                    (Some(a), Some(b)) if a != b => {
                        return Err(invalid(
                            path,
                            &s.key("original_max_position_embeddings"),
                            &format!(
                                "{a}, but original_max_position_embeddings is {b}: which one \
                                 applies is ambiguous"
                            ),
                        ))
                    }
                    (Some(a), _) | (None, Some(a)) => a,
                    (None, None) => defaults.original_max_position_embeddings.ok_or_else(|| {
                        invalid(path, &s.key("original_max_position_embeddings"), "missing")
                    })?,
                };
                let max = max_position_embeddings()?.ok_or_else(|| {
                    invalid(
                        path,
                        &config.key("max_position_embeddings"),
                        "missing (a longrope rope needs it)",
                    )
                })?;
                let factors = |name: &str| -> Result<Vec<f32>> {
                    let v = s.get(name).cloned().unwrap_or(Value::Null);
                    let list = v
                        .as_array()
                        .and_then(|l| l.iter().map(|x| x.as_f64().map(|x| x as f32)).collect())
                        .filter(|l: &Vec<f32>| l.len() as i32 == dims / 2);
                    list.ok_or_else(|| {
                        invalid(
                            path,
                            &s.key(name),
                            &format!("expected {} numbers (dims / 2), found {v}", dims / 2),
                        )
                    })
                };
                // mlx_lm multiplies the frequencies by the long factors at every length;
                // transformers switches to the short ones while the sequence fits in
                // original_max_position_embeddings. This follows mlx_lm: the short factors
                // are checked and unused (see docs/language-models.md, phi3).
                let long = factors("long_factor")?;
                factors("short_factor")?;
                let su = SuScaled {
                    dims,
                    base,
                    long_factor: long,
                    max_position_embeddings: max,
                    original_max_position_embeddings: original,
                };
                Ok(RotaryEmbedding {
                    base: None,
                    freqs: Some(su.freqs().map_err(mlx)?),
                    input_scale: Some(su.scale() as f32),
                    // Python's SuScaledRoPE is never traditional.
                    traditional: false,
                    ..plain
                })
            }
            // llama.cpp's `rope_freqs` tensor, which only GGUF files hold (the GGUF loader
            // writes this type): per-frequency factors dividing each rotary frequency, Llama
            // 3.1's scaling as its converter computed it.
            "gguf_rope_freqs" => {
                let v = s.get("factors").cloned().unwrap_or(Value::Null);
                let factors: Vec<f32> = v
                    .as_array()
                    .and_then(|l| l.iter().map(|x| x.as_f64().map(|x| x as f32)).collect())
                    .filter(|l: &Vec<f32>| l.len() as i32 == dims / 2)
                    .ok_or_else(|| {
                        invalid(
                            path,
                            &s.key("factors"),
                            &format!("expected {} numbers (dims / 2)", dims / 2),
                        )
                    })?;
                let factors = Array::from_slice(&factors, &[factors.len() as i32]).map_err(mlx)?;
                let freqs = ops::multiply(&factors, &base_freqs(dims, base).map_err(mlx)?)
                    .and_then(|f| f.to_vec::<f32>())
                    .map_err(mlx)?;
                Ok(RotaryEmbedding {
                    base: None,
                    freqs: Some(freqs),
                    ..plain
                })
            }
            other => Err(invalid(
                path,
                &s.key("type"),
                &format!(
                    "rope type {other:?} is not supported (default, linear, dynamic, llama3, \
                     yarn, longrope, su)"
                ),
            )),
        }
    }

    /// Rotates `x` (`[batch, heads, length, head_dim]`) for positions starting at `offset`.
    pub fn forward<'o>(
        &self,
        x: &Array,
        offset: impl Into<RopeOffset<'o>>,
    ) -> mlx_rs::Result<Array> {
        let offset = offset.into();
        match self.dynamic {
            Some(dynamic) => self.forward_dynamic(x, offset, dynamic),
            None => self.forward_static(x, offset),
        }
    }

    fn forward_static(&self, x: &Array, offset: RopeOffset<'_>) -> mlx_rs::Result<Array> {
        let scaled;
        let x = match self.input_scale {
            // Python: x.at[..., :dims].multiply(s).
            Some(s) => {
                scaled = x.at((Ellipsis, ..self.dims)).multiply(s)?;
                &scaled
            }
            None => x,
        };
        let freqs = self
            .freqs
            .as_ref()
            .map(|f| Array::from_slice(f, &[f.len() as i32]))
            .transpose()?;
        fast::rope(
            x,
            self.dims,
            self.traditional,
            self.base,
            self.scale,
            offset,
            freqs.as_ref(),
        )
    }

    /// The dynamic NTK rope. Python computes the base in Python floats from an integer
    /// offset; here too where the offset is known on the host: an integer, or a one-element
    /// offset that evaluates (it does not inside a compiled function, whose trace cannot read
    /// it). There, and for a batch's per-sequence offsets, the base is computed with MLX ops
    /// from the offset (the batch's longest sequence, as transformers takes the batch's
    /// largest position) and the rope takes the frequencies it gives: up to
    /// `max_position_embeddings` the plain rope itself (selected, so the same bits), past it
    /// the dynamic base in float32 arithmetic (Python: float64), the rotation angles within
    /// float32 rounding of Python's.
    fn forward_dynamic(
        &self,
        x: &Array,
        offset: RopeOffset<'_>,
        dynamic: DynamicNtk,
    ) -> mlx_rs::Result<Array> {
        let length = x.shape()[x.ndim() - 2];
        let (max_positions, factor) = (dynamic.max_position_embeddings, dynamic.factor);
        let exponent = self.dims as f64 / (self.dims - 2) as f64;
        let base = dynamic.base;
        let offsets = match offset {
            RopeOffset::Int(o) => return self.forward_dynamic_at(x, o, base, dynamic),
            RopeOffset::Array(a) => a,
        };
        // A traced offset cannot be read (the error says so): the ops below serve there.
        if offsets.size() == 1 {
            if let Ok(o) = offsets.item::<i32>() {
                return self.forward_dynamic_at(x, o, base, dynamic);
            }
        }
        let last =
            ops::add(&ops::max(offsets, None::<i32>, false)?, length)?.astype(Dtype::Float32)?;
        let n = ops::maximum(&last, max_positions as f32)?;
        let ratio = ops::subtract(
            &ops::divide(&ops::multiply(&n, factor as f32)?, max_positions as f32)?,
            (factor - 1.0) as f32,
        )?;
        let scaled = ops::multiply(&ops::power(&ratio, exponent as f32)?, base as f32)?;
        let exponents = ops::divide(
            &ops::arange(0, self.dims, 2, Dtype::Float32)?,
            self.dims as f32,
        )?;
        let freqs = ops::power(&scaled, &exponents)?;
        let plain = self.forward_static(x, RopeOffset::Array(offsets))?;
        let scaled = fast::rope(
            x,
            self.dims,
            self.traditional,
            None,
            1.0,
            offsets,
            Some(&freqs),
        )?;
        ops::where_(&ops::greater(&last, max_positions as f32)?, &scaled, &plain)
    }

    /// The dynamic NTK rope at a known integer offset: the base in f64, as Python computes it,
    /// rounded once to float32 by the rope.
    fn forward_dynamic_at(
        &self,
        x: &Array,
        offset: i32,
        base: f64,
        dynamic: DynamicNtk,
    ) -> mlx_rs::Result<Array> {
        let (max_positions, factor) = (dynamic.max_position_embeddings, dynamic.factor);
        let exponent = self.dims as f64 / (self.dims - 2) as f64;
        let length = x.shape()[x.ndim() - 2];
        let n = ((length + offset) as f64).max(max_positions);
        let scaled = base * (factor * n / max_positions - (factor - 1.0)).powf(exponent);
        let rope = RotaryEmbedding {
            base: Some(scaled as f32),
            dynamic: None,
            ..self.clone()
        };
        rope.forward_static(x, RopeOffset::Int(offset))
    }
}

/// `base ** (arange(0, dims, 2) / dims)` in float32, as mlx_lm writes it.
fn base_freqs(dims: i32, base: f64) -> mlx_rs::Result<Array> {
    let exponents = ops::divide(&ops::arange(0, dims, 2, Dtype::Float32)?, dims as f32)?;
    ops::power(Array::from_scalar(base as f32), &exponents)
}

/// Python: `Llama3RoPE.__init__`.
fn llama3_freqs(
    dims: i32,
    base: f64,
    factor: f64,
    low_freq_factor: f64,
    high_freq_factor: f64,
    old_context_len: f64,
) -> mlx_rs::Result<Vec<f32>> {
    let low_freq_wavelen = old_context_len / low_freq_factor;
    let high_freq_wavelen = old_context_len / high_freq_factor;
    let freqs = base_freqs(dims, base)?;
    let wavelens = ops::multiply(&freqs, (2.0 * std::f64::consts::PI) as f32)?;
    let freqs = ops::where_(
        &ops::greater(&wavelens, low_freq_wavelen as f32)?,
        &ops::multiply(&freqs, factor as f32)?,
        &freqs,
    )?;
    let is_medium = ops::logical_and(
        &ops::greater(&wavelens, high_freq_wavelen as f32)?,
        &ops::less(&wavelens, low_freq_wavelen as f32)?,
    )?;
    let smooth = ops::divide(
        &ops::subtract(
            &ops::divide(Array::from_scalar(old_context_len as f32), &wavelens)?,
            low_freq_factor as f32,
        )?,
        (high_freq_factor - low_freq_factor) as f32,
    )?;
    let denominator = ops::add(
        &ops::divide(
            &ops::subtract(Array::from_scalar(1.0f32), &smooth)?,
            factor as f32,
        )?,
        &smooth,
    )?;
    let smooth_freqs = ops::divide(&freqs, &denominator)?;
    ops::where_(&is_medium, &smooth_freqs, &freqs)?.to_vec::<f32>()
}

/// Python: `yarn_get_mscale` (in f64, as Python computes it).
fn yarn_mscale(scale: f64, mscale: f64) -> f64 {
    if scale <= 1.0 {
        1.0
    } else {
        0.1 * mscale * scale.ln() + 1.0
    }
}

/// The parameters of `YarnRoPE`.
struct Yarn {
    dims: i32,
    base: f64,
    factor: f64,
    original_max_position_embeddings: f64,
    beta_fast: f64,
    beta_slow: f64,
    /// Round the correction range outwards (transformers' `truncate`, mlx_lm always).
    truncate: bool,
}

impl Yarn {
    fn correction_dim(&self, rotations: f64) -> f64 {
        (self.dims as f64
            * (self.original_max_position_embeddings / (rotations * 2.0 * std::f64::consts::PI))
                .ln())
            / (2.0 * self.base.ln())
    }

    /// Python: `YarnRoPE.__init__`'s `_freqs`.
    fn freqs(&self) -> mlx_rs::Result<Vec<f32>> {
        let (low, high) = (
            self.correction_dim(self.beta_fast),
            self.correction_dim(self.beta_slow),
        );
        let (low, high) = if self.truncate {
            (low.floor(), high.ceil())
        } else {
            (low, high)
        };
        let (low, high) = (low.max(0.0), high.min((self.dims - 1) as f64));
        // Python: `if min_val == max_val: max_val += 0.001`.
        let high = if low == high { high + 0.001 } else { high };
        let ramp = ops::clip(
            &ops::divide(
                &ops::subtract(
                    &ops::arange(0, self.dims / 2, 1, Dtype::Float32)?,
                    low as f32,
                )?,
                (high - low) as f32,
            )?,
            0.0f32,
            1.0f32,
        )?;
        let mask = ops::subtract(Array::from_scalar(1.0f32), &ramp)?;
        let extra = base_freqs(self.dims, self.base)?;
        let inter = ops::multiply(Array::from_scalar(self.factor as f32), &extra)?;
        let numerator = ops::multiply(&inter, &extra)?;
        let denominator = ops::add(
            &ops::multiply(&inter, &mask)?,
            &ops::multiply(&extra, &ops::subtract(Array::from_scalar(1.0f32), &mask)?)?,
        )?;
        ops::divide(&numerator, &denominator)?.to_vec::<f32>()
    }
}

/// The parameters of `SuScaledRoPE` (phi3's `longrope` / `su`).
struct SuScaled {
    dims: i32,
    base: f64,
    long_factor: Vec<f32>,
    max_position_embeddings: f64,
    original_max_position_embeddings: f64,
}

impl SuScaled {
    /// Python: `long_factor * base ** (arange(0, dims, 2) / dims)`, in float32.
    fn freqs(&self) -> mlx_rs::Result<Vec<f32>> {
        let long = Array::from_slice(&self.long_factor, &[self.long_factor.len() as i32])?;
        ops::multiply(&long, &base_freqs(self.dims, self.base)?)?.to_vec::<f32>()
    }

    /// Python: the scale of the rotated features, `sqrt(1 + ln(factor) / ln(original))` for
    /// `factor = max / original` above 1, else 1 (in f64, as Python computes it).
    fn scale(&self) -> f64 {
        let factor = self.max_position_embeddings / self.original_max_position_embeddings;
        if factor <= 1.0 {
            1.0
        } else {
            (1.0 + factor.ln() / self.original_max_position_embeddings.ln()).sqrt()
        }
    }
}

/// `nn.RoPE(dims, traditional, base)`: the rope of an architecture whose mlx_lm file reads no
/// scaling; a config's `rope_scaling` / `rope_parameters` of another type than `default` is an
/// error naming it.
pub fn plain_rope(
    c: &ModelConfig,
    dims: i32,
    base: f64,
    traditional: bool,
) -> Result<RotaryEmbedding> {
    let rope = RotaryEmbedding::from_config(c, dims, base, traditional)?;
    if rope != RotaryEmbedding::plain(dims, traditional, base as f32) {
        let key = if c.get("rope_scaling").is_some_and(|v| !v.is_null()) {
            "rope_scaling"
        } else {
            "rope_parameters"
        };
        return Err(invalid(
            c.path(),
            &c.key(key),
            &format!(
                "rope scaling is not supported by {} (supported: the default rope)",
                c.model_type()
            ),
        ));
    }
    Ok(rope)
}
