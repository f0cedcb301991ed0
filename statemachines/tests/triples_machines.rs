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

/// `Exist` on a POS row holding `cells` (family, value), in that order.
fn exist_on(asked: &Triple, cells: &[(&str, &[u8])]) -> Result<bool, TriplesError> {
    let mut m = Exist::new(config(), b"g", asked.clone(), start(0, 60_000_000));
    let (tag, request) = m.poll_request().unwrap();
    let rowkit_statemachines::Request::ReadRow(read) = request else {
        panic!("not a point read: {request:?}");
    };
    assert_eq!(read.row_key, keys::exist_row_key(b"g", asked));
    let row = rowkit_codec::model::Row {
        key: read.row_key,
        cells: cells
            .iter()
            .enumerate()
            .map(|(i, (family, value))| rowkit_codec::model::Cell {
                family: (*family).into(),
                qualifier: b"OS".to_vec(),
                timestamp: Timestamp(1000 * (cells.len() - i) as i64),
                value: value.to_vec(),
                labels: Vec::new(),
            })
            .collect(),
    };
    m.handle_response(
        tag,
        Ok(Response::Row(Some(std::sync::Arc::new(row)))),
        Timestamp(1),
    );
    m.result().unwrap()
}

/// What `Exist` answers by the spec's full path: every triple cell parsed (the first that
/// does not parse fails it), true iff one has the asked triple's UUID.
fn exist_by_parsing(asked: &Triple, cells: &[(&str, &[u8])]) -> Result<bool, ()> {
    let mut found = false;
    for (family, value) in cells {
        if *family != keys::FAMILY_IMMUTABLE && *family != keys::FAMILY_TEMPORAL {
            continue;
        }
        let t = Triple::parse(value).map_err(|_| ())?;
        found |= t.uuid() == asked.uuid();
    }
    Ok(found)
}

/// A cell holding the asked triple's own text is not parsed when that text is certain to
/// parse back to it (`Triple::round_trip_text`); `Exist` still answers as parsing every cell
/// would: the cell matches, another cell that does not parse still fails it (before or
/// after), another triple or the same triple written differently is judged by its UUID, and
/// a text that does not round-trip is parsed.
#[test]
fn exist_skips_parsing_only_the_asked_triples_own_text() {
    let plain = triple("/u<joe>\t\"knows\"@[]\t/u<mary>");
    let temporal = triple("/u<joe>\t\"met\"@[2020-01-02T00:00:03.5Z]\t/u<mary>");
    let odd = Triple {
        subject: rowkit_codec::triples::Node::new(b"/u", b"a] /b").unwrap(),
        ..plain.clone()
    };
    assert!(plain.round_trip_text().is_some() && temporal.round_trip_text().is_some());
    assert!(odd.round_trip_text().is_none());
    let (im, tm) = (keys::FAMILY_IMMUTABLE, keys::FAMILY_TEMPORAL);
    for asked in [&plain, &temporal, &odd] {
        let (own, spaced, other) = (
            asked.to_text(),
            [b" ".as_slice(), &asked.to_text(), b"\n"].concat(),
            triple("/u<joe>\t\"knows\"@[]\t/u<bob>").to_text(),
        );
        let (own, spaced, other) = (own.as_slice(), spaced.as_slice(), other.as_slice());
        let bad: &[u8] = b"not a triple";
        let family = if asked.predicate.is_immutable() {
            im
        } else {
            tm
        };
        let cases: [&[(&str, &[u8])]; 8] = [
            &[(family, own)],
            &[(family, own), (im, bad)],
            &[(tm, bad), (family, own)],
            &[(im, other)],
            &[(im, other), (family, spaced)],
            &[("graph", bad), (family, own)],
            &[(family, spaced)],
            &[],
        ];
        for cells in cases {
            let got = exist_on(asked, cells);
            match exist_by_parsing(asked, cells) {
                Ok(expected) => assert_eq!(got, Ok(expected), "{asked:?} {cells:?}"),
                Err(()) => assert!(
                    matches!(got, Err(TriplesError::LookupParse { .. })),
                    "{asked:?} {cells:?}: {got:?}"
                ),
            }
        }
    }
}
