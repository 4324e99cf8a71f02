//! Caches of processed prompts kept across requests (Python: `mlx_lm.models.cache.
//! LRUPromptCache`, as `mlx_lm.server` uses it): a new prompt starts from the cache of the
//! longest prefix it shares with one seen before, and only its remaining tokens are
//! prefilled.
//!
//! mlx_lm's policy, entry for entry: an entry whose tokens are a prefix of the prompt is
//! used as it is; an entry that shares a longer prefix with the prompt but goes on
//! differently is used trimmed back to the shared prefix, where its cache can be trimmed
//! (key/value caches: the offset moves back); recurrent state cannot be trimmed, so such a
//! model only ever reuses an entry that is a whole prefix — the snapshots the engine keeps
//! at the end of each prompt. Inserting a trimmable entry drops the entries that are its
//! prefixes (it serves them all). Past `max_size` entries or `max_bytes`, the least
//! recently used goes.
//!
//! The [`Engine`](crate::Engine) keeps entries where mlx_lm's server does: at the end of each
//! prompt and at the end of each generation (prompt and reply), so a conversation's next
//! turn reuses everything up to its last reply. mlx_lm's server also keeps the ends of a
//! chat prompt's message segments, which a token-level engine does not see.

use mlx_tree::tree_leaves;

use crate::cache::{Cache, LayerCache};
use crate::error::{Error, Result};

/// How much of a prompt a cache covers, and the cache.
#[derive(Debug, Clone)]
pub struct CachedPrefix {
    /// The cache of the prompt's first `tokens` tokens (batch 1).
    pub cache: Cache,
    pub tokens: usize,
}

#[derive(Debug)]
struct Entry {
    tokens: Vec<u32>,
    cache: Cache,
    nbytes: usize,
    trimmable: bool,
    last_used: u64,
}

/// A least-recently-used set of prompt caches, looked up by longest shared prefix.
#[derive(Debug)]
pub struct LruPromptCache {
    entries: Vec<Entry>,
    max_size: usize,
    max_bytes: usize,
    clock: u64,
}

impl LruPromptCache {
    /// At most `max_size` entries (mlx_lm's `--prompt-cache-size`, default 10) and
    /// `max_bytes` bytes of arrays (`--prompt-cache-bytes`, default no limit).
    pub fn new(max_size: usize, max_bytes: usize) -> LruPromptCache {
        LruPromptCache {
            entries: Vec::new(),
            max_size,
            max_bytes,
            clock: 0,
        }
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes of the arrays held.
    pub fn nbytes(&self) -> usize {
        self.entries.iter().map(|e| e.nbytes).sum()
    }

    /// The cache of the longest prefix of `prompt`, at most `limit` tokens, that an entry
    /// can give (Python: `fetch_nearest_cache`; the engine asks for at most all but the
    /// prompt's last token, which its first decode step feeds). A copy: the entry stays.
    pub fn fetch(&mut self, prompt: &[u32], limit: usize) -> Result<Option<CachedPrefix>> {
        // (reused tokens, needs a trim, entry): the most tokens win, untrimmed on a tie.
        let mut best: Option<(usize, bool, usize)> = None;
        for (i, e) in self.entries.iter().enumerate() {
            let common = common_prefix(&e.tokens, prompt);
            let whole = common == e.tokens.len() && common <= limit;
            let candidate = if whole {
                Some((common, false))
            } else if e.trimmable {
                Some((common.min(limit), true))
            } else {
                None
            };
            if let Some((n, trim)) = candidate.filter(|(n, _)| *n > 0) {
                let better = match best {
                    None => true,
                    Some((m, m_trim, _)) => n > m || (n == m && m_trim && !trim),
                };
                if better {
                    best = Some((n, trim, i));
                }
            }
        }
        let Some((tokens, trim, i)) = best else {
            return Ok(None);
        };
        self.clock += 1;
        let e = &mut self.entries[i];
        e.last_used = self.clock;
        let mut cache = e.cache.clone();
        if trim {
            trim_to(&mut cache, tokens)?;
        }
        Ok(Some(CachedPrefix { cache, tokens }))
    }

    /// Keeps the cache of `tokens` (Python: `insert_cache`), then evicts the least recently
    /// used entries past the limits.
    pub fn insert(&mut self, tokens: &[u32], cache: Cache) {
        if tokens.is_empty() || self.max_size == 0 {
            return;
        }
        let trimmable = cache.iter().all(can_trim);
        self.entries.retain(|e| e.tokens != tokens);
        if trimmable {
            self.entries.retain(|e| !tokens.starts_with(&e.tokens));
        }
        self.clock += 1;
        let nbytes = tree_leaves(&cache).iter().map(|a| a.nbytes()).sum();
        self.entries.push(Entry {
            tokens: tokens.to_vec(),
            cache,
            nbytes,
            trimmable,
            last_used: self.clock,
        });
        while self.entries.len() > self.max_size
            || (self.nbytes() > self.max_bytes && !self.entries.is_empty())
        {
            let oldest = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(i, _)| i);
            match oldest {
                Some(i) => {
                    self.entries.remove(i);
                }
                None => break,
            }
        }
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Whether a layer's cache can be cut back to fewer positions (Python:
/// `can_trim_prompt_cache`): key/value caches can; recurrent state cannot.
pub(crate) fn can_trim(layer: &LayerCache) -> bool {
    match layer {
        LayerCache::Kv(_) | LayerCache::Quantized(_) => true,
        LayerCache::Rotating(_) | LayerCache::Arrays(_) => false,
        LayerCache::List(caches) => caches.iter().all(can_trim),
    }
}

/// Cuts a trimmable cache back to its first `tokens` positions (Python:
/// `trim_prompt_cache`): the offset moves back; the buffers past it are masked out and
/// overwritten by the next writes.
pub(crate) fn trim_to(cache: &mut Cache, tokens: usize) -> Result<()> {
    let offset = i32::try_from(tokens)
        .map_err(|_| Error::InvalidArgument(format!("{tokens} positions do not fit a cache")))?;
    for layer in cache.iter_mut() {
        if !can_trim(layer) {
            return Err(Error::InvalidArgument(format!(
                "a {} cannot be trimmed",
                layer.class_name()
            )));
        }
        layer.try_for_each_mut(&mut |c| {
            match c {
                LayerCache::Kv(kv) => kv.offset = mlx_rs::Array::from_scalar(offset),
                LayerCache::Quantized(q) => q.offset = mlx_rs::Array::from_scalar(offset),
                _ => {}
            }
            Ok::<(), Error>(())
        })?;
    }
    Ok(())
}
