//! Helpers shared by the mlx-rs integration tests.

use std::process::ExitStatus;

/// Runs the ignored test `child` of the current test binary in a child process, so that a
/// crash fails the parent test instead of killing the binary; returns its exit status and
/// its stdout and stderr together.
pub fn run_child(child: &str) -> (ExitStatus, String) {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--ignored", "--exact", child, "--nocapture"])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status, text)
}
