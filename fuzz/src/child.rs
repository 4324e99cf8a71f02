//! The child side: a process that runs inputs of one target, read as length-prefixed frames
//! from stdin, and answers one line each on stdout. A crash or hang takes down only this
//! process; the parent sees which input did it.

use std::io::{Read, Write};

use crate::targets::{Ctx, Outcome, Target};

/// Marks protocol lines on stdout, which MLX or a target may also print to.
pub const PREFIX: &str = "@@mlx-fuzz ";
pub const READY: &str = "ready";

/// Longest error kind kept: the start of a message says which check refused the input.
const CLASS_LEN: usize = 160;

/// An error message with what varies between inputs removed (the input's file name,
/// numbers, quoted names and excerpts), so that messages from the same check compare equal.
pub fn error_class(message: &str, dir: &str) -> String {
    let message = message.replace(dir, "<dir>");
    let mut out = String::new();
    let mut quote: Option<char> = None;
    let mut in_number = false;
    for c in message.chars() {
        if let Some(q) = quote {
            if c == q {
                out.push(q);
                quote = None;
            }
            continue;
        }
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
            continue;
        }
        in_number = false;
        if matches!(c, '"' | '\'' | '`') {
            out.push_str(&format!("{c}…"));
            quote = Some(c);
            continue;
        }
        // Bytes of the input (names, excerpts) show up unquoted too: any run of non-ASCII
        // or control characters is one `?`.
        if c.is_ascii() && !c.is_ascii_control() {
            out.push(c);
        } else if !out.ends_with('?') {
            out.push('?');
        }
        if out.len() >= CLASS_LEN {
            break;
        }
    }
    out
}

/// Reads a frame: a little-endian `u32` length and the bytes; `None` at the end of input.
pub fn read_frame(r: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut data = vec![0u8; u32::from_le_bytes(len) as usize];
    r.read_exact(&mut data)?;
    Ok(Some(data))
}

/// Writes a frame for [`read_frame`].
pub fn write_frame(w: &mut impl Write, data: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(data.len()).map_err(|_| std::io::Error::other("input over 4 GiB"))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(data)?;
    w.flush()
}

fn answer(out: &mut impl Write, line: &str) -> std::io::Result<()> {
    writeln!(out, "{PREFIX}{line}")?;
    out.flush()
}

/// Serves inputs until stdin closes.
pub fn serve(target: &Target) -> Result<(), String> {
    if std::env::var_os(crate::runner::CPU_ONLY).is_some() {
        mlx_rs::Device::set_default(&mlx_rs::Device::cpu()).map_err(|e| e.to_string())?;
    }
    let mut ctx = Ctx::new()?;
    let dir = ctx.dir().display().to_string();
    // The first input pays for MLX's start-up; run an empty one before saying ready, so the
    // per-input time limit measures inputs only.
    let _ = (target.run)(&mut ctx, &[]);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let io = |e: std::io::Error| format!("child i/o: {e}");
    answer(&mut out, READY).map_err(io)?;
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    while let Some(data) = read_frame(&mut input).map_err(io)? {
        let outcome: Outcome = (target.run)(&mut ctx, &data);
        let line = match outcome {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("err {}", error_class(&e, &dir)),
        };
        answer(&mut out, &line).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_ignore_numbers_and_the_input_file() {
        let a = error_class("[load] /tmp/x/input-7.npy: shape (3, 4) too big", "/tmp/x");
        let b = error_class(
            "[load] /tmp/x/input-12.npy: shape (30, 1) too big",
            "/tmp/x",
        );
        assert_eq!(a, b);
        assert_eq!(a, "[load] <dir>/input-#.npy: shape (#, #) too big");
        assert_ne!(a, error_class("[load] bad magic", "/tmp/x"));
    }

    #[test]
    fn frames_round_trip() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"abc").unwrap();
        write_frame(&mut buf, b"").unwrap();
        let mut r = buf.as_slice();
        assert_eq!(read_frame(&mut r).unwrap(), Some(b"abc".to_vec()));
        assert_eq!(read_frame(&mut r).unwrap(), Some(Vec::new()));
        assert_eq!(read_frame(&mut r).unwrap(), None);
    }
}
