//! Static data: the non-array parts of a tree, kept typed inside a [`TreeDef`].
//!
//! A static value is part of a tree's *structure*: two trees whose static data differs have
//! different `TreeDef`s, so a compiled function retraces. Equality therefore has to mean
//! exactly "the same trace is valid", which no lossy encoding can give (JSON has no `-0.0`
//! vs `0.0` in many readers, no NaN, no infinity, and no `Some(inf)` vs `None`). So static
//! data is stored as the value itself and compared with [`StaticData::static_eq`]: floats by
//! bit pattern (`0.0 != -0.0`; a NaN equals the same NaN), everything else by value.
//!
//! Small `Copy` values (integers, floats, `bool`, `char`, `()`, and `Option`s and pairs of
//! one-word values) are packed into two machine words inside the `TreeDef`'s static list, so
//! flattening a struct with such fields allocates nothing for them; other values are shared
//! behind an `Arc`.
//!
//! Serialization (to JSON, through [`StaticData::to_json`]) happens only where a `TreeDef` is
//! written: `serde` and [`export_function`](crate::export_function). A `TreeDef` read back
//! from its serialized form does not know the Rust types of its static data, so it holds it
//! as JSON; a typed field reads it back with [`StaticData::from_json`].

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;

use serde_json::Value as Json;

use crate::error::{self, Result};

/// A value that can be static data of a tree: a `#[tree(static)]` field, or the
/// [`static_field`](crate::Flattener::static_field) of a registered type.
///
/// Implemented for the primitive types, `String`, `Option`, `Box`, `Vec`, arrays, tuples (up
/// to 6), `BTreeSet` and `BTreeMap`; `#[derive(StaticData)]` implements it for your own
/// structs and enums field by field (every field must be `StaticData`).
///
/// The contract, which the derive and the built-in impls keep:
/// - [`static_eq`](Self::static_eq) is true exactly when a trace made with one value is valid
///   for the other. Floats compare by bit pattern.
/// - [`static_hash`](Self::static_hash) agrees with it: equal values hash equally.
/// - [`to_json`](Self::to_json) / [`from_json`](Self::from_json) round-trip exactly (floats
///   included: non-finite floats are written as strings). A type that cannot be written
///   returns `Err` from `to_json`; that error surfaces only when a `TreeDef` holding it is
///   serialized or exported, never when a tree is flattened.
///
/// ```
/// use mlx_tree::{tree_structure, Array, StaticData, TreeNode};
///
/// #[derive(Debug, Clone, StaticData)]
/// enum Activation { Relu, Gelu { approx: bool } }
///
/// #[derive(TreeNode)]
/// struct Layer { w: Array, #[tree(static)] act: Activation, #[tree(static)] scale: f32 }
///
/// let layer = |scale| Layer { w: Array::from_scalar(1.0f32), act: Activation::Relu, scale };
/// assert_ne!(tree_structure(&layer(0.0))?, tree_structure(&layer(-0.0))?);
/// assert_eq!(tree_structure(&layer(f32::NAN))?, tree_structure(&layer(f32::NAN))?);
/// # Ok::<(), mlx_tree::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be static tree data (it does not implement `StaticData`)",
    label = "not static data",
    note = "derive it: `#[derive(Debug, Clone, StaticData)]` (every field must be `StaticData` too)",
    note = "built in: integers, floats, `bool`, `char`, `String`, `Option`, `Vec`, arrays, tuples, `BTreeSet`, `BTreeMap`"
)]
pub trait StaticData: Clone + fmt::Debug + Send + Sync + 'static {
    /// Whether a trace made with `self` is valid for `other`.
    fn static_eq(&self, other: &Self) -> bool;

    /// Feeds the value to `state`, consistently with [`static_eq`](Self::static_eq).
    fn static_hash<H: Hasher>(&self, state: &mut H);

    /// The value as JSON, for writing a `TreeDef`. Must round-trip through
    /// [`from_json`](Self::from_json).
    fn to_json(&self) -> Result<Json>;

    /// Reads a value written by [`to_json`](Self::to_json).
    fn from_json(json: &Json) -> Result<Self>;

    /// How many words [`to_words`](Self::to_words) fills (0: the value is not packed). Part of
    /// the allocation-free storage of small values; not for use outside the built-in impls.
    #[doc(hidden)]
    const WORDS: usize = 0;

    /// The value packed into `WORDS` words (the rest zero), canonically: two values are
    /// `static_eq` exactly when their words are equal.
    #[doc(hidden)]
    fn to_words(&self) -> [u64; 2] {
        [0, 0]
    }

    /// The inverse of `to_words`.
    #[doc(hidden)]
    fn from_words(_words: [u64; 2]) -> Self {
        unreachable!("from_words is only called for types with WORDS > 0")
    }
}

/// The error for JSON that is not a `T` (also used by `#[derive(StaticData)]` output).
pub fn json_error<T>(json: &Json) -> crate::Error {
    error::invalid(format!(
        "static data {json} is not a `{}`",
        std::any::type_name::<T>()
    ))
}

// ---- the stored form ----

/// Type-erased operations on packed words of one type `T` (a zero-sized `Codec<T>`, so a
/// `&'static dyn WordsCodec` needs no allocation).
trait WordsCodec: Send + Sync {
    fn value_type(&self) -> TypeId;
    fn type_name(&self) -> &'static str;
    fn fmt(&self, words: [u64; 2], f: &mut fmt::Formatter<'_>) -> fmt::Result;
    fn to_json(&self, words: [u64; 2]) -> Result<Json>;
}

struct Codec<T>(PhantomData<fn() -> T>);

impl<T: StaticData> WordsCodec for Codec<T> {
    fn value_type(&self) -> TypeId {
        TypeId::of::<T>()
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
    fn fmt(&self, words: [u64; 2], f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&T::from_words(words), f)
    }
    fn to_json(&self, words: [u64; 2]) -> Result<Json> {
        T::from_words(words).to_json()
    }
}

/// Type-erased operations on a boxed static value.
trait DynStatic: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn type_name(&self) -> &'static str;
    fn eq_dyn(&self, other: &dyn DynStatic) -> bool;
    fn hash_dyn(&self, state: &mut dyn Hasher);
    fn fmt_dyn(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    fn to_json(&self) -> Result<Json>;
}

impl<T: StaticData> DynStatic for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
    fn eq_dyn(&self, other: &dyn DynStatic) -> bool {
        other
            .as_any()
            .downcast_ref::<T>()
            .is_some_and(|o| self.static_eq(o))
    }
    fn hash_dyn(&self, mut state: &mut dyn Hasher) {
        self.static_hash(&mut state);
    }
    fn fmt_dyn(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
    fn to_json(&self) -> Result<Json> {
        StaticData::to_json(self)
    }
}

#[derive(Clone)]
enum Repr {
    /// A small `Copy` value packed in place.
    Words {
        codec: &'static dyn WordsCodec,
        words: [u64; 2],
    },
    /// Any other typed value.
    Boxed(Arc<dyn DynStatic>),
    /// Read back from a serialized `TreeDef`: the type is not known.
    Json(Arc<Json>),
}

/// One piece of static data inside a [`TreeDef`](crate::TreeDef), kept typed.
///
/// Equality and hashing are those of [`StaticData`] (exact: floats by bit pattern); values of
/// different types are never equal. A value read from a serialized `TreeDef` is untyped JSON
/// ([`as_json`](Self::as_json)); it equals another such value with the same JSON text, never
/// a typed one — [`same_as`](Self::same_as) looks through that difference (and is what
/// `TreeDef`'s own equality uses).
#[derive(Clone)]
pub struct StaticValue(Repr);

impl StaticValue {
    /// Stores `value` (allocation-free for small `Copy` types).
    #[inline]
    pub fn new<T: StaticData>(value: &T) -> Self {
        if T::WORDS > 0 {
            StaticValue(Repr::Words {
                codec: &Codec::<T>(PhantomData),
                words: value.to_words(),
            })
        } else {
            StaticValue(Repr::Boxed(Arc::new(value.clone())))
        }
    }

    pub(crate) fn from_json(json: Json) -> Self {
        StaticValue(Repr::Json(Arc::new(json)))
    }

    /// The value as a `T`: `Ok(None)` if it holds another type; for untyped JSON (a `TreeDef`
    /// read back from a file) the JSON is parsed as a `T`, and a mismatch is an `Err`.
    pub fn get<T: StaticData>(&self) -> Result<Option<T>> {
        match &self.0 {
            Repr::Words { codec, words } => {
                Ok((codec.value_type() == TypeId::of::<T>()).then(|| T::from_words(*words)))
            }
            Repr::Boxed(b) => Ok(b.as_any().downcast_ref::<T>().cloned()),
            Repr::Json(j) => T::from_json(j).map(Some),
        }
    }

    /// Whether this holds exactly `value`: the same as `*self == StaticValue::new(value)`,
    /// without building one.
    #[inline]
    pub(crate) fn holds<T: StaticData>(&self, value: &T) -> bool {
        match &self.0 {
            Repr::Words { codec, words } => {
                T::WORDS > 0
                    && codec.value_type() == TypeId::of::<T>()
                    && *words == value.to_words()
            }
            Repr::Boxed(b) => {
                T::WORDS == 0
                    && b.as_any()
                        .downcast_ref::<T>()
                        .is_some_and(|stored| stored.static_eq(value))
            }
            Repr::Json(_) => false,
        }
    }

    /// Whether the value is a `T` (false for untyped JSON).
    pub fn is<T: StaticData>(&self) -> bool {
        match &self.0 {
            Repr::Words { codec, .. } => codec.value_type() == TypeId::of::<T>(),
            Repr::Boxed(b) => b.as_any().is::<T>(),
            Repr::Json(_) => false,
        }
    }

    /// The Rust type name of the value (`None` for untyped JSON).
    pub fn type_name(&self) -> Option<&'static str> {
        match &self.0 {
            Repr::Words { codec, .. } => Some(codec.type_name()),
            Repr::Boxed(b) => Some(b.type_name()),
            Repr::Json(_) => None,
        }
    }

    /// The untyped JSON of a value read back from a serialized `TreeDef`.
    pub fn as_json(&self) -> Option<&Json> {
        match &self.0 {
            Repr::Json(j) => Some(j),
            _ => None,
        }
    }

    /// Equality that looks through the representation: a value read back from a file (JSON)
    /// is the same as a typed value whose serialized form is that JSON. Used where a live
    /// tree is checked against a stored structure (an imported function's input).
    pub fn same_as(&self, other: &StaticValue) -> bool {
        match (&self.0, &other.0) {
            (Repr::Json(j), _) => other.to_json().is_ok_and(|o| json_eq(&o, j)),
            (_, Repr::Json(j)) => self.to_json().is_ok_and(|s| json_eq(&s, j)),
            _ => self == other,
        }
    }

    /// The value's serialized form (what a written `TreeDef` holds).
    pub fn to_json(&self) -> Result<Json> {
        match &self.0 {
            Repr::Words { codec, words } => codec.to_json(*words),
            Repr::Boxed(b) => b.to_json(),
            Repr::Json(j) => Ok((**j).clone()),
        }
    }
}

impl PartialEq for StaticValue {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Words { codec: a, words: x }, Repr::Words { codec: b, words: y }) => {
                x == y && a.value_type() == b.value_type()
            }
            (Repr::Boxed(a), Repr::Boxed(b)) => a.eq_dyn(&**b),
            (Repr::Json(a), Repr::Json(b)) => json_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for StaticValue {}

impl Hash for StaticValue {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match &self.0 {
            Repr::Words { codec, words } => {
                codec.value_type().hash(state);
                words.hash(state);
            }
            Repr::Boxed(b) => {
                b.as_any().type_id().hash(state);
                b.hash_dyn(state);
            }
            // serde_json::Value has no Hash; its text is canonical for equal values (maps
            // are ordered), and this is off every hot path.
            Repr::Json(j) => j.to_string().hash(state),
        }
    }
}

impl fmt::Debug for StaticValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Words { codec, words } => codec.fmt(*words, f),
            Repr::Boxed(b) => b.fmt_dyn(f),
            Repr::Json(j) => write!(f, "{j}"),
        }
    }
}

impl fmt::Display for StaticValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// JSON equality by canonical text: `serde_json`'s `==` compares numbers as `f64`, which
/// would make `0.0` and `-0.0` equal.
fn json_eq(a: &Json, b: &Json) -> bool {
    let (a, b): (String, String) = (a.to_string(), b.to_string());
    a == b
}

// ---- built-in impls ----

macro_rules! int_impls {
    ($($t:ty),*) => {$(
        impl StaticData for $t {
            #[inline]
            fn static_eq(&self, other: &Self) -> bool {
                self == other
            }
            #[inline]
            fn static_hash<H: Hasher>(&self, state: &mut H) {
                self.hash(state)
            }
            fn to_json(&self) -> Result<Json> {
                Ok(Json::from(*self))
            }
            fn from_json(json: &Json) -> Result<Self> {
                let wide: Option<i128> = match json {
                    Json::Number(n) => n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)),
                    _ => None,
                };
                wide.and_then(|w| <$t>::try_from(w).ok()).ok_or_else(|| json_error::<$t>(json))
            }
            const WORDS: usize = 1;
            #[inline]
            fn to_words(&self) -> [u64; 2] {
                // Sign-extension keeps the packing canonical (one bit pattern per value).
                [*self as i128 as u64, 0]
            }
            #[inline]
            fn from_words(words: [u64; 2]) -> Self {
                words[0] as $t
            }
        }
    )*};
}

int_impls!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

macro_rules! wide_int_impls {
    ($($t:ty),*) => {$(
        impl StaticData for $t {
            fn static_eq(&self, other: &Self) -> bool {
                self == other
            }
            fn static_hash<H: Hasher>(&self, state: &mut H) {
                self.hash(state)
            }
            /// As a decimal string: JSON numbers do not hold 128 bits.
            fn to_json(&self) -> Result<Json> {
                Ok(Json::String(self.to_string()))
            }
            fn from_json(json: &Json) -> Result<Self> {
                json.as_str()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| json_error::<$t>(json))
            }
            const WORDS: usize = 2;
            fn to_words(&self) -> [u64; 2] {
                let bits = *self as u128;
                [bits as u64, (bits >> 64) as u64]
            }
            fn from_words(words: [u64; 2]) -> Self {
                (u128::from(words[0]) | (u128::from(words[1]) << 64)) as $t
            }
        }
    )*};
}

wide_int_impls!(i128, u128);

macro_rules! float_impls {
    ($($t:ty, $bits:ty);*) => {$(
        impl StaticData for $t {
            #[inline]
            fn static_eq(&self, other: &Self) -> bool {
                self.to_bits() == other.to_bits()
            }
            #[inline]
            fn static_hash<H: Hasher>(&self, state: &mut H) {
                self.to_bits().hash(state)
            }
            /// Finite values as JSON numbers (exact: `serde_json`'s `float_roundtrip`);
            /// infinities as `"inf"` / `"-inf"`, NaN as `"nan"` or, for a payload other than
            /// the canonical one, `"nan:0x<bits>"`.
            fn to_json(&self) -> Result<Json> {
                Ok(if self.is_finite() {
                    Json::from(*self as f64)
                } else if self.is_nan() {
                    if self.to_bits() == <$t>::NAN.to_bits() {
                        Json::from("nan")
                    } else {
                        Json::from(format!("nan:{:#x}", self.to_bits()))
                    }
                } else if *self > 0.0 {
                    Json::from("inf")
                } else {
                    Json::from("-inf")
                })
            }
            fn from_json(json: &Json) -> Result<Self> {
                let parsed = match json {
                    // Exact: the number was written from a value of this type.
                    Json::Number(n) => n.as_f64().map(|x| x as $t),
                    Json::String(s) => match s.as_str() {
                        "inf" => Some(<$t>::INFINITY),
                        "-inf" => Some(<$t>::NEG_INFINITY),
                        "nan" => Some(<$t>::NAN),
                        s => s
                            .strip_prefix("nan:0x")
                            .and_then(|h| <$bits>::from_str_radix(h, 16).ok())
                            .map(<$t>::from_bits)
                            .filter(|x| x.is_nan()),
                    },
                    _ => None,
                };
                parsed.ok_or_else(|| json_error::<$t>(json))
            }
            const WORDS: usize = 1;
            #[inline]
            fn to_words(&self) -> [u64; 2] {
                [u64::from(self.to_bits()), 0]
            }
            #[inline]
            fn from_words(words: [u64; 2]) -> Self {
                <$t>::from_bits(words[0] as $bits)
            }
        }
    )*};
}

float_impls!(f32, u32; f64, u64);

impl StaticData for bool {
    #[inline]
    fn static_eq(&self, other: &Self) -> bool {
        self == other
    }
    #[inline]
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        self.hash(state)
    }
    fn to_json(&self) -> Result<Json> {
        Ok(Json::Bool(*self))
    }
    fn from_json(json: &Json) -> Result<Self> {
        json.as_bool().ok_or_else(|| json_error::<bool>(json))
    }
    const WORDS: usize = 1;
    #[inline]
    fn to_words(&self) -> [u64; 2] {
        [u64::from(*self), 0]
    }
    #[inline]
    fn from_words(words: [u64; 2]) -> Self {
        words[0] != 0
    }
}

impl StaticData for char {
    fn static_eq(&self, other: &Self) -> bool {
        self == other
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        self.hash(state)
    }
    fn to_json(&self) -> Result<Json> {
        Ok(Json::String(self.to_string()))
    }
    fn from_json(json: &Json) -> Result<Self> {
        let mut chars = json.as_str().map(str::chars);
        match chars.as_mut().map(|c| (c.next(), c.next())) {
            Some((Some(c), None)) => Ok(c),
            _ => Err(json_error::<char>(json)),
        }
    }
    const WORDS: usize = 1;
    fn to_words(&self) -> [u64; 2] {
        [u64::from(u32::from(*self)), 0]
    }
    fn from_words(words: [u64; 2]) -> Self {
        char::from_u32(words[0] as u32).unwrap_or_default()
    }
}

impl StaticData for () {
    fn static_eq(&self, _: &Self) -> bool {
        true
    }
    fn static_hash<H: Hasher>(&self, _: &mut H) {}
    fn to_json(&self) -> Result<Json> {
        Ok(Json::Null)
    }
    fn from_json(json: &Json) -> Result<Self> {
        json.is_null()
            .then_some(())
            .ok_or_else(|| json_error::<()>(json))
    }
    const WORDS: usize = 1;
    fn from_words(_: [u64; 2]) -> Self {}
}

/// MLX's quantization format, a static field of quantized layers: written as Python's mode
/// string (`"nvfp4"`).
impl StaticData for mlx_rs::ops::QuantizationMode {
    fn static_eq(&self, other: &Self) -> bool {
        self == other
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
    fn to_json(&self) -> Result<Json> {
        Ok(Json::String(self.as_str().to_string()))
    }
    fn from_json(json: &Json) -> Result<Self> {
        use mlx_rs::ops::QuantizationMode as Q;
        [Q::Affine, Q::Mxfp4, Q::Mxfp8, Q::Nvfp4]
            .into_iter()
            .find(|m| json.as_str() == Some(m.as_str()))
            .ok_or_else(|| json_error::<Q>(json))
    }
}

/// An element type, a static field of layers that cast (Python: a `mx.Dtype` attribute, such
/// as `FullyShardedModule`'s `compute_dtype`): written as Python's name (`"bfloat16"`).
impl StaticData for mlx_rs::Dtype {
    fn static_eq(&self, other: &Self) -> bool {
        self == other
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        self.hash(state)
    }
    fn to_json(&self) -> Result<Json> {
        Ok(Json::String(self.name().to_string()))
    }
    fn from_json(json: &Json) -> Result<Self> {
        mlx_rs::Dtype::ALL
            .into_iter()
            .find(|d| json.as_str() == Some(d.name()))
            .ok_or_else(|| json_error::<mlx_rs::Dtype>(json))
    }
}

impl StaticData for String {
    fn static_eq(&self, other: &Self) -> bool {
        self == other
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        self.hash(state)
    }
    fn to_json(&self) -> Result<Json> {
        Ok(Json::String(self.clone()))
    }
    fn from_json(json: &Json) -> Result<Self> {
        json.as_str()
            .map(str::to_string)
            .ok_or_else(|| json_error::<String>(json))
    }
}

/// A `&'static str` compares and prints like a `String`; it can be written, but a `TreeDef`
/// read back from a file cannot give one out (no `'static` string to point at), so
/// `from_json` is an `Err`.
impl StaticData for &'static str {
    fn static_eq(&self, other: &Self) -> bool {
        self == other
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        self.hash(state)
    }
    fn to_json(&self) -> Result<Json> {
        Ok(Json::String(self.to_string()))
    }
    fn from_json(json: &Json) -> Result<Self> {
        Err(error::invalid(format!(
            "static data {json} cannot be read back as a `&'static str`; use a `String` field"
        )))
    }
}

impl<T: StaticData> StaticData for Option<T> {
    fn static_eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Some(a), Some(b)) => a.static_eq(b),
            (None, None) => true,
            _ => false,
        }
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Some(x) => {
                state.write_u8(1);
                x.static_hash(state);
            }
            None => state.write_u8(0),
        }
    }
    /// `None` is `null`, `Some(x)` is `[x]`: so `Some(None)` and `None` stay apart.
    fn to_json(&self) -> Result<Json> {
        match self {
            None => Ok(Json::Null),
            Some(x) => Ok(Json::Array(vec![x.to_json()?])),
        }
    }
    fn from_json(json: &Json) -> Result<Self> {
        match json {
            Json::Null => Ok(None),
            Json::Array(items) if items.len() == 1 => T::from_json(&items[0]).map(Some),
            _ => Err(json_error::<Self>(json)),
        }
    }
    // A one-word value plus its tag fit in two words.
    const WORDS: usize = if T::WORDS == 1 { 2 } else { 0 };
    fn to_words(&self) -> [u64; 2] {
        match self {
            Some(x) => [1, x.to_words()[0]],
            None => [0, 0],
        }
    }
    fn from_words(words: [u64; 2]) -> Self {
        (words[0] != 0).then(|| T::from_words([words[1], 0]))
    }
}

impl<T: StaticData> StaticData for Box<T> {
    fn static_eq(&self, other: &Self) -> bool {
        (**self).static_eq(other)
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        (**self).static_hash(state)
    }
    fn to_json(&self) -> Result<Json> {
        (**self).to_json()
    }
    fn from_json(json: &Json) -> Result<Self> {
        T::from_json(json).map(Box::new)
    }
}

impl<T: StaticData + Sync> StaticData for Arc<T> {
    fn static_eq(&self, other: &Self) -> bool {
        (**self).static_eq(other)
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        (**self).static_hash(state)
    }
    fn to_json(&self) -> Result<Json> {
        (**self).to_json()
    }
    fn from_json(json: &Json) -> Result<Self> {
        T::from_json(json).map(Arc::new)
    }
}

fn seq_eq<'a, T: StaticData>(
    a: impl ExactSizeIterator<Item = &'a T>,
    b: impl ExactSizeIterator<Item = &'a T>,
) -> bool {
    a.len() == b.len() && a.zip(b).all(|(x, y)| x.static_eq(y))
}

fn seq_hash<'a, T: StaticData, H: Hasher>(
    items: impl ExactSizeIterator<Item = &'a T>,
    state: &mut H,
) {
    state.write_usize(items.len());
    items.for_each(|x| x.static_hash(state));
}

fn seq_to_json<'a, T: StaticData>(items: impl Iterator<Item = &'a T>) -> Result<Json> {
    items
        .map(T::to_json)
        .collect::<Result<Vec<_>>>()
        .map(Json::Array)
}

fn seq_from_json<T: StaticData, C: FromIterator<T>>(json: &Json) -> Result<C> {
    match json {
        Json::Array(items) => items.iter().map(T::from_json).collect(),
        _ => Err(json_error::<C>(json)),
    }
}

impl<T: StaticData> StaticData for Vec<T> {
    fn static_eq(&self, other: &Self) -> bool {
        seq_eq(self.iter(), other.iter())
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        seq_hash(self.iter(), state)
    }
    fn to_json(&self) -> Result<Json> {
        seq_to_json(self.iter())
    }
    fn from_json(json: &Json) -> Result<Self> {
        seq_from_json(json)
    }
}

impl<T: StaticData, const N: usize> StaticData for [T; N] {
    fn static_eq(&self, other: &Self) -> bool {
        seq_eq(self.iter(), other.iter())
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        seq_hash(self.iter(), state)
    }
    fn to_json(&self) -> Result<Json> {
        seq_to_json(self.iter())
    }
    fn from_json(json: &Json) -> Result<Self> {
        let items: Vec<T> = seq_from_json(json)?;
        items.try_into().map_err(|_| json_error::<Self>(json))
    }
}

impl<T: StaticData + Ord> StaticData for BTreeSet<T> {
    fn static_eq(&self, other: &Self) -> bool {
        seq_eq(self.iter(), other.iter())
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        seq_hash(self.iter(), state)
    }
    fn to_json(&self) -> Result<Json> {
        seq_to_json(self.iter())
    }
    fn from_json(json: &Json) -> Result<Self> {
        seq_from_json(json)
    }
}

impl<K: StaticData + Ord, V: StaticData> StaticData for BTreeMap<K, V> {
    fn static_eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other)
                .all(|((k, v), (l, w))| k.static_eq(l) && v.static_eq(w))
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        for (k, v) in self {
            k.static_hash(state);
            v.static_hash(state);
        }
    }
    /// As `[[key, value], ...]` in key order (keys need not be strings).
    fn to_json(&self) -> Result<Json> {
        self.iter()
            .map(|(k, v)| Ok(Json::Array(vec![k.to_json()?, v.to_json()?])))
            .collect::<Result<Vec<_>>>()
            .map(Json::Array)
    }
    fn from_json(json: &Json) -> Result<Self> {
        let pairs = json.as_array().ok_or_else(|| json_error::<Self>(json))?;
        pairs
            .iter()
            .map(|p| match p.as_array().map(Vec::as_slice) {
                Some([k, v]) => Ok((K::from_json(k)?, V::from_json(v)?)),
                _ => Err(json_error::<Self>(json)),
            })
            .collect()
    }
}

impl<T: ?Sized + Send + Sync + 'static> StaticData for PhantomData<T> {
    fn static_eq(&self, _: &Self) -> bool {
        true
    }
    fn static_hash<H: Hasher>(&self, _: &mut H) {}
    fn to_json(&self) -> Result<Json> {
        Ok(Json::Null)
    }
    fn from_json(json: &Json) -> Result<Self> {
        json.is_null()
            .then_some(PhantomData)
            .ok_or_else(|| json_error::<Self>(json))
    }
}

macro_rules! tuple_impls {
    ($( ($len:expr; $($name:ident $idx:tt),+) )+) => {$(
        impl<$($name: StaticData),+> StaticData for ($($name,)+) {
            fn static_eq(&self, other: &Self) -> bool {
                $( self.$idx.static_eq(&other.$idx) )&&+
            }
            fn static_hash<HH: Hasher>(&self, state: &mut HH) {
                $( self.$idx.static_hash(state); )+
            }
            fn to_json(&self) -> Result<Json> {
                Ok(Json::Array(vec![$( self.$idx.to_json()? ),+]))
            }
            fn from_json(json: &Json) -> Result<Self> {
                match json.as_array() {
                    Some(items) if items.len() == $len => {
                        Ok(($( $name::from_json(&items[$idx])?, )+))
                    }
                    _ => Err(json_error::<Self>(json)),
                }
            }
        }
    )+};
}

tuple_impls! {
    (1; A 0)
    (3; A 0, B 1, C 2)
    (4; A 0, B 1, C 2, D 3)
    (5; A 0, B 1, C 2, D 3, E 4)
    (6; A 0, B 1, C 2, D 3, E 4, G 5)
}

/// Pairs (`betas: (f64, f64)`) are common static data: two one-word values pack in place.
impl<A: StaticData, B: StaticData> StaticData for (A, B) {
    fn static_eq(&self, other: &Self) -> bool {
        self.0.static_eq(&other.0) && self.1.static_eq(&other.1)
    }
    fn static_hash<H: Hasher>(&self, state: &mut H) {
        self.0.static_hash(state);
        self.1.static_hash(state);
    }
    fn to_json(&self) -> Result<Json> {
        Ok(Json::Array(vec![self.0.to_json()?, self.1.to_json()?]))
    }
    fn from_json(json: &Json) -> Result<Self> {
        match json.as_array().map(Vec::as_slice) {
            Some([a, b]) => Ok((A::from_json(a)?, B::from_json(b)?)),
            _ => Err(json_error::<Self>(json)),
        }
    }
    const WORDS: usize = if A::WORDS == 1 && B::WORDS == 1 { 2 } else { 0 };
    fn to_words(&self) -> [u64; 2] {
        [self.0.to_words()[0], self.1.to_words()[0]]
    }
    fn from_words(words: [u64; 2]) -> Self {
        (A::from_words([words[0], 0]), B::from_words([words[1], 0]))
    }
}
