#![allow(clippy::unwrap_used)]
//! The trace store's migration (`docs/migration.md` §5) against a real `MemoryStore` with a
//! manual clock: the driver executes each request as it leaves (10 ms per request). The source
//! table is written by the existing `Put` machine in the `from` layout, on states that never
//! read a marker (Gold writers); what the target must hold comes from the test's own record of
//! those writes (the newest `ts` of each point wins, the last write at an equal `ts`), read back
//! through `ReadRange` and through the stored cells, never from the migrator.

use std::collections::BTreeMap;

use rowkit_codec::migration::{
    DEFAULT_SETTLE_US, Gates, MarkerRole, MigrationCheckpoint, MigrationState, OptionsPolicy,
    PassCounters, RunId,
};
use rowkit_codec::model::{Row, Timestamp};
use rowkit_codec::tracestore::cells::{COLUMN_OPS, FAMILY_OPS, FAMILY_TRACE, cell_to_digest};
use rowkit_codec::tracestore::keys::{
    RowType, decode_row_key, extract_subkey, ops_row_name, parse_trace_qualifier,
    repo_index_position,
};
use rowkit_codec::tracestore::migration::{TraceMarkerChange, TraceMigrationMarker};
use rowkit_codec::tracestore::ops::{params_from, trace_id_text};
use rowkit_codec::tracestore::{Layout, decode_ops_gob};
use rowkit_statemachines::check::{CheckOptions, CheckTarget};
use rowkit_statemachines::objmeta::migrate::pass::{PassFinding, PassProgress};
use rowkit_statemachines::operation::{ContextArg, Start};
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
use rowkit_statemachines::{Machine, Request};
use rowkit_store::{MemoryStore, Store};
use rowkit_testkit::script::{StoreWorld, store_responses};

const T1: &str = "gold";
const T2: &str = "gold2";
const T0: Timestamp = Timestamp(1_764_428_400_000_000);

/// A point's key in the test's record: trace id text and repo index.
type PointKey = (String, u32);

struct World {
    /// The store and the clock (each request executed as it leaves, 10 ms apart).
    world: StoreWorld,
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
            world: StoreWorld::new(store, T0),
            from,
            to,
            expected: BTreeMap::new(),
        }
    }

    fn start(&mut self) -> Start {
        self.world.start()
    }

    fn pair(&self) -> TablePair {
        TablePair::new(
            TraceStoreState::new(T1, self.from),
            TraceStoreState::new(T2, self.to),
        )
    }

    /// Executes one request of `m` at the next tick, or fires its timer.
    fn step<M: Machine>(&mut self, m: &mut M) -> usize {
        self.world.step(m)
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
        let from = self.from;
        self.gold_put_into(T1, from, repo_index, entries, ts);
    }

    /// A Gold writer's Put into `table` (of `layout`, a fresh state), recorded when
    /// acknowledged.
    fn gold_put_into(
        &mut self,
        table: &str,
        layout: Layout,
        repo_index: u32,
        entries: &[(&str, u64)],
        ts: Timestamp,
    ) {
        self.put_on(TraceStoreState::new(table, layout), repo_index, entries, ts);
    }

    /// A Put of `points` on `state` (a Gold writer's or an aware process's), run alone to
    /// its end and recorded when acknowledged.
    fn put_on<'s>(
        &mut self,
        state: impl Into<ContextArg<'s, TraceStoreState>>,
        repo_index: u32,
        points: &[(&str, u64)],
        ts: Timestamp,
    ) {
        let entries = entries_of(points);
        let start = self.start();
        let put = Put::new(
            state,
            i64::from(repo_index),
            None,
            entries.clone(),
            ts,
            start,
        );
        self.run(put).unwrap();
        self.record(repo_index, entries, ts);
    }

    /// Records an acknowledged Put: a point's newest `ts` wins, the last write at an equal one.
    fn record(&mut self, repo_index: u32, entries: Vec<PutEntry>, ts: Timestamp) {
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
        self.world.snapshot(table).into_values().collect()
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
        self.read_range_on(TraceStoreState::new(table, layout), first, last)
    }

    /// Every trace of commits `first ..= last` through `ReadRange` on `state` (a fresh one,
    /// or an aware process's): point → digest.
    fn read_range_on<'s>(
        &mut self,
        state: impl Into<ContextArg<'s, TraceStoreState>>,
        first: u32,
        last: u32,
    ) -> BTreeMap<PointKey, String> {
        let start = self.start();
        let range = ReadRange::new(state, i64::from(first), i64::from(last), start);
        let tile = self.run(range).unwrap();
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

/// A state of a migration-aware process on `table` (the client facade's).
fn aware_state(table: &str, layout: Layout) -> TraceStoreState {
    let mut state = TraceStoreState::new(table, layout);
    state.config.migration_aware = true;
    state
}

/// The entries of a test Put: trace `name` (config 8888) with digest `digest(d)`.
fn entries_of(points: &[(&str, u64)]) -> Vec<PutEntry> {
    points
        .iter()
        .map(|(name, d)| PutEntry {
            params: params_from([("name", *name), ("config", "8888")]),
            digest: digest(*d),
            ..PutEntry::default()
        })
        .collect()
}

#[test]
fn an_aware_put_is_mirrored_with_its_timestamp_and_reads_follow_the_truth() {
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        let ms = |n: i64| Timestamp(T0.0 + n * 1000);
        let m = migrator(&mut w, migrate_options(Gates::default()));
        assert_eq!(
            w.run(m).unwrap().end,
            TraceMigrateEnd::InState(MigrationState::Verifying)
        );
        // Before the switch: on T1 (the truth), mirrored on T2 with the same `ts`.
        let mut on_t1 = aware_state(T1, from);
        w.put_on(&mut on_t1, 5, &[("a", 400), ("z", 401)], ms(90));
        let name = |n: &str| trace_id_text(&params_from([("name", n), ("config", "8888")]));
        let want = (digest(400), ms(90));
        assert_eq!(w.stored_points(T1, from)[&(name("a"), 5)], want);
        assert_eq!(w.stored_points(T2, w.to)[&(name("a"), 5)], want, "{from:?}");
        assert_eq!(w.stored_points(T1, from), w.expected);
        assert_eq!(w.stored_points(T2, w.to), w.expected);
        // A process on T2 reads the truth, T1: a Gold write into T1 only is seen there.
        w.gold_put(6, &[("b", 402)], ms(91));
        let mut on_t2 = aware_state(T2, w.to);
        let read = w.read_range_on(&mut on_t2, 0, 767);
        assert_eq!(read.get(&(name("b"), 6)), Some(&digest(402)), "{from:?}");
        let t1 = w.read_range(T1, from, 0, 767);
        assert_eq!(read, t1);
        // The switch (Gold writers stopped): now T2 is the truth, T1 the mirror.
        let m = migrator(&mut w, migrate_options(SWITCH));
        assert_eq!(
            w.run(m).unwrap().end,
            TraceMigrateEnd::InState(MigrationState::Switched)
        );
        w.put_on(&mut on_t1, 7, &[("c", 403)], ms(92));
        let want = (digest(403), ms(92));
        assert_eq!(w.stored_points(T2, w.to)[&(name("c"), 7)], want);
        assert_eq!(w.stored_points(T1, from)[&(name("c"), 7)], want);
        // A point only T2 holds (a Gold writer restarted on T2) is what aware reads on T1 see.
        let start = w.start();
        let native = Put::new(
            TraceStoreState::new(T2, w.to),
            8,
            None,
            entries_of(&[("d", 404)]),
            ms(93),
            start,
        );
        w.run(native).unwrap();
        w.record(8, entries_of(&[("d", 404)]), ms(93));
        let read = w.read_range_on(&mut on_t1, 0, 767);
        assert_eq!(read.get(&(name("d"), 8)), Some(&digest(404)), "{from:?}");
        assert!(!w.read_range(T1, from, 0, 767).contains_key(&(name("d"), 8)));
        w.assert_target_equals_record(767);
        w.check_target_clean();
    }
}

#[test]
fn a_mirror_that_fails_does_not_fail_the_put() {
    let mut w = World::new(Layout::Md5);
    seed_writes(&mut w);
    let m = migrator(&mut w, migrate_options(Gates::default()));
    w.run(m).unwrap();
    Store::delete_table(&w.world.store, T2).unwrap();
    let mut on_t1 = aware_state(T1, Layout::Md5);
    let ts = Timestamp(T0.0 + 95_000);
    w.put_on(&mut on_t1, 9, &[("e", 500)], ts);
    assert_eq!(w.stored_points(T1, Layout::Md5), w.expected);
}

/// Steps `m` once unless it ended; its result once it did.
fn step_or_result<M: Machine>(w: &mut World, m: &mut M) -> Option<Result<M::Output, M::Error>> {
    while m.poll_event().is_some() {}
    if let Some(result) = m.result() {
        return Some(result);
    }
    w.step(m);
    None
}

#[test]
fn an_aware_put_in_a_fence_pauses_and_goes_on_after_the_switch() {
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        let m = migrator(&mut w, migrate_options(Gates::default()));
        w.run(m).unwrap();
        let mut switch = migrator(&mut w, migrate_options(SWITCH));
        while stored_states(&w).0 != Some(MigrationState::Switching) {
            assert!(step_or_result(&mut w, &mut switch).is_none());
        }
        let ts = Timestamp(T0.0 + 100_000);
        let entries = entries_of(&[("f", 600)]);
        let key = (
            trace_id_text(&params_from([("name", "f"), ("config", "8888")])),
            10,
        );
        let mut on_t1 = aware_state(T1, from);
        let start = w.start();
        let mut put = Put::new(&mut on_t1, 10, None, entries.clone(), ts, start);
        // Put and migrator interleaved: the Put writes nothing while the fence stands.
        let mut put_steps = 0;
        let mut switched = None;
        let acknowledged = loop {
            if switched.is_none() {
                switched = step_or_result(&mut w, &mut switch);
            }
            let fenced = stored_states(&w).0 == Some(MigrationState::Switching);
            if let Some(result) = step_or_result(&mut w, &mut put) {
                break result;
            }
            put_steps += 1;
            if fenced {
                assert!(!w.stored_points(T1, from).contains_key(&key), "{from:?}");
                assert!(!w.stored_points(T2, w.to).contains_key(&key), "{from:?}");
            }
        };
        acknowledged.unwrap();
        assert!(put_steps > 3, "the Put read the marker again while paused");
        assert_eq!(
            stored_states(&w).0,
            Some(MigrationState::Switched),
            "acknowledged after the switch"
        );
        w.record(10, entries, ts);
        // On T2 (the new truth), mirrored on T1.
        assert_eq!(w.stored_points(T2, w.to)[&key], (digest(600), ts));
        assert_eq!(w.stored_points(T1, from)[&key], (digest(600), ts));
        while switched.is_none() {
            switched = step_or_result(&mut w, &mut switch);
        }
        assert_eq!(
            switched.unwrap().unwrap().end,
            TraceMigrateEnd::InState(MigrationState::Switched)
        );
        w.assert_target_equals_record(767);
    }
}

#[test]
fn aware_writers_beside_a_whole_migration_leave_every_point_in_the_target() {
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        // No gate waits for aware writers: one run goes through to the end while they write.
        // They write in bursts (300 of every 1000 migrator requests): a verification pass
        // finds differences while points land behind its reads of T1 (§4.5), so writes on
        // every request would keep it from ever ending clean.
        let mut run = migrator(&mut w, migrate_options(Gates::ALL));
        let mut writer = aware_state(T1, from);
        let (mut n, mut k): (u64, u64) = (0, 0);
        let outcome = loop {
            assert!(k < 2_000_000, "the run ended");
            if k % 1000 >= 300 {
                k += 1;
                match step_or_result(&mut w, &mut run) {
                    Some(ended) => break ended.unwrap(),
                    None => continue,
                }
            }
            // One aware Put, interleaved request by request with the migrator.
            let i = (n % 4) as usize;
            let entries = entries_of(&[(["a", "b", "g", "h"][i], 1000 + n)]);
            let commit = [3u32, 4, 260, 700][i];
            let ts = Timestamp(T0.0 + 200_000 + i64::try_from(n).unwrap() * 1000);
            let start = w.start();
            let mut put = Put::new(
                &mut writer,
                i64::from(commit),
                None,
                entries.clone(),
                ts,
                start,
            );
            let mut ended = None;
            let done = loop {
                if ended.is_none() {
                    while run.poll_event().is_some() {}
                    ended = run.result();
                }
                while put.poll_event().is_some() {}
                if let Some(result) = put.result() {
                    break result;
                }
                // One request of each in turn. The clock moves to a timer only when both wait
                // on one, the earlier firing: jumping it over the Put's requests (to the end
                // of the migrator's settle wait, say) would age the Put past its deadline,
                // which real time does not (its requests take milliseconds).
                let running = ended.is_none();
                let mut sent = false;
                if running && let Some((tag, request)) = run.poll_request() {
                    k += 1;
                    w.world.execute(&mut run, tag, request);
                    sent = true;
                }
                if let Some((tag, request)) = put.poll_request() {
                    w.world.execute(&mut put, tag, request);
                    sent = true;
                }
                if sent {
                    continue;
                }
                let run_at = if running { run.poll_timeout() } else { None };
                match (run_at, put.poll_timeout()) {
                    (Some(a), Some(b)) if a < b => {
                        k += 1;
                        w.world.fire_timer(&mut run);
                    }
                    (_, Some(_)) => w.world.fire_timer(&mut put),
                    (Some(_), None) => {
                        k += 1;
                        w.world.fire_timer(&mut run);
                    }
                    (None, None) => panic!("neither the migrator nor the Put waits on anything"),
                }
            };
            done.unwrap();
            w.record(commit, entries, ts);
            n += 1;
            if let Some(ended) = ended {
                break ended.unwrap();
            }
        };
        assert_eq!(outcome.end, TraceMigrateEnd::Cleaned, "{from:?}");
        assert!(n > 20, "{n} writes beside the run");
        // After the clean-up the writer's table is the forwarding note: its Puts go to T2.
        let ts = Timestamp(T0.0 + 900_000_000);
        w.put_on(&mut writer, 5, &[("a", 9999)], ts);
        let t1: Vec<Vec<u8>> = w.rows(T1).into_iter().map(|r| r.key).collect();
        assert_eq!(t1, vec![b":rk:m:0000000000:".to_vec()]);
        w.assert_target_equals_record(767);
        w.check_target_clean();
    }
}

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
    let _applied = store_responses(&w.world.store, request, w.world.now);
    m.handle_response(
        tag,
        Err(rowkit_statemachines::StoreError::new(
            rowkit_statemachines::Code::Unavailable,
            "lost",
        )),
        w.world.now,
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
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        let m = migrator(&mut w, migrate_options(Gates::ALL));
        let (result, faulted, retried) = w.world.run_failing_first_sends(m, |request| {
            matches!(request,
                Request::CheckAndMutateRow(c) if c.row_key == b":rk:m:0000000000:")
        });
        let out = result.unwrap();
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

// ---------------------------------------------------------------------------------------------
// Rollback of `switched`, the check before the switch, `write_after_switch` (§5.5, §5.9, §6.3,
// §8)
// ---------------------------------------------------------------------------------------------

/// T2 as the source and T1 as the target: the tables of the swapped run (§5.9).
fn swapped_pair(w: &World) -> TablePair {
    TablePair::new(
        TraceStoreState::new(T2, w.to),
        TraceStoreState::new(T1, w.from),
    )
}

/// Writes one cell into `row` of `table` directly, as damage no writer leaves.
fn plant_row(w: &mut World, table: &str, row: &[u8]) {
    let request = Request::MutateRow(rowkit_statemachines::MutateRowRequest {
        table: table.into(),
        app_profile_id: String::new(),
        row_key: row.to_vec(),
        mutations: vec![rowkit_codec::model::Mutation::SetCell {
            family: "O".into(),
            qualifier: b"junk".to_vec(),
            timestamp: Timestamp(0),
            value: b"1".to_vec(),
        }],
    });
    for part in store_responses(&w.world.store, request, w.world.now) {
        part.unwrap();
    }
}

/// Deletes `row` of `table` directly.
fn delete_row(w: &mut World, table: &str, row: &[u8]) {
    let request = Request::MutateRow(rowkit_statemachines::MutateRowRequest {
        table: table.into(),
        app_profile_id: String::new(),
        row_key: row.to_vec(),
        mutations: vec![rowkit_codec::model::Mutation::DeleteFromRow],
    });
    for part in store_responses(&w.world.store, request, w.world.now) {
        part.unwrap();
    }
}

/// The check of `table` (of `layout`): its findings as (kind, row key).
fn check_findings(w: &mut World, table: &str, layout: Layout) -> Vec<(&'static str, Vec<u8>)> {
    let start = w.start();
    let mut m = Check::new(
        CheckTarget::new(table),
        layout,
        CheckOptions::default(),
        start,
    );
    let mut found = Vec::new();
    loop {
        while let Some(e) = m.poll_event() {
            if let rowkit_statemachines::check::CheckEvent::Finding(f) = e {
                found.push((f.kind, f.row_key));
            }
        }
        if let Some(result) = m.result() {
            result.unwrap();
            return found;
        }
        w.step(&mut m);
    }
}

/// Runs the migrator of T1 into T2 to `switched` (its sweep included).
fn run_to_switched(w: &mut World) {
    let switch = Gates {
        switch: true,
        finish: false,
    };
    let m = migrator(w, migrate_options(switch));
    assert_eq!(
        w.run(m).unwrap().end,
        TraceMigrateEnd::InState(MigrationState::Switched)
    );
}

#[test]
fn rollback_of_switched_runs_the_swapped_run_and_t1_ends_the_truth() {
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        let ms = |n: i64| Timestamp(T0.0 + n * 1000);
        run_to_switched(&mut w);
        // Gold writers restarted on T2 write there only (no aware writer mirrors them).
        let to = w.to;
        w.gold_put_into(T2, to, 5, &[("e", 500)], ms(100));
        w.gold_put_into(T2, to, 4, &[("a", 501)], ms(101));
        // A Gold writer still on T1 after the last sweep: newer than T2's point there.
        w.gold_put(511, &[("d", 502)], ms(102));
        let before = (w.rows(T1), w.rows(T2));

        // Without --switch: refused, nothing written.
        let start = w.start();
        let m = MigrateTraceStore::new(
            swapped_pair(&w),
            from,
            migrate_options(Gates::default()),
            start,
        );
        let error = w.run(m).unwrap_err();
        assert!(
            matches!(error, TraceStoreError::MigrationUsage(_)),
            "{error}"
        );
        assert_eq!((w.rows(T1), w.rows(T2)), before);

        let start = w.start();
        let m = MigrateTraceStore::new(swapped_pair(&w), from, migrate_options(Gates::ALL), start);
        let (out, events) = w.run_events(m);
        let out = out.unwrap();
        assert_eq!(out.end, TraceMigrateEnd::Cleaned, "{from:?}");
        let changes: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                TraceMigrateEvent::StateChanged { from, to } => Some((*from, *to)),
                _ => None,
            })
            .collect();
        use MigrationState::*;
        assert_eq!(
            changes,
            vec![
                (Some(Switched), Some(Switching)),
                (Some(Switching), Some(Switched)),
                (Some(Switched), Some(Cleaning)),
            ]
        );
        // T1 is the truth: every acknowledged point, the newest `ts` of each, from both tables.
        assert_eq!(w.stored_points(T1, from), w.expected, "{from:?}");
        let want: BTreeMap<PointKey, String> = w
            .expected
            .iter()
            .map(|(k, (d, _))| (k.clone(), d.clone()))
            .collect();
        assert_eq!(w.read_range(T1, from, 0, 511), want);
        // T1: no marker row; T2: its marker row only, `cleaning`, naming T1 (§5.9, §12.52).
        assert!(w.rows(T1).iter().all(|r| r.key != b":rk:m:0000000000:"));
        let t2: Vec<Vec<u8>> = w.rows(T2).into_iter().map(|r| r.key).collect();
        assert_eq!(t2, vec![b":rk:m:0000000000:".to_vec()]);
        let marker =
            TraceMigrationMarker::from_json_bytes(&marker_cells(&w, T2)[b"marker".as_slice()])
                .unwrap();
        assert_eq!(
            (marker.state, marker.role, marker.from, marker.to),
            (Cleaning, Some(MarkerRole::Source), w.to, from)
        );
        assert_eq!(
            (
                marker.source_table.as_deref(),
                marker.target_table.as_deref()
            ),
            (Some(T2), Some(T1))
        );
        assert_eq!(check_findings(&mut w, T1, from), vec![]);
    }
}

#[test]
fn a_rollback_dropped_after_any_response_resumes_from_its_markers() {
    let mut w = World::new(Layout::Md5);
    seed_writes(&mut w);
    let ms = |n: i64| Timestamp(T0.0 + n * 1000);
    run_to_switched(&mut w);
    let to = w.to;
    w.gold_put_into(T2, to, 5, &[("e", 500)], ms(100));
    for crash in 1.. {
        let start = w.start();
        let m = MigrateTraceStore::new(
            swapped_pair(&w),
            Layout::Md5,
            migrate_options(Gates::ALL),
            start,
        );
        if w.run_until_crash(m, crash) {
            break;
        }
    }
    assert_eq!(w.stored_points(T1, Layout::Md5), w.expected);
    assert_eq!(stored_states(&w), (None, Some(MigrationState::Cleaning)));
}

#[test]
fn the_check_before_the_switch_blocks_on_a_damage_only_the_target_has() {
    let mut w = World::new(Layout::Md5);
    seed_writes(&mut w);
    // Damage the copy cannot have made: one row in T2 only, one in both tables.
    plant_row(&mut w, T2, b"zz:only-in-target");
    plant_row(&mut w, T1, b"yy:in-both");
    plant_row(&mut w, T2, b"yy:in-both");
    let switch = Gates {
        switch: true,
        finish: false,
    };
    let m = migrator(&mut w, migrate_options(switch));
    let (out, events) = w.run_events(m);
    let Err(TraceStoreError::MigrationBlocked { findings }) = &out else {
        panic!("{out:?}");
    };
    let judged = |findings: &[PassFinding]| -> Vec<(Vec<u8>, bool)> {
        findings
            .iter()
            .map(|f| match f {
                PassFinding::Check {
                    finding,
                    source_own,
                } => (finding.row_key.clone(), *source_own),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(
        judged(findings),
        vec![
            (b"yy:in-both".to_vec(), true),
            (b"zz:only-in-target".to_vec(), false)
        ]
    );
    let reported: Vec<PassFinding> = events
        .into_iter()
        .filter_map(|e| match e {
            TraceMigrateEvent::Finding(f) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(&reported, findings);
    // Nothing of the switch written.
    assert_eq!(
        stored_states(&w),
        (
            Some(MigrationState::Verifying),
            Some(MigrationState::Verifying)
        )
    );
    // Once the target's own damage is gone the switch goes ahead; the shared one is reported.
    delete_row(&mut w, T2, b"zz:only-in-target");
    let m = migrator(&mut w, migrate_options(switch));
    let out = w.run(m).unwrap();
    assert_eq!(out.end, TraceMigrateEnd::InState(MigrationState::Switched));
    assert_eq!(judged(&out.findings), vec![(b"yy:in-both".to_vec(), true)]);
}

#[test]
fn check_reports_a_write_after_the_switch_that_the_target_lacks() {
    for from in [Layout::Md5, Layout::DigestId] {
        let mut w = World::new(from);
        seed_writes(&mut w);
        let ms = |n: i64| Timestamp(T0.0 + n * 1000);
        run_to_switched(&mut w);
        assert_eq!(check_findings(&mut w, T1, from), vec![]);
        // A straggler in T1; and one T2 supersedes (a newer native write at that column).
        w.gold_put(3, &[("a", 300)], ms(80));
        w.gold_put(3, &[("b", 301)], ms(50));
        let to = w.to;
        w.gold_put_into(T2, to, 3, &[("b", 302)], ms(81));
        let found = check_findings(&mut w, T1, from);
        assert_eq!(found.len(), 1, "{from:?}: {found:?}");
        assert_eq!(found[0].0, "write_after_switch");
        let key = decode_row_key(&found[0].1).unwrap();
        assert_eq!(
            (key.row_type, key.tile_key),
            (RowType::Trace, tile_key_of(3))
        );
        // The trace row of the finding is name=a's: its params through T1's OPS.
        let ops_row = w
            .rows(T1)
            .into_iter()
            .find(|r| r.key == ops_row_name(tile_key_of(3)))
            .unwrap();
        let ops = ops_row
            .cells
            .iter()
            .filter(|c| c.qualifier == COLUMN_OPS)
            .max_by_key(|c| c.timestamp)
            .unwrap();
        let params = decode_ops_gob(&ops.value)
            .unwrap()
            .decode_params(extract_subkey(&found[0].1))
            .unwrap();
        assert_eq!(params, params_from([("name", "a"), ("config", "8888")]));
        // The next sweep adopts it: nothing left to report.
        run_to_switched(&mut w);
        assert_eq!(check_findings(&mut w, T1, from), vec![]);
    }
}

/// A tile whose rows hold many points: one `CopyTile` writes more than Bigtable's 100,000
/// mutations per request (two per point into digest-id), so its writes are cut into chunks
/// by mutations as well as entries (found by the migration bench on the embedded store,
/// which enforces the limit as Bigtable does).
#[test]
fn copy_tile_of_rows_with_many_points_keeps_each_request_within_the_mutation_limit() {
    let mut w = World::new(Layout::Md5);
    let names: Vec<String> = (0..1700).map(|i| format!("t{i}")).collect();
    for c in 0..32u32 {
        let points: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), u64::from(c))).collect();
        w.gold_put(c, &points, Timestamp(T0.0 + i64::from(c) * 1000));
    }
    let s = w.copy_tile(tile_key_of(0), OptionsPolicy::Refuse).unwrap();
    assert_eq!(s.copied, s.points);
    assert_eq!(s.points, 1700 * 32);
    w.assert_target_equals_record(31);
    w.check_target_clean();
}
