//! Matrix products (`Matmul`, `AddMM`, `BlockMaskedMM`, `GatherMM`) and the factorizations
//! and solvers of `mlx.core.linalg`, which MLX runs only on the CPU.

use super::helpers::{
    dtype_in, n_inputs, n_outputs, no_uses, out_is, prod, same_dtype, same_shape,
};
use super::{Call, Check, Dt, Field, Meta, Prim, Uses, ValueUse};

use Field::*;

pub(super) const PRIMS: &[Prim] = &[
    Prim::new("Matmul", &[], |c| matmul(c, false)),
    // alpha and beta.
    Prim::new("AddMM", &[F32, F32], |c| matmul(c, true)),
    // The block size.
    Prim::new("BlockMaskedMM", &[I32], block_masked_mm),
    // Whether the left and right indices are sorted.
    Prim::new("GatherMM", &[Bool, Bool], gather_mm),
    Prim::new("QRF", &[], qrf),
    // Whether U and V are computed.
    Prim::new("SVD", &[Bool], svd),
    // Whether the input is triangular, and upper.
    Prim::new("Inverse", &[Bool, Bool], inverse),
    // Whether the factor is upper.
    Prim::new("Cholesky", &[Bool], inverse),
    // Whether the eigenvectors are computed.
    Prim::new("Eig", &[Bool], eig),
    // UPLO, and whether the eigenvectors are computed.
    Prim::new("Eigh", &[Str, Bool], eigh),
];

/// The product shape of two matrices (or stacks of them with the same batch shape).
fn matmul_shape(a: &Meta, b: &Meta, same_batch: bool) -> std::result::Result<Vec<i32>, String> {
    let (na, nb) = (a.ndim(), b.ndim());
    let ok = na >= 2
        && nb >= 2
        && a.shape[na - 1] == b.shape[nb - 2]
        && (!same_batch || (na == nb && a.shape[..na - 2] == b.shape[..nb - 2]));
    if !ok {
        bail!("cannot multiply {:?} by {:?}", a.shape, b.shape);
    }
    let mut shape = a.shape.clone();
    shape[na - 1] = b.shape[nb - 1];
    Ok(shape)
}

/// `a @ b`, plus a third input of the product's shape with `addmm`.
fn matmul(c: &Call, addmm: bool) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    let n = if addmm { 3 } else { 2 };
    n_inputs(ins, n, n)?;
    n_outputs(outs, 1)?;
    let shape = matmul_shape(ins[0], ins[1], true)?;
    let d = ins[0].dtype;
    same_dtype(ins[0], ins[1], "the operands")?;
    if addmm {
        dtype_in(d, d.is_float(), "the operands", "a real floating type")?;
        same_dtype(ins[0], ins[2], "the operands and the addend")?;
        if ins[2].shape != shape {
            bail!(
                "the addend {:?} is not the product's shape {shape:?}",
                ins[2].shape
            );
        }
    } else {
        dtype_in(d, d.is_inexact(), "the operands", "a float or complex type")?;
    }
    out_is(&outs[0], &shape, d)?;
    no_uses()
}

fn block_masked_mm(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 3, 5)?;
    n_outputs(outs, 1)?;
    let bs = c.st.int(0);
    if bs != 32 && bs != 64 {
        bail!("block size {bs} (32 or 64 expected)");
    }
    let shape = matmul_shape(ins[0], ins[1], true)?;
    let d = ins[0].dtype;
    same_dtype(ins[0], ins[1], "the operands")?;
    dtype_in(d, d.is_float(), "the operands", "a real floating type")?;
    out_is(&outs[0], &shape, d)?;
    let n = shape.len();
    let (m, k, nn) = (ins[0].shape[n - 2], ins[0].shape[n - 1], shape[n - 1]);
    let blocks = |x: i32| ((i64::from(x) + i64::from(bs) - 1) / i64::from(bs)) as i32;
    let (tm, tk, tn) = (blocks(m), blocks(k), blocks(nn));
    let mask = |i: usize, y: i32, x: i32| -> Check {
        let mut want = shape[..n - 2].to_vec();
        want.extend([y, x]);
        let mk = ins[i];
        if mk.shape != want || !(mk.dtype == Dt::Bool || mk.dtype == d) {
            bail!(
                "mask {:?} {} ({want:?} bool or {d} expected)",
                mk.shape,
                mk.dtype
            );
        }
        Ok(())
    };
    if ins.len() != 4 {
        mask(2, tm, tn)?;
    }
    if ins.len() >= 4 {
        let l = ins.len();
        mask(l - 2, tm, tk)?;
        mask(l - 1, tk, tn)?;
        same_dtype(ins[l - 2], ins[l - 1], "the operand masks")?;
    }
    no_uses()
}

fn gather_mm(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 4, 4)?;
    n_outputs(outs, 1)?;
    let (a, b) = (ins[0], ins[1]);
    if a.ndim() < 2 || b.ndim() < 2 || a.shape[a.ndim() - 1] != b.shape[b.ndim() - 2] {
        bail!("cannot multiply {:?} by {:?}", a.shape, b.shape);
    }
    same_dtype(a, b, "the operands")?;
    dtype_in(
        a.dtype,
        a.dtype.is_float(),
        "the operands",
        "a real floating type",
    )?;
    let (li, ri) = (ins[2], ins[3]);
    for i in [li, ri] {
        dtype_in(i.dtype, i.dtype == Dt::U32, "the indices", "uint32")?;
    }
    same_shape(li, ri, "the indices")?;
    let mut shape = li.shape.clone();
    shape.extend([a.shape[a.ndim() - 2], b.shape[b.ndim() - 1]]);
    out_is(&outs[0], &shape, a.dtype)?;
    Ok([(2, a), (3, b)]
        .into_iter()
        .map(|(input, m)| ValueUse::batch(input, prod(&m.shape[..m.ndim() - 2])))
        .collect())
}

/// The input of a factorization or solver: a (stack of) `m` x `k` matrices.
struct Matrix<'a> {
    a: &'a Meta,
    m: i32,
    k: i32,
}

impl Matrix<'_> {
    fn floats(&self) -> bool {
        matches!(self.a.dtype, Dt::F32 | Dt::F64)
    }

    fn with_complex(&self) -> bool {
        self.floats() || self.a.dtype == Dt::C64
    }

    /// The real type of the input's elements.
    fn real_of(&self) -> Dt {
        if self.a.dtype == Dt::C64 {
            Dt::F32
        } else {
            self.a.dtype
        }
    }

    /// The batch shape followed by `tail`.
    fn vec_of(&self, tail: &[i32]) -> Vec<i32> {
        [&self.a.shape[..self.a.ndim() - 2], tail].concat()
    }
}

/// The single input of a linalg primitive, on the CPU, square where `square` says.
fn matrix<'a>(c: &Call<'a>, square: bool) -> std::result::Result<Matrix<'a>, String> {
    if c.gpu {
        bail!("runs on a GPU stream; MLX has only CPU kernels for it");
    }
    n_inputs(c.ins, 1, 1)?;
    let a = c.ins[0];
    let n = a.ndim();
    if n < 2 {
        bail!("the input {:?} is not a matrix", a.shape);
    }
    let (m, k) = (a.shape[n - 2], a.shape[n - 1]);
    if square && m != k {
        bail!("the input {:?} is not square", a.shape);
    }
    Ok(Matrix { a, m, k })
}

fn qrf(c: &Call) -> Uses {
    let x = matrix(c, false)?;
    let (a, m, k, outs) = (x.a, x.m, x.k, c.outs);
    dtype_in(a.dtype, x.floats(), "the input", "float32 or float64")?;
    n_outputs(outs, 2)?;
    let r = m.min(k);
    out_is(&outs[0], &x.vec_of(&[m, r]), a.dtype)?;
    out_is(&outs[1], &x.vec_of(&[r, k]), a.dtype)?;
    no_uses()
}

fn svd(c: &Call) -> Uses {
    let x = matrix(c, false)?;
    let (a, m, k, outs) = (x.a, x.m, x.k, c.outs);
    dtype_in(
        a.dtype,
        x.with_complex(),
        "the input",
        "float32, float64 or complex64",
    )?;
    let s = x.vec_of(&[m.min(k)]);
    if c.st.flag(0) {
        n_outputs(outs, 3)?;
        out_is(&outs[0], &x.vec_of(&[m, m]), a.dtype)?;
        out_is(&outs[1], &s, x.real_of())?;
        out_is(&outs[2], &x.vec_of(&[k, k]), a.dtype)?;
    } else {
        n_outputs(outs, 1)?;
        out_is(&outs[0], &s, x.real_of())?;
    }
    no_uses()
}

/// `Inverse` and `Cholesky`: a square matrix of the input's shape.
fn inverse(c: &Call) -> Uses {
    let x = matrix(c, true)?;
    dtype_in(x.a.dtype, x.floats(), "the input", "float32 or float64")?;
    n_outputs(c.outs, 1)?;
    out_is(&c.outs[0], &x.a.shape, x.a.dtype)?;
    no_uses()
}

fn eig(c: &Call) -> Uses {
    let x = matrix(c, true)?;
    eigen_dtype(&x)?;
    eigen_outputs(c.outs, &x, c.st.flag(0), Dt::C64, Dt::C64)
}

fn eigh(c: &Call) -> Uses {
    let x = matrix(c, true)?;
    eigen_dtype(&x)?;
    let uplo = c.st.bytes(0);
    if uplo != b"L" && uplo != b"U" {
        bail!(
            "UPLO {:?} (\"L\" or \"U\" expected)",
            String::from_utf8_lossy(uplo)
        );
    }
    eigen_outputs(c.outs, &x, c.st.flag(1), x.a.dtype, x.real_of())
}

fn eigen_dtype(x: &Matrix) -> Check {
    dtype_in(
        x.a.dtype,
        x.with_complex(),
        "the input",
        "float32, float64 or complex64",
    )
}

/// The eigenvalues (of dtype `vals_dt`), then the eigenvectors (of dtype `vdt`) if `vectors`.
fn eigen_outputs(outs: &[Meta], x: &Matrix, vectors: bool, vdt: Dt, vals_dt: Dt) -> Uses {
    n_outputs(outs, if vectors { 2 } else { 1 })?;
    out_is(&outs[0], &x.vec_of(&[x.m]), vals_dt)?;
    if vectors {
        out_is(&outs[1], &x.a.shape, vdt)?;
    }
    no_uses()
}
