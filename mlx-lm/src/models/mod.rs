//! The architectures, one file each (as mlx_lm's `mlx_lm/models/`), written on the shared
//! [`blocks`](crate::blocks). Adding one: a file here with its config reader, its model
//! struct and its [`LanguageModel`](crate::LanguageModel) impl, plus its line in
//! `builtins()` (this file); outside this crate, [`register_model`](crate::register_model) instead.

pub mod baichuan_m1;
pub mod bailing_hybrid;
pub mod bailing_moe_linear;
pub mod bailing_moe_v3;
pub mod base;
pub mod cohere;
pub mod cohere2;
pub mod deepseek_v2;
pub mod deepseek_v3;
pub mod dots1;
pub mod ernie4_5_moe;
pub mod exaone4;
pub mod falcon_h1;
pub mod gear;
pub mod gemma;
pub mod gemma2;
pub mod gemma3_text;
pub mod glm4;
pub mod glm4_moe;
pub mod gpt2;
pub mod gpt_neox;
pub mod gpt_oss;
pub mod granite;
pub mod granitemoe;
pub mod granitemoehybrid;
pub mod helium;
pub mod internlm3;
pub mod jamba;
pub mod kimi_k3;
pub mod kimi_linear;
pub mod lfm2;
pub mod lfm2_moe;
pub mod llama;
pub mod llama4_text;
pub mod longcat_flash;
pub mod longcat_flash_ngram;
pub mod mamba;
pub mod mamba2;
pub mod ministral3;
pub mod mistral3;
pub mod mixtral;
pub mod nemotron_h;
pub mod olmo2;
pub mod olmo3;
pub mod olmo_hybrid;
pub mod olmoe;
pub mod phi;
pub mod phi3;
pub mod phimoe;
pub mod plamo2;
pub mod qwen2;
pub mod qwen2_moe;
pub mod qwen3;
pub mod qwen3_5;
pub mod qwen3_moe;
pub mod qwen3_next;
pub mod recurrent_gemma;
pub mod rwkv7;
pub mod seed_oss;
pub mod smollm3;
pub mod sparse;
pub mod stablelm;
pub mod starcoder2;

pub use baichuan_m1::BaichuanM1;
pub use bailing_hybrid::BailingHybrid;
pub use bailing_moe_linear::BailingMoeLinear;
pub use bailing_moe_v3::BailingMoeV3;
pub use cohere::Cohere;
pub use cohere2::Cohere2;
pub use deepseek_v2::DeepseekV2;
pub use deepseek_v3::DeepseekV3;
pub use dots1::Dots1;
pub use ernie4_5_moe::Ernie45Moe;
pub use exaone4::Exaone4;
pub use falcon_h1::FalconH1;
pub use gear::Gear;
pub use gemma::Gemma;
pub use gemma2::Gemma2;
pub use gemma3_text::{Gemma3, Gemma3Text};
pub use glm4::Glm4;
pub use glm4_moe::Glm4Moe;
pub use gpt2::Gpt2;
pub use gpt_neox::GptNeox;
pub use gpt_oss::GptOss;
pub use granite::Granite;
pub use granitemoe::GraniteMoe;
pub use granitemoehybrid::GraniteMoeHybrid;
pub use helium::Helium;
pub use internlm3::InternLM3;
pub use jamba::Jamba;
pub use kimi_k3::KimiK3;
pub use kimi_linear::KimiLinear;
pub use lfm2::Lfm2;
pub use lfm2_moe::Lfm2Moe;
pub use llama::Llama;
pub use llama4_text::Llama4Text;
pub use longcat_flash::LongcatFlash;
pub use longcat_flash_ngram::LongcatFlashNgram;
pub use mamba::Mamba;
pub use mamba2::Mamba2;
pub use ministral3::Ministral3;
pub use mistral3::{Mistral3, Mistral3Llama};
pub use mixtral::Mixtral;
pub use nemotron_h::NemotronH;
pub use olmo2::Olmo2;
pub use olmo3::Olmo3;
pub use olmo_hybrid::OlmoHybrid;
pub use olmoe::Olmoe;
pub use phi::Phi;
pub use phi3::Phi3;
pub use phimoe::PhiMoe;
pub use plamo2::Plamo2;
pub use qwen2::Qwen2;
pub use qwen2_moe::Qwen2Moe;
pub use qwen3::Qwen3;
pub use qwen3_5::{Qwen3_5, Qwen3_5Moe};
pub use qwen3_moe::Qwen3Moe;
pub use qwen3_next::Qwen3Next;
pub use recurrent_gemma::RecurrentGemma;
pub use rwkv7::Rwkv7;
pub use seed_oss::SeedOss;
pub use smollm3::SmolLM3;
pub use stablelm::StableLm;
pub use starcoder2::Starcoder2;

use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;
use crate::model::Model;

/// Builds a model from a checkpoint (see [`ModelConstructor`](crate::ModelConstructor)).
pub(crate) type Builtin = fn(&mut Checkpoint, &ModelConfig, &LoadOptions) -> crate::Result<Model>;

/// An architecture's constructor: its `from_checkpoint`, boxed into a [`Model`].
macro_rules! builtin {
    ($arch:ty) => {
        |ck, config, options| Ok(Model::new(<$arch>::from_checkpoint(ck, config, options)?))
    };
}

/// This crate's architectures by `model_type`: what the registry starts with.
pub(crate) fn builtins() -> [(&'static str, Builtin); 63] {
    [
        ("baichuan_m1", builtin!(BaichuanM1)),
        ("bailing_hybrid", builtin!(BailingHybrid)),
        ("bailing_moe_linear", builtin!(BailingMoeLinear)),
        ("bailing_moe_v3", builtin!(BailingMoeV3)),
        ("cohere", builtin!(Cohere)),
        ("cohere2", builtin!(Cohere2)),
        ("deepseek_v2", builtin!(DeepseekV2)),
        ("deepseek_v3", builtin!(DeepseekV3)),
        ("dots1", builtin!(Dots1)),
        ("ernie4_5_moe", builtin!(Ernie45Moe)),
        ("exaone4", builtin!(Exaone4)),
        ("falcon_h1", builtin!(FalconH1)),
        ("gemma", builtin!(Gemma)),
        ("gemma2", builtin!(Gemma2)),
        ("glm4_moe", builtin!(Glm4Moe)),
        ("gear", builtin!(Gear)),
        ("gemma3", builtin!(Gemma3)),
        ("gemma3_text", builtin!(Gemma3Text)),
        ("glm4", builtin!(Glm4)),
        ("gpt2", builtin!(Gpt2)),
        ("gpt_oss", builtin!(GptOss)),
        ("gpt_neox", builtin!(GptNeox)),
        ("granite", builtin!(Granite)),
        ("granitemoe", builtin!(GraniteMoe)),
        ("granitemoehybrid", builtin!(GraniteMoeHybrid)),
        ("helium", builtin!(Helium)),
        ("internlm3", builtin!(InternLM3)),
        ("jamba", builtin!(Jamba)),
        ("kimi_k3", builtin!(KimiK3)),
        ("kimi_linear", builtin!(KimiLinear)),
        ("lfm2", builtin!(Lfm2)),
        ("lfm2_moe", builtin!(Lfm2Moe)),
        ("llama", builtin!(Llama)),
        ("llama4_text", builtin!(Llama4Text)),
        ("longcat_flash", builtin!(LongcatFlash)),
        ("longcat_flash_ngram", builtin!(LongcatFlashNgram)),
        ("mamba", builtin!(Mamba)),
        ("mamba2", builtin!(Mamba2)),
        ("ministral3", builtin!(Ministral3)),
        ("mistral3", Mistral3::build),
        ("mixtral", builtin!(Mixtral)),
        ("nemotron_h", builtin!(NemotronH)),
        ("olmo2", builtin!(Olmo2)),
        ("olmo3", builtin!(Olmo3)),
        ("olmo_hybrid", builtin!(OlmoHybrid)),
        ("olmoe", builtin!(Olmoe)),
        ("phi", builtin!(Phi)),
        ("phimoe", builtin!(PhiMoe)),
        ("phi3", builtin!(Phi3)),
        ("plamo2", builtin!(Plamo2)),
        ("qwen2", builtin!(Qwen2)),
        ("qwen2_moe", builtin!(Qwen2Moe)),
        ("qwen3", builtin!(Qwen3)),
        ("qwen3_5", builtin!(Qwen3_5)),
        ("qwen3_5_moe", builtin!(Qwen3_5Moe)),
        ("qwen3_moe", builtin!(Qwen3Moe)),
        ("qwen3_next", builtin!(Qwen3Next)),
        ("recurrent_gemma", builtin!(RecurrentGemma)),
        ("rwkv7", builtin!(Rwkv7)),
        ("seed_oss", builtin!(SeedOss)),
        ("smollm3", builtin!(SmolLM3)),
        ("stablelm", builtin!(StableLm)),
        ("starcoder2", builtin!(Starcoder2)),
    ]
}
