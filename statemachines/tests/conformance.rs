//! The official ReadRows conformance cases (`spec/bigtable.md` 15.7), read at run time from
//! `$ROWKIT_SHARED/conformance/bigtable-readrows.json` and fed to the merger three ways: one
//! response, one chunk per response, and seeded random re-splits (with empty responses).
#![allow(clippy::unwrap_used)]

use base64::Engine;
use rowkit_statemachines::readrows::ChunkMerger;
use rowkit_statemachines::{CellChunk, ReadRowsResponse, RowStatus, SplitMix64};
use serde_json::Value;

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

/// Every case of the file, in order. The file follows `bigtable-readrows-tests.proto` in
/// proto3 JSON: a member it does not define fails the load, naming the case.
fn load_cases() -> Vec<Case> {
    let path = format!("{}/conformance/bigtable-readrows.json", shared_dir());
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("conformance file {path} is required: {e}"));
    let file: Value = serde_json::from_str(&text).unwrap();
    let mut tests = None;
    for (key, value) in file.as_object().expect("the file is a TestFile object") {
        match key.as_str() {
            "readRowsTests" | "read_rows_tests" => tests = Some(value),
            other => panic!("{path}: unknown TestFile field {other}"),
        }
    }
    let cases: Vec<Case> = tests
        .and_then(Value::as_array)
        .expect("readRowsTests is a list")
        .iter()
        .enumerate()
        .map(|(i, c)| parse_case(i, c))
        .collect();
    assert!(!cases.is_empty(), "{path}: no cases");
    cases
}

fn parse_case(index: usize, case: &Value) -> Case {
    let mut description = None;
    let mut chunks = Vec::new();
    let mut results = Vec::new();
    for (key, value) in case
        .as_object()
        .unwrap_or_else(|| panic!("case {index} is not an object"))
    {
        match key.as_str() {
            "description" => description = Some(value.as_str().unwrap().to_string()),
            "chunks" => chunks = list(value),
            "results" => results = list(value),
            other => panic!("case {index} ({case}): unknown ReadRowsTest field {other}"),
        }
    }
    let description = description.unwrap_or_else(|| format!("case {index}"));
    let chunks = chunks
        .iter()
        .map(|c| parse_chunk(&description, c))
        .collect();
    let expected = results
        .iter()
        .map(|r| parse_result(&description, r))
        .collect();
    Case {
        description,
        chunks,
        expected,
    }
}

/// A repeated field: absent or `null` is empty.
fn list(v: &Value) -> Vec<Value> {
    match v {
        Value::Null => Vec::new(),
        other => other
            .as_array()
            .expect("a repeated field is a list")
            .clone(),
    }
}

/// proto3 JSON bytes: standard or URL-safe base64, with or without padding.
fn base64(v: &Value) -> Vec<u8> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let config =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    let text = v.as_str().unwrap();
    GeneralPurpose::new(&base64::alphabet::STANDARD, config)
        .decode(text)
        .or_else(|_| GeneralPurpose::new(&base64::alphabet::URL_SAFE, config).decode(text))
        .unwrap_or_else(|e| panic!("bytes {text:?}: {e}"))
}

/// A decimal string or a plain integer number (proto3 JSON int64 and int32).
fn int64(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap(),
        other => other.as_i64().unwrap(),
    }
}

/// A chunk in proto3 JSON (both field-name forms); `familyName` / `qualifier` presence is kept
/// as `Some` (`null`: absent).
fn parse_chunk(case: &str, v: &Value) -> CellChunk {
    let mut chunk = CellChunk::default();
    let mut commit = false;
    let mut reset = false;
    for (key, value) in v.as_object().unwrap() {
        match key.as_str() {
            "rowKey" | "row_key" => chunk.row_key = base64(value),
            _ if value.is_null()
                && ["familyName", "family_name", "qualifier"].contains(&key.as_str()) => {}
            "familyName" | "family_name" => {
                chunk.family_name = Some(value.as_str().unwrap().to_string())
            }
            "qualifier" => chunk.qualifier = Some(base64(value)),
            "timestampMicros" | "timestamp_micros" => chunk.timestamp_micros = int64(value),
            "labels" => {
                chunk.labels = list(value)
                    .iter()
                    .map(|l| l.as_str().unwrap().to_string())
                    .collect()
            }
            "value" => chunk.value = base64(value),
            "valueSize" | "value_size" => chunk.value_size = i32::try_from(int64(value)).unwrap(),
            "commitRow" | "commit_row" => commit = value.as_bool().unwrap(),
            "resetRow" | "reset_row" => reset = value.as_bool().unwrap(),
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

/// An expected result: plain strings, missing fields empty / 0 (both field-name forms).
fn parse_result(case: &str, v: &Value) -> Line {
    let mut line = Line {
        row_key: vec![],
        family: String::new(),
        qualifier: vec![],
        timestamp: 0,
        value: vec![],
        label: String::new(),
        error: false,
    };
    let text = |value: &Value| value.as_str().unwrap().to_string();
    for (key, value) in v.as_object().unwrap() {
        match key.as_str() {
            "rowKey" | "row_key" => line.row_key = text(value).into_bytes(),
            "familyName" | "family_name" => line.family = text(value),
            "qualifier" => line.qualifier = text(value).into_bytes(),
            "timestampMicros" | "timestamp_micros" => line.timestamp = int64(value),
            "value" => line.value = text(value).into_bytes(),
            "label" => line.label = text(value),
            "error" => line.error = value.as_bool().unwrap(),
            other => panic!("{case}: unknown result field {other}"),
        }
    }
    line
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

/// The file loads (every member known, at least one case); how many cases it has is the
/// file's business (`spec/bigtable.md` 15.7 names the public file's 48).
#[test]
fn conformance_file_loads() {
    load_cases();
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
