#![allow(clippy::unwrap_used)]
//! The triple-store machines on the one operation shell: cancel and the deadline end every
//! operation `Aborted`, `now` never moves back, rows stream through a lookup as they come.

use rowkit_codec::triples::Triple;
use rowkit_codec::triples::keys;
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::triples::{
    AddTriples, DeleteGraph, Exist, GraphExists, GraphNames, Lookup, LookupMethod, LookupOptions,
    NewGraph, OperationConfig, RemoveTriples, TriplesError,
};
use rowkit_statemachines::{
    CellChunk, Code, Machine, ReadRowsResponse, Response, RowStatus, StoreError, Timestamp,
};

fn config() -> OperationConfig {
    OperationConfig::new("badwolf")
}

/// Starting at `now` µs with seed 1, aborted at `deadline` µs.
fn start(now: i64, deadline: i64) -> Start {
    Start {
        now: Timestamp(now),
        seed: 1,
        deadline: Timestamp(deadline),
    }
}

fn triple(text: &str) -> Triple {
    Triple::parse(text.as_bytes()).unwrap()
}

/// A one-cell row of family `family` holding `value`.
fn row(key: &[u8], family: &str, value: &[u8]) -> Response {
    Response::ReadRowsPart(ReadRowsResponse {
        chunks: vec![CellChunk {
            row_key: key.to_vec(),
            family_name: Some(family.into()),
            qualifier: Some(b"q".to_vec()),
            timestamp_micros: 1000,
            value: value.to_vec(),
            row_status: RowStatus::Commit,
            ..CellChunk::default()
        }],
        last_scanned_row_key: vec![],
    })
}

#[test]
fn every_machine_is_send_and_static() {
    fn check<M: Machine + Send + 'static>() {}
    check::<NewGraph>();
    check::<GraphExists>();
    check::<DeleteGraph>();
    check::<GraphNames>();
    check::<AddTriples>();
    check::<RemoveTriples>();
    check::<Lookup>();
    check::<Exist>();
}

/// `cancel` ends the operation `Aborted` (it used to end `Store(CANCELLED)`) and aborts the
/// request in flight.
#[test]
fn cancel_ends_aborted() {
    let mut m = NewGraph::new(config(), b"g", start(0, 60_000_000));
    let (tag, _) = m.poll_request().unwrap();
    m.cancel(Timestamp(5));
    assert_eq!(m.poll_abort(), Some(tag));
    assert_eq!(m.result(), Some(Err(TriplesError::Aborted)));
    assert_eq!(m.poll_timeout(), None);
    assert!(m.poll_request().is_none());
}

/// The deadline is the machine's timer, and reaching it ends the operation `Aborted` (it used
/// to end `DeadlineExceeded`), whichever input reaches it.
#[test]
fn the_deadline_ends_aborted() {
    // A unary child has no timer of its own: the deadline is the machine's.
    let mut m = NewGraph::new(config(), b"g", start(0, 1_000));
    let (tag, _) = m.poll_request().unwrap();
    assert_eq!(m.poll_timeout(), Some(Timestamp(1_000)));
    m.handle_timeout(Timestamp(1_000));
    assert_eq!(m.poll_abort(), Some(tag));
    assert_eq!(m.result(), Some(Err(TriplesError::Aborted)));
    // A response arriving past the deadline is not taken.
    let mut m = GraphNames::new(config(), start(0, 1_000));
    let (tag, _) = m.poll_request().unwrap();
    m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(1_000));
    assert_eq!(m.result(), Some(Err(TriplesError::Aborted)));
    // Started at its deadline, an operation sends nothing.
    let mut m = GraphExists::new(config(), b"g", start(1_000, 1_000));
    assert!(m.poll_request().is_none());
    assert_eq!(m.result(), Some(Err(TriplesError::Aborted)));
}

/// An input with an earlier `now` does not move the operation's clock back: the retry of a
/// batch that failed at an earlier `now` is still scheduled after the start.
#[test]
fn now_never_moves_back() {
    let t = triple("/u<joe>\t\"knows\"@[]\t/u<mary>");
    let at_start = start(10_000_000, 100_000_000);
    let mut m = AddTriples::new(config(), b"g", vec![t], at_start);
    let (tag, _) = m.poll_request().unwrap();
    m.handle_response(
        tag,
        Err(StoreError::new(Code::Unavailable, "down")),
        Timestamp(0),
    );
    let at = m.poll_timeout().unwrap();
    assert!(
        at > at_start.now,
        "retry at {at:?}, before the start {at_start:?}"
    );
    m.handle_timeout(at);
    assert!(m.poll_request().is_some(), "the batch is resent");
}

/// A lookup's rows go through the pipeline as they arrive: a cell that does not parse ends
/// it at once, with the read aborted; invalid options end it before any request.
#[test]
fn a_lookup_streams_and_validates_before_sending() {
    let mut m = Lookup::new(
        config(),
        b"g",
        LookupMethod::Triples,
        LookupOptions::default(),
        start(0, 60_000_000),
    );
    let (tag, _) = m.poll_request().unwrap();
    let cell = &keys::triple_cells(b"g", &triple("/u<joe>\t\"knows\"@[]\t/u<mary>"))[0];
    let key = cell.row_key.clone();
    m.handle_response(
        tag,
        Ok(row(&key, keys::FAMILY_IMMUTABLE, b"not a triple")),
        Timestamp(1),
    );
    assert_eq!(m.poll_abort(), Some(tag));
    assert!(matches!(
        m.result(),
        Some(Err(TriplesError::LookupParse { .. }))
    ));
    let bad = LookupOptions {
        latest_anchor: true,
        filter_options: Some(rowkit_statemachines::triples::FilterOptions {
            operation: rowkit_statemachines::triples::FilterOperation::LATEST,
            field: rowkit_statemachines::triples::FilterField::PREDICATE,
            value: None,
        }),
        ..LookupOptions::default()
    };
    let mut m = Lookup::new(
        config(),
        b"g",
        LookupMethod::Triples,
        bad,
        start(0, 60_000_000),
    );
    assert!(m.poll_request().is_none());
    assert!(matches!(m.result(), Some(Err(TriplesError::Options(_)))));
}
