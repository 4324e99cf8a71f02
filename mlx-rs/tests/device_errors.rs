//! Devices and streams given bad input or used after `clear_streams`.

use mlx_rs::{clear_streams, ops, Device, DeviceType, Result};

#[test]
fn devices_that_do_not_exist_are_errors() -> Result<()> {
    for index in [-1, 7, i32::MAX, i32::MIN] {
        let e = Device::new(DeviceType::Cpu, index).unwrap_err().to_string();
        assert!(e.contains(&format!("no Cpu device {index}")), "{e}");
    }
    let gpus = Device::count(DeviceType::Gpu)?;
    assert!(Device::new(DeviceType::Gpu, gpus).is_err());
    assert_eq!(Device::new(DeviceType::Cpu, 0)?.index(), 0);
    Ok(())
}

#[test]
fn the_thread_works_after_clear_streams() -> Result<()> {
    // Its own thread: clear_streams acts on the calling thread's streams.
    std::thread::spawn(|| -> Result<()> {
        assert_eq!(ops::ones(&[2], None)?.sum(None, false)?.item::<f32>()?, 2.0);
        clear_streams()?;
        assert_eq!(ops::ones(&[3], None)?.sum(None, false)?.item::<f32>()?, 3.0);
        clear_streams()?;
        clear_streams()?;
        assert_eq!(ops::arange_to(4)?.sum(None, false)?.item::<i32>()?, 6);
        Ok(())
    })
    .join()
    .expect("the thread panicked")
}
