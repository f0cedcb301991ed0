//! The gRPC server's write throughput with background garbage collection running beside it
//! (`rowkit_gateway::gc::BackgroundGc`, as `rowkit serve` starts it) and without, measured in
//! the same run, interleaved.
//!
//! Each round starts, per variant, a fresh store (a fresh redb file with durable commits, as
//! `rowkit serve` opens it, or `memory:`), rowkit's gRPC server over it (`rowkit_grpc`, the
//! code `rowkit serve --grpc` runs) and, for the GC variant, the background GC with a 1 s
//! interval. Table `t` has family `v` with max-versions 1. `--conc` clients (each a
//! `BigtableStore` over one HTTP/2 connection, on its own thread) overwrite one column of their
//! own row as fast as the server answers, each write a new version (increasing timestamps),
//! so without GC every row keeps every version. After 0.5 s warm-up, writes are counted for
//! `--duration` seconds. The order of the variants flips every round. Printed: one line per
//! round and variant (writes/s, cells left in the table, cells the GC removed), then the
//! median writes/s per variant and GC/no-GC.
//!
//! ```sh
//! cargo bench -p rowkit-benches --bench gc                       # 3 rounds, 5 s, 1 and 16 clients
//! cargo bench -p rowkit-benches --bench gc -- --rounds 5 --duration 10 --conc 16 --store memory
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rowkit_bigtable::BigtableStore;
use rowkit_codec::model::{ColumnFamily, Mutation, RowSet, Timestamp};
use rowkit_store::driver::SystemClock;
use rowkit_store::{MemoryStore, RedbStore, Store};
use rowkit_gateway::gc::BackgroundGc;
use rowkit_statemachines::{MutateRowRequest, ReadRowsRequest, Request};

struct Options {
    rounds: usize,
    duration: Duration,
    warmup: Duration,
    conc: Vec<usize>,
    stores: Vec<String>,
}

fn options() -> Options {
    let mut o = Options {
        rounds: 3,
        duration: Duration::from_secs(5),
        warmup: Duration::from_millis(500),
        conc: vec![1, 16],
        stores: vec!["embedded".into(), "memory".into()],
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--rounds" => o.rounds = value.parse().unwrap(),
            "--duration" => o.duration = Duration::from_secs_f64(value.parse().unwrap()),
            "--warmup" => o.warmup = Duration::from_secs_f64(value.parse().unwrap()),
            "--conc" => o.conc = value.split(',').map(|c| c.parse().unwrap()).collect(),
            "--store" => o.stores = value.split(',').map(String::from).collect(),
            // `cargo bench` passes `--bench`; anything else is ignored as well.
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    o
}

/// One measured run.
struct Figure {
    writes_per_sec: f64,
    cells_left: usize,
    gc_deleted: u64,
}

fn open(store: &str, dir: &std::path::Path, run: usize) -> Arc<dyn Store> {
    match store {
        "memory" => Arc::new(MemoryStore::new()),
        _ => Arc::new(RedbStore::open(dir.join(format!("gc-bench-{run}.redb"))).unwrap()),
    }
}

fn run_once(store: Arc<dyn Store>, with_gc: bool, conc: usize, o: &Options) -> Figure {
    store
        .create_table("t", &[ColumnFamily::max_versions("v", 1)])
        .unwrap();
    let gc = with_gc
        .then(|| BackgroundGc::start(store.clone(), Arc::new(SystemClock), Duration::from_secs(1)))
        .transpose()
        .unwrap()
        .flatten();
    let addr = rowkit_grpc::background::serve(store).unwrap();
    let url = format!("bigtable://p/i?emulator={addr}");
    let counting = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..conc)
        .map(|c| {
            let (url, counting, stop, writes) =
                (url.clone(), counting.clone(), stop.clone(), writes.clone());
            std::thread::spawn(move || {
                let client = BigtableStore::open(&url).unwrap();
                let value = vec![7u8; 100];
                let mut n = 0i64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let request = Request::MutateRow(MutateRowRequest {
                        table: "t".into(),
                        row_key: format!("row/{c}").into_bytes(),
                        mutations: vec![Mutation::SetCell {
                            family: "v".into(),
                            qualifier: b"c".to_vec(),
                            timestamp: Timestamp::from_millis(n),
                            value: value.clone(),
                        }],
                        ..Default::default()
                    });
                    client.execute(request, Timestamp::from_secs(1)).unwrap();
                    if counting.load(Ordering::Relaxed) {
                        writes.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(o.warmup);
    counting.store(true, Ordering::Relaxed);
    let started = Instant::now();
    std::thread::sleep(o.duration);
    let counted = writes.load(Ordering::Relaxed);
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    let gc_deleted = gc.map_or(0, BackgroundGc::stop);
    let read = ReadRowsRequest {
        table: "t".into(),
        rows: RowSet::all(),
        ..Default::default()
    };
    let client = BigtableStore::open(&url).unwrap();
    let rows = rowkit_client::read_rows_blocking(&client, read, Timestamp::from_secs(1)).unwrap();
    Figure {
        writes_per_sec: counted as f64 / elapsed.as_secs_f64(),
        cells_left: rows.iter().map(|r| r.cells.len()).sum(),
        gc_deleted,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let o = options();
    let dir = std::env::temp_dir().join(format!("rowkit-gc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut run = 0;
    let mut summary = Vec::new();
    for store in &o.stores {
        for &conc in &o.conc {
            let (mut off, mut on) = (Vec::new(), Vec::new());
            for round in 0..o.rounds {
                let order = if round % 2 == 0 {
                    [false, true]
                } else {
                    [true, false]
                };
                for with_gc in order {
                    run += 1;
                    let f = run_once(open(store, &dir, run), with_gc, conc, &o);
                    println!(
                        "store={store} clients={conc} round={} gc={} writes/s={:.0} cells_left={} gc_deleted={}",
                        round + 1,
                        if with_gc { "on" } else { "off" },
                        f.writes_per_sec,
                        f.cells_left,
                        f.gc_deleted
                    );
                    if with_gc { &mut on } else { &mut off }.push(f.writes_per_sec);
                }
            }
            let (off, on) = (median(off), median(on));
            summary.push(format!(
                "| {store} | {conc} | {off:.0} | {on:.0} | **{:.2}** |",
                on / off
            ));
        }
    }
    println!("| store | clients | no GC writes/s (median) | GC writes/s (median) | GC/no GC |");
    println!("|---|---|---|---|---|");
    for line in summary {
        println!("{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
