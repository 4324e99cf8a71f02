//! What an `.mlxfn` file describes arrays and primitive state with: element types, array
//! metadata and the field types of a primitive's state.

/// Element types, numbered as MLX's `Dtype::Val`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Dt {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    F32,
    F64,
    Bf16,
    C64,
}

impl Dt {
    pub(super) fn from_val(v: i32) -> Option<Dt> {
        use Dt::*;
        Some(match v {
            0 => Bool,
            1 => U8,
            2 => U16,
            3 => U32,
            4 => U64,
            5 => I8,
            6 => I16,
            7 => I32,
            8 => I64,
            9 => F16,
            10 => F32,
            11 => F64,
            12 => Bf16,
            13 => C64,
            _ => return None,
        })
    }

    pub(super) fn size(self) -> u8 {
        use Dt::*;
        match self {
            Bool | U8 | I8 => 1,
            U16 | I16 | F16 | Bf16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 | C64 => 8,
        }
    }

    pub(super) fn name(self) -> &'static str {
        use Dt::*;
        match self {
            Bool => "bool",
            U8 => "uint8",
            U16 => "uint16",
            U32 => "uint32",
            U64 => "uint64",
            I8 => "int8",
            I16 => "int16",
            I32 => "int32",
            I64 => "int64",
            F16 => "float16",
            F32 => "float32",
            F64 => "float64",
            Bf16 => "bfloat16",
            C64 => "complex64",
        }
    }

    pub(super) fn is_int(self) -> bool {
        use Dt::*;
        matches!(self, U8 | U16 | U32 | U64 | I8 | I16 | I32 | I64)
    }

    pub(super) fn is_signed_int(self) -> bool {
        matches!(self, Dt::I8 | Dt::I16 | Dt::I32 | Dt::I64)
    }

    /// MLX's `floating`: the real floating types.
    pub(super) fn is_float(self) -> bool {
        matches!(self, Dt::F16 | Dt::F32 | Dt::F64 | Dt::Bf16)
    }

    /// MLX's `inexact`: floating or complex.
    pub(super) fn is_inexact(self) -> bool {
        self.is_float() || self == Dt::C64
    }
}

impl std::fmt::Display for Dt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Largest byte size of an array: MLX computes byte offsets as `int64` in places (`seek`,
/// strides), so a larger array would wrap them.
pub(super) const MAX_BYTES: u128 = i64::MAX as u128;

/// The field types of a primitive's serialized state (a `prims::Prim`'s layout), named by the
/// C++ type MLX writes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Field {
    /// `int` and every enum (MLX writes enums as `int`).
    I32,
    Bool,
    F32,
    F64,
    /// `size_t`.
    U64,
    Dtype,
    /// `std::vector<int>` and `Shape`.
    VecI32,
    /// `Strides`.
    VecI64,
    /// `std::vector<size_t>`.
    VecU64,
    Str,
    /// `nullptr` (the fallback function of fast primitives): nothing is written.
    Null,
    /// `std::optional<float>`.
    OptF32,
    /// `std::tuple<int, int, int>`.
    I32x3,
    /// `std::vector<std::tuple<bool, bool, bool>>`.
    VecBool3,
    /// `std::vector<std::variant<bool, int, float>>`.
    VecScalar,
}

/// One decoded state field.
#[derive(Clone, Debug)]
pub(super) enum Val {
    I(i32),
    B(bool),
    F(f64),
    U(u64),
    D(Dt),
    Is(Vec<i32>),
    Ls(Vec<i64>),
    Us(Vec<u64>),
    S(Vec<u8>),
    Nil,
    /// A field only `CustomKernel` has, which is refused whatever it holds.
    Walked,
}

/// Shape and dtype of one array.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Meta {
    pub(super) shape: Vec<i32>,
    pub(super) dtype: Dt,
}

impl Meta {
    pub(super) fn ndim(&self) -> usize {
        self.shape.len()
    }

    pub(super) fn size(&self) -> i64 {
        self.shape.iter().map(|&d| i64::from(d)).product()
    }
}
