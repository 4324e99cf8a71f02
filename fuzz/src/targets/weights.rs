//! Weights into a tree: a `.safetensors` file loaded into a small model (embedding, a list of
//! blocks, norms, linear layers) with `Module::load_weights`, which is `mlx_tree::load_weights`
//! plus the file name in errors; strictly and leniently. A load that fails must leave the
//! model as it was; one that succeeds is followed by a forward pass.

use std::collections::HashMap;

use mlx_nn::{
    Embedding, Forward, LayerNorm, LayerNormOptions, Linear, LoadWeightsOptions, Module, RMSNorm,
};
use mlx_rs::Array;
use mlx_tree::{tree_leaves, TreeNode, Value};

use super::{err, saved, touch, Ctx, Outcome, Seeds};

#[derive(Clone, TreeNode)]
struct Block {
    norm: LayerNorm,
    proj: Linear,
}

/// The model weights are loaded into.
#[derive(Clone, TreeNode)]
pub struct Model {
    embed: Embedding,
    layers: Vec<Block>,
    norm: RMSNorm,
    head: Linear,
}

impl Model {
    fn new() -> mlx_rs::Result<Model> {
        let block = || -> mlx_rs::Result<Block> {
            Ok(Block {
                norm: LayerNorm::new(8, LayerNormOptions::default())?,
                proj: Linear::new(8, 8, true)?,
            })
        };
        Ok(Model {
            embed: Embedding::new(16, 8)?,
            layers: vec![block()?, block()?],
            norm: RMSNorm::new(8, None)?,
            head: Linear::new(8, 5, false)?,
        })
    }
}

impl Forward for Model {
    fn forward(&self, tokens: &Array) -> mlx_rs::Result<Array> {
        let mut x = self.embed.forward(tokens)?;
        for block in &self.layers {
            x = &x + &block.proj.forward(&block.norm.forward(&x)?)?;
        }
        self.head.forward(&self.norm.forward(&x)?)
    }
}

fn model(ctx: &mut Ctx) -> Result<Model, String> {
    if ctx.model.is_none() {
        ctx.model = Some(Model::new().map_err(err)?);
    }
    Ok(ctx.model.clone().expect("set just above"))
}

/// Whether `after` still holds exactly the parameters of `before`.
fn unchanged(before: &Model, after: &Model) -> Result<bool, String> {
    for (a, b) in tree_leaves(before).into_iter().zip(tree_leaves(after)) {
        if a.shape() != b.shape() || a.dtype() != b.dtype() {
            return Ok(false);
        }
        if !super::same_bits(a, b)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn load(
    base: &Model,
    path: &std::path::Path,
    options: LoadWeightsOptions,
) -> Result<Model, String> {
    let mut m = base.clone();
    match m.load_weights(path, options) {
        Ok(()) => Ok(m),
        Err(e) => {
            assert!(
                unchanged(base, &m)?,
                "a failed load_weights changed the model ({e})"
            );
            Err(err(e))
        }
    }
}

pub fn run(ctx: &mut Ctx, data: &[u8]) -> Outcome {
    let base = model(ctx)?;
    let file = ctx.write("safetensors", data)?;
    let strict = load(&base, &file.0, LoadWeightsOptions::default());
    let lenient_options = LoadWeightsOptions {
        allow_missing: true,
        allow_unexpected: true,
    };
    let lenient = load(&base, &file.0, lenient_options);
    if let (Ok(_), Err(e)) = (&strict, &lenient) {
        panic!("a strict load succeeded where a lenient one failed: {e}");
    }
    let tokens = Array::from_slice(&[0i32, 3, 15, 7], &[1, 4]).map_err(err)?;
    for m in [&strict, &lenient].into_iter().flatten() {
        for leaf in tree_leaves(m) {
            touch(leaf)?;
        }
        touch(&m.forward(&tokens).map_err(err)?)?;
    }
    lenient.map(drop)
}

pub fn seeds(ctx: &mut Ctx) -> Result<Seeds, String> {
    // A fixed key, so the weights come out the same every time.
    mlx_rs::random::seed(0).map_err(err)?;
    ctx.model = None;
    let m = model(ctx)?;
    let meta = HashMap::from([("format".to_string(), "mlx".to_string())]);
    // Only `head.weight`: complete for a lenient load, missing keys for a strict one.
    let head_only = Value::dict([(
        "head",
        Value::dict([("weight", Value::Array(m.head.weight.clone()))]),
    )]);
    Ok(vec![
        saved(ctx, "rust-model", "safetensors", |p| m.save_weights(p))?,
        saved(ctx, "rust-model-metadata", "safetensors", |p| {
            mlx_tree::save_weights(p, &m, Some(&meta))
        })?,
        saved(ctx, "rust-part", "safetensors", |p| {
            mlx_tree::save_weights(p, &head_only, None)
        })?,
    ])
}
