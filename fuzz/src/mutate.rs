//! Deterministic mutation of byte inputs: bit flips, byte sets, interesting integers
//! (little- and big-endian, 1 to 8 bytes), arithmetic on integers, truncation, extension,
//! chunk deletion and duplication, splicing with another corpus entry, decimal numbers and
//! dictionary tokens for text headers, and, for formats whose header carries its own length,
//! mutation of the header alone with the length field kept consistent (so that the mutant
//! reaches the parser instead of failing the length check).

use crate::rng::Rng;

/// Inputs never grow beyond this: loaders are linear in the input, and large inputs only
/// slow the campaign down.
pub const MAX_INPUT: usize = 1 << 20;

/// How a format frames its header, for header-only mutations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No known framing: whole-input mutations only.
    None,
    /// An 8-byte little-endian header length, the header, the data (`.safetensors`).
    Safetensors,
    /// `\x93NUMPY`, version bytes, a 2- or 4-byte little-endian header length, the header,
    /// the data (`.npy`).
    Npy,
}

/// What a target tells the mutator about its input format.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub framing: Framing,
    /// Tokens worth inserting or substituting (field names, type names, punctuation).
    pub tokens: &'static [&'static [u8]],
}

const INTERESTING: &[i64] = &[
    0,
    1,
    -1,
    2,
    3,
    4,
    7,
    8,
    16,
    31,
    32,
    63,
    64,
    100,
    127,
    128,
    255,
    256,
    1000,
    1024,
    4095,
    4096,
    32767,
    32768,
    65535,
    65536,
    46341,
    1 << 20,
    1 << 24,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    0x1_0000_0001,
    i64::MAX,
    i64::MIN,
    -2,
    -128,
    -129,
    -32768,
    -65536,
    -0x8000_0000,
    -0x8000_0001,
];

const DECIMALS: &[&[u8]] = &[
    b"0",
    b"1",
    b"-1",
    b"2",
    b"-2",
    b"3",
    b"8",
    b"255",
    b"256",
    b"65536",
    b"2147483647",
    b"2147483648",
    b"-2147483648",
    b"-2147483649",
    b"4294967295",
    b"4294967296",
    b"4294967297",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775808",
    b"18446744073709551615",
    b"18446744073709551616",
    b"1e309",
    b"-1e309",
    b"1.5",
    b"0.0",
    b"-0",
    b"1e3",
    b"NaN",
    b"99999999999999999999999999",
];

/// A mutant of `input`, from one to several stacked mutations; `corpus` supplies splice
/// partners.
pub fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>], spec: &Spec) -> Vec<u8> {
    if spec.framing != Framing::None && rng.one_in(3) {
        if let Some(out) = mutate_framed(rng, input, corpus, spec) {
            return out;
        }
    }
    let mut out = input.to_vec();
    let rounds = 1 + rng.below(4) * usize::from(rng.one_in(2));
    for _ in 0..rounds {
        mutate_once(rng, &mut out, corpus, spec);
    }
    out.truncate(MAX_INPUT);
    out
}

/// Splits a framed input into (prefix before the length field, header, data).
fn split(framing: Framing, input: &[u8]) -> Option<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    match framing {
        Framing::None => None,
        Framing::Safetensors => {
            let len = u64::from_le_bytes(input.get(..8)?.try_into().ok()?);
            let end = 8usize.checked_add(usize::try_from(len).ok()?)?;
            let header = input.get(8..end)?;
            Some((Vec::new(), header.to_vec(), input[end..].to_vec()))
        }
        Framing::Npy => {
            let (width, len) = match input.get(6)? {
                1 => (
                    2,
                    u64::from(u16::from_le_bytes(input.get(8..10)?.try_into().ok()?)),
                ),
                _ => (
                    4,
                    u64::from(u32::from_le_bytes(input.get(8..12)?.try_into().ok()?)),
                ),
            };
            let start: usize = 8 + width;
            let end = start.checked_add(usize::try_from(len).ok()?)?;
            let header = input.get(start..end)?;
            Some((input[..8].to_vec(), header.to_vec(), input[end..].to_vec()))
        }
    }
}

/// Puts a framed input back together with a length field that matches the header.
fn join(framing: Framing, prefix: &[u8], header: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = prefix.to_vec();
    match framing {
        Framing::None => {}
        Framing::Safetensors => out.extend_from_slice(&(header.len() as u64).to_le_bytes()),
        Framing::Npy => {
            if out.get(6) == Some(&1) && header.len() <= usize::from(u16::MAX) {
                out.extend_from_slice(&(header.len() as u16).to_le_bytes());
            } else {
                if let Some(v) = out.get_mut(6) {
                    *v = 2;
                }
                out.extend_from_slice(&(header.len() as u32).to_le_bytes());
            }
        }
    }
    out.extend_from_slice(header);
    out.extend_from_slice(data);
    out
}

fn mutate_framed(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>], spec: &Spec) -> Option<Vec<u8>> {
    let (prefix, mut header, mut data) = split(spec.framing, input)?;
    match rng.below(4) {
        // The header is where the parser's decisions are: mutate it most.
        0..=2 => {
            for _ in 0..1 + rng.below(3) {
                mutate_text(rng, &mut header, spec);
            }
        }
        _ => {
            let partners: Vec<Vec<u8>> = corpus
                .iter()
                .filter_map(|c| split(spec.framing, c).map(|(_, _, d)| d))
                .collect();
            mutate_once(rng, &mut data, &partners, spec);
        }
    }
    let mut out = join(spec.framing, &prefix, &header, &data);
    out.truncate(MAX_INPUT);
    Some(out)
}

/// Text-level mutations of a header: numbers, tokens, and the generic byte mutations.
fn mutate_text(rng: &mut Rng, text: &mut Vec<u8>, spec: &Spec) {
    match rng.below(5) {
        0 | 1 => replace_number(rng, text),
        2 => insert_token(rng, text, spec.tokens),
        _ => mutate_once(rng, text, &[], spec),
    }
}

fn mutate_once(rng: &mut Rng, data: &mut Vec<u8>, corpus: &[Vec<u8>], spec: &Spec) {
    if data.is_empty() {
        let n = 1 + rng.below(16);
        data.extend((0..n).map(|_| rng.byte()));
        return;
    }
    match rng.below(15) {
        0 | 1 => {
            let i = rng.below(data.len());
            data[i] ^= 1 << rng.below(8);
        }
        2 => {
            let i = rng.below(data.len());
            data[i] = rng.byte();
        }
        3 => {
            let i = rng.below(data.len());
            data[i] = *rng.pick(&[0u8, 1, 0x7f, 0x80, 0xff, b'-', b'"', b'[', b'{', b'\\']);
        }
        4 | 5 => write_interesting(rng, data),
        6 => add_delta(rng, data),
        7 => {
            let keep = rng.below(data.len());
            data.truncate(keep);
        }
        8 => {
            let n = 1 + rng.below(64);
            if rng.one_in(2) {
                data.extend((0..n).map(|_| rng.byte()));
            } else {
                data.extend(std::iter::repeat(rng.byte()).take(n));
            }
        }
        9 => {
            let at = rng.below(data.len());
            let n = 1 + rng.below((data.len() - at).min(64));
            data.drain(at..at + n);
        }
        10 => {
            let from = rng.below(data.len());
            let n = 1 + rng.below((data.len() - from).min(64));
            let chunk = data[from..from + n].to_vec();
            let at = rng.below(data.len() + 1);
            data.splice(at..at, chunk);
        }
        11 if !corpus.is_empty() => {
            let other = rng.pick(corpus);
            if !other.is_empty() {
                let cut = rng.below(data.len() + 1);
                let from = rng.below(other.len());
                data.truncate(cut);
                data.extend_from_slice(&other[from..]);
            }
        }
        12 => replace_number(rng, data),
        13 => insert_token(rng, data, spec.tokens),
        _ => {
            // Overwrite one aligned word: binary formats keep counts and sizes aligned.
            let width = *rng.pick(&[4usize, 8]);
            if data.len() >= width {
                let i = rng.below(data.len() / width) * width;
                let v = *rng.pick(INTERESTING);
                data[i..i + width].copy_from_slice(&v.to_le_bytes()[..width]);
            }
        }
    }
}

fn write_interesting(rng: &mut Rng, data: &mut [u8]) {
    let width = *rng.pick(&[1usize, 2, 4, 8]);
    if data.len() < width {
        return;
    }
    let i = rng.below(data.len() - width + 1);
    let v = *rng.pick(INTERESTING);
    let bytes = if rng.one_in(4) {
        v.to_be_bytes()[8 - width..].to_vec()
    } else {
        v.to_le_bytes()[..width].to_vec()
    };
    data[i..i + width].copy_from_slice(&bytes);
}

fn add_delta(rng: &mut Rng, data: &mut [u8]) {
    let width = *rng.pick(&[1usize, 2, 4, 8]);
    if data.len() < width {
        return;
    }
    let i = rng.below(data.len() - width + 1);
    let mut word = [0u8; 8];
    word[..width].copy_from_slice(&data[i..i + width]);
    let delta = rng.below(33) as i64 - 16;
    let v = i64::from_le_bytes(word).wrapping_add(delta);
    data[i..i + width].copy_from_slice(&v.to_le_bytes()[..width]);
}

/// Replaces one run of ASCII digits (with its sign) by an interesting decimal: the numbers
/// of JSON headers and Python dict literals.
fn replace_number(rng: &mut Rng, data: &mut Vec<u8>) {
    let runs: Vec<(usize, usize)> = digit_runs(data);
    if runs.is_empty() {
        return;
    }
    let (start, end) = *rng.pick(&runs);
    let start = if start > 0 && data[start - 1] == b'-' {
        start - 1
    } else {
        start
    };
    let new = rng.pick(DECIMALS).to_vec();
    data.splice(start..end, new);
}

fn digit_runs(data: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if data[i].is_ascii_digit() {
            let start = i;
            while i < data.len() && data[i].is_ascii_digit() {
                i += 1;
            }
            runs.push((start, i));
        } else {
            i += 1;
        }
    }
    runs
}

/// Inserts a token, or replaces a quoted string with one.
fn insert_token(rng: &mut Rng, data: &mut Vec<u8>, tokens: &[&[u8]]) {
    if tokens.is_empty() {
        return;
    }
    let token = rng.pick(tokens).to_vec();
    let quotes: Vec<usize> = data
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'"' || b == b'\'')
        .map(|(i, _)| i)
        .collect();
    if quotes.len() >= 2 && rng.one_in(2) {
        let k = rng.below(quotes.len() - 1);
        let (a, b) = (quotes[k], quotes[k + 1]);
        data.splice(a..=b, token);
    } else {
        let at = rng.below(data.len() + 1);
        data.splice(at..at, token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: Spec = Spec {
        framing: Framing::Safetensors,
        tokens: &[b"\"shape\""],
    };

    fn safetensors(header: &str, data: &[u8]) -> Vec<u8> {
        join(Framing::Safetensors, &[], header.as_bytes(), data)
    }

    #[test]
    fn mutation_is_deterministic_and_changes_the_input() {
        let input = safetensors(
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
            &[0; 4],
        );
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..200)
                .map(|_| mutate(&mut rng, &input, &[], &SPEC))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        let changed = run(5).iter().filter(|m| **m != input).count();
        assert!(
            changed > 150,
            "only {changed} of 200 mutants differ from the input"
        );
    }

    #[test]
    fn framed_mutants_keep_a_consistent_length_field() {
        let input = safetensors(
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
            &[0; 4],
        );
        let mut rng = Rng::new(11);
        let mut consistent = 0;
        for _ in 0..300 {
            if let Some(out) = mutate_framed(&mut rng, &input, &[], &SPEC) {
                let (p, h, d) = split(Framing::Safetensors, &out).expect("joined input splits");
                assert_eq!(join(Framing::Safetensors, &p, &h, &d), out);
                consistent += 1;
            }
        }
        assert_eq!(consistent, 300);
    }

    #[test]
    fn npy_framing_round_trips_both_versions() {
        for version in [1u8, 2] {
            let mut prefix = b"\x93NUMPY".to_vec();
            prefix.extend([version, 0]);
            let input = join(Framing::Npy, &prefix, b"{'descr': '<f4'}", &[1, 2, 3, 4]);
            let (p, h, d) = split(Framing::Npy, &input).expect("splits");
            assert_eq!(
                (p, h.as_slice(), d.as_slice()),
                (prefix, &b"{'descr': '<f4'}"[..], &[1u8, 2, 3, 4][..])
            );
        }
    }

    #[test]
    fn numbers_are_replaced_whole() {
        let mut rng = Rng::new(1);
        let mut text = b"[12,-34]".to_vec();
        replace_number(&mut rng, &mut text);
        assert!(!text.windows(2).any(|w| w == b"12") || !text.windows(3).any(|w| w == b"-34"));
        assert!(text.starts_with(b"[") && text.ends_with(b"]"));
    }
}
