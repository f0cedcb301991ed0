//! The machine-level vectors of `$ROWKIT_SHARED/vectors/tracestore.json`:
//! `digest_id_allocation` (whole allocation sequences over several instances sharing one
//! counter) and `digest_id_assignment` (whole AssignDigestIds calls: lookup rows, increment,
//! each insert request and its answer, re-read rows, ids and pool), replayed on the memory
//! store, with the store's answers (increment results, insert outcomes) checked against the
//! vectors. Every member of these cases is read; an unknown member or step `op` fails the test
//! naming the case (rowkit-codec's `tracestore_vectors` checks the same cases' types strictly).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rowkit_client::CallOptions;
use rowkit_client::tracestore::TraceStore;
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::{Mutation, RowFilter, RuleOp, Timestamp};
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::cells::*;
use rowkit_codec::tracestore::keys::id_counter_row_name;
use rowkit_statemachines::{MutateRowsEntry, Request, Response};
use rowkit_store::driver::ManualClock;
use rowkit_store::{MemoryStore, Store};
use rowkit_testkit::scenarios::tracestore::{self as sc, HookAction, Hooked};
use serde_json::Value;

fn vectors() -> Value {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string());
    let path = format!("{dir}/vectors/tracestore.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The cases of `kind`; fails if there are none.
fn cases(kind: &str) -> Vec<Value> {
    let cases = vectors()[kind]
        .as_array()
        .unwrap_or_else(|| panic!("{kind} is not a list"))
        .clone();
    assert!(!cases.is_empty(), "no cases in {kind}");
    cases
}

/// `v`'s members, which must all be among `known` (`what` names the case in the failure).
fn known_members(v: &Value, known: &[&str], what: &str) {
    for name in v
        .as_object()
        .unwrap_or_else(|| panic!("{what}: not an object"))
        .keys()
    {
        assert!(
            known.contains(&name.as_str()),
            "{what}: unknown member {name:?} (known: {})",
            known.join(", ")
        );
    }
}

/// Inclusive `[first, last]` ranges, in order.
fn ranges(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r[0].as_u64().unwrap()..=r[1].as_u64().unwrap())
        .collect()
}

/// A pool given as ids or inclusive `[first, last]` ranges.
fn pool_ids(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .flat_map(|e| match e {
            Value::Array(r) => r[0].as_u64().unwrap()..=r[1].as_u64().unwrap(),
            id => id.as_u64().unwrap()..=id.as_u64().unwrap(),
        })
        .collect()
}

fn set(family: &str, q: &[u8], ts: i64, value: Vec<u8>) -> Mutation {
    Mutation::SetCell {
        family: family.into(),
        qualifier: q.to_vec(),
        timestamp: Timestamp(ts),
        value,
    }
}

fn map_entry(digest: &str, id: u64) -> MutateRowsEntry {
    MutateRowsEntry {
        row_key: digest_map_row(digest).unwrap(),
        mutations: vec![set(
            "D",
            &digest_map_qualifier(digest).unwrap(),
            sc::T0,
            encode_digest_map_value(id),
        )],
    }
}

fn write_counter(store: &dyn Store, value: i64) {
    sc::raw_write(
        store,
        vec![MutateRowsEntry {
            row_key: id_counter_row_name(),
            mutations: vec![
                Mutation::DeleteFromColumn {
                    family: "I".into(),
                    qualifier: b"idc".to_vec(),
                    range: None,
                },
                set("I", b"idc", sc::T0, encode_id_counter(value)),
            ],
        }],
    );
}

fn prepare(store: &MemoryStore, counter: &Value, map: &Value) {
    sc::setup(store, Layout::DigestId);
    if let Some(c) = counter.as_i64() {
        write_counter(store, c);
    }
    let entries: Vec<_> = map
        .as_object()
        .unwrap()
        .iter()
        .map(|(d, id)| map_entry(d, id.as_u64().unwrap()))
        .collect();
    if !entries.is_empty() {
        sc::raw_write(store, entries);
    }
}

fn increments(log: &[Request]) -> Vec<i64> {
    log.iter()
        .filter_map(|r| match r {
            Request::ReadModifyWriteRow(r) => match r.rules[0].op {
                RuleOp::IncrementAmount(a) => Some(a),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The id counter's value (0 without a cell).
fn counter(store: &dyn Store) -> i64 {
    let rows = sc::raw_read(
        store,
        rowkit_codec::model::RowSet::key(id_counter_row_name()),
        Some(RowFilter::CellsPerColumnLimit(1)),
    );
    rows.first()
        .map_or(0, |r| decode_id_counter(&r.cells[0].value).unwrap())
}

#[test]
fn digest_id_allocation() {
    for case in cases("digest_id_allocation") {
        let what = case["description"]
            .as_str()
            .unwrap_or_else(|| panic!("{case}: no description"))
            .to_string();
        known_members(
            &case,
            &[
                "description",
                "initial_counter",
                "initial_pools",
                "steps",
                "final_counter",
            ],
            &what,
        );
        let store = MemoryStore::new();
        prepare(&store, &case["initial_counter"], &serde_json::json!({}));
        let hooked = Hooked::new(&store);
        // Other instances move the counter on between two increments of the replayed ones: the
        // next increment's `counter_response` minus its amount is where they left it.
        let counter_before_next: Arc<Mutex<Option<i64>>> = Arc::default();
        let target = Arc::clone(&counter_before_next);
        let hook_what = what.clone();
        hooked.set_hook(move |r, inner| {
            if matches!(r, Request::ReadModifyWriteRow(_))
                && let Some(before) = target.lock().unwrap().take()
            {
                let now = counter(inner);
                assert!(
                    before >= now,
                    "{hook_what}: a counter_response needs the counter at {before}, it is at \
                     {now} (counters only grow)"
                );
                if before > now {
                    write_counter(inner, before);
                }
            }
            HookAction::Pass
        });
        let clock = ManualClock::new(Timestamp(sc::T0));
        let mut instances = BTreeMap::new();
        for (name, pool) in case["initial_pools"].as_object().unwrap() {
            let mut gold = block_on(TraceStore::open(
                SyncDriver::new(&hooked, &clock),
                sc::TABLE,
                None,
            ))
            .unwrap()
            .with_options(CallOptions {
                seed: 1,
                ..CallOptions::default()
            });
            gold.state().return_digest_ids(&pool_ids(pool));
            instances.insert(name.clone(), gold);
        }
        for step in case["steps"].as_array().unwrap() {
            let at = format!("{what}: {step}");
            let allocator = step["allocator"].as_str().unwrap();
            let gold = instances
                .get_mut(allocator)
                .unwrap_or_else(|| panic!("{at}: allocator {allocator:?} has no initial pool"));
            match step["op"].as_str() {
                Some("allocate") => {
                    known_members(
                        step,
                        &[
                            "allocator",
                            "op",
                            "n",
                            "increment",
                            "counter_response",
                            "ids_ranges",
                            "pool_after_ranges",
                        ],
                        &at,
                    );
                    let want_increment = step["increment"].as_i64();
                    let want_response = step["counter_response"].as_i64();
                    if let (Some(inc), Some(resp)) = (want_increment, want_response) {
                        *counter_before_next.lock().unwrap() = Some(resp - inc);
                    }
                    let n = step["n"].as_u64().unwrap() as usize;
                    let ids = block_on(gold.allocate_digest_ids(n)).unwrap();
                    assert_eq!(ids, ranges(&step["ids_ranges"]), "{at}");
                    let sent = increments(&hooked.take_log());
                    let want: Vec<i64> = want_increment.into_iter().collect();
                    assert_eq!(sent, want, "{at}");
                    let answered: Vec<i64> = hooked
                        .take_unary_exchanges()
                        .into_iter()
                        .map(|(_, answer)| match answer {
                            Response::ReadModifyWriteRow(row) => {
                                decode_id_counter(&row.cells[0].value).unwrap()
                            }
                            other => panic!("{at}: answer {other:?}"),
                        })
                        .collect();
                    let want: Vec<i64> = want_response.into_iter().collect();
                    assert_eq!(answered, want, "{at}: counter_response");
                    assert_eq!(*counter_before_next.lock().unwrap(), None, "{at}");
                }
                Some("return") => {
                    known_members(step, &["allocator", "op", "ids", "pool_after_ranges"], &at);
                    let ids: Vec<u64> = step["ids"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_u64().unwrap())
                        .collect();
                    gold.state().return_digest_ids(&ids);
                    assert!(hooked.take_log().is_empty(), "{at}: a return sends nothing");
                }
                other => panic!("{at}: unknown op {other:?}"),
            }
            let pool: Vec<u64> = gold.state().pool().collect();
            assert_eq!(pool, ranges(&step["pool_after_ranges"]), "{at}");
        }
        assert_eq!(
            counter(&store),
            case["final_counter"].as_i64().unwrap(),
            "{what}"
        );
    }
}

#[test]
fn digest_id_assignment() {
    for case in cases("digest_id_assignment") {
        let what = case["description"]
            .as_str()
            .unwrap_or_else(|| panic!("{case}: no description"))
            .to_string();
        known_members(
            &case,
            &[
                "description",
                "initial_counter",
                "initial_pool_ranges",
                "cache",
                "table_map",
                "concurrent_inserts",
                "now_micros",
                "digests",
                "lookup_rows",
                "new_digests",
                "increment",
                "counter_after",
                "inserts",
                "reread_rows",
                "ids",
                "pool_after_ranges",
            ],
            &what,
        );
        let store = MemoryStore::new();
        prepare(&store, &case["initial_counter"], &case["table_map"]);
        let concurrent: Vec<MutateRowsEntry> = case["concurrent_inserts"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(d, id)| map_entry(d, id.as_u64().unwrap()))
            .collect();
        let hooked = Hooked::new(&store);
        let pending = std::sync::Mutex::new(Some(concurrent));
        hooked.set_hook(move |r, inner| {
            if matches!(r, Request::CheckAndMutateRow(_))
                && let Some(entries) = pending.lock().unwrap().take()
                && !entries.is_empty()
            {
                sc::raw_write(inner, entries);
            }
            HookAction::Pass
        });
        let clock = ManualClock::new(Timestamp(case["now_micros"].as_i64().unwrap()));
        let mut gold = block_on(TraceStore::open(
            SyncDriver::new(&hooked, &clock),
            sc::TABLE,
            None,
        ))
        .unwrap()
        .with_options(CallOptions {
            seed: 3,
            ..CallOptions::default()
        });
        gold.state()
            .return_digest_ids(&ranges(&case["initial_pool_ranges"]));
        let cached: Vec<(String, u64)> = case["cache"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(d, id)| (d.clone(), id.as_u64().unwrap()))
            .collect();
        gold.state().digest_cache_mut().merge(&cached).unwrap();
        let strs = |v: &Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect()
        };
        let digests = strs(&case["digests"]);
        let ids = block_on(gold.assign_digest_ids(digests.clone())).unwrap();
        let want = case["ids"].as_object().unwrap();
        assert_eq!(ids.len(), digests.len(), "{what}");
        for (d, id) in digests.iter().zip(&ids) {
            assert_eq!(Some(*id), want[d].as_u64(), "{what}: {d}");
        }
        let log = hooked.take_log();
        let reads: Vec<Vec<String>> = log
            .iter()
            .filter_map(|r| match r {
                Request::ReadRows(q) => Some(
                    q.rows
                        .row_keys
                        .iter()
                        .map(|k| String::from_utf8(k.clone()).unwrap())
                        .collect(),
                ),
                // A read of one map row is a point read.
                Request::ReadRow(q) => Some(vec![String::from_utf8(q.row_key.clone()).unwrap()]),
                _ => None,
            })
            .collect();
        let mut want_reads = Vec::new();
        if !strs(&case["lookup_rows"]).is_empty() {
            want_reads.push(strs(&case["lookup_rows"]));
        }
        if !strs(&case["reread_rows"]).is_empty() {
            want_reads.push(strs(&case["reread_rows"]));
        }
        assert_eq!(reads, want_reads, "{what}");
        let want_inc: Vec<i64> = case["increment"].as_i64().into_iter().collect();
        assert_eq!(increments(&log), want_inc, "{what}");
        let inserts: Vec<_> = log
            .iter()
            .filter_map(|r| match r {
                Request::CheckAndMutateRow(c) => Some(c.clone()),
                _ => None,
            })
            .collect();
        // The digests inserted, in request order, are the call's new digests.
        let inserted: Vec<String> = inserts
            .iter()
            .map(|c| match c.false_mutations.as_slice() {
                [Mutation::SetCell { qualifier, .. }] => {
                    digest_of_map_cell(&c.row_key, qualifier).unwrap()
                }
                other => panic!("{what}: insert mutations {other:?}"),
            })
            .collect();
        assert_eq!(inserted, strs(&case["new_digests"]), "{what}: new digests");
        let want_inserts = case["inserts"].as_array().unwrap();
        assert_eq!(inserts.len(), want_inserts.len(), "{what}");
        let matched: Vec<bool> = hooked
            .take_unary_exchanges()
            .into_iter()
            .filter_map(|(_, answer)| match answer {
                Response::CheckAndMutateRow { predicate_matched } => Some(predicate_matched),
                _ => None,
            })
            .collect();
        let want_matched: Vec<bool> = want_inserts
            .iter()
            .map(|w| w["predicate_matched"].as_bool().unwrap())
            .collect();
        assert_eq!(matched, want_matched, "{what}");
        for (got, want) in inserts.iter().zip(want_inserts) {
            known_members(
                want,
                &[
                    "digest",
                    "digest_id",
                    "row",
                    "predicate_qualifier_regex",
                    "family",
                    "qualifier",
                    "timestamp_micros",
                    "value",
                    "predicate_matched",
                ],
                &what,
            );
            let s = |k: &str| want[k].as_str().unwrap().as_bytes().to_vec();
            assert_eq!(got.row_key, s("row"), "{what}");
            assert_eq!(
                digest_of_map_cell(&got.row_key, &s("qualifier")).unwrap(),
                want["digest"].as_str().unwrap(),
                "{what}"
            );
            assert_eq!(
                got.predicate,
                Some(RowFilter::ColumnQualifierRegex(s(
                    "predicate_qualifier_regex"
                ))),
                "{what}"
            );
            assert!(got.true_mutations.is_empty(), "{what}");
            assert_eq!(
                got.false_mutations,
                vec![set(
                    want["family"].as_str().unwrap(),
                    &s("qualifier"),
                    want["timestamp_micros"].as_i64().unwrap(),
                    s("value")
                )],
                "{what}"
            );
            assert_eq!(
                s("value"),
                encode_digest_map_value(want["digest_id"].as_u64().unwrap()),
                "{what}"
            );
        }
        let pool: Vec<u64> = gold.state().pool().collect();
        assert_eq!(pool, ranges(&case["pool_after_ranges"]), "{what}");
        assert_eq!(
            counter(&store),
            case["counter_after"].as_i64().unwrap(),
            "{what}"
        );
    }
}

/// Scenario 17's table of increments and counter values per batch of 113
/// (`rowkit_testkit::scenarios::tracestore::FIRST_IDS_BATCHES`) is the one of the vectors'
/// replay of the original `TestBTDigestMap` (spec 20.2 scenario 17), wherever the file lists
/// it.
#[test]
fn first_ids_batches_are_the_vectors() {
    for case in cases("digest_id_allocation") {
        if !case["description"]
            .as_str()
            .is_some_and(|d| d.contains("TestBTDigestMap"))
        {
            continue;
        }
        let batches: Vec<Option<(i64, i64)>> = case["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["n"] == 113)
            .map(|s| {
                s["increment"]
                    .as_i64()
                    .map(|i| (i, s["counter_response"].as_i64().unwrap()))
            })
            .collect();
        assert_eq!(batches, sc::FIRST_IDS_BATCHES, "{}", case["description"]);
    }
}
