//! Retrace diagnostics: a compiled step that traces every call says which path keeps
//! changing, once, in its stats and through `log`; a step that is really compiled says
//! nothing. Its own test binary: the logger is process-wide.

use std::sync::{Mutex, OnceLock};

use mlx_rs::ops;
use mlx_tree::{compile, compile_mut, Array, Result, RetraceCause, TreeNode};

/// Collects warnings of target `mlx_tree::compile`.
struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.target() == "mlx_tree::compile"
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            self.0
                .lock()
                .unwrap()
                .push(format!("{} {}", r.level(), r.args()));
        }
    }
    fn flush(&self) {}
}

fn logged() -> &'static Mutex<Vec<String>> {
    static LOGGER: OnceLock<&'static Capture> = OnceLock::new();
    let logger = LOGGER.get_or_init(|| {
        let l: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        log::set_logger(l).expect("the only logger of this test binary");
        log::set_max_level(log::LevelFilter::Warn);
        l
    });
    &logger.0
}

/// Warnings about `path` logged so far.
fn warnings_about(path: &str) -> Vec<String> {
    logged()
        .lock()
        .unwrap()
        .iter()
        .filter(|m| m.contains(&format!(" {path} ")))
        .cloned()
        .collect()
}

// ---- a KV cache as a natural port of mlx_lm's writes it: an integer offset ----

#[derive(TreeNode)]
struct Layer {
    keys: Array,
    #[tree(static)]
    offset: usize,
}

#[derive(TreeNode)]
struct IntCache {
    layers: Vec<Layer>,
}

fn int_step(cache: &mut IntCache, x: &Array) -> Result<Array> {
    let layer = &mut cache.layers[0];
    let at = Array::from_scalar(layer.offset as i32);
    let onehot = ops::equal(&ops::arange(0i32, 32, None, None)?, &at)?;
    layer.keys = ops::add(&layer.keys, &ops::multiply(&onehot, x)?)?;
    layer.offset += 1;
    layer.keys.sum(None, false)
}

#[test]
fn an_integer_offset_that_changes_every_call_is_reported_once_with_its_path() {
    let _ = logged();
    let step = compile_mut(int_step, None);
    let mut cache = IntCache {
        layers: vec![Layer {
            keys: ops::zeros(&[32], None).unwrap(),
            offset: 0,
        }],
    };
    for i in 0..20 {
        let y = step.call(&mut cache, &Array::from_scalar(1.0f32)).unwrap();
        assert_eq!(y.item::<f32>().unwrap(), (i + 1) as f32);
    }
    let st = step.stats();
    assert_eq!(
        st.traces, 20,
        "every call traced: the offset is static data"
    );
    let report = st.retraces.expect("the retraces are reported in the stats");
    assert_eq!(report.path, "state.layers.0.offset");
    assert_eq!(report.cause, RetraceCause::StaticData);
    assert_eq!((report.traces, report.changes), (8, 7));
    assert_eq!(report.values, ["0", "1", "2"]);
    assert!(
        report
            .message
            .starts_with("compile: 8 traces in 8 calls; static data")
            && report
                .message
                .contains("state.layers.0.offset changed every call (0, 1, 2, ...)")
            && report.message.contains("make it an Array"),
        "{}",
        report.message
    );
    // Logged exactly once, as a warning, although the streak went on for 12 more calls.
    let warnings = warnings_about("state.layers.0.offset");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("WARN compile: 8 traces"),
        "{warnings:?}"
    );
}

// ---- the same cache with the offset as an Array: compiled, silent ----

#[derive(TreeNode)]
struct ArrayLayer {
    keys: Array,
    position: Array,
}

#[derive(TreeNode)]
struct ArrayCache {
    layers: Vec<ArrayLayer>,
}

fn array_step(cache: &mut ArrayCache, x: &Array) -> Result<Array> {
    let layer = &mut cache.layers[0];
    let onehot = ops::equal(&ops::arange(0i32, 32, None, None)?, &layer.position)?;
    layer.keys = ops::add(&layer.keys, &ops::multiply(&onehot, x)?)?;
    layer.position = ops::add(&layer.position, 1)?;
    layer.keys.sum(None, false)
}

#[test]
fn an_array_offset_compiles_once_and_reports_nothing() {
    let _ = logged();
    let step = compile_mut(array_step, None);
    let mut cache = ArrayCache {
        layers: vec![ArrayLayer {
            keys: ops::zeros(&[32], None).unwrap(),
            position: Array::from_scalar(0i32),
        }],
    };
    for i in 0..20 {
        let y = step.call(&mut cache, &Array::from_scalar(1.0f32)).unwrap();
        assert_eq!(y.item::<f32>().unwrap(), (i + 1) as f32);
    }
    let st = step.stats();
    assert_eq!((st.calls, st.traces), (20, 1));
    assert_eq!(st.retraces, None);
    assert!(warnings_about("state.layers.0.offset").len() <= 1);
    assert!(logged()
        .lock()
        .unwrap()
        .iter()
        .all(|m| !m.contains("state.layers.0.keys")));
}

// ---- a growing shape, and a structure that changes ----

#[derive(TreeNode)]
struct Growing {
    history: Array,
}

#[test]
fn a_shape_that_grows_every_call_is_reported_with_its_path_and_shapes() {
    let _ = logged();
    let f = compile(|g: &Growing| g.history.sum(None, false), None);
    for n in 1..=10 {
        let g = Growing {
            history: ops::ones(&[1, n], None).unwrap(),
        };
        assert_eq!(f.call(&g).unwrap().item::<f32>().unwrap(), n as f32);
    }
    let report = f.stats().retraces.expect("reported");
    assert_eq!(
        (report.path.as_str(), report.cause),
        ("history", RetraceCause::Shape)
    );
    assert_eq!(report.values, ["[1, 1]", "[1, 2]", "[1, 3]"]);
    assert!(report.message.contains("shapeless"), "{}", report.message);
    assert_eq!(warnings_about("history").len(), 1);
}

#[derive(TreeNode)]
struct Blocks {
    blocks: Vec<Array>,
}

#[test]
fn a_container_that_grows_is_reported_at_the_container() {
    let _ = logged();
    let f = compile(
        |b: &Blocks| {
            let mut acc = Array::from_scalar(0.0f32);
            for x in &b.blocks {
                acc = acc + x;
            }
            Ok(acc)
        },
        None,
    );
    for n in 1..=9 {
        let b = Blocks {
            blocks: (0..n).map(|_| Array::from_scalar(1.0f32)).collect(),
        };
        assert_eq!(f.call(&b).unwrap().item::<f32>().unwrap(), n as f32);
    }
    let report = f.stats().retraces.expect("reported");
    assert_eq!(
        (report.path.as_str(), report.cause),
        ("blocks", RetraceCause::Structure)
    );
    assert_eq!(report.values[..2], ["a list of 1", "a list of 2"]);
}

#[test]
fn alternating_between_cached_signatures_is_not_a_retrace_streak() {
    let _ = logged();
    let f = compile(|g: &Growing| g.history.sum(None, false), None);
    let shapes = [[1, 2], [1, 3]];
    for i in 0..40 {
        let g = Growing {
            history: ops::ones(&shapes[i % 2], None).unwrap(),
        };
        f.call(&g).unwrap();
    }
    let st = f.stats();
    assert_eq!((st.traces, st.cache_hits), (2, 38));
    assert_eq!(st.retraces, None);
}
