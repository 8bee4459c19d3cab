//! The POSIX-style [`Mode`] shared by open, chmod and mkdir.
//!
//! Like the other option, flag and code fields of the parameter area (which
//! live with the requests that use them), it is a wire newtype: a value with
//! unknown bits still decodes and re-encodes unchanged. Bit sets ("flags")
//! print the C names of the bits they hold
//! (`OpenOptions(kXR_open_read | kXR_retstat)`); value fields ("codes") print
//! the C name with the value (`kXR_Qconfig(7)`).

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
