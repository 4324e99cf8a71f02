//! Corrupt `.mlxfn` files: every single-bit flip of three exported functions must import and
//! run with the exported signatures, or fail with an `Err`; none may crash the process.
//!
//! The format has no checksum, so a flip that turns the file into another valid graph (a
//! constant's value, a reduction's kind, an output id naming another array) imports and runs
//! with other results; those are counted and their bytes listed, not failed.
//!
//! MLX 0.32.2's reader trusts the file (see `mlx_rs::export`), so before the validator many
//! flips killed the process (segfaults, glibc heap aborts, BLAS calling `exit`). A crash ends
//! the process, so the flips run in child processes (this binary re-run with `--ignored
//! --exact bit_flip_child`), each looping over a range of flips and reporting every one on
//! stdout; when a child dies or stalls, the parent records the flip it was on and starts a new
//! child at the next one. Where glibc's heap checker is installed the children load it, so a
//! flip that corrupts the heap aborts there rather than passing unnoticed.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use mlx_rs::export::{export_function, exporter, import_function, ImportedFunction};
use mlx_rs::ops::{self, CumsumOptions};
use mlx_rs::{io, Array, Dtype, Result};

// ---- fixtures ----

fn arange(shape: &[i32], scale: f32, offset: f32) -> Array {
    let n: i32 = shape.iter().product();
    ((ops::arange_to(n as f32).unwrap() * scale) + offset)
        .reshape(shape)
        .unwrap()
}

/// Several primitives, two float constants and a constant index array, traced for two
/// signatures by one exporter.
fn multi(x: &[Array]) -> Result<Vec<Array>> {
    let (a, b) = (&x[0], &x[1]);
    let shift = Array::from_slice(&[0.5f32, -1.25, 2.0, 3.5], &[4])?;
    let pick = Array::from_slice(&[1i32, 0], &[2])?;
    let (q, r) = ops::divmod(b, 3.0)?;
    Ok(vec![
        ops::tanh(&a.matmul(b)?)? + &shift,
        a.sum(0, false)?,
        ops::take(a, &pick, 1)?,
        b.cumsum(1, CumsumOptions::default())?,
        b.argmax(0, false)?,
        ops::where_(&ops::greater(a, 0.0)?, a, &(a * -0.5))?,
        ops::softmax(a, -1, None)?,
        ops::concatenate([a, &q], 0)?.astype(Dtype::Float16)?,
        r.reshape(&[-1])?,
        ops::slice_strided(a, &[0, 1], &[2, 2], None)?,
    ])
}

fn multi_calls() -> Vec<Call> {
    vec![
        Call::positional(vec![
            arange(&[2, 4], 0.25, -0.5),
            arange(&[4, 4], 0.5, -3.0),
        ]),
        Call::positional(vec![
            arange(&[3, 4], -0.125, 1.0),
            arange(&[4, 4], 0.75, 0.5),
        ]),
    ]
}

/// Broadcasting, a matrix product and reductions, replayed for other shapes.
fn shapeless(x: &[Array]) -> Result<Vec<Array>> {
    let (a, b) = (&x[0], &x[1]);
    Ok(vec![
        ops::exp(a)? * b,
        a.matmul(&b.reshape(&[-1, 1])?)?,
        a.max(1, false)?,
    ])
}

fn shapeless_calls() -> Vec<Call> {
    vec![
        Call::positional(vec![arange(&[2, 3], 0.5, -1.0), arange(&[3], 1.0, 1.0)]),
        Call::positional(vec![arange(&[4, 5], -0.25, 2.0), arange(&[5], 0.5, 0.0)]),
    ]
}

/// Arguments of the two signatures of `tests/data/mlxfn_kwargs.mlxfn`
/// (`scripts/golden/mlxfn.py`).
fn kwargs_calls() -> Vec<Call> {
    let kw = |bias: Array, scale: f32| {
        HashMap::from([
            ("bias".to_string(), bias),
            ("scale".to_string(), Array::from_scalar(scale)),
        ])
    };
    vec![
        Call {
            args: vec![arange(&[2, 3], 0.25, 0.0), arange(&[2, 2], 1.0, -1.0)],
            kwargs: kw(Array::from_scalar(1.0f32), 0.5),
        },
        Call {
            args: vec![arange(&[3, 3], -0.5, 0.0), arange(&[3, 2], 0.5, 0.0)],
            kwargs: kw(Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap(), 2.0),
        },
    ]
}

fn kwargs_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/mlxfn_kwargs.mlxfn")
}

struct Call {
    args: Vec<Array>,
    kwargs: HashMap<String, Array>,
}

impl Call {
    fn positional(args: Vec<Array>) -> Call {
        Call {
            args,
            kwargs: HashMap::new(),
        }
    }

    fn run(&self, f: &ImportedFunction) -> Result<Vec<Array>> {
        if self.kwargs.is_empty() {
            f.call(&self.args)
        } else {
            f.call_kwargs(&self.args, &self.kwargs)
        }
    }
}

/// Writes a case folder: `fun.mlxfn` and each call's arguments as `.npy` files, which the
/// child process reads back.
fn write_case(dir: &Path, calls: &[Call]) {
    for (k, c) in calls.iter().enumerate() {
        for (j, a) in c.args.iter().enumerate() {
            io::save(dir.join(format!("call{k}_arg{j}.npy")), a).unwrap();
        }
        for (name, a) in &c.kwargs {
            io::save(dir.join(format!("call{k}_kw_{name}.npy")), a).unwrap();
        }
    }
}

fn read_calls(dir: &Path) -> Vec<Call> {
    /// One call's arguments as read: positional ones by position.
    #[derive(Default)]
    struct Read {
        args: BTreeMap<usize, Array>,
        kwargs: HashMap<String, Array>,
    }
    let mut calls: BTreeMap<usize, Read> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(rest) = name
            .strip_prefix("call")
            .and_then(|n| n.strip_suffix(".npy"))
        else {
            continue;
        };
        let (k, what) = rest.split_once('_').unwrap();
        let call = calls.entry(k.parse().unwrap()).or_default();
        let a = io::load_npy(dir.join(&name)).unwrap();
        if let Some(j) = what.strip_prefix("arg") {
            call.args.insert(j.parse().unwrap(), a);
        } else {
            let key = what.strip_prefix("kw_").unwrap().to_string();
            call.kwargs.insert(key, a);
        }
    }
    calls
        .into_values()
        .map(|r| Call {
            args: r.args.into_values().collect(),
            kwargs: r.kwargs,
        })
        .collect()
}

fn make_cases(root: &Path) -> Vec<(&'static str, PathBuf)> {
    let case = |name: &'static str| {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        (name, dir)
    };

    let (name, dir) = case("multi");
    let calls = multi_calls();
    let ex = exporter(dir.join("fun.mlxfn"), multi, None).unwrap();
    for c in &calls {
        ex.call(&c.args).unwrap();
    }
    ex.close();
    write_case(&dir, &calls);
    let mut cases = vec![(name, dir)];

    let (name, dir) = case("shapeless");
    let calls = shapeless_calls();
    export_function(dir.join("fun.mlxfn"), shapeless, &calls[0].args, true).unwrap();
    write_case(&dir, &calls);
    cases.push((name, dir));

    let (name, dir) = case("kwargs");
    std::fs::copy(kwargs_file(), dir.join("fun.mlxfn")).unwrap();
    write_case(&dir, &kwargs_calls());
    cases.push((name, dir));
    cases
}

// ---- the child: one process, many flips ----

/// What one flipped file did.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Outcome {
    /// `import_function` returned `Err`.
    ImportErr,
    /// Imported, and a call returned `Err`.
    CallErr,
    /// Imported and ran with every call giving the intact file's results.
    Same,
    /// Imported and ran with the intact file's output shapes and dtypes, other values: the
    /// flip changed a constant's data or a state field to another valid value (the format
    /// has no checksum).
    OtherValues,
    /// Imported and ran with another output shape or dtype: the flip gave another
    /// self-consistent graph, such as an output id naming another array, or a one-element
    /// slice (MLX stores the stride of a one-element slice as 1, so the file no longer tells
    /// how long the slice was).
    OtherMeta,
}

impl Outcome {
    fn parse(s: &str) -> Outcome {
        match s {
            "import-err" => Outcome::ImportErr,
            "call-err" => Outcome::CallErr,
            "same" => Outcome::Same,
            "other-values" => Outcome::OtherValues,
            "other-meta" => Outcome::OtherMeta,
            _ => panic!("unknown outcome {s:?}"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Outcome::ImportErr => "import-err",
            Outcome::CallErr => "call-err",
            Outcome::Same => "same",
            Outcome::OtherValues => "other-values",
            Outcome::OtherMeta => "other-meta",
        }
    }
}

fn same_values(a: &Array, b: &Array) -> Result<bool> {
    ops::array_equal(a, b, true)?.item::<bool>()
}

/// Imports and calls one flipped file; the error's text comes with an `Err` outcome.
fn run_flip(file: &Path, calls: &[Call], want: &[Vec<Array>]) -> (Outcome, String) {
    let f = match import_function(file) {
        Ok(f) => f,
        Err(e) => return (Outcome::ImportErr, e.to_string()),
    };
    let mut outcome = Outcome::Same;
    for (c, want) in calls.iter().zip(want) {
        let got = match c.run(&f).and_then(|got| mlx_rs::eval(&got).map(|()| got)) {
            Ok(got) => got,
            Err(e) => return (Outcome::CallErr, e.to_string()),
        };
        if got.len() != want.len() {
            return (Outcome::OtherMeta, String::new());
        }
        for (g, w) in got.iter().zip(want) {
            if g.shape() != w.shape() || g.dtype() != w.dtype() {
                return (Outcome::OtherMeta, String::new());
            }
            match same_values(g, w) {
                Ok(true) => {}
                Ok(false) => outcome = Outcome::OtherValues,
                Err(e) => return (Outcome::CallErr, e.to_string()),
            }
        }
    }
    (outcome, String::new())
}

#[test]
#[ignore = "child process of every_single_bit_flip_is_ok_or_err"]
fn bit_flip_child() {
    let dir = PathBuf::from(std::env::var("MLXFN_FLIP_DIR").expect("MLXFN_FLIP_DIR"));
    let start: u64 = std::env::var("MLXFN_FLIP_START").unwrap().parse().unwrap();
    let end: u64 = std::env::var("MLXFN_FLIP_END").unwrap().parse().unwrap();
    let intact = std::fs::read(dir.join("fun.mlxfn")).unwrap();
    let calls = read_calls(&dir);
    let f = import_function(dir.join("fun.mlxfn")).unwrap();
    let want: Vec<Vec<Array>> = calls
        .iter()
        .map(|c| {
            let out = c.run(&f).unwrap();
            mlx_rs::eval(&out).unwrap();
            out
        })
        .collect();
    let flipped = dir.join(format!("flipped-{}.mlxfn", std::process::id()));
    let mut bytes = intact.clone();
    for bit in start..end.min(intact.len() as u64 * 8) {
        let (byte, mask) = ((bit / 8) as usize, 1u8 << (bit % 8));
        bytes[byte] ^= mask;
        std::fs::write(&flipped, &bytes).unwrap();
        bytes[byte] ^= mask;
        println!("start {bit}");
        let (outcome, why) = run_flip(&flipped, &calls, &want);
        println!("done {bit} {} {}", outcome.name(), why.replace('\n', " "));
    }
    std::fs::remove_file(&flipped).ok();
}

// ---- the parent ----

struct Report {
    bits: u64,
    outcomes: BTreeMap<Outcome, Vec<u64>>,
    /// Flips that killed a child, with how it ended.
    crashes: Vec<(u64, String)>,
}

/// A flip that makes no progress for this long (a hang, or an allocation of many gigabytes)
/// counts as a crash: its child is killed.
const FLIP_TIMEOUT: Duration = Duration::from_secs(60);

/// Flips per child: a fresh process now and then keeps damage that a flip does without
/// crashing at once (heap corruption, memory held) from being charged to later flips.
const FLIPS_PER_CHILD: u64 = 2000;

/// glibc's heap checker (`libc_malloc_debug`, glibc 2.34 and later), where it is installed: a
/// child that loads it aborts at the flip that corrupts the heap, instead of running on.
fn malloc_checker() -> Option<&'static str> {
    const PLACES: [&str; 4] = [
        "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0",
        "/lib/aarch64-linux-gnu/libc_malloc_debug.so.0",
        "/lib64/libc_malloc_debug.so.0",
        "/usr/lib64/libc_malloc_debug.so.0",
    ];
    if std::env::var_os("LD_PRELOAD").is_some() {
        return None;
    }
    PLACES.into_iter().find(|p| Path::new(p).exists())
}

fn flip_all(dir: &Path) -> Report {
    let bits = std::fs::metadata(dir.join("fun.mlxfn")).unwrap().len() * 8;
    let exe = std::env::current_exe().unwrap();
    let mut report = Report {
        bits,
        outcomes: BTreeMap::new(),
        crashes: Vec::new(),
    };
    let mut start = 0;
    while start < bits {
        let end = (start + FLIPS_PER_CHILD).min(bits);
        let mut command = Command::new(&exe);
        if let Some(lib) = malloc_checker() {
            command
                .env("LD_PRELOAD", lib)
                .env("GLIBC_TUNABLES", "glibc.malloc.check=3");
        }
        let mut child = command
            .args([
                "--ignored",
                "--exact",
                "bit_flip_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("MLXFN_FLIP_DIR", dir)
            .env("MLXFN_FLIP_START", start.to_string())
            .env("MLXFN_FLIP_END", end.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let reader = std::thread::spawn(move || {
            for line in stdout.lines().map_while(std::io::Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            stderr.read_to_string(&mut text).ok();
            text
        });

        let (mut running, mut last_done, mut hung) = (None, None, false);
        loop {
            let line = match lines.recv_timeout(FLIP_TIMEOUT) {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    child.kill().ok();
                    hung = true;
                    break;
                }
            };
            // libtest prints "test bit_flip_child ... " before the child's first line.
            let line = line
                .strip_prefix("test bit_flip_child ... ")
                .unwrap_or(&line);
            let mut words = line.split(' ');
            match (words.next(), words.next(), words.next()) {
                (Some("start"), Some(bit), None) => running = Some(bit.parse::<u64>().unwrap()),
                (Some("done"), Some(bit), Some(what)) => {
                    let bit = bit.parse().unwrap();
                    report
                        .outcomes
                        .entry(Outcome::parse(what))
                        .or_default()
                        .push(bit);
                    running = None;
                    last_done = Some(bit);
                }
                _ => {}
            }
        }
        let status = child.wait().unwrap();
        reader.join().unwrap();
        let stderr = stderr.join().unwrap();
        let finished = last_done == Some(end - 1) && running.is_none() && !hung;
        if finished && (status.success() || cuda_teardown_abort(&status, &stderr)) {
            start = end;
            continue;
        }
        // The child died on the flip it had started, or, after finishing a flip, while
        // dropping that flip's arrays; either way that flip is the cause.
        let Some(bad) = running.or(last_done) else {
            panic!(
                "child for {} from bit {start} ended ({status}) before its first flip:\n{stderr}",
                dir.display()
            );
        };
        let why = if hung {
            format!("no progress in {FLIP_TIMEOUT:?}, killed")
        } else {
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
            format!("{status} {}", last.unwrap_or(""))
        };
        report.crashes.push((bad, why));
        start = bad + 1;
    }
    report
}

/// A child that finished its flips and was then aborted by MLX 0.32.2's CUDA teardown as it
/// exited (`Destroy(handle_) failed: driver shutting down`, SIGABRT, load dependent: see
/// `scripts/gpu-suite`'s header): no flip caused that.
fn cuda_teardown_abort(status: &std::process::ExitStatus, stderr: &str) -> bool {
    #[cfg(unix)]
    let aborted = std::os::unix::process::ExitStatusExt::signal(status) == Some(6);
    #[cfg(not(unix))]
    let aborted = status.code().is_none();
    aborted
        && stderr
            .trim_end()
            .ends_with("what():  Destroy(handle_) failed: driver shutting down")
}

#[test]
fn every_single_bit_flip_is_ok_or_err() {
    let root = std::env::temp_dir().join(format!("mlx-rs-mlxfn-flips-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let mut failures = Vec::new();
    for (name, dir) in make_cases(&root) {
        let r = flip_all(&dir);
        let count = |o| r.outcomes.get(&o).map_or(0, Vec::len);
        println!(
            "{name}: {} flips: {} import Err, {} call Err, {} same results, {} other values, \
             {} other shapes or dtypes, {} crashes",
            r.bits,
            count(Outcome::ImportErr),
            count(Outcome::CallErr),
            count(Outcome::Same),
            count(Outcome::OtherValues),
            count(Outcome::OtherMeta),
            r.crashes.len()
        );
        if let Some(bits) = r.outcomes.get(&Outcome::OtherValues) {
            println!("  other values at bytes {:?}", bytes_of(bits));
        }
        for (bit, why) in &r.crashes {
            failures.push(format!(
                "{name}: flipping bit {bit} (byte {}) crashed: {why}",
                bit / 8
            ));
        }
        if let Some(bits) = r.outcomes.get(&Outcome::OtherMeta) {
            println!("  other shapes or dtypes at bytes {:?}", bytes_of(bits));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(the cases are kept in {})",
        failures.join("\n"),
        root.display()
    );
    std::fs::remove_dir_all(&root).ok();
}

fn bytes_of(bits: &[u64]) -> Vec<u64> {
    let mut bytes: Vec<u64> = bits.iter().map(|b| b / 8).collect();
    bytes.dedup();
    bytes
}

// ---- targeted checks on hand-written files ----

/// Writes the `.mlxfn` layout (MLX 0.32.2's `serialize` in `export.cpp`) so that each test
/// can corrupt exactly one field.
#[derive(Default)]
struct W(Vec<u8>);

const F32: (i32, u8) = (10, 4);
const I32: (i32, u8) = (7, 4);

impl W {
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend(v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend(v.to_le_bytes());
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64);
        self.0.extend(s.as_bytes());
        self
    }
    fn ids(&mut self, ids: &[u64]) -> &mut Self {
        self.u64(ids.len() as u64);
        ids.iter().for_each(|&i| {
            self.u64(i);
        });
        self
    }
    fn ints(&mut self, v: &[i32]) -> &mut Self {
        self.u64(v.len() as u64);
        v.iter().for_each(|&i| {
            self.i32(i);
        });
        self
    }
    fn dtype(&mut self, (val, size): (i32, u8)) -> &mut Self {
        self.i32(val).u8(size)
    }
    fn header(&mut self, functions: i32) -> &mut Self {
        self.str("0.32.2").i32(functions).u8(0).str("")
    }
    /// A function's signature: no keyword names, one input per `(id, shape)`, its outputs,
    /// and the tape length.
    fn signature(&mut self, inputs: &[(u64, &[i32])], outputs: &[u64], tape: u64) -> &mut Self {
        self.u64(0);
        self.ids(&inputs.iter().map(|i| i.0).collect::<Vec<_>>());
        self.u64(inputs.len() as u64);
        for (_, shape) in inputs {
            self.ints(shape).dtype(F32);
        }
        self.ids(outputs).u64(tape)
    }
    fn input_ref(&mut self, id: u64) -> &mut Self {
        self.u64(id).u8(0).u8(0)
    }
    fn constant(&mut self, id: u64, shape: &[i32], dtype: (i32, u8), data: &[u8]) -> &mut Self {
        self.u64(id).u8(0).u8(1).ints(shape).dtype(dtype);
        self.0.extend(data);
        self
    }
    /// A primitive on the CPU stream up to its state; `out` finishes it.
    fn prim(&mut self, id: u64, inputs: &[u64], name: &str) -> &mut Self {
        self.u64(id)
            .u8(1)
            .ids(inputs)
            .i32(0)
            .i32(0)
            .i32(0)
            .str(name)
    }
    /// A single output.
    fn out(&mut self, shape: &[i32], dtype: (i32, u8)) -> &mut Self {
        self.u64(0).ints(shape).dtype(dtype)
    }
}

/// `exp(x) + x` for `x` of shape [2, 3].
fn exp_add() -> W {
    let mut w = W::default();
    w.header(1).signature(&[(1, &[2, 3])], &[3], 3).input_ref(1);
    w.prim(2, &[1], "Exp").out(&[2, 3], F32);
    w.prim(3, &[1, 2], "Add").out(&[2, 3], F32);
    w
}

/// `x[idx]` for `x` of shape [4, 3] and the constant `idx` (int32).
fn gather(idx: &[i32]) -> W {
    let mut w = W::default();
    w.header(1).signature(&[(1, &[4, 3])], &[3], 3).input_ref(1);
    let data: Vec<u8> = idx.iter().flat_map(|i| i.to_le_bytes()).collect();
    w.constant(2, &[idx.len() as i32], I32, &data);
    w.prim(3, &[1, 2], "Gather").ints(&[0]).ints(&[1, 3]);
    w.out(&[idx.len() as i32, 1, 3], F32);
    w
}

fn import_bytes(name: &str, bytes: &[u8]) -> Result<ImportedFunction> {
    let path = std::env::temp_dir().join(format!(
        "mlx-rs-mlxfn-checks-{}-{name}.mlxfn",
        std::process::id()
    ));
    std::fs::write(&path, bytes).unwrap();
    let r = import_function(&path);
    std::fs::remove_file(&path).unwrap();
    r
}

/// Imports `bytes` and checks the error names the file, says what is wrong, and gives a byte.
fn expect_err(name: &str, bytes: &[u8], wanted: &str) {
    let e = match import_bytes(name, bytes) {
        Ok(_) => panic!("{name}: imported, but {wanted:?} was expected"),
        Err(e) => e,
    };
    let text = e.to_string();
    assert!(matches!(e, mlx_rs::Error::Io { .. }), "{name}: {e:?}");
    assert!(
        text.contains(&format!("{name}.mlxfn")),
        "{name}: no path in {text}"
    );
    assert!(text.contains(wanted), "{name}: {wanted:?} not in {text}");
    assert!(text.contains("byte "), "{name}: no byte offset in {text}");
}

#[test]
fn hand_written_files_import() {
    assert!(import_bytes("exp_add", &exp_add().0).is_ok());
    assert!(import_bytes("gather", &gather(&[3, -4, 0]).0).is_ok());
}

#[test]
fn truncated_files_are_errors() {
    let full = exp_add().0;
    // A fixed-size field reports the bytes it needs, a length the elements it announces.
    for cut in [0, 3, 8, 14, 30, 60, full.len() / 2, full.len() - 1] {
        let e = import_bytes("truncated", &full[..cut])
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("the file ends at byte") || e.contains("bytes left in the file"),
            "cut at {cut}: {e}"
        );
    }
}

#[test]
fn trailing_bytes_are_errors() {
    let mut w = exp_add();
    w.u8(0);
    expect_err(
        "trailing",
        &w.0,
        "1 bytes follow the last of the 1 functions",
    );
}

#[test]
fn lengths_beyond_the_file_are_errors() {
    let mut w = W::default();
    w.u64(u64::MAX);
    expect_err(
        "huge_string",
        &w.0,
        "more than the 0 bytes left in the file can hold",
    );

    // A tape of 2^40 entries in a file of a hundred bytes.
    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[1], 1 << 40);
    expect_err("huge_tape", &w.0, "tape has 1099511627776 elements");

    // A shape with 2^31 dimensions.
    let mut w = W::default();
    w.header(1).u64(0).ids(&[1]).u64(1).u64(1 << 31);
    expect_err("huge_shape", &w.0, "elements, more than the");
}

#[test]
fn header_fields_are_checked() {
    let mut w = W::default();
    w.header(-1);
    expect_err("negative_count", &w.0, "negative function count -1");

    let mut w = W::default();
    w.str("0.32.2").i32(0).u8(7).str("");
    expect_err("bad_bool", &w.0, "the shapeless flag is a bool stored as 7");
}

#[test]
fn shapes_and_dtypes_are_checked() {
    let mut w = W::default();
    w.header(1)
        .signature(&[(1, &[2, -3])], &[1], 1)
        .input_ref(1);
    expect_err("negative_dim", &w.0, "has a negative dimension -3");

    let mut w = W::default();
    w.header(1)
        .signature(&[(1, &[i32::MAX, i32::MAX, 4])], &[1], 1);
    expect_err("too_large", &w.0, "has too many elements");

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[2], 2).input_ref(1);
    w.prim(2, &[1], "Exp").out(&[2], (10, 2));
    expect_err(
        "dtype_size",
        &w.0,
        "is float32 with an element size of 2 bytes (4 expected)",
    );

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[2], 2).input_ref(1);
    w.prim(2, &[1], "Exp").out(&[2], (14, 8));
    expect_err("dtype_val", &w.0, "unknown dtype value 14");
}

#[test]
fn ids_are_checked() {
    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[2], 2).input_ref(1);
    w.prim(2, &[7], "Exp").out(&[2], F32);
    expect_err(
        "undefined_input",
        &w.0,
        "input id 7 is not defined earlier in function 1",
    );

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[9], 1).input_ref(1);
    expect_err(
        "undefined_output",
        &w.0,
        "output id 9 is not defined by its inputs or tape",
    );

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[1], 1).input_ref(5);
    expect_err(
        "not_an_input",
        &w.0,
        "refers to input id 5, which is not one of its inputs",
    );

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[2], 3).input_ref(1);
    w.prim(2, &[1], "Exp").out(&[2], F32);
    w.prim(2, &[1], "Exp").out(&[2], F32);
    expect_err("defined_twice", &w.0, "defines array id 2 twice");

    // MLX pairs input ids with inputs by index, reading past a shorter id list.
    let mut w = W::default();
    w.header(1)
        .u64(0)
        .ids(&[1])
        .u64(2)
        .ints(&[2])
        .dtype(F32)
        .ints(&[2])
        .dtype(F32);
    expect_err("input_count", &w.0, "has 1 input ids for 2 inputs");
}

#[test]
fn primitives_are_checked() {
    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[2], 2).input_ref(1);
    w.prim(2, &[1], "Frobnicate").out(&[2], F32);
    expect_err(
        "unknown_primitive",
        &w.0,
        "unknown primitive \"Frobnicate\"",
    );

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2, 3])], &[2], 2).input_ref(1);
    w.prim(2, &[1], "Exp").out(&[3, 3], F32);
    expect_err(
        "wrong_shape",
        &w.0,
        "Exp (array id 2): output is [3, 3] float32, but its inputs and state make [2, 3] float32",
    );

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2, 3])], &[2], 2).input_ref(1);
    w.prim(2, &[1, 1], "Matmul").out(&[2, 3], F32);
    expect_err("matmul", &w.0, "cannot multiply [2, 3] by [2, 3]");

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2, 3])], &[2], 2).input_ref(1);
    w.prim(2, &[1], "Reduce")
        .i32(9)
        .ints(&[0])
        .out(&[1, 3], F32);
    expect_err("reduce_type", &w.0, "unknown reduction 9");

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2, 3])], &[2], 2).input_ref(1);
    w.prim(2, &[1], "Reduce")
        .i32(2)
        .ints(&[2])
        .out(&[2, 3], F32);
    expect_err(
        "reduce_axis",
        &w.0,
        "axis 2 is out of range for 2 dimensions",
    );

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2, 3])], &[2], 2).input_ref(1);
    w.prim(2, &[1], "Reshape").ints(&[4, -1]).out(&[4, 1], F32);
    expect_err("reshape", &w.0, "cannot reshape [2, 3] to [4, -1]");

    let mut w = W::default();
    w.header(1).signature(&[(1, &[4])], &[2], 2).input_ref(1);
    w.prim(2, &[1], "Slice")
        .ints(&[2])
        .ints(&[6])
        .ints(&[1])
        .out(&[4], F32);
    expect_err("slice", &w.0, "axis 0 of size 4 is read from 2 to 5");

    let mut w = W::default();
    w.header(1).signature(&[(1, &[4])], &[2], 2).input_ref(1);
    w.prim(2, &[1], "Sin").out(&[4], (7, 4));
    expect_err(
        "dtype_mismatch",
        &w.0,
        "output is [4] int32, but its inputs and state make [4] float32",
    );

    // A multi-output primitive whose lists of ids, shapes and dtypes disagree.
    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[2], 2).input_ref(1);
    w.prim(2, &[1, 1], "DivMod")
        .u64(1)
        .ids(&[2])
        .u64(2)
        .ints(&[2])
        .ints(&[2])
        .u64(2);
    w.dtype(F32).dtype(F32);
    expect_err(
        "siblings",
        &w.0,
        "DivMod has 1 siblings, 1 output ids, 2 shapes and 2 dtypes",
    );

    // Siblings but empty lists: the expected shape count was `0 - 1` (an overflow panic;
    // found by the fuzz harness).
    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[2], 2).input_ref(1);
    w.prim(2, &[1, 1], "DivMod").u64(1).ids(&[]).u64(0).u64(0);
    expect_err(
        "no_siblings_listed",
        &w.0,
        "DivMod has 1 siblings, 0 output ids, 0 shapes and 0 dtypes",
    );

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[2], 2).input_ref(1);
    w.u64(2)
        .u8(1)
        .ids(&[1])
        .i32(0)
        .i32(5)
        .i32(0)
        .str("Exp")
        .out(&[2], F32);
    expect_err("device", &w.0, "stream names device type 5, index 0");

    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[2], 2).input_ref(1);
    w.prim(2, &[1], "CustomKernel")
        .str("k")
        .str("source")
        .i32(1)
        .i32(1)
        .i32(1);
    w.i32(1)
        .i32(1)
        .i32(1)
        .u64(0)
        .u8(0)
        .u8(0)
        .u64(0)
        .u8(0)
        .i32(0)
        .i32(0)
        .out(&[2], F32);
    expect_err(
        "custom_kernel",
        &w.0,
        "holds custom kernel source, which cannot be checked",
    );
}

#[test]
fn constants_are_checked() {
    let mut w = W::default();
    w.header(1).signature(&[(1, &[2])], &[2], 2).input_ref(1);
    w.constant(2, &[4], F32, &[0; 8]);
    expect_err(
        "constant_data",
        &w.0,
        "the data of constant 2 needs 16 bytes",
    );

    expect_err(
        "index_range",
        &gather(&[1, 4]).0,
        "Gather (tape entry at byte 149) takes a constant whose element 1 is 4, out of \
         range for an axis of size 4 (slice of 1)",
    );
    expect_err(
        "negative_index",
        &gather(&[-5]).0,
        "element 0 is -5, out of range",
    );
}

#[test]
fn keyword_names_are_checked() {
    let mut w = W::default();
    w.header(1).u64(2).str("b").str("a");
    expect_err(
        "kwargs_order",
        &w.0,
        "keyword names are not sorted and unique",
    );
}

#[test]
fn constant_divisors_are_checked() {
    // `x // d` for integer `x` and the constant `d`, broadcast to the shape of `x`.
    let divide = |d: i32| {
        let mut w = W::default();
        w.header(1)
            .u64(0)
            .ids(&[1])
            .u64(1)
            .ints(&[3])
            .dtype(I32)
            .ids(&[4])
            .u64(4);
        w.input_ref(1).constant(2, &[], I32, &d.to_le_bytes());
        w.prim(3, &[2], "Broadcast").ints(&[3]).out(&[3], I32);
        w.prim(4, &[1, 3], "Divide").out(&[3], I32);
        w.0
    };
    assert!(import_bytes("divide", &divide(7)).is_ok());
    expect_err("divide_by_zero", &divide(0), "an integer division by zero");
}

#[test]
fn computed_indices_are_checked() {
    // `take_along_axis(x, argsort(x, 1), axis)` for `x` of shape [2, 3]: the indices run to 2,
    // which fits axis 1 but not axis 0.
    let take = |axis: i32| {
        let mut w = W::default();
        w.header(1).signature(&[(1, &[2, 3])], &[3], 3).input_ref(1);
        w.prim(2, &[1], "ArgSort").i32(1).out(&[2, 3], (3, 4));
        w.prim(3, &[1, 2], "GatherAxis").i32(axis).out(&[2, 3], F32);
        w.0
    };
    assert!(import_bytes("take_axis_1", &take(1)).is_ok());
    expect_err(
        "take_axis_0",
        &take(0),
        "takes values computed in the graph that can be 2, out of range for an axis of size 2",
    );
}

/// Every file Python MLX 0.32.2 exported for `scripts/golden/mlxfn.py` passes the validator:
/// its checks are MLX's own invariants, so no file MLX writes may trip them.
#[test]
fn python_exports_import() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/mlxfn_corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "mlxfn"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 30,
        "{} files in {}",
        files.len(),
        dir.display()
    );
    let failed: Vec<String> = files
        .iter()
        .filter_map(|f| import_function(f).err().map(|e| e.to_string()))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(import_function(kwargs_file()).is_ok());
}

#[test]
fn indices_computed_from_constants_are_checked() {
    // `x[max(min(idx, 3), low)]` for `x` of shape [4, 3] and the constant `idx` = [1, 0]: the
    // clamp mlx-rs's `take` builds, with its lower bound `low`.
    let clamped = |low: i32| {
        let mut w = W::default();
        w.header(1).signature(&[(1, &[4, 3])], &[9], 9).input_ref(1);
        let idx: Vec<u8> = [1i32, 0].iter().flat_map(|i| i.to_le_bytes()).collect();
        w.constant(2, &[2], I32, &idx)
            .constant(3, &[], I32, &3i32.to_le_bytes());
        w.prim(4, &[3], "Broadcast").ints(&[2]).out(&[2], I32);
        w.prim(5, &[2, 4], "Minimum").out(&[2], I32);
        w.constant(6, &[], I32, &low.to_le_bytes());
        w.prim(7, &[6], "Broadcast").ints(&[2]).out(&[2], I32);
        w.prim(8, &[5, 7], "Maximum").out(&[2], I32);
        w.prim(9, &[1, 8], "Gather").ints(&[0]).ints(&[1, 3]);
        w.out(&[2, 1, 3], F32);
        w.0
    };
    assert!(import_bytes("clamped", &clamped(0)).is_ok());
    expect_err(
        "clamped_low",
        &clamped(9),
        "takes values the file fixes, whose element 0 is 9, out of range for an axis of size 4",
    );
}
