use mlx_tree::{Array, TreeNode};

#[derive(TreeNode)]
struct Both {
    #[tree(static, skip)]
    n: usize,
}

#[derive(TreeNode)]
struct Unknown {
    #[tree(leaf)]
    w: Array,
}

#[derive(TreeNode)]
struct SameKey {
    a: Array,
    #[tree(rename = "a")]
    b: Array,
}

fn main() {}
