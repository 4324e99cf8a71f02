//! Handles are released: creating and dropping many arrays leaves MLX's active memory where
//! it started. Runs as its own test binary so no other test allocates concurrently.

use mlx_rs::{memory, ops, Array};

#[test]
fn a_million_arrays_leave_active_memory_unchanged() {
    // Warm up allocator caches and thread-locals first.
    let warm = Array::from_slice(&[1.0f32; 64], &[64]).unwrap();
    (&warm + 1.0).eval().unwrap();
    drop(warm);
    // On a GPU, buffers of finished work are released when the device reports completion:
    // wait for it before each reading of the counter.
    mlx_rs::synchronize().unwrap();
    let before = memory::get_active_memory().unwrap();

    let mut checksum = 0.0f32;
    for i in 0..1_000_000 {
        let a = Array::from_scalar(i as f32);
        if i % 1000 == 0 {
            // Every so often build a small graph and drop inputs before outputs.
            let b = Array::from_slice(&[1.0f32; 16], &[16]).unwrap();
            let c = ops::add(&a, &b).unwrap();
            drop(a);
            drop(b);
            checksum += c.sum(None, false).unwrap().item::<f32>().unwrap();
        }
    }
    assert!(checksum > 0.0);
    mlx_rs::synchronize().unwrap();
    let after = memory::get_active_memory().unwrap();
    assert_eq!(
        before, after,
        "active memory grew from {before} to {after} bytes"
    );

    // The counter is live: holding arrays does raise it.
    let held: Vec<Array> = (0..100)
        .map(|_| ops::ones(&[1024], None).unwrap())
        .collect();
    mlx_rs::eval(&held).unwrap();
    assert!(memory::get_active_memory().unwrap() >= after + 100 * 4096);
    drop(held);
    mlx_rs::synchronize().unwrap();
    assert_eq!(memory::get_active_memory().unwrap(), after);

    // Clones share one handle behind a reference count (the first clone moves it there):
    // clones sent to threads, dropped there in any order, still release the data exactly
    // once, when the last of them (here the original) goes.
    let big = ops::ones(&[1 << 18], None).unwrap();
    big.eval().unwrap();
    mlx_rs::synchronize().unwrap();
    let with_big = memory::get_active_memory().unwrap();
    assert!(with_big >= after + (1 << 20));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let mine = big.clone();
            std::thread::spawn(move || {
                let mut copies: Vec<Array> = (0..1000).map(|_| mine.clone()).collect();
                if t % 2 == 1 {
                    copies.reverse();
                }
                let total = copies[t].sum(None, false).unwrap().item::<f32>().unwrap();
                drop(copies);
                // This thread's stream: its finished work releases its buffers on completion.
                mlx_rs::synchronize().unwrap();
                total
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), (1 << 18) as f32);
    }
    mlx_rs::synchronize().unwrap();
    assert_eq!(memory::get_active_memory().unwrap(), with_big);
    assert_eq!(
        big.sum(None, false).unwrap().item::<f32>().unwrap(),
        (1 << 18) as f32
    );
    drop(big);
    mlx_rs::synchronize().unwrap();
    assert_eq!(memory::get_active_memory().unwrap(), after);
}
