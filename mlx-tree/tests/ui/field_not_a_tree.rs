use mlx_tree::{Array, TreeNode};

#[derive(TreeNode)]
struct Layer {
    weight: Array,
    name: String,
}

fn main() {}
