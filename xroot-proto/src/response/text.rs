//! Crate-internal helpers for the ASCII parts of response bodies: splitting
//! on spaces and parsing numbers the way the reference client does
//! (`strtoll(…, 0)` with the whole field consumed), but rejecting what
//! `strtoll` would silently accept (overflow, empty fields).

use bytes::Bytes;

use crate::error::DecodeError;

/// The non-empty space-separated fields of `text` (XrdCl's `splitString`
/// skips empty pieces, so runs of spaces are tolerated).
pub(crate) fn fields(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(|&b| b == b' ').filter(|f| !f.is_empty())
}

/// The zero-copy slice of `whole` that `part` (a sub-slice of it) covers.
pub(crate) fn sub(whole: &Bytes, part: &[u8]) -> Bytes {
    whole.slice_ref(part)
}

/// Shows a field in an error message (lossy, bounded).
fn show(field: &[u8]) -> String {
    let end = field.len().min(40);
    format!("{:?}", String::from_utf8_lossy(&field[..end]))
}

/// Parses `digits` in `radix` into a `u64`, rejecting an empty field, a
/// non-digit and overflow.
fn parse_digits(
    digits: &[u8],
    radix: u32,
    field: &[u8],
    what: &'static str,
) -> Result<u64, DecodeError> {
    if digits.is_empty() {
        return Err(DecodeError::malformed(
            what,
            format!("no digits in {}", show(field)),
        ));
    }
    let mut v: u64 = 0;
    for &c in digits {
        let d = (c as char).to_digit(radix).ok_or_else(|| {
            DecodeError::malformed(what, format!("not a number: {}", show(field)))
        })?;
        v = v
            .checked_mul(radix as u64)
            .and_then(|v| v.checked_add(d as u64))
            .ok_or_else(|| {
                DecodeError::malformed(what, format!("out of range: {}", show(field)))
            })?;
    }
    Ok(v)
}

/// An integer written like C `strtoll(field, &end, 0)` accepts with
/// `*end == 0`: optional sign, then `0x…` hex, `0…` octal or decimal.
/// Errors: [`DecodeError::Malformed`] for anything else or a value outside
/// `i64`.
pub(crate) fn parse_int(field: &[u8], what: &'static str) -> Result<i64, DecodeError> {
    let (neg, rest) = match field.first() {
        Some(b'-') => (true, &field[1..]),
        Some(b'+') => (false, &field[1..]),
        _ => (false, field),
    };
    let (radix, digits) = match rest {
        [b'0', b'x' | b'X', hex @ ..] if !hex.is_empty() => (16, hex),
        [b'0', oct @ ..] if !oct.is_empty() => (8, oct),
        _ => (10, rest),
    };
    let v = parse_digits(digits, radix, field, what)?;
    let out = if neg {
        0i64.checked_sub_unsigned(v)
    } else {
        i64::try_from(v).ok()
    };
    out.ok_or_else(|| DecodeError::malformed(what, format!("out of range: {}", show(field))))
}

/// Like [`parse_int`], for a field that must not be negative.
pub(crate) fn parse_uint(field: &[u8], what: &'static str) -> Result<u64, DecodeError> {
    let v = parse_int(field, what)?;
    u64::try_from(v).map_err(|_| DecodeError::malformed(what, format!("negative: {}", show(field))))
}

/// Octal digits only (a stat `mode` such as `0644` or `4755`).
pub(crate) fn parse_octal(field: &[u8], what: &'static str) -> Result<u32, DecodeError> {
    let v = parse_digits(field, 8, field, what)?;
    u32::try_from(v)
        .map_err(|_| DecodeError::malformed(what, format!("out of range: {}", show(field))))
}

/// Splits a checksum `<alg><sep><value>` at the first `sep` into slices of
/// `text`. Errors: [`DecodeError::Malformed`], saying `expected`, when there
/// is no `sep`, either part is empty or the value holds a space.
pub(crate) fn split_checksum(
    text: &Bytes,
    sep: u8,
    what: &'static str,
    expected: &'static str,
) -> Result<(Bytes, Bytes), DecodeError> {
    let bad = || DecodeError::malformed(what, expected);
    let at = text.iter().position(|&b| b == sep).ok_or_else(bad)?;
    let (alg, value) = (text.slice(..at), text.slice(at + 1..));
    if alg.is_empty() || value.is_empty() || value.contains(&b' ') {
        return Err(bad());
    }
    Ok((alg, value))
}

/// Fails with [`DecodeError::Malformed`] if `text` contains `byte`.
pub(crate) fn forbid(text: &[u8], byte: u8, what: &'static str) -> Result<(), DecodeError> {
    match text.iter().position(|&b| b == byte) {
        Some(at) => Err(DecodeError::malformed(
            what,
            format!("unexpected byte {byte:#04x} at {at}"),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtoll_base_zero() {
        let p = |s: &str| parse_int(s.as_bytes(), "t");
        assert_eq!(p("0"), Ok(0));
        assert_eq!(p("123"), Ok(123));
        assert_eq!(p("-42"), Ok(-42));
        assert_eq!(p("+7"), Ok(7));
        assert_eq!(p("0x1F"), Ok(31));
        assert_eq!(p("0X10"), Ok(16));
        assert_eq!(p("010"), Ok(8));
        assert_eq!(p("-0x10"), Ok(-16));
        assert_eq!(p("9223372036854775807"), Ok(i64::MAX));
        assert_eq!(p("-9223372036854775808"), Ok(i64::MIN));
        for bad in [
            "",
            "-",
            "0x",
            "08",
            "12a",
            "1 2",
            "+-1",
            "--1",
            "9223372036854775808",
            "0x1g",
        ] {
            assert!(
                matches!(p(bad), Err(DecodeError::Malformed { .. })),
                "{bad:?} accepted"
            );
        }
        assert!(parse_uint(b"-1", "t").is_err());
        assert_eq!(parse_octal(b"0644", "t"), Ok(0o644));
        assert_eq!(parse_octal(b"4755", "t"), Ok(0o4755));
        assert!(parse_octal(b"0648", "t").is_err());
        assert!(parse_octal(b"", "t").is_err());
    }

    #[test]
    fn fields_skip_empty_pieces() {
        let f: Vec<_> = fields(b" a  b c ").collect();
        assert_eq!(f, vec![&b"a"[..], b"b", b"c"]);
    }
}
