//! The fuzz targets: one function per input kind, each taking raw bytes and returning `Ok`
//! (the input was accepted and everything it produced evaluated) or `Err` (refused with a
//! message). Anything else — a signal, an abort, a panic, a hang — is a finding. The same
//! functions serve the stable harness and the libFuzzer targets.

use std::path::{Path, PathBuf};

use mlx_rs::{ops, Array, Dtype};

use crate::mutate::{Framing, Spec};

mod gguf;
mod mlxfn;
mod npy;
mod safetensors;
mod shapes;
mod treedef;
mod weights;

/// What a target returns for one input: `Err` is a refusal, with its message.
pub type Outcome = Result<(), String>;

/// Named inputs: seed files by file name.
pub type Seeds = Vec<(String, Vec<u8>)>;

/// One fuzz target.
pub struct Target {
    pub name: &'static str,
    /// What the input is, for `--help` and reports.
    pub about: &'static str,
    pub spec: Spec,
    pub run: fn(&mut Ctx, &[u8]) -> Outcome,
    /// Valid inputs made through the Rust API, by file name: the part of the seed corpus
    /// that `mlx-fuzz seed` writes.
    pub seeds: fn(&mut Ctx) -> Result<Seeds, String>,
}

pub const TARGETS: &[Target] = &[
    Target {
        name: "safetensors",
        about: "load_safetensors and load_safetensors_from_reader; both must agree; arrays evaluated",
        spec: Spec {
            framing: Framing::Safetensors,
            tokens: safetensors::TOKENS,
        },
        run: safetensors::run,
        seeds: safetensors::seeds,
    },
    Target {
        name: "npy",
        about: "load_npy and load_npy_from_reader; a file the path loader accepts must load alike from a reader",
        spec: Spec {
            framing: Framing::Npy,
            tokens: npy::TOKENS,
        },
        run: npy::run,
        seeds: npy::seeds,
    },
    Target {
        name: "gguf",
        about: "load_gguf; arrays and metadata arrays evaluated",
        spec: Spec {
            framing: Framing::None,
            tokens: gguf::TOKENS,
        },
        run: gguf::run,
        seeds: gguf::seeds,
    },
    Target {
        name: "mlxfn",
        about: "import_function; the function called with inputs of its first trace's signature and its outputs evaluated",
        spec: Spec {
            framing: Framing::None,
            tokens: mlxfn::TOKENS,
        },
        run: mlxfn::run,
        seeds: mlxfn::seeds,
    },
    Target {
        name: "treedef",
        about: "TreeDef from JSON (serde); walked, printed, re-serialized, unflattened, and read as an exported function's signature",
        spec: Spec {
            framing: Framing::None,
            tokens: treedef::TOKENS,
        },
        run: treedef::run,
        seeds: treedef::seeds,
    },
    Target {
        name: "weights",
        about: "Module::load_weights (mlx_tree::load_weights) of a .safetensors file into a model, then a forward pass",
        spec: Spec {
            framing: Framing::Safetensors,
            tokens: safetensors::TOKENS,
        },
        run: weights::run,
        seeds: weights::seeds,
    },
    Target {
        name: "shapes",
        about: "a program of shape and index ops (reshape, broadcast_to, index/index_put, as_strided, take/gather/scatter, slice/slice_update, zeros, ...) decoded from the bytes",
        spec: Spec {
            framing: Framing::None,
            tokens: &[],
        },
        run: shapes::run,
        seeds: shapes::seeds,
    },
];

/// The target called `name` (the self-test target included).
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS
        .iter()
        .chain(std::iter::once(&SELFTEST))
        .find(|t| t.name == name)
}

/// The folder of the context of process `pid`: the runner removes it after a child that
/// crashed (and so could not remove it itself).
pub fn ctx_dir(pid: u32) -> PathBuf {
    std::env::temp_dir().join(format!("mlx-fuzz-{pid}"))
}

/// Per-process state of a target run: a private folder for the files inputs are written to,
/// and things worth building once (a model, a reference `.mlxfn`).
pub struct Ctx {
    dir: PathBuf,
    count: u64,
    model: Option<weights::Model>,
    reference_fn: Option<PathBuf>,
}

impl Ctx {
    /// A context with its own folder under the system's temporary folder.
    pub fn new() -> Result<Ctx, String> {
        let dir = ctx_dir(std::process::id());
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Ctx {
            dir,
            count: 0,
            model: None,
            reference_fn: None,
        })
    }

    /// The folder this context writes to (removed when the context is dropped).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A fresh path in the context's folder: each input gets a new file (a new inode), so a
    /// file that MLX still maps or reads lazily is never rewritten under it.
    fn fresh_path(&mut self, ext: &str) -> PathBuf {
        self.count += 1;
        self.dir.join(format!("input-{}.{ext}", self.count))
    }

    /// Writes `data` to a fresh file that is removed when the guard drops.
    fn write(&mut self, ext: &str, data: &[u8]) -> Result<TempFile, String> {
        let path = self.fresh_path(ext);
        std::fs::write(&path, data).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(TempFile(path))
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // Best effort: a leftover folder in the temporary folder is harmless.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A file removed on drop.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Arrays larger than this are not evaluated: the shape target can build arrays as large as
/// the machine's memory, and a campaign must stay fast and small.
pub const EVAL_CAP_BYTES: usize = 64 << 20;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Evaluates `a` and copies it into a contiguous buffer, so every element is read once
/// (a view reading outside its buffer shows up here, not only at the view's creation).
fn touch(a: &Array) -> Outcome {
    if a.nbytes() > EVAL_CAP_BYTES {
        return Ok(());
    }
    ops::contiguous(a, false).map_err(err)?.eval().map_err(err)
}

/// Whether `a` and `b` hold the same bits (NaN payloads and complex NaNs included, which a
/// value comparison would not see as equal). Both must have one shape and dtype.
fn same_bits(a: &Array, b: &Array) -> Result<bool, String> {
    let bits = match a.itemsize() {
        1 => Dtype::Uint8,
        2 => Dtype::Uint16,
        4 => Dtype::Uint32,
        _ => Dtype::Uint64,
    };
    let (x, y) = (
        ops::view(a, bits).map_err(err)?,
        ops::view(b, bits).map_err(err)?,
    );
    ops::array_equal(&x, &y, None)
        .and_then(|e| e.item::<bool>())
        .map_err(err)
}

/// Reads a saved file back: seeds are made through the path-based savers.
fn read_back(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// A seed made by writing to a path in the context's folder with `save`, read back.
fn saved(
    ctx: &mut Ctx,
    name: &str,
    ext: &str,
    save: impl FnOnce(&Path) -> mlx_rs::Result<()>,
) -> Result<(String, Vec<u8>), String> {
    let path = ctx.fresh_path(ext);
    let file = TempFile(path.clone());
    save(&path).map_err(|e| format!("seed {name}: {e}"))?;
    let bytes = read_back(&file.0)?;
    Ok((format!("{name}.{ext}"), bytes))
}

/// Arrays of every dtype MLX saves, for seeds.
fn sample_arrays() -> mlx_rs::Result<Vec<(String, Array)>> {
    use mlx_rs::half::{bf16, f16};
    use mlx_rs::num_complex::Complex32;
    Ok(vec![
        (
            "f32".into(),
            Array::from_slice(&[1.0f32, -2.5, 3.0, 0.0, 7.5, -0.0], &[2, 3])?,
        ),
        (
            "f16".into(),
            Array::from_slice(&[f16::from_f32(1.5), f16::from_f32(-3.0)], &[2])?,
        ),
        (
            "bf16".into(),
            Array::from_slice(&[bf16::from_f32(0.5); 4], &[2, 1, 2])?,
        ),
        ("f64".into(), Array::from_slice(&[1.0f64, 2.0, 3.0], &[3])?),
        ("i8".into(), Array::from_slice(&[-1i8, 2, -3, 4], &[4])?),
        ("u8".into(), Array::from_slice(&[0u8, 255], &[2, 1])?),
        ("i16".into(), Array::from_slice(&[-300i16, 300], &[2])?),
        ("u16".into(), Array::from_slice(&[60000u16], &[1])?),
        (
            "i32".into(),
            Array::from_slice(&[1i32, -2, 3, -4, 5, -6, 7, -8], &[2, 2, 2])?,
        ),
        (
            "u32".into(),
            Array::from_slice(&[4_000_000_000u32, 1], &[2])?,
        ),
        (
            "i64".into(),
            Array::from_slice(&[i64::MIN, i64::MAX], &[2])?,
        ),
        ("u64".into(), Array::from_slice(&[u64::MAX], &[1])?),
        (
            "bool".into(),
            Array::from_slice(&[true, false, true], &[3])?,
        ),
        (
            "c64".into(),
            Array::from_slice(&[Complex32::new(1.0, -1.0)], &[1])?,
        ),
        ("scalar".into(), Array::from_scalar(42.0f32)),
        ("empty".into(), ops::zeros(&[0, 3], None)?),
    ])
}

/// Set by the self-test target's `poison` input: state one input leaves behind for a later
/// one, like heap damage that shows only at a later allocation.
static POISONED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A target that misbehaves on request (`abort`, `panic`, `hang`, `err`; `poison` makes a
/// later `trigger` abort; `eval` computes 1 + 2 on the default device; anything else is
/// `Ok`), so the harness's own detection of crashes
/// and hangs, and its search for the input behind a delayed crash, are tested. Not part of
/// `all`.
pub const SELFTEST: Target = Target {
    name: "selftest",
    about: "misbehaves on request: abort, panic, hang, err, poison then trigger; eval computes",
    spec: Spec {
        framing: Framing::None,
        tokens: &[
            b"abort", b"panic", b"hang", b"err", b"poison", b"trigger", b"eval",
        ],
    },
    run: |_, data| {
        use std::sync::atomic::Ordering;
        match data {
            b"abort" => std::process::abort(),
            b"panic" => panic!("selftest panic"),
            b"hang" => loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
            },
            b"err" => Err("selftest refusal".into()),
            b"poison" => {
                POISONED.store(true, Ordering::Relaxed);
                Ok(())
            }
            b"trigger" if POISONED.load(Ordering::Relaxed) => std::process::abort(),
            b"eval" => {
                let x = mlx_rs::Array::from_slice(&[1.0f32, 2.0], &[2]).map_err(err)?;
                let sum = x
                    .sum(None, false)
                    .map_err(err)?
                    .item::<f32>()
                    .map_err(err)?;
                if sum != 3.0 {
                    return Err(format!("selftest: 1 + 2 = {sum}"));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    },
    seeds: |_| Ok(Vec::new()),
};
