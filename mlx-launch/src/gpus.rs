//! Which GPU each rank of an NCCL group gets, and whether there are enough.

use mlx_rs::distributed::config::CUDA_VISIBLE_DEVICES;
use mlx_rs::{Error, Result};

/// The `CUDA_VISIBLE_DEVICES` a launcher gives rank `rank` of an NCCL group on one machine:
/// the rank-th GPU of those the launcher itself sees (`visible`, its own
/// `CUDA_VISIBLE_DEVICES`; every GPU when unset), wrapping around as `mlx.launch` does.
///
/// ```
/// use mlx_launch::rank_gpu;
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

/// `Err` unless each of an NCCL group's `ranks` can have a GPU of its own, which NCCL
/// requires: it refuses two ranks on one GPU, and MLX's NCCL backend ends the process on that
/// (`exit(1)`), as it does on a rank that sees no GPU. `visible` is the launcher's
/// `CUDA_VISIBLE_DEVICES` (unset or empty: every GPU), `gpus` how many GPUs MLX sees; `None`
/// where MLX has no CUDA backend, and nothing is known.
pub(crate) fn check_nccl_ranks(
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
        return Err(Error::InvalidArgument(format!(
            "[launch] {ranks} NCCL ranks need a GPU each, and {whose} {have}: NCCL cannot put \
             two ranks on one GPU, and MLX's NCCL backend ends the process when they try"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_nccl_rank_gets_one_gpu() {
        assert_eq!(rank_gpu(0, None), "0");
        assert_eq!(rank_gpu(2, Some(String::new())), "2");
        assert_eq!(rank_gpu(0, Some("3, 5".into())), "3");
        assert_eq!(rank_gpu(1, Some("3, 5".into())), "5");
        assert_eq!(rank_gpu(2, Some("GPU-ab12,GPU-cd34".into())), "GPU-ab12");
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
}
