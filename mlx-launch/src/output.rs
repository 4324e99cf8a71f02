//! Forwarding what a rank (or `mpirun`) writes: line by line, kept for the report and, when
//! echoing, printed with a label in front, one whole line at a time.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Where forwarded lines go: shared by every stream of one group, so that lines of
/// different ranks never interleave within a line.
#[derive(Clone)]
pub(super) struct Echo {
    on: bool,
    lock: Arc<Mutex<()>>,
}

impl Echo {
    pub(super) fn new(on: bool) -> Echo {
        Echo {
            on,
            lock: Arc::new(Mutex::new(())),
        }
    }

    /// Forwards `stream` on a thread of its own until it ends: each line appended to
    /// `output`, and echoed as `[label] line` to stderr (`to_stderr`) or stdout.
    pub(super) fn forward(
        &self,
        stream: impl Read + Send + 'static,
        label: String,
        to_stderr: bool,
        output: &Arc<Mutex<String>>,
    ) -> JoinHandle<()> {
        let echo = self.clone();
        let output = Arc::clone(output);
        std::thread::spawn(move || {
            for line in BufReader::new(stream).split(b'\n') {
                let Ok(line) = line else { break };
                let line = String::from_utf8_lossy(&line);
                let line = line.trim_end_matches('\r');
                if let Ok(mut o) = output.lock() {
                    o.push_str(line);
                    o.push('\n');
                }
                if echo.on {
                    let _guard = echo.lock.lock();
                    // A closed terminal must not stop the group; the report keeps it all.
                    let _ = if to_stderr {
                        writeln!(std::io::stderr(), "[{label}] {line}")
                    } else {
                        writeln!(std::io::stdout(), "[{label}] {line}")
                    };
                }
            }
        })
    }
}

/// How often a [`Tail`] looks for more.
const TAIL_POLL: Duration = Duration::from_millis(10);

/// A file that another process writes, read as a stream: a read waits until there is more
/// (or the file exists at all), and the stream ends once `ended` is set and everything
/// written before that has been read. Ranks under `mpirun` write their output to files.
pub(super) struct Tail {
    path: PathBuf,
    file: Option<File>,
    ended: Arc<AtomicBool>,
}

impl Tail {
    /// `ended` must be set only after every writer of `path` has exited.
    pub(super) fn new(path: PathBuf, ended: &Arc<AtomicBool>) -> Tail {
        Tail {
            path,
            file: None,
            ended: Arc::clone(ended),
        }
    }
}

impl Read for Tail {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            // Read before looking: nothing found after the writers had ended is the end.
            let ended = self.ended.load(Ordering::Acquire);
            let file = match &mut self.file {
                Some(f) => f,
                None => match File::open(&self.path) {
                    Ok(f) => self.file.insert(f),
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                    Err(_) if ended => return Ok(0),
                    Err(_) => {
                        std::thread::sleep(TAIL_POLL);
                        continue;
                    }
                },
            };
            let n = file.read(buf)?;
            if n > 0 || ended {
                return Ok(n);
            }
            std::thread::sleep(TAIL_POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_follows_a_growing_file_and_ends_after_the_writer() {
        let dir = std::env::temp_dir().join(format!("mlx-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out");
        let ended = Arc::new(AtomicBool::new(false));
        let output = Arc::new(Mutex::new(String::new()));
        // Started before the file exists, as a rank's file appears only when the rank starts.
        let reader = Echo::new(false).forward(
            Tail::new(path.clone(), &ended),
            "rank 0".into(),
            false,
            &output,
        );
        std::thread::sleep(Duration::from_millis(30));
        let mut f = File::create(&path).unwrap();
        f.write_all(b"first\nsecond, in ").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(*output.lock().unwrap(), "first\n");
        f.write_all(b"two writes\nno newline at the end").unwrap();
        drop(f);
        ended.store(true, Ordering::Release);
        reader.join().unwrap();
        assert_eq!(
            *output.lock().unwrap(),
            "first\nsecond, in two writes\nno newline at the end\n"
        );
        // A file that never appeared is an empty stream once the group has ended.
        let none = Arc::new(Mutex::new(String::new()));
        Echo::new(false)
            .forward(
                Tail::new(dir.join("never"), &ended),
                "x".into(),
                true,
                &none,
            )
            .join()
            .unwrap();
        assert!(none.lock().unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
