//! The collectives every backend must get right, run by each rank of a launched group
//! (`distributed_ring.rs`, `distributed_mpi.rs`): each equals its single-process result for
//! several dtypes and shapes, send/recv around the group, gradients through the collectives,
//! and a group clone that outlives the group.

use mlx_rs::distributed::{self, Group};
use mlx_rs::transforms::{grad, jvp};
use mlx_rs::{ops, with_device, Array, Device, Dtype, Result};

/// Rank `r`'s array: `i * (r + 1) + r` at flat index `i`, small integers that every dtype
/// below holds exactly, so sums in any order are exact.
pub fn rank_values(shape: &[i32], rank: i64) -> Vec<i64> {
    let n: i64 = shape.iter().map(|&d| i64::from(d)).product();
    (0..n).map(|i| i * (rank + 1) + rank).collect()
}

// Conversions on the CPU, where ring and MPI collectives run: a CUDA GPU has no float64.
pub fn as_array(v: &[i64], shape: &[i32], dtype: Dtype) -> Array {
    with_device(&Device::cpu(), || {
        Array::from_slice(v, shape)?.astype(dtype)
    })
    .unwrap()
    .unwrap()
}

pub fn as_i64(a: &Array) -> Vec<i64> {
    with_device(&Device::cpu(), || a.astype(Dtype::Int64)?.to_vec::<i64>())
        .unwrap()
        .unwrap()
}

/// Every check, as rank `group.rank()` of a group of more than one.
pub fn check(group: Group) -> Result<()> {
    let (rank, size) = (i64::from(group.rank()), i64::from(group.size()));
    assert!(size > 1, "started without a launcher");
    let g = Some(&group);
    let shapes: [&[i32]; 4] = [&[], &[7], &[3, 5], &[65_539]];
    let dtypes = [
        Dtype::Float32,
        Dtype::Float16,
        Dtype::Bfloat16,
        Dtype::Int32,
        Dtype::Int64,
        Dtype::Uint8,
        Dtype::Float64,
    ];
    for shape in shapes {
        for dtype in dtypes {
            // The large array crosses the ring's buffer size; only dtypes that hold its sums.
            if shape == [65_539] && !matches!(dtype, Dtype::Float32 | Dtype::Int32 | Dtype::Int64) {
                continue;
            }
            let what = format!("{dtype} {shape:?}");
            let mine = rank_values(shape, rank);
            let x = as_array(&mine, shape, dtype);
            let every: Vec<Vec<i64>> = (0..size).map(|r| rank_values(shape, r)).collect();
            let fold = |f: fn(i64, i64) -> i64| -> Vec<i64> {
                (0..mine.len())
                    .map(|i| every.iter().map(|v| v[i]).reduce(f).unwrap())
                    .collect()
            };
            let sum = distributed::all_sum(&x, g)?;
            assert_eq!(sum.dtype(), dtype, "{what}");
            assert_eq!(sum.shape(), shape, "{what}");
            assert_eq!(as_i64(&sum), fold(|a, b| a + b), "all_sum {what}");
            assert_eq!(
                as_i64(&distributed::all_max(&x, g)?),
                fold(i64::max),
                "all_max {what}"
            );
            assert_eq!(
                as_i64(&distributed::all_min(&x, g)?),
                fold(i64::min),
                "all_min {what}"
            );
            if !shape.is_empty() {
                let gathered = distributed::all_gather(&x, g)?;
                let mut want_shape = shape.to_vec();
                want_shape[0] *= size as i32;
                assert_eq!(gathered.shape(), want_shape, "all_gather {what}");
                assert_eq!(as_i64(&gathered), every.concat(), "all_gather {what}");
            }
        }
    }

    // Around the ring: each rank sends to the next and receives from the previous. MLX runs
    // a send and a recv on one stream in either order, and each blocks until its peer
    // acts, so even ranks send first and odd ranks receive first.
    let next = ((rank + 1) % size) as i32;
    let prev = ((rank + size - 1) % size) as i32;
    let x = as_array(&rank_values(&[4], rank), &[4], Dtype::Float32);
    let exchange = |got: Array| -> Result<Array> {
        let sent = distributed::send(&x, next, g)?;
        if rank % 2 == 0 {
            sent.eval()?;
            got.eval()?;
        } else {
            got.eval()?;
            sent.eval()?;
        }
        Ok(got)
    };
    let got = exchange(distributed::recv_like(&x, prev, g)?)?;
    assert_eq!(as_i64(&got), rank_values(&[4], i64::from(prev)));
    let got = exchange(distributed::recv(&[4], Dtype::Float32, prev, g)?)?;
    assert_eq!(as_i64(&got), rank_values(&[4], i64::from(prev)));
    // A peer that is not another rank is refused before MLX sees it.
    assert!(distributed::send(&x, rank as i32, g).is_err());
    assert!(distributed::recv_like(&x, size as i32, g).is_err());

    // Gradients: all_sum's vjp passes the cotangent through (each rank's loss sums over the
    // group), its jvp sums the tangents; all_gather's vjp keeps this rank's slice.
    let w = (rank + 1) as f32;
    let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
    let dx = grad(
        |a: &[Array]| {
            let y = distributed::all_sum(&ops::multiply(&a[0], w)?, Some(&group))?;
            Ok(vec![ops::sum(&y, None, false)?])
        },
        0,
    )(std::slice::from_ref(&x))?;
    assert_eq!(dx[0].to_vec::<f32>()?, [w; 3]);
    let tangent = Array::from_slice(&[rank as f32; 3], &[3])?;
    let (_, t) = jvp(
        |a: &[Array]| Ok(vec![distributed::all_sum(&a[0], Some(&group))?]),
        std::slice::from_ref(&x),
        &[tangent],
    )?;
    let total: f32 = (0..size).map(|r| r as f32).sum();
    assert_eq!(t[0].to_vec::<f32>()?, [total; 3]);
    let dg = grad(
        |a: &[Array]| {
            let all = distributed::all_gather(&a[0], Some(&group))?;
            let weights = ops::arange(0, 3 * size as i32, 1, Dtype::Float32)?;
            Ok(vec![ops::sum(
                &ops::multiply(&all, &weights)?,
                None,
                false,
            )?])
        },
        0,
    )(std::slice::from_ref(&x))?;
    let base = 3.0 * rank as f32;
    assert_eq!(dg[0].to_vec::<f32>()?, [base, base + 1.0, base + 2.0]);

    // A clone is the same communicator, and outlives the group it was cloned from.
    let kept = group.clone();
    drop(group);
    let sum = distributed::all_sum(&Array::from_slice(&[rank as f32], &[1])?, Some(&kept))?;
    assert_eq!(sum.to_vec::<f32>()?, [(0..size).sum::<i64>() as f32]);
    Ok(())
}
