//! The calls a DataFusion query makes to its object store, with when each
//! began and ended (ms since the query began): which calls wait for
//! which, the round trips a query's clock figure is made of. An
//! [`ObjectStore`] that times the calls of the store it wraps.

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// Calls: when each began and ended (ms), and what it was.
type Calls = Vec<(f64, f64, String)>;

/// The calls recorded: what, when it began and ended (ms since
/// [`Timeline::restart`]).
#[derive(Debug)]
pub struct Timeline {
    inner: Mutex<(Instant, Calls)>,
}

impl Default for Timeline {
    fn default() -> Timeline {
        Timeline {
            inner: Mutex::new((Instant::now(), Vec::new())),
        }
    }
}

impl Timeline {
    /// Forgets what was recorded; times count from `t`.
    pub fn restart(&self, t: Instant) {
        *self.inner.lock().unwrap() = (t, Vec::new());
    }

    fn ms(&self, t: Instant) -> f64 {
        let start = self.inner.lock().unwrap().0;
        t.saturating_duration_since(start).as_secs_f64() * 1e3
    }

    fn record(&self, began: Instant, what: String) {
        let (b, e) = (self.ms(began), self.ms(Instant::now()));
        self.inner.lock().unwrap().1.push((b, e, what));
    }

    /// One line per call, by when it began: `  began–ended ms (took) what`,
    /// and each call's times in round trips of `rtt_ms` too.
    pub fn text(&self, rtt_ms: f64) -> String {
        let mut calls = self.inner.lock().unwrap().1.clone();
        calls.sort_by(|a, b| a.0.total_cmp(&b.0));
        calls
            .iter()
            .map(|(b, e, what)| {
                format!(
                    "  {b:7.1}–{e:7.1} ms ({:5.1} ms; {:4.2}–{:4.2} RTT) {what}\n",
                    e - b,
                    b / rtt_ms,
                    e / rtt_ms
                )
            })
            .collect()
    }
}

/// `S`, its calls recorded in a [`Timeline`].
#[derive(Debug)]
pub struct Timed<S> {
    store: Arc<S>,
    timeline: Arc<Timeline>,
}

impl<S> Timed<S> {
    pub fn new(store: Arc<S>, timeline: Arc<Timeline>) -> Timed<S> {
        Timed { store, timeline }
    }
}

impl<S: fmt::Display> fmt::Display for Timed<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timed({})", self.store)
    }
}

fn name(location: &Path) -> &str {
    location.as_ref().rsplit('/').next().unwrap_or("")
}

#[async_trait]
impl<S: ObjectStore> ObjectStore for Timed<S> {
    async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
        self.store.put_opts(l, p, o).await
    }

    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.store.put_multipart_opts(l, o).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let t = Instant::now();
        let what = format!(
            "get_opts {} {:?}{}",
            name(location),
            options.range,
            if options.head { " head" } else { "" }
        );
        let got = self.store.get_opts(location, options).await;
        self.timeline.record(t, what);
        got
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let t = Instant::now();
        let got = self.store.get_ranges(location, ranges).await;
        let bytes: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let what = match ranges {
            [one] => format!("get_ranges {} {one:?}", name(location)),
            _ => format!(
                "get_ranges {} {} ranges, {bytes} bytes",
                name(location),
                ranges.len()
            ),
        };
        self.timeline.record(t, what);
        got
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.store.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let t = Instant::now();
        let what = format!("list {prefix:?}");
        let timeline = self.timeline.clone();
        let mut done = Some((timeline, what));
        self.store
            .list(prefix)
            .chain(futures::stream::poll_fn(move |_| {
                if let Some((timeline, what)) = done.take() {
                    timeline.record(t, what);
                }
                std::task::Poll::Ready(None)
            }))
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let t = Instant::now();
        let got = self.store.list_with_delimiter(prefix).await;
        self.timeline
            .record(t, format!("list_with_delimiter {prefix:?}"));
        got
    }

    async fn copy_opts(&self, from: &Path, to: &Path, o: CopyOptions) -> Result<()> {
        self.store.copy_opts(from, to, o).await
    }
}
