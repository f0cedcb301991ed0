//! Check and repair always end, and say what happened (issue 29): a property test over random
//! damage. Each seed builds a mount table and a triple table on the memory store, damages them
//! with raw mutations drawn from a seeded generator (undecodable permissions and mount flags,
//! deleted rows, references to missing or other incarnations, rows under another key, short
//! keys, orphans, wrong counters; triple cells moved, overwritten, cut or given another
//! timestamp), then runs `fsck --fix` / `check --fix` and asserts:
//!
//! * it ends within a bounded number of passes, never at its deadline;
//! * each finding is reported once (fsck: at most twice, when a later pass changes its state);
//! * the counts match the findings (found = fixed + left), and every detail is bounded;
//! * a check after the repair finds nothing the repair did not report as left.
// A failure is a panic naming the seed.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use rowkit_client::mounttable::{MountTable, MtConfig, server_caller};
use rowkit_client::triples::TripleStore;
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::{Mutation, RowSet, Timestamp};
use rowkit_codec::mounttable as codec;
use rowkit_codec::triples::Triple;
use rowkit_store::driver::ManualClock;
use rowkit_store::{MemoryStore, Store};
use rowkit_statemachines::check::{CheckEvent, CheckOptions, Finding, MAX_DETAIL};
use rowkit_statemachines::mounttable::{FsckSummary, MtError, MtEvent, Tables};
use rowkit_statemachines::{MutateRowRequest, ReadRowsRequest, Request, SplitMix64};

const SEEDS: u64 = 40;
/// Events (findings and pages) one run of these small tables may emit at most.
const EVENTS: u32 = 2_000;
const T0: Timestamp = Timestamp(1_700_000_000_000_000);
/// A detail's bound, with room for the "… (N bytes in all)" it ends with when cut.
const DETAIL_BYTES: usize = MAX_DETAIL * 4 + 64;

fn write(store: &dyn Store, table: &str, key: Vec<u8>, mutations: Vec<Mutation>) {
    let request = Request::MutateRow(MutateRowRequest {
        table: table.into(),
        row_key: key,
        mutations,
        ..MutateRowRequest::default()
    });
    store.execute(request, T0).unwrap();
}

fn set(family: &str, qualifier: &[u8], value: &[u8]) -> Mutation {
    Mutation::SetCell {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        timestamp: Timestamp::from_millis(T0.0 / 1000),
        value: value.to_vec(),
    }
}

fn keys(store: &dyn Store, table: &str) -> Vec<Vec<u8>> {
    let request = ReadRowsRequest {
        table: table.into(),
        rows: RowSet::all(),
        ..Default::default()
    };
    rowkit_client::read_rows_blocking(store, request, T0)
        .unwrap()
        .into_iter()
        .map(|r| r.key)
        .collect()
}

fn pick<'a, T>(rng: &mut SplitMix64, items: &'a [T]) -> &'a T {
    &items[(rng.next_u64() % items.len() as u64) as usize]
}

/// Random damage to the mount table `mt` (nodes) and `mt-counters`.
fn damage_mount_table(store: &dyn Store, rng: &mut SplitMix64) {
    let nodes = keys(store, "mt");
    for _ in 0..1 + rng.next_u64() % 6 {
        let key = pick(rng, &nodes).clone();
        match rng.next_u64() % 9 {
            0 => write(store, "mt", key, vec![set("m", b"p", b"not json")]),
            1 => write(store, "mt", key, vec![Mutation::DeleteFromRow]),
            2 => write(store, "mt", key, vec![set("c", b"XXXXXXXXghost", &[1])]),
            3 => {
                // The row copied under another key (a wrong hash).
                let mut wrong = key.clone();
                wrong[..8].copy_from_slice(b"00000000");
                write(store, "mt", wrong, vec![set("m", b"i", b"abcdefgh")]);
            }
            4 => write(store, "mt", b"short".to_vec(), vec![set("m", b"x", b"1")]),
            5 => {
                let orphan = codec::row_key(&format!("orphan{}", rng.next_u64() % 5));
                write(
                    store,
                    "mt",
                    orphan,
                    vec![set("m", b"i", b"ORPHANID"), set("c", b"IDIDIDIDkid", &[1])],
                );
            }
            6 => write(
                store,
                "mt",
                key,
                vec![set("s", b"/1.2.3.4:5/x", b"{bad flags")],
            ),
            7 => write(
                store,
                "mt-counters",
                codec::counter_row_key(codec::CounterKind::Nodes, codec::SERVER_USER),
                vec![set("m", b"c", &99i64.to_be_bytes())],
            ),
            _ => write(
                store,
                "mt-counters",
                b"num-servers-per-user:nobody".to_vec(),
                vec![set("m", b"c", b"garbage")],
            ),
        }
    }
}

/// One fsck finding as reported: row, kind, fixed.
type Reported = (Vec<u8>, &'static str, bool);

/// One fsck run: its result and its findings.
fn fsck(
    t: &MountTable<SyncDriver<&dyn Store, &ManualClock>>,
    fix: bool,
    seed: u64,
) -> (FsckSummary, Vec<Reported>) {
    let mut findings = Vec::new();
    let mut events = 0u32;
    let result = block_on(t.fsck(fix, |e| {
        // A run that does not end fails here rather than hanging (the clock never reaches
        // the deadline): no table of this test needs that many events.
        events += 1;
        assert!(events < EVENTS, "seed {seed}: fsck fix={fix} does not end");
        if let MtEvent::FsckFinding {
            row_key,
            kind,
            fixed,
            detail,
        } = e
        {
            assert!(detail.len() <= DETAIL_BYTES, "seed {seed}: {detail}");
            findings.push((row_key, kind.name(), fixed));
        }
    }));
    let summary = match result {
        Ok(s) | Err(MtError::FsckInconsistent(s)) => s,
        Err(e) => panic!("seed {seed}: fsck fix={fix}: {e}"),
    };
    (summary, findings)
}

#[test]
fn fsck_fix_ends_and_reports_each_finding_once_over_random_damage() {
    let mut kinds_seen = BTreeSet::new();
    let mut counters_seen = false;
    for seed in 0..SEEDS {
        let store = MemoryStore::new();
        let clock = ManualClock::new(T0);
        let config = MtConfig {
            tables: Tables::new("mt"),
            gc_grace_us: 0,
            ..MtConfig::default()
        };
        let t = MountTable::new(SyncDriver::new(&store as &dyn Store, &clock), config);
        block_on(t.setup(None)).unwrap();
        let mut rng = SplitMix64::new(seed);
        for i in 0..6 + rng.next_u64() % 6 {
            let name = format!("a{}/b{}", i % 3, i);
            block_on(t.mount(&server_caller(), &name, "/127.0.0.1:8000/x", 600, 0)).unwrap();
        }
        damage_mount_table(&store, &mut rng);

        let (summary, findings) = fsck(&t, true, seed);
        assert!(summary.passes <= 4, "seed {seed}: {summary:?}");
        kinds_seen.extend(findings.iter().map(|(_, kind, _)| *kind));
        counters_seen |= !summary.counters.is_empty();
        let mut times: BTreeMap<(Vec<u8>, &str), u32> = BTreeMap::new();
        for (row, kind, _) in &findings {
            *times.entry((row.clone(), kind)).or_default() += 1;
        }
        assert!(
            times.values().all(|&n| n <= 2),
            "seed {seed}: a finding reported more than twice: {findings:?}"
        );
        assert_eq!(
            summary.inconsistent as usize,
            summary.fixed.len() + summary.left.len(),
            "seed {seed}: {summary:?}"
        );
        // After the repair, fsck finds only what the repair reported as left.
        let left: BTreeSet<&Vec<u8>> = summary.left.iter().chain(&summary.undecodable).collect();
        let (after, again) = fsck(&t, false, seed);
        assert_eq!(
            after.counters,
            Vec::new(),
            "seed {seed}: counters left after the rebuild"
        );
        for (row, kind, _) in &again {
            assert!(
                left.contains(row),
                "seed {seed}: {kind} at {row:?} found after a repair that did not leave it: first {findings:?}"
            );
        }
    }
    // The damage reached every kind, the undecodable child's store error included.
    let all: BTreeSet<&str> = [
        "orphan",
        "dangling",
        "undecodable",
        "store_error",
        "wrong_key",
    ]
    .into();
    assert_eq!(kinds_seen, all);
    assert!(counters_seen, "no seed damaged a counter");
}

/// Random damage to the triple table `badwolf` of graph `g`.
fn damage_triples(store: &dyn Store, rng: &mut SplitMix64) {
    let rows = keys(store, "badwolf");
    for _ in 0..1 + rng.next_u64() % 5 {
        let key = pick(rng, &rows).clone();
        match rng.next_u64() % 6 {
            0 => write(store, "badwolf", key, vec![Mutation::DeleteFromRow]),
            1 => write(
                store,
                "badwolf",
                key,
                vec![set("immutable_triple", b"SP", b"not a triple")],
            ),
            2 => write(
                store,
                "badwolf",
                key,
                vec![set("temporal_triple", b"PO", &vec![b'z'; 5000])],
            ),
            3 => write(
                store,
                "badwolf",
                b"graph:g".to_vec(),
                vec![Mutation::DeleteFromRow],
            ),
            4 => write(
                store,
                "badwolf",
                b"g:XYZ:junk".to_vec(),
                vec![set("immutable_triple", b"SP", b"x")],
            ),
            _ => {
                // Another triple's text in this row's cells.
                let text = b"/u<q>\t\"r\"@[]\t/u<s>";
                write(
                    store,
                    "badwolf",
                    key,
                    vec![set("immutable_triple", b"SP", text)],
                );
            }
        }
    }
}

fn check(
    ts: &TripleStore<SyncDriver<&dyn Store, &ManualClock>>,
    fix: bool,
    seed: u64,
) -> Vec<Finding> {
    let options = CheckOptions {
        fix,
        grace_micros: 0,
        page_rows: 7,
        ..CheckOptions::default()
    };
    let mut findings = Vec::new();
    let mut events = 0u32;
    let summary = block_on(ts.check(None, options, 60_000_000, |e| {
        events += 1;
        assert!(events < EVENTS, "seed {seed}: check fix={fix} does not end");
        if let CheckEvent::Finding(f) = e {
            assert!(f.detail.len() <= DETAIL_BYTES, "seed {seed}: {}", f.detail);
            findings.push(f);
        }
    }))
    .unwrap_or_else(|e| panic!("seed {seed}: check fix={fix}: {e}"));
    assert_eq!(
        summary.findings() as usize,
        findings.len(),
        "seed {seed}: {summary:?}"
    );
    assert_eq!(
        summary.repaired as usize,
        findings.iter().filter(|f| f.repaired).count()
    );
    findings
}

#[test]
fn triple_check_fix_ends_and_leaves_only_what_it_reports_left_over_random_damage() {
    let mut kinds_seen = BTreeSet::new();
    for seed in 0..SEEDS {
        let store = MemoryStore::new();
        let clock = ManualClock::new(T0);
        let ts = TripleStore::new(SyncDriver::new(&store as &dyn Store, &clock));
        block_on(ts.setup()).unwrap();
        let graph = block_on(ts.new_graph(b"g")).unwrap();
        let triples: Vec<Triple> = [
            "/u<a>\t\"knows\"@[]\t/u<b>",
            "/u<a>\t\"met\"@[2017-10-01T12:00:00.000000001Z]\t/u<b>",
            "/u<b>\t\"knows\"@[]\t/u<c>",
            "/u<c>\t\"met\"@[2017-10-01T12:00:00.000000002Z]\t/u<a>",
        ]
        .iter()
        .map(|t| Triple::parse(t.as_bytes()).unwrap())
        .collect();
        block_on(graph.add_triples(triples)).unwrap();
        let mut rng = SplitMix64::new(seed);
        damage_triples(&store, &mut rng);

        let fixed = check(&ts, true, seed);
        kinds_seen.extend(fixed.iter().map(|f| f.kind));
        let left: BTreeSet<(&str, &Vec<u8>)> = fixed
            .iter()
            .filter(|f| !f.repaired)
            .map(|f| (f.kind, &f.row_key))
            .collect();
        let again = check(&ts, false, seed);
        for f in &again {
            assert!(
                left.contains(&(f.kind, &f.row_key)),
                "seed {seed}: {} at {:?} found after a repair that did not leave it; the repair reported {fixed:?}",
                f.kind,
                f.row_key
            );
        }
    }
    eprintln!("kinds seen: {kinds_seen:?}");
    for kind in [
        "missing_index",
        "undecodable_cell",
        "graph_without_metadata",
        "undecodable_key",
    ] {
        assert!(
            kinds_seen.contains(kind),
            "{kind} never produced: {kinds_seen:?}"
        );
    }
}
