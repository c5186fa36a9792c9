//! Crate-internal macros.

/// Declares a `Copy` enum for a wire code that keeps codes it has no name for.
///
/// The generated enum gets one extra variant, `Unknown($ty)`, plus `From<$ty>`
/// and `From<Enum> for $ty`, so `u8::from(Enum::from(x)) == x` for every `x`:
/// a value this crate does not know survives a parse/emit round trip instead of
/// being rejected. `Unknown(v)` with a `v` that *is* known converts to the same
/// wire value as the named variant; `From<$ty>` always returns the named one.
///
/// Variant values must be literals (they are used as match patterns, so the
/// compiler rejects duplicates).
macro_rules! enum_with_unknown {
    (
        $( #[$enum_attr:meta] )*
        pub enum $name:ident($ty:ty) {
            $(
                $( #[$variant_attr:meta] )*
                $variant:ident = $value:literal
            ),+ $(,)?
        }
    ) => {
        #[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Clone, Copy)]
        $( #[$enum_attr] )*
        pub enum $name {
            $(
                $( #[$variant_attr] )*
                $variant,
            )+
            /// A code without a name in this crate, kept verbatim.
            Unknown($ty),
        }

        impl ::core::convert::From<$ty> for $name {
            fn from(value: $ty) -> Self {
                match value {
                    $( $value => $name::$variant, )+
                    other => $name::Unknown(other),
                }
            }
        }

        impl ::core::convert::From<$name> for $ty {
            fn from(value: $name) -> Self {
                match value {
                    $( $name::$variant => $value, )+
                    $name::Unknown(other) => other,
                }
            }
        }
    };
}
