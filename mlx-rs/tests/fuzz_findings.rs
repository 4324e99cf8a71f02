//! Inputs the fuzz harness (`fuzz/`, target `shapes`) found stopping the process — a Rust
//! panic, an MLX abort, SIGFPE or a hang — each of which must now be an `Ok` or an `Err`. Each
//! test failed (crashed) before its fix; results are evaluated, since some crashes wait for
//! evaluation.

use mlx_rs::ops::{self, AsStridedOptions, Index, Slice};
use mlx_rs::{Array, Dtype, Result};

/// The result, evaluated and copied (every element read).
fn evaluated(r: Result<Array>) -> Result<Array> {
    let a = r?;
    ops::contiguous(&a, false)?.eval()?;
    Ok(a)
}

fn f32s(values: &[f32], shape: &[i32]) -> Array {
    Array::from_slice(values, shape).unwrap()
}

/// `index_put` and `at` with an index array followed by `...`: the update shape was sized by
/// the index before `...` was expanded (an index out of bounds in Rust).
#[test]
fn array_index_then_ellipsis_updates() {
    let a = ops::zeros(&[4, 2], None).unwrap();
    let two = Array::from_scalar(2i32);
    let put = a.index_put(vec![Index::Array(two.clone()), Index::Ellipsis], 7.0f32);
    assert_eq!(
        evaluated(put).unwrap().to_vec::<f32>().unwrap(),
        [0.0, 0.0, 0.0, 0.0, 7.0, 7.0, 0.0, 0.0]
    );
    // Index 2 on an axis of 2: out of range, so the write is dropped.
    let add = a.at(vec![Index::Ellipsis, Index::Array(two.clone())]);
    assert_eq!(
        evaluated(add.add(1.0f32)).unwrap().to_vec::<f32>().unwrap(),
        [0.0; 8]
    );
    let col = Array::from_scalar(1i32);
    let add = a
        .at(vec![Index::NewAxis, Index::Array(col), Index::Ellipsis])
        .add(1.0f32);
    assert_eq!(
        evaluated(add).unwrap().to_vec::<f32>().unwrap()[2..4],
        [1.0, 1.0]
    );
    // The shapes the fuzzer found: an empty source, an empty index array.
    let empty = ops::zeros(&[0, 3], None).unwrap();
    let far = Array::from_scalar(u32::MAX);
    // As in Python MLX: a row of an empty axis cannot be written.
    let r = empty.index_put(vec![Index::Array(far), Index::Ellipsis], 7.0f32);
    assert!(evaluated(r).unwrap_err().to_string().contains("too large"));
    let none = ops::zeros(&[3, 0], Dtype::Int32).unwrap();
    let h = ops::ones(&[4, 1], Dtype::Float16).unwrap();
    evaluated(h.index_put(vec![Index::Array(none), Index::Ellipsis], 7.0f32)).unwrap();
}

/// Slice steps near `i32::MIN`/`i32::MAX`: the length arithmetic overflowed (a panic), and
/// MLX's own slice selected nothing where NumPy selects the start (Python MLX 0.32.2 gives
/// empty results here; NumPy's are the right ones).
#[test]
fn extreme_slice_steps() {
    let a = ops::arange_to(24).unwrap().reshape(&[2, 3, 4]).unwrap();
    let back = a.index((.., .., Slice::new(None, None, i32::MIN))).unwrap();
    assert_eq!(evaluated(Ok(back)).unwrap().shape(), [2, 3, 1]);
    let fwd = a.index(Slice::new(-65536, None, i32::MAX)).unwrap();
    assert_eq!(evaluated(Ok(fwd)).unwrap().shape(), [1, 3, 4]);
    let put = a.index_put(
        vec![
            Index::Ellipsis,
            Index::Slice(Slice::new(None, None, i32::MIN)),
            Index::NewAxis,
        ],
        5,
    );
    assert_eq!(
        evaluated(put)
            .unwrap()
            .index((0, 0, 3))
            .unwrap()
            .item::<i32>()
            .unwrap(),
        5
    );
}

/// `as_strided` with default strides of a huge shape: the strides overflowed before the
/// shape was checked.
#[test]
fn as_strided_default_strides_of_a_huge_shape() {
    let a = ops::arange_to(10).unwrap();
    let huge = [6, 86_825_926, 18, 187, 652_888_349];
    assert!(ops::as_strided(&a, AsStridedOptions::default().shape(&huge)).is_err());
    let negative = [-65536, 1_411_865_371, 1_905_154_009, 16];
    assert!(ops::as_strided(&a, AsStridedOptions::default().shape(&negative)).is_err());
    let empty = [0, i32::MAX, i32::MAX, i32::MAX];
    let view = ops::as_strided(&a, AsStridedOptions::default().shape(&empty)).unwrap();
    assert_eq!(evaluated(Ok(view)).unwrap().size(), 0);
}

/// `unflatten` into a shape with `-1` and a `0` (MLX divides by 0: SIGFPE), or with negative
/// dimensions whose product matches (an array of negative shape).
#[test]
fn unflatten_shapes_mlx_cannot_infer_or_misreads() {
    let b = Array::from_slice(&[true, false, false, true], &[2, 2]).unwrap();
    for shape in [&[-1, 0][..], &[0, -1, 17], &[-4, -4, -1, 0], &[-2, -1]] {
        assert!(ops::unflatten(&b, 0, shape).is_err(), "{shape:?}");
    }
    assert!(ops::unflatten(&ops::arange_to(4).unwrap(), 0, &[-2, -2]).is_err());
    let ok = ops::unflatten(&ops::arange_to(6).unwrap(), 0, &[-1, 3]).unwrap();
    assert_eq!(evaluated(Ok(ok)).unwrap().shape(), [2, 3]);
}

/// Scatters that write nothing (updates with a 0 extent) stopped the process with SIGFPE
/// when evaluated.
#[test]
fn scatters_that_write_nothing() {
    let empty = ops::zeros(&[0, 3], None).unwrap();
    let r = ops::scatter(&empty, Vec::<&Array>::new(), &empty, &[]);
    assert_eq!(evaluated(r).unwrap().shape(), [0, 3]);
    let r = ops::scatter_max(&empty, Vec::<&Array>::new(), &empty, &[]);
    assert_eq!(evaluated(r).unwrap().shape(), [0, 3]);
    let a = f32s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let idx = ops::zeros(&[0], Dtype::Int32).unwrap();
    let r = ops::scatter_add(&a, [&idx], &ops::zeros(&[0, 1, 2], None).unwrap(), &[0]);
    assert_eq!(
        evaluated(r).unwrap().to_vec::<f32>().unwrap(),
        [1.0, 2.0, 3.0, 4.0]
    );
    // As in Python MLX: the update row is too large for an empty axis.
    let r = empty.index_put(vec![Index::Array(idx)], 1.0f32);
    assert!(evaluated(r).unwrap_err().to_string().contains("too large"));
}

/// Splitting an empty axis into 926,168,376 sections built that many arrays (minutes, then
/// out of memory); results that cannot fit the machine are refused.
#[test]
fn splits_into_more_arrays_than_can_exist() {
    let empty = ops::zeros(&[0, 3], None).unwrap();
    let started = std::time::Instant::now();
    assert!(ops::split(&empty, 926_168_376, None).is_err());
    // Refused up front, not after building arrays for a while.
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    assert_eq!(ops::split(&empty, 3, None).unwrap().len(), 3);
    let one = ops::zeros(&[1], None).unwrap();
    assert_eq!(ops::split(&one, vec![0; 4096], None).unwrap().len(), 4097);
}
