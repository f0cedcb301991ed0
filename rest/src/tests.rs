//! Round trips over the foundation's semantics suite (every request kind, every filter kind,
//! every response a store gives), the examples of `rest-json.md`, the conformance chunks, and
//! the decoding errors.
#![allow(clippy::unwrap_used)]

use alloc::collections::BTreeSet;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use std::format;

use rowkit_codec::model::{Code, RowFilter, Timestamp};
use rowkit_statemachines::{CellChunk, ReadRowsResponse, Request, Response, RowStatus, StoreError};
use rowkit_store::{MemoryStore, Reply, Store};
use rowkit_testkit::suite;
use serde_json::Value;

use super::*;

fn table() -> TableName {
    TableName::new("p", "i", suite::TABLE)
}

fn round_trip(request: &Request) -> Request {
    let body = encode_request(request).unwrap();
    let table = TableName::new("p", "i", request.table());
    decode_request(Method::of(request), &table, &body)
        .unwrap_or_else(|e| panic!("{e}\nbody: {}", String::from_utf8_lossy(&body)))
}

/// Every request of the suite (setup, request under test, post-check read).
fn suite_requests() -> Vec<Request> {
    let mut out = Vec::new();
    for case in suite::cases() {
        out.extend(case.setup.iter().cloned());
        out.push(case.request.clone());
        if let Some(check) = &case.check {
            out.push(Request::ReadRows(check.read.clone()));
        }
    }
    out
}

fn filter_kinds(f: &RowFilter, out: &mut BTreeSet<&'static str>) {
    out.insert(f.field_name());
    f.children().for_each(|f| filter_kinds(f, out));
}

#[test]
fn every_suite_request_round_trips_exactly() {
    let requests = suite_requests();
    let mut methods = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for request in &requests {
        methods.insert(Method::of(request).name());
        match request {
            Request::ReadRows(r) => r.filter.iter().for_each(|f| filter_kinds(f, &mut kinds)),
            Request::CheckAndMutateRow(r) => {
                r.predicate.iter().for_each(|f| filter_kinds(f, &mut kinds))
            }
            _ => {}
        }
        assert_eq!(&round_trip(request), request);
    }
    assert_eq!(methods.len(), 6, "request kinds covered: {methods:?}");
    assert_eq!(kinds.len(), 19, "filter kinds covered: {kinds:?}");
}

#[test]
fn edge_values_round_trip() {
    use rowkit_codec::model::{KeyBound, Mutation, RowRange, RowSet, TimestampRange};
    use rowkit_statemachines::{ReadRowsRequest, SampleRowKeysRequest};
    let read = Request::ReadRows(ReadRowsRequest {
        table: suite::TABLE.into(),
        app_profile_id: "profile".into(),
        rows: RowSet {
            row_keys: vec![vec![], vec![0xff, 0, b'"']],
            row_ranges: vec![
                RowRange {
                    start: KeyBound::Closed(vec![]),
                    end: KeyBound::Open(vec![]),
                },
                RowRange {
                    start: KeyBound::Open(b"a".to_vec()),
                    end: KeyBound::Closed(b"b".to_vec()),
                },
                RowRange::all(),
            ],
        },
        filter: Some(RowFilter::Chain(vec![
            RowFilter::RowSample(1.0 / 3.0),
            RowFilter::RowSample(f64::INFINITY),
            RowFilter::CellsPerRowLimit(0),
            RowFilter::CellsPerRowOffset(-5),
            RowFilter::Chain(vec![]),
            RowFilter::ColumnRange {
                family: String::new(),
                start: KeyBound::Unbounded,
                end: KeyBound::Closed(vec![]),
            },
            RowFilter::TimestampRange(TimestampRange {
                start: -1,
                end: i64::MAX,
            }),
            RowFilter::ApplyLabel(String::new()),
            RowFilter::FamilyNameRegex(String::new()),
        ])),
        rows_limit: i64::MIN,
        reversed: true,
    });
    assert_eq!(round_trip(&read), read);
    let mutate = Request::MutateRow(rowkit_statemachines::MutateRowRequest {
        table: suite::TABLE.into(),
        app_profile_id: String::new(),
        row_key: vec![],
        mutations: vec![
            Mutation::SetCell {
                family: String::new(),
                qualifier: vec![],
                timestamp: Timestamp(0),
                value: vec![],
            },
            Mutation::DeleteFromColumn {
                family: "f".into(),
                qualifier: vec![],
                range: Some(TimestampRange::default()),
            },
        ],
    });
    assert_eq!(round_trip(&mutate), mutate);
    let sample = Request::SampleRowKeys(SampleRowKeysRequest {
        table: suite::TABLE.into(),
        app_profile_id: "x".into(),
    });
    assert_eq!(round_trip(&sample), sample);
}

/// Runs every suite request on a memory store and round trips every response part.
#[test]
fn every_response_of_the_suite_round_trips_exactly() {
    let mut seen = BTreeSet::new();
    for case in suite::cases() {
        let store = MemoryStore::new();
        if store.create_table(suite::TABLE, &case.families).is_err() {
            continue;
        }
        let mut requests = case.setup.clone();
        requests.push(case.request.clone());
        for request in requests {
            let method = Method::of(&request);
            let parts: Vec<Response> = match store.execute(request, case.now) {
                Ok(Reply::Unary(r)) => vec![r],
                Ok(Reply::Stream(parts)) => parts.filter_map(Result::ok).collect(),
                Err(_) => continue,
            };
            for part in parts {
                seen.insert(format!("{method:?}"));
                let json = encode_response(&part).unwrap();
                assert_eq!(
                    decode_response(method, &json).unwrap(),
                    part,
                    "{}",
                    case.name
                );
                assert_eq!(decode_stream_element(method, &json).unwrap(), Ok(part));
            }
        }
    }
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert_eq!(
        encode_response(&Response::StreamEnd),
        Err(RestError::NotAMessage { what: "StreamEnd" })
    );
}

#[test]
fn spec_examples_decode_and_encode_exactly() {
    // 4.4 request.
    let body = br#"{ "rows": { "rowRanges": [ { "startKeyClosed": "dXNlciM=", "endKeyOpen": "dXNlciQ=" } ] },
      "filter": { "chain": { "filters": [
          { "familyNameRegexFilter": "cf" },
          { "columnQualifierRegexFilter": "cVxD" },
          { "cellsPerColumnLimitFilter": 1 } ] } },
      "rowsLimit": "100",
      "reversed": false }"#;
    let Request::ReadRows(r) = decode_request(Method::ReadRows, &table(), body).unwrap() else {
        panic!()
    };
    assert_eq!(
        r.rows,
        rowkit_codec::model::RowSet::range(rowkit_codec::model::RowRange::prefix(b"user#"))
    );
    assert_eq!(
        r.filter,
        Some(RowFilter::Chain(vec![
            RowFilter::FamilyNameRegex("cf".into()),
            RowFilter::ColumnQualifierRegex(b"q\\C".to_vec()),
            RowFilter::CellsPerColumnLimit(1),
        ]))
    );
    assert_eq!(r.rows_limit, 100);

    // 4.4 response chunks.
    let stream = br#"[{"chunks":[{"rowKey":"dXNlciMx","familyName":"cf","qualifier":"bg==","timestampMicros":"1000","value":"dg==","valueSize":4},
            {"value":"MTIz","commitRow":true}]}
,{"chunks":[{"rowKey":"dXNlciMy","familyName":"cf","qualifier":"bg==","timestampMicros":"1000","value":"djE=","commitRow":true}]}
]"#;
    let mut s = ArraySplitter::new();
    let elements = s.push_all(stream).unwrap();
    s.finish().unwrap();
    assert_eq!(elements.len(), 2);
    let first = decode_response(Method::ReadRows, &elements[0]).unwrap();
    let expected = Response::ReadRowsPart(ReadRowsResponse {
        chunks: vec![
            CellChunk {
                row_key: b"user#1".to_vec(),
                family_name: Some("cf".into()),
                qualifier: Some(b"n".to_vec()),
                timestamp_micros: 1000,
                value: b"v".to_vec(),
                value_size: 4,
                ..Default::default()
            },
            CellChunk {
                value: b"123".to_vec(),
                row_status: RowStatus::Commit,
                ..Default::default()
            },
        ],
        last_scanned_row_key: vec![],
    });
    assert_eq!(first, expected);
    // Emitted with Google's spelling and omissions.
    assert_eq!(
        core::str::from_utf8(&encode_response(&expected).unwrap()).unwrap(),
        r#"{"chunks":[{"rowKey":"dXNlciMx","familyName":"cf","qualifier":"bg==","timestampMicros":"1000","value":"dg==","valueSize":4},{"value":"MTIz","commitRow":true}]}"#
    );

    // 4.6 response: index 0 / OK is `{"status":{}}`; the code is the gRPC number.
    let part = Response::MutateRowsPart(rowkit_statemachines::MutateRowsResponse {
        entries: vec![
            rowkit_statemachines::MutateRowsEntryResult {
                index: 0,
                result: Ok(()),
            },
            rowkit_statemachines::MutateRowsEntryResult {
                index: 1,
                result: Err(StoreError::new(
                    Code::NotFound,
                    "Requested column family not found.",
                )),
            },
        ],
    });
    let json = encode_response(&part).unwrap();
    assert_eq!(
        core::str::from_utf8(&json).unwrap(),
        r#"{"entries":[{"status":{}},{"index":"1","status":{"code":5,"message":"Requested column family not found."}}]}"#
    );

    // 4.7 false is `{}`; 4.8 the row.
    assert_eq!(
        encode_response(&Response::CheckAndMutateRow {
            predicate_matched: false
        })
        .unwrap(),
        b"{}"
    );
    let rmw = br#"{ "row": { "key": "cjE=", "families": [ { "name": "cf", "columns": [
        { "qualifier": "Y291bnQ=", "cells": [ { "timestampMicros": "1795295397384000", "value": "AAAAAAAAACo=" } ] },
        { "qualifier": "bG9n",     "cells": [ { "timestampMicros": "1795295397384000", "value": "LXg=" } ] } ] } ] } }"#;
    let Response::ReadModifyWriteRow(row) =
        decode_response(Method::ReadModifyWriteRow, rmw).unwrap()
    else {
        panic!()
    };
    assert_eq!(row.cells.len(), 2);
    assert_eq!(row.cells[0].value, 42i64.to_be_bytes());
    assert_eq!(row.cells[1].qualifier, b"log");

    // 4.9 the end-of-table sample.
    assert_eq!(
        decode_response(Method::SampleRowKeys, br#"{"offsetBytes": "1200"}"#).unwrap(),
        Response::SampleRowKeysPart(rowkit_statemachines::SampleRowKeysResponse {
            row_key: vec![],
            offset_bytes: 1200
        })
    );
}

#[test]
fn decoding_accepts_proto_names_nulls_numbers_and_the_table_name() {
    let body = br#"{"table_name": "projects/p/instances/i/tables/semantics", "row_key": "cjE",
        "mutations": [{"set_cell": {"family_name": "cf", "column_qualifier": "-_8",
                                    "timestamp_micros": 2000, "value": null}},
                      {"deleteFromRow": {}}],
        "appProfileId": null}"#;
    let Request::MutateRow(r) = decode_request(Method::MutateRow, &table(), body).unwrap() else {
        panic!()
    };
    assert_eq!(r.row_key, b"r1");
    assert_eq!(r.mutations.len(), 2);
    assert_eq!(
        r.mutations[0],
        rowkit_codec::model::Mutation::SetCell {
            family: "cf".into(),
            qualifier: vec![0xfb, 0xff],
            timestamp: Timestamp(2000),
            value: vec![],
        }
    );
    // `{}` filter = no filter; SampleRowKeys accepts an empty body (GET).
    let Request::ReadRows(r) = decode_request(
        Method::ReadRows,
        &table(),
        br#"{"filter": {}, "rows": null}"#,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(r.filter, None);
    assert!(matches!(
        decode_request(Method::SampleRowKeys, &table(), b"").unwrap(),
        Request::SampleRowKeys(_)
    ));
    // Nested `{}` = pass all; `commitRow: false` = no status.
    let Request::ReadRows(r) = decode_request(
        Method::ReadRows,
        &table(),
        br#"{"filter": {"interleave": {"filters": [{}, {"blockAllFilter": true}]}}}"#,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        r.filter,
        Some(RowFilter::Interleave(vec![
            RowFilter::PassAll,
            RowFilter::BlockAll
        ]))
    );
}

fn request_error(method: Method, body: &str) -> RestError {
    decode_request(method, &table(), body.as_bytes()).unwrap_err()
}

#[test]
fn decoding_errors_name_the_field() {
    let cases: Vec<(Method, &str, Code, &str)> = vec![
        (
            Method::ReadRows,
            r#"{"rowz": 1}"#,
            Code::InvalidArgument,
            "unknown field `rowz`",
        ),
        (
            Method::ReadRows,
            r#"{"rowsLimit": "1", "rowsLimit": "2"}"#,
            Code::InvalidArgument,
            "duplicate field `rowsLimit`",
        ),
        (
            Method::ReadRows,
            r#"{"rowsLimit": "1.5"}"#,
            Code::InvalidArgument,
            "not a decimal integer",
        ),
        (
            Method::ReadRows,
            r#"{"rowsLimit": 1.5}"#,
            Code::InvalidArgument,
            "not an integer",
        ),
        (
            Method::MutateRow,
            r#"{"rowKey": "***"}"#,
            Code::InvalidArgument,
            "invalid base64",
        ),
        (
            Method::MutateRow,
            r#"{"rowKey": "cjE=""#,
            Code::InvalidArgument,
            "Invalid JSON payload received. MutateRowRequest",
        ),
        (Method::MutateRow, "", Code::InvalidArgument, "EOF"),
        (
            Method::ReadRows,
            r#"{"filter": {"sink": true, "passAllFilter": true}}"#,
            Code::InvalidArgument,
            "RowFilter: more than one member of the oneof is set (sink, passAllFilter)",
        ),
        (
            Method::ReadRows,
            r#"{"filter": {"chain": {"filters": [{"stripValueTransformer": false}]}}}"#,
            Code::InvalidArgument,
            "RowFilter.stripValueTransformer: must be true",
        ),
        (
            Method::ReadRows,
            r#"{"rows": {"rowRanges": [{"startKeyOpen": "", "startKeyClosed": ""}]}}"#,
            Code::InvalidArgument,
            "RowRange.start_key",
        ),
        (
            Method::MutateRow,
            r#"{"mutations": [{}]}"#,
            Code::InvalidArgument,
            "Mutation: no member of the oneof is set",
        ),
        (
            Method::MutateRow,
            r#"{"mutations": [{"addToCell": {}}]}"#,
            Code::Unimplemented,
            "Mutation.addToCell",
        ),
        (
            Method::MutateRows,
            r#"{"entries": [{"mutations": [{"mergeToCell": {}}]}]}"#,
            Code::Unimplemented,
            "Mutation.mergeToCell",
        ),
        (
            Method::ReadModifyWriteRow,
            r#"{"rules": [{"familyName": "cf"}]}"#,
            Code::InvalidArgument,
            "ReadModifyWriteRule: no member",
        ),
        (
            Method::ReadModifyWriteRow,
            r#"{"rules": [{"appendValue": "", "incrementAmount": "1"}]}"#,
            Code::InvalidArgument,
            "ReadModifyWriteRule: more than one",
        ),
        (
            Method::CheckAndMutateRow,
            r#"{"tableName": "projects/p/instances/i/tables/other"}"#,
            Code::InvalidArgument,
            "does not match",
        ),
        (
            Method::SampleRowKeys,
            r#"{"authorizedViewName": "x"}"#,
            Code::Unimplemented,
            "authorizedViewName",
        ),
        (
            Method::ReadRows,
            r#"{"materializedViewName": "x"}"#,
            Code::Unimplemented,
            "materializedViewName",
        ),
        (
            Method::ReadRows,
            r#"[]"#,
            Code::InvalidArgument,
            "ReadRowsRequest",
        ),
    ];
    for (method, body, code, text) in cases {
        let e = request_error(method, body);
        assert_eq!(e.code(), code, "{body}: {e}");
        assert!(e.to_string().contains(text), "{body}: {e}");
        assert_eq!(StoreError::from(e.clone()).code, code);
    }
}

#[test]
fn response_decoding_errors() {
    assert!(matches!(
        decode_response(
            Method::MutateRows,
            br#"{"entries":[{"index":"-1","status":{}}]}"#
        ),
        Err(RestError::OutOfRange { value: -1, .. })
    ));
    assert!(matches!(
        decode_response(
            Method::ReadRows,
            br#"{"chunks":[{"resetRow":false,"commitRow":true}]}"#
        ),
        Err(RestError::OneofConflict { .. })
    ));
    let e = decode_response(Method::MutateRow, br#"{"x":1}"#).unwrap_err();
    assert_eq!(e.into_protocol_error().code, Code::Internal);
}

#[test]
fn error_bodies_carry_http_status_and_code_name() {
    let e = StoreError::new(Code::NotFound, "Requested column family not found.");
    let body = encode_error(&e);
    assert_eq!(
        core::str::from_utf8(&body).unwrap(),
        r#"{"error":{"code":404,"message":"Requested column family not found.","status":"NOT_FOUND"}}"#
    );
    assert_eq!(decode_error(404, &body), e);
    // `status` decides when 400 is shared.
    let fp = StoreError::new(Code::FailedPrecondition, "not 8 bytes");
    assert_eq!(decode_error(400, &encode_error(&fp)), fp);
    // Not JSON: the HTTP status in reverse.
    assert_eq!(decode_error(503, b"<html>").code, Code::Unavailable);
    assert_eq!(decode_error(502, b"").code, Code::Unknown);
    // Google's envelope with details and an unknown status name.
    let google =
        br#"{"error":{"code":429,"message":"quota","status":"NOPE","details":[{"@type":"x"}]}}"#;
    assert_eq!(decode_error(429, google).code, Code::ResourceExhausted);
    // Mid-stream error element.
    assert_eq!(
        decode_stream_element(Method::ReadRows, &body).unwrap(),
        Err(e)
    );
    for code in (0..=16).map(Code::from_i32) {
        assert_eq!(code_from_name(code.name()), Some(code));
    }
}

#[test]
fn paths_parse_and_print() {
    let t = TableName::new("p", "i", "t");
    for m in Method::ALL {
        assert_eq!(TableName::parse_path(&t.path(m)), Some((t.clone(), m)));
    }
    assert_eq!(
        TableName::parse_path("/v2/projects/p/instances/i/tables/t%3AreadRows"),
        Some((t.clone(), Method::ReadRows))
    );
    for bad in [
        "/v2/projects/p/instances/i/tables/t:nope",
        "/v2/projects/p/instances/i/tables/t",
        "/v2/projects/p/instances/i/tables/:readRows",
        "/v2/projects/p/instances/i/tables/a/b:readRows",
        "/v2/projects/p/instances/i/authorizedViews/v:readRows",
        "/v1/projects/p/instances/i/tables/t:readRows",
    ] {
        assert_eq!(TableName::parse_path(bad), None, "{bad}");
    }
}

fn shared_dir() -> String {
    std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string())
}

/// Independent reading of a conformance chunk (serde_json `Value`, no rowkit-rest code): the
/// "Accept" column of `rest-json.md` 3 (both field-name forms, standard or URL-safe base64
/// with or without padding, int64/int32 as string or number, `null` wrappers absent).
fn reference_chunk(v: &Value) -> CellChunk {
    use base64::Engine;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let b = |v: &Value| {
        let config =
            GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
        let text = v.as_str().unwrap();
        GeneralPurpose::new(&base64::alphabet::STANDARD, config)
            .decode(text)
            .or_else(|_| GeneralPurpose::new(&base64::alphabet::URL_SAFE, config).decode(text))
            .unwrap()
    };
    let int = |v: &Value| match v {
        Value::String(s) => s.parse::<i64>().unwrap(),
        other => other.as_i64().unwrap(),
    };
    let mut c = CellChunk::default();
    for (key, value) in v.as_object().unwrap() {
        match key.as_str() {
            "familyName" | "family_name" | "qualifier" if value.is_null() => {}
            "rowKey" | "row_key" => c.row_key = b(value),
            "familyName" | "family_name" => {
                c.family_name = Some(value.as_str().unwrap().to_string())
            }
            "qualifier" => c.qualifier = Some(b(value)),
            "timestampMicros" | "timestamp_micros" => c.timestamp_micros = int(value),
            "labels" if value.is_null() => {}
            "labels" => {
                c.labels = value
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l.as_str().unwrap().to_string())
                    .collect()
            }
            "value" => c.value = b(value),
            "valueSize" | "value_size" => c.value_size = i32::try_from(int(value)).unwrap(),
            "commitRow" | "commit_row" if value.as_bool().unwrap() => {
                c.row_status = RowStatus::Commit
            }
            "resetRow" | "reset_row" if value.as_bool().unwrap() => c.row_status = RowStatus::Reset,
            "commitRow" | "commit_row" | "resetRow" | "reset_row" => {}
            other => panic!("unknown chunk field {other}"),
        }
    }
    c
}

/// The conformance file's chunks are proto3 JSON `CellChunk`s (`rest-json.md` 8): rowkit-rest
/// decodes every one exactly like an independent reading, and re-encodes them losslessly.
#[test]
fn conformance_chunks_decode_exactly() {
    let path = format!("{}/conformance/bigtable-readrows.json", shared_dir());
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("conformance file {path} is required: {e}"));
    let file: Value = serde_json::from_str(&text).unwrap();
    let cases = file
        .get("readRowsTests")
        .or_else(|| file.get("read_rows_tests"))
        .and_then(Value::as_array)
        .expect("readRowsTests");
    assert!(!cases.is_empty(), "no conformance cases");
    let mut chunks_seen = 0;
    for case in cases {
        let Some(chunks) = case["chunks"].as_array() else {
            continue;
        };
        let element = serde_json::to_vec(&serde_json::json!({ "chunks": chunks })).unwrap();
        let Response::ReadRowsPart(decoded) = decode_response(Method::ReadRows, &element)
            .unwrap_or_else(|e| panic!("{}: {e}", case["description"]))
        else {
            panic!()
        };
        let reference: Vec<CellChunk> = chunks.iter().map(reference_chunk).collect();
        assert_eq!(decoded.chunks, reference, "{}", case["description"]);
        let again = encode_response(&Response::ReadRowsPart(decoded.clone())).unwrap();
        assert_eq!(
            decode_response(Method::ReadRows, &again).unwrap(),
            Response::ReadRowsPart(decoded)
        );
        chunks_seen += reference.len();
    }
    assert!(chunks_seen > 0, "no chunks in any case");
}

/// A point read goes on the wire as the one-key ReadRows it stands for, and its row comes back
/// as that ReadRows' chunks.
#[test]
fn a_point_read_is_sent_as_a_one_key_read_rows() {
    let filter = Some(RowFilter::CellsPerColumnLimit(1));
    let point = Request::ReadRow(rowkit_statemachines::ReadRowRequest {
        table: "t".into(),
        app_profile_id: "p".into(),
        row_key: b"k".to_vec(),
        filter: filter.clone(),
    });
    assert_eq!(Method::of(&point), Method::ReadRows);
    assert_eq!(
        round_trip(&point),
        Request::ReadRows(rowkit_statemachines::ReadRowsRequest {
            table: "t".into(),
            app_profile_id: "p".into(),
            rows: rowkit_codec::model::RowSet::key(b"k".to_vec()),
            filter,
            rows_limit: 0,
            reversed: false,
        })
    );
    let row = rowkit_codec::model::Row {
        key: b"k".to_vec(),
        cells: vec![rowkit_codec::model::Cell {
            family: "f".into(),
            qualifier: b"q".to_vec(),
            timestamp: Timestamp(1000),
            value: b"v".to_vec(),
            labels: vec![],
        }],
    };
    let json = encode_response(&Response::Row(Some(alloc::sync::Arc::new(row)))).unwrap();
    let Response::ReadRowsPart(part) = decode_response(Method::ReadRows, &json).unwrap() else {
        panic!("not a ReadRows part")
    };
    let chunk = CellChunk {
        row_key: b"k".to_vec(),
        family_name: Some("f".into()),
        qualifier: Some(b"q".to_vec()),
        timestamp_micros: 1000,
        value: b"v".to_vec(),
        row_status: RowStatus::Commit,
        ..Default::default()
    };
    assert_eq!(part.chunks, vec![chunk]);
    let empty = encode_response(&Response::Row(None)).unwrap();
    let Response::ReadRowsPart(part) = decode_response(Method::ReadRows, &empty).unwrap() else {
        panic!("not a ReadRows part")
    };
    assert!(part.chunks.is_empty());
}
