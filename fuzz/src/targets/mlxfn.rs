//! `.mlxfn`: `import_function`, then a call. The call needs inputs of the exported shapes and
//! dtypes, which the public API does not expose, so the first trace's input signature is read
//! from the file here (a reading of MLX's layout that trusts nothing and allocates only what
//! the file holds). A call with no inputs runs the refusal path as well.

use mlx_rs::export::{self, ImportedFunction};
use mlx_rs::{ops, Array, Dtype};

use super::{err, touch, Ctx, Outcome, Seeds};

pub const TOKENS: &[&[u8]] = &[
    b"0.32.2",
    b"\x00\x00\x00\x00\x00\x00\x00\x00",
    b"\x01\x00\x00\x00\x00\x00\x00\x00",
    b"\xff\xff\xff\xff\xff\xff\xff\xff",
    b"\x0a\x00\x00\x00\x04",
    b"\x07\x00\x00\x00\x04",
    b"\x01\x00\x00\x00",
    b"\x02\x00\x00\x00",
    b"\x01",
    b"\x00",
];

/// Inputs larger than this (elements in all) are not built: the call is skipped.
const MAX_INPUT_ELEMENTS: i64 = 1 << 20;

/// A bounds-checked little-endian reader over the file.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    /// A length that the rest of the file can hold at `each` bytes per item.
    fn count(&mut self, each: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n.checked_mul(each)? <= self.data.len() - self.pos).then_some(n)
    }

    fn string(&mut self) -> Option<()> {
        let n = self.count(1)?;
        self.take(n).map(drop)
    }
}

/// The input shapes and dtypes of the file's first trace, as MLX lays them out: version
/// string, function count, shapeless flag, metadata string; then per trace the keyword
/// names, the input ids and the inputs (shape as a length-prefixed `i32` list, dtype as an
/// `i32` tag and a `u8` size).
fn first_signature(data: &[u8]) -> Option<Vec<(Vec<i32>, Dtype)>> {
    let mut r = Reader { data, pos: 0 };
    r.string()?;
    r.i32()?;
    r.u8()?;
    r.string()?;
    for _ in 0..r.count(8)? {
        r.string()?;
    }
    let ids = r.count(8)?;
    r.take(ids * 8)?;
    let n = r.count(13)?;
    let mut inputs = Vec::with_capacity(n);
    for _ in 0..n {
        let ndim = r.count(4)?;
        let shape = (0..ndim).map(|_| r.i32()).collect::<Option<Vec<i32>>>()?;
        let tag = usize::try_from(r.i32()?).ok()?;
        r.u8()?;
        inputs.push((shape, *Dtype::ALL.get(tag)?));
    }
    Some(inputs)
}

/// Arrays for a signature, when it is small and sane; `None` skips the call.
fn make_inputs(signature: &[(Vec<i32>, Dtype)]) -> Option<Vec<Array>> {
    let mut total: i64 = 0;
    for (shape, _) in signature {
        let mut size: i64 = 1;
        for &d in shape {
            size = size.checked_mul(i64::from(d).max(-1))?;
        }
        if size < 0 {
            return None;
        }
        total = total.checked_add(size)?;
    }
    if total > MAX_INPUT_ELEMENTS {
        return None;
    }
    signature
        .iter()
        .map(|(shape, dtype)| ops::ones(shape, *dtype).ok())
        .collect()
}

fn call(f: &ImportedFunction, inputs: &[Array]) -> Outcome {
    for out in f.call(inputs).map_err(err)? {
        touch(&out)?;
    }
    Ok(())
}

pub fn run(ctx: &mut Ctx, data: &[u8]) -> Outcome {
    let file = ctx.write("mlxfn", data)?;
    let f = export::import_function(&file.0).map_err(err)?;
    let signature = first_signature(data);
    if let Some(inputs) = signature.as_deref().and_then(make_inputs) {
        call(&f, &inputs)?;
    }
    if signature.is_some_and(|s| !s.is_empty()) {
        // Fewer inputs than the first trace takes: refused, unless another trace of the
        // file takes none, so either outcome is fine; only a crash is not.
        let _ = call(&f, &[]);
    }
    Ok(())
}

pub fn seeds(ctx: &mut Ctx) -> Result<Seeds, String> {
    let x = Array::from_slice(&[1.0f32, -2.0, 3.0, 4.0], &[2, 2]).map_err(err)?;
    let i = Array::from_slice(&[3i32, 1, 2], &[3]).map_err(err)?;
    let w = Array::from_slice(&[0.5f32, 1.5, -1.0, 2.0], &[2, 2]).map_err(err)?;
    let mut out = Vec::new();
    let mut export_seed = |name: &str,
                           f: &dyn Fn(&[Array]) -> mlx_rs::Result<Vec<Array>>,
                           args: &[Array],
                           shapeless: bool|
     -> Result<(), String> {
        out.push(super::saved(ctx, name, "mlxfn", |p| {
            export::export_function(p, f, args, shapeless)
        })?);
        Ok(())
    };
    export_seed(
        "rust-double",
        &|a| Ok(vec![&a[0] * 2.0]),
        std::slice::from_ref(&x),
        false,
    )?;
    // A constant (`w`) is stored in the file and read lazily when the result is evaluated.
    export_seed(
        "rust-matmul-constant",
        &|a| Ok(vec![ops::matmul(&a[0], &w)?.exp()?]),
        std::slice::from_ref(&x),
        false,
    )?;
    export_seed(
        "rust-two-outputs-shapeless",
        &|a| Ok(vec![a[0].sum(None, false)?, ops::transpose(&a[0], None)?]),
        std::slice::from_ref(&x),
        true,
    )?;
    export_seed(
        "rust-take-reshape",
        &|a| Ok(vec![ops::take(&a[0], &a[1], None)?.reshape(&[3, 1])?]),
        &[x.clone(), i.clone()],
        false,
    )?;
    export_seed(
        "rust-no-inputs",
        &|_| Ok(vec![ops::arange_to(5)?]),
        &[],
        false,
    )?;
    Ok(out)
}
