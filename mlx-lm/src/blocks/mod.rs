//! The building blocks architectures are written on, each written once: attention with a cache
//! ([`attention`]), the causal convolution with a carried state ([`conv`]) and the recurrent token
//! mixers on it (the gated delta net, [`gated_delta_net`]; LFM2's short convolution,
//! [`short_conv`]; Gear's gated key/value convolution, [`conv_kv_gated`]; Mamba-1's selective scan,
//! [`selective_scan`]; Kimi delta attention, [`kda`]; Mamba-2's SSD, [`ssd`]; Griffin's RG-LRU block, [`rglru`]; RWKV-7's time and
//! channel mixes, [`rwkv7`]; the bailing families' linear attention, [`linear_attention`]), MLPs
//! ([`mlp`]), fused projections ([`fused`]: contiguous q/k/v, gate and up), mixture-of-experts
//! blocks ([`moe`]; DeepSeek-V3's grouped sigmoid router, [`group_router`]) on expert layers
//! ([`switch`]), multi-head latent attention ([`mla`]; DeepSeek-V2's expanded form,
//! [`mla_expanded`]), Gemma 2's soft-capped attention ([`soft_cap`]), norms ([`norm`]), the
//! post-norm layer ([`post_norm`]), the LayerNorm layer of parallel or sequential residual
//! ([`ln_decoder`]) and the attention whose parts a family names its own way
//! ([`named_attention`]), attention with q/k norms over the whole projection
//! ([`whole_qk_norm`]), attention with Llama 4's position-scaled queries ([`query_scale`]), RoPE
//! variants ([`rope`]), masks ([`mask`]), the rows/heads reshapes ([`rows`]), what a model's stack
//! of layers is made of ([`layer`]: the [`Layer`] trait and the loop over layers), and the dense
//! decoder layer generic over its token and channel mixers ([`decoder`]), and the split of a
//! stack's layers over the processes of a pipeline ([`pipeline`]).

pub mod attention;
pub mod attn_res;
pub mod backbone;
pub mod bailing;
pub mod conv;
pub mod conv_kv_gated;
pub mod decoder;
pub mod fused;
pub mod gated_delta_net;
pub mod group_router;
pub mod kda;
pub mod layer;
pub mod linear_attention;
pub mod ln_decoder;
pub mod mask;
pub mod mla;
pub mod mla_expanded;
pub mod mlp;
pub mod moe;
pub mod named_attention;
pub mod ngram_embedding;
pub mod norm;
pub mod pipeline;
pub mod post_norm;
pub mod query_scale;
pub mod rglru;
pub mod rope;
pub mod rows;
pub mod rwkv7;
pub mod selective_scan;
pub mod short_conv;
pub mod situ;
pub mod soft_cap;
pub mod ssd;
pub mod switch;
pub mod switch_lora;
pub mod whole_qk_norm;

pub use attention::{attend_upcast, Attention, AttentionConfig, AttentionParts, HeadNorm, Upcast};
pub use backbone::{
    stack_logits, Backbone, BackboneNames, DecoderNames, LayerStack, LogitsMap, Stack, StackEnds,
    StackNames, StackParts,
};
pub use conv::{causal_conv1d, ConvActivation};
pub use conv_kv_gated::{ConvKvGatedConfig, ConvKvGatedMixer};
pub use decoder::{
    load_lm_head, ChannelMixer, DecoderLayer, DecoderModel, Hybrid, StackConfig, TokenMixer,
};
pub use fused::{split_qkv, FusedGateUpMlp};
pub use gated_delta_net::{GatedDeltaNet, GatedDeltaNetConfig, GdnProjections};
pub use group_router::{
    greedy_expert_select, group_expert_select, grouped_moe_forward, BailingGate, BailingMoe,
    BailingMoeConfig, GreedyGate, GreedyMoe, GreedyRouting, GroupLimit, GroupRouting, GroupScoring,
    GroupedMoe, MoeGate,
};
pub use layer::{
    forward_layers, forward_layers_with_carry, make_layer_caches, with_layer_checkpoint, Layer,
    LayerContext,
};
pub use linear_attention::{GlaForm, GroupRmsNorm, LinearAttention, LinearAttentionConfig};
pub use ln_decoder::{LnDecoderLayer, Residual};
pub use mask::{Masks, PlainMask};
pub use mla::{Mla, MlaConfig, MultiLinear, QuantizedMultiLinear};
pub use mla_expanded::ExpandedMla;
pub use mlp::{plain_mlp, Activation, Mlp, PlainMlp};
pub use moe::{FeedForward, MoeConfig, Router, SparseMoe};
pub use named_attention::{AttentionNames, NamedAttention};
pub use norm::{
    heads_normed, GemmaRmsNorm, LayerNorm2D, LoadHeadNorm, PerHeadLayerNorm, RmsNormGated,
};
pub use pipeline::PipelineStage;
pub use post_norm::PostNormLayer;
pub use query_scale::{Llama4Scaling, QueryScaledAttention};
pub use rope::{
    initialize_rope, partial_rotary_factor, plain_rope, rope_theta, RopeDefaults, RotaryEmbedding,
};
pub use rows::Rows;
pub use selective_scan::{BcdtNorm, MambaMixer, MambaMixerConfig};
pub use short_conv::ShortConv;
pub use soft_cap::{attend_soft_capped, soft_capped_attention};
pub use ssd::{Mamba2Config, Mamba2Mixer};
pub use switch::{QuantizedSwitchLinear, SwitchGlu, SwitchLinear, SwitchMlp};
pub use whole_qk_norm::WholeQkNormAttention;
