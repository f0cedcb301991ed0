#![allow(clippy::unwrap_used)]
//! A table check in bounded memory (`spec/check.md` §1.1, §6): a triple table of 100 k and of
//! 1 M rows (a quarter as many triples, four index rows each) on a RedbStore file, checked by
//! `graph check` in a child process of its own, which reports rows scanned per second and its
//! peak resident memory (`VmHWM`). A second child only pages through the same table (1 000-row
//! `ReadRows`, nothing kept): redb's page cache grows with what a process reads (up to redb's
//! cache size), in both; what the check holds beyond that is the difference between the two.
//!
//! ```sh
//! cargo bench -p rowkit-benches --bench check                       # 100 k and 1 M rows
//! ROWKIT_CHECK_ROWS=1000000 cargo bench -p rowkit-benches --bench check
//! ```

use std::time::Instant;

use rowkit_client::triples::TripleStore;
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::Timestamp;
use rowkit_codec::triples::Triple;
use rowkit_store::RedbStore;
use rowkit_store::driver::ManualClock;
use rowkit_statemachines::check::{CheckEvent, CheckOptions};

/// Set in a child: the redb file to read.
const CHILD: &str = "ROWKIT_CHECK_CHILD";
/// Set in a child: `check`, or `scan` (page through the table only).
const MODE: &str = "ROWKIT_CHECK_MODE";

/// The process's resident-memory high-water mark and current size, KiB.
fn memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Pages through the whole table, 1 000 rows a request, keeping nothing.
fn scan(store: &RedbStore) -> u64 {
    use rowkit_codec::model::{KeyBound, RowRange, RowSet};
    let mut after: Option<Vec<u8>> = None;
    let mut rows = 0;
    loop {
        let range = RowRange {
            start: after.map_or(KeyBound::Unbounded, KeyBound::Open),
            end: KeyBound::Unbounded,
        };
        let request = rowkit_statemachines::ReadRowsRequest {
            table: "badwolf".into(),
            rows: RowSet::range(range),
            rows_limit: 1000,
            ..Default::default()
        };
        let page = rowkit_client::read_rows_blocking(store, request, Timestamp(0)).unwrap();
        rows += page.len() as u64;
        match page.last() {
            Some(last) if page.len() == 1000 => after = Some(last.key.clone()),
            _ => return rows,
        }
    }
}

fn child(path: &str) {
    let store = RedbStore::open_read_only(path).unwrap();
    if std::env::var(MODE).as_deref() == Ok("scan") {
        let start = Instant::now();
        let rows = scan(&store);
        let secs = start.elapsed().as_secs_f64();
        let (peak, _) = memory_kib();
        println!(
            "scan  rows={rows} secs={secs:.1} rows_per_s={:.0} peak_rss_kib={peak}",
            rows as f64 / secs
        );
        return;
    }
    let clock = ManualClock::new(Timestamp::from_secs(1_700_000_000));
    let ts = TripleStore::new(SyncDriver::new(&store, &clock));
    let (_, before) = memory_kib();
    let start = Instant::now();
    let mut findings = 0;
    let summary = block_on(
        ts.check(None, CheckOptions::default(), 36_000_000_000, |e| {
            findings += u64::from(matches!(e, CheckEvent::Finding(_)));
        }),
    )
    .unwrap();
    let secs = start.elapsed().as_secs_f64();
    let (peak, _) = memory_kib();
    println!(
        "check rows={} findings={findings} secs={secs:.1} rows_per_s={:.0} rss_before_kib={before} peak_rss_kib={peak}",
        summary.rows_scanned,
        summary.rows_scanned as f64 / secs
    );
}

fn main() {
    if let Ok(path) = std::env::var(CHILD) {
        return child(&path);
    }
    let sizes = std::env::var("ROWKIT_CHECK_ROWS").unwrap_or_else(|_| "100000,1000000".into());
    for rows in sizes
        .split(',')
        .filter_map(|s| s.trim().parse::<usize>().ok())
    {
        let dir = std::env::temp_dir().join(format!("rowkit-check-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{rows}.redb"));
        {
            let store = RedbStore::open(&path).unwrap().with_durable_commits(false);
            let clock = ManualClock::new(Timestamp::from_secs(1_700_000_000));
            let ts = TripleStore::new(SyncDriver::new(&store, &clock));
            block_on(ts.setup()).unwrap();
            let g = block_on(ts.new_graph(b"bench")).unwrap();
            let start = Instant::now();
            let triples: Vec<usize> = (0..rows / 4).collect();
            for batch in triples.chunks(10_000) {
                let parsed = batch
                    .iter()
                    .map(|&i| {
                        Triple::parse(rowkit_benches::triple_text(i as u64).as_bytes()).unwrap()
                    })
                    .collect();
                block_on(g.add_triples(parsed)).unwrap();
            }
            eprintln!(
                "check: {} triples written in {:.1} s",
                rows / 4,
                start.elapsed().as_secs_f64()
            );
        }
        for mode in ["scan", "check"] {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .env(CHILD, &path)
                .env(MODE, mode)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{err}");
            print!("{}", String::from_utf8_lossy(&out.stdout));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
