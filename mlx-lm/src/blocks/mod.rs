//! The building blocks architectures are written on, each written once: attention with a
//! cache ([`attention`]), the gated delta net of linear attention ([`gated_delta_net`]),
//! MLPs ([`mlp`]), norms ([`norm`]), RoPE variants ([`rope`]), masks ([`mask`]), the
//! rows/heads reshapes ([`rows`]), and the decoder stack generic over its token and channel
//! mixers ([`decoder`]).

pub mod attention;
pub mod decoder;
pub mod gated_delta_net;
pub mod mask;
pub mod mlp;
pub mod norm;
pub mod rope;
pub mod rows;

pub use attention::{Attention, AttentionConfig};
pub use decoder::{
    load_lm_head, DecoderLayer, DecoderModel, Hybrid, LayerContext, StackConfig, TokenMixer,
};
pub use gated_delta_net::{GatedDeltaNet, GatedDeltaNetConfig};
pub use mask::{Masks, PlainMask};
pub use mlp::Mlp;
pub use norm::RmsNormGated;
pub use rope::{initialize_rope, rope_theta, RotaryEmbedding};
pub use rows::Rows;
