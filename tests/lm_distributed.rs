//! Language models split over the processes of a group (`mlx::lm::sharded_load`,
//! `LanguageModel::shard` / `pipeline`, Python's `sharded_load` and the models' `shard` /
//! `pipeline`), on MLX's ring backend over loopback with 2 and 4 processes started by
//! `mlx::launch::Launch`: each rank loads the golden model whole and split, and the split
//! model's greedy tokens (the compiled decode step, traced once) equal the whole model's,
//! with the prompt's logits within a measured bound. The ranks are this test binary, re-run
//! with `--ignored --exact child_split_generation` and the case in `LM_DISTRIBUTED_CASE`.

mod support;

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use mlx::core::distributed::{self, Backend, Group};
use mlx::core::{Array, Dtype};
use mlx::launch::{Launch, LaunchReport};
use mlx::lm::{
    eval_shares, generate_step, load_model, random_model, GenerateOptions, LanguageModel,
    LoadOptions, Model,
};
use support::lm::model_dir;

/// One group at a time: the CI machine has two cores.
static ONE_GROUP_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs the child test as each of `ranks` processes on `case` (`tensor:NAME` or
/// `pipeline:NAME`) over the ring backend and returns what the ranks printed.
fn run(ranks: usize, case: &str) -> LaunchReport {
    run_on(Backend::Ring, ranks, case).unwrap()
}

/// Whether Open MPI's `mpirun` is on `PATH`; says SKIPPED where not.
fn has_mpirun() -> bool {
    let found = mlx::launch::has_mpirun();
    if !found {
        println!("SKIPPED: no mpirun on PATH (Debian: apt install openmpi-bin)");
    }
    found
}

/// [`run`] over `backend`: ring on loopback, or MPI with the ranks started by `mpirun`
/// (`None` without `mpirun`, after saying so).
fn run_on(backend: Backend, ranks: usize, case: &str) -> Option<LaunchReport> {
    if backend == Backend::Mpi && !has_mpirun() {
        return None;
    }
    if backend == Backend::Nccl && mlx::core::cuda::visible_gpus().unwrap_or(0) < ranks {
        println!("SKIPPED: NCCL needs {ranks} CUDA GPUs, one per rank");
        return None;
    }
    let _one = ONE_GROUP_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let exe = std::env::current_exe().unwrap();
    let args = [
        "--ignored",
        "--exact",
        "child_split_generation",
        "--nocapture",
        "--test-threads=1",
    ];
    let mut launch = Launch::new(ranks, &exe)
        .args(args)
        .backend(backend)
        // A guard against a hung group, not a speed check: 4 ranks of an MoE model on 2
        // cores shared with builds took over 300 s once (177 s alone).
        .timeout(Duration::from_secs(600))
        .echo(false);
    for rank in 0..ranks {
        // A folder of its own per rank: MLX compiles fused CPU kernels into $TMPDIR, and two
        // processes writing one kernel at once race (tests/nn_sharded.rs).
        let dir = std::env::temp_dir().join(format!(
            "mlx-lm-distributed-{}-rank{rank}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = Command::new(&exe);
        command
            .args(args)
            .env("TMPDIR", &dir)
            .env("LM_DISTRIBUTED_CASE", case)
            .env("LM_DISTRIBUTED_BACKEND", backend_name(backend))
            // The whole and the split model prefill the prompt in products of other shapes;
            // with TF32 each would round its own way (tests/support/golden.rs).
            .env("MLX_ENABLE_TF32", "0");
        launch = launch.rank_command(rank, command);
    }
    let report = launch.run_report().unwrap();
    assert!(!report.timed_out, "{case} with {ranks} ranks timed out");
    for r in &report.ranks {
        assert!(
            r.output.contains("1 passed"),
            "{case} over {backend:?}, rank {} of {ranks}:\n{}",
            r.rank,
            r.output
        );
        // The measured difference, for `--nocapture`.
        for line in r
            .output
            .lines()
            .filter(|l| l.contains("max |diff|") || l.contains(" holds "))
        {
            println!("{backend:?}: {line}");
        }
    }
    Some(report)
}

fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Mpi => "mpi",
        Backend::Nccl => "nccl",
        _ => "ring",
    }
}

fn prompt() -> Vec<u32> {
    (1..24).map(|i| (i * 37 + 5) % 384).collect()
}

/// Greedy tokens of the compiled decode step, and how often it was traced.
fn greedy(model: &Model, n: usize) -> (Vec<u32>, u64) {
    let options = GenerateOptions {
        max_tokens: n,
        ..Default::default()
    };
    let mut steps = generate_step(model, &prompt(), &options).unwrap();
    let tokens = steps.by_ref().map(|s| s.unwrap().0).collect();
    (tokens, steps.traces())
}

/// The prompt's logits, one forward without a cache, in float32.
fn logits(model: &Model) -> Vec<f32> {
    let p = prompt();
    let ids = Array::from_slice(&p, &[1, p.len() as i32]).unwrap();
    let l = model.forward(&ids, None).unwrap();
    l.astype(Dtype::Float32).unwrap().to_vec::<f32>().unwrap()
}

fn ring() -> Group {
    let group = distributed::init(true, Backend::Ring).unwrap();
    assert!(group.size() > 1, "started without a launcher");
    group
}

/// The group of the backend [`run_on`] chose (`LM_DISTRIBUTED_BACKEND`).
fn child_group() -> Group {
    match std::env::var("LM_DISTRIBUTED_BACKEND").as_deref() {
        Ok("mpi") => {
            let group = distributed::init(true, Backend::Mpi).unwrap();
            assert!(group.size() > 1, "started without mpirun");
            group
        }
        Ok("nccl") => {
            let group = distributed::init(true, Backend::Nccl).unwrap();
            assert!(group.size() > 1, "started without a launcher");
            group
        }
        _ => ring(),
    }
}

/// The bound on the prompt logits' largest difference for tensor parallelism, by the model's
/// dtype: a split model sums each output projection's products in another order (each rank's
/// heads or hidden features apart, then over the ranks, the bias after the sum) and so rounds
/// otherwise, layer after layer. Measured on the CPU (ring over loopback, 2 ranks): float32
/// 1.9e-6 (llama3) and 2.3e-6 (qwen3_5); bfloat16 2.3e-2 (qwen3, logits of magnitude ~2-4,
/// where a bfloat16 ulp is 1.6e-2). The bounds leave under 2x of those. Pipeline parallelism
/// moves whole hidden states, so its logits are the whole model's bits (bound 0).
fn tensor_logits_bound(dtype: Dtype) -> f32 {
    match dtype {
        Dtype::Bfloat16 | Dtype::Float16 => 4e-2,
        _ => 4e-6,
    }
}

#[test]
#[ignore = "a rank of the *_ranks tests"]
fn child_split_generation() {
    let case = std::env::var("LM_DISTRIBUTED_CASE").unwrap();
    let (mode, name) = case.split_once(':').unwrap();
    let group = child_group();
    if let Some(how) = mode.strip_prefix("cli-") {
        // What `launch -n N -- mlx-lm generate ...` runs on each rank.
        let text = cli_generate(name, how == "pipeline");
        println!("cli output begin\n{text}cli output end");
        return;
    }
    if let Some(how) = mode.strip_prefix("random-") {
        random_split(how, name, &group);
        return;
    }
    let whole = load_model(model_dir(name), LoadOptions::default())
        .unwrap()
        .0;
    if mode == "tensor-error" {
        // Quantized experts whose groups the split would cut: an `Err` naming the layer, as
        // mlx_lm's `shard` raises (a ValueError from `mx.split` of the scales), and the model
        // left whole.
        let mut split = whole.clone();
        let err = split.shard(&group).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "model_type {} cannot be split",
                whole.model_type()
            )) && err.contains("down_proj is quantized in groups of 32")
                && err.contains(&format!("{} processes", group.size())),
            "{err}"
        );
        println!("{case}: {err}");
        assert_eq!(greedy(&split, 4).0, greedy(&whole, 4).0);
        return;
    }
    let mut split = whole.clone();
    match mode {
        "tensor" => split.shard(&group).unwrap(),
        "pipeline" => split.pipeline(&group, None).unwrap(),
        _ => panic!("unknown case {case}"),
    }
    mlx::utils::eval(&split).unwrap();
    let n = 24;
    let (want, _) = greedy(&whole, n);
    let (got, traces) = greedy(&split, n);
    assert_eq!(traces, 1, "{case}: the split decode step traced once");
    assert_eq!(got, want, "{case}, rank {}", group.rank());
    let (a, b) = (logits(&whole), logits(&split));
    assert_eq!(a.len(), b.len());
    let diff = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    println!(
        "{case} ({:?}) rank {} of {}: {n} tokens equal, prompt logits max |diff| {diff:e}",
        whole.dtype(),
        group.rank(),
        group.size()
    );
    let bound = if mode == "tensor" {
        tensor_logits_bound(whole.dtype())
    } else {
        0.0
    };
    assert!(
        diff <= bound,
        "{case}: logits differ by {diff:e} > {bound:e}"
    );
}

/// A random-weight model (`random_model`, the golden config `name`) split over `group`
/// before it is evaluated: each rank holds its share alone, not the whole model, and the
/// split model's greedy tokens equal the whole one's, drawn in the same process (every rank
/// draws the same tensors: the draw's key is the seed and the tensor's name).
fn random_split(how: &str, name: &str, group: &Group) {
    let build = || {
        random_model(model_dir(name), LoadOptions::default(), 7)
            .unwrap()
            .0
    };
    let bytes =
        |m: &Model| -> usize { mlx::utils::tree_leaves(m).iter().map(|a| a.nbytes()).sum() };
    let before = mlx::core::memory::get_active_memory().unwrap();
    let mut split = build();
    match how {
        "tensor" => split.shard(group).unwrap(),
        "pipeline" => split.pipeline(group, None).unwrap(),
        _ => panic!("unknown split {how}"),
    }
    eval_shares(&split).unwrap();
    let held = mlx::core::memory::get_active_memory().unwrap() - before;
    let (share, whole_bytes) = (bytes(&split), bytes(&build()));
    println!(
        "random {how}:{name} rank {} of {}: holds {held} bytes, its share {share}, the whole \
         model {whole_bytes}",
        group.rank(),
        group.size()
    );
    // The share and what the allocator rounds its buffers up to (a page each, at most); the
    // whole model's tensors, drawn to be sliced, are gone.
    assert!(share < whole_bytes);
    let slack = 4096 * mlx::utils::tree_leaves(&split).len();
    assert!(
        held <= share + slack,
        "{how}:{name}: a rank holds {held} bytes for a share of {share}"
    );
    let whole = build();
    mlx::utils::eval(&whole).unwrap();
    let n = 16;
    let (want, _) = greedy(&whole, n);
    let (got, traces) = greedy(&split, n);
    assert_eq!(traces, 1);
    assert_eq!(got, want, "random {how}:{name}, rank {}", group.rank());
}

/// `mlx-lm generate` (greedy, 16 tokens, the text alone) on `name`: what it printed.
fn cli_generate(name: &str, pipeline: bool) -> String {
    #[derive(clap::Parser)]
    struct Generate {
        #[command(flatten)]
        args: mlx::lm::cli::generate::Args,
    }
    let dir = model_dir(name);
    let mut argv = vec![
        "generate".to_string(),
        "--model".into(),
        dir.display().to_string(),
        "--prompt".into(),
        "hello".into(),
        "--max-tokens".into(),
        "16".into(),
        "--verbose".into(),
        "false".into(),
    ];
    if pipeline {
        argv.push("--pipeline".into());
    }
    let args = <Generate as clap::Parser>::parse_from(argv).args;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    mlx::lm::cli::generate::run(&args, &mut std::io::empty(), &mut out, &mut err).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn generate_under_the_launcher_prints_the_text_on_rank_0_alone() {
    // One process: a group of one, the model whole.
    let want = cli_generate("llama3", false);
    assert!(!want.trim().is_empty());
    for (ranks, how) in [(2, "tensor"), (2, "pipeline"), (4, "pipeline")] {
        let report = run(ranks, &format!("cli-{how}:llama3"));
        for r in &report.ranks {
            let printed = if r.rank == 0 { want.as_str() } else { "" };
            assert!(
                r.output
                    .contains(&format!("cli output begin\n{printed}cli output end")),
                "{how}, {ranks} ranks, rank {}:\n{}",
                r.rank,
                r.output
            );
        }
    }
}

#[test]
fn tensor_parallel_llama_generates_the_whole_models_tokens_with_2_ranks() {
    run(2, "tensor:llama3");
}

#[test]
fn tensor_parallel_qwen3_generates_the_whole_models_tokens_with_2_ranks() {
    // Untied output head, per-head q/k norms.
    run(2, "tensor:qwen3");
}

#[test]
fn tensor_parallel_qwen3_5_generates_the_whole_models_tokens_with_2_ranks() {
    // Gated delta net and gated full attention layers.
    run(2, "tensor:qwen3_5");
}

#[test]
fn tensor_parallel_moe_generates_the_whole_models_tokens_with_2_ranks() {
    // Each expert split by its hidden features, the router whole, the block's output summed:
    // Qwen3-MoE's softmax router (a dense layer too: none here), Mixtral's block_sparse_moe.
    run(2, "tensor:qwen3_moe");
    run(2, "tensor:mixtral");
}

#[test]
fn tensor_parallel_gpt_oss_and_ministral3_generate_the_whole_models_tokens_with_2_ranks() {
    // gpt_oss: attention sinks split with their heads, biased experts (the down projection's
    // bias divided by the group size); ministral3: queries scaled by position.
    run(2, "tensor:gpt_oss");
    run(2, "tensor:ministral3");
}

#[test]
fn tensor_parallel_4bit_moe_generates_the_whole_models_tokens_with_2_ranks() {
    // Mixtral's 4-bit experts (128 hidden features, groups of 32): each rank keeps two
    // whole quantization groups of every expert's hidden features, and the quantized
    // attention projections their heads.
    run(2, "tensor:mixtral-4bit");
    // Qwen3-MoE's 4-bit experts have 32 hidden features, one group of 32: half a group per
    // rank cannot be quantized apart, an `Err` as in mlx_lm.
    run(2, "tensor-error:qwen3_moe-4bit");
}

#[test]
fn tensor_parallel_mla_generates_the_whole_models_tokens_with_2_and_4_ranks() {
    // DeepSeek-V3: latent attention split by heads (low-rank query, embed_q / unembed_out),
    // the grouped router's experts and shared experts split, a dense first layer; 4 heads,
    // so 4 ranks take one each. DeepSeek-V2: the expanded latent attention (kv_b_proj split
    // by heads) and the greedy router's experts.
    run(2, "tensor:deepseek_v3");
    run(4, "tensor:deepseek_v3");
    run(2, "tensor:deepseek_v2");
}

#[test]
fn tensor_parallel_longcat_flash_generates_the_whole_models_tokens_with_2_ranks() {
    // Two latent attentions and two dense MLPs per layer, and experts beside zero-computation
    // (identity) experts, whose share is added once, after the routed experts' sum.
    run(2, "tensor:longcat_flash");
    run(2, "tensor:longcat_flash_ngram");
}

#[test]
fn tensor_parallel_generates_the_whole_models_tokens_with_4_ranks() {
    // Qwen2-MoE: 4 query and 4 key/value heads, one per rank, and the sigmoid-gated shared
    // expert split as the routed ones.
    run(4, "tensor:qwen2_moe");
}

#[test]
fn tensor_and_pipeline_parallel_over_mpi_with_2_and_4_ranks() {
    // The cases above over MLX's MPI backend, the ranks started by mpirun.
    for (ranks, case) in [
        (2, "tensor:llama3"),
        (2, "tensor:qwen3_5"),
        (2, "tensor:qwen3_moe"),
        (4, "tensor:deepseek_v3"),
        (2, "pipeline:llama3"),
        (4, "pipeline:qwen3_5"),
    ] {
        if run_on(Backend::Mpi, ranks, case).is_none() {
            return;
        }
    }
}

#[test]
fn random_models_are_drawn_by_seed_and_name() {
    let dir = model_dir("qwen3");
    let draw = |seed: u64, options: LoadOptions| {
        let model = random_model(&dir, options, seed).unwrap().0;
        logits(&model)
    };
    let a = draw(3, LoadOptions::default());
    assert!(a.iter().all(|x| x.is_finite()));
    assert_eq!(
        a,
        draw(3, LoadOptions::default()),
        "the same seed draws the same model"
    );
    assert_ne!(
        a,
        draw(4, LoadOptions::default()),
        "another seed draws another"
    );
    // In the dtype asked for, and quantized as asked.
    let options = LoadOptions {
        dtype: Some(Dtype::Bfloat16),
        quantize: Some(mlx::lm::QuantParams::affine(32, 4)),
        ..Default::default()
    };
    let (q, _) = random_model(&dir, options, 3).unwrap();
    assert_eq!(q.dtype(), Dtype::Bfloat16);
    let packed = mlx::utils::tree_leaves(&q)
        .iter()
        .filter(|a| a.dtype() == Dtype::Uint32)
        .count();
    assert!(packed > 0, "no quantized layer");
    assert!(logits(&q).iter().all(|x| x.is_finite()));
    // A config quantizing layers apart is refused, not drawn otherwise than it says.
    let tmp = std::env::temp_dir().join(format!("lm-random-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    config["quantization"] = serde_json::json!({"group_size": 32, "bits": 4, "lm_head": false});
    std::fs::write(tmp.join("config.json"), config.to_string()).unwrap();
    let err = random_model(&tmp, LoadOptions::default(), 3)
        .unwrap_err()
        .to_string();
    std::fs::remove_dir_all(&tmp).unwrap();
    assert!(err.contains("names 1 layer(s) apart"), "{err}");
}

#[test]
fn random_models_split_before_they_are_drawn_with_2_ranks() {
    // `random_model` then `shard` / `pipeline`: the way a model larger than one device is
    // made where it runs (`lm_bench --random-weights` under the launcher).
    run(2, "random-tensor:qwen3");
    run(2, "random-pipeline:llama3");
}

#[test]
fn tensor_parallel_over_nccl_with_2_gpus() {
    // The cases above over NCCL, a GPU per rank (a machine with 2 GPUs or more; SKIPPED
    // elsewhere), float32 with TF32 off as on the CPU. Tensor parallel only: by layers needs
    // send/recv, which MLX 0.32.2 has no CUDA implementation of ("Recv has no CUDA
    // implementation.", an `Err` at the first step).
    for case in ["tensor:llama3", "tensor:qwen3_5", "tensor:qwen3_moe"] {
        if run_on(Backend::Nccl, 2, case).is_none() {
            return;
        }
    }
}

#[test]
fn pipeline_parallel_llama_generates_the_whole_models_tokens_with_2_and_4_ranks() {
    run(2, "pipeline:llama3");
    run(4, "pipeline:llama3");
}

#[test]
fn pipeline_parallel_stack_families_generate_the_whole_models_tokens_with_2_ranks() {
    // Any stack splits by layers, whatever its layers hold: sliding windows (gemma3_text),
    // soft-capped logits (gemma2), a logit scale and parallel blocks (cohere), state-space
    // layers (mamba2), hybrids of both (nemotron_h; bailing_hybrid, which mlx_lm splits so
    // too). RWKV-7's layers hand each other more: an error (`child_split_errors`).
    for name in [
        "gemma3_text",
        "gemma2",
        "cohere",
        "mamba2",
        "nemotron_h",
        "bailing_hybrid",
    ] {
        run(2, &format!("pipeline:{name}"));
    }
}

#[test]
fn pipeline_parallel_qwen3_5_generates_the_whole_models_tokens_with_2_and_4_ranks() {
    run(2, "pipeline:qwen3_5");
    run(4, "pipeline:qwen3_5");
}

#[test]
#[ignore = "a rank of the *_ranks tests"]
fn child_split_errors() {
    let group = ring();
    let n = group.size();
    // The golden models have 2 key/value heads: more ranks cannot take whole heads.
    let mut llama = load_model(model_dir("llama3"), LoadOptions::default())
        .unwrap()
        .0;
    let err = llama.shard(&group).unwrap_err().to_string();
    assert!(
        err.contains("model_type llama") && err.contains(&format!("over {n} processes")),
        "{err}"
    );
    // Nor Qwen3.5's 2 key heads of its gated delta net.
    let mut qwen = load_model(model_dir("qwen3_5"), LoadOptions::default())
        .unwrap()
        .0;
    let err = qwen.shard(&group).unwrap_err().to_string();
    assert!(
        err.contains("model_type qwen3_5") && err.contains(&format!("over {n} processes")),
        "{err}"
    );
    // An architecture without a tensor-parallel form names itself: the state-space models
    // and hybrids (mlx_lm has no `shard` for them either).
    for name in ["mamba", "mamba2", "jamba", "falcon_h1", "nemotron_h"] {
        let mut ssm = load_model(model_dir(name), LoadOptions::default())
            .unwrap()
            .0;
        let err = ssm.shard(&group).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "model_type {name} does not support tensor parallelism"
            )),
            "{err}"
        );
    }
    // Layers that hand each other more than the hidden states (RWKV-7's first layer's
    // values) do not split by layers.
    let mut rwkv = load_model(model_dir("rwkv7"), LoadOptions::default())
        .unwrap()
        .0;
    let err = rwkv.pipeline(&group, None).unwrap_err().to_string();
    assert!(
        err.contains("model_type rwkv7 cannot be split for pipeline parallelism")
            && err.contains("more than the hidden states"),
        "{err}"
    );
    // Both left as they were: they still generate.
    let mut cache = llama.make_cache(1, 64).unwrap();
    let ids = Array::from_slice(&prompt(), &[1, prompt().len() as i32]).unwrap();
    llama
        .forward(&ids, Some(&mut cache))
        .unwrap()
        .eval()
        .unwrap();
    // More stages than layers.
    let err = llama
        .pipeline(&group, Some(&[4; 4][..n as usize]))
        .unwrap_err();
    assert!(err.to_string().contains("sum to 4 layers"), "{err}");
    println!("errors checked");
}

#[test]
fn splits_that_cannot_be_made_are_errors_with_4_ranks() {
    let _one = ONE_GROUP_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let exe = std::env::current_exe().unwrap();
    let report = Launch::new(4, &exe)
        .args([
            "--ignored",
            "--exact",
            "child_split_errors",
            "--nocapture",
            "--test-threads=1",
        ])
        .timeout(Duration::from_secs(300))
        .echo(false)
        .run_report()
        .unwrap();
    for r in &report.ranks {
        assert!(
            r.output.contains("1 passed"),
            "rank {}:\n{}",
            r.rank,
            r.output
        );
    }
}
