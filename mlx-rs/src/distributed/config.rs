//! The launch environment MLX's backends read, checked before MLX reads it.
//!
//! A launcher (`mlx.launch`, or the `mlx-launch` crate's `Launch`) starts one process per rank and
//! tells each, through the environment, where it is:
//!
//! | backend | variables |
//! |---|---|
//! | ring | `MLX_RANK`; `MLX_HOSTFILE`, a JSON file listing each rank's `"ip:port"` addresses: `[["127.0.0.1:5000"], ["127.0.0.1:5001"]]` |
//! | nccl | `MLX_RANK`, `MLX_WORLD_SIZE`, `NCCL_HOST_IP` and `NCCL_PORT` (rank 0's address) |
//!
//! MLX reads the rank with `atoi` and indexes the hostfile with it, so a rank that is not a
//! number, negative or past the hostfile reads out of bounds, and a one-rank ring connects to
//! itself and waits forever. [`init`](super::init) checks all of it first.

use std::collections::HashSet;
use std::path::Path;

use crate::{Error, Result};

/// `MLX_RANK`: this process's rank.
pub const RANK: &str = "MLX_RANK";
/// `MLX_HOSTFILE`: the ring backend's hostfile.
pub const HOSTFILE: &str = "MLX_HOSTFILE";
/// `MLX_WORLD_SIZE`: the number of ranks (NCCL).
pub const WORLD_SIZE: &str = "MLX_WORLD_SIZE";
/// `NCCL_HOST_IP`: rank 0's address, where NCCL ranks meet.
pub const NCCL_HOST_IP: &str = "NCCL_HOST_IP";
/// `NCCL_PORT`: rank 0's port, where NCCL ranks meet.
pub const NCCL_PORT: &str = "NCCL_PORT";
/// `MLX_MPI_LIBNAME`: the `libmpi` MLX's MPI backend loads (`libmpi.so` / `libmpi.dylib`
/// when unset).
pub const MPI_LIBNAME: &str = "MLX_MPI_LIBNAME";
/// `OMPI_COMM_WORLD_SIZE`: the number of ranks Open MPI's `mpirun` started.
pub const OMPI_WORLD_SIZE: &str = "OMPI_COMM_WORLD_SIZE";

/// `CUDA_VISIBLE_DEVICES`: the GPUs a process sees, in CUDA's order.
pub const CUDA_VISIBLE_DEVICES: &str = "CUDA_VISIBLE_DEVICES";

/// Whether the NCCL backend, which MLX puts on GPU `rank % gpus`, and MLX's own streams,
/// which run on GPU 0, agree. When they do not, NCCL is handed a stream of another GPU and
/// the process aborts at its first collective ("unhandled cuda error"). A rank that sees no
/// GPU at all would end in MLX's NCCL backend, which calls `exit(1)` on any CUDA error.
/// For builds whose MLX has a CUDA backend.
pub(super) fn check_nccl_gpu(rank: usize, gpus: usize) -> Result<()> {
    if gpus == 0 {
        return Err(invalid(format!(
            "rank {rank} of an NCCL group sees no GPU ({CUDA_VISIBLE_DEVICES}={:?}): MLX's \
             NCCL backend would end the process",
            std::env::var(CUDA_VISIBLE_DEVICES).unwrap_or_default()
        )));
    }
    if gpus > 1 && rank % gpus != 0 {
        return Err(invalid(format!(
            "rank {rank} sees {gpus} GPUs: MLX's NCCL backend would put it on GPU {} while \
             MLX computes on GPU 0, and its first collective would abort the process. Give \
             each rank one GPU with {CUDA_VISIBLE_DEVICES} (the launcher does)",
            rank % gpus
        )));
    }
    Ok(())
}

fn invalid(what: impl std::fmt::Display) -> Error {
    Error::invalid(format!("[distributed] {what}"))
}

/// The ring backend's hostfile: for each rank, in rank order, the `"host:port"` addresses
/// it listens on (one connection per address to each neighbour).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingHostfile {
    ranks: Vec<Vec<String>>,
}

impl RingHostfile {
    /// A hostfile from each rank's addresses, checked as [`RingHostfile::parse`] checks.
    pub fn new(ranks: Vec<Vec<String>>) -> Result<RingHostfile> {
        if ranks.len() < 2 {
            return Err(invalid(format!(
                "a ring needs at least 2 ranks, the hostfile lists {}",
                ranks.len()
            )));
        }
        let per_rank = ranks[0].len();
        let mut seen = HashSet::new();
        for (rank, addresses) in ranks.iter().enumerate() {
            if addresses.is_empty() || addresses.len() != per_rank {
                return Err(invalid(format!(
                    "every rank of a ring needs the same number of addresses (at least one): \
                     rank 0 has {per_rank}, rank {rank} has {}",
                    addresses.len()
                )));
            }
            for a in addresses {
                check_address(a).map_err(|e| invalid(format!("rank {rank}: {e}")))?;
                if !seen.insert(a.as_str()) {
                    return Err(invalid(format!("address {a:?} is listed twice")));
                }
            }
        }
        Ok(RingHostfile { ranks })
    }

    /// Parses MLX's JSON hostfile format: a list, one entry per rank, of lists of
    /// `"host:port"` strings.
    pub fn parse(json: &str) -> Result<RingHostfile> {
        let ranks: Vec<Vec<String>> = serde_json::from_str(json).map_err(|e| {
            invalid(format!(
                "the hostfile is not a JSON list of lists of \"host:port\" strings: {e}"
            ))
        })?;
        RingHostfile::new(ranks)
    }

    /// Reads and parses the hostfile at `path`.
    pub fn read(path: impl AsRef<Path>) -> Result<RingHostfile> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading the hostfile {}", path.display()), e))?;
        RingHostfile::parse(&text).map_err(|e| invalid(format!("hostfile {}: {e}", path.display())))
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.ranks.len()
    }

    /// Each rank's addresses.
    pub fn ranks(&self) -> &[Vec<String>] {
        &self.ranks
    }

    /// The hostfile as MLX reads it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.ranks).expect("a list of lists of strings serializes")
    }
}

/// `host:port` with a host MLX can resolve and a port in 1..=65535.
fn check_address(a: &str) -> std::result::Result<(), String> {
    let (host, port) = a
        .split_once(':')
        .ok_or_else(|| format!("{a:?} is not \"host:port\""))?;
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c == '\0') {
        return Err(format!("{a:?} has no valid host"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => Err(format!("{a:?} has no valid port (1 to 65535)")),
    }
}

/// The rank in `MLX_RANK`, checked against the group size.
fn rank_from_env(size: usize) -> Result<usize> {
    let text = std::env::var(RANK).map_err(|_| invalid(format!("{RANK} is not set")))?;
    match text.trim().parse::<usize>() {
        Ok(r) if r < size => Ok(r),
        _ => Err(invalid(format!(
            "{RANK}={text:?} is not a rank of a group of {size} (0 to {})",
            size - 1
        ))),
    }
}

/// Checks the ring backend's environment, if it is set at all: `Ok(true)` when it is set
/// and valid, `Ok(false)` when neither variable is set.
pub(super) fn check_ring_env() -> Result<bool> {
    let hostfile = std::env::var_os(HOSTFILE);
    let rank = std::env::var_os(RANK);
    match (&hostfile, &rank) {
        (None, None) => Ok(false),
        (Some(path), Some(_)) => {
            let hosts = RingHostfile::read(path)?;
            rank_from_env(hosts.size())?;
            Ok(true)
        }
        // MLX's own message for a missing half is clear enough; it is an Err, not a hang.
        _ => Ok(true),
    }
}

/// Checks the NCCL backend's environment, if `MLX_WORLD_SIZE` is set; `Ok(Some(rank))` when
/// the whole environment is set (MLX will start NCCL), `Ok(None)` when some is missing.
/// The number of ranks when Open MPI's `mpirun` started this process.
pub(super) fn mpirun_world_size() -> Option<usize> {
    std::env::var(OMPI_WORLD_SIZE).ok()?.trim().parse().ok()
}

pub(super) fn check_nccl_env() -> Result<Option<usize>> {
    let Ok(size) = std::env::var(WORLD_SIZE) else {
        return Ok(None);
    };
    let size = match size.trim().parse::<usize>() {
        Ok(n) if n > 0 => n,
        _ => {
            return Err(invalid(format!(
                "{WORLD_SIZE}={size:?} is not a group size"
            )))
        }
    };
    let rank = rank_from_env(size)?;
    let Ok(port) = std::env::var(NCCL_PORT) else {
        return Ok(None);
    };
    check_address(&format!("host:{port}"))
        .map_err(|_| invalid(format!("{NCCL_PORT}={port:?} is not a port")))?;
    Ok(std::env::var_os(NCCL_HOST_IP).map(|_| rank))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_must_sit_on_the_gpu_mlx_computes_on() {
        assert!(check_nccl_gpu(1, 1).is_ok());
        assert!(check_nccl_gpu(2, 2).is_ok());
        let err = check_nccl_gpu(0, 0).unwrap_err().to_string();
        assert!(err.contains("sees no GPU"), "{err}");
        let err = check_nccl_gpu(1, 2).unwrap_err().to_string();
        assert!(
            err.contains("GPU 1") && err.contains(CUDA_VISIBLE_DEVICES),
            "{err}"
        );
    }

    #[test]
    fn hostfiles_parse_and_check() {
        let h = RingHostfile::parse(r#"[["127.0.0.1:5000"], ["127.0.0.1:5001"]]"#).unwrap();
        assert_eq!(h.size(), 2);
        assert_eq!(RingHostfile::parse(&h.to_json()).unwrap(), h);
        for (bad, why) in [
            (r#"[["127.0.0.1:5000"]]"#, "at least 2 ranks"),
            (r#"[["127.0.0.1:5000"], []]"#, "same number"),
            (r#"[["a:1", "a:2"], ["b:1"]]"#, "same number"),
            (r#"[["127.0.0.1"], ["127.0.0.1:5001"]]"#, "host:port"),
            (r#"[["127.0.0.1:0"], ["127.0.0.1:5001"]]"#, "valid port"),
            (r#"[["127.0.0.1:70000"], ["127.0.0.1:5001"]]"#, "valid port"),
            (r#"[[":5000"], ["127.0.0.1:5001"]]"#, "valid host"),
            (r#"[["a:1"], ["a:1"]]"#, "twice"),
            (r#"{"hosts": 2}"#, "JSON list"),
            (r#"[[5000], [5001]]"#, "JSON list"),
        ] {
            let err = RingHostfile::parse(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
