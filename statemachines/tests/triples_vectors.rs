#![allow(clippy::unwrap_used)]
//! The stored cells of `$ROWKIT_SHARED/vectors/triples.json` as the machines write them:
//! `graph_rows` through NewGraph (row, column, timestamp and the value), and the cells of every
//! `triples` case and every `bt_fixture` case that lists them through AddTriples (row,
//! column, timestamp, and the value: the triple's canonical text). The vector file's types are
//! checked strictly by rowkit-codec's `tests/triples_vectors.rs`; this file reads the members
//! it needs.

use rowkit_codec::model::Mutation;
use rowkit_codec::triples::Triple;
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::triples::{AddTriples, NewGraph, OperationConfig};
use rowkit_statemachines::{Machine, Request, Timestamp};
use serde_json::Value;

fn vectors() -> Value {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string());
    let path = format!("{dir}/vectors/triples.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn config() -> OperationConfig {
    OperationConfig::new("badwolf")
}

/// `(row, family:qualifier, timestamp, value)` of every cell set by `mutations` on `row`.
fn cells(row: &[u8], mutations: &[Mutation]) -> Vec<(String, String, i64, String)> {
    mutations
        .iter()
        .map(|m| match m {
            Mutation::SetCell {
                family,
                qualifier,
                timestamp,
                value,
            } => (
                String::from_utf8(row.to_vec()).unwrap(),
                format!("{family}:{}", String::from_utf8(qualifier.clone()).unwrap()),
                timestamp.0,
                String::from_utf8(value.clone()).unwrap(),
            ),
            other => panic!("not a SetCell: {other:?}"),
        })
        .collect()
}

#[test]
fn new_graph_writes_the_graph_rows() {
    let v = vectors();
    let cases = v["graph_rows"].as_array().unwrap();
    assert!(!cases.is_empty(), "no graph_rows");
    for c in cases {
        let graph = c["graph"].as_str().unwrap();
        let mut m = NewGraph::new(
            config(),
            graph.as_bytes(),
            Start::within(Timestamp(0), 1, 60_000_000),
        );
        let Some((_, Request::CheckAndMutateRow(r))) = m.poll_request() else {
            panic!("{c}: no CheckAndMutateRow")
        };
        assert!(r.true_mutations.is_empty(), "{c}");
        let want = (
            c["row"].as_str().unwrap().to_string(),
            c["column"].as_str().unwrap().to_string(),
            c["timestamp_micros"].as_i64().unwrap(),
            c["value"].as_str().unwrap().to_string(),
        );
        assert_eq!(cells(&r.row_key, &r.false_mutations), [want], "{c}");
    }
}

/// The four cells of one triple case written by AddTriples in graph `graph`.
fn check_add(c: &Value, graph: &str) {
    let Some(want_cells) = c["cells"].as_array() else {
        return; // spec §8: some bt_fixture entries leave their cells to the codec test.
    };
    let t = Triple::parse(c["input"].as_str().unwrap().as_bytes()).unwrap();
    let mut m = AddTriples::new(
        config(),
        graph.as_bytes(),
        vec![t],
        Start::within(Timestamp(0), 1, 60_000_000),
    );
    let Some((_, Request::MutateRows(r))) = m.poll_request() else {
        panic!("{c}: no MutateRows")
    };
    let got: Vec<_> = r
        .entries
        .iter()
        .flat_map(|e| cells(&e.row_key, &e.mutations))
        .collect();
    let ts = c["timestamp_micros"].as_i64().unwrap();
    let text = c["text"].as_str().unwrap();
    let want: Vec<_> = want_cells
        .iter()
        .map(|w| {
            (
                w["row"].as_str().unwrap().to_string(),
                w["column"].as_str().unwrap().to_string(),
                ts,
                text.to_string(),
            )
        })
        .collect();
    let (mut got, mut want) = (got, want);
    got.sort();
    want.sort();
    assert_eq!(got, want, "{c}");
}

#[test]
fn add_triples_writes_the_vector_cells() {
    let v = vectors();
    let cases = v["triples"].as_array().unwrap();
    assert!(!cases.is_empty(), "no triples");
    for c in cases {
        check_add(c, c["graph"].as_str().unwrap());
    }
    for c in v["bt_fixture"].as_array().unwrap() {
        check_add(c, "test");
    }
}
