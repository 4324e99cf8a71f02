//! What the mixture-of-experts decoders (`qwen3_moe`, `mixtral`, `qwen2_moe`, `olmoe`) share: the
//! dense decoder's arguments plus the sparse block's ([`MoeConfig`]), which layers are
//! sparse, the stacking of a Hugging Face checkpoint's per-expert tensors into mlx_lm's
//! switch layers (their `sanitize`), and the stack they build.

use mlx_nn::MaybeQuantizedLinear;
use mlx_rs::ops;

use crate::blocks::{load_lm_head, Attention, ChannelMixer, DecoderModel, MoeConfig, TokenMixer};
use crate::checkpoint::{Checkpoint, QuantPredicate};
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;
use crate::models::base::DecoderArgs;

/// A mixture-of-experts decoder, as a config describes it.
#[derive(Debug, Clone)]
pub struct MoeArgs {
    pub decoder: DecoderArgs,
    pub moe: MoeConfig,
    /// Per layer: a sparse block (else the dense MLP of `intermediate_size`).
    pub sparse: Vec<bool>,
    /// Where a Hugging Face checkpoint keeps each layer's experts (`mlp`, Mixtral's
    /// `block_sparse_moe`), and their projections' names there against mlx_lm's
    /// (`w1` -> `gate_proj` for Mixtral).
    pub experts_at: &'static str,
    pub expert_names: [(&'static str, &'static str); 3],
    /// The architecture's quantization choices for layers quantized as they load.
    pub quant_predicate: Option<QuantPredicate>,
}

/// The projections of a SwiGLU expert under the names both layouts use.
pub const SAME_NAMES: [(&str, &str); 3] = [
    ("up_proj", "up_proj"),
    ("down_proj", "down_proj"),
    ("gate_proj", "gate_proj"),
];

/// The number of experts per token and of experts, checked against each other.
pub fn expert_counts(c: &ModelConfig, experts_key: &str) -> crate::Result<(i32, i32)> {
    let experts = c.dim(experts_key)?;
    let top_k = c.dim("num_experts_per_tok")?;
    if top_k > experts {
        return Err(invalid(
            c.path(),
            &c.key("num_experts_per_tok"),
            &format!("{top_k} experts per token, but only {experts} experts"),
        ));
    }
    Ok((top_k, experts))
}

impl MoeArgs {
    /// Python: the MoE models' `sanitize`: the dense one's (rotary frequencies, a tied
    /// `lm_head`), then each layer's per-expert tensors `{experts_at}.experts.{e}.{name}.{k}`
    /// (`k`: `weight`, and `scales` / `biases` of a quantized checkpoint) stacked into
    /// `{experts_at}.switch_mlp.{mlx_name}.{k}`. A checkpoint already in mlx_lm's layout
    /// passes unchanged; one that lacks an expert's tensor is an error naming it.
    pub fn sanitize(&self, ck: &mut Checkpoint) -> crate::Result<()> {
        self.decoder.sanitize(ck);
        stack_experts(
            ck,
            "model",
            self.decoder.num_hidden_layers,
            self.experts_at,
            &self.expert_names,
            self.moe.num_experts,
        )
    }

    /// Takes the layers (`model.*`, each layer's feed-forward block built by `channel` from
    /// its path and whether it is sparse) and the output head (`lm_head`).
    pub fn load<C: ChannelMixer>(
        &self,
        ck: &mut Checkpoint,
        kernels: KernelOptions,
        channel: impl FnMut(&mut Checkpoint, &str, bool) -> crate::Result<C>,
    ) -> crate::Result<(DecoderModel<Attention, C>, Option<MaybeQuantizedLinear>)> {
        let d = &self.decoder;
        self.load_with(
            ck,
            kernels,
            |ck, path, i| Attention::load(ck, &format!("{path}.self_attn"), &d.attention(i)),
            channel,
        )
    }

    /// [`load`](Self::load) with the layers' token mixer built by `mixer` from the layer's
    /// path and index (OLMoE's attention).
    pub fn load_with<M: TokenMixer, C: ChannelMixer>(
        &self,
        ck: &mut Checkpoint,
        kernels: KernelOptions,
        mixer: impl FnMut(&mut Checkpoint, &str, i32) -> crate::Result<M>,
        mut channel: impl FnMut(&mut Checkpoint, &str, bool) -> crate::Result<C>,
    ) -> crate::Result<(DecoderModel<M, C>, Option<MaybeQuantizedLinear>)> {
        if let Some(predicate) = self.quant_predicate {
            ck.set_quant_predicate(predicate);
        }
        let d = &self.decoder;
        let model = DecoderModel::load(ck, "model", d.stack(), kernels, mixer, |ck, path, i| {
            channel(ck, path, self.sparse[i as usize])
        })?;
        let lm_head = load_lm_head(ck, "lm_head", d.stack(), d.tie_word_embeddings)?;
        Ok((model, lm_head))
    }
}

/// Stacks each layer's per-expert tensors `{prefix}.layers.{l}.{experts_at}.experts.{e}.{name}.{k}`
/// (`k`: `weight`, and `scales` / `biases` of a quantized checkpoint) into
/// `{prefix}.layers.{l}.{experts_at}.switch_mlp.{mlx_name}.{k}` (the `names` pairs), as the MoE
/// models' `sanitize` in mlx_lm. Layers already in mlx_lm's layout pass unchanged; a layer
/// that lacks one expert's tensor is an error naming it.
pub fn stack_experts(
    ck: &mut Checkpoint,
    prefix: &str,
    layers: i32,
    experts_at: &str,
    names: &[(&str, &str)],
    experts: i32,
) -> crate::Result<()> {
    for l in 0..layers {
        let prefix = format!("{prefix}.layers.{l}.{experts_at}");
        for &(hf, mlx) in names {
            for k in ["weight", "scales", "biases"] {
                let key = |e: i32| format!("{prefix}.experts.{e}.{hf}.{k}");
                if !ck.weights_mut().contains(&key(0)) {
                    continue;
                }
                let file = ck.weights_mut().file_of(&key(0)).map(|p| p.to_path_buf());
                let mut parts = Vec::with_capacity(experts as usize);
                for e in 0..experts {
                    let Some(a) = ck.weights_mut().take(&key(e)) else {
                        return Err(invalid(
                            file.as_deref().unwrap_or(ck.dir()),
                            &key(e),
                            &format!("missing: the layer has {experts} experts"),
                        ));
                    };
                    parts.push(a);
                }
                let stacked = ops::stack(&parts, 0).map_err(|source| crate::Error::Mlx {
                    path: file.clone().unwrap_or_else(|| ck.dir().to_path_buf()),
                    source,
                })?;
                let to = format!("{prefix}.switch_mlp.{mlx}.{k}");
                let file = file.clone().unwrap_or_else(|| ck.dir().to_path_buf());
                ck.weights_mut().insert(to, stacked, file);
            }
        }
    }
    Ok(())
}

/// Writes a mixture-of-experts architecture around the `args` reader (returning [`MoeArgs`])
/// and the `channel` builder (a layer's feed-forward block of type `$channel`) its file
/// defines: the model struct (`model`, `lm_head`), `from_checkpoint` and the
/// [`LanguageModel`](crate::LanguageModel) impl.
macro_rules! moe_decoder {
    ($(#[$doc:meta])* $name:ident, $model_type:literal, $channel:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, mlx_tree::TreeNode)]
        pub struct $name {
            pub model: $crate::blocks::DecoderModel<$crate::blocks::Attention, $channel>,
            /// The output projection; `None` with tied embeddings.
            pub lm_head: Option<mlx_nn::MaybeQuantizedLinear>,
        }

        impl $name {
            /// Reads the config, sanitizes (stacking per-expert tensors) and casts the
            /// tensors, builds the model.
            pub fn from_checkpoint(
                ck: &mut $crate::Checkpoint,
                config: &$crate::ModelConfig,
                options: &$crate::LoadOptions,
            ) -> $crate::Result<$name> {
                let args = Self::args(config)?;
                args.sanitize(ck)?;
                ck.cast(options.dtype, |_| false)?;
                let (model, lm_head) = args.load(ck, options.kernels, |ck, path, sparse| {
                    Self::channel(ck, path, sparse, &args)
                })?;
                Ok($name { model, lm_head })
            }
        }

        $crate::models::base::stack_language_model!($name, model, $model_type);
    };
}
pub(crate) use moe_decoder;
