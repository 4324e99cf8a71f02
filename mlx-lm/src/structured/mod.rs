//! Structured output: generation constrained to a JSON schema, a Lark grammar or a regular
//! expression, by llguidance (mlx_lm has none; its issue #1007 is open).
//!
//! A [`ConstraintFactory`] compiles grammars for one tokenizer. The [`Constraint`] it
//! returns goes into [`GenerateOptions::constraint`](crate::GenerateOptions::constraint) or
//! [`RequestOptions::constraint`](crate::RequestOptions::constraint): before each decode
//! step the tokens the grammar allows next become an additive mask of the logits (`0`
//! allowed, `-inf` elsewhere), an input of the compiled step, so the step is traced once
//! however the masks change; after the step the sampled token is committed to the
//! grammar; once the grammar is complete and allows nothing more, the generation stops
//! ([`FinishReason::Stop`](crate::FinishReason::Stop)). While it is complete but may go on
//! (a number's next digit), the end-of-sequence tokens are allowed too.
//!
//! ```no_run
//! use mlx_lm::structured::ConstraintFactory;
//! use mlx_lm::{generate, load, GenerateOptions, LanguageModel, LoadOptions};
//!
//! let (model, tokenizer, _) = load("path/to/model", LoadOptions::default())?;
//! let factory = ConstraintFactory::new(&tokenizer, model.vocab_size() as usize)?;
//! let schema = serde_json::json!({
//!     "type": "object",
//!     "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
//!     "required": ["city", "days"],
//!     "additionalProperties": false,
//! });
//! let options = GenerateOptions {
//!     constraint: Some(factory.json_schema(&schema, true)?),
//!     stop_tokens: tokenizer.eos_token_ids(),
//!     ..Default::default()
//! };
//! let prompt = tokenizer.encode("A trip as JSON: ", false)?;
//! let text = generate(&model, &tokenizer, &prompt, &options)?;
//! let trip: serde_json::Value = serde_json::from_str(&text).unwrap();
//! # Ok::<(), mlx_lm::Error>(())
//! ```

mod constraint;
mod response_format;
mod tok_env;

pub use constraint::{Constraint, ConstraintFactory};
pub use response_format::ResponseFormat;
