//! The NanoAOD trace (`benches/trace/nanoaod.trace`; how it was made and
//! what is in it: `benches/trace/README.md`) as data: the file size it was
//! recorded on and its vector reads. For `benches/cache_trace.rs`,
//! xroot-object-store's `object_store_trace` bench and `examples/demo/`.

/// The recorded trace, parsed.
pub fn nanoaod() -> Trace {
    Trace::parse(include_str!("../../benches/trace/nanoaod.trace"))
}

/// A file size and the vector reads made of such a file, in order; each
/// read is a list of `(offset, len)` elements in bytes.
#[derive(Debug, Clone)]
pub struct Trace {
    /// Bytes.
    pub size: u64,
    /// The vector reads, in order: `(offset, len)` elements.
    pub reads: Vec<Vec<(u64, usize)>>,
}

impl Trace {
    /// Parses the trace text: `#` comments, `size N`, then one line of
    /// `offset:len` pairs per vector read. Panics on anything else.
    pub fn parse(text: &str) -> Trace {
        let mut lines = text.lines().filter(|l| !l.starts_with('#'));
        let size = lines
            .next()
            .and_then(|l| l.strip_prefix("size "))
            .and_then(|n| n.parse().ok())
            .expect("trace: a `size N` line first");
        let reads: Vec<Vec<(u64, usize)>> = lines
            .map(|line| {
                line.split_whitespace()
                    .map(|pair| {
                        let (o, n) = pair.split_once(':').expect("trace: offset:len");
                        (o.parse().expect("offset"), n.parse().expect("len"))
                    })
                    .collect()
            })
            .collect();
        assert!(
            reads.iter().flatten().all(|&(o, n)| o + n as u64 <= size),
            "trace: a read past the file's end"
        );
        Trace { size, reads }
    }

    /// Bytes asked by all the reads.
    pub fn asked(&self) -> u64 {
        self.reads.iter().flatten().map(|&(_, n)| n as u64).sum()
    }

    /// Elements in all the reads.
    pub fn elements(&self) -> usize {
        self.reads.iter().map(Vec::len).sum()
    }

    /// The same reads mapped onto a file of `size` bytes (not 0): each
    /// offset scaled by `size / self.size` (rounded down), each length kept
    /// but clipped at the new end of file. The identity when the sizes
    /// are equal.
    pub fn scaled(&self, size: u64) -> Trace {
        assert!(size > 0, "trace: scaled to an empty file");
        let reads = self
            .reads
            .iter()
            .map(|read| {
                read.iter()
                    .map(|&(o, n)| {
                        let o = (u128::from(o) * u128::from(size) / u128::from(self.size)) as u64;
                        (o, n.min((size - o) as usize))
                    })
                    .collect()
            })
            .collect();
        Trace { size, reads }
    }

    /// The start of the first 4 kB block no read touches, if any.
    pub fn untouched_block(&self) -> Option<u64> {
        let mut touched: Vec<bool> = vec![false; self.size.div_ceil(4096) as usize];
        for &(o, n) in self.reads.iter().flatten() {
            for b in o / 4096..(o + n as u64).div_ceil(4096) {
                touched[b as usize] = true;
            }
        }
        let free = touched.iter().position(|t| !t)?;
        Some(free as u64 * 4096)
    }
}
