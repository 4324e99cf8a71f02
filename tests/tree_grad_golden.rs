//! mlx-tree's `value_and_grad` and weights IO against Python MLX 0.32.2
//! (`scripts/golden/tree_grad.py` -> `tests/data/tree_grad.json` and
//! `tests/data/tree_grad_mlp.safetensors`): an MLP struct loads the safetensors file Python
//! wrote from `tree_flatten(model.parameters())`, and its loss and gradients equal what
//! `nn.value_and_grad(model, loss_fn)` gives, under the same paths.

mod support;

use mlx::core::{ops, Array, Result};
use mlx::utils::{
    load_weights, tree_flatten_with_path, tree_map, value_and_grad, LoadWeightsOptions, TreeNode,
};
use serde_json::Value as Json;
use support::golden::{array, assert_close, load};

#[derive(TreeNode)]
struct Linear {
    weight: Array,
    bias: Option<Array>,
}

#[derive(TreeNode)]
struct Mlp {
    layers: Vec<Linear>,
}

impl Linear {
    fn zeros(d_in: i32, d_out: i32, bias: bool) -> Linear {
        Linear {
            weight: ops::zeros(&[d_out, d_in], None).unwrap(),
            bias: bias.then(|| ops::zeros(&[d_out], None).unwrap()),
        }
    }

    fn forward(&self, x: &Array) -> Result<Array> {
        let y = ops::matmul(x, &ops::transpose(&self.weight, None)?)?;
        Ok(match &self.bias {
            Some(b) => y + b,
            None => y,
        })
    }
}

impl Mlp {
    /// The Python model's shapes, all zeros: the weights come from the file.
    fn empty() -> Mlp {
        Mlp {
            layers: vec![
                Linear::zeros(4, 8, true),
                Linear::zeros(8, 8, false),
                Linear::zeros(8, 3, true),
            ],
        }
    }

    fn forward(&self, x: &Array) -> Result<Array> {
        let mut x = x.clone();
        for (i, layer) in self.layers.iter().enumerate() {
            x = layer.forward(&x)?;
            if i + 1 < self.layers.len() {
                x = ops::maximum(&x, 0.0f32)?;
            }
        }
        Ok(x)
    }
}

fn mse_loss(model: &Mlp, (x, y): &(Array, Array)) -> Result<Array> {
    let d = model.forward(x)? - y;
    (&d * &d).mean(None, false)
}

fn pairs(case: &Json) -> Vec<(String, &Json)> {
    case.as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().to_string(), &p[1]))
        .collect()
}

fn data_file(name: &str) -> String {
    support::golden::data_file(name).display().to_string()
}

#[test]
fn safetensors_written_by_python_loads_into_the_rust_struct() {
    let golden = load("tree_grad");
    let mut model = Mlp::empty();
    load_weights(
        &mut model,
        data_file("tree_grad_mlp.safetensors"),
        LoadWeightsOptions::default(),
    )
    .unwrap();
    let ours = tree_flatten_with_path(&model).unwrap();
    let theirs = pairs(&golden["params"]);
    assert_eq!(
        ours.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        theirs.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>()
    );
    for ((path, leaf), (_, record)) in ours.iter().zip(&theirs) {
        support::golden::assert_exact(leaf, record, path);
    }
}

#[test]
fn value_and_grad_of_an_mlp_struct_equals_python_nn_value_and_grad() {
    let golden = load("tree_grad");
    let mut model = Mlp::empty();
    load_weights(
        &mut model,
        data_file("tree_grad_mlp.safetensors"),
        LoadWeightsOptions::default(),
    )
    .unwrap();
    let batch = (array(&golden["x"]), array(&golden["y"]));
    let (loss, grads) = value_and_grad(mse_loss)(&model, &batch).unwrap();
    assert_close(&loss, &golden["loss"], "loss");

    // Gradients: type Mlp, paths == Python's tree_flatten(grads) keys, values equal.
    let ours = tree_flatten_with_path(&grads).unwrap();
    let theirs = pairs(&golden["grads"]);
    assert_eq!(
        ours.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        theirs.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>()
    );
    for ((path, g), (_, record)) in ours.iter().zip(&theirs) {
        assert_close(g, record, path);
    }
    // Gradient paths are the parameter paths (Python: tree_flatten(model.parameters())).
    let param_paths: Vec<String> = pairs(&golden["params"])
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        ours.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(),
        param_paths
    );
    // An SGD step on the gradient type works as a tree.
    let stepped = tree_map(|g| Ok(g * 0.0f32), &grads).unwrap();
    assert!(stepped.layers[1].bias.is_none());
}
