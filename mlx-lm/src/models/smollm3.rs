//! `smollm3` (Python: `mlx_lm.models.smollm3`): llama with no positional embedding in some
//! layers (NoPE: `no_rope_layers[i] == 0`, by default every fourth).

use serde_json::Value;

use crate::config::{invalid, ModelConfig};
use crate::models::base::{dense_decoder, DecoderArgs};
use crate::models::Llama;

dense_decoder!(
    /// Python: `mlx_lm.models.smollm3.Model`.
    SmolLM3,
    "smollm3"
);

impl SmolLM3 {
    /// Python: smollm3's `ModelArgs`: llama's, plus `no_rope_layers` (1: the layer uses
    /// rope), by default `(i + 1) % no_rope_layer_interval != 0`; over every key of
    /// transformers' `SmolLM3Config`. Its sliding window must be off: transformers slides
    /// `layer_types`' sliding layers only with `use_sliding_window`, mlx_lm always.
    pub fn args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
        c.require_value("use_sliding_window", false)?;
        let args = Llama::args(c)?;
        if args.sliding.iter().any(|s| *s) {
            return Err(invalid(
                c.path(),
                &c.key("layer_types"),
                "sliding_attention layers are not supported by smollm3 (supported: every layer \"full_attention\")",
            ));
        }
        let layers = args.num_hidden_layers as usize;
        let key = c.key("no_rope_layers");
        // Only the default of `no_rope_layers`: transformers writes both.
        let interval = c.dim_or("no_rope_layer_interval", Some(4))? as usize;
        let no_rope = match c.get("no_rope_layers") {
            None | Some(Value::Null) => (0..layers).map(|i| (i + 1) % interval == 0).collect(),
            Some(Value::Array(flags)) if flags.len() == layers => flags
                .iter()
                .map(|f| match f.as_i64() {
                    Some(use_rope) => Ok(use_rope == 0),
                    None => Err(invalid(c.path(), &key, &format!("not an integer: {f}"))),
                })
                .collect::<crate::Result<Vec<bool>>>()?,
            Some(v) => {
                return Err(invalid(
                    c.path(),
                    &key,
                    &format!("expected a list of {layers} integers, got {v}"),
                ))
            }
        };
        Ok(DecoderArgs { no_rope, ..args })
    }
}
