//! Bad input returns `Err` with MLX's message; nothing aborts.

use mlx_rs::random::NormalOptions;
use mlx_rs::{ops, Array, Dtype, Error};

fn message(e: Error) -> String {
    e.to_string()
}

#[test]
fn matmul_of_mismatched_shapes() {
    let a = ops::ones(&[2, 3], None).unwrap();
    let b = ops::ones(&[4, 5], None).unwrap();
    let e = message(ops::matmul(&a, &b).unwrap_err());
    assert!(e.contains("[matmul]"), "{e}");
    assert!(!e.contains(".cpp:"), "source location leaked: {e}");
}

#[test]
fn reshape_to_a_wrong_size() {
    let a = ops::ones(&[2, 3], None).unwrap();
    let e = message(a.reshape(&[4, 2]).unwrap_err());
    assert!(e.contains("[reshape]"), "{e}");
}

#[test]
fn reduction_over_an_out_of_range_axis() {
    let a = ops::ones(&[2, 3], None).unwrap();
    for r in [a.sum(2, false), a.mean(-3, false), a.max([0, 5], true)] {
        let e = message(r.unwrap_err());
        assert!(e.contains("axis"), "{e}");
    }
}

#[test]
fn as_slice_of_an_unevaluated_array() {
    let a = ops::ones(&[3], None).unwrap();
    let b = &a + 1.0;
    let e = b.as_slice::<f32>().unwrap_err();
    assert!(matches!(e, Error::NotEvaluated), "{e:?}");
    b.eval().unwrap();
    assert_eq!(b.as_slice::<f32>().unwrap(), &[2.0, 2.0, 2.0]);
}

#[test]
fn as_slice_of_a_non_contiguous_array() {
    let a = ops::arange_to(6.0f32).unwrap().reshape(&[2, 3]).unwrap();
    let t = a.t().unwrap();
    t.eval().unwrap();
    let e = t.as_slice::<f32>().unwrap_err();
    assert!(matches!(e, Error::NotContiguous { .. }), "{e}");
    assert!(e.to_string().contains("to_vec"), "{e}");
}

#[test]
fn item_of_a_non_scalar() {
    let a = ops::ones(&[2], None).unwrap();
    let e = message(a.item::<f32>().unwrap_err());
    assert!(e.contains("size 1"), "{e}");
}

#[test]
fn data_of_the_wrong_type() {
    let a = Array::from_slice(&[1i32, 2], &[2]).unwrap();
    a.eval().unwrap();
    let e = a.as_slice::<f32>().unwrap_err();
    assert!(
        matches!(
            e,
            Error::DtypeMismatch {
                actual: Dtype::Int32,
                requested: Dtype::Float32
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "dtype mismatch: the array holds int32, but float32 was requested"
    );
    assert!(a.to_vec::<i64>().is_err());
    // `item` converts only where the value is kept: 3 is an exact f32, not a bool.
    let total = a.sum(None, false).unwrap();
    assert_eq!(total.item::<f32>().unwrap(), 3.0);
    assert!(total.item::<bool>().is_err());
}

#[test]
fn construction_with_a_wrong_shape() {
    let e = message(Array::from_slice(&[1.0f32, 2.0, 3.0], &[2, 2]).unwrap_err());
    assert!(e.contains("holds 4 elements but 3 were given"), "{e}");
    let e = message(Array::from_slice(&[1.0f32], &[-1]).unwrap_err());
    assert!(e.contains("negative dimension"), "{e}");
}

#[test]
fn binary_ops_with_shapes_that_do_not_broadcast() {
    let a = ops::ones(&[2, 3], None).unwrap();
    let b = ops::ones(&[3, 2], None).unwrap();
    let e = message(ops::add(&a, &b).unwrap_err());
    assert!(e.contains("broadcast"), "{e}");
}

#[test]
fn bad_random_arguments() {
    let bad_key = ops::ones(&[3], None).unwrap();
    assert!(mlx_rs::random::normal(&[2], Default::default(), &bad_key).is_err());
    let k = mlx_rs::random::key(0).unwrap();
    assert!(
        mlx_rs::random::normal(&[2], NormalOptions::default().dtype(Dtype::Int32), &k).is_err()
    );
}

#[test]
fn errors_do_not_poison_later_calls() {
    let a = ops::ones(&[2, 3], None).unwrap();
    assert!(a.reshape(&[7]).is_err());
    let ok = a.reshape(&[3, 2]).unwrap();
    assert_eq!(ok.shape(), &[3, 2]);
    assert_eq!(ok.sum(None, false).unwrap().item::<f32>().unwrap(), 6.0);
}

/// `Error::Io` keeps the OS error as its source (a missing file is `NotFound`, which a caller
/// can branch on), and a file that opens but is corrupt is `InvalidData`; the message still
/// names the file.
#[test]
fn io_errors_carry_their_source() {
    use std::error::Error as _;
    let kind_of = |e: &Error| {
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
        e.source()
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .unwrap_or_else(|| panic!("no io::Error source: {e:?}"))
            .kind()
    };
    let dir = std::env::temp_dir().join(format!("mlx-rs-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let missing = dir.join("missing.safetensors");
    let e = mlx_rs::io::load_safetensors(&missing).unwrap_err();
    assert_eq!(kind_of(&e), std::io::ErrorKind::NotFound);
    assert!(e.to_string().contains("missing.safetensors"), "{e}");

    let corrupt = dir.join("corrupt.npy");
    std::fs::write(&corrupt, b"not an npy file at all").unwrap();
    let e = mlx_rs::io::load_npy(&corrupt).unwrap_err();
    assert_eq!(kind_of(&e), std::io::ErrorKind::InvalidData);
    assert!(e.to_string().contains("corrupt.npy"), "{e}");

    // Clone shares the source rather than dropping it.
    let copy = e.clone();
    assert_eq!(kind_of(&copy), std::io::ErrorKind::InvalidData);
    assert_eq!(copy.to_string(), e.to_string());
    let _ = std::fs::remove_dir_all(&dir);
}
