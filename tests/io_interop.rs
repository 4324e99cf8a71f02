//! mlx_rs::io: files written by Python MLX 0.32.2 load in Rust with identical values and
//! metadata (committed fixtures from `scripts/golden/io.py`), files written by Rust load in
//! Python (when a Python with MLX is found), and corrupt or truncated files are `Err`s.

mod support;

use std::collections::HashMap;
use std::io::{Cursor, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mlx::core::io::{self, GgufMetadata};
use mlx::core::{Array, Dtype};
use serde_json::Value;
use support::golden::{assert_exact, load};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn fixture(name: &str) -> PathBuf {
    support::golden::data_file("fixtures").join(name)
}

/// A fresh scratch folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-rs-io-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn expected_metadata(g: &Value) -> HashMap<String, String> {
    serde_json::from_value(g["metadata"].clone()).unwrap()
}

fn check_arrays(arrays: &HashMap<String, Array>, expected: &Value, what: &str) {
    let expected = expected.as_object().unwrap();
    let mut names: Vec<_> = arrays.keys().cloned().collect();
    names.sort();
    let mut want: Vec<_> = expected.keys().cloned().collect();
    want.sort();
    assert_eq!(names, want, "{what}: array names");
    for (name, record) in expected {
        assert_exact(&arrays[name], record, &format!("{what}: {name}"));
    }
}

#[test]
fn python_safetensors_load_with_values_and_metadata() {
    let g = load("io");
    let (arrays, metadata) = io::load_safetensors(fixture("py_weights.safetensors")).unwrap();
    check_arrays(&arrays, &g["arrays"], "safetensors from path");
    assert_eq!(metadata, expected_metadata(&g));

    let bytes = std::fs::read(fixture("py_weights.safetensors")).unwrap();
    let (arrays, metadata) = io::load_safetensors_from_reader(Cursor::new(bytes)).unwrap();
    check_arrays(&arrays, &g["arrays"], "safetensors from reader");
    assert_eq!(metadata, expected_metadata(&g));

    let file = std::fs::File::open(fixture("py_weights.safetensors")).unwrap();
    let (arrays, _) = io::load_safetensors_from_reader(file).unwrap();
    check_arrays(&arrays, &g["arrays"], "safetensors from a File reader");
}

#[test]
fn python_npy_loads_from_paths_and_readers() {
    let g = load("io");
    for name in g["npy"].as_array().unwrap() {
        let name = name.as_str().unwrap();
        let path = fixture(&format!("py_{name}.npy"));
        let a = io::load_npy(&path).unwrap();
        assert_exact(&a, &g["arrays"][name], &format!("npy {name}"));
        let a = io::load_npy_from_reader(Cursor::new(std::fs::read(&path).unwrap())).unwrap();
        assert_exact(&a, &g["arrays"][name], &format!("npy reader {name}"));
    }
}

#[test]
fn python_gguf_loads_with_metadata() {
    let g = load("io");
    // MLX maps GGUF files read-write, so load a copy rather than the committed file.
    let dir = scratch("gguf");
    let path = dir.join("model.gguf");
    std::fs::copy(fixture("py_model.gguf"), &path).unwrap();
    let (arrays, metadata) = io::load_gguf(&path).unwrap();
    check_arrays(&arrays, &g["gguf_arrays"], "gguf");
    let want = g["gguf_metadata"].as_object().unwrap();
    assert_eq!(metadata.len(), want.len(), "{metadata:?}");
    for (key, expected) in want {
        match (&metadata[key], expected) {
            (GgufMetadata::String(s), Value::String(e)) => assert_eq!(s, e, "{key}"),
            (GgufMetadata::Strings(v), Value::Array(e)) => {
                let e: Vec<String> = e.iter().map(|s| s.as_str().unwrap().to_string()).collect();
                assert_eq!(v, &e, "{key}");
            }
            (GgufMetadata::Array(a), record) => assert_exact(a, record, key),
            (got, want) => panic!("{key}: got {got:?}, expected {want}"),
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Rust re-saves what it loaded from the Python fixtures; Python then checks the files.
#[test]
fn rust_written_files_load_in_rust_and_python() {
    let g = load("io");
    let dir = scratch("roundtrip");
    let (arrays, metadata) = io::load_safetensors(fixture("py_weights.safetensors")).unwrap();

    io::save_safetensors(
        dir.join("rust_weights.safetensors"),
        &arrays,
        Some(&metadata),
    )
    .unwrap();
    let (back, meta) = io::load_safetensors(dir.join("rust_weights.safetensors")).unwrap();
    check_arrays(&back, &g["arrays"], "rust safetensors");
    assert_eq!(meta, metadata);

    let cursor =
        io::save_safetensors_to_writer(Cursor::new(Vec::new()), &arrays, Some(&metadata)).unwrap();
    std::fs::write(dir.join("rust_writer.safetensors"), cursor.get_ref()).unwrap();
    let (back, _) = io::load_safetensors_from_reader(Cursor::new(cursor.into_inner())).unwrap();
    check_arrays(&back, &g["arrays"], "rust safetensors via writer");

    for name in g["npy"].as_array().unwrap() {
        let name = name.as_str().unwrap();
        // `save` appends ".npy", as Python's mx.save does.
        io::save(dir.join(format!("rust_{name}")), &arrays[name]).unwrap();
        let back = io::load_npy(dir.join(format!("rust_{name}.npy"))).unwrap();
        assert_exact(&back, &g["arrays"][name], &format!("rust npy {name}"));
        let w = io::save_npy_to_writer(Cursor::new(Vec::new()), &arrays[name]).unwrap();
        let on_disk = std::fs::read(dir.join(format!("rust_{name}.npy"))).unwrap();
        assert_eq!(
            w.get_ref(),
            &on_disk,
            "npy via writer equals npy via path: {name}"
        );
    }

    let gguf_path = dir.join("py_model.gguf");
    std::fs::copy(fixture("py_model.gguf"), &gguf_path).unwrap();
    let (garrays, gmeta) = io::load_gguf(&gguf_path).unwrap();
    io::save_gguf(dir.join("rust_model.gguf"), &garrays, &gmeta).unwrap();
    let (back, back_meta) = io::load_gguf(dir.join("rust_model.gguf")).unwrap();
    check_arrays(&back, &g["gguf_arrays"], "rust gguf");
    assert_eq!(back_meta.len(), gmeta.len());

    match python() {
        Some(py) => {
            let out = std::process::Command::new(&py)
                .arg("io.py")
                .arg("check")
                .arg(&dir)
                .current_dir(Path::new(ROOT).join("scripts/golden"))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "python check failed: {text}");
            println!("{}", text.trim());
        }
        None => println!(
            "SKIPPED the Python half: no Python with MLX 0.32.2 found (set MLX_PYTHON, or create \
             .venv with scripts/python-venv); the committed fixtures were still checked"
        ),
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A Python interpreter that imports MLX 0.32.2: $MLX_PYTHON or the repository's .venv
/// (scripts/python-venv).
fn python() -> Option<PathBuf> {
    let candidates = std::env::var_os("MLX_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([Path::new(ROOT).join(".venv/bin/python")]);
    candidates.into_iter().find(|py| {
        std::process::Command::new(py)
            .args([
                "-c",
                "import mlx.core as mx; assert mx.__version__ == '0.32.2'",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn corrupt_safetensors_are_errors() {
    let dir = scratch("bad_safetensors");
    let good = std::fs::read(fixture("py_weights.safetensors")).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated data", good[..good.len() - 10].to_vec()),
        ("truncated header", good[..20].to_vec()),
        ("too short for a length", good[..4].to_vec()),
        (
            "huge header length",
            [&u64::MAX.to_le_bytes()[..], &good[8..]].concat(),
        ),
        ("bad json", {
            let mut b = good.clone();
            b[8] = b'!';
            b
        }),
        ("empty", Vec::new()),
    ];
    for (what, bytes) in cases {
        let path = dir.join("bad.safetensors");
        std::fs::write(&path, &bytes).unwrap();
        let err = io::load_safetensors(&path).map(|_| ()).unwrap_err();
        assert!(!err.to_string().is_empty(), "{what}");
        let err = io::load_safetensors_from_reader(Cursor::new(bytes))
            .map(|_| ())
            .unwrap_err();
        assert!(
            err.to_string().contains("safetensors") || err.to_string().contains("read"),
            "{what}: {err}"
        );
    }
    let missing = io::load_safetensors(dir.join("missing.safetensors"))
        .map(|_| ())
        .unwrap_err();
    assert!(missing.to_string().contains("Failed to open"), "{missing}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn corrupt_npy_files_are_errors() {
    let dir = scratch("bad_npy");
    let good = std::fs::read(fixture("py_f32.npy")).unwrap();
    let path = dir.join("truncated.npy");
    std::fs::write(&path, &good[..good.len() - 4]).unwrap();
    let err = io::load_npy(&path).unwrap_err().to_string();
    assert!(err.contains("truncated .npy"), "{err}");
    let err = io::load_npy_from_reader(Cursor::new(good[..good.len() - 4].to_vec()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("truncated .npy"), "{err}");
    let mut bad_magic = good.clone();
    bad_magic[1] = b'X';
    std::fs::write(&path, &bad_magic).unwrap();
    assert!(io::load_npy(&path)
        .unwrap_err()
        .to_string()
        .contains("bad magic"));
    std::fs::write(&path, &good[..5]).unwrap();
    assert!(io::load_npy(&path).is_err());
    let mut bad_header = good.clone();
    for b in &mut bad_header[10..40] {
        *b = b'?';
    }
    std::fs::write(&path, &bad_header).unwrap();
    assert!(io::load_npy(&path).is_err());
    assert!(io::load_npy(dir.join("missing.npy")).is_err());
    let _ = std::fs::remove_dir_all(dir);
}

/// Builds GGUF bytes: one string metadata entry and one float32 tensor.
fn gguf_bytes(ndim: u32, alignment: Option<u32>, name_len: Option<u64>) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"GGUF");
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes()); // tensors
    b.extend_from_slice(&(1 + u64::from(alignment.is_some())).to_le_bytes()); // kv
    let key = b"general.name";
    b.extend_from_slice(&(key.len() as u64).to_le_bytes());
    b.extend_from_slice(key);
    b.extend_from_slice(&8u32.to_le_bytes());
    b.extend_from_slice(&4u64.to_le_bytes());
    b.extend_from_slice(b"test");
    if let Some(a) = alignment {
        let key = b"general.alignment";
        b.extend_from_slice(&(key.len() as u64).to_le_bytes());
        b.extend_from_slice(key);
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(&a.to_le_bytes());
    }
    let name = b"w";
    b.extend_from_slice(&name_len.unwrap_or(name.len() as u64).to_le_bytes());
    b.extend_from_slice(name);
    b.extend_from_slice(&ndim.to_le_bytes());
    // Dimensions [4, 1, 1, ...]: four elements whatever the rank.
    b.extend_from_slice(&4u64.to_le_bytes());
    for _ in 1..ndim {
        b.extend_from_slice(&1u64.to_le_bytes());
    }
    b.extend_from_slice(&0u32.to_le_bytes()); // f32
    b.extend_from_slice(&0u64.to_le_bytes()); // offset
    while b.len() % 32 != 0 {
        b.push(0);
    }
    for v in [1.0f32, 2.0, 3.0, 4.0] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b
}

#[test]
fn corrupt_gguf_files_are_errors_not_aborts() {
    let dir = scratch("bad_gguf");
    let path = dir.join("m.gguf");
    // The builder itself makes a valid file.
    std::fs::write(&path, gguf_bytes(1, None, None)).unwrap();
    let (arrays, meta) = io::load_gguf(&path).unwrap();
    assert_eq!(
        arrays["w"].to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 3.0, 4.0]
    );
    assert!(matches!(&meta["general.name"], GgufMetadata::String(s) if s == "test"));

    let good = gguf_bytes(1, None, None);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        // gguflib asserts ndim <= 8: without the Rust check this aborts the process.
        ("9 dimensions", gguf_bytes(9, None, None), "dimensions"),
        // gguflib divides by the alignment.
        ("zero alignment", gguf_bytes(1, Some(0), None), "alignment"),
        (
            "name past the end",
            gguf_bytes(1, None, Some(1 << 40)),
            "needs",
        ),
        ("truncated tensor info", good[..60].to_vec(), "needs"),
        (
            "truncated data",
            good[..good.len() - 4].to_vec(),
            "past the end",
        ),
        ("bad magic", [b"GGUX", &good[4..]].concat(), "GGUF"),
        ("header only", good[..10].to_vec(), "needs"),
        ("empty", Vec::new(), "needs"),
    ];
    for (what, bytes, expect) in cases {
        std::fs::write(&path, &bytes).unwrap();
        let err = io::load_gguf(&path).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains(expect), "{what}: {err}");
    }
    assert!(io::load_gguf(dir.join("missing.gguf")).is_err());
    let bad_alignment = HashMap::from([(
        "general.alignment".to_string(),
        GgufMetadata::Array(Array::from_scalar(4096u32)),
    )]);
    let none: HashMap<String, Array> = HashMap::new();
    assert!(io::save_gguf(dir.join("x.gguf"), &none, &bad_alignment).is_err());
    let _ = std::fs::remove_dir_all(dir);
}

/// A reader that counts its drops and can fail or panic after some bytes.
struct Flaky {
    inner: Cursor<Vec<u8>>,
    fail_after: Option<u64>,
    panic: bool,
    drops: Arc<AtomicUsize>,
}

impl Read for Flaky {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(limit) = self.fail_after {
            if self.inner.position() + buf.len() as u64 > limit {
                if self.panic {
                    panic!("reader panicked on purpose");
                }
                return Err(std::io::Error::other("disk on fire"));
            }
        }
        self.inner.read(buf)
    }
}

impl Seek for Flaky {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

impl Drop for Flaky {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn flaky(bytes: Vec<u8>, fail_after: Option<u64>, panic: bool) -> (Flaky, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let r = Flaky {
        inner: Cursor::new(bytes),
        fail_after,
        panic,
        drops: Arc::clone(&drops),
    };
    (r, drops)
}

#[test]
fn reader_is_freed_exactly_once_and_failures_are_errors() {
    let bytes = std::fs::read(fixture("py_weights.safetensors")).unwrap();
    // Success: the reader lives while lazy arrays need it, then is dropped once.
    let (r, drops) = flaky(bytes.clone(), None, false);
    let (arrays, _) = io::load_safetensors_from_reader(r).unwrap();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "arrays still need the reader"
    );
    mlx::core::eval(&arrays).unwrap();
    drop(arrays);
    assert_eq!(drops.load(Ordering::SeqCst), 1);

    // Failure while parsing the header: Err, reader dropped once.
    let (r, drops) = flaky(bytes.clone(), Some(16), false);
    let err = io::load_safetensors_from_reader(r).map(|_| ()).unwrap_err();
    assert!(err.to_string().contains("mlx_io_reader"), "{err}");
    assert_eq!(drops.load(Ordering::SeqCst), 1);

    // A panic inside the reader is caught at the FFI boundary.
    let (r, drops) = flaky(bytes.clone(), Some(16), true);
    assert!(io::load_safetensors_from_reader(r).is_err());
    assert_eq!(drops.load(Ordering::SeqCst), 1);

    // Failure while reading the data lazily: the error comes from eval.
    let (r, drops) = flaky(bytes.clone(), Some(bytes.len() as u64 - 40), false);
    let (arrays, _) = io::load_safetensors_from_reader(r).unwrap();
    let result = mlx::core::eval(&arrays);
    assert!(result.is_err(), "a failing reader must surface at eval");
    drop(arrays);
    // eval returns at the first failed read; reads of other arrays already queued on MLX's IO
    // threads still hold the reader until they finish, so wait for those before counting.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while drops.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

/// A writer that refuses to write.
struct Full;

impl Write for Full {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("no space left"))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for Full {
    fn seek(&mut self, _: SeekFrom) -> std::io::Result<u64> {
        Ok(0)
    }
}

#[test]
fn failing_writers_and_bad_names_are_errors() {
    let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let err = io::save_npy_to_writer(Full, &a).map(|_| ()).unwrap_err();
    assert!(err.to_string().contains("mlx_io_writer"), "{err}");
    let arrays = HashMap::from([("a".to_string(), a.clone())]);
    assert!(io::save_safetensors_to_writer(Full, &arrays, None).is_err());
    let bad = HashMap::from([("a\0b".to_string(), a.clone())]);
    let err =
        io::save_safetensors(std::env::temp_dir().join("x.safetensors"), &bad, None).unwrap_err();
    assert!(err.to_string().contains("NUL"), "{err}");
    let c64 = a.astype(Dtype::Complex64).unwrap();
    let dir = scratch("bad_save");
    let err = io::save_gguf(
        dir.join("c.gguf"),
        &HashMap::from([("c", c64)]),
        &HashMap::<String, GgufMetadata>::new(),
    );
    assert!(err.is_err());
    let _ = std::fs::remove_dir_all(dir);
}
