//! The machine-level vectors of `$ROWKIT_SHARED/vectors/tracestore.json`:
//! `digest_id_allocation` (whole allocation sequences over several instances) and
//! `digest_id_assignment` (whole AssignDigestIds calls: lookup rows, increment, each insert
//! request and its answer, re-read rows, ids and pool), replayed on the memory store, with
//! the store's answers (increment results, insert outcomes) checked against the vectors.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use rowkit_client::tracestore::TraceStore;
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::{Mutation, RowFilter, RuleOp, Timestamp};
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::cells::*;
use rowkit_codec::tracestore::keys::id_counter_row_name;
use rowkit_embedded::MemoryStore;
use rowkit_embedded::driver::ManualClock;
use rowkit_statemachines::{MutateRowsEntry, Request, Response};
use rowkit_testkit::scenarios::tracestore::{self as sc, HookAction, Hooked};
use serde_json::Value;

fn vectors() -> Value {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared").to_string());
    let path = format!("{dir}/vectors/tracestore.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn ranges(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r[0].as_u64().unwrap()..=r[1].as_u64().unwrap())
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

fn prepare(store: &MemoryStore, counter: &Value, map: &Value) {
    sc::setup(store, Layout::DigestId);
    if let Some(c) = counter.as_i64() {
        sc::raw_write(
            store,
            vec![MutateRowsEntry {
                row_key: id_counter_row_name(),
                mutations: vec![set("I", b"idc", sc::T0, encode_id_counter(c))],
            }],
        );
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

fn counter(store: &MemoryStore) -> i64 {
    let rows = sc::raw_read(
        store,
        rowkit_codec::model::RowSet::key(id_counter_row_name()),
        Some(RowFilter::CellsPerColumnLimit(1)),
    );
    decode_id_counter(&rows[0].cells[0].value).unwrap()
}

#[test]
fn digest_id_allocation() {
    let cases = vectors()["digest_id_allocation"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!cases.is_empty());
    for case in cases {
        let store = MemoryStore::new();
        prepare(&store, &case["initial_counter"], &serde_json::json!({}));
        let hooked = Hooked::new(&store);
        let clock = ManualClock::new(Timestamp(sc::T0));
        let mut instances = BTreeMap::new();
        for (name, pool) in case["initial_pools"].as_object().unwrap() {
            let mut gold = block_on(TraceStore::open(
                SyncDriver::new(&hooked, &clock),
                sc::TABLE,
                None,
                1,
            ))
            .unwrap();
            gold.state_mut().return_digest_ids(&ranges(pool));
            instances.insert(name.clone(), gold);
        }
        for step in case["steps"].as_array().unwrap() {
            let gold = instances
                .get_mut(step["allocator"].as_str().unwrap())
                .unwrap();
            match step["op"].as_str().unwrap() {
                "allocate" => {
                    let n = step["n"].as_u64().unwrap() as usize;
                    let ids = block_on(gold.allocate_digest_ids(n)).unwrap();
                    assert_eq!(ids, ranges(&step["ids_ranges"]), "{step}");
                    let sent = increments(&hooked.take_log());
                    let want: Vec<i64> = step["increment"].as_i64().into_iter().collect();
                    assert_eq!(sent, want, "{step}");
                    let answered: Vec<i64> = hooked
                        .take_unary_exchanges()
                        .into_iter()
                        .map(|(_, answer)| match answer {
                            Response::ReadModifyWriteRow(row) => {
                                decode_id_counter(&row.cells[0].value).unwrap()
                            }
                            other => panic!("{step}: answer {other:?}"),
                        })
                        .collect();
                    let want: Vec<i64> = step["counter_response"].as_i64().into_iter().collect();
                    assert_eq!(answered, want, "{step}: counter_response");
                }
                _ => {
                    let ids: Vec<u64> = step["ids"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_u64().unwrap())
                        .collect();
                    gold.state_mut().return_digest_ids(&ids);
                }
            }
            let pool: Vec<u64> = gold.state().pool().collect();
            assert_eq!(pool, ranges(&step["pool_after_ranges"]), "{step}");
        }
        assert_eq!(counter(&store), case["final_counter"].as_i64().unwrap());
    }
}

#[test]
fn digest_id_assignment() {
    let cases = vectors()["digest_id_assignment"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!cases.is_empty());
    for case in cases {
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
            3,
        ))
        .unwrap();
        gold.state_mut()
            .return_digest_ids(&ranges(&case["initial_pool_ranges"]));
        let cached: Vec<(String, u64)> = case["cache"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(d, id)| (d.clone(), id.as_u64().unwrap()))
            .collect();
        gold.state_mut().digest_cache_mut().merge(&cached).unwrap();
        let digests: Vec<String> = case["digests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap().to_string())
            .collect();
        let ids = block_on(gold.assign_digest_ids(digests.clone())).unwrap();
        let want = &case["ids"];
        for (d, id) in digests.iter().zip(&ids) {
            assert_eq!(Some(*id), want[d].as_u64(), "{d}");
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
                _ => None,
            })
            .collect();
        let strs = |v: &Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect()
        };
        let mut want_reads = Vec::new();
        if !strs(&case["lookup_rows"]).is_empty() {
            want_reads.push(strs(&case["lookup_rows"]));
        }
        if !strs(&case["reread_rows"]).is_empty() {
            want_reads.push(strs(&case["reread_rows"]));
        }
        assert_eq!(reads, want_reads);
        let want_inc: Vec<i64> = case["increment"].as_i64().into_iter().collect();
        assert_eq!(increments(&log), want_inc);
        let inserts: Vec<_> = log
            .iter()
            .filter_map(|r| match r {
                Request::CheckAndMutateRow(c) => Some(c.clone()),
                _ => None,
            })
            .collect();
        let want_inserts = case["inserts"].as_array().unwrap();
        assert_eq!(inserts.len(), want_inserts.len());
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
        assert_eq!(matched, want_matched, "{}", case["description"]);
        for (got, want) in inserts.iter().zip(want_inserts) {
            let s = |k: &str| want[k].as_str().unwrap().as_bytes().to_vec();
            assert_eq!(got.row_key, s("row"));
            assert_eq!(
                got.predicate,
                Some(RowFilter::ColumnQualifierRegex(s(
                    "predicate_qualifier_regex"
                )))
            );
            assert!(got.true_mutations.is_empty());
            assert_eq!(
                got.false_mutations,
                vec![set(
                    want["family"].as_str().unwrap(),
                    &s("qualifier"),
                    want["timestamp_micros"].as_i64().unwrap(),
                    s("value")
                )]
            );
        }
        let pool: Vec<u64> = gold.state().pool().collect();
        assert_eq!(pool, ranges(&case["pool_after_ranges"]));
        if let Some(c) = case["counter_after"].as_i64() {
            assert_eq!(counter(&store), c);
        }
    }
}

/// Scenario 17's table of increments and counter values per batch of 113
/// (`rowkit_testkit::scenarios::tracestore::FIRST_IDS_BATCHES`) is the vector's.
#[test]
fn first_ids_batches_are_the_vectors() {
    let case = &vectors()["digest_id_allocation"][0];
    assert!(
        case["description"]
            .as_str()
            .unwrap()
            .contains("TestBTDigestMap")
    );
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
    assert_eq!(batches, sc::FIRST_IDS_BATCHES);
}
