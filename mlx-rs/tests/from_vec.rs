//! `Array::from_vec` hands the Vec to MLX, which either adopts the buffer (backends whose
//! allocator can wrap foreign memory) or copies it once and drops the Vec at once (the CPU
//! allocator). Either way the Vec is dropped exactly once, no later than the last array. A
//! counting allocator observes the Rust-side buffer (one test in this binary, so nothing else
//! allocates concurrently).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use mlx_rs::Array;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator and only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const N: usize = 1 << 20;

#[test]
fn the_buffer_is_shared_not_copied_and_freed_with_the_last_array() {
    let sum = (N * (N - 1) / 2) as f64;
    // Warm up thread-locals and MLX's own Rust-side state.
    Array::from_vec(vec![0.0f32; 4], &[4])
        .unwrap()
        .eval()
        .unwrap();

    let before = LIVE.load(Ordering::SeqCst);
    let a = Array::from_vec((0..N).map(|i| i as f64).collect(), &[N as i32]).unwrap();
    let b = a.clone();
    drop(a);
    // float64 runs on the CPU only (MLX's GPU backends have no float64), so the sum is taken
    // on the CPU stream, as in Python (`mx.sum(b, stream=mx.cpu)`), whatever the default
    // device.
    let total = mlx_rs::with_device(&mlx_rs::Device::cpu(), || b.sum(None, false))
        .unwrap()
        .unwrap();
    assert_eq!(total.item::<f64>().unwrap(), sum);
    drop(total);
    drop(b);
    let left = LIVE.load(Ordering::SeqCst) - before;
    assert!(
        left < (N * 8) as isize / 100,
        "the Vec was not freed: {left} bytes still live"
    );

    assert!(Array::from_vec(vec![1i32, 2, 3], &[2, 2]).is_err());
}
