//! Integer division by zero and `MIN / -1`: MLX's CPU kernels trap (SIGFPE) on both, so
//! `floor_divide`, `remainder`, `divmod` and `%` guard them and give NumPy's results there
//! (`x // 0 == 0`, `x % 0 == 0`, `MIN // -1 == MIN`, `MIN % -1 == 0`) and MLX's elsewhere. The divisions run in a
//! child process: a regression kills the child, and this test reports it instead of dying.

mod support;

use mlx_rs::ops;
use mlx_rs::{Array, Dtype, Result};

#[test]
fn integer_division_by_zero_is_defined_not_a_crash() {
    let (status, text) = support::run_child("child_divisions");
    assert!(
        status.success(),
        "the child died or failed ({status:?}):\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "the child test did not run:\n{text}"
    );
}

/// MLX's results for one pair, guarded cases included: `floor_divide` of integers truncates
/// toward zero (as Python MLX does: `-7 // 2 == -3`), `divmod`'s quotient floors, and the
/// remainder takes the divisor's sign (Python's rule) in both.
fn expected_i64(a: i64, b: i64, min: i64) -> (i64, i64, i64) {
    if b == 0 {
        return (0, 0, 0);
    }
    if a == min && b == -1 {
        return (min, min, 0);
    }
    let truncated = a / b;
    let mut floored = a.div_euclid(b);
    let mut r = a.rem_euclid(b);
    if b < 0 && r != 0 {
        floored -= 1;
        r += b;
    }
    (truncated, floored, r)
}

fn as_i64(a: &Array) -> Vec<i64> {
    a.astype(Dtype::Int64).unwrap().to_vec::<i64>().unwrap()
}

#[test]
#[ignore = "runs in a child process started by integer_division_by_zero_is_defined_not_a_crash"]
fn child_divisions() -> Result<()> {
    // Every signed width, with MIN / -1 and zeros among the divisors.
    let cases: [(Dtype, i64); 4] = [
        (Dtype::Int8, i64::from(i8::MIN)),
        (Dtype::Int16, i64::from(i16::MIN)),
        (Dtype::Int32, i64::from(i32::MIN)),
        (Dtype::Int64, i64::MIN),
    ];
    let a_vals = |min: i64| [7, -7, 5, min, min, -1, 0, 3];
    let b_vals = [2i64, 2, 0, -1, 3, 0, 0, -2];
    for (dtype, min) in cases {
        let a = Array::from_slice(&a_vals(min), &[8])?.astype(dtype)?;
        let b = Array::from_slice(&b_vals, &[8])?.astype(dtype)?;
        let want: Vec<(i64, i64, i64)> = a_vals(min)
            .iter()
            .zip(b_vals)
            .map(|(&x, y)| expected_i64(x, y, min))
            .collect();
        let q = ops::floor_divide(&a, &b)?;
        let r = ops::remainder(&a, &b)?;
        assert_eq!(q.dtype(), dtype);
        assert_eq!(
            as_i64(&q),
            want.iter().map(|p| p.0).collect::<Vec<_>>(),
            "{dtype} //"
        );
        assert_eq!(
            as_i64(&r),
            want.iter().map(|p| p.2).collect::<Vec<_>>(),
            "{dtype} %"
        );
        let (dq, dr) = ops::divmod(&a, &b)?;
        let floored: Vec<i64> = want.iter().map(|p| p.1).collect();
        assert_eq!(as_i64(&dq), floored, "{dtype} divmod");
        assert_eq!(as_i64(&dr), as_i64(&r), "{dtype} divmod");
        assert_eq!(as_i64(&(&a % &b)), as_i64(&r), "{dtype} operator %");
    }
    // Unsigned, a scalar zero divisor, and broadcasting.
    let u = Array::from_slice(&[9u8, 200, 0], &[3])?;
    assert_eq!(as_i64(&ops::floor_divide(&u, 0)?), [0, 0, 0]);
    assert_eq!(as_i64(&ops::remainder(&u, 0)?), [0, 0, 0]);
    let col = Array::from_slice(&[0i32, 2], &[2, 1])?;
    let row = Array::from_slice(&[7i32, -7, 4], &[1, 3])?;
    assert_eq!(as_i64(&ops::floor_divide(&row, &col)?), [0, 0, 0, 3, -3, 2]);
    // Mixed widths promote first: int8 MIN over int32 -1 is no trap in int32.
    let m = Array::from_scalar(i8::MIN);
    assert_eq!(
        as_i64(&ops::floor_divide(&m, Array::from_scalar(-1i32))?),
        [128]
    );
    // Floats keep IEEE results.
    let f = ops::floor_divide(Array::from_slice(&[1.0f32, -1.0, 0.0], &[3])?, 0.0)?;
    let f = f.to_vec::<f32>()?;
    assert_eq!(f[..2], [f32::INFINITY, f32::NEG_INFINITY]);
    assert!(f[2].is_nan());
    // The unchecked forms are MLX's kernels: with safe divisors, the same results.
    let a = Array::from_slice(&[7i32, -7], &[2])?;
    // SAFETY: no zero divisor and no MIN / -1.
    let q = unsafe { ops::floor_divide_unchecked(&a, 2)? };
    assert_eq!(as_i64(&q), [3, -3]);
    // SAFETY: as above.
    let r = unsafe { ops::remainder_unchecked(&a, 2)? };
    assert_eq!(as_i64(&r), [1, 1]);
    Ok(())
}
