//! `eval` / `async_eval` over trees: every leaf of every tree passed is computed.

use mlx_tree::{async_eval, eval, Array, TreeNode};

#[derive(TreeNode)]
struct Cache {
    keys: Vec<Array>,
    offset: Array,
    #[tree(static)]
    step: usize,
}

fn lazy(v: f32) -> Array {
    Array::from(v) * 2.0
}

fn cache() -> Cache {
    Cache {
        keys: vec![lazy(1.0), lazy(2.0)],
        offset: Array::from(1i32) + 1,
        step: 3,
    }
}

#[test]
fn eval_computes_every_leaf_of_every_tree() {
    let (y, c) = (lazy(3.0), cache());
    assert!(!y.is_evaluated() && !c.keys[1].is_evaluated());
    eval((&y, &c)).unwrap();
    assert!(y.is_evaluated());
    assert!(c.keys.iter().all(Array::is_evaluated) && c.offset.is_evaluated());
    assert_eq!(c.keys[1].item::<f32>().unwrap(), 4.0);
}

#[test]
fn eval_takes_one_tree_an_owned_tuple_or_a_list_of_trees() {
    let c = cache();
    eval(&c).unwrap();
    assert!(c.keys[0].is_evaluated());
    let pair = (lazy(1.0), vec![lazy(2.0)]);
    eval(&pair).unwrap();
    assert!(pair.1[0].is_evaluated());
    let (a, b) = (lazy(5.0), lazy(6.0));
    eval([&a, &b]).unwrap();
    assert!(a.is_evaluated() && b.is_evaluated());
    let v = vec![lazy(7.0)];
    eval(vec![&v]).unwrap();
    assert!(v[0].is_evaluated());
}

#[test]
fn async_eval_then_read_waits() {
    let c = cache();
    async_eval((&c, &c.offset)).unwrap();
    assert_eq!(c.offset.item::<i32>().unwrap(), 2);
    assert_eq!(c.keys[0].item::<f32>().unwrap(), 2.0);
}

#[test]
fn eval_of_an_empty_tree_is_fine() {
    // As `mx.eval()` with nothing to compute.
    eval(&()).unwrap();
    eval(Vec::<&Array>::new()).unwrap();
}
