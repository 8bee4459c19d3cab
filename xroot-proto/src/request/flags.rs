//! Newtypes for the small option, flag and code fields of the request
//! parameter area, and the POSIX-style [`Mode`] shared by open, chmod and mkdir.
//!
//! Each newtype wraps its wire integer, so a value with unknown bits still
//! decodes and re-encodes unchanged. Bit sets ("flags") print the C names of
//! the bits they hold (`OpenOptions(kXR_open_read | kXR_retstat)`); value
//! fields ("codes") print the C name of their value (`QueryCode(kXR_Qconfig)`).

use core::fmt;

/// Defines a request-field newtype: named constants with the C names as doc
/// aliases, conversions, `Debug`, and the [`super::params::Param`] impl that
/// reads and writes it in the parameter area. `flags` types also get bit-set
/// operations; `code` types a `protocol_name` lookup.
macro_rules! wire_newtype {
    (
        $(#[$meta:meta])*
        $kind:ident $name:ident($repr:ty);
        $( $(#[$cmeta:meta])* $konst:ident = $val:literal => $cname:literal; )*
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
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

        wire_newtype!(@$kind $name($repr));

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

    (@flags $name:ident($repr:ty)) => {
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
                $crate::request::flags::fmt_flags(f, stringify!($name), u64::from(self.0), named)
            }
        }
    };

    (@code $name:ident($repr:ty)) => {
        impl $name {
            /// The C name of this value, or `None` for a value this crate
            /// does not know (which still round-trips).
            pub fn protocol_name(self) -> Option<&'static str> {
                Self::NAMED.iter().find(|(v, _)| *v == self).map(|(_, n)| *n)
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.protocol_name() {
                    Some(n) => write!(f, "{}({})", stringify!($name), n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }
    };
}

/// Prints `Name(kXR_a | kXR_b | 0x40)`: the named bit groups contained in
/// `bits` (first match wins, in declaration order), then any bits left over.
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

wire_newtype! {
    /// POSIX permission bits as sent in `kXR_open`, `kXR_chmod` and
    /// `kXR_mkdir` (`XOpenRequestMode`, PROTOCOL.md §6.1). The values are the
    /// POSIX `0o777` bits, so [`Mode::from_posix`] is a mask.
    flags Mode(u16);
    UR = 0x100 => "kXR_ur";
    UW = 0x080 => "kXR_uw";
    UX = 0x040 => "kXR_ux";
    GR = 0x020 => "kXR_gr";
    GW = 0x010 => "kXR_gw";
    GX = 0x008 => "kXR_gx";
    OR = 0x004 => "kXR_or";
    OW = 0x002 => "kXR_ow";
    OX = 0x001 => "kXR_ox";
}

impl Mode {
    /// The permission bits (`0o777`) of a POSIX mode; file type, setuid,
    /// setgid and sticky bits are dropped.
    pub const fn from_posix(mode: u32) -> Mode {
        Mode((mode & 0o777) as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_names_bits_and_leftovers() {
        assert_eq!(
            format!("{:?}", Mode(0o644)),
            "Mode(kXR_ur | kXR_uw | kXR_gr | kXR_or)"
        );
        assert_eq!(format!("{:?}", Mode(0)), "Mode(0x0)");
        assert_eq!(format!("{:?}", Mode(0x201)), "Mode(kXR_ox | 0x200)");
        assert_eq!(Mode::from_posix(0o100755), Mode(0o755));
        assert!(Mode(0o755).contains(Mode::UR | Mode::UX));
        assert_eq!(Mode(0o755).without(Mode::UW), Mode(0o555));
    }
}
