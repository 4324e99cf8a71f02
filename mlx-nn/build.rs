// With MLX_DIR, mlx-sys links a prebuilt libmlx dynamically and hands us its folder;
// an rpath lets this crate's test binaries find it without LD_LIBRARY_PATH.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_MLX_RPATH");
    if let Ok(dir) = std::env::var("DEP_MLX_RPATH") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
