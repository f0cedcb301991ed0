//! The official ReadRows conformance cases (`spec/bigtable.md` 15.7), read at run time from
//! `$ROWKIT_SHARED/conformance/bigtable-readrows.json` and fed to the merger three ways: one
//! response, one chunk per response, and seeded random re-splits (with empty responses).
#![allow(clippy::unwrap_used)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use rowkit_statemachines::readrows::ChunkMerger;
use rowkit_statemachines::{CellChunk, ReadRowsResponse, RowStatus, SplitMix64};
use serde_json::Value;

/// Number of cases in the file (`spec/bigtable.md` 15.7).
const CASES: usize = 48;
/// Random re-splits per case.
const SPLITS_PER_CASE: u64 = 100;

/// One expected or actual result line: a cell, or the final error marker.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Line {
    row_key: Vec<u8>,
    family: String,
    qualifier: Vec<u8>,
    timestamp: i64,
    value: Vec<u8>,
    label: String,
    error: bool,
}

impl Line {
    fn error() -> Line {
        Line {
            row_key: vec![],
            family: String::new(),
            qualifier: vec![],
            timestamp: 0,
            value: vec![],
            label: String::new(),
            error: true,
        }
    }
}

struct Case {
    description: String,
    chunks: Vec<CellChunk>,
    expected: Vec<Line>,
}

fn shared_dir() -> String {
    std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string())
}

fn load_cases() -> Vec<Case> {
    let path = format!("{}/conformance/bigtable-readrows.json", shared_dir());
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("conformance file {path} is required: {e}"));
    let file: Value = serde_json::from_str(&text).unwrap();
    file["readRowsTests"]
        .as_array()
        .unwrap()
        .iter()
        .map(parse_case)
        .collect()
}

fn parse_case(case: &Value) -> Case {
    let description = case["description"].as_str().unwrap().to_string();
    let chunks = case["chunks"]
        .as_array()
        .map(|cs| cs.iter().map(|c| parse_chunk(&description, c)).collect())
        .unwrap_or_default();
    let expected = case["results"]
        .as_array()
        .map(|rs| rs.iter().map(|r| parse_result(&description, r)).collect())
        .unwrap_or_default();
    Case {
        description,
        chunks,
        expected,
    }
}

fn base64(v: &Value) -> Vec<u8> {
    BASE64.decode(v.as_str().unwrap()).unwrap()
}

/// A decimal string (proto3 JSON int64) or a plain number.
fn int64(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap(),
        other => other.as_i64().unwrap(),
    }
}

/// A chunk in proto3 JSON; `familyName` / `qualifier` presence is kept as `Some`.
fn parse_chunk(case: &str, v: &Value) -> CellChunk {
    let mut chunk = CellChunk::default();
    let mut commit = false;
    let mut reset = false;
    for (key, value) in v.as_object().unwrap() {
        match key.as_str() {
            "rowKey" => chunk.row_key = base64(value),
            "familyName" => chunk.family_name = Some(value.as_str().unwrap().to_string()),
            "qualifier" => chunk.qualifier = Some(base64(value)),
            "timestampMicros" => chunk.timestamp_micros = int64(value),
            "labels" => {
                chunk.labels = value
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l.as_str().unwrap().to_string())
                    .collect()
            }
            "value" => chunk.value = base64(value),
            "valueSize" => chunk.value_size = i32::try_from(int64(value)).unwrap(),
            "commitRow" => commit = value.as_bool().unwrap(),
            "resetRow" => reset = value.as_bool().unwrap(),
            other => panic!("{case}: unknown chunk field {other}"),
        }
    }
    assert!(
        !(commit && reset),
        "{case}: commitRow and resetRow both set"
    );
    chunk.row_status = match (commit, reset) {
        (true, _) => RowStatus::Commit,
        (_, true) => RowStatus::Reset,
        _ => RowStatus::None,
    };
    chunk
}

/// An expected result: plain strings, missing fields empty / 0.
fn parse_result(case: &str, v: &Value) -> Line {
    let text = |key: &str| v.get(key).map_or("", |s| s.as_str().unwrap()).to_string();
    for key in v.as_object().unwrap().keys() {
        assert!(
            [
                "rowKey",
                "familyName",
                "qualifier",
                "timestampMicros",
                "value",
                "label",
                "error"
            ]
            .contains(&key.as_str()),
            "{case}: unknown result field {key}"
        );
    }
    Line {
        row_key: text("rowKey").into_bytes(),
        family: text("familyName"),
        qualifier: text("qualifier").into_bytes(),
        timestamp: v.get("timestampMicros").map_or(0, int64),
        value: text("value").into_bytes(),
        label: text("label"),
        error: v.get("error").is_some_and(|e| e.as_bool().unwrap()),
    }
}

/// Feeds `responses` then end-of-stream; the cells of every committed row, then
/// `{"error": true}` if the merger failed.
fn merge(responses: Vec<ReadRowsResponse>) -> Vec<Line> {
    let mut merger = ChunkMerger::new(false, 0);
    let mut lines = Vec::new();
    let mut failed = false;
    for response in responses {
        failed = merger.push_response(response).is_err();
        drain(&mut merger, &mut lines);
        if failed {
            break;
        }
    }
    if !failed {
        failed = merger.end_of_stream().is_err();
        drain(&mut merger, &mut lines);
    }
    if failed {
        lines.push(Line::error());
    }
    lines
}

fn drain(merger: &mut ChunkMerger, lines: &mut Vec<Line>) {
    while let Some(row) = merger.pop_row() {
        for cell in row.cells {
            lines.push(Line {
                row_key: row.key.clone(),
                family: cell.family,
                qualifier: cell.qualifier,
                timestamp: cell.timestamp.0,
                value: cell.value,
                label: cell.labels.into_iter().next().unwrap_or_default(),
                error: false,
            });
        }
    }
}

fn response(chunks: &[CellChunk]) -> ReadRowsResponse {
    ReadRowsResponse {
        chunks: chunks.to_vec(),
        last_scanned_row_key: vec![],
    }
}

/// The chunks cut into consecutive groups at random points, empty groups included.
fn random_split(chunks: &[CellChunk], rng: &mut SplitMix64) -> Vec<ReadRowsResponse> {
    let mut responses = Vec::new();
    let mut rest = chunks;
    loop {
        // Sometimes an empty response, anywhere (also first and last).
        if rng.below(4) == 0 {
            responses.push(response(&[]));
        }
        if rest.is_empty() {
            break;
        }
        let take = 1 + rng.below(rest.len() as u64) as usize;
        let (group, tail) = rest.split_at(take);
        responses.push(response(group));
        rest = tail;
    }
    responses
}

#[test]
fn conformance_file_has_48_cases() {
    assert_eq!(load_cases().len(), CASES);
}

#[test]
fn all_chunks_in_one_response() {
    for case in load_cases() {
        let actual = merge(vec![response(&case.chunks)]);
        assert_eq!(actual, case.expected, "case {:?}", case.description);
    }
}

#[test]
fn one_chunk_per_response() {
    for case in load_cases() {
        let responses = case.chunks.chunks(1).map(response).collect();
        let actual = merge(responses);
        assert_eq!(actual, case.expected, "case {:?}", case.description);
    }
}

#[test]
fn random_resplits() {
    for (n, case) in load_cases().into_iter().enumerate() {
        for split in 0..SPLITS_PER_CASE {
            let seed = (n as u64) << 32 | split;
            let mut rng = SplitMix64::new(seed);
            let actual = merge(random_split(&case.chunks, &mut rng));
            assert_eq!(
                actual, case.expected,
                "case {:?}, seed {seed}",
                case.description
            );
        }
    }
}

#[test]
fn error_is_only_ever_last() {
    for case in load_cases() {
        let errors = case.expected.iter().filter(|l| l.error).count();
        assert!(errors <= 1, "case {:?}", case.description);
        if errors == 1 {
            assert!(case.expected.last().unwrap().error);
        }
    }
}
