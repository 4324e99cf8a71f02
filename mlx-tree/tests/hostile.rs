//! Hostile input, 100,000 times: random path lists (duplicates, deep paths, huge and odd
//! indices, odd keys) and random nested `Value`s through `Value::from_flat`, `tree_unflatten`,
//! `tree_map_n` and `TreeDef` serde, plus corrupted serialized `TreeDef`s. Every call must
//! return `Ok` or `Err`: no panic, no stack overflow, no runaway allocation.

use mlx_tree::{tree_flatten, tree_map_n, tree_structure, tree_unflatten, Array, TreeDef, Value};

/// SplitMix64: a small deterministic generator (the failing iteration is reproducible).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const SEGMENTS: &[&str] = &[
    "a",
    "b",
    "w",
    "",
    "0",
    "1",
    "2",
    "01",
    "-1",
    " 1",
    "+0",
    "1_0",
    "4000000000",
    "99999999999999999999999",
    "65537",
    "300",
    "é",
    "a b",
    "__",
    "k",
];

fn random_path(rng: &mut Rng) -> String {
    let depth = match rng.below(100) {
        0 if rng.below(10) == 0 => 2_000 + rng.below(2_000) as usize, // deep
        _ => rng.below(5) as usize,
    };
    let mut segments = Vec::with_capacity(depth);
    for _ in 0..depth {
        segments.push(rng.pick(SEGMENTS));
    }
    segments.join(".")
}

fn random_value(rng: &mut Rng, leaf: &Array, depth: usize) -> Value {
    let deep = depth > 0 && rng.below(4_000) == 0;
    if deep {
        // A narrow tower, thousands of levels.
        let mut v = Value::Array(leaf.clone());
        for i in 0..(1_000 + rng.below(3_000)) {
            v = if i % 2 == 0 {
                Value::list([v])
            } else {
                Value::dict([("d", v)])
            };
        }
        return v;
    }
    if depth > 4 {
        return Value::Array(leaf.clone());
    }
    match rng.below(6) {
        0 => Value::Array(leaf.clone()),
        1 => Value::None,
        2 => Value::List(
            (0..rng.below(4))
                .map(|_| random_value(rng, leaf, depth + 1))
                .collect(),
        ),
        3 => Value::Tuple(
            (0..rng.below(4))
                .map(|_| random_value(rng, leaf, depth + 1))
                .collect(),
        ),
        _ => Value::dict((0..rng.below(4)).map(|_| {
            let key = rng.pick(SEGMENTS).to_string();
            (key, random_value(rng, leaf, depth + 1))
        })),
    }
}

/// Corrupts a serialized structure: drops, duplicates or rewrites one node.
fn corrupt(rng: &mut Rng, json: &str) -> String {
    let mut nodes: Vec<serde_json::Value> = serde_json::from_str(json).unwrap();
    if nodes.is_empty() {
        return "[{\"kind\":\"list\",\"children\":4294967295}]".into();
    }
    let i = rng.below(nodes.len() as u64) as usize;
    match rng.below(6) {
        0 => {
            nodes.remove(i);
        }
        1 => {
            let n = nodes[i].clone();
            nodes.insert(i, n);
        }
        2 => {
            nodes[i]["kind"] = rng
                .pick(&["leaf", "dict", "static", "some", "struct"])
                .into()
        }
        3 => nodes[i]["children"] = (rng.below(4) as u32).into(),
        4 => nodes[i]["key"] = rng.pick(SEGMENTS).into(),
        _ => {
            if let Some(obj) = nodes[i].as_object_mut() {
                obj.remove("key");
            }
        }
    }
    serde_json::to_string(&nodes).unwrap()
}

/// Takes a `Value` apart without recursion (the standard drop glue recurses per level).
fn drop_flat(v: Value) {
    let mut stack = vec![v];
    while let Some(mut v) = stack.pop() {
        match &mut v {
            Value::List(items) | Value::Tuple(items) => stack.append(items),
            Value::Dict(m) => stack.extend(m.drain(..).map(|(_, x)| x)),
            _ => {}
        }
    }
}

#[test]
fn hostile_trees_and_paths_never_abort() {
    let leaf = Array::from_scalar(1.0f32);
    let mut rng = Rng(0x5eed);
    let (mut ok, mut errors) = (0u32, 0u32);
    for iteration in 0..100_000u32 {
        // 1. A random path list through from_flat.
        let n = 1 + rng.below(6) as usize;
        let mut pairs: Vec<(String, Array)> = (0..n)
            .map(|_| (random_path(&mut rng), leaf.clone()))
            .collect();
        if rng.below(4) == 0 {
            let dup = pairs[0].clone();
            pairs.push(dup);
        }
        let built = match Value::from_flat(pairs) {
            Ok(v) => {
                ok += 1;
                v
            }
            Err(_) => {
                errors += 1;
                random_value(&mut rng, &leaf, 0)
            }
        };
        // 2. Flatten, unflatten, map against another random tree, serde.
        let (leaves, def) = tree_flatten(&built).expect("a Value always flattens");
        let leaves: Vec<Array> = leaves.into_iter().cloned().collect();
        let back: Value = tree_unflatten(&def, leaves).unwrap_or_else(|e| {
            panic!("iteration {iteration}: a Value unflattens from its own structure: {e}")
        });
        let other = random_value(&mut rng, &leaf, 0);
        let _ = tree_map_n(|x, _| Ok(x.clone()), &back, &[&other]);
        let _ = tree_map_n(|x, _| Ok(x.clone()), &back, &[&built]).unwrap_or_else(|e| {
            panic!("iteration {iteration}: a tree maps with its own copy: {e}")
        });
        let json = serde_json::to_string(&def).unwrap();
        let read: TreeDef = serde_json::from_str(&json).unwrap();
        assert!(read == def, "iteration {iteration}: serde round trip");
        // 3. A corrupted structure parses or fails cleanly; if it parses, it unflattens or
        //    fails cleanly.
        if let Ok(bad) = serde_json::from_str::<TreeDef>(&corrupt(&mut rng, &json)) {
            let leaves = vec![leaf.clone(); bad.num_leaves().min(64)];
            let _ = tree_unflatten::<Value>(&bad, leaves);
            let _ = bad.to_string();
        }
        let _ = tree_structure(&other).map(|d| d.to_string());
        drop_flat(back);
        drop_flat(built);
        drop_flat(other);
    }
    // Both outcomes occurred: the generator reaches the error paths and the normal ones.
    assert!(ok > 10_000 && errors > 10_000, "ok {ok}, errors {errors}");
}
