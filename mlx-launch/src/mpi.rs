//! Ranks started by Open MPI's `mpirun` ([`Backend::Mpi`](mlx_rs::distributed::Backend::Mpi)), as
//! `mlx.launch --backend mpi` starts them.
//!
//! `mpirun` starts the processes, so the launcher cannot hand each rank pipes of its own or
//! wait for it. Instead every rank runs a small shell script: it picks the rank's command and
//! environment by `OMPI_COMM_WORLD_RANK` (MLX's MPI backend requires Open MPI), sends the
//! rank's stdout and stderr to files that the launcher follows ([`Tail`]), and writes the
//! exit status beside them. The report then has each rank's own output, status and time, as
//! for the other backends. A rank killed by signal `N` reports exit code `128 + N`, as a
//! shell sees it.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

use mlx_rs::distributed::config::MPI_LIBNAME;
use mlx_rs::{Error, Result};

use crate::output::{Echo, Tail};
use crate::{LaunchReport, LauncherReport, RankReport};

/// How long `mpirun` gets to stop its ranks after `SIGTERM` before it is killed outright.
const TERM_GRACE: Duration = Duration::from_secs(10);

/// What a group under `mpirun` needs from the launcher.
pub(super) struct Options<'a> {
    pub dir: &'a Path,
    pub echo: &'a Echo,
    pub timeout: Option<Duration>,
    pub stop_others_on_failure: bool,
}

/// Starts `commands[r]` as rank `r` under `mpirun` and waits for the group.
pub(super) fn run(commands: &[Command], opts: &Options<'_>) -> Result<LaunchReport> {
    let ranks = commands.len();
    let script = opts.dir.join("rank.sh");
    std::fs::write(&script, script_text(opts.dir, commands)?)
        .map_err(|e| Error::io(format!("[launch] writing {}", script.display()), e))?;
    let mut mpirun = Command::new("mpirun");
    mpirun
        .args(["-np", &ranks.to_string()])
        // More ranks than cores is this launcher's normal case (tests, a laptop), and Open
        // MPI's default binding would put each rank (and every thread it starts) on one core.
        .args(["--oversubscribe", "--bind-to", "none", "--"])
        .arg("/bin/sh")
        .arg(&script)
        // Open MPI refuses to start as root (containers, CI) without both; they change
        // nothing for anyone else.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if std::env::var_os(MPI_LIBNAME).is_none() && !sets(commands, MPI_LIBNAME) {
        if let Some(lib) = libmpi_of_mpirun() {
            mpirun.env(MPI_LIBNAME, lib);
        }
    }
    let start = Instant::now();
    let mut child = mpirun.spawn().map_err(|e| {
        let context = if e.kind() == std::io::ErrorKind::NotFound {
            "[launch] the mpi backend starts its ranks with Open MPI's mpirun, which is not \
             on PATH (Debian: apt install openmpi-bin)"
        } else {
            "[launch] starting mpirun"
        };
        Error::io(context, e)
    })?;

    let ended = Arc::new(AtomicBool::new(false));
    let launcher_output = Arc::new(Mutex::new(String::new()));
    let mut readers: Vec<JoinHandle<()>> = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(
            opts.echo
                .forward(out, "mpirun".into(), false, &launcher_output),
        );
    }
    if let Some(err) = child.stderr.take() {
        readers.push(
            opts.echo
                .forward(err, "mpirun".into(), true, &launcher_output),
        );
    }
    let outputs: Vec<Arc<Mutex<String>>> = (0..ranks)
        .map(|_| Arc::new(Mutex::new(String::new())))
        .collect();
    for (rank, output) in outputs.iter().enumerate() {
        for (ext, to_stderr) in [("out", false), ("err", true)] {
            let tail = Tail::new(opts.dir.join(format!("rank-{rank}.{ext}")), &ended);
            readers.push(
                opts.echo
                    .forward(tail, format!("rank {rank}"), to_stderr, output),
            );
        }
    }

    // Each rank's status and when it was seen.
    let mut ends: Vec<Option<(ExitStatus, Duration)>> = vec![None; ranks];
    let mut timed_out = false;
    // mpirun's status, or `None` when the launcher stopped it.
    let launcher_status = loop {
        let exited = child.try_wait().ok().flatten();
        // Read after mpirun's status: once it has exited, every rank's status file is final.
        read_statuses(opts.dir, &mut ends, start);
        if exited.is_some() {
            break exited;
        }
        let failed = ends.iter().flatten().any(|(s, _)| !s.success());
        timed_out = opts.timeout.is_some_and(|t| start.elapsed() >= t);
        if (failed && opts.stop_others_on_failure) || timed_out {
            stop(&mut child);
            // Statuses written while mpirun stopped the ranks.
            read_statuses(opts.dir, &mut ends, start);
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    ended.store(true, Ordering::Release);
    for r in readers {
        let _ = r.join();
    }
    let take = |o: &Arc<Mutex<String>>| o.lock().map(|s| s.clone()).unwrap_or_default();
    let ranks = ends
        .into_iter()
        .zip(&outputs)
        .enumerate()
        .map(|(rank, (end, output))| RankReport {
            rank,
            status: end.map(|(s, _)| s),
            output: take(output),
            elapsed: end.map_or_else(|| start.elapsed(), |(_, t)| t),
        })
        .collect();
    Ok(LaunchReport {
        ranks,
        timed_out,
        launcher: Some(LauncherReport {
            name: "mpirun".into(),
            status: launcher_status,
            output: take(&launcher_output),
        }),
    })
}

/// Records the status of each rank that has written one since the last look.
fn read_statuses(dir: &Path, ends: &mut [Option<(ExitStatus, Duration)>], start: Instant) {
    for (rank, end) in ends.iter_mut().enumerate() {
        if end.is_none() {
            *end =
                read_status(&dir.join(format!("rank-{rank}.status"))).map(|s| (s, start.elapsed()));
        }
    }
}

/// Asks `mpirun` to stop its ranks (`SIGTERM`, which it forwards to them), and kills it if
/// it has not ended within [`TERM_GRACE`].
///
/// mpirun stays in the launcher's process group, so that Ctrl-C reaches it (and it stops
/// the ranks) as it reaches ranks the launcher starts itself.
fn stop(child: &mut Child) {
    let _ = kill_process(Pid::from_child(child), Signal::TERM);
    let asked = Instant::now();
    while asked.elapsed() < TERM_GRACE {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Whether any rank's command sets `key` itself.
fn sets(commands: &[Command], key: &str) -> bool {
    commands
        .iter()
        .any(|c| c.get_envs().any(|(k, _)| k == OsStr::new(key)))
}

/// A status file the rank script wrote: its exit code, as a shell reports it.
fn read_status(path: &Path) -> Option<ExitStatus> {
    let text = std::fs::read_to_string(path).ok()?;
    // Written with one `echo`: an incomplete read has no newline yet.
    let code: i32 = text.strip_suffix('\n')?.trim().parse().ok()?;
    Some(ExitStatus::from_raw((code & 0xff) << 8))
}

/// The `libmpi` that Open MPI's own tools load, for MLX to load too (what `mlx.launch`
/// passes as `MLX_MPI_LIBNAME`): on Debian, `libmpi.so`, which MLX asks for, comes only
/// with the development package, while the run-time package has `libmpi.so.40`.
fn libmpi_of_mpirun() -> Option<PathBuf> {
    let ompi_info = which("ompi_info")?;
    let listing = if cfg!(target_os = "macos") {
        Command::new("otool").arg("-L").arg(&ompi_info).output()
    } else {
        Command::new("ldd").arg(&ompi_info).output()
    }
    .ok()?;
    let listing = String::from_utf8_lossy(&listing.stdout);
    let line = listing.lines().find(|l| l.contains("libmpi"))?;
    // ldd: `libmpi.so.40 => /lib/x86_64-linux-gnu/libmpi.so.40 (0x...)`;
    // otool: `/opt/homebrew/opt/open-mpi/lib/libmpi.40.dylib (compatibility ...)` or
    // `@rpath/libmpi.40.dylib (...)`, relative to the installation's lib folder.
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let path = match (words.next(), words.next()) {
        (Some("=>"), Some(resolved)) if resolved.starts_with('/') => PathBuf::from(resolved),
        _ => match first.strip_prefix("@rpath/") {
            Some(name) => ompi_info.parent()?.parent()?.join("lib").join(name),
            None => PathBuf::from(first),
        },
    };
    path.is_file().then_some(path)
}

/// Whether Open MPI's `mpirun`, which the MPI backend starts its ranks with, is on `PATH`
/// (the tests that run that backend skip where it is not).
pub fn has_mpirun() -> bool {
    which("mpirun").is_some()
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// The script every rank runs: its command by rank, output to `dir/rank-R.{out,err}`, exit
/// status to `dir/rank-R.status`.
fn script_text(dir: &Path, commands: &[Command]) -> Result<Vec<u8>> {
    let mut s: Vec<u8> = Vec::new();
    // Writing to a Vec cannot fail.
    let mut w = |parts: &[&[u8]]| parts.iter().for_each(|p| s.extend_from_slice(p));
    w(&[b"r=\"$OMPI_COMM_WORLD_RANK\"\ncase \"$r\" in\n"]);
    for (rank, cmd) in commands.iter().enumerate() {
        w(&[format!("{rank})\n").as_bytes()]);
        if let Some(cwd) = cmd.get_current_dir() {
            w(&[b"  cd ", &quote(cwd.as_os_str()), b" || exit 126\n"]);
        }
        for (key, value) in cmd.get_envs() {
            let name = key.to_str().filter(|k| is_shell_name(k)).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "[launch] the mpi backend cannot pass the environment variable {key:?} \
                     to rank {rank}: not a shell variable name"
                ))
            })?;
            match value {
                Some(v) => w(&[b"  export ", name.as_bytes(), b"=", &quote(v), b"\n"]),
                None => w(&[b"  unset ", name.as_bytes(), b"\n"]),
            }
        }
        w(&[b"  set --"]);
        for part in std::iter::once(cmd.get_program()).chain(cmd.get_args()) {
            w(&[b" ", &quote(part)]);
        }
        w(&[b"\n  ;;\n"]);
    }
    w(&[
        b"*) echo \"[launch] mpirun started rank '$r', which is not one of ",
        commands.len().to_string().as_bytes(),
        b"\" >&2; exit 125 ;;\nesac\n",
    ]);
    let d = quote(dir.as_os_str());
    // When a rank dies, mpirun may stop the job (SIGTERM to this shell's process group)
    // before the shell has written the dead rank's status. The trap lets the shell finish
    // waiting and write it; a command that the stop itself ended (128 + TERM or KILL) leaves
    // no status, which is how a stopped rank is told from one that failed.
    w(&[
        b"trap 'stopped=1' TERM\n",
        b"\"$@\" >",
        &d,
        b"/rank-\"$r\".out 2>",
        &d,
        b"/rank-\"$r\".err </dev/null\n",
        b"s=$?\n",
        b"case \"${stopped:-}:$s\" in 1:143|1:137) ;; *)\n",
        // Written whole, then renamed: the launcher never reads half a status.
        b"  echo \"$s\" >",
        &d,
        b"/rank-\"$r\".status.tmp && mv ",
        &d,
        b"/rank-\"$r\".status.tmp ",
        &d,
        b"/rank-\"$r\".status ;;\nesac\n",
        b"exit \"$s\"\n",
    ]);
    Ok(s)
}

/// `s` in single quotes, for sh: every byte literal, a quote as `'\''`.
fn quote(s: &OsStr) -> Vec<u8> {
    let mut q = vec![b'\''];
    for &b in s.as_bytes() {
        if b == b'\'' {
            q.extend_from_slice(b"'\\''");
        } else {
            q.push(b);
        }
    }
    q.push(b'\'');
    q
}

fn is_shell_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_script_quotes_what_it_passes() {
        let mut a = Command::new("/bin/prog");
        a.args(["it's", "two words", "$HOME"])
            .env("X", "a'b")
            .env_remove("Y");
        let mut b = Command::new("python3");
        b.current_dir("/tmp/a b");
        let text = String::from_utf8(script_text(Path::new("/d"), &[a, b]).unwrap()).unwrap();
        assert!(text.contains("0)\n  export X='a'\\''b'\n  unset Y\n  set -- '/bin/prog' 'it'\\''s' 'two words' '$HOME'\n  ;;"), "{text}");
        assert!(
            text.contains("1)\n  cd '/tmp/a b' || exit 126\n  set -- 'python3'\n  ;;"),
            "{text}"
        );
        // Run by a shell: each argument arrives whole, and the status file appears.
        let dir = std::env::temp_dir().join(format!("mlx-mpi-script-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = Command::new("/bin/sh");
        c.args([
            "-c",
            "printf '%s|' \"$@\"; echo \"$X\"; exit 3",
            "sh",
            "it's",
            "a b",
            "$HOME",
        ])
        .env("X", "x'y");
        let script = dir.join("rank.sh");
        std::fs::write(&script, script_text(&dir, &[c]).unwrap()).unwrap();
        let status = Command::new("/bin/sh")
            .arg(&script)
            .env("OMPI_COMM_WORLD_RANK", "0")
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(3));
        assert_eq!(
            std::fs::read_to_string(dir.join("rank-0.out")).unwrap(),
            "it's|a b|$HOME|x'y\n"
        );
        assert_eq!(
            read_status(&dir.join("rank-0.status")).unwrap().code(),
            Some(3)
        );
        // A rank mpirun should not have started.
        let status = Command::new("/bin/sh")
            .arg(&script)
            .env("OMPI_COMM_WORLD_RANK", "7")
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(125));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The rank script as mpirun would run it, as the leader of its own process group.
    fn start_rank_script(dir: &Path, command: &str) -> Child {
        use std::os::unix::process::CommandExt;
        let mut c = Command::new("/bin/sh");
        c.args(["-c", command]);
        let script = dir.join("rank.sh");
        std::fs::write(&script, script_text(dir, &[c]).unwrap()).unwrap();
        Command::new("/bin/sh")
            .arg(&script)
            .env("OMPI_COMM_WORLD_RANK", "0")
            .process_group(0)
            .spawn()
            .unwrap()
    }

    fn signal(target: &str) {
        let ok = Command::new("kill")
            .args(["-TERM", "--", target])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    #[test]
    fn a_rank_that_dies_while_mpirun_stops_the_job_keeps_its_status() {
        let dir = std::env::temp_dir().join(format!("mlx-mpi-stop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Dies of SIGABRT on its own while the stop's SIGTERM reaches its shell.
        let mut shell = start_rank_script(&dir, "trap '' TERM; sleep 1; kill -ABRT $$");
        std::thread::sleep(Duration::from_millis(300));
        signal(&shell.id().to_string());
        assert_eq!(shell.wait().unwrap().code(), Some(134));
        assert_eq!(
            read_status(&dir.join("rank-0.status")).unwrap().code(),
            Some(134)
        );
        std::fs::remove_file(dir.join("rank-0.status")).unwrap();

        // Ended by the stop itself (SIGTERM to the group): no status, as for a stopped rank.
        let mut shell = start_rank_script(&dir, "sleep 30");
        std::thread::sleep(Duration::from_millis(300));
        signal(&format!("-{}", shell.id()));
        assert_eq!(shell.wait().unwrap().code(), Some(143));
        assert!(!dir.join("rank-0.status").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn variables_a_shell_cannot_set_are_refused() {
        let mut c = Command::new("p");
        c.env("A-B", "1");
        let err = script_text(Path::new("/d"), &[c]).unwrap_err().to_string();
        assert!(err.contains("\"A-B\""), "{err}");
    }
}
