#![allow(clippy::unwrap_used)]
//! Scale: how each schema's operations behave as its table grows from 1 k to 1 M rows
//! (mount table nodes, trace values, objects, triples) on a RedbStore file with non-durable
//! commits (`ROWKIT_SCALE_DURABLE=1`: durable ones, each commit fsynced). At each size, criterion measures every operation's mean; the bench also records
//! each operation's own latency to print p50 / p99, and the process's resident memory and the
//! file size. One line per (schema, operation, size) starts with `scale ` (see
//! benches/HISTORY.md, "Scale").
//!
//! `ROWKIT_SCALE_SIZES=1000,10000,100000,1000000` (the default) sets the sizes;
//! `ROWKIT_SCALE_SCHEMAS=mt,gold,s3,graph` (the default) the schemas;
//! `ROWKIT_SCALE_STORE=emulator` runs the same operations, through the same facades over the sync driver, on
//! the Bigtable emulator (`rowkit_bigtable::BigtableStore`, gRPC over loopback) instead of
//! RedbStore; the memory line then also gives the emulator process's resident memory. Tables grow in place from
//! one size to the next through each schema's own write path (AddTriples, Put, PutObject);
//! the mount table is grown by copying a directory of 1 000 mounted leaves made through the
//! facade (the copy is checked by fsck at the first size), because 1 M mounts through the
//! facade take longer than this bench should. Before measuring the mount table, one resolve
//! walks through each directory, as a running server's walks would have (its `scale warm` line
//! gives their time): the figures are the steady state, not the cache's first fill.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rowkit_client::mounttable::{MountTable, MtConfig, server_caller};
use rowkit_client::objmeta::ObjectMetadata;
use rowkit_client::tracestore::{TraceStore, setup_table};
use rowkit_client::triples::TripleStore;
use rowkit_client::{CallOptions, SyncDriver, block_on};
use rowkit_codec::model::{Mutation, ReadModifyWriteRule, RowSet, RuleOp, Timestamp};
use rowkit_codec::mounttable as mtc;
use rowkit_codec::mounttable::MountFlags;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::listing::{ListingParams, ListingType};
use rowkit_codec::tracestore::ops::params_from;
use rowkit_codec::tracestore::{Layout, ops_hash};
use rowkit_codec::triples::Triple;
use rowkit_statemachines::mounttable::Tables;
use rowkit_statemachines::tracestore::PutEntry;
use rowkit_statemachines::triples::{LookupMethod, LookupOptions};
use rowkit_statemachines::{
    MutateRowsEntry, MutateRowsRequest, ReadModifyWriteRowRequest, ReadRowsRequest,
};
use rowkit_store::driver::{Clock, ManualClock, SystemClock};
use rowkit_store::{MemoryStore, RedbStore, Reply, Request, Response, Store};
use rowkit_testkit::emulator::Emulator;
use rowkit_testkit::scenarios::objmeta::scenario_state;

const T0: i64 = 1_700_000_000_000_000;

fn sizes() -> Vec<u64> {
    std::env::var("ROWKIT_SCALE_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000, 1_000_000])
}

fn wanted(schema: &str) -> bool {
    std::env::var("ROWKIT_SCALE_SCHEMAS")
        .map(|s| s.split(',').any(|x| x.trim() == schema))
        .unwrap_or(true)
}

/// Where a schema's table lives for the run: a RedbStore file, an emulator instance, or a
/// MemoryStore.
struct Backend {
    /// The emulator or memory store, when the table is not on RedbStore.
    other: Option<Box<dyn Store>>,
    /// The RedbStore, whose commits turn durable while an operation is measured.
    redb: Option<RedbStore>,
    /// The redb file (its size is reported).
    path: Option<PathBuf>,
}

impl Backend {
    fn store(&self) -> &dyn Store {
        match (&self.redb, &self.other) {
            (Some(redb), _) => redb,
            (None, Some(other)) => other.as_ref(),
            (None, None) => unreachable!("a backend has a store"),
        }
    }

    /// Makes RedbStore commits durable (or not) from here on; before the first durable one,
    /// writes out what the growth's non-durable commits left (else the first measured write
    /// would pay for all of them).
    fn durable_commits(&self, durable: bool) {
        if let Some(redb) = &self.redb {
            if durable {
                redb.sync().unwrap();
            }
            redb.set_durable_commits(durable);
        }
    }

    /// What the `scale ` lines say the table is on.
    fn label(&self) -> &'static str {
        match (&self.redb, durable()) {
            (Some(_), true) => "durable ",
            (Some(_), false) => "",
            (None, _) if on_memory() => "memory ",
            (None, _) => "emulator ",
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The emulator of `ROWKIT_SCALE_STORE=emulator`, started once.
static EMULATOR: OnceLock<Emulator> = OnceLock::new();

/// The clock's start: a fixed instant on RedbStore; now on the emulator, whose server-time
/// cells carry its own clock.
fn start_time() -> Timestamp {
    if on_emulator() {
        SystemClock.now()
    } else {
        Timestamp(T0)
    }
}

fn on_emulator() -> bool {
    std::env::var("ROWKIT_SCALE_STORE").is_ok_and(|s| s == "emulator")
}

fn on_memory() -> bool {
    std::env::var("ROWKIT_SCALE_STORE").is_ok_and(|s| s == "memory")
}

/// Whether the measured operations' RedbStore commits wait for the disk
/// (`ROWKIT_SCALE_DURABLE=1`); the default skips the fsync. Tables always grow with
/// non-durable commits: a million fsynced one-object puts would take most of an hour.
fn durable() -> bool {
    std::env::var("ROWKIT_SCALE_DURABLE").is_ok_and(|s| s == "1")
}

/// A fresh backend for `schema` if `ROWKIT_SCALE_SCHEMAS` wants it: a RedbStore file with
/// non-durable commits (durable while measuring with `ROWKIT_SCALE_DURABLE=1`), a fresh
/// emulator instance, or a MemoryStore (`ROWKIT_SCALE_STORE=memory`: the schemas' own cost,
/// without a storage engine's).
fn backend(schema: &str) -> Option<Backend> {
    if !wanted(schema) {
        return None;
    }
    if on_emulator() {
        let emulator = EMULATOR.get_or_init(|| Emulator::start().expect("the Bigtable emulator"));
        return Some(Backend {
            other: Some(Box::new(emulator.fresh_store())),
            redb: None,
            path: None,
        });
    }
    if on_memory() {
        return Some(Backend {
            other: Some(Box::new(MemoryStore::new())),
            redb: None,
            path: None,
        });
    }
    let path =
        std::env::temp_dir().join(format!("rowkit-scale-{schema}-{}.redb", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let store = RedbStore::open(&path).unwrap();
    store.set_durable_commits(false);
    Some(Backend {
        other: None,
        redb: Some(store),
        path: Some(path),
    })
}

/// Resident memory of this process and, on the emulator, of the emulator; the redb file size.
fn memory(backend: &Backend) -> String {
    let mut line = format!(
        "rss {:.0} MiB peak {:.0} MiB",
        proc_mib("self", "VmRSS:"),
        proc_mib("self", "VmHWM:")
    );
    if let Some(path) = &backend.path {
        let file = std::fs::metadata(path).map_or(0, |m| m.len()) as f64 / (1 << 20) as f64;
        line.push_str(&format!(" file {file:.0} MiB"));
    }
    if let Some(pid) = emulator_pid() {
        line.push_str(&format!(
            " emulator rss {:.0} MiB",
            proc_mib(&pid.to_string(), "VmRSS:")
        ));
    }
    line
}

/// The `cbtemulator` process this bench started (a grandchild: the emulator module runs it
/// under a `sh` wrapper).
fn emulator_pid() -> Option<u32> {
    EMULATOR.get()?;
    let me = std::process::id();
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit(')')
            .next()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let is_emulator = String::from_utf8_lossy(&cmd).contains("cbtemulator");
        (is_emulator && parent_of(parent_of(pid)?)? == me).then_some(pid)
    })
}

/// A `/proc/<pid>/status` field in MiB (Linux; 0 elsewhere).
fn proc_mib(pid: &str, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Measures `op(i)` with criterion under `group/name/size` and prints the `scale` line.
fn measure(
    c: &mut Criterion,
    schema: &str,
    name: &str,
    size: u64,
    backend: &Backend,
    op: impl FnMut(u64),
) {
    measure_prepared(c, schema, name, size, backend, 1, |i| i, op);
}

/// [`measure`] of an operation on `elements` values whose input `prepare(i)` builds outside
/// the timed part (the line then also gives values/s).
#[allow(clippy::too_many_arguments)]
fn measure_prepared<I>(
    c: &mut Criterion,
    schema: &str,
    name: &str,
    size: u64,
    backend: &Backend,
    elements: u64,
    mut prepare: impl FnMut(u64) -> I,
    mut op: impl FnMut(I),
) {
    let samples = RefCell::new(Vec::<Duration>::new());
    let mut g = c.benchmark_group(format!("scale_{schema}"));
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(elements));
    let mut next = 0u64;
    backend.durable_commits(durable());
    g.bench_with_input(BenchmarkId::new(name, size), &size, |b, _| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut s = samples.borrow_mut();
            for _ in 0..iters {
                let input = prepare(next);
                let started = Instant::now();
                op(input);
                let took = started.elapsed();
                next += 1;
                total += took;
                s.push(took);
            }
            total
        })
    });
    g.finish();
    backend.durable_commits(false);
    let mut s = samples.into_inner();
    if s.is_empty() {
        // Filtered out on the command line: nothing ran.
        return;
    }
    s.sort_unstable();
    let at = |q: f64| s[((s.len() as f64 * q) as usize).min(s.len() - 1)];
    let mean = s.iter().sum::<Duration>() / s.len() as u32;
    let values = if elements > 1 {
        format!(
            " ({:.0} values/s)",
            elements as f64 / mean.as_secs_f64().max(1e-12)
        )
    } else {
        String::new()
    };
    println!(
        "scale {}{schema} {name} rows={size}: {:.0} ops/s{values} mean {:.1?} p50 {:.1?} p99 {:.1?} ({} ops) {}",
        backend.label(),
        1.0 / mean.as_secs_f64(),
        mean,
        at(0.50),
        at(0.99),
        s.len(),
        memory(backend)
    );
}

/// Prints the time spent growing the table so far (measurements excluded).
fn grown(what: &str, rows: u64, growing: Duration) {
    println!(
        "scale grow {what} to {rows}: {growing:.1?} in total ({:.0} rows/s)",
        rows as f64 / growing.as_secs_f64().max(1e-9)
    );
}

// ---- triples ---------------------------------------------------------------------------------

fn triple(i: u64) -> Triple {
    Triple::parse(rowkit_benches::triple_text(i).as_bytes()).unwrap()
}

fn graph(c: &mut Criterion) {
    let Some(backend) = backend("graph") else {
        return;
    };
    let store = backend.store();
    let clock = ManualClock::new(start_time());
    let ts = TripleStore::new(SyncDriver::new(store, &clock));
    block_on(ts.setup()).unwrap();
    let g = block_on(ts.new_graph(b"scale")).unwrap();
    let mut have = 0u64;
    let mut added = 1u64 << 40;
    let mut growing = Duration::ZERO;
    for size in sizes() {
        let started = Instant::now();
        while have < size {
            let n = (size - have).min(10_000);
            block_on(g.add_triples((have..have + n).map(triple).collect())).unwrap();
            have += n;
        }
        growing += started.elapsed();
        grown("graph triples", have, growing);
        let pick = |i: u64| (i * 7919) % have;
        // The asked triples are parsed outside the timed part: what is measured is the lookup.
        let asked = |i| triple(pick(i));
        measure_prepared(c, "graph", "exist", size, &backend, 1, asked, |t| {
            assert!(block_on(g.exist(&t)).unwrap());
        });
        measure_prepared(c, "graph", "objects(S,P)", size, &backend, 1, asked, |t| {
            let found = block_on(g.lookup(
                LookupMethod::Objects(t.subject.clone(), t.predicate.clone()),
                LookupOptions::default(),
            ))
            .unwrap();
            assert!(!found.is_empty());
        });
        measure(c, "graph", "add 1 triple", size, &backend, |_| {
            added += 1;
            let t = Triple::parse(format!("/n<x{added}>\t\"new\"@[]\t/n<y>").as_bytes()).unwrap();
            block_on(g.add_triples(vec![t])).unwrap();
        });
    }
}

// ---- trace store -----------------------------------------------------------------------------

/// Traces per commit: the table grows by commits of this many values.
const TRACES: u64 = 1_000;

/// Traces of the ingest tile: each measured Put writes one commit of this many values into
/// a tile that already holds them all (issue 16's "10 000-trace tile").
const INGEST_TRACES: u64 = 10_000;

/// The ingest tile's first commit: a tile of its own (tile 4096), past every commit the
/// growth reaches.
const INGEST_FIRST: i64 = 4096 * rowkit_codec::tracestore::keys::TILE_SIZE as i64;

fn entries(traces: std::ops::Range<u64>, commit: u64) -> Vec<PutEntry> {
    traces
        .map(|t| PutEntry {
            params: params_from([
                ("name", format!("test{t}")),
                ("config", format!("c{}", t % 7)),
            ]),
            options: Default::default(),
            digest: ops_hash(((t * 31 + commit) % 5000).to_string().as_bytes()),
        })
        .collect()
}

fn gold(c: &mut Criterion) {
    let Some(backend) = backend("gold") else {
        return;
    };
    let store = backend.store();
    block_on(setup_table(
        &SyncDriver::new(store, &ManualClock::new(Timestamp(0))),
        "gold",
        Layout::Md5,
    ))
    .unwrap();
    let clock = ManualClock::new(start_time());
    let ts = block_on(TraceStore::open(
        SyncDriver::new(store, &clock),
        "gold",
        None,
    ))
    .unwrap()
    .with_options(CallOptions {
        seed: 1,
        ..CallOptions::default()
    });
    // The ingest tile gets its 10 000 traces once (its first commit), outside any figure.
    block_on(ts.put(
        INGEST_FIRST,
        None,
        entries(0..INGEST_TRACES, 0),
        Timestamp(T0),
    ))
    .unwrap();
    let mut ingests = 0u64;
    let mut commits = 0u64;
    let mut growing = Duration::ZERO;
    for size in sizes() {
        let started = Instant::now();
        while commits * TRACES < size {
            block_on(ts.put(
                commits as i64,
                None,
                entries(0..TRACES, commits),
                Timestamp(T0),
            ))
            .unwrap();
            commits += 1;
        }
        growing += started.elapsed();
        grown("gold trace values", commits * TRACES, growing);
        let last = commits as i64 - 1;
        measure(c, "gold", "put 1 value", size, &backend, |i| {
            let t = i % TRACES;
            block_on(ts.put(last, None, entries(t..t + 1, i), Timestamp(T0))).unwrap();
        });
        // Later commits of the ingest tile (its other 255 columns, round and round).
        measure_prepared(
            c,
            "gold",
            "ingest 10 000-trace tile",
            size,
            &backend,
            INGEST_TRACES,
            |_| {
                ingests += 1;
                let column = 1 + ingests % (rowkit_codec::tracestore::keys::TILE_SIZE as u64 - 1);
                (column, entries(0..INGEST_TRACES, ingests))
            },
            |(column, batch)| {
                block_on(ts.put(INGEST_FIRST + column as i64, None, batch, Timestamp(T0))).unwrap();
            },
        );
        measure(
            c,
            "gold",
            "read 1 commit (1000 traces)",
            size,
            &backend,
            |i| {
                let commit = ((i * 7919) % commits) as i64;
                let tile = block_on(ts.read_range(commit, commit)).unwrap();
                assert_eq!(tile.traces.len() as u64, TRACES);
            },
        );
    }
}

// ---- object metadata -------------------------------------------------------------------------

fn s3(c: &mut Criterion) {
    let Some(backend) = backend("s3") else {
        return;
    };
    let store = backend.store();
    let clock = ManualClock::new(start_time());
    let om = ObjectMetadata::new(
        SyncDriver::new(store, &clock),
        scenario_state("scale", VFormat::V1),
    )
    .with_options(CallOptions {
        seed: 1,
        ..CallOptions::default()
    });
    block_on(om.setup()).unwrap();
    let j = |s: &str| Json::parse(s).unwrap();
    block_on(om.create_bucket("b", &j(r#"{"name":"b"}"#))).unwrap();
    let value = j(
        r#"{"content-length":1024,"owner-id":"79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be","tags":{}}"#,
    );
    let plain = j("{}");
    let versioning = j(r#"{"versioning":true}"#);
    let key = |i: u64| format!("dir{:03}/obj{i:08}", i % 1000);
    let mut have = 0u64;
    let mut growing = Duration::ZERO;
    for size in sizes() {
        let started = Instant::now();
        while have < size {
            block_on(om.put_object("b", &key(have), &value, Some(&plain))).unwrap();
            have += 1;
            if have.is_multiple_of(50_000) {
                om.take_events();
            }
        }
        om.take_events();
        growing += started.elapsed();
        grown("s3 objects", have, growing);
        let pick = |i: u64| (i * 7919) % have;
        // Object keys are formatted outside the timed part.
        let picked = |i| key(pick(i));
        measure_prepared(c, "s3", "get", size, &backend, 1, picked, |k| {
            block_on(om.get_object("b", &k, None)).unwrap();
        });
        measure_prepared(c, "s3", "put (overwrite)", size, &backend, 1, picked, |k| {
            block_on(om.put_object("b", &k, &value, Some(&plain))).unwrap();
        });
        om.take_events();
        // A new version of an existing object (params `versioning`): the version row and the
        // master, each a conditional write.
        measure_prepared(c, "s3", "put (versioned)", size, &backend, 1, picked, |k| {
            block_on(om.put_object("b", &k, &value, Some(&versioning))).unwrap();
        });
        om.take_events();
        measure(c, "s3", "list 100 from a marker", size, &backend, |i| {
            let p = ListingParams {
                listing_type: ListingType::DelimiterMaster,
                max_keys: Some(100),
                marker: Some(key(pick(i))),
                ..Default::default()
            };
            block_on(om.list_object("b", &p)).unwrap();
        });
    }
}

// ---- mount table -----------------------------------------------------------------------------

/// Leaves per directory; the tree is root -> `d<k>` -> `d<k>/n<i>` (every leaf mounted).
const LEAVES: u64 = 1_000;
const SERVER: &str = "/127.0.0.1:8000/x";

fn mt(c: &mut Criterion) {
    let Some(backend) = backend("mt") else {
        return;
    };
    let store = backend.store();
    let clock = ManualClock::new(start_time());
    let t = MountTable::new(
        SyncDriver::new(store, &clock),
        MtConfig {
            tables: Tables::new("mt"),
            ..MtConfig::default()
        },
    );
    block_on(t.setup(None)).unwrap();
    let who = server_caller();
    // The template directory d0 through the facade.
    for i in 0..LEAVES {
        block_on(t.mount(&who, &format!("d0/n{i}"), SERVER, 0, MountFlags(0))).unwrap();
    }
    let template = template_rows(store);
    let mut dirs = 1u64;
    let mut growing = Duration::ZERO;
    let mut checked = false;
    for size in sizes() {
        let started = Instant::now();
        while dirs * (LEAVES + 1) < size {
            copy_dir(store, &template, dirs);
            dirs += 1;
        }
        growing += started.elapsed();
        // The copies bypassed the facade, whose hot-row cache may hold the root from before
        // them for up to its 1 s TTL: let that pass.
        clock.advance_to(clock.now().saturating_add_micros(2_000_000));
        if !checked && dirs > 1 {
            // The copies are what the facade would have written: fsck finds nothing.
            let summary = block_on(t.fsck(false, |_| {})).unwrap();
            assert_eq!(summary.inconsistent, 0, "{summary:?}");
            checked = true;
        }
        let nodes = dirs * (LEAVES + 1) + 1;
        grown("mt nodes", nodes, growing);
        let pick = |i: u64| {
            let k = (i * 7919) % (dirs * LEAVES);
            format!("d{}/n{}", k / LEAVES, k % LEAVES)
        };
        // Measure the steady state of a running server: its hot-row cache holds the
        // directories the walks go through. So first walk through every directory once; what
        // those first reads cost is printed on their own line.
        let started = Instant::now();
        for d in 0..dirs {
            block_on(t.resolve(&who, &format!("d{d}/n0/rest"))).unwrap();
        }
        let warming = started.elapsed();
        println!(
            "scale warm mt rows={size}: one resolve through each of {dirs} directories, {:.1?} each",
            warming / dirs as u32
        );
        measure(c, "mt", "resolve", size, &backend, |i| {
            block_on(t.resolve(&who, &format!("{}/rest", pick(i)))).unwrap();
        });
        measure(c, "mt", "mount (refresh)", size, &backend, |i| {
            block_on(t.mount(&who, &pick(i), SERVER, 0, MountFlags(0))).unwrap();
        });
    }
}

/// The template directory: the `d0` row, its leaves (name suffix after `d0/`), and root's
/// reference id for `d0`.
struct Template {
    creator: String,
    dir: Vec<Mutation>,
    leaves: Vec<(String, Vec<Mutation>)>,
    id: Vec<u8>,
}

/// Every cell of a row as a SetCell with its own timestamp.
fn cells_of(row: &rowkit_codec::model::Row) -> Vec<Mutation> {
    row.cells.iter().map(|c| c.to_set_cell()).collect()
}

fn template_rows(store: &dyn Store) -> Template {
    let rows = rowkit_client::read_rows_blocking(
        store,
        ReadRowsRequest {
            table: "mt".into(),
            rows: RowSet::all(),
            ..Default::default()
        },
        Timestamp(T0),
    )
    .unwrap();
    let mut dir = None;
    let mut creator = String::new();
    let mut leaves = Vec::new();
    for row in &rows {
        let node = mtc::decode_node(row, start_time().0).unwrap();
        if node.name == "d0" {
            creator = node.creator.clone();
            dir = Some((cells_of(row), node.id.clone()));
        } else if let Some(leaf) = node.name.strip_prefix("d0/") {
            leaves.push((leaf.to_string(), cells_of(row)));
        }
    }
    let (dir, id) = dir.unwrap();
    assert_eq!(leaves.len() as u64, LEAVES);
    Template {
        creator,
        dir,
        leaves,
        id,
    }
}

/// Writes directory `d<k>` as a copy of the template (same ids, versions and timestamps under
/// new names), links it into the root and counts its nodes and servers.
fn copy_dir(store: &dyn Store, template: &Template, k: u64) {
    let dir = format!("d{k}");
    let mut entries = vec![MutateRowsEntry {
        row_key: mtc::row_key(&dir),
        mutations: template.dir.clone(),
    }];
    entries.extend(template.leaves.iter().map(|(leaf, cells)| MutateRowsEntry {
        row_key: mtc::row_key(&format!("{dir}/{leaf}")),
        mutations: cells.clone(),
    }));
    entries.push(MutateRowsEntry {
        row_key: mtc::row_key(""),
        mutations: vec![Mutation::SetCell {
            family: mtc::FAMILY_CHILDREN.into(),
            qualifier: mtc::child_qualifier(&template.id, &dir),
            timestamp: Timestamp(T0),
            value: mtc::MARKER_VALUE.to_vec(),
        }],
    });
    let answer = store
        .execute(
            Request::MutateRows(MutateRowsRequest {
                table: "mt".into(),
                entries: entries.into(),
                ..Default::default()
            }),
            Timestamp(T0),
        )
        .unwrap();
    let Reply::Stream(parts) = answer else {
        panic!("MutateRows answers a stream");
    };
    for part in parts {
        let Response::MutateRowsPart(part) = part.unwrap() else {
            panic!("not a MutateRows part");
        };
        assert!(part.entries.iter().all(|e| e.result.is_ok()));
    }
    let creator = template.creator.as_str();
    for (kind, delta) in [
        (mtc::CounterKind::Nodes, LEAVES as i64 + 1),
        (mtc::CounterKind::Servers, LEAVES as i64),
    ] {
        store
            .execute(
                Request::ReadModifyWriteRow(ReadModifyWriteRowRequest {
                    table: Tables::new("mt").counter,
                    row_key: mtc::counter_row_key(kind, creator),
                    rules: vec![ReadModifyWriteRule {
                        family: mtc::FAMILY_COUNTER.into(),
                        qualifier: mtc::QUAL_COUNTER.to_vec(),
                        op: RuleOp::IncrementAmount(delta),
                    }],
                    ..Default::default()
                }),
                Timestamp(T0),
            )
            .unwrap();
    }
}

criterion_group!(benches, mt, gold, s3, graph);
criterion_main!(benches);
