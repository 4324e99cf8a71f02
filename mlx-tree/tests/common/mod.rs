//! Shared helpers for the mlx-tree tests.
#![allow(dead_code)]

use std::sync::Once;

use foreign_cache::{KvCache, SsmState};
use mlx_tree::{register, Array, TreeNode};

/// A scalar leaf holding `v`: leaves are told apart by value.
pub fn leaf(v: f32) -> Array {
    Array::from_scalar(v)
}

/// The leaf values of a tree, in flatten order.
pub fn values<T: TreeNode>(tree: &T) -> Vec<f32> {
    mlx_tree::tree_leaves(tree)
        .into_iter()
        .map(|a| a.item::<f32>().unwrap())
        .collect()
}

pub fn paths<T: TreeNode>(tree: &T) -> Vec<String> {
    mlx_tree::tree_flatten_with_path(tree)
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

/// The error message of a result that must be an error.
pub fn err<T>(r: mlx_tree::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

/// Registers the foreign-cache types once per test binary, as an application would at startup.
pub fn register_foreign() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        register::<KvCache>(
            "foreign_cache.KvCache",
            |c, f| {
                f.field_list("keys", c.keys());
                f.field_list("values", c.values());
                f.static_field("offset", &c.offset());
            },
            |u| {
                Ok(KvCache::from_parts(
                    u.field("keys")?,
                    u.field("values")?,
                    u.static_field("offset")?,
                ))
            },
        )
        .unwrap();
        register::<SsmState>(
            "foreign_cache.SsmState",
            |s, f| {
                f.field("conv", &s.conv);
                f.field("ssm", &s.ssm);
            },
            |u| {
                Ok(SsmState {
                    conv: u.field("conv")?,
                    ssm: u.field("ssm")?,
                })
            },
        )
        .unwrap();
    });
}
