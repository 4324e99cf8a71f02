//! `MLX_DIR` mode: mlx-c compiled with the `cc` crate against a prebuilt MLX's headers, and
//! linked to its `libmlx` dynamically. No cmake: MLX's CMake package of a CUDA build asks for
//! a CUDA toolkit and cuDNN (`find_dependency`) although mlx-c needs neither, and a build
//! machine with MLX from pip (the CPU wheel, the CUDA 12/13 wheels) has none.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::fatal;

/// A prebuilt MLX: its install prefix (`<prefix>/include/mlx`, `<prefix>/lib/libmlx.*`).
pub struct PrebuiltMlx {
    pub include_dir: PathBuf,
    pub lib_dir: PathBuf,
    /// `share/cmake/MLX/MLXConfig.cmake`, read for the compile flags MLX's users need.
    config: String,
    prefix: PathBuf,
}

impl PrebuiltMlx {
    /// `dir` is the prefix or its `share/cmake/MLX` folder (what CMake users pass).
    pub fn locate(dir: &Path) -> Self {
        let candidates = [dir.to_path_buf(), dir.join("../../..")];
        let prefix = candidates
            .iter()
            .find(|p| p.join("include/mlx/mlx.h").exists())
            .cloned()
            .unwrap_or_else(|| {
                fatal(&[
                    format!(
                        "MLX_DIR={}: no include/mlx/mlx.h there or three folders up",
                        dir.display()
                    ),
                    "set MLX_DIR to an MLX install prefix (or its share/cmake/MLX folder), e.g. \
                     <venv>/lib/python3.11/site-packages/mlx"
                        .into(),
                ])
            });
        let prefix = prefix.canonicalize().unwrap_or(prefix);
        let lib_dir = ["lib", "lib64"]
            .iter()
            .map(|l| prefix.join(l))
            .find(|d| d.join("libmlx.so").exists() || d.join("libmlx.dylib").exists())
            .unwrap_or_else(|| {
                fatal(&[format!(
                    "MLX_DIR={}: no libmlx.so or libmlx.dylib in {}/lib or {}/lib64",
                    dir.display(),
                    prefix.display(),
                    prefix.display()
                )])
            });
        let config_path = prefix.join("share/cmake/MLX/MLXConfig.cmake");
        // A custom install may lack the CMake package; then no extra flags are known.
        let config = fs::read_to_string(&config_path).unwrap_or_default();
        println!("cargo:rerun-if-changed={}", config_path.display());
        PrebuiltMlx {
            include_dir: prefix.join("include"),
            lib_dir,
            config,
            prefix,
        }
    }

    /// Compiles mlx-c (the sources its CMakeLists.txt lists) and tells cargo to link it.
    ///
    /// By default into a shared `libmlxc` whose own name (SONAME / install name) is its
    /// absolute path and whose run path is MLX's library folder. Every binary linking it,
    /// a downstream crate's included, then records that path and starts where it was built
    /// without `LD_LIBRARY_PATH`: cargo passes a build script's `rustc-link-arg` (an rpath)
    /// only to the package that emits it, but a native library's name reaches every final
    /// link. `relocatable` builds a static `libmlxc.a` instead, and the binary asks for
    /// `libmlx` by its plain name, found through `LD_LIBRARY_PATH` or an rpath of the
    /// user's choice (README, "Deploying a binary").
    pub fn build_mlx_c(
        &self,
        mlx_c_src: &Path,
        workspace: &Path,
        out_dir: &Path,
        relocatable: bool,
    ) {
        let sources = mlx_c_sources(mlx_c_src);
        let (flags, includes) = config_flags(&self.config, &self.prefix);
        use_ccache(workspace);
        let mut build = cc::Build::new();
        build
            .cpp(true)
            .std("c++20")
            .pic(true)
            .opt_level(2)
            .debug(false)
            .warnings(false)
            // The C++ runtime is linked once, by `link_cxx_runtime` or the shared link.
            .cpp_link_stdlib(None)
            .include(mlx_c_src)
            .include(&self.include_dir)
            .includes(&includes)
            .files(&sources);
        for flag in &flags {
            build.flag(flag);
        }
        // The whole folder, headers included: a patched header (`vendor/patches/`) changes
        // what every source compiles to.
        println!("cargo:rerun-if-changed={}", mlx_c_src.display());
        if relocatable {
            build.compile("mlxc");
            println!("cargo:rustc-link-search=native={}", self.lib_dir.display());
            println!("cargo:rustc-link-lib=dylib=mlx");
            return;
        }
        let objects = build.compile_intermediates();
        let dir = out_dir.join("mlxc-shared");
        fs::create_dir_all(&dir)
            .unwrap_or_else(|e| fatal(&[format!("creating {}: {e}", dir.display())]));
        let macos = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "macos");
        let lib = dir.join(if macos { "libmlxc.dylib" } else { "libmlxc.so" });
        // The compiler driver links (it adds the C++ runtime); ccache, if it wraps the
        // compiler, is left out: it caches no link.
        let mut link = Command::new(build.get_compiler().path());
        link.args(&objects).arg("-o").arg(&lib);
        let own_name = if macos { "-install_name" } else { "-soname" };
        link.arg(if macos { "-dynamiclib" } else { "-shared" })
            .args(["-Xlinker", own_name, "-Xlinker"])
            .arg(&lib)
            .args(["-Xlinker", "-rpath", "-Xlinker"])
            .arg(&self.lib_dir)
            .arg("-L")
            .arg(&self.lib_dir)
            .arg("-lmlx");
        if !macos {
            // Every mlx-c symbol must resolve against libmlx now, not at a user's first run.
            link.arg("-Wl,--no-undefined");
        }
        let status = link
            .status()
            .unwrap_or_else(|e| fatal(&[format!("running {link:?}: {e}")]));
        if !status.success() {
            fatal(&[format!("linking {} failed: {link:?}", lib.display())]);
        }
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-lib=dylib=mlxc");
    }
}

/// The mlx-c sources its own build compiles, read from `set(mlxc-src ...)` in its
/// CMakeLists.txt, so this list cannot drift from the vendored version.
fn mlx_c_sources(mlx_c_src: &Path) -> Vec<PathBuf> {
    let cmake = mlx_c_src.join("CMakeLists.txt");
    let text = fs::read_to_string(&cmake)
        .unwrap_or_else(|e| fatal(&[format!("reading {}: {e}", cmake.display())]));
    let block = text
        .split_once("set(mlxc-src")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(block, _)| block)
        .unwrap_or_else(|| fatal(&[format!("{}: no set(mlxc-src ...)", cmake.display())]));
    let sources: Vec<PathBuf> = block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("${CMAKE_CURRENT_LIST_DIR}/"))
        .map(|rel| mlx_c_src.join(rel))
        .collect();
    if sources.is_empty() {
        fatal(&[format!(
            "{}: set(mlxc-src ...) lists no source",
            cmake.display()
        )]);
    }
    sources
}

/// The compile definitions and include folders MLXConfig.cmake gives its users in the
/// branches its build enabled: `if (ON)` blocks (CMake substituted the build's options when
/// it installed the file), e.g. `-D_METAL_` and metal-cpp's headers for a Metal build.
fn config_flags(config: &str, prefix: &Path) -> (Vec<String>, Vec<PathBuf>) {
    let mut active: Vec<bool> = Vec::new();
    let mut in_includes = false;
    let (mut flags, mut includes) = (Vec::new(), Vec::new());
    for line in config.lines().map(str::trim) {
        let lower = line.to_ascii_lowercase();
        if let Some(cond) = lower
            .strip_prefix("if")
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix('('))
            .and_then(|r| r.strip_suffix(')'))
        {
            active.push(cond.trim() == "on");
            continue;
        }
        if lower.starts_with("endif") {
            active.pop();
            continue;
        }
        if lower.starts_with("else") {
            if let Some(top) = active.last_mut() {
                *top = !*top;
            }
            continue;
        }
        let enabled = !active.is_empty() && active.iter().all(|&on| on);
        if let Some(rest) = line.strip_prefix("set(MLX_CXX_FLAGS ${MLX_CXX_FLAGS}") {
            if enabled {
                flags.extend(
                    rest.trim_end_matches(')')
                        .split_whitespace()
                        .map(String::from),
                );
            }
            continue;
        }
        if line.starts_with("set(MLX_INCLUDE_DIRS") {
            in_includes = true;
        }
        if in_includes {
            if enabled {
                for token in line.split_whitespace() {
                    let token = token.trim_matches(|c| c == ')' || c == '"' || c == ';');
                    if let Some(rel) = token.strip_prefix("${PACKAGE_PREFIX_DIR}/") {
                        let dir = prefix.join(rel);
                        if dir.exists() {
                            includes.push(dir);
                        }
                    }
                }
            }
            if line.ends_with(')') {
                in_includes = false;
            }
        }
    }
    (flags, includes)
}

/// Compiles through ccache when it is installed and no compiler is set explicitly, as the
/// source build does (a fresh clone then rebuilds mlx-c from the cache). cc takes a wrapper
/// as the first word of `CXX`.
fn use_ccache(workspace: &Path) {
    let explicit = ["CXX", "TARGET_CXX", "HOST_CXX"]
        .iter()
        .any(|v| env::var_os(v).is_some());
    if explicit || Command::new("ccache").arg("--version").output().is_err() {
        return;
    }
    let cxx = if cfg!(target_os = "macos") {
        "clang++"
    } else {
        "c++"
    };
    // Single-threaded here, before cc reads the environment. The base dir makes the cache
    // hits independent of where the clone lives, as for the source build.
    env::set_var("CXX", format!("ccache {cxx}"));
    env::set_var("CCACHE_BASEDIR", workspace);
    env::set_var("CCACHE_NOHASHDIR", "1");
}
