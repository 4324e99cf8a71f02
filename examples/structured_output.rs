//! Structured output: a JSON schema enforced by constrained decoding (llguidance), through
//! `generate` and the continuous-batching `Engine`, and what the mask costs per token.
//!
//! ```text
//! cargo run --release --example structured_output -- [--model DIR] [--mask-vocab DIR]
//! ```
//! `--model` defaults to the random-weight test model `tests/data/lm-models/qwen3` (its text
//! is gibberish, but valid JSON of the schema); `--mask-vocab` names a tokenizer directory
//! whose vocabulary the mask's cost is measured on as well (a 128k-token vocabulary costs
//! more than the test model's 384).

use std::time::Instant;

use clap::Parser;
use mlx::lm::structured::ConstraintFactory;
use mlx::lm::{
    generate, load, Engine, EngineOptions, GenerateOptions, RequestOptions, SamplerOptions,
    Tokenizer,
};
use serde_json::json;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "tests/data/lm-models/qwen3")]
    model: String,
    #[arg(long)]
    mask_vocab: Option<String>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let (model, tokenizer, _) = load(&args.model, Default::default())?;
    let factory = ConstraintFactory::new(&tokenizer, model.vocab_size() as usize)?;
    let schema = json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 12},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "pets": {"type": "boolean"},
        },
        "required": ["city", "days", "pets"],
        "additionalProperties": false,
        "x-guidance": {"whitespace_flexible": false},
    });
    let constraint = factory.json_schema(&schema, true)?;
    let prompt = tokenizer.encode("A trip as JSON: ", false)?;

    // Plain generate: the constraint rides in the options.
    let options = GenerateOptions {
        max_tokens: 100,
        constraint: Some(constraint.clone()),
        stop_tokens: tokenizer.eos_token_ids(),
        ..Default::default()
    };
    let text = generate(&model, &tokenizer, &prompt, &options)?;
    let value: serde_json::Value = serde_json::from_str(&text)?;
    println!("generate: {value}");

    // The engine: a constrained and a free request in one batch, one compiled step.
    let mut engine = Engine::new(
        &model,
        EngineOptions {
            max_batch: 2,
            capacity: 256,
            prefill_step_size: 64,
            ..Default::default()
        },
    )?;
    let constrained = engine.insert(
        &prompt,
        RequestOptions {
            max_tokens: 100,
            sampler: SamplerOptions {
                temperature: 0.8,
                ..Default::default()
            },
            seed: Some(1),
            stop_tokens: tokenizer.eos_token_ids(),
            constraint: Some(constraint.clone()),
            ..Default::default()
        },
    )?;
    engine.insert(
        &prompt,
        RequestOptions {
            max_tokens: 20,
            ..Default::default()
        },
    )?;
    let mut tokens = Vec::new();
    while !engine.is_idle() {
        for e in engine.step()? {
            if e.id == constrained {
                tokens.push(e.token);
            }
        }
    }
    println!(
        "engine:   {} (traces: {})",
        tokenizer.decode(&tokens, false)?,
        engine.traces()
    );

    // The cost: decode steps without a grammar (after the first, which traces), and the
    // mask alone (computing it and committing the token), on this model's vocabulary and
    // optionally a large one.
    let free = GenerateOptions {
        max_tokens: 65,
        ..Default::default()
    };
    let mut steps = mlx::lm::generate_step(&model, &prompt, &free)?;
    steps.next().transpose()?;
    let started = Instant::now();
    let n = steps.count();
    let step = started.elapsed().as_secs_f64() / n as f64;
    println!(
        "decode step of this model: {:.1} µs/token (unconstrained)",
        step * 1e6
    );
    let (compile, mask) = mask_cost(&factory, &tokenizer, &schema)?;
    println!(
        "vocabulary of {}: grammar compiled in {:.2} ms; mask {:.1} µs/token = {:.3}x a decode step",
        model.vocab_size(),
        compile * 1e3,
        mask * 1e6,
        mask / step
    );
    if let Some(dir) = &args.mask_vocab {
        let big = Tokenizer::load(dir)?;
        let started = Instant::now();
        let factory = ConstraintFactory::new(&big, big.vocab_size())?;
        let setup = started.elapsed().as_secs_f64();
        let (compile, mask) = mask_cost(&factory, &big, &schema)?;
        println!(
            "vocabulary of {}: factory {:.0} ms; grammar compiled in {:.2} ms; mask {:.1} µs/token",
            big.vocab_size(),
            setup * 1e3,
            compile * 1e3,
            mask * 1e6
        );
    }
    Ok(())
}

/// Seconds to compile the schema, and seconds per token to compute the mask and commit
/// the token while walking the tokens of a valid document of the schema.
fn mask_cost(
    factory: &ConstraintFactory,
    tokenizer: &Tokenizer,
    schema: &serde_json::Value,
) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let document = r#"{"city":"Lisbon","days":12,"pets":false}"#;
    let ids = tokenizer.encode(document, false)?;
    let started = Instant::now();
    let compiled = factory.json_schema(schema, true)?;
    let compile = started.elapsed().as_secs_f64();
    let mut row = vec![0.0f32; factory.vocab_size()];
    let rounds = 50;
    let mut total = 0.0;
    for _ in 0..rounds {
        let mut c = compiled.clone();
        let started = Instant::now();
        for &t in &ids {
            c.write_mask(&mut row)?;
            assert_eq!(row[t as usize], 0.0, "the grammar refuses token {t}");
            c.commit(t)?;
        }
        total += started.elapsed().as_secs_f64();
    }
    Ok((compile, total / (rounds * ids.len()) as f64))
}
