//! Scripted tests of the retrying machines (`spec/sans-io.md` 5.1): ReadRows resume after
//! failures at every chunk position, stale responses, deadlines, reversed reads; MutateRows
//! partial failure; MutateRow idempotence.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use rowkit_codec::model::{Cell, KeyBound, Mutation, Row, RowRange, RowSet, Timestamp};
use rowkit_statemachines::raw::{MutateRow, MutateRows};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    Backoff, CellChunk, Code, Machine, MutateRowRequest, MutateRowsEntry, MutateRowsEntryResult,
    MutateRowsRequest, MutateRowsResponse, ReadRowsRequest, ReadRowsResponse, Request, Response,
    RetryPolicy, RowStatus, StoreError, Tag,
};
use rowkit_testkit::script::{Script, Step};

const SEED: u64 = 42;
const MS: i64 = 1000;

fn policy() -> RetryPolicy {
    RetryPolicy::default()
}

fn err(code: Code) -> StoreError {
    StoreError::new(code, "scripted")
}

fn open(k: &[u8]) -> KeyBound {
    KeyBound::Open(k.to_vec())
}
fn closed(k: &[u8]) -> KeyBound {
    KeyBound::Closed(k.to_vec())
}
fn range(start: KeyBound, end: KeyBound) -> RowRange {
    RowRange { start, end }
}

/// A whole one-cell row in one chunk.
fn row_chunk(key: &[u8]) -> CellChunk {
    CellChunk {
        row_key: key.to_vec(),
        family_name: Some("f".into()),
        qualifier: Some(b"q".to_vec()),
        timestamp_micros: 1000,
        value: key.to_vec(),
        row_status: RowStatus::Commit,
        ..CellChunk::default()
    }
}

/// A one-cell row with value `"012"` split over three chunks.
fn split_row_chunks(key: &[u8]) -> Vec<CellChunk> {
    vec![
        CellChunk {
            value: b"0".to_vec(),
            value_size: 3,
            row_status: RowStatus::None,
            ..row_chunk(key)
        },
        CellChunk {
            value: b"1".to_vec(),
            value_size: 3,
            ..CellChunk::default()
        },
        CellChunk {
            value: b"2".to_vec(),
            row_status: RowStatus::Commit,
            ..CellChunk::default()
        },
    ]
}

fn part(chunks: Vec<CellChunk>) -> Response {
    Response::ReadRowsPart(ReadRowsResponse {
        chunks,
        last_scanned_row_key: vec![],
    })
}

fn scanned(key: &[u8]) -> Response {
    Response::ReadRowsPart(ReadRowsResponse {
        chunks: vec![],
        last_scanned_row_key: key.to_vec(),
    })
}

fn keys(rows: &[Row]) -> Vec<&[u8]> {
    rows.iter().map(|r| r.key.as_slice()).collect()
}

fn read(rows: RowSet, rows_limit: i64, reversed: bool) -> ReadRowsRequest {
    ReadRowsRequest {
        table: "t".into(),
        app_profile_id: "p".into(),
        rows,
        filter: None,
        rows_limit,
        reversed,
    }
}

/// When the first retry after a failure at `at` may start, for this test's seed and policy.
fn first_retry_at(at: i64) -> Timestamp {
    Backoff::new(policy(), Timestamp(0), SEED)
        .next_retry_at(Timestamp(at))
        .unwrap()
}

fn start(request: &ReadRowsRequest) -> Script<ReadRows> {
    let machine = ReadRows::new(request.clone(), Timestamp(0), SEED, policy());
    let mut s = Script::new(machine, Timestamp(0));
    s.expect_request(Tag(0), &Request::ReadRows(request.clone()));
    s.expect_timeout(Some(Timestamp(60_000 * MS)));
    s
}

#[test]
fn resume_after_unavailable_at_every_chunk_position() {
    // Rows a, b (split over three chunks), c; then, on the resumed attempt, the rest and "zz".
    let original = read(
        RowSet {
            row_keys: vec![b"a".to_vec(), b"zz".to_vec()],
            row_ranges: vec![
                range(closed(b"b"), open(b"d")),
                range(open(b"m"), KeyBound::Unbounded),
            ],
        },
        10,
        false,
    );
    let mut chunks = vec![row_chunk(b"a")];
    chunks.extend(split_row_chunks(b"b"));
    chunks.push(row_chunk(b"c"));
    // After how many chunks each row is committed: a after 1, b after 4, c after 5.
    let committed_after = |n: usize| [1, 4, 5].iter().filter(|&&c| c <= n).count();
    let resumed_rows = |committed: usize| match committed {
        0 => original.rows.clone(),
        1 => RowSet {
            row_keys: vec![b"zz".to_vec()],
            row_ranges: vec![
                range(closed(b"b"), open(b"d")),
                range(open(b"m"), KeyBound::Unbounded),
            ],
        },
        2 => RowSet {
            row_keys: vec![b"zz".to_vec()],
            row_ranges: vec![
                range(open(b"b"), open(b"d")),
                range(open(b"m"), KeyBound::Unbounded),
            ],
        },
        _ => RowSet {
            row_keys: vec![b"zz".to_vec()],
            row_ranges: vec![
                range(open(b"c"), open(b"d")),
                range(open(b"m"), KeyBound::Unbounded),
            ],
        },
    };
    for cut in 0..=chunks.len() {
        let mut s = start(&original);
        s.advance(5 * MS);
        for chunk in &chunks[..cut] {
            s.respond(Tag(0), part(vec![chunk.clone()]));
        }
        let committed = committed_after(cut);
        assert_eq!(s.take_events().len(), committed, "cut {cut}");
        s.advance(2 * MS);
        s.fail(Tag(0), err(Code::Unavailable));
        s.expect_no_request();
        s.expect_timeout(Some(first_retry_at(7 * MS)));
        s.expect_running();
        s.fire_timeout();
        let expected = ReadRowsRequest {
            rows: resumed_rows(committed),
            rows_limit: 10 - committed as i64,
            ..original.clone()
        };
        s.expect_request(Tag(1), &Request::ReadRows(expected));
        // The server resends what was not committed, then "zz".
        let mut rest: Vec<CellChunk> = Vec::new();
        if committed < 1 {
            rest.push(row_chunk(b"a"));
        }
        if committed < 2 {
            rest.extend(split_row_chunks(b"b"));
        }
        if committed < 3 {
            rest.push(row_chunk(b"c"));
        }
        rest.push(row_chunk(b"zz"));
        s.respond(Tag(1), part(rest));
        s.end_stream(Tag(1));
        assert_eq!(s.take_result(), Some(Ok(4)), "cut {cut}");
        assert_eq!(s.machine().rows_emitted(), 4);
        assert_eq!(s.machine().retries(), 1);
        assert!(s.aborted().is_empty());
    }
}

#[test]
fn rows_arrive_whole_and_in_order_across_a_retry() {
    let original = read(RowSet::all(), 0, false);
    let mut s = start(&original);
    s.respond(Tag(0), part(vec![row_chunk(b"a"), row_chunk(b"b")]));
    // Half of "c" arrives, then the stream breaks: "c" must not be emitted half-built.
    s.respond(Tag(0), part(split_row_chunks(b"c")[..2].to_vec()));
    s.fail(Tag(0), err(Code::Aborted));
    s.fire_timeout();
    s.expect_request(
        Tag(1),
        &Request::ReadRows(ReadRowsRequest {
            rows: RowSet::range(range(open(b"b"), KeyBound::Unbounded)),
            ..original.clone()
        }),
    );
    s.respond(Tag(1), part(split_row_chunks(b"c")));
    s.end_stream(Tag(1));
    let rows = s.take_events();
    assert_eq!(keys(&rows), vec![&b"a"[..], b"b", b"c"]);
    assert_eq!(rows[2].cells[0].value, b"012");
    assert_eq!(s.take_result(), Some(Ok(3)));
}

#[test]
fn stale_responses_after_a_retry_are_ignored() {
    let original = read(RowSet::all(), 0, false);
    let mut s = start(&original);
    s.respond(Tag(0), part(vec![row_chunk(b"a")]));
    s.fail(Tag(0), err(Code::Unavailable));
    // While backing off, the old stream is stale.
    s.respond(Tag(0), part(vec![row_chunk(b"b")]));
    s.fire_timeout();
    let resumed = ReadRowsRequest {
        rows: RowSet::range(range(open(b"a"), KeyBound::Unbounded)),
        ..original.clone()
    };
    s.expect_request(Tag(1), &Request::ReadRows(resumed));
    // After the retry too, including an end and an error, and an unknown tag.
    s.respond(Tag(0), part(vec![row_chunk(b"c")]));
    s.end_stream(Tag(0));
    s.fail(Tag(0), err(Code::NotFound));
    s.respond(Tag(7), part(vec![row_chunk(b"d")]));
    s.expect_running();
    assert_eq!(keys(&s.take_events()), vec![&b"a"[..]]);
    assert_eq!(s.machine().stale_responses(), 5);
    s.respond(Tag(1), part(vec![row_chunk(b"b")]));
    s.end_stream(Tag(1));
    assert_eq!(keys(&s.take_events()), vec![&b"b"[..]]);
    assert_eq!(s.take_result(), Some(Ok(2)));
    // After the end, everything is stale.
    s.respond(Tag(1), part(vec![row_chunk(b"z")]));
    assert!(s.take_events().is_empty());
    assert_eq!(s.take_result(), None);
}

#[test]
fn non_retryable_error_ends_the_read() {
    let original = read(RowSet::all(), 0, false);
    let mut s = start(&original);
    s.respond(Tag(0), part(vec![row_chunk(b"a")]));
    s.fail(Tag(0), err(Code::NotFound));
    assert_eq!(keys(&s.take_events()), vec![&b"a"[..]]);
    assert_eq!(s.take_result(), Some(Err(err(Code::NotFound))));
    s.expect_no_request();
    s.expect_timeout(None);
}

#[test]
fn protocol_error_is_internal_and_not_retried() {
    let original = read(RowSet::all(), 0, false);
    let mut s = start(&original);
    let no_key = CellChunk {
        row_key: vec![],
        ..row_chunk(b"x")
    };
    s.respond(Tag(0), part(vec![row_chunk(b"a"), no_key]));
    // The row before the violation is delivered; the stream is aborted; nothing is retried.
    assert_eq!(keys(&s.take_events()), vec![&b"a"[..]]);
    let result = s.take_result().unwrap().unwrap_err();
    assert_eq!(result.code, Code::Internal);
    assert!(result.message.contains("row key"), "{}", result.message);
    assert_eq!(s.aborted(), &[Tag(0)]);
    s.expect_no_request();
    s.expect_timeout(None);
}

#[test]
fn stream_ending_inside_a_row_is_a_protocol_error() {
    let original = read(RowSet::all(), 0, false);
    let mut s = start(&original);
    s.respond(Tag(0), part(split_row_chunks(b"a")[..1].to_vec()));
    s.end_stream(Tag(0));
    assert_eq!(s.take_result().unwrap().unwrap_err().code, Code::Internal);
    s.expect_no_request();
}

#[test]
fn wrong_response_type_is_a_protocol_error() {
    let original = read(RowSet::all(), 0, false);
    let mut s = start(&original);
    s.respond(Tag(0), Response::MutateRow);
    assert_eq!(s.take_result().unwrap().unwrap_err().code, Code::Internal);
    assert_eq!(s.aborted(), &[Tag(0)]);
}

#[test]
fn rows_limit_overrun_is_a_protocol_error() {
    let original = read(RowSet::all(), 1, false);
    let mut s = start(&original);
    s.respond(Tag(0), part(vec![row_chunk(b"a"), row_chunk(b"b")]));
    assert_eq!(keys(&s.take_events()), vec![&b"a"[..]]);
    assert_eq!(s.take_result().unwrap().unwrap_err().code, Code::Internal);
}

#[test]
fn failure_after_the_rows_limit_completes_the_read() {
    let original = read(RowSet::all(), 2, false);
    let mut s = start(&original);
    s.respond(Tag(0), part(vec![row_chunk(b"a"), row_chunk(b"b")]));
    s.fail(Tag(0), err(Code::Unavailable));
    s.expect_no_request();
    assert_eq!(s.take_result(), Some(Ok(2)));
}

#[test]
fn failure_after_the_last_key_completes_the_read() {
    let original = read(RowSet::key(b"a".to_vec()), 0, false);
    let mut s = start(&original);
    s.respond(Tag(0), part(vec![row_chunk(b"a")]));
    s.fail(Tag(0), err(Code::DeadlineExceeded));
    s.expect_no_request();
    assert_eq!(s.take_result(), Some(Ok(1)));
}

#[test]
fn scan_marker_moves_the_resume_point() {
    let original = read(RowSet::range(RowRange::half_open("a", "z")), 5, false);
    let mut s = start(&original);
    s.respond(Tag(0), part(vec![row_chunk(b"b")]));
    s.respond(Tag(0), scanned(b"m"));
    s.fail(Tag(0), err(Code::Unavailable));
    s.fire_timeout();
    s.expect_request(
        Tag(1),
        &Request::ReadRows(ReadRowsRequest {
            rows: RowSet::range(range(open(b"m"), open(b"z"))),
            rows_limit: 4,
            ..original.clone()
        }),
    );
    // A row at or before the scan marker is out of order.
    s.respond(Tag(1), part(vec![row_chunk(b"m")]));
    assert_eq!(s.take_result().unwrap().unwrap_err().code, Code::Internal);
}

#[test]
fn reversed_read_resumes_below_the_last_key() {
    let original = read(RowSet::all(), 0, true);
    let mut s = start(&original);
    s.respond(Tag(0), part(vec![row_chunk(b"z"), row_chunk(b"y")]));
    s.fail(Tag(0), err(Code::Unavailable));
    s.fire_timeout();
    s.expect_request(
        Tag(1),
        &Request::ReadRows(ReadRowsRequest {
            rows: RowSet::range(range(KeyBound::Unbounded, open(b"y"))),
            ..original.clone()
        }),
    );
    // The resumed stream continues downwards.
    s.respond(Tag(1), part(vec![row_chunk(b"x"), row_chunk(b"w")]));
    s.fail(Tag(1), err(Code::Unavailable));
    s.fire_timeout();
    s.expect_request(
        Tag(2),
        &Request::ReadRows(ReadRowsRequest {
            rows: RowSet::range(range(KeyBound::Unbounded, open(b"w"))),
            ..original.clone()
        }),
    );
    s.respond(Tag(2), part(vec![row_chunk(b"a")]));
    s.end_stream(Tag(2));
    assert_eq!(
        keys(&s.take_events()),
        vec![&b"z"[..], b"y", b"x", b"w", b"a"]
    );
    assert_eq!(s.take_result(), Some(Ok(5)));
}

#[test]
fn reversed_read_with_ranges_and_keys() {
    let original = read(
        RowSet {
            row_keys: vec![b"b".to_vec(), b"q".to_vec()],
            row_ranges: vec![
                range(closed(b"c"), closed(b"k")),
                range(open(b"p"), KeyBound::Unbounded),
            ],
        },
        3,
        true,
    );
    let mut s = start(&original);
    s.respond(Tag(0), part(vec![row_chunk(b"x"), row_chunk(b"q")]));
    s.fail(Tag(0), err(Code::Unavailable));
    s.fire_timeout();
    s.expect_request(
        Tag(1),
        &Request::ReadRows(ReadRowsRequest {
            rows: RowSet {
                row_keys: vec![b"b".to_vec()],
                row_ranges: vec![
                    range(closed(b"c"), closed(b"k")),
                    range(open(b"p"), open(b"q")),
                ],
            },
            rows_limit: 1,
            ..original.clone()
        }),
    );
    s.respond(Tag(1), part(vec![row_chunk(b"k")]));
    s.end_stream(Tag(1));
    assert_eq!(s.take_result(), Some(Ok(3)));
}

#[test]
fn retries_until_the_operation_deadline_then_last_error() {
    let policy = RetryPolicy {
        initial_backoff: 40 * MS,
        max_backoff: 1_000 * MS,
        attempt_timeout: 0,
        operation_timeout: 500 * MS,
    };
    let original = read(RowSet::all(), 0, false);
    let mut s = Script::new(
        ReadRows::new(original.clone(), Timestamp(0), SEED, policy),
        Timestamp(0),
    );
    let mut backoff = Backoff::new(policy, Timestamp(0), SEED);
    let mut tag = 0;
    loop {
        s.expect_request(Tag(tag), &Request::ReadRows(original.clone()));
        s.advance(MS);
        let failed_at = s.now();
        s.fail(Tag(tag), err(Code::Unavailable));
        match backoff.next_retry_at(failed_at) {
            Some(at) => {
                s.expect_timeout(Some(at));
                assert!(at < Timestamp(500 * MS));
                assert_eq!(s.fire_timeout(), at);
                tag += 1;
            }
            None => break,
        }
    }
    assert!(tag >= 2, "only {tag} retries");
    assert_eq!(u64::from(s.machine().retries()), tag);
    assert_eq!(s.take_result(), Some(Err(err(Code::Unavailable))));
    s.expect_timeout(None);
    s.expect_no_request();
}

#[test]
fn attempt_deadline_aborts_and_counts_as_deadline_exceeded() {
    let policy = RetryPolicy {
        initial_backoff: 10 * MS,
        max_backoff: 10 * MS,
        attempt_timeout: 30 * MS,
        operation_timeout: 100 * MS,
    };
    let original = read(RowSet::all(), 0, false);
    let mut s = Script::new(
        ReadRows::new(original.clone(), Timestamp(0), SEED, policy),
        Timestamp(0),
    );
    s.expect_request(Tag(0), &Request::ReadRows(original.clone()));
    s.expect_timeout(Some(Timestamp(30 * MS)));
    s.respond(Tag(0), part(vec![row_chunk(b"a")]));
    s.fire_timeout();
    assert_eq!(s.aborted(), &[Tag(0)]);
    // The first retry waits 5..=10 ms.
    let at = s.machine().poll_timeout().unwrap();
    assert!((35 * MS..=40 * MS).contains(&at.0), "{at:?}");
    s.fire_timeout();
    let resumed = ReadRowsRequest {
        rows: RowSet::range(range(open(b"a"), KeyBound::Unbounded)),
        ..original.clone()
    };
    s.expect_request(Tag(1), &Request::ReadRows(resumed.clone()));
    s.expect_timeout(Some(at.saturating_add_micros(30 * MS)));
    // Attempts keep timing out; the last one is cut by the operation deadline.
    let mut tag = 1;
    while s.result().is_none() {
        s.fire_timeout();
        if let Some((t, r)) = s.next_request() {
            tag += 1;
            assert_eq!((t, r), (Tag(tag), Request::ReadRows(resumed.clone())));
        }
        assert!(s.now() <= Timestamp(100 * MS));
    }
    assert_eq!(
        s.take_result().unwrap().unwrap_err().code,
        Code::DeadlineExceeded
    );
    assert_eq!(s.aborted().len() as u64, tag + 1);
    assert_eq!(keys(&s.take_events()), vec![&b"a"[..]]);
}

#[test]
fn clock_jump_past_the_deadline_while_backing_off_gives_up() {
    let original = read(RowSet::all(), 0, false);
    let mut s = start(&original);
    s.fail(Tag(0), err(Code::Aborted));
    s.set_clock(Timestamp(61_000 * MS));
    s.timeout();
    assert_eq!(s.take_result(), Some(Err(err(Code::Aborted))));
    s.expect_no_request();
}

#[test]
fn backwards_clock_is_clamped() {
    let original = read(RowSet::all(), 0, false);
    let mut s = start(&original);
    s.set_clock(Timestamp(10 * MS));
    s.respond(Tag(0), part(vec![row_chunk(b"a")]));
    s.set_clock(Timestamp(2 * MS));
    s.fail(Tag(0), err(Code::Unavailable));
    // The failure counts as happening at 10 ms, the latest time seen.
    s.expect_timeout(Some(first_retry_at(10 * MS)));
    // A timeout call with an earlier clock fires nothing.
    s.timeout();
    s.expect_no_request();
    s.fire_timeout();
    assert_eq!(s.next_request().unwrap().0, Tag(1));
}

#[test]
fn cancel_ends_with_cancelled_and_aborts() {
    let original = read(RowSet::all(), 0, false);
    let mut s = start(&original);
    s.cancel();
    assert_eq!(s.take_result().unwrap().unwrap_err().code, Code::Cancelled);
    assert_eq!(s.aborted(), &[Tag(0)]);
    s.expect_timeout(None);
    s.respond(Tag(0), part(vec![row_chunk(b"a")]));
    assert!(s.take_events().is_empty());
}

#[test]
fn same_seed_same_requests_and_timeouts() {
    let run = |seed: u64| {
        let original = read(RowSet::all(), 0, false);
        let mut s = Script::new(
            ReadRows::new(original, Timestamp(0), seed, policy()),
            Timestamp(0),
        );
        let mut trace = Vec::new();
        for tag in 0..5 {
            let request = s.next_request().unwrap();
            assert_eq!(request.0, Tag(tag));
            trace.push(s.machine().poll_timeout());
            s.fail(Tag(tag), err(Code::Unavailable));
            trace.push(s.machine().poll_timeout());
            s.fire_timeout();
        }
        trace
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn table_driven_script() {
    let original = read(RowSet::all(), 0, false);
    let mut s = start(&original);
    s.run([
        Step::Advance(5 * MS),
        Step::Respond(Tag(0), part(vec![row_chunk(b"a"), row_chunk(b"b")])),
        Step::Advance(2 * MS),
        Step::Fail(Tag(0), err(Code::Unavailable)),
        Step::ExpectNoRequest,
        Step::ExpectTimeout(Some(first_retry_at(7 * MS))),
        Step::FireTimeout,
        Step::ExpectRequest(
            Tag(1),
            Request::ReadRows(ReadRowsRequest {
                rows: RowSet::range(range(open(b"b"), KeyBound::Unbounded)),
                ..original.clone()
            }),
        ),
        Step::Respond(Tag(0), part(vec![row_chunk(b"c")])),
        Step::EndStream(Tag(1)),
    ]);
    assert_eq!(keys(&s.take_events()), vec![&b"a"[..], b"b"]);
    assert_eq!(s.take_result(), Some(Ok(2)));
}

// ---- MutateRows / MutateRow ----

fn set_cell(ts: Timestamp) -> Mutation {
    Mutation::SetCell {
        family: "f".into(),
        qualifier: b"q".to_vec(),
        timestamp: ts,
        value: b"v".to_vec(),
    }
}

fn entry(key: &[u8], idempotent: bool) -> MutateRowsEntry {
    let ts = if idempotent {
        Timestamp::from_millis(1)
    } else {
        Timestamp::SERVER_TIME
    };
    MutateRowsEntry {
        row_key: key.to_vec(),
        mutations: vec![Mutation::DeleteFromRow, set_cell(ts)],
    }
}

fn batch(entries: Vec<MutateRowsEntry>) -> MutateRowsRequest {
    MutateRowsRequest {
        table: "t".into(),
        app_profile_id: String::new(),
        entries: entries.into(),
    }
}

fn statuses(entries: &[(usize, Result<(), Code>)]) -> Response {
    Response::MutateRowsPart(MutateRowsResponse {
        entries: entries
            .iter()
            .map(|(index, r)| MutateRowsEntryResult {
                index: *index,
                result: r.map_err(err),
            })
            .collect(),
    })
}

#[test]
fn mutate_rows_partial_failure_with_non_idempotent_entries() {
    let original = batch(vec![
        entry(b"e0", true),
        entry(b"e1", true),
        entry(b"e2", false),
        entry(b"e3", true),
        entry(b"e4", true),
        entry(b"e5", false),
    ]);
    let mut s = Script::new(
        MutateRows::new(original.clone(), Timestamp(0), SEED, policy()),
        Timestamp(0),
    );
    s.expect_request(Tag(0), &Request::MutateRows(original.clone()));
    s.respond(
        Tag(0),
        statuses(&[
            (3, Err(Code::NotFound)),
            (0, Ok(())),
            (1, Err(Code::Unavailable)),
            (2, Err(Code::Unavailable)),
        ]),
    );
    // e4 and e5 got no status before the stream broke.
    s.fail(Tag(0), err(Code::Unavailable));
    s.expect_no_request();
    s.fire_timeout();
    // Retried: e1 (retryable) and e4 (no status); not e2/e5 (server time), not e3 (NOT_FOUND).
    s.expect_request(
        Tag(1),
        &Request::MutateRows(batch(vec![entry(b"e1", true), entry(b"e4", true)])),
    );
    s.respond(Tag(1), statuses(&[(1, Err(Code::Aborted)), (0, Ok(()))]));
    // A stale part from the first attempt must not touch the mapping.
    s.respond(Tag(0), statuses(&[(4, Err(Code::PermissionDenied))]));
    s.end_stream(Tag(1));
    s.fire_timeout();
    s.expect_request(
        Tag(2),
        &Request::MutateRows(batch(vec![entry(b"e4", true)])),
    );
    s.respond(Tag(2), statuses(&[(0, Ok(()))]));
    s.end_stream(Tag(2));
    let results = s.take_result().unwrap().unwrap();
    let codes: Vec<Option<Code>> = results
        .iter()
        .map(|r| r.result.as_ref().err().map(|e| e.code))
        .collect();
    assert_eq!(
        codes,
        vec![
            None,
            None,
            Some(Code::Unavailable),
            Some(Code::NotFound),
            None,
            Some(Code::Unavailable),
        ]
    );
    let indexes: Vec<usize> = results.iter().map(|r| r.index).collect();
    assert_eq!(indexes, vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(s.machine().stale_responses(), 1);
}

#[test]
fn mutate_rows_missing_entry_after_clean_end_is_internal() {
    let original = batch(vec![entry(b"a", true), entry(b"b", true)]);
    let mut s = Script::new(
        MutateRows::new(original.clone(), Timestamp(0), SEED, policy()),
        Timestamp(0),
    );
    s.expect_request(Tag(0), &Request::MutateRows(original));
    s.respond(Tag(0), statuses(&[(0, Ok(()))]));
    s.end_stream(Tag(0));
    s.expect_no_request();
    let results = s.take_result().unwrap().unwrap();
    assert_eq!(results[0].result, Ok(()));
    assert_eq!(results[1].result.as_ref().unwrap_err().code, Code::Internal);
}

#[test]
fn mutate_rows_unknown_index_is_a_protocol_error() {
    let original = batch(vec![entry(b"a", true)]);
    let mut s = Script::new(
        MutateRows::new(original, Timestamp(0), SEED, policy()),
        Timestamp(0),
    );
    s.next_request().unwrap();
    s.respond(Tag(0), statuses(&[(1, Ok(()))]));
    assert_eq!(s.take_result().unwrap().unwrap_err().code, Code::Internal);
    assert_eq!(s.aborted(), &[Tag(0)]);
}

#[test]
fn mutate_rows_whole_request_error_is_every_entrys() {
    let original = batch(vec![entry(b"a", true), entry(b"b", false)]);
    let mut s = Script::new(
        MutateRows::new(original, Timestamp(0), SEED, policy()),
        Timestamp(0),
    );
    s.next_request().unwrap();
    s.fail(Tag(0), err(Code::NotFound));
    s.expect_no_request();
    let results = s.take_result().unwrap().unwrap();
    assert!(results.iter().all(|r| r.result == Err(err(Code::NotFound))));
}

#[test]
fn mutate_rows_deadline_keeps_the_last_statuses() {
    let policy = RetryPolicy {
        initial_backoff: 40 * MS,
        max_backoff: 40 * MS,
        attempt_timeout: 0,
        operation_timeout: 50 * MS,
    };
    let original = batch(vec![entry(b"a", true), entry(b"b", true)]);
    let mut s = Script::new(
        MutateRows::new(original, Timestamp(0), SEED, policy),
        Timestamp(0),
    );
    s.next_request().unwrap();
    s.respond(
        Tag(0),
        statuses(&[(0, Ok(())), (1, Err(Code::Unavailable))]),
    );
    s.end_stream(Tag(0));
    let mut tag = 0;
    while s.result().is_none() {
        s.fire_timeout();
        if let Some((t, _)) = s.next_request() {
            tag += 1;
            assert_eq!(t, Tag(tag));
            s.advance(5 * MS);
            s.fail(t, err(Code::DeadlineExceeded));
        }
    }
    let results = s.take_result().unwrap().unwrap();
    assert_eq!(results[0].result, Ok(()));
    assert_eq!(
        results[1].result.as_ref().unwrap_err().code,
        Code::DeadlineExceeded
    );
}

#[test]
fn mutate_rows_empty_request_error_is_the_operations() {
    let mut s = Script::new(
        MutateRows::new(batch(vec![]), Timestamp(0), SEED, policy()),
        Timestamp(0),
    );
    s.next_request().unwrap();
    s.fail(Tag(0), err(Code::InvalidArgument));
    assert_eq!(s.take_result(), Some(Err(err(Code::InvalidArgument))));
}

fn single(idempotent: bool) -> MutateRowRequest {
    MutateRowRequest {
        table: "t".into(),
        app_profile_id: String::new(),
        row_key: b"r".to_vec(),
        mutations: entry(b"r", idempotent).mutations,
    }
}

#[test]
fn mutate_row_idempotent_is_retried() {
    let request = single(true);
    let mut s = Script::new(
        MutateRow::new(request.clone(), Timestamp(0), SEED, policy()),
        Timestamp(0),
    );
    s.expect_request(Tag(0), &Request::MutateRow(request.clone()));
    s.fail(Tag(0), err(Code::Unavailable));
    s.expect_timeout(Some(first_retry_at(0)));
    s.fire_timeout();
    s.expect_request(Tag(1), &Request::MutateRow(request));
    s.respond(Tag(0), Response::MutateRow);
    s.expect_running();
    s.respond(Tag(1), Response::MutateRow);
    assert_eq!(s.take_result(), Some(Ok(())));
}

#[test]
fn mutate_row_non_idempotent_is_not_retried() {
    let request = single(false);
    let mut s = Script::new(
        MutateRow::new(request, Timestamp(0), SEED, policy()),
        Timestamp(0),
    );
    s.next_request().unwrap();
    s.fail(Tag(0), err(Code::Unavailable));
    s.expect_no_request();
    assert_eq!(s.take_result(), Some(Err(err(Code::Unavailable))));
}

#[test]
fn mutate_row_non_retryable_error_fails() {
    let mut s = Script::new(
        MutateRow::new(single(true), Timestamp(0), SEED, policy()),
        Timestamp(0),
    );
    s.next_request().unwrap();
    s.fail(Tag(0), err(Code::FailedPrecondition));
    assert_eq!(s.take_result(), Some(Err(err(Code::FailedPrecondition))));
    s.expect_timeout(None);
}

#[test]
fn mutate_row_attempt_timeout_retries_idempotent_only() {
    let policy = RetryPolicy {
        attempt_timeout: 20 * MS,
        ..policy()
    };
    let mut s = Script::new(
        MutateRow::new(single(false), Timestamp(0), SEED, policy),
        Timestamp(0),
    );
    s.next_request().unwrap();
    s.fire_timeout();
    assert_eq!(s.aborted(), &[Tag(0)]);
    assert_eq!(
        s.take_result().unwrap().unwrap_err().code,
        Code::DeadlineExceeded
    );

    let mut s = Script::new(
        MutateRow::new(single(true), Timestamp(0), SEED, policy),
        Timestamp(0),
    );
    s.next_request().unwrap();
    s.fire_timeout();
    s.fire_timeout();
    assert_eq!(s.next_request().unwrap().0, Tag(1));
    s.respond(Tag(1), Response::MutateRow);
    assert_eq!(s.take_result(), Some(Ok(())));
}

/// Whole rows (`Response::Rows`, from a local store or the hot-row cache) in `keys` order.
fn whole(keys: &[&[u8]]) -> Response {
    Response::Rows(keys.iter().map(|k| Arc::new(whole_row(k))).collect())
}

fn whole_row(key: &[u8]) -> Row {
    Row {
        key: key.to_vec(),
        cells: vec![Cell {
            family: "f".into(),
            qualifier: b"q".to_vec(),
            timestamp: Timestamp(1000),
            value: key.to_vec(),
            labels: vec![],
        }],
    }
}

/// Whole rows pass through without the merger and count like merged ones: a retry after a
/// partial answer resumes after the last whole row, with the limit reduced by what arrived;
/// chunks and whole rows may follow one another.
#[test]
fn whole_rows_pass_through_and_resume_like_merged_ones() {
    let original = read(RowSet::all(), 4, false);
    let mut s = start(&original);
    s.respond(Tag(0), whole(&[b"a"]));
    s.respond(Tag(0), part(vec![row_chunk(b"b")]));
    s.fail(Tag(0), err(Code::Unavailable));
    s.fire_timeout();
    s.expect_request(
        Tag(1),
        &Request::ReadRows(ReadRowsRequest {
            rows: RowSet::range(range(open(b"b"), KeyBound::Unbounded)),
            rows_limit: 2,
            ..original.clone()
        }),
    );
    s.respond(Tag(1), whole(&[b"c", b"d"]));
    s.end_stream(Tag(1));
    let rows = s.take_events();
    assert_eq!(keys(&rows), vec![&b"a"[..], b"b", b"c", b"d"]);
    assert_eq!(rows[0], whole_row(b"a"));
    assert_eq!(s.take_result(), Some(Ok(4)));
}

/// Whole rows obey the merger's rules: order, `rows_limit`, never inside a chunked row, never
/// empty. A violation is `INTERNAL`, rows before it are delivered.
#[test]
fn whole_rows_are_checked_like_merged_ones() {
    let cases: [(ReadRowsRequest, Vec<Response>, usize); 5] = [
        (read(RowSet::all(), 0, false), vec![whole(&[b"b", b"a"])], 1),
        (
            read(RowSet::all(), 0, false),
            vec![whole(&[b"b"]), whole(&[b"b"])],
            1,
        ),
        (read(RowSet::all(), 0, true), vec![whole(&[b"a", b"b"])], 1),
        (read(RowSet::all(), 1, false), vec![whole(&[b"a", b"b"])], 1),
        (
            read(RowSet::all(), 0, false),
            vec![part(split_row_chunks(b"a")[..1].to_vec()), whole(&[b"b"])],
            0,
        ),
    ];
    for (i, (request, responses, delivered)) in cases.into_iter().enumerate() {
        let mut s = start(&request);
        for r in responses {
            s.respond(Tag(0), r);
        }
        assert_eq!(s.take_events().len(), delivered, "case {i}");
        let e = s.take_result().unwrap().unwrap_err();
        assert_eq!(e.code, Code::Internal, "case {i}: {e}");
        s.expect_no_request();
    }
    let mut s = start(&read(RowSet::all(), 0, false));
    s.respond(
        Tag(0),
        Response::Rows(vec![Arc::new(Row {
            key: b"a".to_vec(),
            cells: vec![],
        })]),
    );
    assert_eq!(s.take_result().unwrap().unwrap_err().code, Code::Internal);
}

/// A whole row reaches the reader as the very row it was handed (shared, not copied).
#[test]
fn a_whole_row_is_handed_on_shared() {
    let row = Arc::new(whole_row(b"k"));
    let mut m = ReadRows::new(read(RowSet::all(), 0, false), Timestamp(0), SEED, policy());
    let (tag, _) = m.poll_request().unwrap();
    m.handle_response(tag, Ok(Response::Rows(vec![row.clone()])), Timestamp(1));
    let got = m.poll_shared_row().unwrap();
    assert!(Arc::ptr_eq(&got, &row));
    m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(2));
    assert_eq!(m.result(), Some(Ok(1)));
}
