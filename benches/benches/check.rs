#![allow(clippy::unwrap_used)]
//! A table check in bounded memory (`spec/check.md` §1.1, §6): a triple table of 100 k and of
//! 1 M rows (a quarter as many triples, four index rows each) on a RedbStore file, checked by
//! `graph check` in a child process of its own, which reports rows scanned per second and its
//! peak resident memory (`VmHWM`) next to its resident memory before the check: memory that
//! stays flat from 100 k to 1 M rows is the bound.
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
use rowkit_embedded::RedbStore;
use rowkit_embedded::driver::ManualClock;
use rowkit_statemachines::check::{CheckEvent, CheckOptions};

/// Set in the child: the redb file to check.
const CHILD: &str = "ROWKIT_CHECK_CHILD";

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

fn child(path: &str) {
    let store = RedbStore::open_read_only(path).unwrap();
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
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .env(CHILD, &path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        print!("{}", String::from_utf8_lossy(&out.stdout));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
