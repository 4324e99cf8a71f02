//! Cache types from a crate that depends on mlx-rs only and has never heard of mlx-tree.
//!
//! This is the orphan-rule case the runtime registry exists for: neither this crate nor a user
//! of it can `impl mlx_tree::TreeNode for KvCache`, so tests register these types with
//! `mlx_tree::register` and use them through `Registered<T>` and `Value`.

use mlx_rs::Array;

/// A per-layer key/value cache, shaped like `mlx_lm.models.cache.KVCache` lists of layers.
#[derive(Debug, Clone)]
pub struct KvCache {
    keys: Vec<Array>,
    values: Vec<Array>,
    offset: usize,
}

impl KvCache {
    /// A cache from its parts; `keys` and `values` hold one array per layer.
    pub fn from_parts(keys: Vec<Array>, values: Vec<Array>, offset: usize) -> KvCache {
        KvCache {
            keys,
            values,
            offset,
        }
    }

    pub fn keys(&self) -> &[Array] {
        &self.keys
    }

    pub fn values(&self) -> &[Array] {
        &self.values
    }

    /// How many positions the cache holds.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Appends one step: replaces each layer's arrays and advances the offset.
    pub fn update(&mut self, keys: Vec<Array>, values: Vec<Array>) {
        self.keys = keys;
        self.values = values;
        self.offset += 1;
    }
}

/// A state-space-model layer state (conv window + recurrent state), mutated in place each step.
#[derive(Debug, Clone)]
pub struct SsmState {
    pub conv: Array,
    pub ssm: Array,
}
