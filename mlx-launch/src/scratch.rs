//! Each rank's temporary folder: its own while it runs, the same from one launch to the next.
//!
//! MLX keeps two kernel caches under `$TMPDIR/mlx/<version>`: fused CPU kernels (`cpu/`)
//! and, on CUDA, the PTX that NVRTC compiled for fused GPU kernels (`ptx/`). Neither is safe
//! to share between processes running at once: MLX writes a cache file in place, and a
//! process reading it meanwhile gets a short file ("file too short" when loading a CPU
//! kernel, a failed module load on a GPU). So ranks may not share a folder, and yet a fresh
//! folder per launch makes every launch compile every kernel again in every rank (90 s and
//! more on an H100 for a language model's training step).
//!
//! The launcher therefore gives each rank a *slot*: a numbered folder under
//! `$TMPDIR/mlx-launch-ranks/` that it holds an exclusive lock on (`flock`, released when
//! the launcher lets go or dies) for as long as the group runs. A launch claims the lowest
//! free slots, so launches one after another find their caches warm, and launches at the
//! same time (tests start several) never share one.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use fs4::FileExt;

/// More slots than this means locks are not working as they should; the launcher then
/// falls back to a fresh folder per launch.
const MAX_SLOTS: usize = 4096;

/// A folder that this process alone hands out until the value is dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    path: PathBuf,
    // Held for its lock; closing the file releases it.
    _lock: File,
}

impl Slot {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// The shared root the launcher claims slots under.
pub(crate) fn default_root() -> PathBuf {
    std::env::temp_dir().join("mlx-launch-ranks")
}

/// Claims the lowest-numbered free slot under `root`, creating it if need be. A slot this
/// process holds is not free either: `flock` locks belong to the open file, not the process.
pub(crate) fn claim(root: &Path) -> std::io::Result<Slot> {
    std::fs::create_dir_all(root)?;
    for k in 0..MAX_SLOTS {
        let path = root.join(format!("slot-{k}"));
        std::fs::create_dir_all(&path)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.join(".lock"))?;
        // Fully qualified: on Rust 1.89 and later `File` has an inherent `try_lock` too.
        match FileExt::try_lock(&lock) {
            Ok(()) => return Ok(Slot { path, _lock: lock }),
            Err(fs4::TryLockError::WouldBlock) => continue,
            Err(fs4::TryLockError::Error(e)) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "all {MAX_SLOTS} slots under {} are locked",
        root.display()
    )))
}

/// `n` slots, or the first error.
pub(crate) fn claim_n(root: &Path, n: usize) -> std::io::Result<Vec<Slot>> {
    (0..n).map(|_| claim(root)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(name: &str) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("mlx-scratch-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        root
    }

    #[test]
    fn held_slots_are_not_handed_out_again_and_freed_ones_are() {
        let root = root("reuse");
        let first = claim_n(&root, 2).unwrap();
        assert_eq!(first[0].path(), root.join("slot-0"));
        assert_eq!(first[1].path(), root.join("slot-1"));
        // A second group while the first holds its slots: new folders.
        let second = claim_n(&root, 2).unwrap();
        assert_eq!(second[0].path(), root.join("slot-2"));
        assert_eq!(second[1].path(), root.join("slot-3"));
        // The first group ends: the next one finds its folders (and their caches) again.
        std::fs::write(first[0].path().join("cache"), b"warm").unwrap();
        drop(first);
        let third = claim_n(&root, 1).unwrap();
        assert_eq!(third[0].path(), root.join("slot-0"));
        assert_eq!(
            std::fs::read(third[0].path().join("cache")).unwrap(),
            b"warm"
        );
        drop((second, third));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_slot_held_by_another_process_is_skipped() {
        // flock conflicts between open file descriptions, so a lock taken through a second
        // handle (as another process would hold it) must be respected.
        let root = root("foreign");
        std::fs::create_dir_all(root.join("slot-0")).unwrap();
        let foreign = File::create(root.join("slot-0").join(".lock")).unwrap();
        FileExt::try_lock(&foreign).unwrap();
        let slot = claim(&root).unwrap();
        assert_eq!(slot.path(), root.join("slot-1"));
        drop((slot, foreign));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_unusable_root_is_an_error() {
        let root = root("file");
        std::fs::write(&root, b"not a folder").unwrap();
        assert!(claim(&root).is_err());
        std::fs::remove_file(&root).unwrap();
    }
}
