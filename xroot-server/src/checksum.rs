//! The checksums XRootD servers and clients compare: adler32 (the `adler2`
//! crate), crc32c (`xroot_proto::page::crc32c_append`) and md5 (the `md-5`
//! crate), over a whole file ([`Algorithm::compute`], what `LocalFs`
//! answers to `kXR_Qcksum`) or over bytes as they stream by ([`Checksum`],
//! what a copy tool verifies against the server). Values are sent most
//! significant byte first, as lowercase hex (PROTOCOL.md §11).

use std::io::{self, Read};

use md5::Digest as _;

use xroot_proto::page::crc32c_append;
use xroot_proto::response::ChecksumAnswer;

/// The algorithms, default first (the `chksum` config key lists them).
pub const ALGORITHMS: [&str; 3] = ["adler32", "crc32c", "md5"];

/// Bytes read per step.
const CHUNK: usize = 1 << 20;

/// One of [`ALGORITHMS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Adler-32 (4 bytes), the reference's default.
    Adler32,
    /// CRC-32C (Castagnoli, 4 bytes).
    Crc32c,
    /// MD5 (16 bytes).
    Md5,
}

impl Algorithm {
    /// The algorithm named `name`, in any case (the reference matches the
    /// configured names case-insensitively).
    pub fn named(name: &str) -> Option<Algorithm> {
        let index = ALGORITHMS
            .iter()
            .position(|a| a.eq_ignore_ascii_case(name))?;
        Some([Algorithm::Adler32, Algorithm::Crc32c, Algorithm::Md5][index])
    }

    /// The name sent in the answer (lowercase).
    pub fn name(self) -> &'static str {
        ALGORITHMS[self as usize]
    }

    /// The checksum of everything `input` yields. Errors: those of `input`.
    pub fn compute(self, mut input: impl Read) -> io::Result<ChecksumAnswer> {
        let mut state = Checksum::new(self);
        let mut buf = vec![0; CHUNK];
        loop {
            match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => state.update(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(state.finish())
    }
}

/// A running checksum over bytes fed in file order.
pub enum Checksum {
    /// Adler-32 so far.
    Adler32(adler2::Adler32),
    /// CRC-32C so far.
    Crc32c(u32),
    /// MD5 so far.
    Md5(md5::Md5),
}

impl Checksum {
    /// A checksum of nothing yet, by `alg`.
    pub fn new(alg: Algorithm) -> Checksum {
        match alg {
            Algorithm::Adler32 => Checksum::Adler32(adler2::Adler32::new()),
            Algorithm::Crc32c => Checksum::Crc32c(0),
            Algorithm::Md5 => Checksum::Md5(md5::Md5::new()),
        }
    }

    /// Adds the next `data`.
    pub fn update(&mut self, data: &[u8]) {
        match self {
            Checksum::Adler32(a) => a.write_slice(data),
            Checksum::Crc32c(c) => *c = crc32c_append(*c, data),
            Checksum::Md5(m) => m.update(data),
        }
    }

    /// The algorithm name and the value as the server answers them
    /// (`adler32`, lowercase hex).
    pub fn finish(self) -> ChecksumAnswer {
        let (alg, value) = match self {
            Checksum::Adler32(a) => (Algorithm::Adler32, a.checksum().to_be_bytes().to_vec()),
            Checksum::Crc32c(c) => (Algorithm::Crc32c, c.to_be_bytes().to_vec()),
            Checksum::Md5(m) => (Algorithm::Md5, m.finalize().to_vec()),
        };
        ChecksumAnswer::from_value(alg.name(), &value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(alg: Algorithm, data: &[u8]) -> String {
        let answer = alg.compute(data).unwrap();
        assert_eq!(&answer.alg[..], alg.name().as_bytes());
        String::from_utf8(answer.value.to_vec()).unwrap()
    }

    #[test]
    fn known_values() {
        assert_eq!(hex(Algorithm::Adler32, b"123456789"), "091e01de");
        assert_eq!(hex(Algorithm::Crc32c, b"123456789"), "e3069283");
        assert_eq!(
            hex(Algorithm::Md5, b"123456789"),
            "25f9e794323b453885f5181f1b624d0b"
        );
        // empty input: adler32 starts at 1, crc32c at 0
        assert_eq!(hex(Algorithm::Adler32, b""), "00000001");
        assert_eq!(hex(Algorithm::Crc32c, b""), "00000000");
        assert_eq!(hex(Algorithm::Md5, b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(Algorithm::Crc32c, &[0; 4096]), "98f94189");
    }

    #[test]
    fn chunking_does_not_change_the_value() {
        let data: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i * 31 % 251) as u8).collect();
        for alg in [Algorithm::Adler32, Algorithm::Crc32c, Algorithm::Md5] {
            // a reader that hands out 7 bytes at a time
            struct Dribble<'a>(&'a [u8]);
            impl Read for Dribble<'_> {
                fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                    let n = buf.len().min(7).min(self.0.len());
                    buf[..n].copy_from_slice(&self.0[..n]);
                    self.0 = &self.0[n..];
                    Ok(n)
                }
            }
            let whole = hex(alg, &data);
            let dribbled = alg.compute(Dribble(&data[..])).unwrap();
            assert_eq!(dribbled.value, whole.as_bytes(), "{alg:?}");
        }
    }

    #[test]
    fn names() {
        assert_eq!(Algorithm::named("ADLER32"), Some(Algorithm::Adler32));
        assert_eq!(Algorithm::named("crc32c"), Some(Algorithm::Crc32c));
        assert_eq!(Algorithm::named("Md5"), Some(Algorithm::Md5));
        assert_eq!(Algorithm::named("crc32"), None);
        assert_eq!(Algorithm::named(""), None);
        for name in ALGORITHMS {
            assert_eq!(Algorithm::named(name).unwrap().name(), name);
        }
    }
}
