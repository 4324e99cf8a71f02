//! Device info, stream extras, backend queries, memory counters and the distributed group,
//! as a Python user reaches them through `mx.device_info`, `mx.new_thread_local_stream`,
//! `mx.metal.is_available`, `mx.get_active_memory`, `mx.distributed`.

use mlx::core::{
    cuda, device_info, distributed, linalg, memory, metal, ops, with_device, with_stream, Array,
    Device, DeviceInfoValue, DeviceType, Dtype, Stream, ThreadLocalStream,
};

#[test]
fn device_info_is_a_map_of_strings_and_sizes() {
    let info = device_info(None).unwrap();
    assert!(!info.is_empty());
    let cpu = Device::cpu().info().unwrap();
    // MLX's CPU backend reports its name as a string, like Python's mx.device_info(mx.cpu).
    assert!(
        matches!(cpu.get("device_name"), Some(DeviceInfoValue::String(s)) if !s.is_empty()),
        "{cpu:?}"
    );
    if !Device::gpu().is_available() {
        // MLX answers an empty map for a backend it was built without.
        assert!(Device::gpu().info().unwrap().is_empty());
    }
}

#[test]
fn cuda_device_info_names_the_card() {
    let gpu = Device::gpu();
    if !(cuda::is_available().unwrap() && gpu.is_available()) {
        println!("SKIPPED cuda_device_info_names_the_card: no CUDA device (MLX built without CUDA, or no GPU)");
        return;
    }
    // Python: mx.device_info(mx.gpu) on the CUDA wheel.
    let info = gpu.info().unwrap();
    let string = |k: &str| match info.get(k) {
        Some(DeviceInfoValue::String(s)) => s.clone(),
        other => panic!("{k}: {other:?} in {info:?}"),
    };
    let size = |k: &str| match info.get(k) {
        Some(DeviceInfoValue::Size(n)) => *n,
        other => panic!("{k}: {other:?} in {info:?}"),
    };
    assert!(!string("device_name").is_empty());
    assert!(string("architecture").starts_with("sm_"), "{info:?}");
    assert!(size("compute_capability_major") >= 5, "{info:?}");
    let (free, total) = (size("free_memory"), size("total_memory"));
    assert!(total > 0 && free <= total, "{info:?}");
    println!(
        "{} ({}), {} MiB",
        string("device_name"),
        string("architecture"),
        total >> 20
    );
}

#[test]
fn linalg_runs_on_the_cpu_as_in_python() {
    // MLX has no GPU kernels for linalg; Python users pass stream=mx.cpu, Rust users scope
    // the call with with_device.
    let a = Array::from_slice(&[4.0f32, 7.0, 2.0, 6.0], &[2, 2]).unwrap();
    let inv = with_device(&Device::cpu(), || linalg::inv(&a))
        .unwrap()
        .unwrap();
    // det = 10: [[0.6, -0.7], [-0.2, 0.4]]. LAPACK's LU in float32 gets each entry to within
    // a few ulp, not exactly: 4 ulp of 0.7.
    let want = [0.6f32, -0.7, -0.2, 0.4];
    for (g, w) in inv.to_vec::<f32>().unwrap().iter().zip(want) {
        assert!((g - w).abs() <= 4.0 * f32::EPSILON * 0.7, "{g} vs {w}");
    }
    if Device::default_device().unwrap().device_type() == DeviceType::Gpu {
        let e = linalg::inv(&a).unwrap_err().to_string();
        assert!(e.to_lowercase().contains("cpu"), "{e}");
    }
}

#[test]
fn backend_queries_agree_with_the_device_list() {
    let gpu = Device::gpu().is_available();
    assert_eq!(
        metal::is_available().unwrap() || cuda::is_available().unwrap(),
        gpu
    );
}

#[test]
fn thread_local_stream_gives_each_thread_its_own_stream() {
    let tls = ThreadLocalStream::new(&Device::cpu()).unwrap();
    let here = tls.get().unwrap();
    assert_eq!(here, tls.get().unwrap(), "same thread, same stream");
    let there = std::thread::scope(|s| {
        s.spawn(|| {
            let stream = tls.get().unwrap();
            let total = with_stream(&stream, || {
                ops::ones(&[3], None)?.sum(None, false)?.item::<f32>()
            })
            .unwrap();
            tls.synchronize().unwrap();
            (stream.index(), total)
        })
        .join()
        .unwrap()
    });
    assert_ne!(there.0, here.index(), "another thread gets another stream");
    assert_eq!(there.1, 3.0);
    let copy = tls.clone();
    assert_eq!(copy.get().unwrap(), here);
}

#[test]
fn stream_listing_and_clear_streams() {
    std::thread::spawn(|| {
        let s = Stream::new(&Device::cpu()).unwrap();
        assert!(Stream::all().unwrap().contains(&s));
        mlx::core::clear_streams().unwrap();
        // Fresh defaults are made on demand after clearing.
        let x = ops::ones(&[2], None).unwrap().sum(None, false).unwrap();
        assert_eq!(x.item::<f32>().unwrap(), 2.0);
    })
    .join()
    .unwrap();
}

#[test]
fn memory_counters_move_with_allocations() {
    memory::reset_peak_memory().unwrap();
    let a = ops::ones(&[1 << 20], Dtype::Float32).unwrap();
    a.eval().unwrap();
    assert!(memory::get_active_memory().unwrap() >= 4 << 20);
    assert!(memory::get_peak_memory().unwrap() >= 4 << 20);
    let before = memory::set_cache_limit(0).unwrap();
    memory::set_cache_limit(before).unwrap();
    memory::clear_cache().unwrap();
    assert_eq!(memory::get_cache_memory().unwrap(), 0);
}

#[test]
fn single_process_distributed_group_works() {
    let group = distributed::init(false, None).unwrap();
    assert_eq!(group.size(), 1);
    assert_eq!(group.rank(), 0);
    let x = Array::from_slice(&[1.0f32, -2.0, 3.0], &[3]).unwrap();
    for op in [
        distributed::all_sum,
        distributed::all_max,
        distributed::all_min,
    ] {
        assert_eq!(
            op(&x, Some(&group)).unwrap().to_vec::<f32>().unwrap(),
            [1.0, -2.0, 3.0]
        );
    }
    let gathered = distributed::all_gather(&x, None).unwrap();
    assert_eq!(gathered.shape(), &[3]);
    // A size-1 group has no peer to talk to.
    assert!(distributed::send(&x, 1, Some(&group))
        .and_then(|r| r.eval())
        .is_err());
    assert!("no-such-backend".parse::<distributed::Backend>().is_err());
}
