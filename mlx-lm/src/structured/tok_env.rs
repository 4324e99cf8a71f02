//! The vocabulary as llguidance sees it: every token's bytes in a trie (`toktrie`), built
//! from our `tokenizers::Tokenizer` with llguidance's own reading of a `tokenizer.json`
//! (byte-level BPE and SentencePiece byte-fallback vocabularies).

use std::sync::Arc;

use toktrie::{TokEnv, TokRxInfo, TokTrie, TokenId, TokenizerEnv};

use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;

struct Env {
    trie: TokTrie,
    tokenizer: tokenizers::Tokenizer,
}

impl TokenizerEnv for Env {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    // llguidance tokenizes text only to find forced tokens; a failure there means no
    // tokens, which it handles, rather than a panic in the middle of a step.
    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        self.trie.tokenize_with_greedy_fallback(s, |s| {
            self.tokenizer
                .encode(s, false)
                .map(|e| e.get_ids().to_vec())
                .unwrap_or_default()
        })
    }
}

/// The token environment of `tokenizer` for a model of `vocab_size` logits (which may
/// exceed the tokenizer's vocabulary: the extra rows of a padded embedding are tokens no
/// grammar allows). The end of a grammar is the tokenizer's end-of-sequence tokens.
pub(crate) fn tok_env(tokenizer: &Tokenizer, vocab_size: usize) -> Result<TokEnv> {
    let invalid = Error::InvalidArgument;
    let json = serde_json::to_value(tokenizer.inner())
        .map_err(|e| invalid(format!("the tokenizer does not serialize: {e}")))?;
    // llguidance asserts on a byte-fallback vocabulary it cannot read; that is an error
    // here, not a panic.
    let bytes = std::panic::catch_unwind(|| llguidance::token_bytes_from_tokenizer_json(&json))
        .map_err(|_| invalid("llguidance could not read the tokenizer's vocabulary".into()))?
        .map_err(|e| {
            invalid(format!(
                "structured output: the tokenizer's vocabulary: {e}"
            ))
        })?;
    let mut bytes = bytes;
    if bytes.len() > vocab_size {
        return Err(invalid(format!(
            "the tokenizer has {} tokens but the model only {vocab_size} logits",
            bytes.len()
        )));
    }
    while bytes.len() < vocab_size {
        // A token no text spells: SPECIAL_TOKEN_MARKER, then a name no grammar names.
        let mut name = format!(".<[{}]>", bytes.len()).into_bytes();
        name[0] = TokTrie::SPECIAL_TOKEN_MARKER;
        bytes.push(name);
    }
    let eos = tokenizer.eos_token_ids();
    let Some(&first) = eos.first() else {
        return Err(invalid(
            "structured output needs the tokenizer's end-of-sequence token, and it has none".into(),
        ));
    };
    let info = TokRxInfo::new(vocab_size as u32, first);
    let mut trie = TokTrie::from(&info, &bytes);
    if eos.len() > 1 {
        trie = trie.with_eos_tokens(&eos);
    }
    Ok(Arc::new(Env {
        trie,
        tokenizer: tokenizer.inner().clone(),
    }))
}
