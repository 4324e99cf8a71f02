//! The checks on values: integer arrays the file fixes (constants, and what the graph
//! computes from them) or bounds, where they reach a kernel as indices or divisors.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::rc::Rc;

use crate::{Error, Result};

use super::prims::{self, Range, ValueUse};
use super::tape::{ConstLoc, Function, Op, Src};
use super::walker::io_err;
use super::{Dt, Meta};

/// The value checks: integer arrays that reach a primitive as indices or divisors, when the
/// file fixes their values (constants, and what the graph computes from constants alone:
/// `prims::fold`) or their bounds (`prims::value_range`).
pub(super) struct Values<'a> {
    pub(super) path: &'a str,
    pub(super) file: File,
    /// Bounds of each integer constant read so far, by data offset (functions share them).
    pub(super) constants: HashMap<u64, Option<Range>>,
    /// Values of each small integer constant read so far, by data offset.
    pub(super) small_constants: HashMap<u64, Rc<[i128]>>,
}

impl Values<'_> {
    fn fail(&self, op: &Op, what: impl std::fmt::Display) -> Error {
        Error::invalid_data(
            format!("[import_function] {}", self.path),
            format!(
                "corrupt or truncated .mlxfn file: {} (tape entry at byte {}) {what}",
                op.prim.name, op.entry
            ),
        )
    }

    pub(super) fn check(&mut self, f: &Function) -> Result<()> {
        let mut ranges: HashMap<u64, Range> = HashMap::new();
        let mut exact: HashMap<u64, Rc<[i128]>> = HashMap::new();
        for op in &f.ops {
            for u in &op.uses {
                let id = op.inputs[u.input];
                if let Some((loc, casts)) = f.constant_source(id) {
                    self.check_elements(op, u, loc, &casts)?;
                } else if let Some(vals) = self.exact(f, &exact, id)? {
                    if (vals.len() as u64) < u.elements_read() {
                        return Err(self.fail(
                            op,
                            format!(
                                "reads {} slice starts from {} values",
                                u.elements_read(),
                                vals.len()
                            ),
                        ));
                    }
                    for (k, &v) in vals.iter().enumerate() {
                        u.check(k as u64, v).map_err(|what| {
                            self.fail(
                                op,
                                format!("takes values the file fixes, whose element {k} is {what}"),
                            )
                        })?;
                    }
                } else if let Some(r) = self.range(f, &ranges, &exact, id)? {
                    u.check_range(r).map_err(|what| {
                        self.fail(
                            op,
                            format!("takes values computed in the graph that can be {what}"),
                        )
                    })?;
                }
            }
            let meta = |id: &u64| &f.nodes[id].meta;
            let ins: Vec<&Meta> = op.inputs.iter().map(meta).collect();
            let outs: Vec<&Meta> = op.outputs.iter().map(meta).collect();
            let mut in_vals = Vec::with_capacity(op.inputs.len());
            for &id in &op.inputs {
                in_vals.push(self.exact(f, &exact, id)?);
            }
            let in_slices: Vec<Option<&[i128]>> = in_vals.iter().map(|v| v.as_deref()).collect();
            if let Some(vals) = prims::fold(op.prim, &op.state, &ins, &in_slices, &outs) {
                exact.insert(op.outputs[0], vals.into());
            }
            if !op.prim.propagates_range() {
                continue;
            }
            let mut in_ranges = Vec::with_capacity(op.inputs.len());
            for &id in &op.inputs {
                in_ranges.push(self.range(f, &ranges, &exact, id)?);
            }
            let args: Vec<bool> = op.inputs.iter().map(|&id| f.is_argument(id)).collect();
            let out_ranges = prims::value_range(op.prim, &op.state, &ins, &in_ranges, &args, &outs);
            for (&id, r) in op.outputs.iter().zip(out_ranges) {
                if let Some(r) = r {
                    ranges.insert(id, r);
                }
            }
        }
        Ok(())
    }

    /// The values of array `id` when the file fixes them: a small integer constant, or what
    /// the graph computes from such constants alone (`prims::fold`).
    fn exact(
        &mut self,
        f: &Function,
        exact: &HashMap<u64, Rc<[i128]>>,
        id: u64,
    ) -> Result<Option<Rc<[i128]>>> {
        let Some(node) = f.nodes.get(&id) else {
            return Ok(None);
        };
        let Src::Const(loc) = node.src else {
            return Ok(exact.get(&id).cloned());
        };
        if !(loc.dtype.is_int() || loc.dtype == Dt::Bool) || loc.count > prims::MAX_FOLD {
            return Ok(None);
        }
        if let Some(v) = self.small_constants.get(&loc.offset) {
            return Ok(Some(v.clone()));
        }
        let mut vals = Vec::with_capacity(loc.count as usize);
        self.each_element(loc, |_, v| {
            vals.push(v);
            Ok(())
        })?;
        let vals: Rc<[i128]> = vals.into();
        self.small_constants.insert(loc.offset, vals.clone());
        Ok(Some(vals))
    }

    /// The bounds of array `id`'s values, when they are known.
    fn range(
        &mut self,
        f: &Function,
        ranges: &HashMap<u64, Range>,
        exact: &HashMap<u64, Rc<[i128]>>,
        id: u64,
    ) -> Result<Option<Range>> {
        let Some(node) = f.nodes.get(&id) else {
            return Ok(None);
        };
        let Src::Const(loc) = node.src else {
            let bounds = exact.get(&id).and_then(|v| {
                Some(Range {
                    lo: *v.iter().min()?,
                    hi: *v.iter().max()?,
                    free: false,
                })
            });
            return Ok(ranges.get(&id).copied().or(bounds));
        };
        if !(loc.dtype.is_int() || loc.dtype == Dt::Bool) {
            return Ok(None);
        }
        if let Some(r) = self.constants.get(&loc.offset) {
            return Ok(*r);
        }
        let mut r: Option<Range> = None;
        self.each_element(loc, |_, v| {
            r = Some(match r {
                None => Range {
                    lo: v,
                    hi: v,
                    free: false,
                },
                Some(r) => Range {
                    lo: r.lo.min(v),
                    hi: r.hi.max(v),
                    free: false,
                },
            });
            Ok(())
        })?;
        self.constants.insert(loc.offset, r);
        Ok(r)
    }

    /// Checks every element of a constant that reaches `op` as input `u.input`.
    fn check_elements(&mut self, op: &Op, u: &ValueUse, loc: ConstLoc, casts: &[Dt]) -> Result<()> {
        if loc.count < u.elements_read() {
            return Err(self.fail(
                op,
                format!(
                    "reads {} slice starts from a constant of {} (constant data at byte {})",
                    u.elements_read(),
                    loc.count,
                    loc.offset
                ),
            ));
        }
        let mut bad = None;
        self.each_element(loc, |k, mut v| {
            for &to in casts {
                v = prims::wrap(v, to);
            }
            if bad.is_none() {
                if let Err(what) = u.check(k, v) {
                    bad = Some((k, what));
                }
            }
            Ok(())
        })?;
        match bad {
            Some((k, what)) => Err(self.fail(
                op,
                format!(
                    "takes a constant whose element {k} is {what} (constant data at byte {})",
                    loc.offset
                ),
            )),
            None => Ok(()),
        }
    }

    fn each_element(
        &mut self,
        loc: ConstLoc,
        mut f: impl FnMut(u64, i128) -> Result<()>,
    ) -> Result<()> {
        let path = self.path;
        self.file
            .seek(SeekFrom::Start(loc.offset))
            .map_err(|e| io_err(path, e))?;
        let mut r = BufReader::new(&mut self.file);
        let size = usize::from(loc.dtype.size());
        let mut buf = [0u8; 8];
        for k in 0..loc.count {
            r.read_exact(&mut buf[..size])
                .map_err(|e| io_err(path, e))?;
            f(k, prims::int_value(loc.dtype, &buf[..size]))?;
        }
        Ok(())
    }
}
