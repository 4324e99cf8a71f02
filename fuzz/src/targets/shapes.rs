//! Shape and index arguments: the bytes decode into a short program of ops over a pool of
//! small arrays of several dtypes (an empty and a 0-d one among them), with shapes, axes,
//! starts, strides, offsets and index arrays drawn from boundary values (0, -1, `i32::MAX`,
//! `i32::MIN`, values just past an axis' end, ...). Every op must return `Ok` or `Err`; each
//! result small enough is evaluated and copied, so a view or gather reading outside its
//! buffer is caught at evaluation too.

use mlx_rs::ops::{self, AsStridedOptions, Index, Slice};
use std::sync::OnceLock;

use mlx_rs::{Array, Dtype};

use super::{err, touch, Ctx, Outcome, Seeds, EVAL_CAP_BYTES};

const BOUNDARY_I32: &[i32] = &[
    0,
    1,
    -1,
    2,
    -2,
    3,
    4,
    24,
    -24,
    25,
    i32::MAX,
    i32::MIN,
    i32::MAX - 1,
    i32::MIN + 1,
    1 << 16,
    -(1 << 16),
    46341,
    1 << 30,
    65535,
    255,
];

const DTYPES: &[Dtype] = &[
    Dtype::Int32,
    Dtype::Int64,
    Dtype::Uint32,
    Dtype::Uint8,
    Dtype::Int8,
    Dtype::Uint64,
    Dtype::Float32,
    Dtype::Bool,
    Dtype::Float16,
    Dtype::Complex64,
];

/// Ops per program at most.
const MAX_OPS: usize = 16;
/// Arrays ops draw their operands from.
const POOL: usize = 6;
/// Results larger than this do not join the pool: later ops stay cheap.
const POOL_CAP_BYTES: usize = 1 << 20;
/// Of an op's results (a split's parts), how many are read and may join the pool.
const KEPT_RESULTS: usize = 8;

/// Decodes values from the input; past its end every read is 0, so any input decodes.
struct Src<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Src<'_> {
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n
    }

    fn flag(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    fn int(&mut self) -> i32 {
        let tag = self.byte();
        match tag % 8 {
            0..=3 => i32::from(tag >> 3) - 4,
            4 | 5 => BOUNDARY_I32[self.below(BOUNDARY_I32.len())],
            6 => i32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()]),
            _ => -i32::from(self.byte()),
        }
    }

    fn int64(&mut self) -> i64 {
        match self.byte() % 8 {
            0 => i64::MAX,
            1 => i64::MIN,
            2 => i64::from(u32::MAX) + 1,
            3 => {
                let mut b = [0u8; 8];
                b.iter_mut().for_each(|x| *x = self.byte());
                i64::from_le_bytes(b)
            }
            _ => i64::from(self.int()),
        }
    }

    fn opt_int(&mut self) -> Option<i32> {
        self.flag().then(|| self.int())
    }

    fn ints(&mut self, max_len: usize) -> Vec<i32> {
        let n = self.below(max_len + 1);
        (0..n).map(|_| self.int()).collect()
    }

    fn dtype(&mut self) -> Dtype {
        DTYPES[self.below(DTYPES.len())]
    }

    /// A small array of boundary values in any dtype: index arrays, starts, masks.
    fn index_array(&mut self) -> Result<Array, String> {
        let shape: Vec<i32> = (0..self.below(3)).map(|_| self.below(4) as i32).collect();
        let n: i32 = shape.iter().product();
        let values: Vec<i64> = (0..n).map(|_| self.int64()).collect();
        let a = Array::from_slice(&values, &shape).map_err(err)?;
        a.astype(self.dtype()).map_err(err)
    }

    fn index(&mut self) -> Result<Vec<Index>, String> {
        let n = self.below(5);
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(match self.below(6) {
                0 | 1 => Index::Int(self.int64()),
                2 => Index::Slice(Slice::new(self.opt_int(), self.opt_int(), self.opt_int())),
                3 => Index::NewAxis,
                4 => Index::Ellipsis,
                _ => Index::Array(self.index_array()?),
            });
        }
        Ok(out)
    }
}

fn pool() -> mlx_rs::Result<Vec<Array>> {
    Ok(vec![
        ops::arange_to(24)?
            .astype(Dtype::Float32)?
            .reshape(&[2, 3, 4])?,
        ops::arange_to(10)?,
        Array::from_scalar(5i32),
        ops::zeros(&[0, 3], None)?,
        Array::from_slice(&[true, false, false, true], &[2, 2])?,
        ops::ones(&[4, 1], Dtype::Float16)?,
    ])
}

/// Whether to print each op before running it (`MLX_FUZZ_TRACE=1`): the last line a
/// crashed child printed, kept in the finding's note, names the op and its arguments.
fn tracing() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("MLX_FUZZ_TRACE").is_some())
}

/// A pool array as its dtype and shape.
struct Desc<'a>(&'a Array);

impl std::fmt::Debug for Desc<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{:?}", self.0.dtype().name(), self.0.shape())
    }
}

/// An index array with its values (index arrays are small and made from literals).
struct Values<'a>(&'a Array);

impl std::fmt::Debug for Values<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.astype(Dtype::Int64).and_then(|a| a.to_vec::<i64>()) {
            Ok(v) => write!(f, "{}{:?}={v:?}", self.0.dtype().name(), self.0.shape()),
            Err(_) => Desc(self.0).fmt(f),
        }
    }
}

/// An index as Python would write it, arrays with their values.
struct IndexDesc<'a>(&'a [Index]);

impl std::fmt::Debug for IndexDesc<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut l = f.debug_list();
        for e in self.0 {
            match e {
                Index::Array(a) => l.entry(&Values(a)),
                other => l.entry(other),
            };
        }
        l.finish()
    }
}

macro_rules! trace {
    ($($arg:tt)*) => {
        if tracing() {
            eprintln!($($arg)*);
        }
    };
}

/// Runs one op on arrays of the pool; the arrays it gives.
fn step(src: &mut Src, pool: &[Array]) -> Result<Vec<Array>, String> {
    let a = &pool[src.below(pool.len())];
    let b = &pool[src.below(pool.len())];
    let (da, db) = (Desc(a), Desc(b));
    let one = |r: mlx_rs::Result<Array>| r.map(|x| vec![x]).map_err(err);
    match src.below(28) {
        0 => {
            let shape = src.ints(6);
            trace!("reshape({da:?}, {shape:?})");
            one(ops::reshape(a, &shape))
        }
        1 => {
            let shape = src.ints(6);
            trace!("broadcast_to({da:?}, {shape:?})");
            one(ops::broadcast_to(a, &shape))
        }
        2 => {
            let index = src.index()?;
            trace!("index({da:?}, {:?})", IndexDesc(&index));
            one(a.index(index))
        }
        3 => {
            let index = src.index()?;
            if src.flag() {
                trace!("index_put({da:?}, {:?}, {db:?})", IndexDesc(&index));
                one(a.index_put(index, b))
            } else {
                trace!("index_put({da:?}, {:?}, 7.0)", IndexDesc(&index));
                one(a.index_put(index, 7.0f32))
            }
        }
        4 => {
            let index = src.index()?;
            let how = src.below(4);
            trace!(
                "at({da:?}, {:?}) update {how} with {db:?}",
                IndexDesc(&index)
            );
            let at = a.at(index);
            one(match how {
                0 => at.add(b),
                1 => at.multiply(2.0f32),
                2 => at.maximum(b),
                _ => at.minimum(1.0f32),
            })
        }
        5 => {
            let shape = src.ints(5);
            let n = if src.flag() {
                shape.len()
            } else {
                src.below(6)
            };
            let strides: Vec<i64> = (0..n).map(|_| src.int64()).collect();
            let offset = usize::try_from(src.int64()).unwrap_or(usize::MAX);
            let (with_shape, with_strides) = (src.flag(), src.flag());
            let mut options = AsStridedOptions::default().offset(offset);
            if with_shape {
                options = options.shape(&shape);
            }
            if with_strides {
                options = options.strides(&strides);
            }
            trace!("as_strided({da:?}, {options:?})");
            one(ops::as_strided(a, options))
        }
        6 => {
            let axis = src.opt_int();
            if src.flag() {
                let i = src.int();
                trace!("take({da:?}, {i}, {axis:?})");
                one(ops::take(a, i, axis))
            } else {
                let i = src.index_array()?;
                trace!("take({da:?}, {:?}, {axis:?})", Values(&i));
                one(ops::take(a, i, axis))
            }
        }
        7 => {
            let (i, axis) = (src.index_array()?, src.opt_int());
            trace!("take_along_axis({da:?}, {:?}, {axis:?})", Values(&i));
            one(ops::take_along_axis(a, &i, axis))
        }
        8 => {
            let (i, axis) = (src.index_array()?, src.opt_int());
            trace!("put_along_axis({da:?}, {:?}, {db:?}, {axis:?})", Values(&i));
            one(ops::put_along_axis(a, &i, b, axis))
        }
        9 => {
            let (i, axis) = (src.index_array()?, src.int());
            trace!("scatter_add_axis({da:?}, {:?}, {db:?}, {axis})", Values(&i));
            one(ops::scatter_add_axis(a, &i, b, axis))
        }
        10 => {
            let idx = (0..src.below(3))
                .map(|_| src.index_array())
                .collect::<Result<Vec<_>, _>>()?;
            let (axes, sizes) = (src.ints(3), src.ints(4));
            let shown: Vec<Values> = idx.iter().map(Values).collect();
            trace!("gather({da:?}, {shown:?}, {axes:?}, {sizes:?})");
            one(ops::gather(a, &idx, &axes, &sizes))
        }
        11 => {
            let idx = (0..src.below(3))
                .map(|_| src.index_array())
                .collect::<Result<Vec<_>, _>>()?;
            let (axes, how) = (src.ints(3), src.below(5));
            let shown: Vec<Values> = idx.iter().map(Values).collect();
            trace!("scatter#{how}({da:?}, {shown:?}, {db:?}, {axes:?})");
            one(match how {
                0 => ops::scatter(a, &idx, b, &axes),
                1 => ops::scatter_add(a, &idx, b, &axes),
                2 => ops::scatter_max(a, &idx, b, &axes),
                3 => ops::scatter_min(a, &idx, b, &axes),
                _ => ops::scatter_prod(a, &idx, b, &axes),
            })
        }
        12 => {
            let (start, axes, sizes) = (src.index_array()?, src.ints(3), src.ints(4));
            trace!("slice({da:?}, {:?}, {axes:?}, {sizes:?})", Values(&start));
            one(ops::slice(a, &start, &axes, &sizes))
        }
        13 => {
            let (start, axes) = (src.index_array()?, src.ints(3));
            trace!(
                "slice_update({da:?}, {db:?}, {:?}, {axes:?})",
                Values(&start)
            );
            one(ops::slice_update(a, b, &start, &axes))
        }
        14 => {
            let (start, stop) = (src.ints(4), src.ints(4));
            let strides = src.flag().then(|| src.ints(4));
            trace!("slice_strided({da:?}, {start:?}, {stop:?}, {strides:?})");
            one(ops::slice_strided(a, &start, &stop, strides.as_deref()))
        }
        15 => {
            let (shape, dtype, how) = (src.ints(6), src.dtype(), src.below(3));
            trace!("zeros/ones/full#{how}({shape:?}, {dtype:?}, {db:?})");
            one(match how {
                0 => ops::zeros(&shape, dtype),
                1 => ops::ones(&shape, dtype),
                _ => ops::full(&shape, b, None),
            })
        }
        16 => {
            let (axes, how) = (src.ints(4), src.below(4));
            trace!("transpose/expand_dims/squeeze/flip#{how}({da:?}, {axes:?})");
            one(match how {
                0 => ops::transpose(a, axes.as_slice()),
                1 => ops::expand_dims(a, axes.as_slice()),
                2 => ops::squeeze(a, axes.as_slice()),
                _ => ops::flip(a, axes.as_slice()),
            })
        }
        17 => {
            let (start, end) = (src.opt_int(), src.opt_int());
            trace!("flatten({da:?}, {start:?}, {end:?})");
            one(ops::flatten(a, start, end))
        }
        18 => {
            let (axis, shape) = (src.int(), src.ints(4));
            trace!("unflatten({da:?}, {axis}, {shape:?})");
            one(ops::unflatten(a, axis, &shape))
        }
        19 => {
            let (x, y) = (src.int(), src.int());
            trace!("swapaxes({da:?}, {x}, {y})");
            one(ops::swapaxes(a, x, y))
        }
        20 => {
            let (x, y) = (src.int(), src.int());
            trace!("moveaxis({da:?}, {x}, {y})");
            one(ops::moveaxis(a, x, y))
        }
        21 => {
            let axis = src.opt_int();
            if src.flag() {
                let n = src.int();
                trace!("split({da:?}, {n}, {axis:?})");
                ops::split(a, n, axis).map_err(err)
            } else {
                let at = src.ints(4);
                trace!("split({da:?}, {at:?}, {axis:?})");
                ops::split(a, at, axis).map_err(err)
            }
        }
        22 => {
            let reps = src.ints(4);
            trace!("tile({da:?}, {reps:?})");
            one(ops::tile(a, &reps))
        }
        23 => {
            let (n, axis) = (src.int(), src.opt_int());
            trace!("repeat({da:?}, {n}, {axis:?})");
            one(ops::repeat(a, n, axis))
        }
        24 => {
            let widths: Vec<(i32, i32)> =
                (0..src.below(4)).map(|_| (src.int(), src.int())).collect();
            trace!("pad({da:?}, {widths:?})");
            one(ops::pad(a, widths, None, 0.0f32))
        }
        25 => {
            let (axis, concat) = (src.opt_int(), src.flag());
            trace!("concatenate/stack#{concat}([{da:?}, {db:?}], {axis:?})");
            if concat {
                one(ops::concatenate([a, b], axis))
            } else {
                one(ops::stack([a, b], axis))
            }
        }
        26 => {
            let (start, stop, step) = (src.int(), src.int(), src.opt_int());
            trace!("arange({start}, {stop}, {step:?})");
            one(ops::arange(start, stop, step, None))
        }
        _ => {
            let (update, start, axes) = (src.index_array()?, src.index_array()?, src.ints(3));
            trace!(
                "slice_update({da:?}, {:?}, {:?}, {axes:?})",
                Values(&update),
                Values(&start)
            );
            one(ops::slice_update(a, &update, &start, &axes))
        }
    }
}

pub fn run(_ctx: &mut Ctx, data: &[u8]) -> Outcome {
    let mut pool = pool().map_err(err)?;
    let mut src = Src { data, pos: 0 };
    let mut first_err = None;
    for _ in 0..MAX_OPS {
        if src.done() {
            break;
        }
        match step(&mut src, &pool) {
            Ok(results) => {
                // All of a split's parts in one evaluation (one each would take a second
                // per thousand parts), then the first few read and kept.
                if results.len() > 1 {
                    mlx_rs::eval(results.iter().filter(|r| r.nbytes() <= EVAL_CAP_BYTES))
                        .map_err(err)?;
                }
                for r in results.into_iter().take(KEPT_RESULTS) {
                    touch(&r)?;
                    // Keep only arrays small enough to feed later ops cheaply.
                    if r.nbytes() <= POOL_CAP_BYTES {
                        let slot = src.below(POOL);
                        pool[slot] = r;
                    }
                }
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    first_err.map_or(Ok(()), Err)
}

pub fn seeds(_ctx: &mut Ctx) -> Result<Seeds, String> {
    // One program per op with plain arguments (small non-negative ints), then a long mixed
    // one: mutations turn the arguments into boundary values.
    let mut out = Vec::new();
    for op in 0u8..28 {
        let mut bytes = vec![0, 1, op];
        bytes.extend((0..24u8).map(|k| (k % 4 + 4) << 3));
        out.push((format!("op-{op:02}.bin"), bytes));
    }
    let mixed: Vec<u8> = (0..200u32)
        .map(|k| (k.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    out.push(("mixed.bin".into(), mixed));
    Ok(out)
}
