//! The one macro behind every wire newtype of the crate: the codes of
//! [`crate::codes`], the option and flag fields of the request parameter area
//! and the flag words of the responses.
//!
//! A wire newtype wraps its wire integer, so an unknown value or bit still
//! decodes, re-encodes unchanged and prints. It has two kinds:
//!
//! - `code`: a value field. `Debug` and `Display` print the C name with the
//!   value (`kXR_readv(3025)`), or the type name for an unknown value
//!   (`RequestId(2999)`).
//! - `flags`: a bit set. `Debug` prints the named bits it holds and any bits
//!   left over (`Mode(kXR_ur | kXR_uw | 0x200)`).

use core::fmt;

/// Defines a wire newtype `pub struct $name(pub $repr)` of kind `code` or
/// `flags`:
///
/// ```text
/// wire_newtype! {
///     /// docs
///     code QueryCode(u16);
///     /// docs
///     STATS = 1 => "kXR_QStats";
/// }
/// ```
///
/// Both kinds get the named constants (with the C name as doc alias),
/// `NAMED`, `From` both ways and the [`crate::request::params::Param`] impl
/// that reads and writes the value in the request parameter area. A `code`
/// also gets `ALL`, `protocol_name`, `is_known`, `Debug` and `Display`; a
/// `flags` gets `EMPTY`, `contains`, `without`, `|`, `|=` and `Debug`.
macro_rules! wire_newtype {
    (
        $(#[$meta:meta])*
        $kind:ident $name:ident($repr:ty);
        $( $(#[$cmeta:meta])* $konst:ident = $val:literal => $cname:literal; )*
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub $repr);

        impl $name {
            $(
                $(#[$cmeta])*
                #[doc = concat!("`", $cname, "` = ", stringify!($val), ".")]
                #[doc(alias = $cname)]
                pub const $konst: $name = $name($val);
            )*

            /// The named values with their C names, in declaration order.
            pub const NAMED: &'static [($name, &'static str)] = &[$(($name($val), $cname)),*];
        }

        wire_newtype!(@$kind $name { $($val => $cname),* });

        impl From<$repr> for $name {
            fn from(v: $repr) -> Self {
                $name(v)
            }
        }

        impl From<$name> for $repr {
            fn from(v: $name) -> Self {
                v.0
            }
        }

        impl $crate::request::params::Param for $name {
            const LEN: usize = core::mem::size_of::<$repr>();
            fn read(b: &[u8]) -> Self {
                $name(<$repr as $crate::request::params::Param>::read(b))
            }
            fn write(self, b: &mut [u8]) {
                $crate::request::params::Param::write(self.0, b)
            }
        }
    };

    (@code $name:ident { $($val:literal => $cname:literal),* }) => {
        impl $name {
            /// Every value this crate names, in declaration order.
            pub const ALL: &'static [$name] = &[$($name($val)),*];

            /// The name `XProtocol.hh` gives this value, or `None` for a value
            /// this crate does not know (which still round-trips).
            pub const fn protocol_name(self) -> Option<&'static str> {
                match self.0 {
                    $( $val => Some($cname), )*
                    _ => None,
                }
            }

            /// Whether this crate names the value.
            pub const fn is_known(self) -> bool {
                self.protocol_name().is_some()
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                let name = self.protocol_name().unwrap_or(stringify!($name));
                write!(f, "{}({})", name, self.0)
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Debug::fmt(self, f)
            }
        }
    };

    (@flags $name:ident { $($val:literal => $cname:literal),* }) => {
        impl $name {
            /// No bit set.
            pub const EMPTY: $name = $name(0);

            /// Whether every bit of `other` is set in `self`.
            pub const fn contains(self, other: $name) -> bool {
                self.0 & other.0 == other.0
            }

            /// `self` with the bits of `other` cleared.
            pub const fn without(self, other: $name) -> $name {
                $name(self.0 & !other.0)
            }
        }

        impl core::ops::BitOr for $name {
            type Output = $name;
            fn bitor(self, rhs: $name) -> $name {
                $name(self.0 | rhs.0)
            }
        }

        impl core::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, rhs: $name) {
                self.0 |= rhs.0;
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                let named = Self::NAMED.iter().map(|(v, n)| (u64::from(v.0), *n));
                $crate::macros::fmt_flags(f, stringify!($name), u64::from(self.0), named)
            }
        }
    };
}

/// Prints `Name(kXR_a | kXR_b | 0x40)`: the named bit groups contained in
/// `bits` (first match wins, in declaration order), then any bits left over;
/// `Name(0x0)` when no bit is set.
pub(crate) fn fmt_flags(
    f: &mut fmt::Formatter<'_>,
    type_name: &str,
    bits: u64,
    named: impl Iterator<Item = (u64, &'static str)>,
) -> fmt::Result {
    write!(f, "{type_name}(")?;
    let mut left = bits;
    let mut first = true;
    let mut sep = |f: &mut fmt::Formatter<'_>| {
        let s = if first { "" } else { " | " };
        first = false;
        f.write_str(s)
    };
    for (v, n) in named {
        if v != 0 && left & v == v {
            sep(f)?;
            f.write_str(n)?;
            left &= !v;
        }
    }
    if left != 0 || bits == 0 {
        sep(f)?;
        write!(f, "{left:#x}")?;
    }
    f.write_str(")")
}
