//! Bytes read ahead of the calls that will ask for them, so that a Parquet
//! query spends one round trip on its column chunks instead of one per row
//! group and file.
//!
//! A Parquet reader (DataFusion's, parquet's `ParquetObjectReader`) asks
//! for a file's footer with one suffix read, then for the column chunks of
//! one row group at a time, one file after the other in each partition.
//! The store keeps what a suffix read brought (the footer, and the page
//! indexes and whatever else the reader's size hint covered); at the first
//! vector read of column chunks it reads the footer (`PAR1` and the
//! length before it, then parquet's own decoder), finds the columns the
//! read asks for, and fetches those columns' chunks in every row group of
//! this file and of every other file whose footer it holds, one vector read
//! per file, all at once. Later calls are answered from what was fetched.
//!
//! Bounds: at most the store's read-ahead budget is held at once (bytes;
//! what does not fit is not read ahead, and those calls read as they come),
//! and nothing is held longer than [`FRESH`] after it was read, nor after
//! the store changes the file. A footer that does not decode, or a read
//! that is not of whole column chunks (page ranges, page indexes), reads
//! only what it asks.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use futures::future::{BoxFuture, Shared};
use parquet::file::metadata::{FooterTail, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::FOOTER_SIZE;

use crate::handles::FRESH;

/// The read-ahead budget of a store unless set: 256 MiB.
pub const DEFAULT_READ_AHEAD: u64 = 256 << 20;

/// A fill under way: done when its vector read is answered (or failed).
pub(crate) type Filling = Shared<BoxFuture<'static, ()>>;

/// What a store holds read ahead, by server path.
#[derive(Debug)]
pub(crate) struct Ahead {
    budget: u64,
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    files: HashMap<String, Held>,
    /// Bytes held and reserved by fills under way, over all files.
    held: u64,
    /// The generation the next file held gets.
    next_generation: u64,
}

#[derive(Default)]
struct Held {
    /// Which holding of the path this is: a footer decoded outside the
    /// table's lock is kept only if its file is still the one it was
    /// taken from.
    generation: u64,
    /// When the first bytes were kept: all go [`FRESH`] after it.
    since: Option<Instant>,
    /// The file's size, from the read that kept its tail.
    size: u64,
    /// Bytes by offset.
    chunks: BTreeMap<u64, Bytes>,
    /// The decoded footer, once decoded (outside the table's lock, by
    /// [`Ahead::plan`]); `None` inside when it does not decode.
    meta: Option<Option<Arc<ParquetMetaData>>>,
    /// Column chunks being fetched, and the fill that fetches them.
    filling: Option<(Vec<Range<u64>>, Filling)>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("size", &self.size)
            .field("chunks", &self.chunks.len())
            .finish()
    }
}

impl Held {
    fn bytes(&self) -> u64 {
        self.chunks.values().map(|b| b.len() as u64).sum()
    }

    /// `range`, if one chunk holds it whole.
    fn get(&self, range: &Range<u64>) -> Option<Bytes> {
        let (&start, chunk) = self.chunks.range(..=range.start).next_back()?;
        let end = start + chunk.len() as u64;
        (range.end <= end)
            .then(|| chunk.slice((range.start - start) as usize..(range.end - start) as usize))
    }
}

/// A fill to start: a file and the column chunks to fetch of it.
#[derive(Debug)]
pub(crate) struct Fill {
    /// The file's server path.
    pub(crate) path: String,
    /// Its column chunks to fetch, in file order.
    pub(crate) ranges: Vec<Range<u64>>,
}

impl Ahead {
    /// Holds at most `budget` bytes at once (0: nothing is read ahead).
    pub(crate) fn new(budget: u64) -> Ahead {
        Ahead {
            budget,
            table: Mutex::default(),
        }
    }

    /// Each of `ranges` of `path` from what is held, or `None` unless all
    /// are. A column chunk served whole is let go (a reader asks for each
    /// once); the file's tail is kept.
    pub(crate) fn get_all(&self, path: &str, ranges: &[Range<u64>]) -> Option<Vec<Bytes>> {
        let mut table = self.table.lock().unwrap();
        table.prune();
        let held = table.files.get_mut(path)?;
        let got: Vec<Bytes> = ranges.iter().map(|r| held.get(r)).collect::<Option<_>>()?;
        let mut freed = 0;
        for r in ranges {
            let whole = held
                .chunks
                .get(&r.start)
                .is_some_and(|c| c.len() as u64 == r.end - r.start && r.end < held.size);
            if whole {
                freed += held.chunks.remove(&r.start).map_or(0, |c| c.len() as u64);
            }
        }
        table.held -= freed;
        Some(got)
    }

    /// Keeps `data`, read at `offset` of `path` (a file of `size` bytes),
    /// if it is the file's tail and fits in the budget.
    pub(crate) fn keep_tail(&self, path: &str, size: u64, offset: u64, data: Bytes) {
        let len = data.len() as u64;
        if offset + len != size || len == 0 {
            return;
        }
        let mut table = self.table.lock().unwrap();
        table.prune();
        if table.held + len > self.budget {
            return;
        }
        let generation = table.next_generation;
        let held = table.files.entry(path.to_string()).or_default();
        if held.size != size {
            // another file than the one held (or the first tail)
            let old = held.bytes();
            *held = Held {
                generation,
                ..Held::default()
            };
            table.held -= old;
            table.next_generation += 1;
        }
        let held = table.files.get_mut(path).expect("inserted above");
        held.since.get_or_insert_with(Instant::now);
        held.size = size;
        let old = held
            .chunks
            .insert(offset, data)
            .map_or(0, |c| c.len() as u64);
        table.held = table.held + len - old;
    }

    /// The fill under way for `path`, if any: await it before reading.
    pub(crate) fn filling(&self, path: &str) -> Option<Filling> {
        let table = self.table.lock().unwrap();
        let (_, fill) = table.files.get(path)?.filling.as_ref()?;
        Some(fill.clone())
    }

    /// The fills that serve a vector read of `ranges` of `path`: when
    /// they are whole column chunks of its held footer, the same columns'
    /// chunks in every row group of it and of every other file whose
    /// footer is held, less what is held or being fetched, within the
    /// budget (reserved now; give it back with [`Ahead::filled`]), this
    /// file's first. Empty when nothing can be read ahead. Each fill must
    /// be registered with [`Ahead::started`].
    pub(crate) fn plan(&self, path: &str, ranges: &[Range<u64>]) -> Vec<Fill> {
        self.decode_footers();
        let mut table = self.table.lock().unwrap();
        table.prune();
        let Some(meta) = table.files.get(path).and_then(Held::meta) else {
            return Vec::new();
        };
        let Some(columns) = columns_of(&meta, ranges) else {
            return Vec::new();
        };
        let mut paths: Vec<String> = table.files.keys().cloned().collect();
        paths.sort();
        paths.retain(|p| p != path);
        paths.insert(0, path.to_string());
        let mut fills = Vec::new();
        for p in paths {
            let held = table.files.get(&p).expect("listed above");
            if held.filling.is_some() {
                continue;
            }
            let Some(meta) = held.meta() else { continue };
            let wanted: Vec<Range<u64>> = chunks_of(&meta, &columns, held.size)
                .into_iter()
                .filter(|r| held.get(r).is_none())
                .collect();
            let bytes: u64 = wanted.iter().map(|r| r.end - r.start).sum();
            if wanted.is_empty() || table.held + bytes > self.budget {
                continue;
            }
            table.held += bytes;
            fills.push(Fill {
                path: p,
                ranges: wanted,
            });
        }
        fills
    }

    /// Decodes the footers of the files held whose footer is not decoded
    /// yet: their bytes are taken under the table's lock (reference
    /// counted, not copied), decoded without it (parquet's Thrift decoder
    /// takes milliseconds for a footer of many row groups, during which
    /// other calls would wait for the lock), and kept under it again if
    /// their file is still the one held. Two calls at once may decode the
    /// same footer twice; the first kept is kept.
    fn decode_footers(&self) {
        let pending = self.footers_to_decode();
        if pending.is_empty() {
            return;
        }
        let decoded = pending
            .into_iter()
            .map(|(p, generation, bytes)| (p, generation, bytes.and_then(|b| decode_footer(&b))))
            .collect();
        self.keep_footers(decoded);
    }

    /// Under the lock: each held file whose footer is not decoded, its
    /// generation and its footer's metadata bytes (`None`: the tail does
    /// not hold them).
    fn footers_to_decode(&self) -> Vec<(String, u64, Option<Bytes>)> {
        let mut table = self.table.lock().unwrap();
        table.prune();
        table
            .files
            .iter()
            .filter(|(_, h)| h.meta.is_none())
            .map(|(p, h)| (p.clone(), h.generation, h.footer_bytes()))
            .collect()
    }

    /// Under the lock: keeps each decoded footer (`None`: it does not
    /// decode) if its file is still held in the generation it was taken
    /// from and no other call kept one meanwhile.
    fn keep_footers(&self, decoded: Vec<(String, u64, Option<Arc<ParquetMetaData>>)>) {
        let mut table = self.table.lock().unwrap();
        for (p, generation, meta) in decoded {
            if let Some(held) = table.files.get_mut(&p) {
                if held.generation == generation && held.meta.is_none() {
                    held.meta = Some(meta);
                }
            }
        }
    }

    /// Registers the fill that fetches `fill`; when the store forgot its
    /// file since [`Ahead::plan`], gives its reservation back (no
    /// [`Ahead::filled`] would).
    pub(crate) fn started(&self, fill: &Fill, filling: Filling) {
        let mut table = self.table.lock().unwrap();
        match table.files.get_mut(&fill.path) {
            Some(held) => held.filling = Some((fill.ranges.clone(), filling)),
            None => table.held -= fill.ranges.iter().map(|r| r.end - r.start).sum::<u64>(),
        }
    }

    /// The fill of `path` ended: keeps what it fetched (`data`, one per
    /// range, in order), or gives its reservation back when it failed.
    pub(crate) fn filled(&self, path: &str, data: Option<Vec<Bytes>>) {
        let mut table = self.table.lock().unwrap();
        let Some(held) = table.files.get_mut(path) else {
            return;
        };
        let Some((ranges, _)) = held.filling.take() else {
            return;
        };
        let reserved: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let mut kept = 0;
        if let Some(data) = data.filter(|d| d.len() == ranges.len()) {
            for (r, d) in ranges.iter().zip(data) {
                let len = d.len() as u64;
                if len == r.end - r.start {
                    let old = held.chunks.insert(r.start, d).map_or(0, |c| c.len() as u64);
                    kept = kept + len - old;
                }
            }
        }
        table.held = table.held + kept - reserved;
    }

    /// The store changed `path`: nothing held of it serves another call.
    pub(crate) fn forget(&self, path: &str) {
        let mut table = self.table.lock().unwrap();
        if let Some(held) = table.files.remove(path) {
            let reserved: u64 = held
                .filling
                .iter()
                .flat_map(|(r, _)| r)
                .map(|r| r.end - r.start)
                .sum();
            table.held -= held.bytes() + reserved;
        }
    }

    /// Bytes held and reserved now.
    #[cfg(test)]
    fn held(&self) -> u64 {
        self.table.lock().unwrap().held
    }
}

impl Table {
    /// Lets go of the files held [`FRESH`] or longer (not while a fill of
    /// theirs is under way).
    fn prune(&mut self) {
        let now = Instant::now();
        let mut freed = 0;
        self.files.retain(|_, h| {
            let fresh = h.since.is_none_or(|t| now.duration_since(t) < FRESH);
            if !fresh && h.filling.is_none() {
                freed += h.bytes();
                return false;
            }
            true
        });
        self.held -= freed;
    }
}

impl Held {
    /// The footer, once decoded ([`Ahead::decode_footers`]); `None` when
    /// it is not decoded yet, the tail does not hold it or it does not
    /// decode.
    fn meta(&self) -> Option<Arc<ParquetMetaData>> {
        self.meta.clone().flatten()
    }

    /// The footer's metadata bytes (Thrift), found from the tail: the last
    /// [`FOOTER_SIZE`] bytes are the metadata's length and `PAR1`
    /// (parquet's [`FooterTail`]; an encrypted footer is not read), the
    /// metadata precedes them. `None` when the held tail does not hold
    /// them all. A slice of what is held: no bytes are copied.
    fn footer_bytes(&self) -> Option<Bytes> {
        let (size, footer) = (self.size, FOOTER_SIZE as u64);
        let tail = self.get(&(size.checked_sub(footer)?..size))?;
        let tail = FooterTail::try_new(tail.as_ref().try_into().ok()?).ok()?;
        if tail.is_encrypted_footer() {
            return None;
        }
        let start = size.checked_sub(footer + tail.metadata_length() as u64)?;
        self.get(&(start..size - footer))
    }
}

/// The footer decoded from its metadata bytes ([`Held::footer_bytes`]),
/// or `None` when they do not decode.
fn decode_footer(metadata: &Bytes) -> Option<Arc<ParquetMetaData>> {
    match ParquetMetaDataReader::decode_metadata(metadata) {
        Ok(meta) => Some(Arc::new(meta)),
        Err(e) => {
            tracing::debug!("a Parquet footer that does not decode: {e}");
            None
        }
    }
}

/// The byte range of column `c` of row group `rg` (from its dictionary
/// page, if any, else its first data page, for its compressed size), or
/// `None` when its fields are negative or past `size`.
fn chunk_range(meta: &ParquetMetaData, rg: usize, c: usize, size: u64) -> Option<Range<u64>> {
    let col = meta.row_group(rg).column(c);
    let start = col
        .dictionary_page_offset()
        .unwrap_or(col.data_page_offset());
    let start = u64::try_from(start).ok()?;
    let len = u64::try_from(col.compressed_size()).ok()?;
    let end = start.checked_add(len)?;
    (end <= size && len > 0).then_some(start..end)
}

/// The columns (by path: `a.b` for a nested one) whose chunks `ranges`
/// are, each range a whole chunk; `None` if any is not.
fn columns_of(meta: &ParquetMetaData, ranges: &[Range<u64>]) -> Option<BTreeSet<String>> {
    let mut chunks = HashMap::new();
    for rg in 0..meta.num_row_groups() {
        for c in 0..meta.row_group(rg).num_columns() {
            if let Some(r) = chunk_range(meta, rg, c, u64::MAX) {
                let name = meta.row_group(rg).column(c).column_path().string();
                chunks.insert((r.start, r.end), name);
            }
        }
    }
    ranges
        .iter()
        .filter(|r| r.start < r.end)
        .map(|r| chunks.get(&(r.start, r.end)).cloned())
        .collect()
}

/// The chunks of `columns` (by path) in every row group, in file order.
fn chunks_of(meta: &ParquetMetaData, columns: &BTreeSet<String>, size: u64) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    for rg in 0..meta.num_row_groups() {
        let group = meta.row_group(rg);
        for c in 0..group.num_columns() {
            if columns.contains(&group.column(c).column_path().string()) {
                out.extend(chunk_range(meta, rg, c, size));
            }
        }
    }
    out.sort_by_key(|r| r.start);
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::file::properties::WriterProperties;
    use futures::FutureExt;

    use super::*;

    /// A Parquet file of two int64 columns `a` and `b`, in row groups of
    /// 100 rows (`groups` of them); its bytes.
    fn file(groups: usize) -> Bytes {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Int64, false),
        ]));
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .build();
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, schema.clone(), Some(props)).unwrap();
        for g in 0..groups as i64 {
            let col = |k: i64| Arc::new(Int64Array::from_iter_values((0..100).map(|i| i * k + g)));
            let batch = RecordBatch::try_new(schema.clone(), vec![col(3), col(7)]).unwrap();
            w.write(&batch).unwrap();
        }
        w.close().unwrap();
        Bytes::from(out)
    }

    /// The chunk of column `c` in row group `rg` of `bytes`.
    fn chunk(bytes: &Bytes, rg: usize, c: usize) -> Range<u64> {
        let meta = ParquetMetaDataReader::new()
            .parse_and_finish(bytes)
            .unwrap();
        chunk_range(&meta, rg, c, bytes.len() as u64).unwrap()
    }

    fn done() -> Filling {
        async {}.boxed().shared()
    }

    #[test]
    fn the_columns_asked_are_read_ahead_in_every_row_group_and_file() {
        let (one, two) = (file(3), file(2));
        let ahead = Ahead::new(1 << 20);
        for (path, f, groups) in [("/d/1", &one, 3), ("/d/2", &two, 2)] {
            let size = f.len() as u64;
            let tail = chunk(f, groups - 1, 1).end;
            ahead.keep_tail(path, size, tail, f.slice(tail as usize..));
        }
        // column b of the first row group: b in every row group of both
        let fills = ahead.plan("/d/1", &[chunk(&one, 0, 1)]);
        assert_eq!(fills.len(), 2, "{fills:?}");
        assert_eq!(fills[0].path, "/d/1", "the file asked first");
        let want1: Vec<_> = (0..3).map(|rg| chunk(&one, rg, 1)).collect();
        let want2: Vec<_> = (0..2).map(|rg| chunk(&two, rg, 1)).collect();
        assert_eq!(fills[0].ranges, want1);
        assert_eq!(fills[1].ranges, want2);
        let reserved = ahead.held();
        // a fill under way is not planned twice
        for f in &fills {
            ahead.started(f, done());
        }
        assert!(ahead.plan("/d/2", &[chunk(&two, 0, 1)]).is_empty());
        assert!(ahead.filling("/d/1").is_some());
        let data = |f: &Bytes, rs: &[Range<u64>]| {
            rs.iter()
                .map(|r| f.slice(r.start as usize..r.end as usize))
                .collect::<Vec<_>>()
        };
        ahead.filled("/d/1", Some(data(&one, &want1)));
        ahead.filled("/d/2", None); // failed: its reservation goes back
        assert!(ahead.held() < reserved);
        assert!(ahead.filling("/d/1").is_none());
        // served from memory, each chunk once
        let got = ahead.get_all("/d/1", &want1[1..]).unwrap();
        assert_eq!(got, data(&one, &want1[1..]));
        assert!(ahead.get_all("/d/1", &want1[1..2]).is_none());
        assert!(ahead.get_all("/d/2", &want2).is_none());
        // a change lets go of everything held of the file
        ahead.forget("/d/1");
        assert!(ahead.get_all("/d/1", &want1[..1]).is_none());
    }

    #[test]
    fn a_fill_of_a_file_forgotten_before_it_started_gives_its_budget_back() {
        let f = file(2);
        let size = f.len() as u64;
        let tail = chunk(&f, 1, 1).end;
        let ahead = Ahead::new(1 << 20);
        ahead.keep_tail("/f", size, tail, f.slice(tail as usize..));
        let fills = ahead.plan("/f", &[chunk(&f, 0, 0)]);
        assert_eq!(fills.len(), 1, "{fills:?}");
        ahead.forget("/f");
        ahead.started(&fills[0], done());
        assert_eq!(ahead.held(), 0);
    }

    #[test]
    fn a_footer_decoded_while_its_file_was_replaced_is_not_kept() {
        let (old, new) = (file(2), file(3));
        let ahead = Ahead::new(1 << 20);
        let keep = |f: &Bytes, groups: usize| {
            let tail = chunk(f, groups - 1, 1).end;
            ahead.keep_tail("/f", f.len() as u64, tail, f.slice(tail as usize..));
        };
        keep(&old, 2);
        // the old file's footer is taken to be decoded outside the lock...
        let pending = ahead.footers_to_decode();
        assert_eq!(pending.len(), 1);
        assert!(pending[0].2.is_some(), "the tail holds the footer");
        // ...the file is replaced meanwhile (another size: a new holding)...
        keep(&new, 3);
        let decoded = pending
            .into_iter()
            .map(|(p, g, b)| (p, g, b.and_then(|b| decode_footer(&b))))
            .collect();
        ahead.keep_footers(decoded);
        // ...so the old footer is not the new file's: the new one's is
        // decoded at the next plan, and its three row groups are read ahead
        let fills = ahead.plan("/f", &[chunk(&new, 0, 1)]);
        assert_eq!(fills.len(), 1, "{fills:?}");
        let want: Vec<_> = (0..3).map(|rg| chunk(&new, rg, 1)).collect();
        assert_eq!(fills[0].ranges, want);
    }

    #[test]
    fn reading_ahead_stays_within_the_budget_and_the_footer() {
        let f = file(4);
        let size = f.len() as u64;
        let tail = chunk(&f, 3, 1).end;
        // a budget of the tail alone: nothing more is read ahead
        let small = Ahead::new(size - tail);
        small.keep_tail("/f", size, tail, f.slice(tail as usize..));
        assert!(small.plan("/f", &[chunk(&f, 0, 0)]).is_empty());
        // a range that is not a whole column chunk: nothing read ahead
        let ahead = Ahead::new(1 << 20);
        ahead.keep_tail("/f", size, tail, f.slice(tail as usize..));
        let r = chunk(&f, 0, 0);
        let part = Range {
            start: r.start,
            end: r.end - 1,
        };
        assert!(ahead.plan("/f", &[part]).is_empty());
        // a tail without a footer (no PAR1): nothing
        let bad = Ahead::new(1 << 20);
        bad.keep_tail("/g", 100, 0, Bytes::from(vec![0u8; 100]));
        assert!(bad.plan("/g", &[chunk(&f, 0, 0)]).is_empty());
        // a read that is not a tail is not kept
        let none = Ahead::new(1 << 20);
        none.keep_tail("/h", size, 0, f.slice(..10));
        assert_eq!(none.held(), 0);
    }
}
