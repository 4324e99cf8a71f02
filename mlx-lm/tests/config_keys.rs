//! The config-key audit: every key of the configs transformers 5.23 writes for the builtin
//! architectures is read, declared harmless or checked (data: `scripts/golden/config_keys.py`);
//! a value the architecture does not compute with is an error naming the key; any other key
//! is reported, and refused under `UnreadKeys::Error`.

use std::path::{Path, PathBuf};

use mlx_lm::blocks::RotaryEmbedding;
use mlx_lm::models::baichuan_m1::BaichuanM1Args;
use mlx_lm::models::bailing_moe_v3::BailingMoeV3Args;
use mlx_lm::models::cohere::CohereArgs;
use mlx_lm::models::gpt2::Gpt2Args;
use mlx_lm::models::gpt_neox::GptNeoxArgs;
use mlx_lm::models::gpt_oss::GptOss;
use mlx_lm::models::jamba::JambaArgs;
use mlx_lm::models::kimi_linear::KimiLinearArgs;
use mlx_lm::models::lfm2::Lfm2Args;
use mlx_lm::models::lfm2_moe::Lfm2MoeArgs;
use mlx_lm::models::olmo_hybrid::OlmoHybridArgs;
use mlx_lm::models::phi::PhiArgs;
use mlx_lm::models::plamo2::Plamo2Args;
use mlx_lm::models::rwkv7::Rwkv7Args;
use mlx_lm::models::stablelm::StableLmArgs;
use mlx_lm::models::starcoder2::Starcoder2Args;
use mlx_lm::models::{
    Cohere2, DeepseekV2, DeepseekV3, Dots1, Ernie45Moe, Exaone4, FalconH1, Gemma, Gemma2, Gemma3,
    Gemma3Text, Glm4, Glm4Moe, Granite, GraniteMoe, GraniteMoeHybrid, Helium, InternLM3, Llama,
    Llama4Text, LongcatFlash, LongcatFlashNgram, Mamba, Mamba2, Ministral3, Mistral3, Mixtral,
    NemotronH, Olmo2, Olmo3, Olmoe, Phi3, PhiMoe, Qwen2, Qwen2Moe, Qwen3, Qwen3Moe, Qwen3Next,
    Qwen3_5, RecurrentGemma, SeedOss, SmolLM3,
};
use mlx_lm::{load_config, load_model, Error, LoadOptions, ModelConfig, UnreadKeys};
use serde_json::{json, Value};

/// `XConfig(<small sizes>).to_dict()` by name (`llama`, `qwen2-yarn`, ...).
fn transformers_configs() -> serde_json::Map<String, Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/transformers_configs.json");
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(data["transformers_version"], "5.23.0");
    data["configs"].as_object().unwrap().clone()
}

fn transformers_config(name: &str) -> Value {
    transformers_configs()[name].clone()
}

/// A directory holding `config` as config.json, unique to the test and the case.
fn config_dir(test: &str, config: &Value) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-lm-keys-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    dir
}

/// Runs the architecture's config reader, as its constructor does first.
fn read(c: &ModelConfig) -> mlx_lm::Result<()> {
    match c.model_type() {
        "llama" => Llama::args(c).map(drop),
        "qwen2" => Qwen2::args(c).map(drop),
        "qwen3" => Qwen3::args(c).map(drop),
        "smollm3" => SmolLM3::args(c).map(drop),
        "qwen3_5" => Qwen3_5::args(c).map(drop),
        "lfm2" => Lfm2Args::from_config(c).map(drop),
        "lfm2_moe" => Lfm2MoeArgs::from_config(c).map(drop),
        "mamba" => Mamba::args(c).map(drop),
        "recurrent_gemma" => RecurrentGemma::args(c).map(drop),
        "mamba2" => Mamba2::args(c).map(drop),
        "nemotron_h" => NemotronH::args(c).map(drop),
        "granitemoehybrid" => GraniteMoeHybrid::args(c).map(drop),
        "falcon_h1" => FalconH1::args(c).map(drop),
        "qwen3_moe" => Qwen3Moe::args(c).map(drop),
        "mixtral" => Mixtral::args(c).map(drop),
        "qwen2_moe" => Qwen2Moe::args(c).map(drop),
        "olmoe" => Olmoe::args(c).map(drop),
        "qwen3_next" => Qwen3Next::args(c).map(drop),
        "qwen3_5_moe" => Qwen3_5::args(c).map(drop),
        "olmo_hybrid" => OlmoHybridArgs::from_config(c).map(drop),
        "plamo2" => Plamo2Args::from_config(c).map(drop),
        "jamba" => JambaArgs::from_config(c).map(drop),
        "baichuan_m1" => BaichuanM1Args::from_config(c).map(drop),
        "deepseek_v3" => DeepseekV3::args(c).map(drop),
        "glm4_moe" => Glm4Moe::args(c).map(drop),
        "deepseek_v2" => DeepseekV2::args(c).map(drop),
        "granitemoe" => GraniteMoe::args(c).map(drop),
        "phimoe" => PhiMoe::args(c).map(drop),
        "ernie4_5_moe" => Ernie45Moe::args(c).map(drop),
        "dots1" => Dots1::args(c).map(drop),
        "kimi_linear" => KimiLinearArgs::from_config(c).map(drop),
        "bailing_moe_v3" => BailingMoeV3Args::from_config(c).map(drop),
        "rwkv7" => Rwkv7Args::from_config(c).map(drop),
        "helium" => Helium::args(c).map(drop),
        "seed_oss" => SeedOss::args(c).map(drop),
        "internlm3" => InternLM3::args(c).map(drop),
        "granite" => Granite::args(c).map(drop),
        "starcoder2" => Starcoder2Args::from_config(c).map(drop),
        "stablelm" => StableLmArgs::from_config(c).map(drop),
        "phi" => PhiArgs::from_config(c).map(drop),
        "cohere" => CohereArgs::from_config(c).map(drop),
        "gpt_neox" => GptNeoxArgs::from_config(c).map(drop),
        "gemma" => Gemma::args(c).map(drop),
        "gemma2" => Gemma2::args(c).map(drop),
        "gemma3_text" => Gemma3Text::args(c).map(drop),
        "gemma3" => Gemma3::args(c).map(drop),
        "phi3" => Phi3::args(c).map(drop),
        "olmo2" => Olmo2::args(c).map(drop),
        "olmo3" => Olmo3::args(c).map(drop),
        "glm4" => Glm4::args(c).map(drop),
        "llama4_text" => Llama4Text::args(c).map(drop),
        "ministral3" => Ministral3::args(c).map(drop),
        "mistral3" => Mistral3::args(c).map(drop),
        "exaone4" => Exaone4::args(c).map(drop),
        "cohere2" => Cohere2::args(c).map(drop),
        "gpt2" => Gpt2Args::from_config(c).map(drop),
        "gpt_oss" => GptOss::args(c).map(drop),
        "longcat_flash" => LongcatFlash::args(c).map(drop),
        "longcat_flash_ngram" => LongcatFlashNgram::args(c).map(drop),
        other => panic!("no reader for {other}"),
    }
}

/// `config` loaded and read: the reader's result and what it left unread.
fn read_config(test: &str, config: &Value) -> (mlx_lm::Result<()>, Vec<String>) {
    let dir = config_dir(test, config);
    let c = load_config(&dir).unwrap();
    let result = read(&c);
    std::fs::remove_dir_all(dir).unwrap();
    (result, c.unread_keys())
}

/// The object a text model's keys sit in: `text_config` where there is one.
fn text(config: &mut Value) -> &mut serde_json::Map<String, Value> {
    if config.get("text_config").is_some() {
        config["text_config"].as_object_mut().unwrap()
    } else {
        config.as_object_mut().unwrap()
    }
}

#[test]
fn every_key_of_transformers_configs_is_accounted_for() {
    let configs = transformers_configs();
    let mut covered = Vec::new();
    for (name, config) in &configs {
        let (result, unread) = read_config(name, config);
        result.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(unread.is_empty(), "{name}: unread {unread:?}");
        covered.push(config["model_type"].as_str().unwrap().to_string());
    }
    for builtin in [
        "llama",
        "mistral",
        "qwen2",
        "qwen3",
        "smollm3",
        "qwen3_5",
        "lfm2",
        "lfm2_moe",
        "mamba",
        "falcon_mamba",
        "recurrent_gemma",
        "mamba2",
        "nemotron_h",
        "granitemoehybrid",
        "falcon_h1",
        "qwen3_moe",
        "mixtral",
        "qwen2_moe",
        "olmoe",
        "qwen3_next",
        "qwen3_5_moe",
        "olmo_hybrid",
        "plamo2",
        "jamba",
        "baichuan_m1",
        "deepseek_v3",
        "glm4_moe",
        "dots1",
        "deepseek_v2",
        "granitemoe",
        "phimoe",
        "ernie4_5_moe",
        "kimi_linear",
        "rwkv7",
        "helium",
        "seed_oss",
        "internlm3",
        "granite",
        "starcoder2",
        "stablelm",
        "phi",
        "cohere",
        "gpt_neox",
        "gemma",
        "gemma2",
        "gemma3_text",
        "gemma3",
        "phi3",
        "olmo2",
        "olmo3",
        "glm4",
        "llama4_text",
        "ministral3",
        "mistral3",
        "exaone4",
        "cohere2",
        "gpt2",
        "gpt_oss",
        "longcat_flash",
        "longcat_flash_ngram",
    ] {
        assert!(covered.iter().any(|t| t == builtin), "no {builtin} config");
    }
}

#[test]
fn an_activation_other_than_silu_is_an_error_naming_it() {
    for (name, mut config) in transformers_configs() {
        if name.contains("gemma") {
            // Their activation is GELU (`values_the_architecture_does_not_compute_with_are_errors`).
            continue;
        }
        if matches!(
            config["model_type"].as_str(),
            Some("starcoder2" | "phi" | "gpt_neox")
        ) {
            // Their MLP's activation is a GELU, the one `hidden_act` names
            // (`gelu_activations_are_read_and_others_are_errors`).
            continue;
        }
        if config["model_type"] == "gpt2" || name == "rwkv7" {
            // gpt2's activation is `activation_function`, the tanh GELU; rwkv7's channel mix
            // is relu² (`sqrelu`) (`values_the_architecture_does_not_compute_with_are_errors`).
            continue;
        }
        // Nemotron-H names its Mamba-2 mixer's activation apart (its MLP's is ReLU²).
        let key = if name.starts_with("nemotron_h") {
            "mamba_hidden_act"
        } else {
            "hidden_act"
        };
        text(&mut config).insert(key.into(), json!("gelu_pytorch_tanh"));
        let (result, _) = read_config(&format!("act-{name}"), &config);
        let e = result.expect_err(&name).to_string();
        assert!(
            e.contains(key) && e.contains("gelu_pytorch_tanh") && e.contains("silu"),
            "{name}: {e}"
        );
        // "swish" is SiLU in transformers too.
        text(&mut config).insert(key.into(), json!("swish"));
        let (result, unread) = read_config(&format!("swish-{name}"), &config);
        result.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(unread.is_empty(), "{name}: {unread:?}");
    }
    let mut mistral = transformers_config("mistral");
    mistral["hidden_act"] = json!("gelu");
    let (result, _) = read_config("act-arch", &mistral);
    let e = result.unwrap_err().to_string();
    assert!(e.contains("llama (serving mistral)"), "{e}");
}

/// starcoder2's, phi's and gpt_neox's MLP computes the GELU `hidden_act` names (transformers' reading;
/// mlx_lm computes one GELU whatever the config says): the exact one, or the tanh
/// approximation under any of its names; another activation is an error naming the key.
#[test]
fn gelu_activations_are_read_and_others_are_errors() {
    for name in ["starcoder2", "phi", "gpt_neox"] {
        for act in ["gelu", "gelu_pytorch_tanh", "gelu_new", "gelu_fast"] {
            let mut config = transformers_config(name);
            config["hidden_act"] = json!(act);
            let (result, unread) = read_config(&format!("gelu-{name}-{act}"), &config);
            result.unwrap_or_else(|e| panic!("{name} {act}: {e}"));
            assert!(unread.is_empty(), "{name}: {unread:?}");
        }
        let mut config = transformers_config(name);
        config["hidden_act"] = json!("relu");
        let (result, _) = read_config(&format!("gelu-{name}-relu"), &config);
        let e = result.expect_err(name).to_string();
        assert!(
            e.contains("hidden_act") && e.contains("relu") && e.contains(name),
            "{e}"
        );
    }
}

#[test]
fn an_unknown_key_is_reported_with_its_path() {
    let mut llama = transformers_config("llama");
    llama["foo_multiplier"] = json!(2.0);
    let (result, unread) = read_config("unknown", &llama);
    result.unwrap();
    assert_eq!(unread, ["foo_multiplier"]);

    let mut qwen3_5 = transformers_config("qwen3_5");
    qwen3_5["text_config"]["foo_multiplier"] = json!(2.0);
    qwen3_5["per_layer_config"] = json!({"0": {"hidden_size": 32}});
    let (result, unread) = read_config("unknown-nested", &qwen3_5);
    result.unwrap();
    assert_eq!(unread, ["text_config.foo_multiplier", "per_layer_config"]);
}

#[test]
fn unread_rope_keys_are_reported() {
    // transformers' yarn rotates `partial_rotary_factor` of each head; llama's reader does
    // not read it.
    let mut yarn = transformers_config("qwen2-yarn");
    yarn["rope_parameters"]["partial_rotary_factor"] = json!(0.5);
    yarn["rope_parameters"]["foo"] = json!(1);
    let (result, unread) = read_config("rope-yarn", &yarn);
    result.unwrap();
    assert_eq!(
        unread,
        [
            "rope_parameters.partial_rotary_factor",
            "rope_parameters.foo"
        ]
    );
    // mlx_lm's own yarn variant keeps mlx_lm's rules, which have no `truncate`.
    let mut deepseek = transformers_config("qwen2-yarn");
    deepseek["rope_parameters"]["rope_type"] = json!("deepseek_yarn");
    let (result, unread) = read_config("rope-deepseek", &deepseek);
    result.unwrap();
    assert_eq!(
        unread,
        [
            "rope_parameters.attention_factor",
            "rope_parameters.truncate"
        ]
    );
    // A key a rope type does not take: linear scaling has no `low_freq_factor`.
    let mut linear = transformers_config("llama-linear");
    linear["rope_parameters"]["low_freq_factor"] = json!(1.0);
    let (result, unread) = read_config("rope-linear", &linear);
    result.unwrap();
    assert_eq!(unread, ["rope_parameters.low_freq_factor"]);
}

#[test]
fn values_the_architecture_does_not_compute_with_are_errors() {
    let cases = [
        ("qwen2", "use_sliding_window", json!(true)),
        ("qwen3", "use_sliding_window", json!(true)),
        ("smollm3", "use_sliding_window", json!(true)),
        (
            "qwen2",
            "layer_types",
            json!([
                "full_attention",
                "sliding_attention",
                "full_attention",
                "full_attention"
            ]),
        ),
        (
            "smollm3",
            "layer_types",
            json!([
                "full_attention",
                "sliding_attention",
                "full_attention",
                "full_attention"
            ]),
        ),
        ("qwen3_5", "mamba_ssm_dtype", json!("bfloat16")),
        ("mamba", "hidden_act", json!("gelu")),
        ("falcon_mamba", "time_step_rank", json!("full")),
        ("recurrent_gemma", "num_key_value_heads", json!(4)),
        ("recurrent_gemma", "hidden_activation", json!("gelu")),
        ("recurrent_gemma", "head_dim", json!(32)),
        // hidden_size * expand must be num_heads * head_dim (transformers' check).
        ("mamba2", "expand", json!(3)),
        ("nemotron_h", "residual_in_fp32", json!(true)),
        ("nemotron_h", "mamba_ssm_cache_dtype", json!("bfloat16")),
        ("nemotron_h", "sliding_window", json!(1024)),
        ("nemotron_h", "mlp_hidden_act", json!("silu")),
        // Top-k within the experts.
        ("granitemoehybrid-moe", "num_experts_per_tok", json!(9)),
        (
            "granitemoehybrid",
            "position_embedding_type",
            json!("alibi"),
        ),
        ("granitemoehybrid", "mamba_d_head", json!(8)),
        // mamba_n_heads * mamba_d_head must be mamba_d_ssm; heads split into whole groups;
        // five SSM multipliers (z, x, B, C, dt).
        ("falcon_h1", "mamba_d_head", json!(8)),
        ("falcon_h1", "mamba_n_groups", json!(3)),
        ("falcon_h1", "ssm_multipliers", json!([1.0, 2.0])),
        ("falcon_h1", "mlp_multipliers", json!("1.0")),
        // mlx_lm's qwen2_moe makes every layer sparse and never renormalizes.
        ("qwen2_moe", "norm_topk_prob", json!(true)),
        ("qwen2_moe", "decoder_sparse_step", json!(2)),
        ("qwen2_moe", "mlp_only_layers", json!([1])),
        ("qwen2_moe", "use_sliding_window", json!(true)),
        ("qwen3_moe", "use_sliding_window", json!(true)),
        ("qwen3_moe", "num_experts_per_tok", json!(9)),
        ("mixtral", "sliding_window", json!(4096)),
        ("mixtral", "hidden_act", json!("gelu")),
        // transformers clamps the projections; mlx_lm ignores it.
        ("olmoe", "clip_qkv", json!(8.0)),
        // Linear-attention value heads in whole groups per key head; top-k within the experts.
        ("qwen3_next", "linear_num_value_heads", json!(3)),
        ("qwen3_next", "num_experts_per_tok", json!(9)),
        ("qwen3_next", "hidden_act", json!("gelu")),
        // transformers' Qwen3.5-MoE renormalizes and makes every layer sparse (mlx_lm too).
        ("qwen3_5_moe", "norm_topk_prob", json!(false)),
        ("qwen3_5_moe", "decoder_sparse_step", json!(2)),
        ("qwen3_5_moe", "mlp_only_layers", json!([1])),
        ("qwen3_5_moe", "num_experts_per_tok", json!(9)),
        // mlx_lm's helium and internlm3 make heads hidden / heads wide whatever head_dim says;
        // helium's rope is never scaled; internlm3 takes linear and dynamic scaling only.
        ("helium", "head_dim", json!(32)),
        (
            "helium",
            "rope_parameters",
            json!({"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}),
        ),
        ("internlm3", "head_dim", json!(32)),
        // The remote code's name beside transformers' for one bias flag, saying otherwise.
        ("internlm3", "qkv_bias", json!(true)),
        (
            "internlm3",
            "rope_scaling",
            json!({"rope_type": "yarn", "factor": 2.0}),
        ),
        // mlx_lm always has biases in starcoder2, an output head of its own in stablelm and
        // phi (the embedding in cohere), and no q/k LayerNorms in phi.
        ("starcoder2", "use_bias", json!(false)),
        ("stablelm", "tie_word_embeddings", json!(true)),
        ("stablelm", "hidden_act", json!("gelu")),
        ("phi", "qk_layernorm", json!(true)),
        ("phi", "tie_word_embeddings", json!(true)),
        ("cohere", "tie_word_embeddings", json!(false)),
        // mlx_lm's gpt_neox: biases, a 4 x hidden MLP, one key/value head per head, the
        // untied embed_out; transformers 5's rope_parameters must agree with rotary_pct.
        ("gpt_neox", "attention_bias", json!(false)),
        ("gpt_neox", "intermediate_size", json!(128)),
        ("gpt_neox", "num_key_value_heads", json!(2)),
        ("gpt_neox", "tie_word_embeddings", json!(true)),
        ("gpt_neox", "rotary_pct", json!(0.5)),
        ("gpt_neox", "rotary_emb_base", json!(500000)),
        // mlx_lm's Gemma computes the exact GELU, Gemma 2 the tanh one; both tie the head,
        // have no biases and no rope scaling; a null soft cap (transformers: none) mlx_lm
        // cannot run.
        ("gemma", "hidden_act", json!("silu")),
        ("gemma", "hidden_activation", json!("gelu_new")),
        ("gemma", "tie_word_embeddings", json!(false)),
        ("gemma", "attention_bias", json!(true)),
        (
            "gemma",
            "rope_parameters",
            json!({"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}),
        ),
        ("gemma2", "hidden_activation", json!("gelu")),
        ("gemma2", "final_logit_softcapping", json!(null)),
        ("gemma2", "attn_logit_softcapping", json!(null)),
        ("gemma2", "layer_types", json!(["full_attention"])),
        ("gemma2", "use_bidirectional_attention", json!(true)),
        // Gemma 3: the fused attention (no caps), the tanh GELU, layer kinds and ropes that
        // must say what sliding_window_pattern and mlx_lm's rope keys say.
        ("gemma3_text", "final_logit_softcapping", json!(30.0)),
        ("gemma3_text", "attn_logit_softcapping", json!(50.0)),
        ("gemma3_text", "hidden_activation", json!("gelu")),
        (
            "gemma3_text",
            "layer_types",
            json!(vec!["full_attention"; 6]),
        ),
        ("gemma3_text", "sliding_window_pattern", json!(3)),
        ("gemma3_text", "rope_theta", json!(500000.0)),
        ("gemma3_text", "rope_local_base_freq", json!(20000.0)),
        (
            "gemma3_text",
            "rope_parameters",
            json!({"sliding_attention": {"rope_type": "yarn", "factor": 2.0},
                   "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}}),
        ),
        (
            "gemma3_text-scaled",
            "rope_scaling",
            json!({"rope_type": "linear", "factor": 4.0}),
        ),
        // phi3 builds the longrope, linear and plain ropes only (mlx_lm runs another type as
        // the plain rope); longrope's factors are one per rotated pair, and its original
        // context is said once.
        (
            "phi3",
            "rope_parameters",
            json!({"rope_type": "yarn", "factor": 2.0, "rope_theta": 10000.0}),
        ),
        (
            "phi3-longrope",
            "rope_parameters",
            json!({"rope_type": "longrope", "rope_theta": 10000.0,
                   "long_factor": [2.0, 2.0, 2.0, 2.0], "short_factor": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]}),
        ),
        (
            "phi3-longrope",
            "original_max_position_embeddings",
            json!(64),
        ),
        // OLMo's MLP is SwiGLU; OLMo 3's layer kinds are one per layer, sliding or full.
        ("olmo2", "hidden_act", json!("gelu")),
        ("olmo3", "layer_types", json!(["full_attention"])),
        // transformers 5's rope per layer type: the plain rope only (a scaled one is read
        // from rope_scaling).
        (
            "olmo3",
            "rope_parameters",
            json!({"full_attention": {"rope_type": "yarn", "factor": 8.0,
                                      "rope_theta": 500000.0},
                   "sliding_attention": {"rope_type": "default", "rope_theta": 500000.0}}),
        ),
        // mlx_lm's GLM-4 always has its own head and builds the plain rope.
        ("glm4", "tie_word_embeddings", json!(true)),
        (
            "glm4",
            "rope_parameters",
            json!({"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0,
                   "partial_rotary_factor": 0.5}),
        ),
        (
            "olmo3",
            "layer_types",
            json!([
                "sliding_attention",
                "chunked_attention",
                "full_attention",
                "full_attention"
            ]),
        ),
        // Experts in whole groups; top-k within the experts.
        ("nemotron_h-moe", "n_group", json!(3)),
        ("nemotron_h-moe", "num_experts_per_tok", json!(9)),
        // mlx_lm's kimi_linear never rotates: a config with rope in its attention, or a
        // low-rank query, is another model; transformers' derived keys must agree with the
        // checkpoint's own; routers it does not have; top-k within the experts.
        ("kimi_linear", "mla_use_nope", json!(false)),
        ("kimi_linear", "q_lora_rank", json!(16)),
        ("kimi_linear", "linear_head_dim", json!(64)),
        (
            "kimi_linear",
            "layer_types",
            json!([
                "linear_attention",
                "full_attention",
                "linear_attention",
                "full_attention"
            ]),
        ),
        (
            "kimi_linear",
            "mlp_layer_types",
            json!(["sparse", "sparse", "sparse", "sparse"]),
        ),
        ("kimi_linear", "num_experts_per_token", json!(9)),
        // mlx_lm's llama4_text has no experts, nor a scaled rope.
        ("llama4_text", "moe_layers", json!([1, 3])),
        (
            "llama4_text",
            "rope_parameters",
            json!({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                   "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192}),
        ),
        // Ministral 3's layers are full or sliding; mistral3's text model is ministral3 or
        // llama-like (no mistral4).
        (
            "ministral3",
            "layer_types",
            json!([
                "full_attention",
                "chunked_attention",
                "full_attention",
                "full_attention"
            ]),
        ),
        ("mistral3", "model_type", json!("mistral4")),
        // EXAONE 4's layer kinds come from its pattern; layer_types must agree.
        (
            "exaone4",
            "layer_types",
            json!([
                "sliding_attention",
                "full_attention",
                "sliding_attention",
                "full_attention"
            ]),
        ),
        ("exaone4", "sliding_window_pattern", json!("LXG")),
        // Command R7B: every fourth layer global (mlx_lm's pattern); its MLP is SwiGLU and its
        // head the embedding; the plain rope.
        (
            "cohere2",
            "layer_types",
            json!([
                "sliding_attention",
                "full_attention",
                "sliding_attention",
                "full_attention"
            ]),
        ),
        ("cohere2", "tie_word_embeddings", json!(false)),
        (
            "cohere2",
            "rope_parameters",
            json!({"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}),
        ),
        // GPT-2's attention variants mlx_lm does not compute, and its MLP width.
        ("gpt2", "scale_attn_by_inverse_layer_idx", json!(true)),
        ("gpt2", "reorder_and_upcast_attn", json!(true)),
        ("gpt2", "n_inner", json!(100)),
        ("gpt2", "activation_function", json!("relu")),
        // GPT-OSS's attention always has its biases and its own head; the experts' counts
        // agree (OpenAI's `experts_per_token` too); the activation's constants are positive.
        ("gpt_oss", "attention_bias", json!(false)),
        ("gpt_oss", "tie_word_embeddings", json!(true)),
        ("gpt_oss", "num_experts_per_tok", json!(9)),
        ("gpt_oss", "experts_per_token", json!(2)),
        ("gpt_oss", "swiglu_limit", json!(-1.0)),
        ("gpt_oss", "swiglu_alpha", json!(0.0)),
        ("gpt_oss", "num_key_value_heads", json!(3)),
        (
            "gpt_oss",
            "layer_types",
            json!([
                "sliding_attention",
                "chunked_attention",
                "full_attention",
                "full_attention"
            ]),
        ),
        // RWKV-7 as mlx_lm builds it: relu² channel mix, the first layer's pre-norm,
        // LayerNorms with biases, no attention layers, heads of head_dim.
        ("rwkv7", "hidden_act", json!("silu")),
        ("rwkv7", "norm_first", json!(false)),
        ("rwkv7", "norm_bias", json!(false)),
        ("rwkv7", "attn", json!({"layers": [1], "num_heads": 2})),
        ("rwkv7", "num_heads", json!(3)),
        ("rwkv7", "head_dim", json!(48)),
        ("kimi_linear-remote", "use_grouped_topk", json!(false)),
        (
            "kimi_linear-remote",
            "moe_router_activation_func",
            json!("tanh"),
        ),
    ];
    for (name, key, value) in cases {
        let mut config = transformers_config(name);
        if name == "smollm3" && key == "layer_types" {
            config["sliding_window"] = json!(2);
        }
        text(&mut config).insert(key.into(), value.clone());
        let (result, _) = read_config(&format!("value-{name}-{key}"), &config);
        let e = result.expect_err(&format!("{name}.{key}")).to_string();
        assert!(e.contains(key) && e.contains(name), "{name}.{key}: {e}");
    }
}

#[test]
fn load_model_reports_unread_keys_as_the_options_say() {
    let models = golden_models::model_dir("qwen3");
    let dir = std::env::temp_dir().join(format!("mlx-lm-keys-load-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(&models).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let options = |unread_keys| LoadOptions {
        unread_keys,
        ..Default::default()
    };
    // The committed model has nothing unread, even under the strictest policy.
    load_model(&dir, options(UnreadKeys::Error)).unwrap();

    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    config["foo_multiplier"] = json!(2.0);
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    match load_model(&dir, options(UnreadKeys::Error)) {
        Err(Error::UnreadConfigKeys {
            path,
            model_type,
            keys,
        }) => {
            assert_eq!(path, dir.join("config.json"));
            assert_eq!(model_type, "qwen3");
            assert_eq!(keys, ["foo_multiplier"]);
        }
        other => panic!("expected UnreadConfigKeys, got {:?}", other.map(|_| ())),
    }
    assert_eq!(LoadOptions::default().unread_keys, UnreadKeys::Warn);
    let (_, c) = load_model(&dir, options(UnreadKeys::Warn)).unwrap();
    assert_eq!(c.unread_keys(), ["foo_multiplier"]);
    let (_, c) = load_model(&dir, options(UnreadKeys::Allow)).unwrap();
    assert_eq!(c.unread_keys(), ["foo_multiplier"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_clone_copies_the_record_and_a_section_shares_it() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ModelConfig>();
    let dir = config_dir(
        "record",
        &json!({"model_type": "llama", "a": 1, "b": 2, "sub": {"c": 3, "d": 4, "use_cache": true},
            "text_config": {"use_cache": true}}),
    );
    let c = load_config(&dir).unwrap();
    assert_eq!(c.unread_keys(), ["a", "b", "sub", "text_config"]);
    c.usize("a").unwrap();
    let copy = c.clone();
    copy.usize("b").unwrap();
    assert_eq!(c.unread_keys(), ["b", "sub", "text_config"]);
    assert_eq!(copy.unread_keys(), ["sub", "text_config"]);
    // In a sub-config (`*_config`), PreTrainedConfig's keys are accounted for; elsewhere not.
    let text = c.section("text_config").unwrap();
    assert!(text.unread_keys().is_empty());
    let sub = c.section("sub").unwrap();
    assert_eq!(c.unread_keys(), ["b", "sub.c", "sub.d", "sub.use_cache"]);
    sub.usize("c").unwrap();
    assert_eq!(c.unread_keys(), ["b", "sub.d", "sub.use_cache"]);
    assert_eq!(sub.unread_keys(), ["sub.d", "sub.use_cache"]);
    // A raw `get` accounts for the whole object.
    c.get("sub");
    c.declare_neutral(&["b"]);
    assert!(c.unread_keys().is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}

/// transformers' `_compute_yarn_parameters` in f64: the inverse frequencies and the
/// attention factor.
fn transformers_yarn(
    dim: usize,
    base: f64,
    factor: f64,
    original: f64,
    beta_fast: f64,
    beta_slow: f64,
    truncate: bool,
) -> Vec<f64> {
    let correction = |rotations: f64| {
        dim as f64 * (original / (rotations * 2.0 * std::f64::consts::PI)).ln() / (2.0 * base.ln())
    };
    let (mut low, mut high) = (correction(beta_fast), correction(beta_slow));
    if truncate {
        (low, high) = (low.floor(), high.ceil());
    }
    let (low, high) = (low.max(0.0), high.min(dim as f64 - 1.0));
    (0..dim / 2)
        .map(|i| {
            let pos = base.powf((2 * i) as f64 / dim as f64);
            let ramp = ((i as f64 - low) / (high - low)).clamp(0.0, 1.0);
            let extrapolation = 1.0 - ramp;
            1.0 / (factor * pos) * (1.0 - extrapolation) + 1.0 / pos * extrapolation
        })
        .collect()
}

fn rope(test: &str, config: &Value, dims: i32) -> RotaryEmbedding {
    let dir = config_dir(test, config);
    let c = load_config(&dir).unwrap();
    let theta = mlx_lm::blocks::rope_theta(&c, None).unwrap();
    let r = RotaryEmbedding::from_config(&c, dims, theta, false).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    r
}

fn assert_inverse_freqs(r: &RotaryEmbedding, expected: &[f64]) {
    // `freqs` are the periods MLX's rope divides by: the inverse of transformers' inv_freq.
    let freqs = r.freqs.as_ref().unwrap();
    assert_eq!(freqs.len(), expected.len());
    for (i, (f, e)) in freqs.iter().zip(expected).enumerate() {
        let inv = 1.0 / *f as f64;
        assert!((inv - e).abs() <= 1e-5 * e.abs(), "{i}: {inv} vs {e}");
    }
}

#[test]
fn yarn_follows_transformers() {
    let base = transformers_config("qwen2-yarn");
    let scaling = |entries: Value| {
        let mut c = base.clone();
        c["rope_parameters"] = entries;
        c
    };
    let yarn = json!({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
        "original_max_position_embeddings": 64});
    let factor_mscale = 0.1 * 4f64.ln() + 1.0;

    // truncate: false leaves the correction range unrounded.
    for truncate in [true, false] {
        let mut entries = yarn.clone();
        entries["truncate"] = json!(truncate);
        let r = rope(&format!("truncate-{truncate}"), &scaling(entries), 16);
        let expected = transformers_yarn(16, 10000.0, 4.0, 64.0, 32.0, 1.0, truncate);
        assert_inverse_freqs(&r, &expected);
        assert_eq!(r.input_scale, Some(factor_mscale as f32));
    }
    // attention_factor, when given, is the scale.
    let mut entries = yarn.clone();
    entries["attention_factor"] = json!(1.5);
    assert_eq!(
        rope("attention-factor", &scaling(entries), 16).input_scale,
        Some(1.5)
    );
    // mscale alone does not count (mlx_lm would scale by 0.1 * 0.5 * ln 4 + 1).
    let mut entries = yarn.clone();
    entries["mscale"] = json!(0.5);
    assert_eq!(
        rope("mscale-alone", &scaling(entries), 16).input_scale,
        Some(factor_mscale as f32)
    );
    // Without original_max_position_embeddings, max_position_embeddings is the original.
    let mut entries = yarn.clone();
    entries
        .as_object_mut()
        .unwrap()
        .remove("original_max_position_embeddings");
    let mut config = scaling(entries);
    config["max_position_embeddings"] = json!(256);
    let expected = transformers_yarn(16, 10000.0, 4.0, 256.0, 32.0, 1.0, true);
    assert_inverse_freqs(&rope("original-default", &config, 16), &expected);
}

#[test]
fn transformers_numerics_where_mlx_lm_differs() {
    let dir_of = |test: &str, config: &Value| {
        let dir = config_dir(test, config);
        let c = load_config(&dir).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
        c
    };

    // mistral's sliding_window slides every layer (transformers' MistralModel).
    let mistral = transformers_config("mistral");
    let args = Llama::args(&dir_of("mistral", &mistral)).unwrap();
    assert_eq!(args.sliding, [true; 4]);
    assert_eq!(args.sliding_window, Some(4096));
    let mut llama = transformers_config("llama");
    llama["sliding_window"] = json!(4096);
    assert_eq!(
        Llama::args(&dir_of("llama-window", &llama))
            .unwrap()
            .sliding,
        [false; 4]
    );

    // qwen3's attention_bias gives q/k/v/o biases.
    let mut qwen3 = transformers_config("qwen3");
    qwen3["attention_bias"] = json!(true);
    let args = Qwen3::args(&dir_of("qwen3-bias", &qwen3)).unwrap();
    assert!(args.qkv_bias && args.o_bias);

    // qwen2's head_dim is read.
    let mut qwen2 = transformers_config("qwen2");
    qwen2["head_dim"] = json!(32);
    assert_eq!(
        Qwen2::args(&dir_of("qwen2-head", &qwen2)).unwrap().head_dim,
        32
    );

    // qwen3_5's layer_types say which layers are full attention.
    let mut qwen3_5 = transformers_config("qwen3_5");
    let a = Qwen3_5::args(&dir_of("qwen3_5-types", &qwen3_5)).unwrap();
    assert_eq!(a.full_attention, [false, false, false, true]);
    qwen3_5["text_config"]["layer_types"] = json!([
        "linear_attention",
        "full_attention",
        "linear_attention",
        "full_attention"
    ]);
    let a = Qwen3_5::args(&dir_of("qwen3_5-types2", &qwen3_5)).unwrap();
    assert_eq!(a.full_attention, [false, true, false, true]);
    // Tying: the top level counts, and the two levels must agree.
    qwen3_5["tie_word_embeddings"] = json!(true);
    let e = Qwen3_5::args(&dir_of("qwen3_5-tie", &qwen3_5))
        .unwrap_err()
        .to_string();
    assert!(e.contains("text_config.tie_word_embeddings"), "{e}");
    qwen3_5["text_config"]
        .as_object_mut()
        .unwrap()
        .remove("tie_word_embeddings");
    assert!(
        Qwen3_5::args(&dir_of("qwen3_5-tie-top", &qwen3_5))
            .unwrap()
            .tie_word_embeddings
    );

    // rope_theta at the top level and under rope_parameters must agree.
    let mut llama = transformers_config("llama");
    llama["rope_theta"] = json!(500000.0);
    let e = Llama::args(&dir_of("theta", &llama))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rope_theta") && e.contains("rope_parameters.rope_theta"),
        "{e}"
    );
    llama["rope_theta"] = json!(10000.0);
    Llama::args(&dir_of("theta-same", &llama)).unwrap();
}

/// `config` written to a directory and loaded (the directory is gone again).
fn loaded(test: &str, config: &Value) -> ModelConfig {
    let dir = config_dir(test, config);
    let c = load_config(&dir).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    c
}

#[test]
fn lfm2_follows_transformers_where_mlx_lm_differs() {
    let args = |test: &str, config: &Value| {
        let c = loaded(test, config);
        let a = Lfm2Args::from_config(&c).unwrap_or_else(|e| panic!("{test}: {e}"));
        assert!(c.unread_keys().is_empty(), "{test}: {:?}", c.unread_keys());
        a
    };
    let lfm2 = transformers_config("lfm2");
    let a = args("lfm2", &lfm2);
    assert_eq!(a.full_attn_idxs, [1, 3]);
    assert_eq!((a.head_dim, a.rope.dims), (16, 16));
    assert_eq!(a.rope.base, Some(1e6));
    // int(2 * 128 / 3) = 85, times 1.0, rounded up to a multiple of 256.
    assert_eq!(a.ff_dim, 256);

    // layer_types places the attention layers; full_attn_idxs only without it.
    let mut c = lfm2.clone();
    c["full_attn_idxs"] = json!([0]);
    assert_eq!(args("lfm2-types", &c).full_attn_idxs, [1, 3]);
    c["layer_types"] = Value::Null;
    assert_eq!(args("lfm2-idxs", &c).full_attn_idxs, [0]);

    // Without a multiplier, transformers leaves 2/3 of the width unrounded (mlx_lm: 256).
    let mut c = lfm2.clone();
    c["block_ffn_dim_multiplier"] = Value::Null;
    assert_eq!(args("lfm2-no-multiplier", &c).ff_dim, 85);
    // block_ff_dim wins over intermediate_size: int(2 * 600 / 3) = 400, rounded to 512.
    c["block_ffn_dim_multiplier"] = json!(1.0);
    c["block_ff_dim"] = json!(600);
    assert_eq!(args("lfm2-block-ff", &c).ff_dim, 512);

    // head_dim, where given, is the heads' width and the rope's.
    let mut c = lfm2.clone();
    c["head_dim"] = json!(32);
    let a = args("lfm2-head-dim", &c);
    assert_eq!((a.head_dim, a.rope.dims), (32, 32));

    // A scaled rope applies (mlx_lm's lfm2 would run plain RoPE).
    let a = args("lfm2-linear", &transformers_config("lfm2-linear"));
    assert_eq!((a.rope.scale, a.rope.base), (0.5, Some(1e6)));

    // rope_theta: the nested one wins over the top level's (in mlx_lm too), and the nested
    // object is rope_scaling where there is one (transformers' `rope_scaling or
    // rope_parameters`), with the top level's theta as its default.
    let mut c = lfm2.clone();
    c["rope_theta"] = json!(500000.0);
    assert_eq!(args("lfm2-theta", &c).rope.base, Some(1e6));
    c.as_object_mut().unwrap().remove("rope_parameters");
    c["rope_scaling"] = json!({"rope_type": "linear", "factor": 4.0});
    let a = args("lfm2-scaling", &c);
    assert_eq!((a.rope.scale, a.rope.base), (0.25, Some(500000.0)));
    c["rope_scaling"]["rope_theta"] = json!(250000.0);
    assert_eq!(args("lfm2-scaling-theta", &c).rope.base, Some(250000.0));
}

#[test]
fn lfm2_moe_follows_transformers_where_mlx_lm_differs() {
    let args = |test: &str, config: &Value| {
        let c = loaded(test, config);
        let a = Lfm2MoeArgs::from_config(&c).unwrap_or_else(|e| panic!("{test}: {e}"));
        assert!(c.unread_keys().is_empty(), "{test}: {:?}", c.unread_keys());
        a
    };
    let moe = transformers_config("lfm2_moe");
    let a = args("lfm2_moe", &moe);
    assert_eq!(a.base.full_attn_idxs, [1]);
    assert_eq!((a.base.head_dim, a.base.ff_dim), (16, 128));
    assert_eq!(
        (a.num_experts, a.num_experts_per_tok, a.num_dense_layers),
        (8, 4, 1)
    );
    assert!(a.use_expert_bias && a.norm_topk_prob);
    assert_eq!(a.routed_scaling_factor, 1.0);

    // layer_types places the attention layers; full_attn_idxs (mlx_lm's first choice)
    // only without it.
    let mut c = moe.clone();
    c["full_attn_idxs"] = json!([0]);
    assert_eq!(args("lfm2_moe-types", &c).base.full_attn_idxs, [1]);
    c["layer_types"] = Value::Null;
    assert_eq!(args("lfm2_moe-idxs", &c).base.full_attn_idxs, [0]);

    // head_dim, where given, is the heads' width and the rope's (mlx_lm: hidden / heads).
    let mut c = moe.clone();
    c["head_dim"] = json!(32);
    let a = args("lfm2_moe-head-dim", &c);
    assert_eq!((a.base.head_dim, a.base.rope.dims), (32, 32));

    // More dense layers than layers, more experts per token than experts, an untied head:
    // errors naming the key.
    for (key, value) in [
        ("num_dense_layers", json!(5)),
        ("num_experts_per_tok", json!(9)),
        ("tie_word_embeddings", json!(false)),
    ] {
        let mut c = moe.clone();
        c[key] = value;
        let e = Lfm2MoeArgs::from_config(&loaded(&format!("lfm2_moe-{key}"), &c))
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{key}: {e}");
    }
}

#[test]
fn lfm2_settings_it_does_not_compute_with_are_errors_naming_the_key() {
    let liquid = transformers_config("lfm2-liquid");
    let cases = [
        ("block_dim", json!(32)),
        ("conv_dim", json!(32)),
        ("conv_dim_out", json!(32)),
        ("num_heads", json!(8)),
        ("block_norm_eps", json!(1e-6)),
        ("block_use_swiglu", json!(false)),
        ("use_pos_enc", json!(false)),
        ("tie_word_embeddings", json!(false)),
        ("tie_embedding", json!(false)),
    ];
    for (key, value) in cases {
        let mut c = liquid.clone();
        c[key] = value.clone();
        let e = Lfm2Args::from_config(&loaded("lfm2-value", &c))
            .expect_err(key)
            .to_string();
        assert!(
            e.contains(&format!("{key}: {value} is not supported by lfm2")),
            "{key}: {e}"
        );
    }
    // The values transformers and mlx_lm build the model from pass.
    let mut c = liquid.clone();
    c["tie_embedding"] = json!(true);
    c["hidden_act"] = json!("silu");
    Lfm2Args::from_config(&loaded("lfm2-same", &c)).unwrap();
}

/// transformers writes a non-finite float as Python's json does, a bare `Infinity` (Mamba-2's
/// `time_step_limit` is `[0.0, Infinity]` by default), which is not JSON: the loader reads it
/// as mlx_lm's tagged float, and leaves strings that spell it alone.
#[test]
fn a_bare_infinity_as_transformers_writes_it_loads() {
    let dir = std::env::temp_dir().join(format!("mlx-lm-keys-infinity-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = transformers_config("mamba2");
    config["time_step_limit"] = json!("@LIMIT@");
    config["_name_or_path"] = json!("a \"NaN\" Infinity");
    let text = config
        .to_string()
        .replace("\"@LIMIT@\"", "[0.001, Infinity]");
    assert!(text.contains(", Infinity]"), "{text}");
    std::fs::write(dir.join("config.json"), text).unwrap();
    let c = load_config(&dir).unwrap();
    let a = Mamba2::args(&c).unwrap();
    assert_eq!(a.mixer.time_step_limit, (0.001, f32::INFINITY));
    assert_eq!(
        c.string("_name_or_path").unwrap(),
        Some("a \"NaN\" Infinity")
    );
    assert!(c.unread_keys().is_empty(), "{:?}", c.unread_keys());
    std::fs::remove_dir_all(dir).unwrap();
}

/// bailing_hybrid's reader on the committed golden config, and what it refuses (the
/// `BailingMoeV3ForCausalLM` checkpoints are mlx_lm's `bailing_moe_v3`, remapped when the
/// config is read): a rotary part mlx_lm's `__post_init__` rejects, groups
/// that do not divide the experts, and a missing key mlx_lm requires; each an error naming
/// the key.
#[test]
fn bailing_hybrid_reads_its_config_and_names_what_it_refuses() {
    use mlx_lm::models::bailing_hybrid::BailingHybridArgs;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/lm-models/bailing_hybrid/config.json");
    let golden: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let c = loaded("bailing_hybrid", &golden);
    let a = BailingHybridArgs::from_config(&c).unwrap();
    assert!(c.unread_keys().is_empty(), "{:?}", c.unread_keys());
    assert_eq!(a.is_global, [false, false, true, false, false, true, true]);
    assert_eq!((a.linear.head_dim, a.linear.rope.dims), (16, 8));
    assert_eq!(a.moe.shared_size, Some(32));
    let refused = |test: &str, key: &str, value: Value, named: &str| {
        let mut config = golden.clone();
        match value {
            Value::Null => drop(config.as_object_mut().unwrap().remove(key)),
            v => config[key] = v,
        }
        let err = BailingHybridArgs::from_config(&loaded(test, &config))
            .map(drop)
            .expect_err(test)
            .to_string();
        assert!(err.contains(named), "{test}: {err}");
    };
    // mlx_lm's `MODEL_ARCHITECTURE_REMAPPING`: the same model_type naming
    // BailingMoeV3ForCausalLM is bailing_moe_v3, whichever of the architectures names it.
    let mut v3 = golden.clone();
    v3["architectures"] = json!(["Other", "BailingMoeV3ForCausalLM"]);
    assert_eq!(
        loaded("bailing_hybrid-v3", &v3).model_type(),
        "bailing_moe_v3"
    );
    v3["architectures"] = json!("BailingMoeV3ForCausalLM");
    assert_eq!(
        loaded("bailing_hybrid-v3s", &v3).model_type(),
        "bailing_moe_v3"
    );
    refused(
        "bailing_hybrid-rotary",
        "partial_rotary_factor",
        // int(16 * 0.2) = 3 rotary features: odd.
        json!(0.2),
        "partial_rotary_factor",
    );
    refused("bailing_hybrid-groups", "n_group", json!(3), "n_group");
    refused(
        "bailing_hybrid-norm",
        "group_norm_size",
        Value::Null,
        "group_norm_size",
    );
}

/// bailing_moe_v3's reader on its golden config (mlx_lm's keys) and on transformers' (the
/// same model under transformers' names), and where it follows transformers against mlx_lm:
/// the KDA head size from `linear_head_dim`, the layer mix from `layer_types`, transformers'
/// router names, and the errors naming a key that would otherwise change the model silently.
#[test]
fn bailing_moe_v3_reads_both_configs_and_follows_transformers() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/lm-models/bailing_moe_v3/config.json");
    let golden: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let c = loaded("bailing_moe_v3", &golden);
    assert_eq!(c.model_type(), "bailing_moe_v3");
    let a = BailingMoeV3Args::from_config(&c).unwrap();
    assert!(c.unread_keys().is_empty(), "{:?}", c.unread_keys());
    assert_eq!(a.is_linear, [true, true, false, true, true, false]);
    assert_eq!(
        (a.kda.num_heads, a.kda.head_dim, a.kda.conv_kernel),
        (4, 32, 4)
    );
    assert_eq!(a.attention.q_lora_rank, None);
    assert_eq!(a.shared_size, Some(32));
    assert_eq!(
        (a.routing.n_group, a.routing.topk_group, a.routing.top_k),
        (4, 2, 2)
    );

    let theirs = transformers_config("bailing_moe_v3");
    let c = loaded("bailing_moe_v3-tf", &theirs);
    let a = BailingMoeV3Args::from_config(&c).unwrap();
    assert!(c.unread_keys().is_empty(), "{:?}", c.unread_keys());
    // transformers writes head_dim = qk_rope_head_dim (8) beside linear_head_dim (32).
    assert_eq!(a.kda.head_dim, 32);
    assert_eq!(a.is_linear, [true, false, true, false]);
    assert_eq!((a.routing.n_group, a.routing.top_k), (4, 2));

    // Layers after the last whole group: KDA as in transformers (mlx_lm makes them MLA).
    let mut odd = golden.clone();
    odd["num_hidden_layers"] = json!(7);
    let a = BailingMoeV3Args::from_config(&loaded("bailing_moe_v3-odd", &odd)).unwrap();
    assert!(a.is_linear[6]);

    let refused = |test: &str, key: &str, value: Value| {
        let mut config = golden.clone();
        match value {
            Value::Null => drop(config.as_object_mut().unwrap().remove(key)),
            v => config[key] = v,
        }
        let err = BailingMoeV3Args::from_config(&loaded(test, &config))
            .map(drop)
            .expect_err(test)
            .to_string();
        assert!(err.contains(key), "{test}: {err}");
    };
    refused("v3-safe-gate", "kda_safe_gate", json!(false));
    refused("v3-lora", "no_kda_lora", json!(false));
    refused("v3-interleave", "rope_interleave", json!(false));
    refused(
        "v3-shared",
        "moe_shared_expert_intermediate_size",
        json!(64),
    );
    refused("v3-group-alias", "num_expert_group", json!(2));
    refused("v3-first-dense", "first_k_dense_replace", Value::Null);
    refused("v3-layer-types", "layer_types", json!(["linear_attention"]));
}
