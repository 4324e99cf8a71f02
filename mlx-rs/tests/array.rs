//! Array construction, data access and printing.

use mlx_rs::half::{bf16, f16};
use mlx_rs::num_complex::Complex32;
use mlx_rs::{ops, Array, ArrayElement, Dtype, Error};

fn round_trip<T: ArrayElement + PartialEq + std::fmt::Debug>(values: &[T]) {
    let a = Array::from_slice(values, &[values.len() as i32]).unwrap();
    assert_eq!(a.dtype(), T::DTYPE);
    assert_eq!(a.shape(), &[values.len() as i32]);
    assert_eq!(a.size(), values.len());
    assert_eq!(a.itemsize(), T::DTYPE.size());
    assert_eq!(a.nbytes(), values.len() * T::DTYPE.size());
    assert_eq!(a.to_vec::<T>().unwrap(), values);
    a.eval().unwrap();
    assert_eq!(a.as_slice::<T>().unwrap(), values);
    let s = Array::from_scalar(values[1]);
    assert_eq!(s.ndim(), 0);
    assert_eq!(s.item::<T>().unwrap(), values[1]);
}

#[test]
fn every_dtype_round_trips() {
    round_trip(&[true, false, true]);
    round_trip(&[0u8, 7, 255]);
    round_trip(&[0u16, 7, u16::MAX]);
    round_trip(&[0u32, 7, u32::MAX]);
    round_trip(&[0u64, 7, u64::MAX]);
    round_trip(&[i8::MIN, -7, i8::MAX]);
    round_trip(&[i16::MIN, -7, i16::MAX]);
    round_trip(&[i32::MIN, -7, i32::MAX]);
    round_trip(&[i64::MIN, -7, i64::MAX]);
    round_trip(&[f16::from_f32(0.5), f16::from_f32(-2.25), f16::MAX]);
    round_trip(&[0.5f32, -2.25, f32::MAX]);
    round_trip(&[0.5f64, -2.25, f64::MAX]);
    round_trip(&[bf16::from_f32(0.5), bf16::from_f32(-2.25), bf16::MAX]);
    round_trip(&[
        Complex32::new(1.0, -1.0),
        Complex32::new(0.5, 2.0),
        Complex32::new(-3.0, 0.0),
    ]);
}

#[test]
fn an_array_is_one_word() {
    // Trees and caches hold many arrays; the shared-on-clone representation keeps them small.
    assert_eq!(std::mem::size_of::<Array>(), std::mem::size_of::<usize>());
}

#[test]
fn clone_shares_and_drop_order_does_not_matter() {
    let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let b = a.clone();
    let c = &a + &b;
    drop(a);
    drop(b);
    // `c` still holds its inputs through the graph.
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
    let d = c.clone();
    drop(c);
    assert_eq!(d.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
}

#[test]
fn to_vec_follows_strides_of_views() {
    let a = ops::arange_to(6).unwrap().reshape(&[2, 3]).unwrap();
    let t = a.t().unwrap();
    assert_eq!(t.shape(), &[3, 2]);
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 3, 1, 4, 2, 5]);
    assert_eq!(t.strides().unwrap(), &[1, 3]);
    assert!(matches!(
        t.as_slice::<i32>(),
        Err(Error::NotContiguous { .. })
    ));
    let t3 = ops::arange_to(24)
        .unwrap()
        .reshape(&[2, 3, 4])
        .unwrap()
        .transpose([2, 0, 1])
        .unwrap();
    let got = t3.to_vec::<i32>().unwrap();
    let mut want = Vec::new();
    for k in 0..4 {
        for i in 0..2 {
            for j in 0..3 {
                want.push(i * 12 + j * 4 + k);
            }
        }
    }
    assert_eq!(got, want);
}

/// Reversed slices are views with negative strides whose data pointer is the view's first
/// element, the highest address it reads: offsets must be signed (a `usize` walk overflows).
#[test]
fn to_vec_follows_negative_strides() {
    use mlx_rs::ops::SliceStep;
    let a = ops::arange(0, 6, None, None).unwrap();
    let r = a.index((..).step(-1)).unwrap();
    assert_eq!(r.strides().unwrap(), &[-1], "a reversed slice is a view");
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![5, 4, 3, 2, 1, 0]);
    assert!(matches!(
        r.as_slice::<i32>(),
        Err(Error::NotContiguous { .. })
    ));
    let every_other = a.index((..).step(-2)).unwrap();
    assert_eq!(every_other.strides().unwrap(), &[-2]);
    assert_eq!(every_other.to_vec::<i32>().unwrap(), vec![5, 3, 1]);

    let m = a.reshape(&[2, 3]).unwrap();
    // m[::-1, ::-1]
    let both = m.index(((..).step(-1), (..).step(-1))).unwrap();
    assert_eq!(both.strides().unwrap(), &[-3, -1]);
    assert_eq!(both.to_vec::<i32>().unwrap(), vec![5, 4, 3, 2, 1, 0]);
    // m[::-1]: rows reversed, columns forward.
    let rows = m.index((..).step(-1)).unwrap();
    assert_eq!(rows.strides().unwrap(), &[-3, 1]);
    assert_eq!(rows.to_vec::<i32>().unwrap(), vec![3, 4, 5, 0, 1, 2]);
    // m[:, ::-1]: columns reversed.
    let cols = m.index((.., (..).step(-1))).unwrap();
    assert_eq!(cols.strides().unwrap(), &[3, -1]);
    assert_eq!(cols.to_vec::<i32>().unwrap(), vec![2, 1, 0, 5, 4, 3]);
    // The transpose of a reversed view: strides (-1, -3).
    let t = both.t().unwrap();
    assert_eq!(t.strides().unwrap(), &[-1, -3]);
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![5, 2, 4, 1, 3, 0]);
    // A reversed, strided view of a transpose: m.T[::-1, ::2] = [[2, 5], [1, 4], [0, 3]][:, ::2]
    let mixed = m.t().unwrap().index(((..).step(-1), (..).step(2))).unwrap();
    assert_eq!(mixed.shape(), &[3, 1]);
    assert_eq!(mixed.to_vec::<i32>().unwrap(), vec![2, 1, 0]);
    // Reading through the view never changes the source.
    assert_eq!(m.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3, 4, 5]);
}

#[test]
fn to_vec_reads_broadcast_arrays() {
    let row = Array::from_slice(&[1i32, 2, 3], &[1, 3]).unwrap();
    let b = ops::add(&row, ops::zeros(&[2, 1], Dtype::Int32).unwrap()).unwrap();
    assert_eq!(b.to_vec::<i32>().unwrap(), vec![1, 2, 3, 1, 2, 3]);
    let full = ops::full(
        &[2, 2],
        row.reshape(&[3]).unwrap().sum(None, false).unwrap(),
        None,
    )
    .unwrap();
    assert_eq!(full.to_vec::<i32>().unwrap(), vec![6, 6, 6, 6]);
}

#[test]
fn empty_and_scalar_shapes() {
    let e = Array::from_slice::<f32>(&[], &[0, 3]).unwrap();
    assert_eq!(e.size(), 0);
    assert_eq!(e.to_vec::<f32>().unwrap(), Vec::<f32>::new());
    e.eval().unwrap();
    assert_eq!(e.as_slice::<f32>().unwrap(), &[] as &[f32]);
    let s = Array::from(3.5f32);
    assert_eq!(s.shape(), &[] as &[i32]);
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![3.5]);
}

#[test]
fn astype_converts() {
    let a = Array::from_slice(&[1.7f32, -2.2, 3.0], &[3]).unwrap();
    let i = a.astype(Dtype::Int32).unwrap();
    assert_eq!(i.dtype(), Dtype::Int32);
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![1, -2, 3]);
    let h = a.astype(Dtype::Float16).unwrap();
    assert_eq!(h.to_vec::<f16>().unwrap()[2], f16::from_f32(3.0));
}

#[test]
fn display_prints_like_python() {
    let a = Array::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    assert_eq!(a.to_string(), "array([1, 2, 3], dtype=int32)");
    let m = Array::from_slice(&[1.0f32, 2.5, -3.0, 4.0], &[2, 2]).unwrap();
    assert_eq!(
        m.to_string(),
        "array([[1, 2.5],\n       [-3, 4]], dtype=float32)"
    );
    assert_eq!(
        format!("{:?}", Array::from(true)),
        "array(true, dtype=bool)"
    );
}

#[test]
fn operators_accept_scalars_on_either_side() {
    let a = Array::from_slice(&[1.0f32, 2.0, 4.0], &[3]).unwrap();
    assert_eq!((&a + 1.0).to_vec::<f32>().unwrap(), vec![2.0, 3.0, 5.0]);
    assert_eq!((1.0 - &a).to_vec::<f32>().unwrap(), vec![0.0, -1.0, -3.0]);
    assert_eq!((2.0 * &a).to_vec::<f32>().unwrap(), vec![2.0, 4.0, 8.0]);
    assert_eq!((8.0 / &a).to_vec::<f32>().unwrap(), vec![8.0, 4.0, 2.0]);
    assert_eq!((&a / 2.0).to_vec::<f32>().unwrap(), vec![0.5, 1.0, 2.0]);
    assert_eq!((-&a).to_vec::<f32>().unwrap(), vec![-1.0, -2.0, -4.0]);
    assert_eq!((&a * &a).to_vec::<f32>().unwrap(), vec![1.0, 4.0, 16.0]);
    assert_eq!(
        (a.clone() - a.clone()).to_vec::<f32>().unwrap(),
        vec![0.0; 3]
    );
}

#[test]
fn scalars_are_weakly_typed_like_python() {
    let h = Array::from_slice(&[f16::from_f32(1.0)], &[1]).unwrap();
    assert_eq!((&h * 2.0).dtype(), Dtype::Float16);
    let i = Array::from_slice(&[1i32], &[1]).unwrap();
    assert_eq!((&i * 2.0).dtype(), Dtype::Float32);
    assert_eq!((&i * 2).dtype(), Dtype::Int32);
    let u = Array::from_slice(&[1u8], &[1]).unwrap();
    assert_eq!((&u + 1).dtype(), Dtype::Uint8);
    let b = Array::from_slice(&[true], &[1]).unwrap();
    assert_eq!((&b + 1).dtype(), Dtype::Int32);
}

#[test]
#[should_panic(expected = "operator `add` failed")]
fn operator_on_shapes_that_do_not_broadcast_panics_with_mlx_message() {
    let a = ops::zeros(&[2, 3], None).unwrap();
    let b = ops::zeros(&[4], None).unwrap();
    let _ = &a + &b;
}

#[test]
fn creation_ops() {
    assert_eq!(
        ops::zeros(&[2], None).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0; 2]
    );
    let o = ops::ones(&[2, 2], Dtype::Int64).unwrap();
    assert_eq!(o.dtype(), Dtype::Int64);
    assert_eq!(o.to_vec::<i64>().unwrap(), vec![1; 4]);
    let f = ops::full(&[3], 7, None).unwrap();
    assert_eq!(f.dtype(), Dtype::Int32);
    assert_eq!(f.to_vec::<i32>().unwrap(), vec![7; 3]);
    let f = ops::full(&[2], 0.5, Dtype::Float16).unwrap();
    assert_eq!(f.to_vec::<f16>().unwrap(), vec![f16::from_f32(0.5); 2]);
    let r = ops::arange(0.0f32, 1.0, 0.25, None).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![0.0, 0.25, 0.5, 0.75]);
    let r = ops::arange(5, 0, -2, None).unwrap();
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![5, 3, 1]);
    assert_eq!(
        ops::arange(0.0, 3.0, None, None).unwrap().dtype(),
        Dtype::Float32
    );
}

#[test]
fn reductions_with_axes_and_keepdims() {
    let a = ops::arange_to(6.0).unwrap().reshape(&[2, 3]).unwrap();
    assert_eq!(a.sum(None, false).unwrap().item::<f32>().unwrap(), 15.0);
    assert_eq!(
        a.sum(0, false).unwrap().to_vec::<f32>().unwrap(),
        vec![3.0, 5.0, 7.0]
    );
    let kd = a.sum(-1, true).unwrap();
    assert_eq!(kd.shape(), &[2, 1]);
    assert_eq!(kd.to_vec::<f32>().unwrap(), vec![3.0, 12.0]);
    assert_eq!(a.mean([0, 1], false).unwrap().item::<f32>().unwrap(), 2.5);
    assert_eq!(
        a.max(1, false).unwrap().to_vec::<f32>().unwrap(),
        vec![2.0, 5.0]
    );
    assert_eq!(ops::max(&a, None, true).unwrap().shape(), &[1, 1]);
}

#[test]
fn matmul_and_transpose() {
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let b = ops::matmul(&a, a.t().unwrap()).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![5.0, 11.0, 11.0, 25.0]);
    let batched = ops::ones(&[3, 2, 4], None).unwrap();
    let w = ops::ones(&[4, 5], None).unwrap();
    let out = batched.matmul(&w).unwrap();
    assert_eq!(out.shape(), &[3, 2, 5]);
}

#[test]
fn version_is_the_vendored_one() {
    assert_eq!(mlx_rs::version().unwrap(), "0.32.2");
}

#[test]
fn table_generated_ops_reach_the_right_mlx_function() {
    let a = Array::from_slice(&[1.0f32, 4.0, 9.0], &[3]).unwrap();
    assert_eq!(
        a.sqrt().unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 3.0]
    );
    assert_eq!(
        ops::square(&a).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 16.0, 81.0]
    );
    assert_eq!(
        ops::maximum(&a, 5.0).unwrap().to_vec::<f32>().unwrap(),
        vec![5.0, 5.0, 9.0]
    );
    assert_eq!(
        ops::minimum(2.0, &a).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 2.0]
    );
    assert_eq!(
        ops::power(&a, 0.5).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 3.0]
    );
    let gt = ops::greater(&a, 3.0).unwrap();
    assert_eq!(gt.dtype(), Dtype::Bool);
    assert_eq!(gt.to_vec::<bool>().unwrap(), vec![false, true, true]);
    assert!(!gt.all(None, false).unwrap().item::<bool>().unwrap());
    assert!(gt.any(None, false).unwrap().item::<bool>().unwrap());
    assert_eq!(a.min(None, false).unwrap().item::<f32>().unwrap(), 1.0);
    assert_eq!(a.prod(None, false).unwrap().item::<f32>().unwrap(), 36.0);
    let lse = a.logsumexp(None, false).unwrap().item::<f32>().unwrap();
    assert!((lse - (1f32.exp() + 4f32.exp() + 9f32.exp()).ln()).abs() < 1e-5);
}
