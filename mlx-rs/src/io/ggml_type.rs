//! ggml's tensor types as a GGUF file stores them: one table, read by the GGUF header check
//! and by readers of GGUF tensor data (mlx-lm's), so a block size is written down once.

/// A ggml tensor type: its id in a GGUF file, its name, and the size of its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgmlType {
    /// The id GGUF files store (`ggml_type`).
    pub id: u32,
    /// llama.cpp's name (`Q4_K`).
    pub name: &'static str,
    /// Values per block (1 for the plain types).
    pub block_items: u64,
    /// Bytes per block.
    pub block_bytes: u64,
}

const QK_K: u64 = 256;

/// llama.cpp's `ggml_type_traits` (as gguf-py 0.19's `GGML_QUANT_SIZES` writes them down).
/// gguflib's table, which MLX uses, has Q2_K at 82 bytes (llama.cpp's block has 84) and the
/// IQ1_S / IQ4_NL / IQ2_S sizes wrong; ids 4 and 5 (Q4_2, Q4_3) were removed from ggml.
const TYPES: &[GgmlType] = &[
    t(0, "F32", 1, 4),
    t(1, "F16", 1, 2),
    t(2, "Q4_0", 32, 2 + 16),
    t(3, "Q4_1", 32, 2 + 2 + 16),
    t(6, "Q5_0", 32, 2 + 4 + 16),
    t(7, "Q5_1", 32, 2 + 2 + 4 + 16),
    t(8, "Q8_0", 32, 2 + 32),
    t(9, "Q8_1", 32, 4 + 4 + 32),
    t(10, "Q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4),
    t(11, "Q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12),
    t(12, "Q4_K", QK_K, 2 + 2 + QK_K / 2 + 12),
    t(13, "Q5_K", QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12),
    t(14, "Q6_K", QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16),
    t(15, "Q8_K", QK_K, 4 + QK_K + QK_K / 8),
    t(16, "IQ2_XXS", QK_K, 2 + QK_K / 4),
    t(17, "IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32),
    t(18, "IQ3_XXS", QK_K, 2 + QK_K / 4 + QK_K / 8),
    t(19, "IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16),
    t(20, "IQ4_NL", 32, 2 + 16),
    t(21, "IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4),
    t(22, "IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16),
    t(23, "IQ4_XS", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64),
    t(24, "I8", 1, 1),
    t(25, "I16", 1, 2),
    t(26, "I32", 1, 4),
    t(27, "I64", 1, 8),
    t(28, "F64", 1, 8),
    t(29, "IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32),
    t(30, "BF16", 1, 2),
    t(34, "TQ1_0", QK_K, 2 + 4 * 13),
    t(35, "TQ2_0", QK_K, 2 + 64),
    t(39, "MXFP4", 32, 1 + 16),
    t(40, "NVFP4", 64, 4 + 32),
    t(41, "Q1_0", 128, 2 + 16),
];

const fn t(id: u32, name: &'static str, block_items: u64, block_bytes: u64) -> GgmlType {
    GgmlType {
        id,
        name,
        block_items,
        block_bytes,
    }
}

impl GgmlType {
    /// The type with GGUF id `id`; `None` for an id ggml does not (or no longer) define.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        TYPES.iter().copied().find(|t| t.id == id)
    }

    /// Bytes of `items` values, `None` when `items` is not a whole number of blocks or the
    /// size overflows.
    pub fn bytes_for(&self, items: u64) -> Option<u64> {
        if items % self.block_items != 0 {
            return None;
        }
        (items / self.block_items).checked_mul(self.block_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_known_sizes_match_llama_cpp() {
        for (i, a) in TYPES.iter().enumerate() {
            assert!(TYPES[i + 1..].iter().all(|b| b.id != a.id), "{}", a.name);
        }
        // llama.cpp's `block_q2_K`: scales[16], qs[64], d, dmin.
        assert_eq!(GgmlType::from_id(10).unwrap().block_bytes, 84);
        assert_eq!(GgmlType::from_id(14).unwrap().block_bytes, 210);
        assert_eq!(GgmlType::from_id(20).unwrap().block_bytes, 18);
        assert!(GgmlType::from_id(4).is_none());
        assert_eq!(GgmlType::from_id(8).unwrap().bytes_for(64), Some(68));
        assert_eq!(GgmlType::from_id(8).unwrap().bytes_for(33), None);
    }
}
