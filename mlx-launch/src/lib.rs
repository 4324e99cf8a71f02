//! Starting a process group on this machine (Python: `mlx.launch` with local hosts).
//!
//! [`Launch`] starts one process per rank with the environment the backend reads (a
//! generated loopback hostfile for the ring backend, rank 0's address for NCCL, a temporary
//! folder of its own that keeps MLX's kernel caches warm from one launch to the next), or
//! has Open MPI's `mpirun` start them for the MPI backend (`mpi.rs`). It forwards each
//! rank's output line by line with its rank in front, and fails when any rank fails or the
//! group runs past its time limit. `examples/launch.rs` is the command-line form; the facade
//! re-exports this crate as `mlx::launch`.
//!
//! ```no_run
//! use mlx_launch::Launch;
//! use mlx_rs::distributed::Backend;
//! let report = Launch::new(2, "target/release/examples/data_parallel")
//!     .backend(Backend::Ring)
//!     .timeout(std::time::Duration::from_secs(600))
//!     .run()?;
//! println!("{} ranks finished", report.ranks.len());
//! # Ok::<(), mlx_rs::Error>(())
//! ```

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mlx_rs::distributed::{config, Backend};
use mlx_rs::{Error, Result};

mod gpus;
mod hostfile;
mod mpi;
mod output;
mod scratch;

pub use gpus::rank_gpu;
pub use hostfile::loopback_hostfile;
pub use mpi::has_mpirun;
use output::Echo;

/// How one rank ended.
#[derive(Debug)]
pub struct RankReport {
    pub rank: usize,
    /// Its exit status; `None` when the launcher stopped it (another rank failed, or the
    /// group ran out of time).
    pub status: Option<ExitStatus>,
    /// Everything it wrote to stdout and stderr, in order, without the rank prefix.
    pub output: String,
    /// From the start of the group to the rank's exit.
    pub elapsed: Duration,
}

impl RankReport {
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
}

/// How the program that started the ranks ended, when that was not the launcher itself
/// (`mpirun`, for [`Backend::Mpi`]).
#[derive(Debug)]
pub struct LauncherReport {
    pub name: String,
    /// Its exit status; `None` when the launcher stopped it.
    pub status: Option<ExitStatus>,
    /// What it wrote itself (not its ranks' output), in order.
    pub output: String,
}

/// How a group ended: each rank's report, and whether the time limit stopped it.
#[derive(Debug)]
pub struct LaunchReport {
    pub ranks: Vec<RankReport>,
    pub timed_out: bool,
    /// The program that started the ranks, if not the launcher (`mpirun`).
    pub launcher: Option<LauncherReport>,
}

impl LaunchReport {
    pub fn succeeded(&self) -> bool {
        !self.timed_out
            && self.ranks.iter().all(RankReport::succeeded)
            && self
                .launcher
                .as_ref()
                .map_or(true, |l| l.status.is_some_and(|s| s.success()))
    }

    /// `Err` describing the first rank that failed (with the end of its output), if any did,
    /// or else the launcher that failed.
    pub fn check(self) -> Result<LaunchReport> {
        if self.succeeded() {
            return Ok(self);
        }
        let stopped = |status: Option<ExitStatus>| match status {
            Some(s) => format!("exited with {s}"),
            None if self.timed_out => "was stopped at the time limit".to_string(),
            None => "was stopped".to_string(),
        };
        let failed = self
            .ranks
            .iter()
            .filter(|r| !r.succeeded())
            .min_by_key(|r| (r.status.is_none(), r.elapsed));
        let msg = match (failed, &self.launcher) {
            (Some(r), _) => format!(
                "rank {} {} after {:.1} s; its last output:\n{}",
                r.rank,
                stopped(r.status),
                r.elapsed.as_secs_f64(),
                last_lines(&r.output)
            ),
            (None, Some(l)) => format!(
                "{} {}; its last output:\n{}",
                l.name,
                stopped(l.status),
                last_lines(&l.output)
            ),
            (None, None) => "the group was stopped at the time limit".to_string(),
        };
        Err(Error::io("[launch]", std::io::Error::other(msg)))
    }
}

fn last_lines(output: &str) -> String {
    let tail: Vec<&str> = output.lines().rev().take(20).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// A process group to start on this machine: `ranks` copies of a program (or a command of
/// your own for some ranks), each told its rank and its peers.
#[derive(Debug)]
pub struct Launch {
    ranks: usize,
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    backend: Backend,
    connections: usize,
    timeout: Option<Duration>,
    stop_others_on_failure: bool,
    echo: bool,
    overrides: Vec<(usize, Command)>,
}

static LAUNCHES: AtomicU64 = AtomicU64::new(0);

impl Launch {
    /// `ranks` processes running `program`; the ring backend, one connection per neighbour,
    /// no time limit, output echoed with rank prefixes, the others stopped when one fails.
    pub fn new(ranks: usize, program: impl AsRef<OsStr>) -> Launch {
        Launch {
            ranks,
            program: program.as_ref().to_os_string(),
            args: Vec::new(),
            env: Vec::new(),
            backend: Backend::Ring,
            connections: 1,
            timeout: None,
            stop_others_on_failure: true,
            echo: true,
            overrides: Vec::new(),
        }
    }

    /// Arguments for every rank's program.
    pub fn args<I, S>(mut self, args: I) -> Launch
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// An environment variable for every rank.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Launch {
        self.env
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// The backend whose environment to set up: `Ring` (the default), `Nccl`, or `Mpi`,
    /// whose ranks Open MPI's `mpirun` (found on `PATH`) starts. Under `mpirun`, a rank that
    /// fails ends the group whatever [`Launch::stop_others_on_failure`] says, and the
    /// launcher passes `MLX_MPI_LIBNAME` (the `libmpi` of Open MPI's own tools) unless it is
    /// set, as `mlx.launch` does.
    pub fn backend(mut self, backend: Backend) -> Launch {
        self.backend = backend;
        self
    }

    /// Ring connections between neighbours (`mlx.launch --connections-per-ip`).
    pub fn connections(mut self, n: usize) -> Launch {
        self.connections = n.max(1);
        self
    }

    /// Stops every rank still running after `limit`; the group then fails.
    pub fn timeout(mut self, limit: Duration) -> Launch {
        self.timeout = Some(limit);
        self
    }

    /// Whether a failing rank stops the others at once (the default), or they run on until
    /// they end by themselves or the time limit stops them.
    pub fn stop_others_on_failure(mut self, stop: bool) -> Launch {
        self.stop_others_on_failure = stop;
        self
    }

    /// Whether to forward each rank's output, prefixed with `[rank N]` (the default); it is
    /// collected in the report either way.
    pub fn echo(mut self, echo: bool) -> Launch {
        self.echo = echo;
        self
    }

    /// Runs `command` as rank `rank` instead of the program (a Python MLX rank, say). Its
    /// environment gets the rank's variables too. Under [`Backend::Mpi`] the command's
    /// program, arguments, working folder and variables reach the rank through a shell
    /// script, and an `env_clear` does not (a `Command` does not tell it).
    pub fn rank_command(mut self, rank: usize, command: Command) -> Launch {
        self.overrides.retain(|(r, _)| *r != rank);
        self.overrides.push((rank, command));
        self
    }

    /// Starts the group, waits for it, and fails if any rank fails or the time runs out.
    pub fn run(self) -> Result<LaunchReport> {
        self.run_report()?.check()
    }

    /// Starts the group and waits for it; the report says how each rank ended.
    pub fn run_report(mut self) -> Result<LaunchReport> {
        if self.ranks == 0 {
            return Err(Error::InvalidArgument(
                "[launch] a group needs at least one rank".into(),
            ));
        }
        if let Some((r, _)) = self.overrides.iter().find(|(r, _)| *r >= self.ranks) {
            return Err(Error::InvalidArgument(format!(
                "[launch] rank {r} is not a rank of a group of {}",
                self.ranks
            )));
        }
        let dir = std::env::temp_dir().join(format!(
            "mlx-launch-{}-{}",
            std::process::id(),
            LAUNCHES.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("[launch] creating {}", dir.display()), e))?;
        let result = self.start_and_wait(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    /// The variables every rank gets, by backend.
    fn group_env(&self, dir: &std::path::Path) -> Result<Vec<(String, String)>> {
        if self.backend == Backend::Mpi {
            // mpirun tells its ranks everything; a stray MLX_WORLD_SIZE would read as NCCL's.
            return Ok(Vec::new());
        }
        let mut env = vec![(config::WORLD_SIZE.to_string(), self.ranks.to_string())];
        match self.backend {
            Backend::Ring | Backend::Any if self.ranks > 1 => {
                let hosts = loopback_hostfile(self.ranks, self.connections)?;
                let path: PathBuf = dir.join("hostfile.json");
                std::fs::write(&path, hosts.to_json())
                    .map_err(|e| Error::io(format!("[launch] writing {}", path.display()), e))?;
                env.push((config::HOSTFILE.to_string(), path.display().to_string()));
            }
            Backend::Nccl => {
                let port = std::net::TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| l.local_addr())
                    .map_err(|e| Error::io("[launch] finding a free port", e))?
                    .port();
                env.push((config::NCCL_HOST_IP.to_string(), "127.0.0.1".to_string()));
                env.push((config::NCCL_PORT.to_string(), port.to_string()));
            }
            _ => {}
        }
        Ok(env)
    }

    fn start_and_wait(&mut self, dir: &std::path::Path) -> Result<LaunchReport> {
        let gpus_chosen = self
            .env
            .iter()
            .any(|(k, _)| k == config::CUDA_VISIBLE_DEVICES);
        if self.backend == Backend::Nccl && !gpus_chosen {
            let visible = std::env::var(config::CUDA_VISIBLE_DEVICES).ok();
            gpus::check_nccl_ranks(self.ranks, visible.as_deref(), mlx_rs::cuda::visible_gpus())?;
        }
        // Held until every rank has ended. Without working locks (a file system without
        // `flock`, say), each rank gets a fresh folder in `dir`: correct, only cold.
        let slots = scratch::claim_n(&scratch::default_root(), self.ranks).unwrap_or_default();
        let commands = self.rank_commands(dir, &slots)?;
        let echo = Echo::new(self.echo);
        if self.backend == Backend::Mpi {
            return mpi::run(
                &commands,
                &mpi::Options {
                    dir,
                    echo: &echo,
                    timeout: self.timeout,
                    stop_others_on_failure: self.stop_others_on_failure,
                },
            );
        }
        let start = Instant::now();
        let mut children: Vec<Running> = Vec::with_capacity(self.ranks);
        for (rank, mut cmd) in commands.into_iter().enumerate() {
            cmd.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            match cmd.spawn() {
                Ok(child) => children.push(Running::new(rank, child, &echo)),
                Err(e) => {
                    for c in &mut children {
                        c.stop();
                    }
                    return Err(Error::io(
                        format!("[launch] starting rank {rank} ({:?})", cmd.get_program()),
                        e,
                    ));
                }
            }
        }
        let mut timed_out = false;
        loop {
            let mut running = 0;
            let mut failed = false;
            for c in &mut children {
                match c.poll(start) {
                    Some(status) if !status.success() => failed = true,
                    Some(_) => {}
                    None => running += 1,
                }
            }
            if running == 0 {
                break;
            }
            if failed && self.stop_others_on_failure {
                children.iter_mut().for_each(Running::stop);
                break;
            }
            if self.timeout.is_some_and(|t| start.elapsed() >= t) {
                timed_out = true;
                children.iter_mut().for_each(Running::stop);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let ranks = children.into_iter().map(|c| c.finish(start)).collect();
        Ok(LaunchReport {
            ranks,
            timed_out,
            launcher: None,
        })
    }

    /// Each rank's command with its environment: the group's, the caller's, its own
    /// temporary folder and (NCCL) GPU.
    fn rank_commands(
        &mut self,
        dir: &std::path::Path,
        slots: &[scratch::Slot],
    ) -> Result<Vec<Command>> {
        let group_env = self.group_env(dir)?;
        let mut commands = Vec::with_capacity(self.ranks);
        for rank in 0..self.ranks {
            let mut cmd = match self.overrides.iter().position(|(r, _)| *r == rank) {
                Some(i) => self.overrides.swap_remove(i).1,
                None => {
                    let mut c = Command::new(&self.program);
                    c.args(&self.args);
                    c
                }
            };
            // MLX caches compiled kernels under `$TMPDIR/mlx`, where processes running at
            // once race: each rank gets a folder of its own (`scratch`), unless the caller
            // chose one.
            let chose = |key: &str| {
                cmd.get_envs().any(|(k, _)| k == key) || self.env.iter().any(|(k, _)| k == key)
            };
            let chose_tmpdir = chose("TMPDIR");
            // MLX runs on GPU 0 of what a process sees, while its NCCL backend puts rank r on
            // GPU `r % visible`: a rank that sees every GPU gives NCCL a stream of another
            // GPU and aborts at the first collective. Each rank sees one GPU, as `mlx.launch`
            // does it, unless the caller chose.
            let gpu = (self.backend == Backend::Nccl && !chose(config::CUDA_VISIBLE_DEVICES))
                .then(|| rank_gpu(rank, std::env::var(config::CUDA_VISIBLE_DEVICES).ok()));
            if let Some(gpu) = gpu {
                cmd.env(config::CUDA_VISIBLE_DEVICES, gpu);
            }
            if !chose_tmpdir {
                let tmp = match slots.get(rank) {
                    Some(slot) => slot.path().to_path_buf(),
                    None => {
                        let tmp = dir.join(format!("rank-{rank}"));
                        std::fs::create_dir_all(&tmp).map_err(|e| {
                            Error::io(format!("[launch] creating {}", tmp.display()), e)
                        })?;
                        tmp
                    }
                };
                cmd.env("TMPDIR", tmp);
            }
            cmd.envs(self.env.iter().map(|(k, v)| (k, v)))
                .envs(group_env.iter().map(|(k, v)| (k, v)));
            if self.backend != Backend::Mpi {
                // Under mpirun the rank is Open MPI's to give.
                cmd.env(config::RANK, rank.to_string());
            }
            commands.push(cmd);
        }
        Ok(commands)
    }
}

/// One rank's process and the threads forwarding its output.
struct Running {
    rank: usize,
    child: Child,
    status: Option<ExitStatus>,
    stopped: bool,
    elapsed: Option<Duration>,
    readers: Vec<JoinHandle<()>>,
    output: Arc<Mutex<String>>,
}

impl Running {
    fn new(rank: usize, mut child: Child, echo: &Echo) -> Running {
        let output = Arc::new(Mutex::new(String::new()));
        let mut readers = Vec::new();
        let streams: [(Option<Box<dyn Read + Send>>, bool); 2] = [
            (child.stdout.take().map(|s| Box::new(s) as _), false),
            (child.stderr.take().map(|s| Box::new(s) as _), true),
        ];
        for (stream, to_stderr) in streams {
            let Some(stream) = stream else { continue };
            readers.push(echo.forward(stream, format!("rank {rank}"), to_stderr, &output));
        }
        Running {
            rank,
            child,
            status: None,
            stopped: false,
            elapsed: None,
            readers,
            output,
        }
    }

    /// The exit status, once the process has ended.
    fn poll(&mut self, start: Instant) -> Option<ExitStatus> {
        if self.status.is_none() && !self.stopped {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.status = Some(status);
                self.elapsed = Some(start.elapsed());
            }
        }
        self.status
    }

    fn stop(&mut self) {
        if self.status.is_none() && !self.stopped {
            let _ = self.child.kill();
            self.stopped = true;
        }
    }

    fn finish(mut self, start: Instant) -> RankReport {
        let _ = self.child.wait();
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let output = self.output.lock().map(|o| o.clone()).unwrap_or_default();
        RankReport {
            rank: self.rank,
            status: if self.stopped { None } else { self.status },
            output,
            elapsed: self.elapsed.unwrap_or_else(|| start.elapsed()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    fn rank(rank: usize, code: i32, output: &str) -> RankReport {
        RankReport {
            rank,
            status: Some(ExitStatus::from_raw(code << 8)),
            output: output.into(),
            elapsed: Duration::from_secs(1),
        }
    }

    #[test]
    fn a_failed_launcher_fails_a_group_whose_ranks_all_succeeded() {
        let report = |launcher: i32| LaunchReport {
            ranks: vec![rank(0, 0, "fine\n"), rank(1, 0, "fine\n")],
            timed_out: false,
            launcher: Some(LauncherReport {
                name: "mpirun".into(),
                status: Some(ExitStatus::from_raw(launcher << 8)),
                output: "mpirun noticed something\n".into(),
            }),
        };
        assert!(report(0).check().is_ok());
        let err = report(1).check().unwrap_err().to_string();
        assert!(
            err.contains("mpirun exited with exit status: 1")
                && err.contains("mpirun noticed something"),
            "{err}"
        );
        // A failed rank comes first: it is the cause, mpirun's failure the consequence.
        let mut r = report(1);
        r.ranks[1] = rank(1, 3, "the cause\n");
        let err = r.check().unwrap_err().to_string();
        assert!(
            err.contains("rank 1 exited") && err.contains("the cause"),
            "{err}"
        );
    }
}
