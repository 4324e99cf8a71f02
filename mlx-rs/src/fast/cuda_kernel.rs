//! Custom CUDA kernels (Python: `mx.fast.cuda_kernel`).

use mlx_sys as sys;

use crate::error::{check, check_handler, Error};
use crate::handles::{c_string, VectorArray, VectorString};
use crate::{Array, Dtype, Result};

/// A compile-time argument of a custom kernel (Python: a `template=[(name, value)]` entry):
/// `constexpr int`, `constexpr bool` or `using name = type;` at the top of the kernel body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateArg {
    /// `constexpr int name = value;`
    Int(i32),
    /// `constexpr bool name = value;`
    Bool(bool),
    /// `using name = <the CUDA type of the dtype>;`
    Dtype(Dtype),
}

crate::options! {
    /// How a [`CudaKernel`] is launched (Python: the keywords of a call of the kernel
    /// `mx.fast.cuda_kernel` returns). `grid` counts threads, not blocks, as in Python: the
    /// launch has `ceil(grid / thread_group)` blocks per axis.
    #[derive(Debug, Clone)]
    pub struct KernelLaunch {
        /// Threads along x, y, z.
        grid: plain (i32, i32, i32) = (1, 1, 1),
        /// Threads of one block along x, y, z (at most 1,024 in all).
        threadgroup: plain (i32, i32, i32) = (1, 1, 1),
        /// Compile-time arguments; each distinct set compiles its own kernel.
        template: plain Vec<(String, TemplateArg)> = Vec::new(),
        /// Fills every output with this value before the kernel runs (Python: `init_value`);
        /// `None`: outputs start uninitialized.
        init_value: opt f32 = None,
        /// Prints the generated source (Python: `verbose`).
        verbose: plain bool = false,
    }
}

/// A custom CUDA kernel (Python: `mx.fast.cuda_kernel(name, input_names, output_names,
/// source, header="", ensure_row_contiguous=True, shared_memory=0)`).
///
/// `source` is the body of a `__global__` function MLX writes around it: each input is a
/// `const T* name` (with `name_shape`, `name_strides` and `name_ndim` when the body mentions
/// them), each output a `T* name`. MLX compiles it with NVRTC on first use and caches the
/// result. Only MLX's CUDA backend runs it: in a build without CUDA `new` is an `Err`, and
/// [`apply`](Self::apply) is one off the GPU.
///
/// ```
/// use mlx_rs::fast::{CudaKernel, KernelLaunch};
/// use mlx_rs::{ops, Dtype};
/// let kernel = match CudaKernel::new(
///     "twice",
///     &["x"],
///     &["out"],
///     "auto i = cg::this_grid().thread_rank(); if (i < 4) out[i] = 2 * x[i];",
///     "",
///     true,
///     0,
/// ) {
///     Ok(kernel) => kernel,
///     // MLX built without CUDA: "No CUDA back-end".
///     Err(_) => return Ok(()),
/// };
/// let x = ops::ones(&[4], None)?;
/// let launch = KernelLaunch::default().grid((4, 1, 1)).threadgroup((4, 1, 1));
/// match kernel.apply(&[&x], &[(&[4], Dtype::Float32)], &launch) {
///     Ok(out) => assert_eq!(out[0].to_vec::<f32>()?, vec![2.0; 4]),
///     // Not a CUDA build of MLX, or the default device is the CPU.
///     Err(e) => assert!(!mlx_rs::cuda::is_available()? || e.to_string().contains("GPU")),
/// }
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug)]
pub struct CudaKernel {
    raw: sys::mlx_fast_cuda_kernel,
    inputs: usize,
    outputs: usize,
}

// SAFETY: the handle owns an immutable C++ function object (the kernel's description); MLX
// builds each call's graph node from it without mutating it.
unsafe impl Send for CudaKernel {}
// SAFETY: as above: calls only read the function object.
unsafe impl Sync for CudaKernel {}

impl Drop for CudaKernel {
    fn drop(&mut self) {
        // SAFETY: we own the handle; freed once.
        unsafe { sys::mlx_fast_cuda_kernel_free(self.raw) }
    }
}

/// A C identifier: MLX pastes kernel and argument names into source code.
fn check_identifier(name: &str, what: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "[cuda_kernel] {what} {name:?} is not a C identifier"
        )))
    }
}

impl CudaKernel {
    /// Describes a kernel; nothing is compiled until the first [`apply`](Self::apply) is
    /// evaluated.
    pub fn new(
        name: &str,
        input_names: &[&str],
        output_names: &[&str],
        source: &str,
        header: &str,
        ensure_row_contiguous: bool,
        shared_memory: i32,
    ) -> Result<CudaKernel> {
        check_identifier(name, "kernel name")?;
        for n in input_names.iter().chain(output_names) {
            check_identifier(n, "argument name")?;
        }
        if output_names.is_empty() {
            return Err(Error::InvalidArgument(
                "[cuda_kernel] a kernel needs at least one output".into(),
            ));
        }
        if shared_memory < 0 {
            return Err(Error::InvalidArgument(format!(
                "[cuda_kernel] shared_memory must not be negative, got {shared_memory}"
            )));
        }
        let inputs = VectorString::from_strs(input_names, "input name")?;
        let outputs = VectorString::from_strs(output_names, "output name")?;
        let (name_c, source_c, header_c) = (
            c_string(name, "kernel name")?,
            c_string(source, "kernel source")?,
            c_string(header, "kernel header")?,
        );
        // SAFETY: NUL-terminated strings and valid vectors, all alive for the call; mlx-c
        // copies them and returns a new handle (null ctx on error).
        let raw = check_handler(|| unsafe {
            sys::mlx_fast_cuda_kernel_new(
                name_c.as_ptr(),
                inputs.0,
                outputs.0,
                source_c.as_ptr(),
                header_c.as_ptr(),
                ensure_row_contiguous,
                shared_memory,
            )
        })?;
        if raw.ctx.is_null() {
            return Err(Error::Mlx("[cuda_kernel] MLX returned no kernel".into()));
        }
        Ok(CudaKernel {
            raw,
            inputs: input_names.len(),
            outputs: output_names.len(),
        })
    }

    /// One launch on `inputs`, making outputs of the given shapes and dtypes (Python:
    /// `kernel(inputs=..., output_shapes=..., output_dtypes=..., grid=..., threadgroup=...)`),
    /// on the current stream.
    pub fn apply(
        &self,
        inputs: &[&Array],
        outputs: &[(&[i32], Dtype)],
        launch: &KernelLaunch,
    ) -> Result<Vec<Array>> {
        if inputs.len() != self.inputs || outputs.len() != self.outputs {
            return Err(Error::InvalidArgument(format!(
                "[cuda_kernel] the kernel takes {} inputs and makes {} outputs, got {} and {}",
                self.inputs,
                self.outputs,
                inputs.len(),
                outputs.len()
            )));
        }
        let (g, t) = (launch.grid, launch.threadgroup);
        let dims = [g.0, g.1, g.2, t.0, t.1, t.2];
        let threads = i64::from(t.0) * i64::from(t.1) * i64::from(t.2);
        if dims.iter().any(|&d| d < 1) || threads > 1024 || t.2 > 64 {
            return Err(Error::InvalidArgument(format!(
                "[cuda_kernel] grid {g:?} and threadgroup {t:?}: every size must be positive, \
                 a block at most 1024 threads (64 along z)"
            )));
        }
        for (shape, _) in outputs {
            if shape.iter().any(|&d| d < 0) {
                return Err(Error::InvalidArgument(format!(
                    "[cuda_kernel] output shape {shape:?} has a negative dimension"
                )));
            }
        }
        let config = Config::new();
        for (shape, dtype) in outputs {
            // SAFETY: valid config; the shape slice is alive for the call and copied.
            check(|| unsafe {
                sys::mlx_fast_cuda_kernel_config_add_output_arg(
                    config.0,
                    shape.as_ptr(),
                    shape.len(),
                    dtype.to_raw(),
                )
            })?;
        }
        // SAFETY: valid config handle; plain values.
        check(|| unsafe { sys::mlx_fast_cuda_kernel_config_set_grid(config.0, g.0, g.1, g.2) })?;
        // SAFETY: as above.
        check(|| unsafe {
            sys::mlx_fast_cuda_kernel_config_set_thread_group(config.0, t.0, t.1, t.2)
        })?;
        if let Some(v) = launch.init_value {
            // SAFETY: as above.
            check(|| unsafe { sys::mlx_fast_cuda_kernel_config_set_init_value(config.0, v) })?;
        }
        // SAFETY: as above.
        check(|| unsafe {
            sys::mlx_fast_cuda_kernel_config_set_verbose(config.0, launch.verbose)
        })?;
        for (name, arg) in &launch.template {
            check_identifier(name, "template argument")?;
            let c = c_string(name, "template argument")?;
            // SAFETY: valid config; the name is NUL-terminated, alive for the call, copied.
            check(|| unsafe {
                match *arg {
                    TemplateArg::Int(v) => sys::mlx_fast_cuda_kernel_config_add_template_arg_int(
                        config.0,
                        c.as_ptr(),
                        v,
                    ),
                    TemplateArg::Bool(v) => sys::mlx_fast_cuda_kernel_config_add_template_arg_bool(
                        config.0,
                        c.as_ptr(),
                        v,
                    ),
                    TemplateArg::Dtype(d) => {
                        sys::mlx_fast_cuda_kernel_config_add_template_arg_dtype(
                            config.0,
                            c.as_ptr(),
                            d.to_raw(),
                        )
                    }
                }
            })?;
        }
        let ins = VectorArray::from_arrays(inputs.iter().copied());
        let mut out = VectorArray::new();
        crate::stream::with_current_raw(|s| {
            // SAFETY: valid kernel, vector, config and stream handles; mlx-c writes a new
            // vector into `out`.
            check(|| unsafe {
                sys::mlx_fast_cuda_kernel_apply(&mut out.0, self.raw, ins.0, config.0, s)
            })
        })??;
        out.to_vec()
    }
}

/// An owned `mlx_fast_cuda_kernel_config`.
struct Config(sys::mlx_fast_cuda_kernel_config);

impl Config {
    fn new() -> Config {
        // SAFETY: returns a new, owned config.
        Config(unsafe { sys::mlx_fast_cuda_kernel_config_new() })
    }
}

impl Drop for Config {
    fn drop(&mut self) {
        // SAFETY: we own the handle; freed once.
        unsafe { sys::mlx_fast_cuda_kernel_config_free(self.0) }
    }
}
