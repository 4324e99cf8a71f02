//! Hostile `.safetensors`, `.npy` and `.gguf` headers are `Err`s at load time, with a message
//! naming the tensor and the problem, instead of arrays that read garbage or crash when
//! evaluated. Each file is built byte by byte; `builders_make_loadable_files` shows the
//! builders' valid output loads, so each error comes from the one field a test breaks.

use std::collections::HashMap;
use std::io::{Cursor, Seek, SeekFrom};
use std::path::PathBuf;

use mlx_rs::{io, Array, Result};

/// A fresh scratch folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-rs-io-errors-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The error message of `r`, which must be an `Err` mentioning each of `wants`.
fn err_with<T>(what: &str, r: Result<T>, wants: &[&str]) -> String {
    let msg = match r {
        Ok(_) => panic!("{what}: loaded, but an error mentioning {wants:?} was expected"),
        Err(e) => e.to_string(),
    };
    for want in wants {
        assert!(
            msg.contains(want),
            "{what}: message {msg:?} does not mention {want:?}"
        );
    }
    msg
}

/// A safetensors file: the header's length, the header, `data_len` zero bytes.
fn safetensors_bytes(header: &str, data_len: usize) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.resize(out.len() + data_len, 0);
    out
}

/// Loads `bytes` as a safetensors file from a path and from a reader; both must fail, the path
/// load with a message mentioning each of `wants`, the reader load with one naming `tensor`.
fn safetensors_fails(test: &str, bytes: &[u8], tensor: &str, wants: &[&str]) {
    let dir = scratch(test);
    let path = dir.join("bad.safetensors");
    std::fs::write(&path, bytes).unwrap();
    let named = format!("{tensor:?}");
    let mut all = wants.to_vec();
    all.push(&named);
    let msg = err_with(&format!("{test} (path)"), io::load_safetensors(&path), &all);
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    // MLX parses a reader's header before the check runs and rejects some headers itself,
    // naming the tensor in its own words (unquoted, unescaped).
    err_with(
        &format!("{test} (reader)"),
        io::load_safetensors_from_reader(Cursor::new(bytes.to_vec())),
        &[&tensor.escape_debug().to_string()],
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A version-`version` `.npy` file with header dict `dict` followed by `data`.
fn npy_bytes(version: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let len_size = if version == 1 { 2 } else { 4 };
    let mut header = dict.to_string();
    while (8 + len_size + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn f32_dict(shape: &str) -> String {
    format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}")
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Loads `bytes` as `.npy` from a path and from a reader; both must fail mentioning `wants`.
fn npy_fails(test: &str, bytes: &[u8], wants: &[&str]) {
    let dir = scratch(test);
    let path = dir.join("bad.npy");
    std::fs::write(&path, bytes).unwrap();
    let msg = err_with(&format!("{test} (path)"), io::load_npy(&path), wants);
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    err_with(
        &format!("{test} (reader)"),
        io::load_npy_from_reader(Cursor::new(bytes.to_vec())),
        wants,
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A GGUF v3 file of float32 tensors of two elements each, named `names`.
fn gguf_bytes(names: &[&str]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(names.len() as u64).to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    for (i, name) in names.iter().enumerate() {
        out.extend_from_slice(&(name.len() as u64).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&2u64.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(8 * i as u64).to_le_bytes());
    }
    out.resize(out.len().div_ceil(32) * 32, 0);
    for i in 0..names.len() {
        out.extend_from_slice(&f32_bytes(&[i as f32, i as f32 + 0.5]));
    }
    out
}

#[test]
fn builders_make_loadable_files() {
    let dir = scratch("builders");
    let header =
        r#"{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"__metadata__":{"k":"v"}}"#;
    let bytes = safetensors_bytes(header, 16);
    let path = dir.join("ok.safetensors");
    std::fs::write(&path, &bytes).unwrap();
    let (arrays, meta) = io::load_safetensors(&path).unwrap();
    assert_eq!(arrays["w"].to_vec::<f32>().unwrap(), vec![0.0; 4]);
    assert_eq!(meta["k"], "v");
    let (arrays, _) = io::load_safetensors_from_reader(Cursor::new(bytes)).unwrap();
    assert_eq!(arrays["w"].shape(), &[2, 2]);

    for version in [1, 2] {
        let bytes = npy_bytes(
            version,
            &f32_dict("(2, 2)"),
            &f32_bytes(&[1.0, 2.0, 3.0, 4.0]),
        );
        let path = dir.join("ok.npy");
        std::fs::write(&path, &bytes).unwrap();
        let a = io::load_npy(&path).unwrap();
        assert_eq!(a.shape(), &[2, 2]);
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
        let a = io::load_npy_from_reader(Cursor::new(bytes)).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    }

    let path = dir.join("ok.gguf");
    std::fs::write(&path, gguf_bytes(&["a", "b"])).unwrap();
    let (arrays, _) = io::load_gguf(&path).unwrap();
    assert_eq!(arrays["b"].to_vec::<f32>().unwrap(), vec![1.0, 1.5]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn safetensors_shape_whose_element_count_wraps_is_an_error() {
    // 65536^4 elements is 2^64, which MLX's size_t product wraps to 0 bytes.
    let header =
        r#"{"big":{"dtype":"F32","shape":[65536,65536,65536,65536],"data_offsets":[0,0]}}"#;
    safetensors_fails(
        "st_wrap",
        &safetensors_bytes(header, 0),
        "big",
        &["overflow"],
    );
}

#[test]
fn npy_shape_whose_element_count_wraps_is_an_error() {
    let bytes = npy_bytes(1, &f32_dict("(65536, 65536, 65536, 65536)"), &[]);
    npy_fails(
        "npy_wrap",
        &bytes,
        &["overflow", "65536, 65536, 65536, 65536"],
    );
}

#[test]
fn safetensors_negative_dims_are_errors() {
    // (size_t)-2 * (size_t)-2 * 4 wraps to 16, so MLX accepts [0, 16].
    let header = r#"{"neg":{"dtype":"F32","shape":[-2,-2],"data_offsets":[0,16]}}"#;
    safetensors_fails(
        "st_negative",
        &safetensors_bytes(header, 16),
        "neg",
        &["negative", "-2"],
    );
    // [-1, 4] of F32 wraps to 2^64 - 16 bytes, and so does the offset sum MLX checks.
    let header =
        r#"{"neg":{"dtype":"F32","shape":[-1,4],"data_offsets":[0,18446744073709551600]}}"#;
    safetensors_fails(
        "st_negative_huge",
        &safetensors_bytes(header, 16),
        "neg",
        &["negative", "-1"],
    );
}

#[test]
fn npy_negative_dims_are_errors() {
    let bytes = npy_bytes(1, &f32_dict("(-2, -2)"), &[0; 16]);
    npy_fails("npy_negative", &bytes, &["negative", "-2"]);
}

#[test]
fn safetensors_dim_beyond_int32_is_an_error() {
    // MLX casts 4294967297 to int32: 1.
    let header = r#"{"wide":{"dtype":"F32","shape":[4294967297],"data_offsets":[0,4]}}"#;
    safetensors_fails(
        "st_int32",
        &safetensors_bytes(header, 4),
        "wide",
        &["4294967297", "overflow", "int32"],
    );
}

#[test]
fn safetensors_fractional_dim_is_an_error() {
    // MLX truncates 1.5 to 1.
    let header = r#"{"frac":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}"#;
    safetensors_fails(
        "st_fraction",
        &safetensors_bytes(header, 4),
        "frac",
        &["1.5", "not an integer"],
    );
}

#[test]
fn safetensors_out_of_order_offsets_are_an_error() {
    let header = r#"{"rev":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}}"#;
    safetensors_fails(
        "st_order",
        &safetensors_bytes(header, 8),
        "rev",
        &["out of order", "[8, 4]"],
    );
}

#[test]
fn safetensors_offsets_past_the_data_are_an_error() {
    let header = r#"{"far":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
    safetensors_fails(
        "st_past_end",
        &safetensors_bytes(header, 8),
        "far",
        &["past the end", "8 bytes"],
    );
}

#[test]
fn safetensors_span_must_match_the_shape() {
    let header = r#"{"odd":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}}"#;
    safetensors_fails(
        "st_span",
        &safetensors_bytes(header, 12),
        "odd",
        &["spanning 12 bytes", "needs 8"],
    );
}

#[test]
fn safetensors_overlapping_tensors_are_an_error() {
    let header = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#;
    safetensors_fails(
        "st_overlap",
        &safetensors_bytes(header, 12),
        "b",
        &["overlap", "\"a\""],
    );
}

#[test]
fn safetensors_names_differing_after_nul_are_an_error() {
    // mlx-c hands names out as C strings: both would become "w".
    let header = r#"{"w\u0000a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w\u0000b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#;
    safetensors_fails("st_nul", &safetensors_bytes(header, 8), "w\0a", &["NUL"]);
    let header = r#"{"__metadata__":{"k":"cut\u0000here"}}"#;
    let msg = err_with(
        "metadata with NUL",
        io::load_safetensors_from_reader(Cursor::new(safetensors_bytes(header, 0))),
        &["NUL", "__metadata__"],
    );
    assert!(msg.contains("\"k\""), "{msg}");
}

#[test]
fn safetensors_duplicate_names_are_an_error() {
    let header = r#"{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#;
    safetensors_fails(
        "st_duplicate",
        &safetensors_bytes(header, 12),
        "w",
        &["more than once"],
    );
}

#[test]
fn npy_header_length_beyond_the_file_fails_without_reading_it() {
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(&[b' '; 100]);
    let start = std::time::Instant::now();
    npy_fails("npy_header_len", &bytes, &["4294967295", "past the end"]);
    // MLX alone allocated 4 GiB and took 14 s to fail.
    assert!(
        start.elapsed() < std::time::Duration::from_secs(2),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn npy_data_size_must_match_the_bytes_present() {
    let dict = f32_dict("(2, 3)");
    let short = npy_bytes(1, &dict, &f32_bytes(&[1.0; 5]));
    npy_fails(
        "npy_short",
        &short,
        &["truncated .npy", "needs 24 data bytes but 20"],
    );

    // A file holds exactly one array; a stream may go on after it.
    let long = npy_bytes(1, &dict, &f32_bytes(&[1.0; 7]));
    let dir = scratch("npy_long");
    let path = dir.join("long.npy");
    std::fs::write(&path, &long).unwrap();
    err_with(
        "trailing bytes",
        io::load_npy(&path),
        &["after the data", "28"],
    );
    let a = io::load_npy_from_reader(Cursor::new(long)).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0; 6]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn npy_layout_that_mlx_misreads_is_an_error() {
    // MLX skips two characters after each dimension, so it would read "(2,3)" as (2,).
    let bytes = npy_bytes(1, &f32_dict("(2,3)"), &f32_bytes(&[1.0; 6]));
    npy_fails("npy_layout", &bytes, &["misread"]);
    // MLX reads the dtype at bytes 11..14, here "rde".
    let dict = "{'fortran_order': False, 'descr': '<f4', 'shape': (2,), }";
    npy_fails(
        "npy_key_order",
        &npy_bytes(1, dict, &f32_bytes(&[1.0; 2])),
        &["misread"],
    );
}

#[test]
fn gguf_duplicate_name_error_names_the_tensor() {
    let dir = scratch("gguf_duplicate");
    let path = dir.join("dup.gguf");
    std::fs::write(&path, gguf_bytes(&["dup", "dup"])).unwrap();
    let msg = err_with(
        "duplicate gguf tensor",
        io::load_gguf(&path),
        &["\"dup\"", "more than once"],
    );
    // MLX's own message printed the array here.
    assert!(!msg.contains("array("), "{msg}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn valid_safetensors_and_npy_round_trip() {
    let dir = scratch("round_trip");
    let w = Array::from_slice(&[1.5f32, -2.0, 3.25, 4.0, 5.0, -6.5], &[2, 3]).unwrap();
    let ids = Array::from_slice(&[7i32, -8, 9], &[3]).unwrap();
    let empty = Array::from_slice::<f32>(&[], &[0, 4]).unwrap();
    let scalar = Array::from_scalar(42u8);
    let arrays: HashMap<String, Array> = [
        ("w", &w),
        ("ids", &ids),
        ("empty", &empty),
        ("scalar", &scalar),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.clone()))
    .collect();
    let meta = HashMap::from([("format".to_string(), "mlx".to_string())]);

    let check = |loaded: &HashMap<String, Array>, what: &str| {
        assert_eq!(loaded.len(), 4, "{what}");
        assert_eq!(loaded["w"].shape(), &[2, 3], "{what}");
        assert_eq!(
            loaded["w"].to_vec::<f32>().unwrap(),
            w.to_vec::<f32>().unwrap()
        );
        assert_eq!(loaded["ids"].to_vec::<i32>().unwrap(), vec![7, -8, 9]);
        assert_eq!(loaded["empty"].shape(), &[0, 4], "{what}");
        assert_eq!(loaded["scalar"].item::<u8>().unwrap(), 42, "{what}");
    };

    let path = dir.join("ok.safetensors");
    io::save_safetensors(&path, &arrays, Some(&meta)).unwrap();
    let (loaded, m) = io::load_safetensors(&path).unwrap();
    check(&loaded, "safetensors path");
    assert_eq!(m, meta);
    let buffer = io::save_safetensors_to_writer(Cursor::new(Vec::new()), &arrays, Some(&meta))
        .unwrap()
        .into_inner();
    let (loaded, m) = io::load_safetensors_from_reader(Cursor::new(buffer)).unwrap();
    check(&loaded, "safetensors reader");
    assert_eq!(m, meta);

    for (name, a) in &arrays {
        let path = dir.join(format!("{name}.npy"));
        io::save(&path, a).unwrap();
        let back = io::load_npy(&path).unwrap();
        assert_eq!(back.shape(), a.shape(), "npy {name}");
        assert_eq!(back.dtype(), a.dtype(), "npy {name}");
        let bytes = io::save_npy_to_writer(Cursor::new(Vec::new()), a)
            .unwrap()
            .into_inner();
        let back_reader = io::load_npy_from_reader(Cursor::new(bytes)).unwrap();
        assert_eq!(back_reader.shape(), a.shape(), "npy reader {name}");
    }
    let back = io::load_npy(dir.join("w.npy")).unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), w.to_vec::<f32>().unwrap());
    let back = io::load_npy(dir.join("ids.npy")).unwrap();
    assert_eq!(back.to_vec::<i32>().unwrap(), vec![7, -8, 9]);
    // Transposed arrays are saved in Fortran order.
    let t = w.transpose(None).unwrap();
    let path = dir.join("t.npy");
    io::save(&path, &t).unwrap();
    let back = io::load_npy(&path).unwrap();
    assert_eq!(back.shape(), &[3, 2]);
    assert_eq!(back.to_vec::<f32>().unwrap(), t.to_vec::<f32>().unwrap());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn readers_positioned_past_their_start_load_their_own_bytes() {
    let prefix = vec![0xAB; 13];
    let npy = npy_bytes(1, &f32_dict("(3,)"), &f32_bytes(&[1.0, 2.0, 3.0]));
    let mut r = Cursor::new([prefix.clone(), npy].concat());
    r.seek(SeekFrom::Start(prefix.len() as u64)).unwrap();
    let a = io::load_npy_from_reader(r).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);

    let header = r#"{"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    let mut st = (header.len() as u64).to_le_bytes().to_vec();
    st.extend_from_slice(header.as_bytes());
    st.extend_from_slice(&f32_bytes(&[4.0, 5.0]));
    let mut r = Cursor::new([prefix.clone(), st].concat());
    r.seek(SeekFrom::Start(prefix.len() as u64)).unwrap();
    let (arrays, _) = io::load_safetensors_from_reader(r).unwrap();
    assert_eq!(arrays["v"].to_vec::<f32>().unwrap(), vec![4.0, 5.0]);
}

/// MLX's message for a bad header quotes the header, and mlx-c used to hand every message to
/// printf as its format: `%s` in a file read stray pointers and crashed the process (found by
/// the fuzz harness). The message must come through as written.
#[test]
fn percent_signs_in_a_header_come_through_the_error_message() {
    // A bad escape in a key: MLX's JSON parser fails quoting the key as far as it read it.
    let header = r#"{"a%s%s%s%s%s%s%s%s%n%n\q": 1}"#;
    let bytes = safetensors_bytes(header, 0);
    let msg = err_with(
        "reader",
        io::load_safetensors_from_reader(Cursor::new(bytes)),
        &["%s%s"],
    );
    assert!(msg.contains("parse"), "{msg}");
}
