//! What the demo prints: wrapped header items, the table of figures and
//! the conclusion drawn from them.

use crate::replay::Figures;

pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// A no-break space: keeps a number and its unit on one line in [`wrap`].
pub const NB: char = '\u{a0}';

/// Prints `text` under the heading `key`, wrapped (see [`wrap`]).
pub fn item(key: &str, text: &str) {
    wrap(&format!("  {key:<8}"), 10, text);
}

/// Prints `head` then `text`, wrapped at 96 columns (between words, at
/// ASCII spaces only), the lines after the first indented by `indent`.
fn wrap(head: &str, indent: usize, text: &str) {
    let mut line = head.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !empty && line.chars().count() + 1 + word.chars().count() > 96 {
            println!("{line}");
            line = " ".repeat(indent);
        } else if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    println!("{line}");
}

/// The figures, one column per run.
pub fn print_table(runs: &[Figures], local: bool) {
    let direct = &runs[0];
    type Cell = fn(&Figures, &Figures) -> Option<String>;
    let rows: [(&str, Cell); 19] = [
        ("wall time, s", |r, _| Some(format!("{:.2}", r.wall))),
        ("speed-up vs direct", |r, d| {
            Some(format!("{:.2}", d.wall / r.wall))
        }),
        ("client: requests in flight, mean", |r, _| {
            Some(format!("{:.2}", r.client.mean))
        }),
        ("client: requests in flight, peak", |r, _| {
            Some(r.client.peak.to_string())
        }),
        ("origin server: requests in flight, mean", |r, _| {
            r.origin.map(|g| format!("{:.2}", g.mean))
        }),
        ("origin server: requests in flight, peak", |r, _| {
            r.origin.map(|g| g.peak.to_string())
        }),
        ("cache: origin requests in flight, mean", |r, _| {
            r.cache.map(|g| format!("{:.2}", g.mean))
        }),
        ("cache: origin requests in flight, peak", |r, _| {
            r.cache.map(|g| g.peak.to_string())
        }),
        ("MB asked by the client", |r, _| {
            Some(format!("{:.1}", mb(r.asked)))
        }),
        ("MB fetched from the origin", |r, _| {
            Some(format!("{:.1}", mb(r.fetched)))
        }),
        ("fetched / asked", |r, _| {
            Some(format!("{:.2}", r.fetched as f64 / r.asked as f64))
        }),
        ("origin requests", |r, _| {
            Some(r.origin_requests.to_string())
        }),
        ("origin requests per vector read", |r, _| {
            Some(format!(
                "{:.2}",
                r.origin_requests as f64 / r.vector_reads as f64
            ))
        }),
        ("origin /metrics: MB of data sent", |r, _| {
            r.scraped_origin.map(|o| format!("{:.1}", mb(o.data_bytes)))
        }),
        ("origin /metrics: read requests", |r, _| {
            r.scraped_origin.map(|o| o.reads.to_string())
        }),
        ("cache /metrics: MB asked", |r, _| {
            r.scraped_cache.map(|c| format!("{:.1}", mb(c.asked)))
        }),
        ("cache /metrics: MB fetched from the origin", |r, _| {
            r.scraped_cache.map(|c| format!("{:.1}", mb(c.fetched)))
        }),
        ("cache /metrics: origin requests", |r, _| {
            r.scraped_cache.map(|c| c.origin_requests.to_string())
        }),
        ("cache /metrics: vector reads answered", |r, _| {
            r.scraped_cache.map(|c| c.served.readv.to_string())
        }),
    ];
    print!("\n{:<42}", "");
    for r in runs {
        print!("{:>12}", r.name);
    }
    println!();
    for (label, cell) in rows {
        let cells: Vec<Option<String>> = runs.iter().map(|r| cell(r, direct)).collect();
        if cells.iter().all(Option::is_none) {
            continue;
        }
        print!("{label:<42}");
        for c in cells {
            print!("{:>12}", c.unwrap_or_else(|| "-".into()));
        }
        println!();
    }
    println!();
    let mut notes = vec!["client: our client's counters (ChannelStats)."];
    notes.extend(match local {
        true => [
            "origin server: its own counters (ServerStats); a request counts while it is \
             served, from its decoding to its last reply queued (the WAN is outside).",
            "MB fetched: what the relay saw the origin asked for (read and pgread lengths, \
             readv and pgreadv elements); origin requests: those reads.",
        ],
        false => [
            "fetched, origin requests: the cache's counters (CacheStats); direct, the client's \
             own.",
            "",
        ],
    });
    notes.push(
        "cache: its counters (CacheStats); an origin request counts until its answer is in \
         (the WAN included).",
    );
    notes.push(
        "/metrics: what the origin server's and the cache's metrics endpoints (those of serve \
         and xcache --metrics) answered over HTTP after the replay, less before it; data bytes \
         without frame headers.",
    );
    for note in notes.into_iter().filter(|n| !n.is_empty()) {
        wrap("", 2, note);
    }
}

/// "3.2x faster than", "1.3x slower than" or (within 5%) "about as fast as".
fn times(direct: f64, run: f64) -> String {
    match run / direct {
        r if (0.95..=1.05).contains(&r) => "about as fast as".into(),
        r if r < 1.0 => format!("{:.1}x faster than", 1.0 / r),
        r => format!("{r:.1}x slower than"),
    }
}

/// Two or three sentences drawn from the figures.
pub fn print_conclusion(runs: &[Figures], readers: usize) {
    let [direct, cold, warm] = runs else {
        return;
    };
    let requests = match warm.origin_requests {
        0 => "no origin request".to_string(),
        n => format!("{n} origin requests"),
    };
    println!(
        "\nWarm, the cache served the {:.1}{NB}MB asked in {:.2} s: {} the direct reads \
         ({:.2} s),\nwith {requests}.",
        mb(warm.asked),
        warm.wall,
        times(direct.wall, warm.wall),
        direct.wall
    );
    let blocks = match cold.fetched > cold.asked {
        true => "it fetches whole 4 kB blocks",
        false => "the reads overlap, blocks are fetched once",
    };
    println!(
        "Cold, it was {} direct, with {:.2} origin requests per client vector read,\n\
         fetching {:.2}x the bytes asked ({blocks}).",
        times(direct.wall, cold.wall),
        cold.origin_requests as f64 / cold.vector_reads as f64,
        cold.fetched as f64 / cold.asked as f64
    );
    if let Some(through) = cold.cache {
        let lead = match through.mean >= 0.75 * direct.client.mean {
            true => "Concurrency survives the cache: cold, it had",
            false => "Cold, the cache had",
        };
        println!(
            "{lead} {:.1} origin requests in flight on average (peak {}),\nthe {readers} \
             readers {:.1} direct (peak {}).",
            through.mean, through.peak, direct.client.mean, direct.client.peak
        );
    }
}
