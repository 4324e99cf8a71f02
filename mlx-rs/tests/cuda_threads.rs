//! One thread evaluates on the GPU while another does other MLX work. On a CUDA build a
//! second thread's allocations, frees, CPU-stream work and evaluations must not break the
//! first thread's CUDA graph capture. Each case runs in a child process, so a crash is a
//! failed test with the child's output, not a dead test binary. On CPU builds the cases run
//! too (there is no capture to break).

mod support;

use std::thread;

use mlx_rs::{memory, ops, with_device, Array, Device, Dtype, Result};

const ROUNDS: usize = 400;

/// Runs the ignored test `child` in a child process and fails with its output unless it
/// passed.
fn in_child(child: &str) {
    let (status, text) = support::run_child(child);
    assert!(
        status.success() && text.contains("1 passed"),
        "{child} died or failed ({status:?}):\n{text}"
    );
}

/// A GPU graph of several kernels, each captured, with a matmul large enough for cuBLAS.
fn one_graph(i: usize) -> Result<()> {
    let x = ops::full(&[256, 256], 1.0f32 + i as f32 * 1e-3, None)?;
    let y = ops::matmul(&x, &x)?;
    let z = ops::exp(&(&y * 1e-6f32))?.sum(None, false)?;
    let got = z.item::<f32>()?;
    assert!(got.is_finite() && got > 65536.0, "round {i}: {got}");
    Ok(())
}

fn gpu_loop() -> Result<()> {
    (0..ROUNDS).try_for_each(one_graph)
}

fn run_with(other: impl FnOnce() -> Result<()> + Send + 'static) {
    let a = thread::spawn(gpu_loop);
    let b = thread::spawn(other);
    a.join().unwrap().unwrap();
    b.join().unwrap().unwrap();
}

#[test]
fn host_arrays_made_beside_gpu_evaluation() {
    in_child("child_host_arrays_made");
}

#[test]
#[ignore = "child of host_arrays_made_beside_gpu_evaluation"]
fn child_host_arrays_made() {
    // Each size is new, so MLX allocates instead of reusing a cached buffer.
    run_with(|| {
        for i in 0..ROUNDS {
            let n = 1024 * (i + 1);
            drop(Array::from_slice(&vec![1.0f32; n], &[n as i32])?);
        }
        Ok(())
    });
}

#[test]
fn host_arrays_freed_beside_gpu_evaluation() {
    in_child("child_host_arrays_freed");
}

#[test]
#[ignore = "child of host_arrays_freed_beside_gpu_evaluation"]
fn child_host_arrays_freed() {
    // No cache: every free returns the memory to CUDA.
    memory::set_cache_limit(0).unwrap();
    run_with(|| {
        for i in 0..ROUNDS {
            let n = 1024 * (i % 7 + 1);
            drop(Array::from_slice(&vec![1.0f32; n], &[n as i32])?);
        }
        Ok(())
    });
}

#[test]
fn cpu_stream_work_beside_gpu_evaluation() {
    in_child("child_cpu_stream_work");
}

#[test]
#[ignore = "child of cpu_stream_work_beside_gpu_evaluation"]
fn child_cpu_stream_work() {
    run_with(|| {
        let cpu = Device::cpu();
        for i in 0..ROUNDS {
            let n = 256 * (i + 1) as i32;
            let s = with_device(&cpu, || -> Result<f32> {
                ops::arange(0, n, 1, Dtype::Float32)?
                    .sum(None, false)?
                    .item::<f32>()
            })??;
            assert!(s > 0.0);
        }
        Ok(())
    });
}

#[test]
fn gpu_evaluation_on_two_threads() {
    in_child("child_gpu_evaluation_on_two_threads");
}

#[test]
#[ignore = "child of gpu_evaluation_on_two_threads"]
fn child_gpu_evaluation_on_two_threads() {
    run_with(gpu_loop);
}

/// Threads that use the GPU and exit while another thread evaluates. MLX 0.32.2 keeps its
/// cuBLAS and cuDNN handles in C++ `thread_local`s; a thread's exit destroys them
/// (`cublasLtDestroy`), which synchronizes the whole CUDA context, and a CUDA graph another
/// thread is capturing at that moment fails: "cudaStreamEndCapture(...) failed: operation
/// failed due to a previous error during capture", thrown where nothing catches it
/// (`std::terminate`), or a SIGSEGV inside `cuCtxSynchronize` in the exiting thread. The
/// binding's encoding lock cannot cover it: thread-exit destructors run outside any call.
#[test]
#[ignore = "open (MLX 0.32.2 CUDA): a thread's exit destroys its cuBLAS handle and breaks another \
            thread's CUDA graph capture; passes on CPU builds; run with --ignored"]
fn short_lived_gpu_threads_beside_gpu_evaluation() {
    in_child("child_short_lived_gpu_threads");
}

#[test]
#[ignore = "child of short_lived_gpu_threads_beside_gpu_evaluation"]
fn child_short_lived_gpu_threads() {
    run_with(|| {
        for i in 0..ROUNDS / 4 {
            thread::spawn(move || one_graph(i)).join().unwrap()?;
        }
        Ok(())
    });
}
