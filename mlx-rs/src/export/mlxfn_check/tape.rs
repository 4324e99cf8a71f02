//! One function of the file: its inputs, its tape of constants and primitives, and how array
//! ids resolve, as MLX's `array_map` does.

use std::collections::{HashMap, HashSet};

use crate::Result;

use super::prims::{self, Flow, Prim, State, ValueUse};
use super::walker::Walker;
use super::{Devices, Dt, Meta};

/// Where a constant's data lies in the file.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConstLoc {
    pub(super) offset: u64,
    pub(super) count: u64,
    pub(super) dtype: Dt,
}

/// What an array id of a function resolves to, mirroring MLX's `array_map`.
#[derive(Clone, Debug)]
pub(super) enum Src {
    Input,
    Const(ConstLoc),
    /// Output of a primitive: the primitive and its first input, so that value checks can
    /// follow value-preserving ops back to a constant.
    Op {
        prim: &'static Prim,
        input: Option<u64>,
    },
}

#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) meta: Meta,
    pub(super) src: Src,
}

/// A primitive of the tape, kept for the value checks, which run once the whole file is read.
pub(super) struct Op {
    pub(super) entry: u64,
    pub(super) prim: &'static Prim,
    pub(super) state: State,
    pub(super) inputs: Vec<u64>,
    pub(super) outputs: Vec<u64>,
    pub(super) uses: Vec<ValueUse>,
}

/// One function being read: MLX's `array_map`, the ids of its inputs and its primitives.
pub(super) struct Function {
    pub(super) nodes: HashMap<u64, Node>,
    pub(super) inputs: HashSet<u64>,
    pub(super) ops: Vec<Op>,
}

impl Function {
    /// Whether array `id` is a function argument, moved or reshaped.
    pub(super) fn is_argument(&self, mut id: u64) -> bool {
        for _ in 0..64 {
            match self.nodes.get(&id).map(|n| &n.src) {
                Some(Src::Input) => return true,
                Some(Src::Op {
                    prim,
                    input: Some(input),
                }) if prim.flow == Flow::Moves => id = *input,
                _ => return false,
            }
        }
        false
    }

    /// Follows value-preserving single-input ops from `id` back to a constant; the casts met
    /// on the way are returned in the order they apply.
    pub(super) fn constant_source(&self, mut id: u64) -> Option<(ConstLoc, Vec<Dt>)> {
        let mut casts = Vec::new();
        for _ in 0..64 {
            let node = self.nodes.get(&id)?;
            match &node.src {
                Src::Const(loc) => {
                    casts.reverse();
                    return Some((*loc, casts));
                }
                Src::Input => return None,
                Src::Op { prim, input } => {
                    let input = (*input)?;
                    match prim.flow {
                        Flow::Moves => {}
                        Flow::Casts => {
                            let from = self.nodes.get(&input)?.meta.dtype;
                            if !(from.is_int() || from == Dt::Bool) || !node.meta.dtype.is_int() {
                                return None;
                            }
                            casts.push(node.meta.dtype);
                        }
                        Flow::Computes => return None,
                    }
                    id = input;
                }
            }
        }
        None
    }
}

pub(super) fn read_function(
    w: &mut Walker,
    f: i32,
    devices: Devices,
    constants: &mut HashMap<u64, (Meta, ConstLoc)>,
) -> Result<Function> {
    let fname = format!("function {}", f + 1);
    let at = w.pos;
    let n = w.count(8, &format!("{fname}'s keyword names"))?;
    let mut kwarg_keys = Vec::with_capacity(n);
    for _ in 0..n {
        kwarg_keys.push(w.string(&format!("{fname}'s keyword names"))?);
    }
    // MLX binds keyword arguments to the inputs in sorted key order, the order it writes them.
    if kwarg_keys.windows(2).any(|k| k[0] >= k[1]) {
        return Err(w.fail_at(
            at,
            format!("{fname}'s keyword names are not sorted and unique"),
        ));
    }

    let at = w.pos;
    let input_ids = w.vec_u64(&format!("{fname}'s input ids"))?;
    let n = w.count(13, &format!("{fname}'s inputs"))?;
    // MLX pairs `input_ids[i]` with `inputs[i]` for every input, without comparing the counts.
    if n != input_ids.len() {
        return Err(w.fail_at(
            at,
            format!("{fname} has {} input ids for {n} inputs", input_ids.len()),
        ));
    }
    if kwarg_keys.len() > n {
        return Err(w.fail_at(
            at,
            format!(
                "{fname} has {} keyword names for {n} inputs",
                kwarg_keys.len()
            ),
        ));
    }
    let mut func = Function {
        nodes: HashMap::new(),
        inputs: HashSet::new(),
        ops: Vec::new(),
    };
    for &id in &input_ids {
        let meta = w.meta(&format!("{fname}'s input"))?;
        if func
            .nodes
            .insert(
                id,
                Node {
                    meta,
                    src: Src::Input,
                },
            )
            .is_some()
        {
            return Err(w.fail_at(at, format!("{fname} lists input id {id} twice")));
        }
        func.inputs.insert(id);
    }
    let outputs_at = w.pos;
    let output_ids = w.vec_u64(&format!("{fname}'s output ids"))?;

    // Smallest tape entry: an id and two flags.
    let tape_len = w.count(10, &format!("{fname}'s tape"))?;
    for _ in 0..tape_len {
        read_tape_entry(w, &fname, devices, &mut func, constants)?;
    }

    for id in &output_ids {
        if !func.nodes.contains_key(id) {
            return Err(w.fail_at(
                outputs_at,
                format!("{fname}'s output id {id} is not defined by its inputs or tape"),
            ));
        }
    }
    Ok(func)
}

fn read_tape_entry(
    w: &mut Walker,
    fname: &str,
    devices: Devices,
    func: &mut Function,
    constants: &mut HashMap<u64, (Meta, ConstLoc)>,
) -> Result<()> {
    let entry = w.pos;
    let id = w.u64(&format!("{fname}'s tape entry id"))?;
    if !w.bool("the primitive flag")? {
        if w.bool("the constant flag")? {
            let (meta, loc) = match constants.get(&id) {
                // MLX reuses a constant an earlier function of the file defined.
                Some(known) => known.clone(),
                None => {
                    let meta = w.meta(&format!("constant {id}"))?;
                    let count = meta.size() as u64;
                    let bytes = count * u64::from(meta.dtype.size());
                    let offset = w.pos;
                    w.skip(bytes, &format!("the data of constant {id}"))?;
                    let loc = ConstLoc {
                        offset,
                        count,
                        dtype: meta.dtype,
                    };
                    constants.insert(id, (meta.clone(), loc));
                    (meta, loc)
                }
            };
            if func.nodes.contains_key(&id) {
                return Err(w.fail_at(entry, format!("{fname} defines array id {id} twice")));
            }
            func.nodes.insert(
                id,
                Node {
                    meta,
                    src: Src::Const(loc),
                },
            );
        } else if !func.inputs.contains(&id) {
            // MLX looks the id up with `at` and would take any array defined so far.
            return Err(w.fail_at(
                entry,
                format!("{fname}'s tape refers to input id {id}, which is not one of its inputs"),
            ));
        }
        return Ok(());
    }

    let input_ids = w.vec_u64("a primitive's input ids")?;
    let mut ins = Vec::with_capacity(input_ids.len());
    for iid in &input_ids {
        let node = func.nodes.get(iid).ok_or_else(|| {
            w.fail_at(
                entry,
                format!("a primitive's input id {iid} is not defined earlier in {fname}"),
            )
        })?;
        ins.push(node.meta.clone());
    }

    let stream_at = w.pos;
    w.i32("a stream index")?;
    let device_type = w.i32("a stream's device type")?;
    let device_index = w.i32("a stream's device index")?;
    let gpu = match (device_type, device_index) {
        (0, 0) => false,
        (1, i) if i >= 0 && i < devices.gpus => true,
        (1, i) if devices.gpus == 0 => {
            return Err(w.fail_at(
                stream_at,
                format!("a primitive runs on gpu {i}, but this MLX build has no GPU backend"),
            ))
        }
        (t, i) => {
            return Err(w.fail_at(
                stream_at,
                format!("a primitive's stream names device type {t}, index {i}"),
            ))
        }
    };

    let name_at = w.pos;
    let raw_name = w.string("a primitive name")?;
    let prim = prims::lookup(&raw_name).ok_or_else(|| {
        w.fail_at(
            name_at,
            format!("unknown primitive {:?}", String::from_utf8_lossy(&raw_name)),
        )
    })?;
    let name = prim.name;
    let state = w.state(name, prim.layout)?;

    let sib_at = w.pos;
    let num_siblings = w.u64("a primitive's sibling count")?;
    let (out_ids, outs) = if num_siblings == 0 {
        (vec![id], vec![w.meta(&format!("{name}'s output"))?])
    } else {
        let ids = w.vec_u64(&format!("{name}'s output ids"))?;
        let n = w.count(8, &format!("{name}'s output shapes"))?;
        let mut shapes = Vec::with_capacity(n);
        for _ in 0..n {
            shapes.push(w.shape(&format!("{name}'s output shape"))?);
        }
        let n = w.count(5, &format!("{name}'s output dtypes"))?;
        let mut dtypes = Vec::with_capacity(n);
        for _ in 0..n {
            dtypes.push(w.dtype(&format!("{name}'s output dtype"))?);
        }
        // MLX makes one array per shape, taking `dtypes[i]` and `ids[i]` without checking
        // that those lists are as long; the sibling count it ignores beyond zero.
        if dtypes.len() != shapes.len()
            || ids.len() != shapes.len()
            || shapes.len() as u64 != num_siblings.saturating_add(1)
        {
            return Err(w.fail_at(
                sib_at,
                format!(
                    "{name} has {num_siblings} siblings, {} output ids, {} shapes and {} dtypes",
                    ids.len(),
                    shapes.len(),
                    dtypes.len()
                ),
            ));
        }
        if ids.iter().filter(|&&s| s == id).count() != 1 {
            return Err(w.fail_at(
                sib_at,
                format!("{name}'s output ids do not list its tape id {id} once"),
            ));
        }
        let outs = shapes
            .into_iter()
            .zip(dtypes)
            .map(|(shape, dtype)| Meta { shape, dtype })
            .collect();
        (ids, outs)
    };

    let in_refs: Vec<&Meta> = ins.iter().collect();
    let uses = prims::check(prim, &state, &in_refs, &outs, gpu)
        .map_err(|what| w.fail_at(entry, format!("{name} (array id {id}): {what}")))?;

    for (oid, meta) in out_ids.iter().zip(outs) {
        let node = Node {
            meta,
            src: Src::Op {
                prim,
                input: input_ids.first().copied(),
            },
        };
        if func.nodes.insert(*oid, node).is_some() {
            return Err(w.fail_at(entry, format!("{fname} defines array id {oid} twice")));
        }
    }
    func.ops.push(Op {
        entry,
        prim,
        state,
        inputs: input_ids,
        outputs: out_ids,
        uses,
    });
    Ok(())
}
