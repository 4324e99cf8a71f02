use mlx_tree::{Array, TreeNode};

#[derive(TreeNode)]
#[tree(transparent)]
struct TwoFields(Array, Array);

#[derive(TreeNode)]
#[tree(transparent)]
enum Generic<S> {
    Leaf(Array),
    Other(S),
}

#[derive(TreeNode)]
#[tree(transparent)]
enum TwoOthers {
    #[tree(other)]
    A(Array),
    #[tree(other)]
    B(Array),
}

#[derive(TreeNode)]
#[tree(transparent)]
enum SameNode {
    A(Array),
    B(Box<Array>),
}

#[derive(TreeNode)]
enum NotTransparent {
    #[tree(other)]
    A(Array),
}

fn main() {}
