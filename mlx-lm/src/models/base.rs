//! What the dense decoders (`llama`, `qwen2`, `qwen3`, and the many mlx_lm architectures of
//! their shape) share: their arguments, read by each architecture's file from its config,
//! and the stack of [`Attention`] and [`Mlp`] layers those arguments build (Python: the
//! `ModelArgs` fields the dataclasses share, and `mlx_lm.models.base`).

use mlx_nn::MaybeQuantizedLinear;
use serde_json::Value;

use crate::blocks::{
    load_lm_head, Attention, AttentionConfig, DecoderModel, Mlp, RotaryEmbedding, StackConfig,
};
use crate::checkpoint::Checkpoint;
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;

/// A dense decoder, as a config describes it.
#[derive(Debug, Clone)]
pub struct DecoderArgs {
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub num_hidden_layers: i32,
    pub vocab_size: i32,
    pub rms_norm_eps: f32,
    /// Biases of q/k/v (qwen2: true) and of o (llama's `attention_bias` covers all four).
    pub qkv_bias: bool,
    pub o_bias: bool,
    pub mlp_bias: bool,
    /// qwen3's per-head RMSNorm of queries and keys.
    pub qk_norm: bool,
    pub tie_word_embeddings: bool,
    pub rope: RotaryEmbedding,
    /// Per layer: a sliding-window layer (llama's `layer_types`).
    pub sliding: Vec<bool>,
    /// Per layer: no positional embedding (SmolLM3's NoPE layers).
    pub no_rope: Vec<bool>,
    pub sliding_window: Option<i32>,
}

/// The dense decoder's layers and its output head (`None` when tied).
pub type DenseParts = (DecoderModel<Attention, Mlp>, Option<MaybeQuantizedLinear>);

impl DecoderArgs {
    /// What every dense config has (`hidden_size`, `intermediate_size`,
    /// `num_attention_heads`, `num_hidden_layers`, `vocab_size`, `rms_norm_eps`), with no
    /// biases, no q/k norms, tied embeddings and full attention in every layer; a reader
    /// overrides what its architecture changes. Also accounts for the keys every dense
    /// transformers config has and none of these readers uses: `hidden_act` (SwiGLU's SiLU
    /// is the only activation the MLP has), `attention_dropout`, `initializer_range` and
    /// `max_position_embeddings`.
    pub fn common(
        c: &ModelConfig,
        head_dim: impl FnOnce(i32, i32) -> crate::Result<i32>,
        rope: impl FnOnce(i32) -> crate::Result<RotaryEmbedding>,
        num_key_value_heads: impl FnOnce(i32) -> crate::Result<i32>,
    ) -> crate::Result<DecoderArgs> {
        // transformers' ACT2FN: "swish" is SiLU too.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache, and where a llama3
        // or yarn rope needs it, `RotaryEmbedding::from_config` reads it.
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let hidden = c.dim("hidden_size")?;
        let intermediate = c.dim("intermediate_size")?;
        let heads = c.dim("num_attention_heads")?;
        let layers = c.dim("num_hidden_layers")?;
        let vocab = c.dim("vocab_size")?;
        let rms_norm_eps = c
            .float("rms_norm_eps")?
            .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?
            as f32;
        let head_dim = head_dim(hidden, heads)?;
        Ok(DecoderArgs {
            hidden_size: hidden,
            intermediate_size: intermediate,
            num_attention_heads: heads,
            num_key_value_heads: num_key_value_heads(heads)?,
            head_dim,
            num_hidden_layers: layers,
            vocab_size: vocab,
            rms_norm_eps,
            qkv_bias: false,
            o_bias: false,
            mlp_bias: false,
            qk_norm: false,
            tie_word_embeddings: true,
            rope: rope(head_dim)?,
            sliding: vec![false; layers as usize],
            no_rope: vec![false; layers as usize],
            sliding_window: None,
        })
    }

    /// `hidden_size / num_attention_heads`, the head width of the architectures whose mlx_lm
    /// file computes it so (helium, internlm3), where a config's `head_dim` key, when given,
    /// must agree (mlx_lm ignores the key; another width could not load).
    pub fn head_dim_of_hidden(c: &ModelConfig, hidden: i32, heads: i32) -> crate::Result<i32> {
        let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
        if head_dim * heads != hidden {
            return Err(invalid(
                c.path(),
                &c.key("head_dim"),
                &format!(
                    "{head_dim} is not supported by {} (supported: hidden_size / num_attention_heads = {})",
                    c.model_type(),
                    hidden / heads
                ),
            ));
        }
        Ok(head_dim)
    }

    /// Qwen2Config's and Qwen3Config's sliding window: transformers slides the attention of
    /// the layers from `max_window_layers` on when `use_sliding_window` is true (the window
    /// `sliding_window`), or of the layers `layer_types` marks; mlx_lm never does. Supported:
    /// off, where transformers drops `sliding_window` and `max_window_layers` is unused.
    pub fn no_sliding_window(c: &ModelConfig) -> crate::Result<()> {
        c.require_value("use_sliding_window", false)?;
        c.require("layer_types", r#"every layer "full_attention""#, |v| {
            v.as_array()
                .is_some_and(|types| types.iter().all(|t| t == "full_attention"))
        })?;
        c.declare_neutral(&["sliding_window", "max_window_layers"]);
        Ok(())
    }

    /// Per layer, whether it slides (transformers' `layer_types`: `"sliding_attention"` or
    /// `"full_attention"`, one per layer); without the key every layer is `default`.
    pub fn sliding_layers(c: &ModelConfig, layers: i32, default: bool) -> crate::Result<Vec<bool>> {
        let layer_types_error =
            |message: String| invalid(c.path(), &c.key("layer_types"), &message);
        match c.get("layer_types") {
            None | Some(Value::Null) => Ok(vec![default; layers as usize]),
            Some(Value::Array(types)) => {
                let sliding = types
                    .iter()
                    .map(|t| match t.as_str() {
                        Some("full_attention") => Ok(false),
                        Some("sliding_attention") => Ok(true),
                        _ => Err(layer_types_error(format!("unknown layer type {t}"))),
                    })
                    .collect::<crate::Result<Vec<bool>>>()?;
                if sliding.len() != layers as usize {
                    return Err(layer_types_error(format!(
                        "{} entries for {layers} layers",
                        sliding.len(),
                    )));
                }
                Ok(sliding)
            }
            Some(v) => Err(layer_types_error(format!("not a list: {v}"))),
        }
    }

    /// The sizes of the stack.
    pub fn stack(&self) -> StackConfig {
        StackConfig {
            vocab_size: self.vocab_size,
            hidden_size: self.hidden_size,
            num_hidden_layers: self.num_hidden_layers,
            rms_norm_eps: self.rms_norm_eps,
        }
    }

    /// The attention of layer `i`.
    pub fn attention(&self, i: i32) -> AttentionConfig {
        let sliding = self.sliding.get(i as usize).copied().unwrap_or(false);
        let no_rope = self.no_rope.get(i as usize).copied().unwrap_or(false);
        AttentionConfig {
            hidden_size: self.hidden_size,
            num_heads: self.num_attention_heads,
            num_kv_heads: self.num_key_value_heads,
            head_dim: self.head_dim,
            qkv_bias: self.qkv_bias,
            o_bias: self.o_bias,
            qk_norm: self.qk_norm.then_some(self.rms_norm_eps),
            output_gate: false,
            rope: (!no_rope).then(|| self.rope.clone()),
            sliding_window: if sliding { self.sliding_window } else { None },
        }
    }

    /// Python: `Model.sanitize` of the dense decoders: drops precomputed rotary frequencies
    /// and, with tied embeddings, `lm_head.weight`.
    pub fn sanitize(&self, ck: &mut Checkpoint) {
        self.sanitize_under(ck, "");
    }

    /// [`sanitize`](Self::sanitize) of a decoder whose paths start with `prefix` (a
    /// multimodal wrapper's `language_model.`).
    pub fn sanitize_under(&self, ck: &mut Checkpoint, prefix: &str) {
        let tied = self.tie_word_embeddings;
        let head = format!("{prefix}lm_head.weight");
        ck.weights_mut().retain(|k, _| {
            let rotary = k.contains("self_attn.rotary_emb.inv_freq");
            !(rotary || tied && k == head)
        });
    }

    /// Takes the layers (`model.*`) and the output head (`lm_head`) from the checkpoint.
    pub fn load(&self, ck: &mut Checkpoint, kernels: KernelOptions) -> crate::Result<DenseParts> {
        self.load_under(ck, kernels, "")
    }

    /// [`load`](Self::load) of a decoder whose paths start with `prefix` (a multimodal
    /// wrapper's `language_model.`).
    pub fn load_under(
        &self,
        ck: &mut Checkpoint,
        kernels: KernelOptions,
        prefix: &str,
    ) -> crate::Result<DenseParts> {
        let model = DecoderModel::load(
            ck,
            &format!("{prefix}model"),
            self.stack(),
            kernels,
            |ck, path, i| Attention::load(ck, &format!("{path}.self_attn"), &self.attention(i)),
            |ck, path, _| {
                Mlp::load(
                    ck,
                    path,
                    self.hidden_size,
                    self.intermediate_size,
                    self.mlp_bias,
                )
            },
        )?;
        let lm_head = load_lm_head(
            ck,
            &format!("{prefix}lm_head"),
            self.stack(),
            self.tie_word_embeddings,
        )?;
        Ok((model, lm_head))
    }
}

/// Writes a dense decoder architecture around the `args` reader its file defines: the model
/// struct (`model`, `lm_head`: mlx_lm's parameter paths), `from_checkpoint` and the
/// [`LanguageModel`](crate::LanguageModel) impl. Llama-shaped architectures differ only in how
/// they read their config, so that reader is all their file has to say.
macro_rules! dense_decoder {
    ($(#[$doc:meta])* $name:ident, $model_type:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, mlx_tree::TreeNode)]
        pub struct $name {
            pub model: $crate::blocks::DecoderModel<$crate::blocks::Attention, $crate::blocks::Mlp>,
            /// The output projection; `None` with tied embeddings.
            pub lm_head: Option<mlx_nn::MaybeQuantizedLinear>,
        }

        impl $name {
            /// Reads the config, sanitizes and casts the tensors, builds the model.
            pub fn from_checkpoint(
                ck: &mut $crate::Checkpoint,
                config: &$crate::ModelConfig,
                options: &$crate::LoadOptions,
            ) -> $crate::Result<$name> {
                let args = Self::args(config)?;
                args.sanitize(ck);
                ck.cast(options.dtype, |_| false)?;
                let (model, lm_head) = args.load(ck, options.kernels)?;
                Ok($name { model, lm_head })
            }
        }

        $crate::models::base::stack_language_model!($name, model, $model_type);
    };
}
pub(crate) use dense_decoder;

/// The [`LanguageModel`](crate::LanguageModel) impl of a model whose stack is a struct of its
/// own (parts named otherwise than a [`Stack`](crate::blocks::Stack)'s, or ends it computes
/// itself): `forward` as written, the caches of the layers `layers` names, and the dtype and
/// vocabulary of the embedding `embedding` names.
macro_rules! own_stack_language_model {
    (
        $name:ident,
        $model_type:literal,
        layers: |$l:ident| $layers:expr,
        embedding: |$e:ident| $embedding:expr,
        fn forward(&$self_:ident, $inputs:ident, $cache:ident) $body:block
        $(, fn shard(&mut $shard_self:ident, $group:ident) $shard_body:block)?
    ) => {
        impl $crate::LanguageModel for $name {
            fn forward(
                &$self_,
                $inputs: &mlx_rs::Array,
                $cache: Option<&mut [$crate::LayerCache]>,
            ) -> mlx_rs::Result<mlx_rs::Array> $body

            $(
                fn shard(
                    &mut $shard_self,
                    $group: &mlx_rs::distributed::Group,
                ) -> mlx_rs::Result<()> $shard_body
            )?

            fn make_cache(
                &self,
                batch: i32,
                capacity: i32,
            ) -> mlx_rs::Result<Vec<$crate::LayerCache>> {
                let $l = self;
                let dtype = <Self as $crate::LanguageModel>::dtype(self);
                $crate::blocks::make_layer_caches($layers, batch, capacity, dtype)
            }

            fn dtype(&self) -> mlx_rs::Dtype {
                let $e = self;
                $crate::blocks::layer::embedding_dtype($embedding, self)
            }

            fn vocab_size(&self) -> i32 {
                let $e = self;
                $crate::blocks::layer::embedding_vocab_size($embedding)
            }

            fn model_type(&self) -> &str {
                $model_type
            }
        }
    };
}
pub(crate) use own_stack_language_model;

/// The [`LanguageModel`](crate::LanguageModel) impl of a model whose layer stack (a
/// [`DecoderModel`] or [`LayerStack`](crate::blocks::LayerStack) under `model`, or a
/// [`Backbone`](crate::blocks::Backbone) under `backbone`: mamba, mamba2, nemotron_h) computes
/// the logits, with its output head under `lm_head` (`None`: tied), or where the closure
/// given last says (`|m| Some(&m.lm_head)`: always untied; `|_m| None`: always tied).
macro_rules! stack_language_model {
    ($name:ident, $stack:ident, $model_type:literal) => {
        $crate::models::base::stack_language_model!($name, $stack, $model_type, |m| m
            .lm_head
            .as_ref());
    };
    ($name:ident, $stack:ident, $model_type:literal, |$m:ident| $head:expr) => {
        impl $crate::LanguageModel for $name {
            fn forward(
                &self,
                inputs: &mlx_rs::Array,
                cache: Option<&mut [$crate::LayerCache]>,
            ) -> mlx_rs::Result<mlx_rs::Array> {
                let $m = self;
                self.$stack.logits(inputs, cache, $head)
            }

            fn make_cache(
                &self,
                batch: i32,
                capacity: i32,
            ) -> mlx_rs::Result<Vec<$crate::LayerCache>> {
                self.$stack.make_cache(batch, capacity)
            }

            fn dtype(&self) -> mlx_rs::Dtype {
                self.$stack.dtype()
            }

            fn vocab_size(&self) -> i32 {
                self.$stack.vocab_size()
            }

            fn model_type(&self) -> &str {
                $model_type
            }

            fn shard(&mut self, group: &mlx_rs::distributed::Group) -> mlx_rs::Result<()> {
                $crate::distributed::split_stack(
                    "tensor",
                    $model_type,
                    $crate::distributed::ParallelStack::shard_stack(&mut self.$stack, group),
                )
            }

            fn pipeline(
                &mut self,
                group: &mlx_rs::distributed::Group,
                split: Option<&[usize]>,
            ) -> mlx_rs::Result<()> {
                $crate::distributed::split_stack(
                    "pipeline",
                    $model_type,
                    $crate::distributed::ParallelStack::pipeline_stack(
                        &mut self.$stack,
                        group,
                        split,
                    ),
                )
            }
        }
    };
}
pub(crate) use stack_language_model;
