//! objmeta on RedbStore: put / get / delete operations per second, listing keys per second,
//! and rows scanned per listed key on a bucket where 90 % of the objects have a delete marker
//! as latest version (v0 versus v1). Results in benches/README.md.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rowkit_client::objmeta::ObjectMetadata;
use rowkit_client::{CallOptions, SyncDriver, block_on};
use rowkit_codec::model::ColumnFamily;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::listing::{ListingParams, ListingType};
use rowkit_statemachines::{RowStatus, Timestamp};
use rowkit_store::driver::ManualClock;
use rowkit_store::{RedbStore, Reply, Request, Response, Store, StoreError};
use rowkit_testkit::scenarios::objmeta::scenario_state;

/// Counts the rows the store streams back (committed rows of ReadRows answers).
struct Counting<S> {
    inner: S,
    rows: AtomicU64,
}

impl<S: Store> Store for Counting<S> {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        match self.inner.execute(request, now)? {
            Reply::Stream(parts) => Ok(Reply::Stream(Box::new(parts.inspect(|p| {
                if let Ok(Response::ReadRowsPart(r)) = p {
                    let n = r
                        .chunks
                        .iter()
                        .filter(|c| c.row_status == RowStatus::Commit)
                        .count();
                    self.rows.fetch_add(n as u64, Ordering::Relaxed);
                }
            })))),
            other => Ok(other),
        }
    }
    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        self.inner.create_table(table, families)
    }
    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        self.inner.delete_table(table)
    }
    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        self.inner.list_tables()
    }
    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        self.inner.families(table)
    }
    fn gc(&self, table: &str, now: Timestamp) -> Result<u64, StoreError> {
        self.inner.gc(table, now)
    }
}

fn store() -> Counting<RedbStore> {
    Counting {
        inner: RedbStore::in_memory().unwrap().with_durable_commits(false),
        rows: AtomicU64::new(0),
    }
}

fn j(s: &str) -> Json {
    Json::parse(s).unwrap()
}

const T0: i64 = 1_700_000_000_000_000;

fn ops(c: &mut Criterion) {
    let s = store();
    let clock = ManualClock::new(Timestamp(T0));
    let om = ObjectMetadata::new(
        SyncDriver::new(&s, &clock),
        scenario_state("objmeta", VFormat::V1),
    )
    .with_options(CallOptions {
        seed: 1,
        ..CallOptions::default()
    });
    block_on(om.setup()).unwrap();
    block_on(om.create_bucket("b", &j(r#"{"name":"b"}"#))).unwrap();
    let ver = j(r#"{"versioning":true}"#);
    let value = j(
        r#"{"key":"k","content-length":1024,"owner-id":"79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be","tags":{}}"#,
    );
    let mut g = c.benchmark_group("objmeta_ops");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    g.bench_function("put_versioned", |b| {
        b.iter(|| {
            i += 1;
            clock.advance_to(Timestamp(T0 + i as i64 * 1000));
            block_on(om.put_object("b", &format!("k{}", i % 1000), &value, Some(&ver))).unwrap()
        })
    });
    g.bench_function("put_nonversioned", |b| {
        b.iter(|| {
            i += 1;
            block_on(om.put_object("b", &format!("n{}", i % 1000), &value, Some(&j("{}")))).unwrap()
        })
    });
    g.bench_function("get", |b| {
        b.iter(|| {
            i += 1;
            block_on(om.get_object("b", &format!("n{}", i % 1000), None)).unwrap()
        })
    });
    g.bench_function("put_then_delete_nonversioned", |b| {
        b.iter(|| {
            i += 1;
            let k = format!("d{i}");
            block_on(om.put_object("b", &k, &value, Some(&j("{}")))).unwrap();
            block_on(om.delete_object("b", &k, Some(&j("{}")), None)).unwrap()
        })
    });
    // Deletes alone: each iteration's object is put untimed first.
    let mut timed_deletes = |name: &str, versioned: bool| {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    i += 1;
                    clock.advance_to(Timestamp(T0 + i as i64 * 1000));
                    let k = format!("x{i}");
                    let params = if versioned {
                        let put = block_on(om.put_object("b", &k, &value, Some(&ver))).unwrap();
                        let vid = Json::String(put.version_id.unwrap());
                        Json::Object([("versionId".to_string(), vid)].into_iter().collect())
                    } else {
                        block_on(om.put_object("b", &k, &value, Some(&j("{}")))).unwrap();
                        j("{}")
                    };
                    let start = std::time::Instant::now();
                    block_on(om.delete_object("b", &k, Some(&params), None)).unwrap();
                    total += start.elapsed();
                    om.drop_pending_repairs();
                }
                total
            })
        });
    };
    timed_deletes("delete_nonversioned", false);
    // The latest version by id: placeholder master, version delete, repair scheduled (the
    // repair itself runs 15 s later and is not timed).
    timed_deletes("delete_current_version", true);
    g.finish();
    om.take_events();
}

/// A bucket of `n` objects, each with 2 versions; 90 % have a delete marker on top.
fn dm_bucket(s: &Counting<RedbStore>, vf: VFormat, n: usize) -> ObjmetaHandle<'_> {
    let clock = Box::leak(Box::new(ManualClock::new(Timestamp(T0))));
    let om = ObjectMetadata::new(
        SyncDriver::new(s, &*clock),
        scenario_state(&format!("dm-{}", vf.as_str()), vf),
    )
    .with_options(CallOptions {
        seed: 1,
        ..CallOptions::default()
    });
    block_on(om.setup()).unwrap();
    block_on(om.create_bucket("b", &j(r#"{"name":"b"}"#))).unwrap();
    let ver = j(r#"{"versioning":true}"#);
    let mut t = 0;
    for i in 0..n {
        let k = format!("obj{i:06}");
        for v in 0..2 {
            t += 1;
            clock.advance_to(Timestamp(T0 + t * 1000));
            block_on(om.put_object(
                "b",
                &k,
                &j(&format!(r#"{{"key":"{k}","v":{v}}}"#)),
                Some(&ver),
            ))
            .unwrap();
        }
        if i % 10 != 0 {
            t += 1;
            clock.advance_to(Timestamp(T0 + t * 1000));
            block_on(om.put_object(
                "b",
                &k,
                &j(&format!(r#"{{"key":"{k}","isDeleteMarker":true}}"#)),
                Some(&ver),
            ))
            .unwrap();
        }
    }
    om.take_events();
    om
}

type ObjmetaHandle<'a> = ObjectMetadata<SyncDriver<&'a Counting<RedbStore>, &'a ManualClock>>;

fn listing(c: &mut Criterion) {
    let n = 2000;
    let mut g = c.benchmark_group("objmeta_listing");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    for vf in [VFormat::V0, VFormat::V1] {
        let s = store();
        let om = dm_bucket(&s, vf, n);
        let p = ListingParams {
            listing_type: ListingType::DelimiterMaster,
            ..Default::default()
        };
        s.rows.store(0, Ordering::Relaxed);
        let r = block_on(om.list_object("b", &p)).unwrap();
        let listed = match r.get("Contents") {
            Some(Json::Array(a)) => a.len(),
            _ => 0,
        };
        let scanned = s.rows.load(Ordering::Relaxed);
        println!(
            "objmeta_listing/{}: {listed} keys listed (maxKeys 1000), {scanned} rows scanned, {:.2} rows per listed key",
            vf.as_str(),
            scanned as f64 / listed as f64
        );
        g.throughput(Throughput::Elements(listed as u64));
        g.bench_function(format!("delimiter_master_90pct_dm_{}", vf.as_str()), |b| {
            b.iter(|| block_on(om.list_object("b", &p)).unwrap())
        });
        let pv = ListingParams {
            listing_type: ListingType::DelimiterVersions,
            ..Default::default()
        };
        g.throughput(Throughput::Elements(1000));
        g.bench_function(format!("delimiter_versions_{}", vf.as_str()), |b| {
            b.iter(|| block_on(om.list_object("b", &pv)).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, ops, listing);
criterion_main!(benches);
