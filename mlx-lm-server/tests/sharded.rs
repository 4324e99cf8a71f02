//! The server split over a process group (`launch -n 2 -- server ...`): ranks started by
//! `mlx_launch::Launch` on loopback (the ring backend, and MPI where `mpirun` exists), rank 0
//! serving HTTP, the other following its engine steps. Its greedy answers (whole and
//! streamed, one request and several at once, tensor- and pipeline-parallel) must equal the
//! one-process server's; a sampled request keeps the ranks in step (a rank whose tokens
//! differ from rank 0's ends with an error, and the group's end is checked); a grammar is a
//! 400; a follower killed while rank 0 idles makes rank 0 exit with an error by itself.
//!
//! The ranks are this test binary, re-run with `--ignored --exact child_server` and the case
//! in the environment; rank 0 stops on SIGINT, as the server does on ctrl-c.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::Parser;
use common::{chat_stream_text, post, stream};
use mlx_launch::{Launch, LaunchReport};
use mlx_rs::distributed::{self, Backend};
use serde_json::{json, Value};

/// One group at a time: the CI machine has two cores.
static ONE_GROUP_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A hang guard for a whole group, not a speed check.
const GROUP_LIMIT: Duration = Duration::from_secs(600);

/// The flags every server here runs with (those of `common::options`).
const FLAGS: [&str; 8] = [
    "--served-model-name",
    "test-model",
    "--context-length",
    "512",
    "--decode-concurrency",
    "4",
    "--log-requests",
    "false",
];

/// A port no one listens on now (the group's rank 0 binds it a moment later).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A split server running: its ranks, their pid files' folder, and its address.
struct Group {
    ranks: usize,
    launched: std::thread::JoinHandle<LaunchReport>,
    dir: PathBuf,
    base: String,
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Group {
    /// Starts `ranks` processes serving `model` split over `backend`, with `extra` flags,
    /// and waits until rank 0 answers `/health`. `stop_others`: whether the launcher stops
    /// the group when a rank fails (off to see a rank end by itself).
    async fn start(
        backend: Backend,
        ranks: usize,
        model: &str,
        extra: &[&str],
        stop_others: bool,
    ) -> Group {
        let one = ONE_GROUP_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Written once here, not by each rank at once.
        let model_dir = common::model_dir(model);
        let port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "mlx-lm-server-sharded-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = std::env::current_exe().unwrap();
        let launch = Launch::new(ranks, &exe)
            .args([
                "--ignored",
                "--exact",
                "child_server",
                "--nocapture",
                "--test-threads=1",
            ])
            .backend(backend)
            .timeout(GROUP_LIMIT)
            .stop_others_on_failure(stop_others)
            .echo(false)
            .env("SHARDED_MODEL", &model_dir)
            .env("SHARDED_PORT", port.to_string())
            .env("SHARDED_FLAGS", extra.join(" "))
            .env("SHARDED_PIDS", &dir);
        let launched = std::thread::spawn(move || launch.run_report().unwrap());
        let group = Group {
            ranks,
            launched,
            dir,
            base: format!("http://127.0.0.1:{port}"),
            _one: one,
        };
        group.wait_healthy().await;
        group
    }

    async fn wait_healthy(&self) {
        let client = reqwest::Client::new();
        loop {
            if self.launched.is_finished() {
                panic!("the group ended before serving");
            }
            let health = client
                .get(format!("{}/health", self.base))
                .timeout(Duration::from_secs(5))
                .send()
                .await;
            if health.is_ok_and(|r| r.status() == 200) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A rank's process id, from the file it wrote before serving.
    fn pid(&self, rank: usize) -> u32 {
        let file = self.dir.join(format!("rank{rank}.pid"));
        std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
            .trim()
            .parse()
            .unwrap()
    }

    /// Sends `signal` to a rank.
    fn signal(&self, rank: usize, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.pid(rank).to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} rank {rank}");
    }

    /// Waits for the group's end.
    async fn finish(self) -> LaunchReport {
        let launched = self.launched;
        let report = tokio::task::spawn_blocking(move || launched.join().unwrap())
            .await
            .unwrap();
        let _ = std::fs::remove_dir_all(&self.dir);
        assert!(!report.timed_out, "the group ran past {GROUP_LIMIT:?}");
        assert_eq!(report.ranks.len(), self.ranks);
        report
    }

    /// Stops rank 0 as ctrl-c does and checks every rank ended well: rank 0's server shut
    /// down, and the others followed to the end, in step.
    async fn stop(self) {
        self.signal(0, "INT");
        let report = self.finish().await;
        for r in &report.ranks {
            // The rank's own test passed. Under MPI, once rank 0 exits mpirun may end a rank
            // still tearing down after its test passed (TERM: no status of its own).
            let passed = r.output.contains("test result: ok. 1 passed");
            assert!(
                passed && (r.succeeded() || r.status.is_none()),
                "rank {}:\n{}",
                r.rank,
                r.output
            );
        }
    }
}

/// A rank of the group: serves (rank 0) or follows, as `mlx_lm_server::serve` does under a
/// launcher.
#[test]
#[ignore = "a rank of the groups the other tests start"]
fn child_server() {
    let group = distributed::init(false, None).unwrap();
    assert!(group.size() > 1, "started without a launcher");
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} not set"));
    let pids = PathBuf::from(env("SHARDED_PIDS"));
    std::fs::write(
        pids.join(format!("rank{}.pid", group.rank())),
        std::process::id().to_string(),
    )
    .unwrap();
    let (model, port, flags) = (
        env("SHARDED_MODEL"),
        env("SHARDED_PORT"),
        env("SHARDED_FLAGS"),
    );
    let mut args = vec!["server", "--model", &model, "--port", &port];
    args.extend(FLAGS);
    args.extend(flags.split_whitespace());
    let options = mlx_lm_server::ServerOptions::parse_from(args);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if let Err(e) = runtime.block_on(mlx_lm_server::serve(options)) {
        panic!("rank {}: {e}", group.rank());
    }
}

/// The requests each case sends: two chats, one with a system message.
fn chats() -> Vec<Value> {
    vec![
        json!([{"role": "user", "content": "Name three rivers."}]),
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sky blue?"}]),
        json!([{"role": "user", "content": "Count to ten, slowly."}]),
    ]
}

const MAX_TOKENS: usize = 24;

async fn chat(base: &str, messages: &Value, extra: Value) -> Value {
    let mut body = json!({"model": "test-model", "messages": messages, "max_tokens": MAX_TOKENS});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (status, r) = post(base, "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{r}");
    r
}

fn content(r: &Value) -> String {
    r["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The one-process server's greedy answers to [`chats`], and its answer to a sampled
/// request with a seed.
async fn reference(model: &str) -> (Vec<String>, String) {
    let server = common::start(common::options(model)).await;
    let mut answers = Vec::new();
    for m in chats() {
        answers.push(content(&chat(&server.base, &m, json!({})).await));
    }
    let sampled = content(
        &chat(
            &server.base,
            &chats()[0],
            json!({"temperature": 0.8, "seed": 7}),
        )
        .await,
    );
    server.shutdown().await;
    assert!(answers.iter().all(|a| !a.is_empty()), "{answers:?}");
    (answers, sampled)
}

/// Every check of a split server of `model` against the one-process server.
async fn serves_as_one_process(backend: Backend, ranks: usize, model: &str, extra: &[&str]) {
    let (want, sampled) = reference(model).await;
    let group = Group::start(backend, ranks, model, extra, true).await;
    let base = group.base.clone();
    let chats = chats();

    // One at a time, whole and streamed.
    for (m, want) in chats.iter().zip(&want) {
        assert_eq!(
            &content(&chat(&base, m, json!({})).await),
            want,
            "{model} {extra:?}"
        );
    }
    let body = json!({"messages": chats[1], "max_tokens": MAX_TOKENS, "stream": true});
    let (status, events) = stream(&base, "/v1/chat/completions", &body, None).await;
    assert_eq!(status, 200);
    assert_eq!(
        chat_stream_text(&events).0,
        want[1],
        "{model} {extra:?} streamed"
    );

    // At once: the requests join the same steps on every rank.
    let together = futures_join(&base, &chats).await;
    assert_eq!(together, want, "{model} {extra:?} together");

    // Sampled: rank 0's seed reaches every rank (a rank that drew other tokens would stop
    // the group: `stop` checks every rank ended well).
    let got = content(&chat(&base, &chats[0], json!({"temperature": 0.8, "seed": 7})).await);
    assert_eq!(got, sampled, "{model} {extra:?} sampled with a seed");
    let unseeded = chat(&base, &chats[2], json!({"temperature": 1.0})).await;
    assert!(unseeded["usage"]["completion_tokens"].as_u64().unwrap() > 0);

    // A grammar cannot reach the other ranks: a 400 that says so, and the server serves on.
    let (status, r) = post(
        &base,
        "/v1/chat/completions",
        &json!({"messages": chats[0], "max_tokens": 4, "response_format": {"type": "json_object"}}),
    )
    .await;
    assert_eq!(status, 400, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("split over several processes"),
        "{r}"
    );
    assert_eq!(&content(&chat(&base, &chats[0], json!({})).await), &want[0]);

    group.stop().await;
}

/// [`chat`] of every conversation at once, the answers in order.
async fn futures_join(base: &str, chats: &[Value]) -> Vec<String> {
    let tasks: Vec<_> = chats
        .iter()
        .map(|m| {
            let (base, m) = (base.to_string(), m.clone());
            tokio::spawn(async move { content(&chat(&base, &m, json!({})).await) })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_tensor_parallel_over_the_ring() {
    serves_as_one_process(Backend::Ring, 2, "llama3", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen3_5_tensor_parallel_over_the_ring() {
    serves_as_one_process(Backend::Ring, 2, "qwen3_5", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_by_layers_over_the_ring() {
    serves_as_one_process(Backend::Ring, 2, "llama3", &["--pipeline"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen3_5_tensor_parallel_over_mpi() {
    if mlx_launch::has_mpirun() {
        serves_as_one_process(Backend::Mpi, 2, "qwen3_5", &[]).await;
    } else {
        println!("SKIPPED: no mpirun on PATH (Debian: apt install openmpi-bin)");
    }
}

/// A follower killed while rank 0 idles: rank 0's heartbeat finds the lost peer, and its
/// server exits with an error by itself (the launcher is told not to stop it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_follower_ends_rank_0() {
    let group = Group::start(Backend::Ring, 2, "llama3", &[], false).await;
    let want = content(&chat(&group.base, &chats()[0], json!({})).await);
    assert!(!want.is_empty());
    group.signal(1, "KILL");
    let killed = Instant::now();
    let report = group.finish().await;
    let rank0 = &report.ranks[0];
    println!(
        "rank 0 exited {:.1} s after its follower was killed",
        killed.elapsed().as_secs_f64()
    );
    assert!(
        rank0.status.is_some_and(|s| !s.success()),
        "rank 0 must fail by itself: {:?}\n{}",
        rank0.status,
        rank0.output
    );
    assert!(
        rank0.output.contains("the process group failed"),
        "{}",
        rank0.output
    );
    assert!(report.ranks[1].status.is_some_and(|s| !s.success()));
}
