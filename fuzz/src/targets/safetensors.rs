//! `.safetensors`: the path loader and the reader loader on the same bytes. They validate at
//! different moments (before and after MLX's parse), so their agreement is checked too: the
//! same verdict, the same names, equal arrays.

use std::collections::{BTreeMap, HashMap};
use std::io::Cursor;

use mlx_rs::{io, Array};

use super::{err, same_bits, sample_arrays, saved, touch, Ctx, Outcome, Seeds};

pub const TOKENS: &[&[u8]] = &[
    b"\"dtype\"",
    b"\"shape\"",
    b"\"data_offsets\"",
    b"\"__metadata__\"",
    b"\"F32\"",
    b"\"F16\"",
    b"\"BF16\"",
    b"\"F64\"",
    b"\"I64\"",
    b"\"U8\"",
    b"\"BOOL\"",
    b"\"C64\"",
    b"\"F8_E4M3\"",
    b"[]",
    b"{}",
    b"null",
    b"[0,0]",
    b"\"\\u0000\"",
    b",",
    b":",
];

pub fn run(ctx: &mut Ctx, data: &[u8]) -> Outcome {
    let file = ctx.write("safetensors", data)?;
    let from_file = io::load_safetensors(&file.0);
    let from_reader = io::load_safetensors_from_reader(Cursor::new(data.to_vec()));
    match (from_file, from_reader) {
        (Ok((a, ma)), Ok((b, mb))) => {
            assert_eq!(
                ma, mb,
                "the path and reader loaders read different metadata"
            );
            same_arrays(&a, &b)
        }
        (Err(e), Err(_)) => Err(err(e)),
        (Ok(_), Err(e)) => panic!("the path loader accepts what the reader loader refuses: {e}"),
        (Err(e), Ok(_)) => panic!("the reader loader accepts what the path loader refuses: {e}"),
    }
}

/// Evaluates every array of both loads and checks they hold the same names and values.
pub(super) fn same_arrays(a: &HashMap<String, Array>, b: &HashMap<String, Array>) -> Outcome {
    let mut names: Vec<&String> = a.keys().collect();
    names.sort();
    let mut other: Vec<&String> = b.keys().collect();
    other.sort();
    assert_eq!(
        names, other,
        "the path and reader loaders read different names"
    );
    for name in names {
        let (x, y) = (&a[name], &b[name]);
        touch(x)?;
        touch(y)?;
        assert_eq!((x.shape(), x.dtype()), (y.shape(), y.dtype()), "{name}");
        assert!(
            same_bits(x, y)?,
            "{name}: the path and reader loaders read different values"
        );
    }
    Ok(())
}

pub fn seeds(ctx: &mut Ctx) -> Result<Seeds, String> {
    // MLX writes no float64 to .safetensors.
    let arrays: Vec<(String, Array)> = sample_arrays()
        .map_err(err)?
        .into_iter()
        .filter(|(name, _)| name != "f64")
        .collect();
    // Ordered, so the file comes out the same every time.
    let all: BTreeMap<String, Array> = arrays.iter().cloned().collect();
    let meta = HashMap::from([
        ("format".to_string(), "mlx".to_string()),
        ("note".to_string(), "seed \u{e9}".to_string()),
    ]);
    let mut out = vec![
        saved(ctx, "rust-all-dtypes", "safetensors", |p| {
            io::save_safetensors(p, &all, Some(&meta))
        })?,
        saved(ctx, "rust-empty", "safetensors", |p| {
            io::save_safetensors(p, &BTreeMap::<String, Array>::new(), None)
        })?,
    ];
    for (name, a) in arrays.iter().take(4) {
        let one = BTreeMap::from([(name.clone(), a.clone())]);
        out.push(saved(ctx, &format!("rust-{name}"), "safetensors", |p| {
            io::save_safetensors(p, &one, None)
        })?);
    }
    Ok(out)
}
