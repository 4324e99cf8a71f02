//! A grammar compiled for one vocabulary, and the state of one generation under it.

use std::sync::Arc;

use llguidance::api::{GrammarWithLexer, TopLevelGrammar};
use llguidance::{Matcher, ParserFactory};
use serde_json::Value;

use super::response_format::ResponseFormat;
use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;

/// Compiles grammars for one tokenizer and model (llguidance's `ParserFactory` over the
/// vocabulary's token trie). Building it reads the whole vocabulary, so build it once per
/// model and share it (it is `Clone`, `Send` and `Sync`).
#[derive(Clone)]
pub struct ConstraintFactory {
    factory: Arc<ParserFactory>,
    vocab_size: usize,
    eos: Arc<[u32]>,
}

impl std::fmt::Debug for ConstraintFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConstraintFactory")
            .field("vocab_size", &self.vocab_size)
            .finish()
    }
}

impl ConstraintFactory {
    /// A factory for `tokenizer` and a model of `vocab_size` logits
    /// ([`LanguageModel::vocab_size`](crate::LanguageModel::vocab_size)).
    pub fn new(tokenizer: &Tokenizer, vocab_size: usize) -> Result<ConstraintFactory> {
        let env = super::tok_env::tok_env(tokenizer, vocab_size)?;
        let mut factory = ParserFactory::new_simple(&env).map_err(|e| {
            Error::InvalidArgument(format!("structured output: the vocabulary: {e}"))
        })?;
        // Errors come back as values; nothing is printed.
        factory.quiet();
        let eos = env.tok_trie().eos_tokens().into();
        Ok(ConstraintFactory {
            factory: Arc::new(factory),
            vocab_size,
            eos,
        })
    }

    /// The logits a mask covers.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// Output that is one JSON value valid against `schema` (JSON Schema as llguidance
    /// supports it: types, `properties`, `required`, `additionalProperties`, `items`,
    /// `enum`, `const`, `anyOf`/`oneOf`/`allOf`, `$ref`/`$defs`, string lengths,
    /// `pattern`, `format`, numeric bounds). A keyword it does not support is an error,
    /// unless `strict` is off (then it is ignored, and the output may not obey it).
    /// llguidance's options may ride along in the schema's `"x-guidance"` object.
    pub fn json_schema(&self, schema: &Value, strict: bool) -> Result<Constraint> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err(Error::InvalidArgument(format!(
                "a JSON schema is an object or a boolean, got {schema}"
            )));
        }
        let mut schema = schema.clone();
        if !strict {
            if let Some(object) = schema.as_object_mut() {
                let options = object
                    .entry("x-guidance")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(options) = options.as_object_mut() {
                    options.entry("lenient").or_insert(Value::Bool(true));
                }
            }
        }
        self.compile(
            "JSON schema",
            TopLevelGrammar::from_grammar(GrammarWithLexer::from_json_schema(schema)),
        )
    }

    /// Output that is one JSON object (OpenAI's `{"type": "json_object"}`).
    pub fn json_object(&self) -> Result<Constraint> {
        self.json_schema(&serde_json::json!({"type": "object"}), true)
    }

    /// Output in the language of a Lark grammar (llguidance's dialect: `start: ...`,
    /// `/regex/` terminals, `%json {...}` for an embedded schema).
    pub fn lark(&self, grammar: &str) -> Result<Constraint> {
        self.compile(
            "Lark grammar",
            TopLevelGrammar::from_lark(grammar.to_string()),
        )
    }

    /// Output that matches a regular expression (Rust `regex` syntax), as a whole.
    pub fn regex(&self, regex: &str) -> Result<Constraint> {
        self.compile("regex", TopLevelGrammar::from_regex(regex))
    }

    /// The constraint of an OpenAI `response_format`; `None` for `{"type": "text"}`.
    pub fn response_format(&self, format: &ResponseFormat) -> Result<Option<Constraint>> {
        match format {
            ResponseFormat::Text => Ok(None),
            ResponseFormat::JsonObject => self.json_object().map(Some),
            ResponseFormat::JsonSchema { schema, strict, .. } => {
                self.json_schema(schema, *strict).map(Some)
            }
        }
    }

    fn compile(&self, what: &str, grammar: TopLevelGrammar) -> Result<Constraint> {
        let parser = self
            .factory
            .create_parser(grammar)
            .map_err(|e| Error::InvalidArgument(format!("invalid {what}: {e}")))?;
        let matcher = Matcher::new(Ok(parser));
        Ok(Constraint {
            matcher,
            vocab_size: self.vocab_size,
            tokens: 0,
            grammar: Arc::new(()),
            eos: self.eos.clone(),
        })
    }
}

/// One generation's place in a grammar: which tokens may come next, and the tokens so far.
///
/// A `Constraint` in [`GenerateOptions`](crate::GenerateOptions) or
/// [`RequestOptions`](crate::RequestOptions) is a template: each generation starts from a
/// clone of it (a clone shares the compiled grammar and copies the parse state).
pub struct Constraint {
    matcher: Matcher,
    vocab_size: usize,
    tokens: usize,
    /// The identity of the compiled grammar, shared by clones.
    grammar: Arc<()>,
    eos: Arc<[u32]>,
}

impl Clone for Constraint {
    fn clone(&self) -> Self {
        Constraint {
            matcher: self.matcher.clone(),
            vocab_size: self.vocab_size,
            tokens: self.tokens,
            grammar: self.grammar.clone(),
            eos: self.eos.clone(),
        }
    }
}

impl std::fmt::Debug for Constraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Constraint")
            .field("vocab_size", &self.vocab_size)
            .field("tokens", &self.tokens)
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Equal when cloned from one compiled grammar with as many tokens committed (a grammar
/// has no cheap structural identity; options carrying the same one compare equal).
impl PartialEq for Constraint {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.grammar, &other.grammar) && self.tokens == other.tokens
    }
}

impl Constraint {
    /// The logits a mask covers.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// Tokens committed so far.
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// The tokens allowed next, as a bit per token (`true`: allowed). When the grammar is
    /// complete but may go on, the end-of-sequence tokens are among them.
    pub fn allowed_tokens(&mut self) -> Result<Vec<bool>> {
        let vob = self.matcher.compute_mask().map_err(|e| self.error(e))?;
        let mut allowed = vec![false; self.vocab_size];
        vob.iter_set_entries(|i| {
            if let Some(a) = allowed.get_mut(i) {
                *a = true;
            }
        });
        Ok(allowed)
    }

    /// Writes the additive logits mask of the tokens allowed next into `row`
    /// (`vocab_size` long): `0` where allowed, `-inf` elsewhere.
    pub fn write_mask(&mut self, row: &mut [f32]) -> Result<()> {
        if row.len() != self.vocab_size {
            return Err(Error::InvalidArgument(format!(
                "a mask row of {} for a vocabulary of {}",
                row.len(),
                self.vocab_size
            )));
        }
        let vob = self.matcher.compute_mask().map_err(|e| self.error(e))?;
        row.fill(f32::NEG_INFINITY);
        vob.iter_set_entries(|i| {
            if let Some(x) = row.get_mut(i) {
                *x = 0.0;
            }
        });
        Ok(())
    }

    /// Writes a mask that allows only the end-of-sequence tokens into `row`: how a
    /// generation ends whose grammar failed.
    pub fn write_end_mask(&self, row: &mut [f32]) {
        row.fill(f32::NEG_INFINITY);
        for &t in self.eos.iter() {
            if let Some(x) = row.get_mut(t as usize) {
                *x = 0.0;
            }
        }
    }

    /// The end-of-sequence tokens (the tokenizer's), allowed when the grammar is complete.
    pub fn eos_tokens(&self) -> &[u32] {
        &self.eos
    }

    /// Commits a generated token: an error if the grammar does not allow it.
    pub fn commit(&mut self, token: u32) -> Result<()> {
        self.matcher
            .consume_token(token)
            .map_err(|e| self.error(e))?;
        self.tokens += 1;
        Ok(())
    }

    /// Whether the grammar is complete and allows nothing more (the generation is over),
    /// or the constraint failed.
    pub fn is_finished(&self) -> bool {
        self.matcher.is_stopped()
    }

    /// Whether the output so far is a complete sentence of the grammar (it may go on).
    pub fn is_accepting(&mut self) -> bool {
        self.matcher.is_accepting().unwrap_or(false)
    }

    fn error(&self, e: impl std::fmt::Display) -> Error {
        Error::InvalidArgument(format!("structured output: {e}"))
    }
}
