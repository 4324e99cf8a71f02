use mlx_tree::{Array, TreeNode};

struct Config {
    heads: usize,
}

#[derive(TreeNode)]
struct Layer {
    weight: Array,
    #[tree(static)]
    config: Config,
}

fn main() {}
