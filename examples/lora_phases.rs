//! MLX's peak memory per phase of a LoRA training step, the Rust half of
//! `bench/lora/phases.py` (which runs the same phases in mlx_lm), for finding where our
//! training step holds more memory than mlx_lm's:
//!
//! ```text
//! cargo run --release --example lora_phases -- MODEL DATA CHECKPOINT MODE
//! ```
//!
//! LoRA (rank 8, scale 20) on the last 4 layers, Adam at 1e-4, batches of 4 from
//! `DATA/train.jsonl` in mlx_lm's order for seed 0, four steps. `CHECKPOINT` is 0 or 1
//! (checkpointed layers). `MODE`: `compiled` (our [`TrainStep`]), `eager` (the loss alone,
//! then `value_and_grad`, then the optimizer's update, each evaluated), `cparts` (the
//! compiled loss, then a compiled `value_and_grad` without update), `fwd` (the model's
//! logits, the loss, the cross entropy of the logits), `dot` (writes the graphs of the
//! compiled loss and `value_and_grad` of the first batch, as MLX replays them after fusing,
//! to `rs-compiled-{loss,vg}-CHECKPOINT.dot`). Each line: the phase, the bytes held by live
//! arrays after it and the peak during it (MB; the peak is reset after each line).

use std::path::Path;

use mlx::core::memory as mem;
use mlx::core::{Array, Result as MlxResult};
use mlx::lm::blocks::with_layer_checkpoint;
use mlx::lm::tuner::{
    default_loss, iterate_batches, linear_to_lora_layers, load_local_dataset, DatasetOptions,
    LoraConfig, LoraParameters, RandomState, TrainStep,
};
use mlx::lm::{load, LoadOptions, Model};
use mlx::nn::Module;
use mlx::optimizers::Optimizer;
use serde_json::json;

type Error = Box<dyn std::error::Error>;
type Tokens = (Array, Array);

/// Prints the phase's active and peak memory and resets the peak.
fn mark(name: &str) -> Result<(), Error> {
    mlx::core::synchronize()?;
    println!(
        "{name:28} active {:8.3}  peak {:8.3}",
        mem::get_active_memory()? as f64 / 1e6,
        mem::get_peak_memory()? as f64 / 1e6
    );
    mem::reset_peak_memory()?;
    Ok(())
}

fn loss(m: &Model, b: &Tokens) -> MlxResult<(Array, Array)> {
    default_loss(m, &b.0, &b.1)
}

/// The gradients of the trainable parameters, in flatten order.
fn trainable_grads(model: &Model, grads: &Model) -> MlxResult<Vec<Array>> {
    let mask = model.trainable_mask()?;
    Ok(mlx::utils::tree_leaves(grads)
        .into_iter()
        .zip(mask)
        .filter(|(_, t)| *t)
        .map(|(g, _)| g.clone())
        .collect())
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        return Err("usage: lora_phases MODEL DATA CHECKPOINT(0|1) MODE".into());
    }
    let (model_dir, ckpt, mode) = (&args[1], args[3] == "1", args[4].as_str());
    let flags = json!({
        "model": model_dir, "data": args[2], "train": true, "num_layers": 4, "batch_size": 4,
        "learning_rate": 1e-4, "optimizer": "adam", "grad_checkpoint": ckpt,
        "lora_parameters": {"rank": 8, "scale": 20.0, "dropout": 0.0}, "seed": 0,
    });
    let flags = flags.as_object().cloned().ok_or("flags")?;
    let config = LoraConfig::resolve(flags, None)?;
    let (mut model, tokenizer, _) = load(Path::new(model_dir), LoadOptions::default())?;
    let splits = load_local_dataset(&config.data, &DatasetOptions::from(&config))?;
    let train = splits.train.ok_or("no train.jsonl")?.tokenize(&tokenizer)?;
    mlx::core::random::seed(0)?;
    model.freeze(None)?;
    let params = LoraParameters::from(&config.lora_parameters);
    linear_to_lora_layers(&mut model, 4, &params, false)?;
    let optimizer = config.build_optimizer()?;
    let batches = iterate_batches(&train, 4, 2048, true, RandomState::new(0))?;
    mark("start")?;
    let mut step = TrainStep::with_options(model, optimizer, 1, ckpt)?;
    mark("init")?;
    for (it, batch) in (0..4).zip(batches) {
        let b: Tokens = (batch.tokens_array()?, batch.lengths_array()?);
        mlx::core::eval(&b)?;
        mark(&format!("[{it}] batch"))?;
        match mode {
            "compiled" => {
                let (l, _) = step.step(&batch)?;
                mark(&format!("[{it}] compiled step"))?;
                println!("loss {l:.6}");
            }
            "eager" => {
                let (model, opt) = &mut step.state;
                let (l, t) = loss(model, &b)?;
                mlx::core::eval((&l, &t))?;
                mark(&format!("[{it}] forward only"))?;
                let vg = mlx::nn::value_and_grad(loss);
                let ((l, t), g) = with_layer_checkpoint(ckpt, || vg(model, &b))?;
                mlx::core::eval((&l, &t, &g))?;
                mark(&format!("[{it}] value_and_grad"))?;
                opt.update(model, &g)?;
                drop(g);
                mlx::core::eval((&*model, &*opt))?;
                mark(&format!("[{it}] update"))?;
                println!("loss {:.6}", l.item::<f32>()?);
            }
            "cparts" | "dot" => {
                let fwd = mlx::utils::compile_mut(|m: &mut Model, b: &Tokens| loss(m, b), None);
                let vg = mlx::utils::compile_mut(
                    |m: &mut Model, b: &Tokens| {
                        let ((l, t), g) = mlx::nn::value_and_grad(loss)(m, b)?;
                        Ok((l, t, trainable_grads(m, &g)?))
                    },
                    None,
                );
                let model = &mut step.state.0;
                mlx::core::eval(&*model)?;
                let out = fwd.call(model, &b)?;
                if mode == "dot" {
                    let vg_out = with_layer_checkpoint(ckpt, || vg.call(model, &b))?;
                    let mut outs = vec![vg_out.0, vg_out.1];
                    outs.extend(vg_out.2);
                    let c = u8::from(ckpt);
                    let dot = mlx::core::graph::export_to_dot(&[out.0, out.1], None)?;
                    std::fs::write(format!("rs-compiled-loss-{c}.dot"), dot)?;
                    let dot = mlx::core::graph::export_to_dot(&outs, None)?;
                    std::fs::write(format!("rs-compiled-vg-{c}.dot"), dot)?;
                    return Ok(());
                }
                mlx::core::eval(&out)?;
                mark(&format!("[{it}] compiled forward"))?;
                let out = with_layer_checkpoint(ckpt, || vg.call(model, &b))?;
                mlx::core::eval(&out)?;
                drop(out);
                mark(&format!("[{it}] compiled value_and_grad"))?;
            }
            "fwd" => {
                let model = &step.state.0;
                let inputs = b.0.index((.., ..-1))?;
                let logits = model.forward(&inputs, None)?;
                mlx::core::eval(&logits)?;
                mark(&format!("[{it}] logits"))?;
                let (l, t) = loss(model, &b)?;
                mlx::core::eval((&l, &t))?;
                mark(&format!("[{it}] loss"))?;
                let targets = b.0.index((.., 1..))?;
                let ce = mlx::nn::losses::cross_entropy(&logits, &targets, Default::default())?;
                mlx::core::eval(&ce)?;
                mark(&format!("[{it}] ce of logits"))?;
            }
            other => return Err(format!("unknown mode {other}").into()),
        }
    }
    Ok(())
}
