//! [`options!`](crate::options): the keyword-argument structs of the API from one table each.
//!
//! Every Python function or layer with three or more keywords takes one options struct
//! (docs/porting.md, "Keyword arguments: one rule"): public fields, `Default` = Python's
//! defaults, one builder method per keyword named as in Python. The macro writes the struct,
//! its `Default` and its setters from one line per field, so the three cannot disagree and no
//! struct spells them out by hand.

/// Declares an options struct (see the module docs). Each field is
/// `name: kind [Type] = default,` where `kind` says what the field holds and what its setter
/// takes:
///
/// | kind | field | setter takes |
/// |---|---|---|
/// | `plain T` | `T` | `T` |
/// | `opt T` | `Option<T>` (`None`: Python's `None`) | `T` |
/// | `into T` | `T` | `impl Into<T>` |
/// | `array` | `Option<&'a Array>` | `&'a Array` |
/// | `operand` | `Operand<'a>` (a scalar or an array) | `impl IntoOperand<'a>` |
///
/// `array` and `operand` need the struct's lifetime parameter. Derives and docs go on the
/// struct as usual.
#[doc(hidden)]
#[macro_export]
macro_rules! options {
    // With a lifetime (for `array` and `operand` fields). Two arms rather than an optional
    // lifetime: a lifetime used inside the per-field repetition must not itself repeat.
    (
        $(#[$attr:meta])*
        pub struct $name:ident<$lt:lifetime> {
            $( $(#[$fdoc:meta])* $field:ident: $kind:ident $($ty:ty)? = $default:expr, )*
        }
    ) => {
        $(#[$attr])*
        pub struct $name<$lt> {
            $( $(#[$fdoc])* pub $field: $crate::options!(@field [$lt] $kind $($ty)?), )*
        }

        impl ::core::default::Default for $name<'_> {
            fn default() -> Self {
                $name { $( $field: $default, )* }
            }
        }

        impl<$lt> $name<$lt> {
            $( $crate::options!(@setter [$lt] $kind $field $($ty)?); )*
        }
    };
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $( $(#[$fdoc:meta])* $field:ident: $kind:ident $($ty:ty)? = $default:expr, )*
        }
    ) => {
        $(#[$attr])*
        pub struct $name {
            $( $(#[$fdoc])* pub $field: $crate::options!(@field [] $kind $($ty)?), )*
        }

        impl ::core::default::Default for $name {
            fn default() -> Self {
                $name { $( $field: $default, )* }
            }
        }

        impl $name {
            $( $crate::options!(@setter [] $kind $field $($ty)?); )*
        }
    };
    (@field [$($lt:lifetime)?] plain $ty:ty) => { $ty };
    (@field [$($lt:lifetime)?] opt $ty:ty) => { ::core::option::Option<$ty> };
    (@field [$($lt:lifetime)?] into $ty:ty) => { $ty };
    (@field [$lt:lifetime] array) => { ::core::option::Option<&$lt $crate::Array> };
    (@field [$lt:lifetime] operand) => { $crate::ops::Operand<$lt> };
    (@setter [$($lt:lifetime)?] plain $field:ident $ty:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        pub fn $field(mut self, $field: $ty) -> Self {
            self.$field = $field;
            self
        }
    };
    (@setter [$($lt:lifetime)?] opt $field:ident $ty:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        pub fn $field(mut self, $field: $ty) -> Self {
            self.$field = ::core::option::Option::Some($field);
            self
        }
    };
    (@setter [$($lt:lifetime)?] into $field:ident $ty:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        pub fn $field(mut self, $field: impl ::core::convert::Into<$ty>) -> Self {
            self.$field = $field.into();
            self
        }
    };
    (@setter [$lt:lifetime] array $field:ident) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        pub fn $field(mut self, $field: &$lt $crate::Array) -> Self {
            self.$field = ::core::option::Option::Some($field);
            self
        }
    };
    (@setter [$lt:lifetime] operand $field:ident) => {
        #[doc = concat!("Sets `", stringify!($field), "`: a scalar, `&Array` or `Array`.")]
        pub fn $field(mut self, $field: impl $crate::ops::IntoOperand<$lt>) -> Self {
            self.$field = $crate::ops::IntoOperand::into_operand($field);
            self
        }
    };
}
