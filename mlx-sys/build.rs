//! Builds mlx-c (and, unless `MLX_DIR` names a prebuilt MLX, MLX itself). The raw bindings
//! are committed (`src/bindings.rs`), so neither bindgen nor libclang is needed to build.
//!
//! Modes:
//! - default: vendored MLX + mlx-c from source, static, Release, offline. CPU + OpenBLAS/LAPACK
//!   on Linux, Metal + Accelerate on macOS, CUDA with the `cuda` feature.
//! - `MLX_DIR=<prefix or share/cmake/MLX>`: only mlx-c is built (with the `cc` crate, no
//!   cmake, no CUDA toolkit even for a CUDA build of MLX: `build/prebuilt.rs`), as a shared
//!   library named by its absolute path, linked to that MLX's `libmlx`: any binary, a
//!   downstream crate's too, starts where it was built without `LD_LIBRARY_PATH`.
//!   `MLX_SYS_RELOCATABLE=1` links mlx-c statically instead and leaves finding `libmlx` to
//!   the deployment (an rpath or `LD_LIBRARY_PATH`). Dependents' build scripts receive the
//!   library folder as `DEP_MLX_LIB_DIR`.
//! - `MLX_SYS_BINDINGS_ONLY=1`: nothing is built or linked. Enough to type-check
//!   (compile-fail tests, docs); a binary built this way does not link. Implied when the
//!   target OS is not the host's (`cargo check --target aarch64-apple-darwin` on Linux): MLX
//!   cannot be built without the target's SDK, and a type check needs none of it.
//! - feature `regenerate-bindings`: also runs bindgen over the vendored headers and writes
//!   `$OUT_DIR/bindings/bindings.rs` (both architectures in one file); `scripts/bindings`
//!   copies it to `src/bindings.rs` or checks that the committed one matches.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build/prebuilt.rs"]
mod prebuilt;
use prebuilt::PrebuiltMlx;

/// Environment variables that change what this script does.
const WATCHED_ENV: &[&str] = &[
    "MLX_DIR",
    "LIBCLANG_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDNN_ROOT",
    "MLX_SYS_JOBS",
    "MLX_SYS_BINDINGS_ONLY",
    "MLX_SYS_BINDINGS_OUT",
    "MLX_SYS_RELOCATABLE",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in WATCHED_ENV {
        println!("cargo:rerun-if-env-changed={var}");
    }

    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    // Inside the package, so a packaged mlx-sys (`cargo package`) carries what it builds.
    let vendor = manifest_dir.join("vendor");
    let mlx_c_src = vendor.join("mlx-c");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap();
    let cuda = env::var_os("CARGO_FEATURE_CUDA").is_some();

    #[cfg(feature = "regenerate-bindings")]
    regenerate::all(&mlx_c_src, &out_dir);

    let host = env::var("HOST").unwrap();
    let target = env::var("TARGET").unwrap();
    let foreign_os = host_os(&host) != target_os;
    // Read back as `mlx_sys::PREBUILT_MLX`.
    println!(
        "cargo:rustc-env=MLX_SYS_PREBUILT={}",
        if env::var_os("MLX_DIR").is_some() {
            "1"
        } else {
            "0"
        }
    );
    if env::var_os("MLX_SYS_BINDINGS_ONLY").is_some() || foreign_os {
        if foreign_os {
            println!(
                "cargo:warning=mlx-sys: target {target} is another OS than the host ({host}): \
                 MLX is not built, so this build can type-check but not link"
            );
        }
        return;
    }

    let prebuilt = env::var_os("MLX_DIR").map(PathBuf::from);

    if let Some(dir) = &prebuilt {
        let mlx = PrebuiltMlx::locate(dir);
        let workspace = manifest_dir.parent().unwrap_or(&manifest_dir);
        let relocatable = env::var_os("MLX_SYS_RELOCATABLE").is_some_and(|v| v != "0");
        mlx.build_mlx_c(&mlx_c_src, workspace, &out_dir, relocatable);
        // For dependents' build scripts (DEP_MLX_LIB_DIR), e.g. to set an rpath of their own.
        println!("cargo:lib_dir={}", mlx.lib_dir.display());
        if relocatable {
            stage_runtime_dir(&mlx.lib_dir, &out_dir);
            link_cxx_runtime(&target_os);
        }
        return;
    }

    let mut missing = Missing::default();
    missing.check_cmake();
    if target_os == "linux" {
        missing.check_source_build_deps();
    }
    missing.fail_if_any();

    // Only the sources we actually build are watched: a Rust-only edit never reruns cmake.
    for dir in ["mlx-c", "mlx", "gguflib"] {
        println!("cargo:rerun-if-changed={}", vendor.join(dir).display());
    }

    let mut cfg = cmake::Config::new(&mlx_c_src);
    // The cc-derived default flags add `-g` in dev profiles; MLX is always a Release build.
    cfg.no_default_flags(true)
        .profile("Release")
        .define("CMAKE_BUILD_TYPE", "Release")
        .define("CMAKE_POSITION_INDEPENDENT_CODE", "ON")
        .define("BUILD_SHARED_LIBS", "OFF")
        .define("MLX_C_BUILD_EXAMPLES", "OFF")
        .define("MLX_BUILD_TESTS", "OFF")
        .define("MLX_BUILD_EXAMPLES", "OFF")
        .define("MLX_BUILD_BENCHMARKS", "OFF")
        .define("MLX_BUILD_PYTHON_BINDINGS", "OFF")
        .define("MLX_BUILD_PYTHON_STUBS", "OFF");
    if let Ok(jobs) = env::var("MLX_SYS_JOBS") {
        cfg.build_arg(format!("-j{jobs}"));
    }
    configure_ccache(&mut cfg, &manifest_dir);

    configure_source_build(&mut cfg, &vendor, &out_dir, &target_os, cuda);
    let dst = cfg.build();
    link_mlx_c(&dst);
    println!(
        "cargo:rustc-link-search=native={}",
        dst.join("lib").display()
    );
    println!("cargo:rustc-link-lib=static=mlx");
    let gguf = find_file(&dst.join("build"), "libgguflib.a").unwrap_or_else(|| {
        fatal(&[
            "the MLX build did not produce libgguflib.a".into(),
            format!("looked under {}", dst.join("build").display()),
        ])
    });
    println!(
        "cargo:rustc-link-search=native={}",
        gguf.parent().unwrap().display()
    );
    println!("cargo:rustc-link-lib=static=gguflib");
    link_platform_libs(&target_os, cuda);
    link_cxx_runtime(&target_os);
}

/// The OS part of a target triple, spelled as `CARGO_CFG_TARGET_OS` spells it.
fn host_os(triple: &str) -> &'static str {
    const OSES: [(&str, &str); 6] = [
        ("-apple-darwin", "macos"),
        ("-apple-ios", "ios"),
        ("-linux-", "linux"),
        ("-windows-", "windows"),
        ("-freebsd", "freebsd"),
        ("-android", "android"),
    ];
    OSES.iter()
        .find(|(part, _)| triple.contains(part))
        .map_or("unknown", |(_, os)| os)
}

/// `cargo run` and `cargo test` put link-search folders that lie inside OUT_DIR on the
/// dynamic-library path of every binary they start, dependents' included. A link in OUT_DIR
/// to the prebuilt library folder lets a relocatable build (no path to libmlx recorded) still
/// run its tests and examples under cargo. The folder itself is linked, not the
/// library: the loader resolves libmlx's own `$ORIGIN`-relative run paths (the wheel's BLAS)
/// through the real folder that way.
fn stage_runtime_dir(lib_dir: &Path, out_dir: &Path) {
    let staged = out_dir.join("mlx-runtime");
    let _ = fs::remove_file(&staged);
    let _ = fs::remove_dir_all(&staged);
    if link_dir(lib_dir, &staged).is_ok() {
        println!("cargo:rustc-link-search=native={}", staged.display());
    }
}

#[cfg(unix)]
fn link_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(from, to)
}

// Elsewhere a relocatable build's binaries find libmlx the way the deployment says.
#[cfg(not(unix))]
fn link_dir(_from: &Path, _to: &Path) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

fn configure_source_build(
    cfg: &mut cmake::Config,
    vendor: &Path,
    out_dir: &Path,
    target_os: &str,
    cuda: bool,
) {
    cfg.define("FETCHCONTENT_SOURCE_DIR_MLX", vendor.join("mlx"))
        .define("FETCHCONTENT_SOURCE_DIR_GGUFLIB", vendor.join("gguflib"))
        .define("MLX_BUILD_GGUF", "ON")
        .define("MLX_BUILD_SAFETENSORS", "ON")
        .define("MLX_BUILD_CPU", "ON")
        .define("MLX_BUILD_CUDA", if cuda { "ON" } else { "OFF" })
        .define(
            "MLX_BUILD_METAL",
            if target_os == "macos" { "ON" } else { "OFF" },
        );
    // fmt and nlohmann-json come from the system when present (always on Linux: checked
    // earlier), so MLX never needs to download them.
    if include_dirs()
        .iter()
        .any(|d| d.join("fmt/format.h").exists())
    {
        cfg.define("USE_SYSTEM_FMT", "ON");
    }
    if let Some(json) = stage_nlohmann_json(out_dir) {
        cfg.define("FETCHCONTENT_SOURCE_DIR_JSON", json);
    }
    // Local copies of anything else MLX fetches (metal_cpp on macOS; cccl, nvtx3,
    // cudnn_frontend, cutlass for CUDA) can be supplied as FETCHCONTENT_SOURCE_DIR_<NAME>.
    for (key, value) in env::vars() {
        if let Some(name) = key.strip_prefix("FETCHCONTENT_SOURCE_DIR_") {
            println!("cargo:rerun-if-env-changed={key}");
            cfg.define(format!("FETCHCONTENT_SOURCE_DIR_{name}"), value);
        }
    }
    // The Linux CPU build has every dependency locally and never touches the network. Metal
    // (metal-cpp) and CUDA (cccl, NVTX, cudnn-frontend, cutlass) have dependencies MLX
    // downloads; MLX_SYS_OFFLINE=1 forbids that once they are supplied as above.
    println!("cargo:rerun-if-env-changed=MLX_SYS_OFFLINE");
    let needs_downloads = target_os == "macos" || cuda;
    let offline = !needs_downloads || env::var_os("MLX_SYS_OFFLINE").is_some();
    cfg.define(
        "FETCHCONTENT_FULLY_DISCONNECTED",
        if offline { "ON" } else { "OFF" },
    );
}

/// MLX includes `<json.hpp>` from `${json_SOURCE_DIR}/single_include/nlohmann`; Debian's
/// `nlohmann-json3-dev` (or Homebrew's `nlohmann-json`) installs the same header as
/// `<include>/nlohmann/json.hpp`.
fn stage_nlohmann_json(out_dir: &Path) -> Option<PathBuf> {
    let header = include_dirs()
        .into_iter()
        .map(|d| d.join("nlohmann/json.hpp"))
        .find(|p| p.exists())?;
    let root = out_dir.join("nlohmann-json");
    let dest = root.join("single_include/nlohmann");
    fs::create_dir_all(&dest).unwrap();
    fs::copy(&header, dest.join("json.hpp")).unwrap();
    Some(root)
}

/// ccache keys include absolute paths unless a base dir is set; the workspace root as base
/// makes a fresh clone (a new path) hit the cache a previous clone filled.
fn configure_ccache(cfg: &mut cmake::Config, manifest_dir: &Path) {
    if Command::new("ccache").arg("--version").output().is_err() {
        return;
    }
    let workspace = manifest_dir.parent().unwrap_or(manifest_dir);
    cfg.define("CMAKE_C_COMPILER_LAUNCHER", "ccache")
        .define("CMAKE_CXX_COMPILER_LAUNCHER", "ccache")
        .define("CMAKE_CUDA_COMPILER_LAUNCHER", "ccache")
        .env("CCACHE_BASEDIR", workspace)
        .env("CCACHE_NOHASHDIR", "1");
}

fn link_mlx_c(dst: &Path) {
    println!(
        "cargo:rustc-link-search=native={}",
        dst.join("lib").display()
    );
    println!("cargo:rustc-link-lib=static=mlxc");
}

fn link_platform_libs(target_os: &str, cuda: bool) {
    match target_os {
        "macos" | "ios" => {
            for framework in ["Metal", "Foundation", "QuartzCore", "Accelerate"] {
                println!("cargo:rustc-link-lib=framework={framework}");
            }
        }
        _ => {
            println!("cargo:rustc-link-lib=dylib=lapack");
            println!("cargo:rustc-link-lib=dylib=blas");
            if cuda {
                link_cuda();
            }
            println!("cargo:rustc-link-lib=dylib=dl");
            println!("cargo:rustc-link-lib=dylib=pthread");
        }
    }
}

fn link_cuda() {
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = env::var_os(var) {
            let root = PathBuf::from(root);
            for sub in ["lib64", "lib", "lib64/stubs"] {
                println!(
                    "cargo:rustc-link-search=native={}",
                    root.join(sub).display()
                );
            }
        }
    }
    println!("cargo:rustc-link-search=native=/usr/local/cuda/lib64");
    println!("cargo:rustc-link-search=native=/usr/local/cuda/lib64/stubs");
    for lib in [
        "cudart", "cublas", "cublasLt", "cufft", "nvrtc", "cudnn", "cuda",
    ] {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
}

fn link_cxx_runtime(target_os: &str) {
    let lib = if matches!(target_os, "macos" | "ios") {
        "c++"
    } else {
        "stdc++"
    };
    println!("cargo:rustc-link-lib=dylib={lib}");
}

/// bindgen over the vendored mlx-c headers, for `scripts/bindings`. mlx-c's headers differ
/// by architecture only: `half.h` declares the float16/bfloat16 accessors on aarch64 alone.
/// Both variants are generated on any host: clang's own headers (stdint.h, arm_fp16.h, ...)
/// plus three one-line stand-ins for the C library's keep the system's libc out, so the
/// output is the same on Linux and macOS. `FILE` (only used behind a pointer) is opaque.
/// The two outputs are merged into one file by [`merge`]: items of both stay as bindgen wrote
/// them, the others get a `#[cfg(target_arch ...)]`.
#[cfg(feature = "regenerate-bindings")]
mod regenerate {
    use std::path::Path;

    const LIBC_STANDINS: [(&str, &str); 3] = [
        ("stdlib.h", "#include <stddef.h>\n"),
        ("stdio.h", "typedef struct FILE FILE;\n"),
        // `float _Complex` is a C99 keyword; complex.h only adds macros mlx-c does not use.
        ("complex.h", ""),
    ];

    pub fn all(mlx_c_src: &Path, out_dir: &Path) {
        println!(
            "cargo:rerun-if-changed={}",
            mlx_c_src.join("mlx/c").display()
        );
        let dest = std::env::var_os("MLX_SYS_BINDINGS_OUT")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| out_dir.join("bindings"));
        std::fs::create_dir_all(&dest).unwrap();
        let standins = out_dir.join("libc-standins");
        std::fs::create_dir_all(&standins).unwrap();
        for (name, text) in LIBC_STANDINS {
            std::fs::write(standins.join(name), text).unwrap();
        }
        // clang 14 only accepts `__bf16` on aarch64 with the bf16 extension named; Apple's
        // clang takes it on every arm64 Mac. The flag changes no declaration.
        let generic = one(mlx_c_src, &standins, "x86_64-unknown-linux-gnu", None);
        let aarch64 = one(
            mlx_c_src,
            &standins,
            "aarch64-unknown-linux-gnu",
            Some("-march=armv8.6-a+bf16"),
        );
        std::fs::write(dest.join("bindings.rs"), merge(&generic, &aarch64))
            .expect("writing bindings");
    }

    const AARCH64: &str = "#[cfg(target_arch = \"aarch64\")]\n";
    const NOT_AARCH64: &str = "#[cfg(not(target_arch = \"aarch64\"))]\n";

    /// One file for both architectures: the generic output in its order (so its line
    /// numbers do not move), each item aarch64 lacks marked `not(aarch64)`, then the items
    /// only aarch64 has, marked `aarch64`. Items are compared as bindgen wrote them.
    pub fn merge(generic: &str, aarch64: &str) -> String {
        let mut arm_only = items(aarch64);
        let mut out = String::new();
        for item in items(generic) {
            match arm_only.iter().position(|a| *a == item) {
                Some(i) => {
                    arm_only.remove(i);
                }
                None => out.push_str(NOT_AARCH64),
            }
            out.push_str(&item);
        }
        if !arm_only.is_empty() {
            out.push_str("\n// Items only the aarch64 headers declare.\n");
        }
        for item in arm_only {
            out.push_str(AARCH64);
            out.push_str(item.trim_start_matches('\n'));
        }
        out
    }

    /// Splits bindgen's (rustfmt-formatted) output into top-level items, each with the
    /// blank lines, comments and attributes before it: an item ends at a line in column 0
    /// that closes it (`}`, `};`, or a line ending in `;` that is not an attribute).
    fn items(text: &str) -> Vec<String> {
        let mut items = Vec::new();
        let mut current = String::new();
        for line in text.lines() {
            current.push_str(line);
            current.push('\n');
            let top_level = !line.starts_with(char::is_whitespace);
            let prefix = line.starts_with("#[") || line.starts_with("//") || line.starts_with("/*");
            if top_level && !prefix && (line.ends_with(';') || line == "}") {
                items.push(std::mem::take(&mut current));
            }
        }
        if !current.is_empty() {
            items.push(current);
        }
        items
    }

    fn one(mlx_c_src: &Path, standins: &Path, clang_target: &str, extra: Option<&str>) -> String {
        let bindings = bindgen::Builder::default()
            .header(mlx_c_src.join("mlx/c/mlx.h").to_string_lossy())
            .clang_arg(format!("--target={clang_target}"))
            .clang_args(extra)
            .clang_arg("-nostdlibinc")
            .clang_arg(format!("-isystem{}", standins.display()))
            .clang_arg(format!("-I{}", mlx_c_src.display()))
            .allowlist_file(r".*[/\\]mlx[/\\]c[/\\][a-z_]+\.h")
            .blocklist_type("FILE")
            .raw_line("/// C's `FILE`: opaque, only ever used behind a pointer.")
            .raw_line("#[repr(C)]")
            .raw_line("pub struct FILE {")
            .raw_line("    _opaque: [u8; 0],")
            .raw_line("}")
            .default_enum_style(bindgen::EnumVariation::Consts)
            .prepend_enum_name(false)
            .derive_default(true)
            .layout_tests(true)
            .generate_comments(false)
            .generate()
            .unwrap_or_else(|e| {
                super::fatal(&[format!(
                    "bindgen failed on the mlx-c headers for {clang_target}: {e}"
                )])
            });
        bindings.to_string()
    }
}

/// Collects every missing build prerequisite so the user sees them all at once, each with the
/// package that provides it.
#[derive(Default)]
struct Missing {
    items: Vec<(String, &'static str)>,
}

impl Missing {
    fn add(&mut self, what: impl Into<String>, debian_package: &'static str) {
        self.items.push((what.into(), debian_package));
    }

    fn check_cmake(&mut self) {
        let version = Command::new("cmake")
            .arg("--version")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok());
        match version {
            None => self.add("cmake (3.25 or newer) is not on PATH", "cmake"),
            Some(text) => {
                let number = text.split_whitespace().nth(2).unwrap_or("0");
                let mut parts = number.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
                let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
                if (major, minor) < (3, 25) {
                    self.add(
                        format!("cmake {number} is too old: MLX needs 3.25 or newer"),
                        "cmake",
                    );
                }
            }
        }
    }

    fn check_source_build_deps(&mut self) {
        let headers: [(&str, &str, &'static str); 5] = [
            ("cblas.h", "BLAS headers", "libopenblas-dev"),
            ("lapack.h", "LAPACK headers", "liblapacke-dev"),
            ("lapacke.h", "LAPACKE headers", "liblapacke-dev"),
            ("fmt/format.h", "the fmt library", "libfmt-dev"),
            ("nlohmann/json.hpp", "nlohmann json", "nlohmann-json3-dev"),
        ];
        let includes = include_dirs();
        for (file, what, package) in headers {
            if !includes.iter().any(|d| d.join(file).exists()) {
                self.add(format!("{what} ({file}) not found"), package);
            }
        }
        let libs = lib_dirs();
        for (lib, what, package) in [
            ("libblas.so", "a BLAS library", "libopenblas-dev"),
            ("liblapack.so", "a LAPACK library", "libopenblas-dev"),
        ] {
            if !libs.iter().any(|d| d.join(lib).exists()) {
                self.add(format!("{what} ({lib}) not found"), package);
            }
        }
    }

    fn fail_if_any(&self) {
        if self.items.is_empty() {
            return;
        }
        let mut lines: Vec<String> = vec!["missing build prerequisites:".into()];
        for (what, _) in &self.items {
            lines.push(format!("  - {what}"));
        }
        let mut packages: Vec<&str> = self.items.iter().map(|(_, p)| *p).collect();
        packages.sort();
        packages.dedup();
        lines.push(format!(
            "on Debian/Ubuntu: sudo apt-get install {}",
            packages.join(" ")
        ));
        lines.push("or build against a prebuilt MLX with MLX_DIR (see README)".into());
        fatal(&lines);
    }
}

fn include_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![
        PathBuf::from("/usr/include"),
        PathBuf::from("/usr/local/include"),
        PathBuf::from("/opt/homebrew/include"),
    ];
    // Multiarch folders (/usr/include/x86_64-linux-gnu) and their openblas subfolders.
    if let Ok(entries) = fs::read_dir("/usr/include") {
        for e in entries.flatten() {
            let p = e.path();
            if p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains("-linux-"))
            {
                dirs.push(p.clone());
            }
        }
    }
    dirs
}

fn lib_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![
        PathBuf::from("/usr/lib"),
        PathBuf::from("/usr/lib64"),
        PathBuf::from("/usr/local/lib"),
    ];
    if let Ok(entries) = fs::read_dir("/usr/lib") {
        for e in entries.flatten() {
            let p = e.path();
            if p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains("-linux-"))
            {
                dirs.push(p);
            }
        }
    }
    dirs
}

fn find_file(root: &Path, name: &str) -> Option<PathBuf> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if entry.file_name() == name {
                return Some(path);
            }
        }
    }
    None
}

fn fatal(lines: &[String]) -> ! {
    eprintln!();
    for line in lines {
        eprintln!("mlx-sys: {line}");
    }
    eprintln!();
    std::process::exit(1);
}
