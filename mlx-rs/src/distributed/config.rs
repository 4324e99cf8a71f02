//! The launch environment MLX's backends read, checked before MLX reads it.
//!
//! A launcher (`mlx.launch`, or [`Launch`](super::Launch)) starts one process per rank and
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
use std::net::TcpListener;
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

/// The `CUDA_VISIBLE_DEVICES` a launcher gives rank `rank` of an NCCL group on one machine:
/// the rank-th GPU of those the launcher itself sees (`visible`, its own
/// `CUDA_VISIBLE_DEVICES`; every GPU when unset), wrapping around as `mlx.launch` does.
///
/// ```
/// use mlx_rs::distributed::config::rank_gpu;
/// assert_eq!(rank_gpu(1, None), "1");
/// assert_eq!(rank_gpu(3, Some("4,6".into())), "6");
/// ```
pub fn rank_gpu(rank: usize, visible: Option<String>) -> String {
    let listed: Vec<String> = visible
        .iter()
        .flat_map(|v| v.split(','))
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .collect();
    if listed.is_empty() {
        rank.to_string()
    } else {
        listed[rank % listed.len()].clone()
    }
}

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

/// `Err` unless each of an NCCL group's `ranks` can have a GPU of its own, which NCCL
/// requires: it refuses two ranks on one GPU, and MLX's NCCL backend ends the process on that
/// (`exit(1)`), as it does on a rank that sees no GPU. `visible` is the launcher's
/// `CUDA_VISIBLE_DEVICES` (unset or empty: every GPU), `gpus` how many GPUs MLX sees; `None`
/// where MLX has no CUDA backend, and nothing is known.
pub(super) fn check_nccl_ranks(
    ranks: usize,
    visible: Option<&str>,
    gpus: Option<usize>,
) -> Result<()> {
    let Some(gpus) = gpus else {
        return Ok(());
    };
    let listed = visible
        .map(|v| v.split(',').filter(|d| !d.trim().is_empty()).count())
        .filter(|&n| n > 0);
    let (have, whose) = match listed {
        Some(n) => (
            n,
            format!("{CUDA_VISIBLE_DEVICES}={:?} lists", visible.unwrap_or("")),
        ),
        None => (gpus, "this machine shows".to_string()),
    };
    if ranks > have {
        return Err(Error::invalid(format!(
            "[launch] {ranks} NCCL ranks need a GPU each, and {whose} {have}: NCCL cannot put \
             two ranks on one GPU, and MLX's NCCL backend ends the process when they try"
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

    /// `ranks` ranks on this machine, each listening on `connections` free loopback ports.
    pub fn loopback(ranks: usize, connections: usize) -> Result<RingHostfile> {
        let ports = free_loopback_ports(ranks * connections.max(1))
            .map_err(|e| Error::io("finding free loopback ports", e))?;
        let per_rank = connections.max(1);
        RingHostfile::new(
            ports
                .chunks(per_rank)
                .map(|c| c.iter().map(|p| format!("127.0.0.1:{p}")).collect())
                .collect(),
        )
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

/// `n` distinct loopback ports that nothing listens on, from a random point below the
/// system's ephemeral range. A port the system hands out for `bind(0)` is one it also hands
/// out as the source port of an outgoing connection, so between our choice and the rank's
/// own `bind` a connection of another group running at once could take it ("[ring]
/// Couldn't bind socket (error: 98)", seen with the tests' concurrent groups). The
/// listeners stay open until every port is chosen, so no port is picked twice.
fn free_loopback_ports(n: usize) -> std::io::Result<Vec<u16>> {
    use std::hash::{BuildHasher, Hasher};
    const LOWEST: u32 = 10_000;
    let below = ephemeral_start().unwrap_or(0).min(65_536);
    let mut listeners = Vec::with_capacity(n);
    if below >= LOWEST + 1_000 {
        let span = below - LOWEST;
        // RandomState's keys are random per process: a random start without a crate.
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let start = (random % u64::from(span)) as u32;
        for i in 0..span {
            if listeners.len() == n {
                break;
            }
            let port = LOWEST + (start + i) % span;
            let port = u16::try_from(port).expect("ports below the ephemeral range fit u16");
            if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
                listeners.push(l);
            }
        }
    }
    // No ephemeral range known, or too few ports below it: any free port.
    while listeners.len() < n {
        listeners.push(TcpListener::bind("127.0.0.1:0")?);
    }
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// The first port of Linux's ephemeral range, where it can be read.
fn ephemeral_start() -> Option<u32> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok()
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

    #[test]
    fn each_nccl_rank_gets_one_gpu() {
        assert_eq!(rank_gpu(0, None), "0");
        assert_eq!(rank_gpu(2, Some(String::new())), "2");
        assert_eq!(rank_gpu(0, Some("3, 5".into())), "3");
        assert_eq!(rank_gpu(1, Some("3, 5".into())), "5");
        assert_eq!(rank_gpu(2, Some("GPU-ab12,GPU-cd34".into())), "GPU-ab12");
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
    fn an_nccl_group_needs_a_gpu_per_rank() {
        assert!(check_nccl_ranks(2, None, Some(2)).is_ok());
        assert!(check_nccl_ranks(2, Some("3,5"), Some(8)).is_ok());
        let err = check_nccl_ranks(2, None, Some(1)).unwrap_err().to_string();
        assert!(
            err.contains("2 NCCL ranks") && err.contains("shows 1"),
            "{err}"
        );
        let err = check_nccl_ranks(3, Some("3,5"), Some(8))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"3,5\" lists 2"), "{err}");
        // An empty list is no list: every GPU, as for `rank_gpu`.
        let err = check_nccl_ranks(1, Some(""), Some(0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("shows 0"), "{err}");
        // No CUDA backend: nothing known, the ranks' own init reports what fails.
        assert!(check_nccl_ranks(3, None, None).is_ok());
    }

    #[test]
    fn loopback_hostfiles_have_distinct_free_ports() {
        let h = RingHostfile::loopback(4, 2).unwrap();
        assert_eq!(h.size(), 4);
        assert!(h.ranks().iter().all(|r| r.len() == 2));
        let ports: Vec<u32> = h
            .ranks()
            .iter()
            .flatten()
            .map(|a| a.rsplit_once(':').unwrap().1.parse().unwrap())
            .collect();
        assert_eq!(ports.iter().collect::<HashSet<_>>().len(), 8, "{ports:?}");
        // Outside the range outgoing connections take their source ports from.
        if let Some(start) = ephemeral_start() {
            assert!(ports.iter().all(|&p| p < start), "{ports:?} vs {start}");
        }
    }
}
