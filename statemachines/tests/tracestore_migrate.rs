#![allow(clippy::unwrap_used)]
//! The trace store's migration (`docs/migration.md` §5) against a real `MemoryStore` with a
//! manual clock: the driver executes each request as it leaves (10 ms per request). The source
//! table is written by the existing `Put` machine in the `from` layout, on states that never
//! read a marker (Gold writers); what the target must hold comes from the test's own record of
//! those writes (the newest `ts` of each point wins, the last write at an equal `ts`), read back
//! through `ReadRange` and through the stored cells, never from the migrator.

use std::collections::BTreeMap;
use std::sync::Arc;

use rowkit_codec::migration::{
    DEFAULT_SETTLE_US, Gates, MarkerRole, MigrationCheckpoint, MigrationState, OptionsPolicy,
    PassCounters, RunId,
};
use rowkit_codec::model::{Row, RowSet, Timestamp};
use rowkit_codec::tracestore::cells::{COLUMN_OPS, FAMILY_OPS, FAMILY_TRACE, cell_to_digest};
use rowkit_codec::tracestore::keys::{
    RowType, decode_row_key, extract_subkey, ops_row_name, parse_trace_qualifier,
    repo_index_position,
};
use rowkit_codec::tracestore::migration::{TraceMarkerChange, TraceMigrationMarker};
use rowkit_codec::tracestore::ops::{params_from, trace_id_text};
use rowkit_codec::tracestore::{Layout, decode_ops_gob};
use rowkit_statemachines::check::{CheckOptions, CheckTarget};
use rowkit_statemachines::objmeta::migrate::pass::PassProgress;
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::tracestore::migrate::copy_tile::{
    CopyTile, CopyTileSummary, MAX_WRITE_ROUNDS,
};
use rowkit_statemachines::tracestore::migrate::marker::{
    ReadTableMigration, TraceMigrationRead, WriteTableCheckpoint, WriteTableMarker,
};
use rowkit_statemachines::tracestore::migrate::pass::{
    TilePass, TilePassKind, TilePassResult, TilePassResume,
};
use rowkit_statemachines::tracestore::migrate::run::{
    MigrateTraceStore, TraceMigrateEnd, TraceMigrateOptions,
};
use rowkit_statemachines::tracestore::migrate::{TablePair, TraceMigrateEvent};
use rowkit_statemachines::tracestore::{
    Check, Put, PutEntry, ReadRange, TraceStoreError, TraceStoreEvent, TraceStoreState,
};
use rowkit_statemachines::{Machine, ReadRowsRequest, Request, Response};
use rowkit_store::{MemoryStore, Store};
use rowkit_testkit::script::store_responses;

const T1: &str = "gold";
const T2: &str = "gold2";
const T0: Timestamp = Timestamp(1_764_428_400_000_000);
const DAY_US: i64 = 86_400_000_000;

/// A point's key in the test's record: trace id text and repo index.
type PointKey = (String, u32);

struct World {
    store: MemoryStore,
    now: Timestamp,
    seed: u64,
    from: Layout,
    to: Layout,
    /// Every acknowledged Gold write: point → (digest, ts).
    expected: BTreeMap<PointKey, (String, Timestamp)>,
}

fn digest(n: u64) -> String {
    format!("{:032x}", n.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
}

fn other(layout: Layout) -> Layout {
    match layout {
        Layout::Md5 => Layout::DigestId,
        Layout::DigestId => Layout::Md5,
    }
}

impl World {
    fn new(from: Layout) -> World {
        let store = MemoryStore::new();
        let to = other(from);
        Store::create_table(&store, T1, &from.families()).unwrap();
        Store::create_table(&store, T2, &to.families()).unwrap();
        World {
            store,
            now: T0,
            seed: 0,
            from,
            to,
            expected: BTreeMap::new(),
        }
    }

    fn start(&mut self) -> Start {
        self.seed += 1;
        Start::within(self.now, self.seed, DAY_US)
    }

    fn pair(&self) -> TablePair {
        TablePair::new(
            TraceStoreState::new(T1, self.from),
            TraceStoreState::new(T2, self.to),
        )
    }

    /// Executes one request of `m` at the next tick.
    fn step<M: Machine>(&mut self, m: &mut M) -> usize {
        let Some((tag, request)) = m.poll_request() else {
            let at = m.poll_timeout().expect("the machine waits on nothing");
            self.now = Timestamp(self.now.0.max(at.0));
            m.handle_timeout(self.now);
            return 0;
        };
        self.now = Timestamp(self.now.0 + 10_000);
        let parts = store_responses(&self.store, request, self.now);
        let n = parts.len();
        for part in parts {
            m.handle_response(tag, part, self.now);
        }
        n
    }

    /// Runs `m` to its end; `between(world, k)` runs before its k-th request (the Gold writers
    /// beside it).
    fn run_with<M: Machine>(
        &mut self,
        mut m: M,
        mut between: impl FnMut(&mut World, usize),
    ) -> Result<M::Output, M::Error> {
        let mut k = 0;
        loop {
            while m.poll_event().is_some() {}
            if let Some(result) = m.result() {
                return result;
            }
            between(self, k);
            k += 1;
            self.step(&mut m);
        }
    }

    fn run<M: Machine>(&mut self, m: M) -> Result<M::Output, M::Error> {
        self.run_with(m, |_, _| {})
    }

    /// Runs a migration machine to its end, with the migration events it emitted.
    fn run_events<M: Machine<Event = TraceStoreEvent>>(
        &mut self,
        mut m: M,
    ) -> (Result<M::Output, M::Error>, Vec<TraceMigrateEvent>) {
        let mut events = Vec::new();
        loop {
            while let Some(e) = m.poll_event() {
                if let TraceStoreEvent::Migrate(e) = e {
                    events.push(e);
                }
            }
            if let Some(result) = m.result() {
                return (result, events);
            }
            self.step(&mut m);
        }
    }

    /// Runs `m` and drops it after `responses` responses (a crash); true when it ended first.
    fn run_until_crash<M: Machine>(&mut self, mut m: M, responses: usize) -> bool {
        let mut seen = 0;
        loop {
            while m.poll_event().is_some() {}
            if m.result().is_some() {
                return true;
            }
            if seen >= responses {
                return false;
            }
            seen += self.step(&mut m).max(1);
        }
    }

    /// A Gold writer's Put into T1 (a fresh state: it never reads a marker), recorded when
    /// acknowledged.
    fn gold_put(&mut self, repo_index: u32, entries: &[(&str, u64)], ts: Timestamp) {
        let entries: Vec<PutEntry> = entries
            .iter()
            .map(|(name, d)| PutEntry {
                params: params_from([("name", *name), ("config", "8888")]),
                digest: digest(*d),
                ..PutEntry::default()
            })
            .collect();
        let start = self.start();
        let state = TraceStoreState::new(T1, self.from);
        let put = Put::new(
            state,
            i64::from(repo_index),
            None,
            entries.clone(),
            ts,
            start,
        );
        self.run(put).unwrap();
        for e in entries {
            let key = (trace_id_text(&e.params), repo_index);
            let newer = self.expected.get(&key).is_none_or(|(_, old)| ts >= *old);
            if newer {
                self.expected.insert(key, (e.digest, ts));
            }
        }
    }

    /// A Gold writer's Put of a point with options (md5 source), recorded.
    fn put_with_options(&mut self) {
        let start = self.start();
        let params = params_from([("name", "o")]);
        let put = Put::new(
            TraceStoreState::new(T1, Layout::Md5),
            7,
            Some(T0),
            vec![PutEntry {
                params: params.clone(),
                options: params_from([("ext", "png")]),
                digest: digest(42),
            }],
            T0,
            start,
        );
        self.run(put).unwrap();
        self.expected
            .insert((trace_id_text(&params), 7), (digest(42), T0));
    }

    fn copy_tile(
        &mut self,
        tile_key: i32,
        options: OptionsPolicy,
    ) -> Result<CopyTileSummary, TraceStoreError> {
        let start = self.start();
        let m = CopyTile::new(self.pair(), tile_key, options, start);
        self.run(m)
    }

    /// Every row of `table`.
    fn rows(&self, table: &str) -> Vec<Row> {
        let request = Request::ReadRows(ReadRowsRequest {
            table: table.into(),
            rows: RowSet::all(),
            ..Default::default()
        });
        let mut rows = Vec::new();
        for part in store_responses(&self.store, request, self.now) {
            if let Ok(Response::Rows(chunk)) = part {
                rows.extend(chunk.into_iter().map(Arc::unwrap_or_clone));
            }
        }
        rows
    }

    /// The points `table` (of `layout`) stores, decoded by the test from the rows: the newest
    /// cell of each column, its value (the digest; ids through the table's digest map) and
    /// timestamp.
    fn stored_points(
        &self,
        table: &str,
        layout: Layout,
    ) -> BTreeMap<PointKey, (String, Timestamp)> {
        let rows = self.rows(table);
        let mut ops = BTreeMap::new();
        let mut ids = BTreeMap::new();
        for row in &rows {
            let Ok(key) = decode_row_key(&row.key) else {
                continue;
            };
            match key.row_type {
                RowType::Ops => {
                    let newest = row
                        .cells
                        .iter()
                        .filter(|c| c.family == FAMILY_OPS && c.qualifier == COLUMN_OPS)
                        .max_by_key(|c| c.timestamp)
                        .unwrap();
                    ops.insert(key.tile_key, decode_ops_gob(&newest.value).unwrap());
                }
                RowType::DigestMap => {
                    for c in &row.cells {
                        let d = rowkit_codec::tracestore::cells::digest_of_map_cell(
                            &row.key,
                            &c.qualifier,
                        );
                        let id = rowkit_codec::tracestore::cells::decode_digest_map_value(&c.value)
                            .unwrap();
                        ids.insert(id, d.unwrap());
                    }
                }
                _ => {}
            }
        }
        let mut out = BTreeMap::new();
        for row in &rows {
            let Ok(key) = decode_row_key(&row.key) else {
                continue;
            };
            if key.row_type != RowType::Trace {
                continue;
            }
            let params = ops[&key.tile_key]
                .decode_params(extract_subkey(&row.key))
                .unwrap();
            let mut newest: BTreeMap<u32, (String, Timestamp)> = BTreeMap::new();
            for c in row.cells.iter().filter(|c| c.family == FAMILY_TRACE) {
                let offset = parse_trace_qualifier(&c.qualifier).unwrap();
                let value = match layout {
                    Layout::Md5 => cell_to_digest(&c.value),
                    Layout::DigestId => {
                        let id = rowkit_codec::tracestore::cells::decode_digest_id_cell(&c.value)
                            .unwrap();
                        ids.get(&id).cloned().unwrap_or_default()
                    }
                };
                if newest.get(&offset).is_none_or(|(_, ts)| c.timestamp > *ts) {
                    newest.insert(offset, (value, c.timestamp));
                }
            }
            let tile_index = key.tile_index().unwrap();
            for (offset, point) in newest {
                out.insert((trace_id_text(&params), tile_index * 256 + offset), point);
            }
        }
        out
    }

    /// Every trace of commits `first ..= last` of `table` through `ReadRange`: point → digest.
    fn read_range(
        &mut self,
        table: &str,
        layout: Layout,
        first: u32,
        last: u32,
    ) -> BTreeMap<PointKey, String> {
        let start = self.start();
        let tile = self
            .run(ReadRange::new(
                TraceStoreState::new(table, layout),
                i64::from(first),
                i64::from(last),
                start,
            ))
            .unwrap();
        let mut out = BTreeMap::new();
        for (id, trace) in tile.traces {
            for (commit, d) in tile.commits.iter().zip(trace.digests) {
                if !d.is_empty() {
                    out.insert((id.clone(), *commit), d);
                }
            }
        }
        out
    }

    /// The check of T2 finds nothing.
    fn check_target_clean(&mut self) {
        let start = self.start();
        let summary = self
            .run(Check::new(
                CheckTarget::new(T2),
                self.to,
                CheckOptions::default(),
                start,
            ))
            .unwrap();
        assert!(
            summary.findings_by_kind.is_empty(),
            "{:?}",
            summary.findings_by_kind
        );
    }

    /// T2 holds every recorded point with its digest and `ts`, and nothing else; `ReadRange`
    /// of T2 reads what the record says.
    fn assert_target_equals_record(&mut self, last_commit: u32) {
        assert_eq!(self.stored_points(T2, self.to), self.expected);
        let want: BTreeMap<PointKey, String> = self
            .expected
            .iter()
            .map(|(k, (d, _))| (k.clone(), d.clone()))
            .collect();
        let to = self.to;
        assert_eq!(self.read_range(T2, to, 0, last_commit), want);
    }
}

fn tile_key_of(repo_index: u32) -> i32 {
    repo_index_position(i64::from(repo_index)).unwrap().tile_key
}

/// Two tiles of writes, an older point written after a newer one included.
fn seed_writes(w: &mut World) {
    let ms = |n: i64| Timestamp(T0.0 + n * 1000);
    w.gold_put(3, &[("a", 1), ("b", 2)], ms(10));
    w.gold_put(4, &[("a", 3), ("c", 4)], ms(11));
    w.gold_put(3, &[("a", 5)], ms(9)); // older: loses to ms(10)
    w.gold_put(3, &[("b", 6)], ms(12)); // newer: wins
    w.gold_put(260, &[("a", 7), ("d", 8)], ms(13));
    w.gold_put(511, &[("d", 9)], ms(14));
}

#[test]
fn copy_tile_copies_every_point_with_its_timestamp_both_directions() {
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        assert_eq!(
            w.stored_points(T1, from),
            w.expected,
            "the record is what T1 holds"
        );
        for tile in [tile_key_of(0), tile_key_of(256)] {
            let s = w.copy_tile(tile, OptionsPolicy::Refuse).unwrap();
            assert_eq!(s.rounds, 1, "{from:?}: nothing changed under the copy");
            assert_eq!(s.copied, s.points);
        }
        w.assert_target_equals_record(511);
        w.check_target_clean();
        // A second copy rewrites the same cells: nothing read changes.
        let before = w.stored_points(T2, w.to);
        w.copy_tile(tile_key_of(0), OptionsPolicy::Refuse).unwrap();
        assert_eq!(w.stored_points(T2, w.to), before);
    }
}

#[test]
fn the_target_ops_gets_the_source_indices() {
    let mut w = World::new(Layout::Md5);
    // Keys added over two Puts: the source KeyOrder is not ascending.
    let start = w.start();
    let entry = |params| PutEntry {
        params,
        digest: digest(1),
        ..PutEntry::default()
    };
    let put = Put::new(
        TraceStoreState::new(T1, Layout::Md5),
        5,
        None,
        vec![entry(params_from([("z", "1")]))],
        T0,
        start,
    );
    w.run(put).unwrap();
    let start = w.start();
    let put = Put::new(
        TraceStoreState::new(T1, Layout::Md5),
        6,
        None,
        vec![entry(params_from([("a", "2"), ("z", "3")]))],
        T0,
        start,
    );
    w.run(put).unwrap();
    w.copy_tile(tile_key_of(0), OptionsPolicy::Refuse).unwrap();
    let ops_of = |w: &World, table: &str| {
        let row = w
            .rows(table)
            .into_iter()
            .find(|r| r.key == ops_row_name(tile_key_of(0)))
            .unwrap();
        let cell = row
            .cells
            .iter()
            .find(|c| c.qualifier == COLUMN_OPS)
            .unwrap();
        decode_ops_gob(&cell.value).unwrap()
    };
    let (source, target) = (ops_of(&w, T1), ops_of(&w, T2));
    assert_eq!(source.key_order(), ["z", "a"]);
    assert_eq!(target.key_order(), source.key_order());
    assert_eq!(target.param_set(), source.param_set());
    // So the trace subkeys come out byte-identical.
    let subkeys = |table: &str| {
        let mut s: Vec<Vec<u8>> = w
            .rows(table)
            .iter()
            .filter(|r| decode_row_key(&r.key).is_ok_and(|k| k.row_type == RowType::Trace))
            .map(|r| r.key.clone())
            .collect();
        s.sort();
        s
    };
    assert_eq!(subkeys(T1), subkeys(T2));
}

#[test]
fn gold_writes_between_the_copy_requests_reach_the_target() {
    for from in [Layout::Md5, Layout::DigestId] {
        // A write before every request of the copy, in turn: same-ms overwrites of copied
        // points (other digest), newer points, new traces.
        for k in 0..12 {
            let mut w = World::new(from);
            seed_writes(&mut w);
            let start = w.start();
            let m = CopyTile::new(w.pair(), tile_key_of(0), OptionsPolicy::Refuse, start);
            let ms = |n: i64| Timestamp(T0.0 + n * 1000);
            w.run_with(m, |w, i| {
                if i == k {
                    // Same ms as the copied point ("b", 3) at ms(12), another digest.
                    w.gold_put(3, &[("b", 100)], ms(12));
                    w.gold_put(4, &[("e", 101)], ms(15));
                }
            })
            .unwrap();
            // The tile of index 256 is copied after (its writes were before).
            w.copy_tile(tile_key_of(256), OptionsPolicy::Refuse)
                .unwrap();
            w.assert_target_equals_record(511);
            w.check_target_clean();
        }
    }
}

#[test]
fn a_tile_written_without_pause_is_copied_in_bounded_rounds_and_the_next_copy_ends_it() {
    for from in [Layout::Md5, Layout::DigestId] {
        // A newer point before every request of the copy: no re-read ever equals the read
        // before it, so an unbounded post-check would never end (§12.71).
        let mut w = World::new(from);
        seed_writes(&mut w);
        let start = w.start();
        let m = CopyTile::new(w.pair(), tile_key_of(0), OptionsPolicy::Refuse, start);
        let s = w
            .run_with(m, |w, i| {
                let n = i as u64;
                w.gold_put(
                    4,
                    &[("e", 200 + n)],
                    Timestamp(T0.0 + (100 + n as i64) * 1000),
                );
            })
            .unwrap();
        assert_eq!(s.rounds, MAX_WRITE_ROUNDS, "{from:?}");
        // The writer stopped, the next pass's copy brings the rest.
        for tile in [0, 256] {
            w.copy_tile(tile_key_of(tile), OptionsPolicy::Refuse)
                .unwrap();
        }
        w.assert_target_equals_record(511);
        w.check_target_clean();
    }
}

#[test]
fn a_copy_dropped_after_any_response_and_run_again_ends_in_the_same_table() {
    for from in [Layout::Md5, Layout::DigestId] {
        let mut reference = World::new(from);
        seed_writes(&mut reference);
        reference
            .copy_tile(tile_key_of(0), OptionsPolicy::Refuse)
            .unwrap();
        let want = reference.stored_points(T2, reference.to);
        for crash_after in 0.. {
            let mut w = World::new(from);
            seed_writes(&mut w);
            let start = w.start();
            let m = CopyTile::new(w.pair(), tile_key_of(0), OptionsPolicy::Refuse, start);
            if w.run_until_crash(m, crash_after) {
                break;
            }
            w.copy_tile(tile_key_of(0), OptionsPolicy::Refuse).unwrap();
            assert_eq!(
                w.stored_points(T2, w.to),
                want,
                "{from:?} crash after {crash_after}"
            );
            w.check_target_clean();
        }
    }
}

#[test]
fn options_are_refused_or_dropped() {
    let mut w = World::new(Layout::Md5);
    w.put_with_options();
    assert_eq!(
        w.copy_tile(tile_key_of(0), OptionsPolicy::Refuse),
        Err(TraceStoreError::MigrationOptions {
            tile_key: tile_key_of(0),
            rows: 1
        })
    );
    assert!(w.rows(T2).is_empty(), "refused before any write");
    let s = w.copy_tile(tile_key_of(0), OptionsPolicy::Drop).unwrap();
    assert_eq!(s.options_rows_dropped, 1);
    w.assert_target_equals_record(255);
    w.check_target_clean();
}

#[test]
fn tables_of_one_layout_are_refused_before_any_request() {
    let mut w = World::new(Layout::Md5);
    let start = w.start();
    let pair = TablePair::new(
        TraceStoreState::new(T1, Layout::Md5),
        TraceStoreState::new(T2, Layout::Md5),
    );
    let mut m = CopyTile::new(pair, 0, OptionsPolicy::Refuse, start);
    assert!(m.poll_request().is_none());
    assert!(matches!(
        m.result(),
        Some(Err(TraceStoreError::MigrationUsage(_)))
    ));
    let _ = w.start();
}

// ---------------------------------------------------------------------------------------------
// The marker and checkpoint (`docs/migration.md` §2.1, §2.2, §7.1)
// ---------------------------------------------------------------------------------------------

fn trace_marker(state: MigrationState, role: MarkerRole) -> TraceMigrationMarker {
    TraceMigrationMarker {
        source_table: Some(T1.into()),
        target_table: Some(T2.into()),
        role: Some(role),
        options: Some(OptionsPolicy::Refuse),
        ..TraceMigrationMarker::new(
            RunId(0xabc),
            Layout::Md5,
            Layout::DigestId,
            state,
            T0,
            DEFAULT_SETTLE_US,
            "",
        )
    }
}

/// The marker row's cells of `table` as stored, by the test.
fn marker_cells(w: &World, table: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    w.rows(table)
        .into_iter()
        .filter(|r| r.key == b":rk:m:0000000000:")
        .flat_map(|r| r.cells)
        .map(|c| {
            assert_eq!((c.family.as_str(), c.timestamp), ("O", Timestamp(0)));
            (c.qualifier, c.value)
        })
        .collect()
}

#[test]
fn the_marker_row_is_written_read_and_changed_conditionally() {
    let mut w = World::new(Layout::Md5);
    let state = || TraceStoreState::new(T1, Layout::Md5);
    let start = w.start();
    let none = w.run(ReadTableMigration::new(state(), start)).unwrap();
    assert_eq!(none, TraceMigrationRead::default());
    // The start: no row before it.
    let copying = trace_marker(MigrationState::Copying, MarkerRole::Source);
    let start = w.start();
    let m = WriteTableMarker::new(
        state(),
        &none,
        TraceMarkerChange::Write(copying.clone()),
        Gates::default(),
        start,
    );
    let read = w.run(m).unwrap();
    assert_eq!(read.marker.as_ref(), Some(&copying));
    let text = copying.to_json_text().unwrap().into_bytes();
    assert_eq!(
        marker_cells(&w, T1),
        BTreeMap::from([(b"marker".to_vec(), text.clone())])
    );
    // Another run's start from the stale "no marker" read is refused by the store (the same
    // marker again would be this write's own, a lost response).
    let start = w.start();
    let another = TraceMigrationMarker {
        run: RunId(0xdef),
        ..copying.clone()
    };
    let m = WriteTableMarker::new(
        state(),
        &none,
        TraceMarkerChange::Write(another),
        Gates::default(),
        start,
    );
    assert_eq!(w.run(m), Err(TraceStoreError::MarkerChanged));
    // A state change whose response is lost after it applied: its own write, recognised.
    let verifying = copying.with_state(MigrationState::Verifying, Timestamp(T0.0 + 1));
    let start = w.start();
    let mut m = WriteTableMarker::new(
        state(),
        &read,
        TraceMarkerChange::Write(verifying.clone()),
        Gates::default(),
        start,
    );
    let (tag, request) = m.poll_request().unwrap();
    assert!(matches!(request, Request::CheckAndMutateRow(_)));
    let _applied = store_responses(&w.store, request, w.now);
    m.handle_response(
        tag,
        Err(rowkit_statemachines::StoreError::new(
            rowkit_statemachines::Code::Unavailable,
            "lost",
        )),
        w.now,
    );
    let read = w.run(m).unwrap();
    assert_eq!(read.marker.as_ref(), Some(&verifying));
    // §3 refuses a jump, before anything is sent.
    let start = w.start();
    let mut m = WriteTableMarker::new(
        state(),
        &read,
        TraceMarkerChange::Write(verifying.with_state(MigrationState::Cleaning, T0)),
        Gates::ALL,
        start,
    );
    assert!(m.poll_request().is_none());
    assert!(matches!(
        m.result(),
        Some(Err(TraceStoreError::MigrationChangeRefused(_)))
    ));
    // The first checkpoint, then another owner's is refused while its lease holds.
    let checkpoint = MigrationCheckpoint {
        run: RunId(0xabc),
        state: MigrationState::Verifying,
        pass: 1,
        cursor: Some(ops_row_name(tile_key_of(0))),
        owner: "host:1".into(),
        lease_until: T0,
        counters: PassCounters::default(),
        pass_rows_previous: None,
        started: T0,
        updated: T0,
    };
    let start = w.start();
    let m = WriteTableCheckpoint::new(state(), &read, checkpoint.clone(), false, start);
    let read = w.run(m).unwrap();
    assert_eq!(
        read.checkpoint.as_ref().map(|c| c.owner.as_str()),
        Some("host:1")
    );
    assert!(marker_cells(&w, T1).contains_key(b"checkpoint".as_slice()));
    let start = w.start();
    let theirs = MigrationCheckpoint {
        owner: "host:2".into(),
        ..checkpoint
    };
    let m = WriteTableCheckpoint::new(state(), &read, theirs, false, start);
    assert!(matches!(
        w.run(m),
        Err(TraceStoreError::MigrationInProgress(_))
    ));
}

// ---------------------------------------------------------------------------------------------
// The tile pass (`docs/migration.md` §5.4, §5.5, §7.1, §7.3)
// ---------------------------------------------------------------------------------------------

const OWNER: &str = "host:1";
/// `--switch` without `--finish`.
const SWITCH: Gates = Gates {
    switch: true,
    finish: false,
};

/// Starts the migration: the source marker (`copying`), as the migrator writes it.
fn start_marker(w: &mut World) -> TraceMigrationRead {
    let marker = TraceMigrationMarker {
        from: w.from,
        to: w.to,
        ..trace_marker(MigrationState::Copying, MarkerRole::Source)
    };
    let start = w.start();
    let m = WriteTableMarker::new(
        TraceStoreState::new(T1, w.from),
        &TraceMigrationRead::default(),
        TraceMarkerChange::Write(marker),
        Gates::default(),
        start,
    );
    w.run(m).unwrap()
}

fn first_checkpoint(state: MigrationState, pass: u64) -> MigrationCheckpoint {
    MigrationCheckpoint {
        run: RunId(0xabc),
        state,
        pass,
        cursor: None,
        owner: OWNER.into(),
        lease_until: T0,
        counters: PassCounters::default(),
        pass_rows_previous: None,
        started: T0,
        updated: T0,
    }
}

/// Runs a pass to its end, with its events.
fn run_pass(
    w: &mut World,
    kind: TilePassKind,
    resume: TilePassResume,
) -> (TilePassResult, Vec<PassProgress>) {
    let start = w.start();
    let m = TilePass::new(w.pair(), kind, OptionsPolicy::Refuse, resume, start);
    let (result, events) = w.run_events(m);
    let progress = events
        .into_iter()
        .filter_map(|e| match e {
            TraceMigrateEvent::Progress(p) => Some(p),
            _ => None,
        })
        .collect();
    (result.unwrap(), progress)
}

#[test]
fn a_copy_pass_then_a_verification_compares_digests_and_timestamps() {
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        let read = start_marker(&mut w);
        let resume = TilePassResume {
            as_read: read,
            checkpoint: first_checkpoint(MigrationState::Copying, 1),
            take_over: false,
        };
        let (copy, progress) = run_pass(&mut w, TilePassKind::Copy, resume);
        // Two tiles, newest first; a checkpoint and an event after each.
        assert_eq!(copy.summary.tiles, 2);
        assert_eq!(progress.len(), 2);
        assert_eq!(copy.summary.counters.copied, w.expected.len() as u64);
        assert_eq!(copy.summary.cursor, Some(ops_row_name(tile_key_of(0))));
        let stored = copy.migration.checkpoint.clone().unwrap();
        assert_eq!(stored.cursor, Some(ops_row_name(tile_key_of(0))));
        assert_eq!(stored.counters, copy.summary.counters);
        assert_eq!(progress[1].counters, copy.summary.counters);
        w.assert_target_equals_record(511);
        // A newer write of the same digest: the target holds the right digest at an older `ts`,
        // which the verification finds (§5.5) and copies.
        let ms = |n: i64| Timestamp(T0.0 + n * 1000);
        w.gold_put(260, &[("a", 7)], ms(50));
        let verify = |w: &mut World, read: TraceMigrationRead, pass| {
            let resume = TilePassResume {
                as_read: read,
                checkpoint: first_checkpoint(MigrationState::Verifying, pass),
                take_over: false,
            };
            run_pass(w, TilePassKind::Verify, resume).0
        };
        let first = verify(&mut w, copy.migration, 1);
        assert_eq!(first.summary.diffs, 1, "{from:?}");
        // The tile with the difference is copied whole.
        let tile_1_points = w.expected.keys().filter(|(_, i)| *i >= 256).count() as u64;
        assert_eq!(first.summary.counters.copied, tile_1_points);
        w.assert_target_equals_record(511);
        let second = verify(&mut w, first.migration, 2);
        assert_eq!(second.summary.diffs, 0);
        assert_eq!(second.summary.counters.copied, 0);
        assert_eq!(second.summary.counters.unchanged, w.expected.len() as u64);
        w.check_target_clean();
    }
}

#[test]
fn a_pass_dropped_after_any_response_resumes_from_its_checkpoint() {
    for from in [Layout::Md5, Layout::DigestId] {
        for crash_after in 0.. {
            let mut w = World::new(from);
            seed_writes(&mut w);
            let read = start_marker(&mut w);
            let resume = TilePassResume {
                as_read: read,
                checkpoint: first_checkpoint(MigrationState::Copying, 1),
                take_over: false,
            };
            let start = w.start();
            let m = TilePass::new(
                w.pair(),
                TilePassKind::Copy,
                OptionsPolicy::Refuse,
                resume,
                start,
            );
            if w.run_until_crash(m, crash_after) {
                break;
            }
            // A new migrator (the same owner): marker and checkpoint as stored.
            let start = w.start();
            let read = w
                .run(ReadTableMigration::new(
                    TraceStoreState::new(T1, from),
                    start,
                ))
                .unwrap();
            let checkpoint = read
                .checkpoint
                .clone()
                .unwrap_or_else(|| first_checkpoint(MigrationState::Copying, 1));
            let resume = TilePassResume {
                as_read: read,
                checkpoint,
                take_over: false,
            };
            let (done, _) = run_pass(&mut w, TilePassKind::Copy, resume);
            assert_eq!(done.summary.cursor, Some(ops_row_name(tile_key_of(0))));
            w.assert_target_equals_record(511);
            w.check_target_clean();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The migrator (`docs/migration.md` §3, §5.4, §5.5, §5.9, §7.2)
// ---------------------------------------------------------------------------------------------

fn migrate_options(gates: Gates) -> TraceMigrateOptions {
    TraceMigrateOptions {
        gates,
        abort: false,
        options: OptionsPolicy::Refuse,
        settle_us: None,
        take_over: false,
        owner: OWNER.into(),
    }
}

fn migrator(w: &mut World, options: TraceMigrateOptions) -> MigrateTraceStore<'static> {
    let start = w.start();
    let to = w.to;
    MigrateTraceStore::new(w.pair(), to, options, start)
}

/// The markers of both tables as stored, decoded by the codec.
fn stored_states(w: &World) -> (Option<MigrationState>, Option<MigrationState>) {
    let state = |table| {
        marker_cells(w, table)
            .get(b"marker".as_slice())
            .map(|m| TraceMigrationMarker::from_json_bytes(m).unwrap().state)
    };
    (state(T1), state(T2))
}

#[test]
fn a_run_copies_verifies_and_switches_beside_gold_writers() {
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        let ms = |n: i64| Timestamp(T0.0 + n * 1000);
        // Gold writers before the switch, between the migrator's requests: a same-ms overwrite
        // of a copied point, newer points, a new trace, a new tile.
        let m = migrator(&mut w, migrate_options(Gates::default()));
        let out = w
            .run_with(m, |w, k| match k {
                5 => w.gold_put(3, &[("b", 200)], ms(12)),
                40 => w.gold_put(4, &[("f", 201)], ms(60)),
                90 => w.gold_put(600, &[("a", 202)], ms(61)),
                _ => {}
            })
            .unwrap();
        assert_eq!(out.end, TraceMigrateEnd::InState(MigrationState::Verifying));
        let name_a = trace_id_text(&params_from([("name", "a"), ("config", "8888")]));
        assert!(
            w.expected.contains_key(&(name_a, 600)),
            "every hooked write ran"
        );
        assert_eq!(
            stored_states(&w),
            (
                Some(MigrationState::Verifying),
                Some(MigrationState::Verifying)
            )
        );
        w.gold_put(4, &[("a", 203)], ms(70));
        // The operator stops the Gold writers and switches.
        let m = migrator(&mut w, migrate_options(SWITCH));
        let out = w.run(m).unwrap();
        assert_eq!(
            out.end,
            TraceMigrateEnd::InState(MigrationState::Switched),
            "{from:?}"
        );
        assert_eq!(
            stored_states(&w),
            (
                Some(MigrationState::Switched),
                Some(MigrationState::Switched)
            )
        );
        assert!(
            out.passes
                .iter()
                .any(|p| p.kind == TilePassKind::Verify && p.diffs == 0)
        );
        w.assert_target_equals_record(767);
        w.check_target_clean();
        // Running it again changes nothing.
        let before = w.rows(T2);
        let m = migrator(&mut w, migrate_options(SWITCH));
        assert_eq!(
            w.run(m).unwrap().end,
            TraceMigrateEnd::InState(MigrationState::Switched)
        );
        assert_eq!(w.rows(T2), before);
    }
}

#[test]
fn a_run_dropped_after_any_response_resumes_from_its_markers() {
    for from in [Layout::Md5, Layout::DigestId] {
        for crash_after in 0.. {
            let mut w = World::new(from);
            seed_writes(&mut w);
            let m = migrator(&mut w, migrate_options(Gates::ALL));
            if w.run_until_crash(m, crash_after) {
                break;
            }
            let m = migrator(&mut w, migrate_options(Gates::ALL));
            let out = w.run(m).unwrap();
            assert_eq!(out.end, TraceMigrateEnd::Cleaned, "{from:?} {crash_after}");
            assert_eq!(stored_states(&w), (Some(MigrationState::Cleaning), None));
            let t1: Vec<Vec<u8>> = w.rows(T1).into_iter().map(|r| r.key).collect();
            assert_eq!(t1, vec![b":rk:m:0000000000:".to_vec()], "nothing old left");
            w.assert_target_equals_record(511);
            w.check_target_clean();
        }
    }
}

/// Every marker or checkpoint CAS (the marker row of either table) is answered with a
/// retryable error once: alternately before it reaches the store (`UNAVAILABLE`) and after it
/// applied (`DEADLINE_EXCEEDED`, its reply lost). The run re-reads, recognises its own write or
/// sends it again, and ends cleaned (§12.62).
#[test]
fn marker_and_checkpoint_writes_answered_with_retryable_errors_are_retried() {
    use rowkit_statemachines::{Code, StoreError};
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        let mut m = migrator(&mut w, migrate_options(Gates::ALL));
        let (mut faulted, mut retried) = (0u32, 0u32);
        let mut last_faulted: Option<Request> = None;
        let out = loop {
            while m.poll_event().is_some() {}
            if let Some(result) = m.result() {
                break result.unwrap();
            }
            let Some((tag, request)) = m.poll_request() else {
                let at = m.poll_timeout().expect("the machine waits on nothing");
                w.now = Timestamp(w.now.0.max(at.0));
                m.handle_timeout(w.now);
                continue;
            };
            w.now = Timestamp(w.now.0 + 10_000);
            let marker_cas = matches!(&request,
                Request::CheckAndMutateRow(c) if c.row_key == b":rk:m:0000000000:");
            if marker_cas && last_faulted.as_ref() == Some(&request) {
                retried += 1;
            } else if marker_cas {
                faulted += 1;
                last_faulted = Some(request.clone());
                let error = if faulted % 2 == 1 {
                    StoreError::new(Code::Unavailable, "connection reset")
                } else {
                    let _applied = store_responses(&w.store, request, w.now);
                    StoreError::new(Code::DeadlineExceeded, "reply lost")
                };
                m.handle_response(tag, Err(error), w.now);
                continue;
            }
            for part in store_responses(&w.store, request, w.now) {
                m.handle_response(tag, part, w.now);
            }
        };
        assert_eq!(out.end, TraceMigrateEnd::Cleaned, "{from:?}");
        assert!(faulted >= 6, "{from:?}: {faulted}");
        assert_eq!(retried, faulted.div_ceil(2), "{from:?}");
        assert_eq!(stored_states(&w), (Some(MigrationState::Cleaning), None));
        w.assert_target_equals_record(511);
        w.check_target_clean();
    }
}

#[test]
fn abort_deletes_the_target_rows_and_both_markers() {
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        let source_rows = w.rows(T1);
        let m = migrator(&mut w, migrate_options(Gates::default()));
        assert_eq!(
            w.run(m).unwrap().end,
            TraceMigrateEnd::InState(MigrationState::Verifying)
        );
        assert!(!w.rows(T2).is_empty());
        let m = migrator(
            &mut w,
            TraceMigrateOptions {
                abort: true,
                ..migrate_options(Gates::default())
            },
        );
        let out = w.run(m).unwrap();
        assert_eq!(out.end, TraceMigrateEnd::Removed);
        assert!(w.rows(T2).is_empty(), "{from:?}");
        assert_eq!(
            w.rows(T1),
            source_rows,
            "the source is as the Gold writers left it"
        );
        // Nothing left to abort.
        let m = migrator(
            &mut w,
            TraceMigrateOptions {
                abort: true,
                ..migrate_options(Gates::default())
            },
        );
        assert!(matches!(w.run(m), Err(TraceStoreError::MigrationUsage(_))));
    }
}

#[test]
fn refused_options_stop_the_run_before_the_switch() {
    let mut w = World::new(Layout::Md5);
    seed_writes(&mut w);
    w.put_with_options();
    let m = migrator(&mut w, migrate_options(Gates::ALL));
    assert!(matches!(
        w.run(m),
        Err(TraceStoreError::MigrationOptions { rows: 1, .. })
    ));
    assert_eq!(
        stored_states(&w),
        (Some(MigrationState::Copying), Some(MigrationState::Copying))
    );
    let m = migrator(
        &mut w,
        TraceMigrateOptions {
            settle_us: Some(1),
            ..migrate_options(Gates::ALL)
        },
    );
    assert!(matches!(w.run(m), Err(TraceStoreError::MigrationUsage(_))));
}

#[test]
fn finish_sweeps_stragglers_then_cleans_the_source() {
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        let ms = |n: i64| Timestamp(T0.0 + n * 1000);
        let m = migrator(
            &mut w,
            migrate_options(Gates {
                switch: true,
                finish: false,
            }),
        );
        assert_eq!(
            w.run(m).unwrap().end,
            TraceMigrateEnd::InState(MigrationState::Switched)
        );
        // A Gold writer still on T1 after the switch: a straggler, newer than T2's point.
        w.gold_put(3, &[("a", 300)], ms(80));
        let start = w.start();
        let m = MigrateTraceStore::new(w.pair(), w.to, migrate_options(Gates::ALL), start);
        let (out, events) = w.run_events(m);
        let out = out.unwrap();
        let stragglers: Vec<_> = events
            .into_iter()
            .filter_map(|e| match e {
                TraceMigrateEvent::Straggler { trace, commit, ts } => Some((trace, commit, ts)),
                _ => None,
            })
            .collect();
        assert_eq!(out.end, TraceMigrateEnd::Cleaned, "{from:?}");
        let name_a = trace_id_text(&params_from([("name", "a"), ("config", "8888")]));
        assert_eq!(stragglers, vec![(name_a, 3, ms(80))]);
        w.assert_target_equals_record(511);
        w.check_target_clean();
        // T1: its marker row only, `cleaning`, naming T2; T2: no marker row.
        let t1: Vec<Vec<u8>> = w.rows(T1).into_iter().map(|r| r.key).collect();
        assert_eq!(t1, vec![b":rk:m:0000000000:".to_vec()]);
        assert_eq!(stored_states(&w), (Some(MigrationState::Cleaning), None));
        assert_eq!(out.source_rows_left, 0);
        // A finished migration runs again with reads only.
        let before = (w.rows(T1), w.rows(T2));
        let m = migrator(&mut w, migrate_options(Gates::ALL));
        assert_eq!(w.run(m).unwrap().end, TraceMigrateEnd::Cleaned);
        assert_eq!((w.rows(T1), w.rows(T2)), before);
    }
}

#[test]
fn a_conflict_after_the_switch_is_reported_and_blocks_the_clean_up() {
    let mut w = World::new(Layout::Md5);
    seed_writes(&mut w);
    let ms = |n: i64| Timestamp(T0.0 + n * 1000);
    let m = migrator(
        &mut w,
        migrate_options(Gates {
            switch: true,
            finish: false,
        }),
    );
    assert_eq!(
        w.run(m).unwrap().end,
        TraceMigrateEnd::InState(MigrationState::Switched)
    );
    // The same ms in both tables with other digests: a native T2 write and a straggler in T1.
    let start = w.start();
    let entry = PutEntry {
        params: params_from([("name", "c"), ("config", "8888")]),
        digest: digest(400),
        ..PutEntry::default()
    };
    let put = Put::new(
        TraceStoreState::new(T2, w.to),
        4,
        None,
        vec![entry],
        ms(90),
        start,
    );
    w.run(put).unwrap();
    w.gold_put(4, &[("c", 401)], ms(90));
    let start = w.start();
    let m = MigrateTraceStore::new(w.pair(), w.to, migrate_options(Gates::ALL), start);
    let (out, events) = w.run_events(m);
    let out = out.unwrap();
    let conflicts: Vec<_> = events
        .into_iter()
        .filter_map(|e| match e {
            TraceMigrateEvent::Conflict { trace, commit, ts } => Some((trace, commit, ts)),
            _ => None,
        })
        .collect();
    let name_c = trace_id_text(&params_from([("name", "c"), ("config", "8888")]));
    assert!(conflicts.contains(&(name_c, 4, ms(90))), "{conflicts:?}");
    assert_eq!(out.end, TraceMigrateEnd::InState(MigrationState::Cleaning));
    assert_eq!(
        out.source_rows_deleted, 0,
        "nothing of a conflict is deleted"
    );
}
