//! Python-style indexing: `a[1:3, ..., None]`, `a[idx]`, and updates `a[1:3] = v`.
//!
//! | Python                  | Rust                                                |
//! |-------------------------|-----------------------------------------------------|
//! | `a[0]`, `a[-1]`         | `a.index(0)?`, `a.index(-1)?`                       |
//! | `a[1:3]`, `a[1:]`, `a[:-1]`, `a[:]` | `a.index(1..3)?`, `a.index(1..)?`, `a.index(..-1)?`, `a.index(..)?` |
//! | `a[::2]`, `a[::-1]`, `a[4:0:-2]` | `a.index((..).step(2))?`, `a.index((..).step(-1))?`, `a.index(Slice::new(4, 0, -2))?` |
//! | `a[:, None]`            | `a.index((.., NewAxis))?`                           |
//! | `a[..., 0]`             | `a.index((Ellipsis, 0))?`                           |
//! | `a[idx]`, `a[idx, 1:]`  | `a.index(&idx)?`, `a.index((&idx, 1..))?`           |
//! | `a[1:3, ...] = v`       | `a = a.index_put((1..3, Ellipsis), &v)?` or `a.index_set((1..3, Ellipsis), &v)?` |
//! | `a[mask] = v`           | `a.index_put(&mask, &v)?` (a `bool` array index)    |
//! | `a.at[idx].add(v)`      | `a.at(&idx).add(&v)?` (also `subtract`, `multiply`, `divide`, `maximum`, `minimum`) |
//!
//! Rust arrays are immutable values shared by `Clone`, so `index_put` returns the updated
//! array (like JAX's `a.at[idx].set(v)`); `index_set(&mut self, ..)` replaces `self` with it,
//! which is what Python's `a[idx] = v` does to the name `a`. Other clones of the old array keep
//! the old values (unlike NumPy views).
//!
//! Errors: an integer index outside `-n..n` is an `Err`, as in Python; so are more indices than
//! dimensions, two ellipses, a zero step, and a boolean mask for reading. Slice bounds are
//! clamped like Python's. *Array* indices cannot be checked without evaluating them; an
//! out-of-range entry reads the nearest end and writes nothing (JAX's rules; Python MLX
//! reads and writes outside the array). See [`ops::bounds`](crate::ops::bounds).

use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

use crate::ops::args::operand_array;
use crate::ops::{self, IntoOperand};
use crate::{Array, Dtype, Error, Result};

/// A Python slice `start:stop:step`; `None` parts take Python's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slice {
    pub start: Option<i32>,
    pub stop: Option<i32>,
    pub step: Option<i32>,
}

impl Slice {
    /// `start:stop:step` (each `None` for Python's default).
    pub fn new(
        start: impl Into<Option<i32>>,
        stop: impl Into<Option<i32>>,
        step: impl Into<Option<i32>>,
    ) -> Slice {
        Slice {
            start: start.into(),
            stop: stop.into(),
            step: step.into(),
        }
    }

    /// `:` (every element).
    pub fn full() -> Slice {
        Slice::default()
    }

    fn step_value(&self) -> Result<i32> {
        match self.step.unwrap_or(1) {
            0 => Err(Error::invalid("[index] slice step cannot be zero")),
            s => Ok(s),
        }
    }

    /// Python's `slice.indices(n)`: start, stop (exclusive; `-1` means "before 0" when
    /// stepping backwards), step, and the number of elements selected.
    fn indices(&self, n: i32) -> Result<(i32, i32, i32, i32)> {
        let step = self.step_value()?;
        let norm = |v: i32| if v < 0 { v + n } else { v };
        let (start, stop) = if step > 0 {
            let start = self.start.map_or(0, |v| norm(v).clamp(0, n));
            let stop = self.stop.map_or(n, |v| norm(v).clamp(0, n));
            (start, stop)
        } else {
            let start = self.start.map_or(n - 1, |v| norm(v).clamp(-1, n - 1));
            let stop = self.stop.map_or(-1, |v| norm(v).clamp(-1, n - 1));
            (start, stop)
        };
        // In i64: a step near i32::MIN or i32::MAX overflows these sums in i32.
        let (first, end, by) = (i64::from(start), i64::from(stop), i64::from(step));
        let len = if by > 0 {
            ((end - first + by - 1) / by).max(0)
        } else {
            ((first - end - by - 1) / -by).max(0)
        };
        // A step longer than the axis selects `start` alone, as one of length `n` does; MLX's
        // own slice arithmetic overflows on steps near i32::MIN/MAX and selects nothing.
        let step = step.clamp(-n.max(1), n.max(1));
        // At most n: it fits.
        Ok((start, stop, step, len as i32))
    }

    /// Start/stop/stride in the form MLX's `slice` normalizes itself (Python's
    /// `get_slice_params`): a backwards `stop` of "before 0" becomes `-n - 1`.
    fn mlx_params(&self, n: i32) -> Result<(i32, i32, i32)> {
        let (start, stop, step, _) = self.indices(n)?;
        let stop = if stop < 0 { -n - 1 } else { stop };
        Ok((start, stop, step))
    }
}

/// Adds a step to a range: `(..).step(-1)` is Python's `::-1`, `(1..).step(2)` is `1::2`.
pub trait SliceStep {
    fn step(self, step: i32) -> Slice;
}

impl<T: Into<Slice>> SliceStep for T {
    fn step(self, step: i32) -> Slice {
        Slice {
            step: Some(step),
            ..self.into()
        }
    }
}

impl From<Range<i32>> for Slice {
    fn from(r: Range<i32>) -> Slice {
        Slice::new(r.start, r.end, None)
    }
}
impl From<RangeFrom<i32>> for Slice {
    fn from(r: RangeFrom<i32>) -> Slice {
        Slice::new(r.start, None, None)
    }
}
impl From<RangeTo<i32>> for Slice {
    fn from(r: RangeTo<i32>) -> Slice {
        Slice::new(None, r.end, None)
    }
}
impl From<RangeFull> for Slice {
    fn from(_: RangeFull) -> Slice {
        Slice::full()
    }
}
/// The exclusive stop of an inclusive end: `b + 1`, or the axis' end for `-1` and for
/// `i32::MAX` (no axis is longer, and `b + 1` would overflow).
fn inclusive_stop(end: i32) -> Option<i32> {
    if end == -1 {
        None
    } else {
        end.checked_add(1)
    }
}

impl From<RangeInclusive<i32>> for Slice {
    /// `a..=b` is `a:b+1` (and `a..=-1` runs to the end).
    fn from(r: RangeInclusive<i32>) -> Slice {
        Slice::new(*r.start(), inclusive_stop(*r.end()), None)
    }
}
impl From<RangeToInclusive<i32>> for Slice {
    fn from(r: RangeToInclusive<i32>) -> Slice {
        Slice::new(None, inclusive_stop(r.end), None)
    }
}

/// Python's `None` in an index: inserts a new axis of size 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewAxis;

/// Python's `...` in an index: as many `:` as needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ellipsis;

/// One entry of an index.
#[derive(Debug, Clone)]
pub enum Index {
    /// An integer; negative counts from the end. Removes the axis.
    Int(i64),
    /// A slice `start:stop:step`.
    Slice(Slice),
    /// `None`: a new axis of size 1.
    NewAxis,
    /// `...`.
    Ellipsis,
    /// An integer index array (or, alone in [`Array::index_put`], a `bool` mask).
    Array(Array),
}

/// Converts into one [`Index`] entry: integers, ranges, [`Slice`], [`NewAxis`],
/// [`Ellipsis`], arrays.
pub trait IntoIndex {
    fn into_index(self) -> Index;
}

impl IntoIndex for Index {
    fn into_index(self) -> Index {
        self
    }
}

macro_rules! int_index {
    ($($ty:ty),*) => {$(
        impl IntoIndex for $ty {
            fn into_index(self) -> Index {
                // An index beyond i64 (a `usize` near `usize::MAX`) is out of bounds for any
                // axis: saturate rather than wrap to a negative index that counts from the end.
                Index::Int(i64::try_from(self).unwrap_or(i64::MAX))
            }
        }
    )*};
}
int_index!(i32, i64, isize, usize, u32, u64);

macro_rules! slice_index {
    ($($ty:ty),*) => {$(
        impl IntoIndex for $ty {
            fn into_index(self) -> Index {
                Index::Slice(self.into())
            }
        }
    )*};
}
slice_index!(
    Slice,
    Range<i32>,
    RangeFrom<i32>,
    RangeTo<i32>,
    RangeFull,
    RangeInclusive<i32>,
    RangeToInclusive<i32>
);

impl IntoIndex for NewAxis {
    fn into_index(self) -> Index {
        Index::NewAxis
    }
}
impl IntoIndex for Ellipsis {
    fn into_index(self) -> Index {
        Index::Ellipsis
    }
}
impl IntoIndex for Array {
    fn into_index(self) -> Index {
        Index::Array(self)
    }
}
impl IntoIndex for &Array {
    fn into_index(self) -> Index {
        Index::Array(self.clone())
    }
}

/// A whole index: one [`IntoIndex`] entry, a tuple of them (up to 8), or a `Vec<Index>` /
/// `&[Index]` built at run time.
pub trait IntoIndices {
    fn into_indices(self) -> Vec<Index>;
}

impl<T: IntoIndex> IntoIndices for T {
    fn into_indices(self) -> Vec<Index> {
        vec![self.into_index()]
    }
}
impl IntoIndices for Vec<Index> {
    fn into_indices(self) -> Vec<Index> {
        self
    }
}
impl IntoIndices for &[Index] {
    fn into_indices(self) -> Vec<Index> {
        self.to_vec()
    }
}
impl IntoIndices for () {
    fn into_indices(self) -> Vec<Index> {
        Vec::new()
    }
}

macro_rules! tuple_indices {
    ($(($($t:ident),+))*) => {$(
        impl<$($t: IntoIndex),+> IntoIndices for ($($t,)+) {
            #[allow(non_snake_case)]
            fn into_indices(self) -> Vec<Index> {
                let ($($t,)+) = self;
                vec![$($t.into_index()),+]
            }
        }
    )*};
}
tuple_indices! {
    (A) (A, B) (A, B, C) (A, B, C, D) (A, B, C, D, E) (A, B, C, D, E, F)
    (A, B, C, D, E, F, G) (A, B, C, D, E, F, G, H)
}

/// An index entry after the ellipsis is expanded and integers are bounds-checked.
#[derive(Debug, Clone)]
enum Entry {
    Int(i32),
    Slice(Slice),
    NewAxis,
    Array(Array),
}

impl Entry {
    fn is_arrayish(&self) -> bool {
        matches!(self, Entry::Int(_) | Entry::Array(_))
    }
}

/// The largest rank among the index arrays (0 when there are none): the number of result
/// axes the broadcast index arrays contribute.
fn max_array_ndim<'e>(entries: impl IntoIterator<Item = &'e Entry>) -> usize {
    entries
        .into_iter()
        .filter_map(|e| match e {
            Entry::Array(a) => Some(a.ndim()),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

fn count_slices<'e>(entries: impl IntoIterator<Item = &'e Entry>) -> usize {
    entries
        .into_iter()
        .filter(|e| matches!(e, Entry::Slice(_)))
        .count()
}

/// The first boolean index array: a mask, allowed only as the whole index of an update.
fn bool_mask(entries: &[Entry]) -> Option<&Array> {
    entries.iter().find_map(|e| match e {
        Entry::Array(a) if a.dtype() == Dtype::Bool => Some(a),
        _ => None,
    })
}

/// Replaces `...` by full slices, checks the count against `shape`, normalizes and
/// bounds-checks integers. Returns the entries and how many of them consume an axis.
fn expand(shape: &[i32], index: Vec<Index>) -> Result<(Vec<Entry>, usize)> {
    let ndim = shape.len();
    let consumed = index
        .iter()
        .filter(|i| !matches!(i, Index::NewAxis | Index::Ellipsis))
        .count();
    if index
        .iter()
        .filter(|i| matches!(i, Index::Ellipsis))
        .count()
        > 1
    {
        return Err(Error::invalid(
            "[index] an index can only have a single ellipsis (...)",
        ));
    }
    if consumed > ndim {
        return Err(Error::invalid(if ndim == 0 {
            "[index] too many indices for array: array is 0-dimensional".to_string()
        } else {
            format!("[index] too many indices ({consumed}) for an array with {ndim} dimensions")
        }));
    }
    let mut out = Vec::with_capacity(index.len() + ndim);
    let mut axis = 0usize;
    for idx in index {
        match idx {
            Index::Ellipsis => {
                for _ in 0..ndim - consumed {
                    out.push(Entry::Slice(Slice::full()));
                    axis += 1;
                }
            }
            Index::NewAxis => out.push(Entry::NewAxis),
            Index::Int(i) => {
                let n = i64::from(shape[axis]);
                if i < -n || i >= n {
                    return Err(Error::invalid(format!(
                        "[index] index {i} is out of bounds for axis {axis} with size {n}"
                    )));
                }
                out.push(Entry::Int((if i < 0 { i + n } else { i }) as i32));
                axis += 1;
            }
            Index::Slice(s) => {
                s.step_value()?;
                out.push(Entry::Slice(s));
                axis += 1;
            }
            Index::Array(a) => {
                out.push(Entry::Array(a));
                axis += 1;
            }
        }
    }
    Ok((out, consumed))
}

fn uint32_scalar(i: i32) -> Array {
    Array::from_scalar(i as u32)
}

/// The elements a slice selects on an axis of size `n`, as a `uint32` index vector.
fn slice_arange(s: &Slice, n: i32) -> Result<Array> {
    let (start, stop, step, _) = s.indices(n)?;
    ops::arange(start, stop, step, Dtype::Uint32)
}

/// Applies slices and new axes (no arrays): one strided slice, then squeeze/expand_dims.
fn apply_basic(src: &Array, entries: &[Entry]) -> Result<Array> {
    let shape = src.shape();
    let ndim = shape.len();
    let mut start = vec![0; ndim];
    let mut stop = shape.to_vec();
    let mut strides = vec![1; ndim];
    let (mut squeeze, mut unsqueeze) = (Vec::new(), Vec::new());
    let mut axis = 0usize;
    for (pos, e) in entries.iter().enumerate() {
        match e {
            Entry::NewAxis => unsqueeze.push(pos as i32),
            Entry::Int(i) => {
                start[axis] = *i;
                stop[axis] = i + 1;
                squeeze.push(axis as i32);
                axis += 1;
            }
            Entry::Slice(s) => {
                let (a, b, c) = s.mlx_params(shape[axis])?;
                (start[axis], stop[axis], strides[axis]) = (a, b, c);
                axis += 1;
            }
            Entry::Array(_) => unreachable!("arrays are gathered before basic indexing"),
        }
    }
    let mut out = ops::slice_strided(src, &start, &stop, strides.as_slice())?;
    if !squeeze.is_empty() {
        out = ops::squeeze(&out, squeeze)?;
    }
    if !unsqueeze.is_empty() {
        // Positions of new axes in the output: their entry position minus the integer
        // entries (removed axes) before them.
        let mut removed = 0;
        let mut positions = Vec::new();
        for (pos, e) in entries.iter().enumerate() {
            match e {
                Entry::Int(_) => removed += 1,
                Entry::NewAxis => positions.push(pos as i32 - removed),
                _ => {}
            }
        }
        out = ops::expand_dims(&out, positions)?;
    }
    Ok(out)
}

/// Whether integer/array entries are separated by something else, in which case their
/// result dimensions go first (NumPy's rule for advanced indices).
fn gather_first(entries: &[Entry]) -> bool {
    let (mut have_array, mut have_non_array) = (false, false);
    for e in entries {
        if e.is_arrayish() {
            if have_array && have_non_array {
                return true;
            }
            have_array = true;
        } else {
            have_non_array |= have_array;
        }
    }
    false
}

fn get(src: &Array, index: Vec<Index>) -> Result<Array> {
    if index.is_empty() {
        return Ok(src.clone());
    }
    let (entries, _) = expand(src.shape(), index)?;
    if let Some(m) = bool_mask(&entries) {
        return Err(Error::invalid(format!(
            "[index] boolean mask indices (shape {:?}) are not supported for reading: the result shape would depend on the values; use index_put to write through a mask, or ops::where_",
            m.shape()
        )));
    }
    if !entries.iter().any(|e| matches!(e, Entry::Array(_))) {
        return apply_basic(src, &entries);
    }

    let first = gather_first(&entries);
    let last_array = entries.iter().rposition(Entry::is_arrayish).unwrap_or(0);
    let gathered: Vec<&Entry> = entries[..=last_array]
        .iter()
        .filter(|e| !matches!(e, Entry::NewAxis))
        .collect();

    // Index arrays, one per gathered axis, shaped so they broadcast into the result layout.
    let shape = src.shape().to_vec();
    let max_dims = max_array_ndim(gathered.iter().copied());
    let num_slices = count_slices(gathered.iter().copied());
    let mut indices = Vec::with_capacity(gathered.len());
    let mut slice_index = 0;
    for (axis, e) in gathered.iter().enumerate() {
        let idx = match e {
            Entry::Slice(s) => {
                let r = slice_arange(s, shape[axis])?;
                let mut idx_shape = vec![1; max_dims + num_slices];
                let pos = if first {
                    max_dims + slice_index
                } else {
                    slice_index
                };
                idx_shape[pos] = r.shape()[0];
                slice_index += 1;
                r.reshape(&idx_shape)?
            }
            Entry::Int(i) => uint32_scalar(*i),
            Entry::Array(a) if first => {
                let mut idx_shape = a.shape().to_vec();
                idx_shape.extend(std::iter::repeat(1).take(num_slices));
                a.reshape(&idx_shape)?
            }
            Entry::Array(a) => a.clone(),
            Entry::NewAxis => unreachable!("filtered out above"),
        };
        indices.push(idx);
    }
    let n = gathered.len();
    let axes: Vec<i32> = (0..n as i32).collect();
    let mut slice_sizes = shape.clone();
    slice_sizes[..n].fill(1);
    let out = ops::gather(src, &indices, &axes, &slice_sizes)?;
    let squeeze: Vec<i32> = (0..n).map(|i| (max_dims + num_slices + i) as i32).collect();
    let out = ops::squeeze(&out, squeeze)?;

    // What is left to apply: new axes and the entries after the last array, over the
    // gathered layout.
    let mut rest = Vec::new();
    if first {
        rest.extend(std::iter::repeat(Entry::Slice(Slice::full())).take(max_dims));
        for e in &entries[..last_array] {
            match e {
                Entry::NewAxis => rest.push(Entry::NewAxis),
                Entry::Slice(_) => rest.push(Entry::Slice(Slice::full())),
                _ => {}
            }
        }
    } else {
        for e in &entries[..last_array] {
            match e {
                _ if e.is_arrayish() => break,
                Entry::NewAxis => rest.push(Entry::NewAxis),
                _ => rest.push(Entry::Slice(Slice::full())),
            }
        }
        rest.extend(std::iter::repeat(Entry::Slice(Slice::full())).take(max_dims));
    }
    rest.extend(entries[last_array + 1..].iter().cloned());
    if rest
        .iter()
        .all(|e| matches!(e, Entry::Slice(s) if *s == Slice::full()))
    {
        return Ok(out);
    }
    apply_basic(&out, &rest)
}

/// How an update combines with the indexed elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Update {
    Set,
    Add,
    Multiply,
    Maximum,
    Minimum,
}

/// The value as an array of `src`'s dtype (Python's `to_array(v, src.dtype)`).
fn update_value<'v>(src: &Array, v: impl IntoOperand<'v>) -> Result<Array> {
    let v = operand_array(v, Some(src.dtype()));
    if v.dtype() == src.dtype() {
        Ok(v)
    } else {
        v.astype(src.dtype())
    }
}

/// Drops leading size-1 axes of `v` while it has more axes than `ndim`.
fn squeeze_leading(v: &Array, ndim: usize) -> Result<Array> {
    let extra = v.shape().iter().take_while(|&&d| d == 1).count();
    let drop = extra.min(v.ndim().saturating_sub(ndim));
    if drop == 0 {
        return Ok(v.clone());
    }
    v.reshape(&v.shape()[drop..])
}

fn combine(src: &Array, v: &Array, how: Update) -> Result<Array> {
    let v = ops::broadcast_to(squeeze_leading(v, src.ndim())?, src.shape())?;
    match how {
        Update::Set => Ok(v),
        Update::Add => ops::add(src, &v),
        Update::Multiply => ops::multiply(src, &v),
        Update::Maximum => ops::maximum(src, &v),
        Update::Minimum => ops::minimum(src, &v),
    }
}

fn put(src: &Array, index: Vec<Index>, v: Array, how: Update) -> Result<Array> {
    if let [Index::Array(mask)] = index.as_slice() {
        if mask.dtype() == Dtype::Bool {
            if how != Update::Set {
                return Err(Error::invalid(
                    "[index] boolean masks support only plain assignment (index_put)",
                ));
            }
            return ops::masked_scatter(src, mask, &v);
        }
    }
    let (entries, consumed) = expand(src.shape(), index)?;
    if consumed == 0 {
        return combine(src, &v, how);
    }
    if let Some(m) = bool_mask(&entries) {
        return Err(Error::invalid(format!(
            "[index] a boolean mask (shape {:?}) must be the whole index",
            m.shape()
        )));
    }
    if entries.iter().any(|e| matches!(e, Entry::Array(_))) {
        // The axes the index covers once `...` is expanded (`consumed` counts it as none).
        let axes = entries
            .iter()
            .filter(|e| !matches!(e, Entry::NewAxis))
            .count();
        scatter_put(src, &entries, axes, v, how)
    } else {
        slice_put(src, &entries, v, how)
    }
}

/// Integers and slices only: one strided slice update.
fn slice_put(src: &Array, entries: &[Entry], v: Array, how: Update) -> Result<Array> {
    let shape = src.shape();
    let ndim = shape.len();
    let (mut start, mut stop, mut strides) = (vec![0; ndim], shape.to_vec(), vec![1; ndim]);
    // `target`: the shape `src[index]` has (what `v` broadcasts to); `region`: the same
    // elements with integer axes kept as size 1 and no new axes (what the update op takes).
    let (mut target, mut region) = (Vec::new(), Vec::new());
    let mut axis = 0usize;
    for e in entries {
        match e {
            Entry::NewAxis => target.push(1),
            Entry::Int(i) => {
                (start[axis], stop[axis]) = (*i, i + 1);
                region.push(1);
                axis += 1;
            }
            Entry::Slice(s) => {
                let (_, _, _, len) = s.indices(shape[axis])?;
                let (a, b, c) = s.mlx_params(shape[axis])?;
                (start[axis], stop[axis], strides[axis]) = (a, b, c);
                target.push(len);
                region.push(len);
                axis += 1;
            }
            Entry::Array(_) => unreachable!("arrays take the scatter path"),
        }
    }
    target.extend_from_slice(&shape[axis..]);
    region.extend_from_slice(&shape[axis..]);
    let v = ops::broadcast_to(squeeze_leading(&v, target.len())?, &target)?;
    let v = v.reshape(&region)?;
    match how {
        Update::Set => ops::slice_update_strided(src, &v, &start, &stop, strides.as_slice()),
        Update::Add => ops::slice_update_add(src, &v, &start, &stop, strides.as_slice()),
        Update::Multiply => ops::slice_update_prod(src, &v, &start, &stop, strides.as_slice()),
        Update::Maximum => ops::slice_update_max(src, &v, &start, &stop, strides.as_slice()),
        Update::Minimum => ops::slice_update_min(src, &v, &start, &stop, strides.as_slice()),
    }
}

/// With array indices: one scatter whose index arrays lay out the result like [`get`] does
/// (integers count as 0-d arrays; slices between arrays become index ranges).
fn scatter_put(
    src: &Array,
    entries: &[Entry],
    consumed: usize,
    v: Array,
    how: Update,
) -> Result<Array> {
    let shape = src.shape();
    let arrays_first = gather_first(entries);
    let max_dim = max_array_ndim(entries);
    let num_arrays = entries.iter().filter(|e| e.is_arrayish()).count();
    let num_none = entries
        .iter()
        .filter(|e| matches!(e, Entry::NewAxis))
        .count();
    let num_slices = count_slices(entries);
    // Slices after the last array with step 1 (and no strided slice after them) stay slices:
    // only their start goes into the index, their length into the update shape.
    let mut num_strided = 0usize;
    let mut simple_post = 0usize;
    for e in entries {
        match e {
            Entry::Slice(s) if s.step.unwrap_or(1) != 1 => {
                num_strided += 1;
                simple_post = 0;
            }
            Entry::Slice(_) => simple_post += 1,
            e if e.is_arrayish() => simple_post = 0,
            _ => {}
        }
    }
    let idx_ndim = (max_dim + num_none + num_slices - simple_post).max(1);

    let mut indices = Vec::new();
    let mut update_shape = vec![1; consumed];
    let mut slice_shapes = Vec::new();
    let (mut slice_num, mut array_num, mut axis) = (0usize, 0usize, 0usize);
    let mut strided_left = num_strided;
    for e in entries {
        match e {
            Entry::Slice(s) => {
                let (start, _, step, len) = s.indices(shape[axis])?;
                let mut idx_shape = vec![1; idx_ndim];
                if array_num >= num_arrays && strided_left == 0 && step == 1 {
                    indices.push(uint32_scalar(start).reshape(&idx_shape)?);
                    slice_shapes.push(len);
                    update_shape[axis] = len;
                } else {
                    let r = slice_arange(s, shape[axis])?;
                    let loc = slice_num + if arrays_first { max_dim } else { 0 };
                    idx_shape[loc] = r.shape()[0];
                    indices.push(r.reshape(&idx_shape)?);
                    slice_num += 1;
                    strided_left = strided_left.saturating_sub(usize::from(step != 1));
                }
                axis += 1;
            }
            Entry::NewAxis => slice_num += 1,
            Entry::Int(_) | Entry::Array(_) => {
                let a = match e {
                    Entry::Int(i) => uint32_scalar(*i),
                    Entry::Array(a) => a.clone(),
                    _ => unreachable!(),
                };
                let mut idx_shape = vec![1; idx_ndim];
                let st = if arrays_first { 0 } else { slice_num } + max_dim - a.ndim();
                idx_shape[st..st + a.ndim()].copy_from_slice(a.shape());
                indices.push(a.reshape(&idx_shape)?);
                array_num += 1;
                if !arrays_first && array_num == num_arrays {
                    slice_num += max_dim;
                }
                axis += 1;
            }
        }
    }
    let indices = ops::broadcast_arrays(&indices)?;
    let idx_shape = indices[0].shape().to_vec();
    let mut target = idx_shape.clone();
    target.extend_from_slice(&slice_shapes);
    target.extend_from_slice(&shape[consumed..]);
    let v = ops::broadcast_to(squeeze_leading(&v, target.len())?, &target)?;
    let mut up_shape = idx_shape;
    up_shape.extend_from_slice(&update_shape);
    up_shape.extend_from_slice(&shape[consumed..]);
    let v = v.reshape(&up_shape)?;
    let axes: Vec<i32> = (0..indices.len() as i32).collect();
    match how {
        Update::Set => ops::scatter(src, &indices, &v, &axes),
        Update::Add => ops::scatter_add(src, &indices, &v, &axes),
        Update::Multiply => ops::scatter_prod(src, &indices, &v, &axes),
        Update::Maximum => ops::scatter_max(src, &indices, &v, &axes),
        Update::Minimum => ops::scatter_min(src, &indices, &v, &axes),
    }
}

impl Array {
    /// `self[index]` (Python's `a[...]`): integers, slices, [`NewAxis`], [`Ellipsis`] and
    /// integer arrays, alone or in a tuple. See the [module docs](crate::ops) table.
    ///
    /// ```
    /// use mlx_rs::ops::{arange_to, Ellipsis, NewAxis, SliceStep};
    /// let a = arange_to(12)?.reshape(&[3, 4])?;
    /// assert_eq!(a.index((1, 1..3))?.to_vec::<i32>()?, vec![5, 6]);
    /// assert_eq!(a.index((Ellipsis, -1))?.to_vec::<i32>()?, vec![3, 7, 11]);
    /// assert_eq!(a.index((.., NewAxis, (..).step(-2)))?.shape(), &[3, 1, 2]);
    /// assert!(a.index(3).is_err()); // out of range
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn index(&self, index: impl IntoIndices) -> Result<Array> {
        get(self, index.into_indices())
    }

    /// A copy of `self` with `self[index]` replaced by `value` (Python's `a[index] = value`,
    /// returning the new array). `value` may be a scalar or an array broadcastable to
    /// `self[index]`'s shape; it is converted to `self`'s dtype. A `bool` array as the whole
    /// index writes consecutive elements of `value` where the mask is true.
    ///
    /// ```
    /// use mlx_rs::ops::{zeros, Ellipsis};
    /// let a = zeros(&[3, 2], None)?;
    /// let b = a.index_put((1..3, Ellipsis), 7.0)?;
    /// assert_eq!(b.to_vec::<f32>()?, vec![0.0, 0.0, 7.0, 7.0, 7.0, 7.0]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn index_put<'v>(
        &self,
        index: impl IntoIndices,
        value: impl IntoOperand<'v>,
    ) -> Result<Array> {
        let v = update_value(self, value)?;
        put(self, index.into_indices(), v, Update::Set)
    }

    /// In-place form of [`Array::index_put`]: `a.index_set(idx, v)?` is Python's
    /// `a[idx] = v`. On error `self` is unchanged.
    pub fn index_set<'v>(
        &mut self,
        index: impl IntoIndices,
        value: impl IntoOperand<'v>,
    ) -> Result<()> {
        *self = self.index_put(index, value)?;
        Ok(())
    }

    /// Python's `a.at[index]`: functional updates that, unlike `index_put`, accumulate over
    /// repeated indices (`a.at(&idx).add(1.0)?`).
    pub fn at(&self, index: impl IntoIndices) -> At<'_> {
        At {
            array: self,
            index: index.into_indices(),
        }
    }
}

/// The updates of Python's `a.at[index]`; each returns a new array.
#[derive(Debug)]
pub struct At<'a> {
    array: &'a Array,
    index: Vec<Index>,
}

// The method names are Python's (`a.at[i].add(v)`), not the operator traits.
#[allow(clippy::should_implement_trait)]
impl At<'_> {
    fn apply<'v>(
        self,
        value: impl IntoOperand<'v>,
        how: Update,
        map: fn(&Array) -> Result<Array>,
    ) -> Result<Array> {
        let v = map(&update_value(self.array, value)?)?;
        put(self.array, self.index, v, how)
    }

    /// `a[index] += v`, accumulating repeated indices (Python: `a.at[index].add(v)`).
    pub fn add<'v>(self, value: impl IntoOperand<'v>) -> Result<Array> {
        self.apply(value, Update::Add, |v| Ok(v.clone()))
    }

    /// `a[index] -= v` (Python: `a.at[index].subtract(v)`).
    pub fn subtract<'v>(self, value: impl IntoOperand<'v>) -> Result<Array> {
        self.apply(value, Update::Add, ops::negative)
    }

    /// `a[index] *= v` (Python: `a.at[index].multiply(v)`).
    pub fn multiply<'v>(self, value: impl IntoOperand<'v>) -> Result<Array> {
        self.apply(value, Update::Multiply, |v| Ok(v.clone()))
    }

    /// `a[index] /= v` (Python: `a.at[index].divide(v)`).
    pub fn divide<'v>(self, value: impl IntoOperand<'v>) -> Result<Array> {
        self.apply(value, Update::Multiply, ops::reciprocal)
    }

    /// `a[index] = maximum(a[index], v)` (Python: `a.at[index].maximum(v)`).
    pub fn maximum<'v>(self, value: impl IntoOperand<'v>) -> Result<Array> {
        self.apply(value, Update::Maximum, |v| Ok(v.clone()))
    }

    /// `a[index] = minimum(a[index], v)` (Python: `a.at[index].minimum(v)`).
    pub fn minimum<'v>(self, value: impl IntoOperand<'v>) -> Result<Array> {
        self.apply(value, Update::Minimum, |v| Ok(v.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_indices_follow_python() {
        // Values from Python's slice(start, stop, step).indices(n) and len(range(...)).
        type Case = (Slice, i32, (i32, i32, i32, i32));
        let cases: &[Case] = &[
            (Slice::full(), 5, (0, 5, 1, 5)),
            (Slice::new(None, None, -1), 5, (4, -1, -1, 5)),
            (Slice::new(-2, None, None), 5, (3, 5, 1, 2)),
            (Slice::new(1, 100, 2), 5, (1, 5, 2, 2)),
            (Slice::new(4, 0, -2), 5, (4, 0, -2, 2)),
            (Slice::new(3, 1, None), 5, (3, 1, 1, 0)),
            (Slice::new(-100, None, -1), 5, (-1, -1, -1, 0)),
            (Slice::full(), 0, (0, 0, 1, 0)),
        ];
        for (s, n, want) in cases {
            assert_eq!(s.indices(*n).unwrap(), *want, "{s:?} on {n}");
        }
        assert!(Slice::new(None, None, 0).indices(3).is_err());
    }

    #[test]
    fn ranges_convert_to_python_slices() {
        assert_eq!(Slice::from(1..3), Slice::new(1, 3, None));
        assert_eq!(Slice::from(..=2), Slice::new(None, 3, None));
        assert_eq!(
            Slice::from(RangeInclusive::new(1, -1)),
            Slice::new(1, None, None)
        );
        assert_eq!((..).step(-1), Slice::new(None, None, -1));
        assert_eq!((2..).step(3), Slice::new(2, None, 3));
    }
}
