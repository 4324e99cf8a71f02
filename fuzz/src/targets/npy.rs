//! `.npy`: the path loader (the data must fill the file exactly) and the reader loader (bytes
//! after the data are allowed). Whatever the path loader accepts, the reader loader must load
//! to the same array.

use std::io::Cursor;

use mlx_rs::io;

use super::{err, same_bits, sample_arrays, saved, touch, Ctx, Outcome, Seeds};

pub const TOKENS: &[&[u8]] = &[
    b"'descr'",
    b"'fortran_order'",
    b"'shape'",
    b"'<f4'",
    b"'<f2'",
    b"'<f8'",
    b"'<i8'",
    b"'>i4'",
    b"'|u1'",
    b"'|b1'",
    b"'<c8'",
    b"'<c16'",
    b"'<V2'",
    b"True",
    b"False",
    b"()",
    b"(0,)",
    b"(1,)",
    b",",
    b" ",
    b"\n",
];

pub fn run(ctx: &mut Ctx, data: &[u8]) -> Outcome {
    let file = ctx.write("npy", data)?;
    let from_file = io::load_npy(&file.0);
    let from_reader = io::load_npy_from_reader(Cursor::new(data.to_vec()));
    if let Ok(b) = &from_reader {
        touch(b)?;
    }
    let a = from_file.map_err(err)?;
    touch(&a)?;
    let b = match from_reader {
        Ok(b) => b,
        Err(e) => panic!("the path loader accepts what the reader loader refuses: {e}"),
    };
    assert_eq!((a.shape(), a.dtype()), (b.shape(), b.dtype()));
    assert!(
        same_bits(&a, &b)?,
        "the path and reader loaders read different values"
    );
    Ok(())
}

pub fn seeds(ctx: &mut Ctx) -> Result<Seeds, String> {
    let mut out = Vec::new();
    for (name, a) in sample_arrays().map_err(err)? {
        // MLX writes no .npy for bfloat16 (NumPy has no such type).
        if name == "bf16" {
            continue;
        }
        out.push(saved(ctx, &format!("rust-{name}"), "npy", |p| {
            io::save(p, &a)
        })?);
    }
    Ok(out)
}
