//! A lazy read that fails stays failed: after a loaded file is truncated or rewritten, or a
//! reader fails, the eval that reads it is an `Err`, and so is every later eval of the
//! arrays it was to fill and of anything computed from them, whenever that was built. MLX by
//! itself returns the unread buffers (and can lose the error of a failed file read).

use std::collections::HashMap;
use std::io::{Cursor, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mlx_rs::{io, ops, Array, Result};

fn scratch(test: &str, ext: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-rs-failed-reads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{test}.{ext}"))
}

fn values(n: usize, scale: f32) -> Array {
    let v: Vec<f32> = (0..n).map(|i| i as f32 * scale).collect();
    Array::from_slice(&v, &[n as i32]).unwrap()
}

/// Saves `a` (1000 floats) and `b` (10 floats) and returns the path.
fn saved(test: &str) -> PathBuf {
    let path = scratch(test, "safetensors");
    let arrays = HashMap::from([
        ("a".to_string(), values(1000, 1.0)),
        ("b".to_string(), values(10, 2.0)),
    ]);
    io::save_safetensors(&path, &arrays, None).unwrap();
    path
}

fn assert_failed<T: std::fmt::Debug>(what: &str, r: Result<T>) {
    let err = r.expect_err(what).to_string();
    assert!(err.contains("lazy read failed"), "{what}: {err}");
}

#[test]
fn truncated_file_fails_every_later_eval() {
    let path = saved("truncated");
    let (loaded, _) = io::load_safetensors(&path).unwrap();
    let x = loaded["a"].clone();
    // Built before the failure: computed from x.
    let before = ops::add(&x, 1.0).unwrap();
    let doubled = ops::multiply(&x, 2.0).unwrap();
    let sum = ops::sum(&doubled, None, false).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(100)
        .unwrap();
    let err = sum
        .eval()
        .expect_err("the read of a truncated file")
        .to_string();
    assert!(
        err.contains("changed size") && err.contains("truncated.safetensors"),
        "{err}"
    );
    assert_failed("eval again", sum.eval());
    assert_failed("the loaded array", x.eval());
    assert_failed("to_vec", x.to_vec::<f32>());
    assert_failed("an intermediate of the failed eval", doubled.eval());
    assert_failed("built before the failure", before.eval());
    assert_failed(
        "built after the failure",
        ops::subtract(&x, 1.0).unwrap().eval(),
    );
    assert_failed("several at once", mlx_rs::eval([&values(3, 1.0), &before]));
    // The other array of the load reads the same changed file.
    assert!(loaded["b"].eval().is_err());
    // Arrays that do not depend on the failed read are unaffected.
    assert_eq!(
        ops::add(values(3, 1.0), 1.0)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        [1.0, 2.0, 3.0]
    );
}

#[test]
fn rewritten_file_of_the_same_size_fails() {
    let path = saved("rewritten");
    let (loaded, _) = io::load_safetensors(&path).unwrap();
    {
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let len = f.metadata().unwrap().len();
        f.seek(SeekFrom::Start(len - 40)).unwrap();
        f.write_all(&[0xff; 40]).unwrap();
        // A later modification time, whatever the file system's clock granularity.
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
    }
    let err = loaded["a"].eval().expect_err("rewritten").to_string();
    assert!(err.contains("modified since it was loaded"), "{err}");
    assert_failed("again", loaded["a"].eval());
}

#[test]
fn npy_path_load_detects_truncation() {
    let path = scratch("truncated", "npy");
    io::save(&path, &values(100, 1.0)).unwrap();
    let x = io::load_npy(&path).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(64)
        .unwrap();
    assert!(x.eval().is_err());
    assert_failed("again", x.to_vec::<f32>());
}

#[test]
fn a_file_replaced_by_rename_still_reads_the_loaded_file() {
    let path = saved("renamed");
    let (loaded, _) = io::load_safetensors(&path).unwrap();
    let other = scratch("renamed-new", "safetensors");
    let arrays = HashMap::from([("a".to_string(), values(1000, -1.0))]);
    io::save_safetensors(&other, &arrays, None).unwrap();
    std::fs::rename(&other, &path).unwrap();
    assert_eq!(loaded["a"].to_vec::<f32>().unwrap()[..3], [0.0, 1.0, 2.0]);
}

#[test]
fn arrays_read_before_a_change_keep_their_values() {
    let path = saved("read-first");
    let (loaded, _) = io::load_safetensors(&path).unwrap();
    mlx_rs::eval(loaded.values()).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    assert_eq!(loaded["b"].to_vec::<f32>().unwrap()[..2], [0.0, 2.0]);
    assert_eq!(
        ops::add(&loaded["a"], 1.0)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()[..2],
        [1.0, 2.0]
    );
}

/// A reader that fails every read once `broken` is set.
struct Breakable {
    inner: Cursor<Vec<u8>>,
    broken: Arc<AtomicBool>,
}

impl Read for Breakable {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.broken.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("the disk went away"));
        }
        self.inner.read(buf)
    }
}

impl Seek for Breakable {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

fn breakable() -> (Breakable, Arc<AtomicBool>) {
    let arrays = HashMap::from([("a".to_string(), values(50, 1.0))]);
    let bytes = io::save_safetensors_to_writer(Cursor::new(Vec::new()), &arrays, None)
        .unwrap()
        .into_inner();
    let broken = Arc::new(AtomicBool::new(false));
    let reader = Breakable {
        inner: Cursor::new(bytes),
        broken: Arc::clone(&broken),
    };
    (reader, broken)
}

#[test]
fn failing_reader_fails_every_later_eval() {
    let (reader, broken) = breakable();
    let (loaded, _) = io::load_safetensors_from_reader(reader).unwrap();
    let x = &loaded["a"];
    broken.store(true, Ordering::SeqCst);
    let err = x.eval().expect_err("the reader fails").to_string();
    assert!(err.contains("the disk went away"), "{err}");
    // The reader works again, but the array was not read: it stays failed.
    broken.store(false, Ordering::SeqCst);
    assert_failed("again", x.eval());
    assert_failed("derived", ops::exp(x).unwrap().eval());
}

#[test]
fn async_eval_failure_is_found_by_the_next_eval() {
    let (reader, broken) = breakable();
    let (loaded, _) = io::load_safetensors_from_reader(reader).unwrap();
    let y = ops::negative(&loaded["a"]).unwrap();
    broken.store(true, Ordering::SeqCst);
    // The read fails on MLX's threads; the async eval itself may return first.
    let _ = mlx_rs::async_eval([&y]);
    assert!(y.eval().is_err());
    assert_failed("again", y.to_vec::<f32>());
    assert_failed("the loaded array", loaded["a"].eval());
}

#[test]
fn working_reader_loads_read_once_and_then_cost_nothing() {
    let (reader, _) = breakable();
    let (loaded, _) = io::load_safetensors_from_reader(reader).unwrap();
    assert_eq!(loaded["a"].to_vec::<f32>().unwrap()[..3], [0.0, 1.0, 2.0]);
    assert_eq!(
        ops::add(&loaded["a"], 1.0)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()[..2],
        [1.0, 2.0]
    );
}
