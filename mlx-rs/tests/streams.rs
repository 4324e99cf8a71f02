//! Devices, streams, scoped overrides and MLX's thread-affine streams.

use mlx_rs::{ops, synchronize, with_device, with_stream, Array, Device, DeviceType, Stream};

#[test]
fn default_device_and_stream() {
    let dev = Device::default_device().unwrap();
    assert!(dev.is_available());
    let s = Stream::current().unwrap();
    assert_eq!(s.device(), dev);
    assert_eq!(Stream::default_for(&dev).unwrap(), s);
    assert!(Device::count(DeviceType::Cpu).unwrap() >= 1);
    assert_eq!(Device::cpu().to_string(), "Device(cpu, 0)");
    synchronize().unwrap();
}

#[test]
fn scoped_stream_override_is_restored() {
    let cpu = Device::cpu();
    let before = Stream::current().unwrap();
    let mine = Stream::new(&cpu).unwrap();
    assert_ne!(mine, before);
    let inside = with_stream(&mine, || {
        let a = ops::ones(&[4], None).unwrap();
        let b = (&a * 3.0).sum(None, false).unwrap();
        (Stream::current().unwrap(), b.item::<f32>().unwrap())
    });
    assert_eq!(inside.0, mine);
    assert_eq!(inside.1, 12.0);
    mine.synchronize().unwrap();
    assert_eq!(Stream::current().unwrap(), before);

    // Restored after a panic too.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        with_stream(&mine, || panic!("boom"));
    }));
    assert!(r.is_err());
    assert_eq!(Stream::current().unwrap(), before);
}

#[test]
fn scoped_device_override() {
    let got = with_device(&Device::cpu(), || Stream::current().unwrap().device()).unwrap();
    assert_eq!(got, Device::cpu());
}

#[test]
fn gpu_is_refused_cleanly_without_a_gpu_backend() {
    let gpu = Device::gpu();
    if gpu.is_available() {
        return; // a GPU build: nothing to refuse
    }
    let e = with_device(&gpu, || ()).unwrap_err();
    assert!(e.to_string().contains("gpu"), "{e}");
}

#[test]
fn each_thread_has_its_own_default_stream() {
    let here = Stream::current().unwrap().index();
    let there = std::thread::spawn(|| Stream::current().unwrap().index())
        .join()
        .unwrap();
    assert_ne!(here, there);
}

#[test]
fn evaluated_arrays_move_between_threads() {
    let a = ops::arange_to(4).unwrap();
    a.eval().unwrap();
    let v = std::thread::spawn(move || (&a * 2).to_vec::<i32>().unwrap())
        .join()
        .unwrap();
    assert_eq!(v, vec![0, 2, 4, 6]);
}

#[test]
fn an_unevaluated_graph_from_another_thread_is_an_error_not_a_crash() {
    let a = ops::ones(&[4], None).unwrap();
    let lazy = &a + 1.0;
    let r = std::thread::spawn(move || lazy.eval().map_err(|e| e.to_string()))
        .join()
        .unwrap();
    let e = r.unwrap_err();
    assert!(e.contains("Stream"), "{e}");
    // This thread's work is unaffected.
    assert_eq!((&a + 1.0).to_vec::<f32>().unwrap(), vec![2.0; 4]);
}

#[test]
fn threads_compute_independently() {
    let handles: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut total = 0.0f32;
                for i in 0..50 {
                    let x = Array::from_slice(&[t as f32, i as f32], &[2]).unwrap();
                    total += (&x * 2.0).sum(None, false).unwrap().item::<f32>().unwrap();
                }
                total
            })
        })
        .collect();
    for (t, h) in handles.into_iter().enumerate() {
        let expected: f32 = (0..50).map(|i| 2.0 * (t as f32 + i as f32)).sum();
        assert_eq!(h.join().unwrap(), expected);
    }
}

/// Threads evaluating FFTs of the same size at once, each on its own default stream, get the
/// results one thread alone gets. On MLX's CUDA backend they did not before evaluation was
/// serialized (`src/evaluation/encode.rs`): a shared cuFFT plan ran with another thread's
/// work area.
#[test]
fn concurrent_ffts_on_per_thread_streams_match_one_thread() {
    use mlx_rs::num_complex::Complex32;
    use mlx_rs::{fft, random};
    let normal = |k| random::normal(&[3, 4, 5], Default::default(), &random::key(k)?);
    let z = (normal(1).unwrap() + normal(2).unwrap() * Array::from(Complex32::new(0.0, 1.0)))
        .astype(mlx_rs::Dtype::Complex64)
        .unwrap();
    fn run(z: &Array, which: usize) -> Vec<Complex32> {
        let out = if which == 0 {
            fft::fft2(z, None, None, None)
        } else {
            fft::ifft2(z, None, None, None)
        };
        out.unwrap().to_vec().unwrap()
    }
    z.eval().unwrap();
    let want = [run(&z, 0), run(&z, 1)];
    std::thread::scope(|s| {
        for t in 0..2 {
            let (z, want) = (z.clone(), &want);
            s.spawn(move || {
                for round in 0..300 {
                    let which = (round + t) % 2;
                    // A wrong result is another transform's output, off by far more than the
                    // float32 rounding a different kernel schedule could bring.
                    for (g, w) in run(&z, which).iter().zip(&want[which]) {
                        assert!(
                            (g - w).norm() <= 1e-5 * (1.0 + w.norm()),
                            "thread {t}, round {round}: {g} vs {w}"
                        );
                    }
                }
            });
        }
    });
}
