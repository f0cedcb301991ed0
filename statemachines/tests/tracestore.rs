//! Scripted tests of the trace store machines (`spec/tracestore.md` 17, scenario 29).
#![allow(clippy::unwrap_used)]

use rowkit_codec::tracestore::CodecError;
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::ops::params_from;
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::tracestore::{
    PUT_DEADLINE_MICROS, Put, PutEntry, READ_DEADLINE_MICROS, ReadDense, TraceStoreError,
    TraceStoreState,
};
use rowkit_statemachines::{Code, Request, Response, StoreError, Timestamp};
use rowkit_testkit::script::Script;

const T0: i64 = 1_557_018_184_000_000;

fn entry() -> PutEntry {
    PutEntry {
        params: params_from([("device", "angler")]),
        digest: "000075b9c0f1b6a831c399e269772661".into(),
        ..PutEntry::default()
    }
}

/// Runs the failing-OPS Put of scenario 29 and returns the back-off wake-ups.
fn backoff_run(layout: Layout, seed: u64) -> Vec<i64> {
    let mut state = TraceStoreState::new("gold", layout);
    let deadline = Timestamp(T0 + 1_000_000);
    let m = Put::new(
        &mut state,
        0,
        None,
        vec![entry()],
        Timestamp(T0),
        Start {
            now: Timestamp(T0),
            seed,
            deadline,
        },
    );
    let mut s = Script::new(m, Timestamp(T0));
    let mut wakeups = Vec::new();
    loop {
        let (tag, request) = s.next_request().expect("an OPS read");
        assert!(matches!(request, Request::ReadRow(_)), "{request:?}");
        s.respond(tag, Response::Row(None));
        let (tag, request) = s.next_request().expect("an OPS create");
        let Request::CheckAndMutateRow(c) = request else {
            panic!("expected CheckAndMutateRow, got {request:?}")
        };
        assert_eq!(c.row_key, b":ts:o:2147483647:");
        s.fail(tag, StoreError::new(Code::Unavailable, "down"));
        s.expect_no_request();
        let now = s.now().0;
        let at = s.machine().poll_timeout_value();
        if at >= deadline.0 {
            assert_eq!(at, deadline.0);
            s.fire_timeout();
            break;
        }
        // 10 ms base doubling: wait in [base/2, base].
        let base = (10_000i64 << wakeups.len()).min(60_000_000);
        assert!(
            at - now >= base / 2 && at - now <= base,
            "wait {} for base {base}",
            at - now
        );
        wakeups.push(at);
        s.fire_timeout();
    }
    assert_eq!(s.take_result(), Some(Err(TraceStoreError::Aborted)));
    wakeups
}

trait PollTimeout {
    fn poll_timeout_value(&self) -> i64;
}

impl<M: rowkit_statemachines::Machine> PollTimeout for M {
    fn poll_timeout_value(&self) -> i64 {
        self.poll_timeout().unwrap().0
    }
}

#[test]
fn s29_validation_sends_nothing() {
    for layout in [Layout::Md5, Layout::DigestId] {
        let mut state = TraceStoreState::new("gold", layout);
        let m = Put::new(
            &mut state,
            2_147_483_648,
            None,
            vec![entry()],
            Timestamp(T0),
            Start::within(Timestamp(T0), 1, PUT_DEADLINE_MICROS),
        );
        let mut s = Script::new(m, Timestamp(T0));
        s.expect_no_request();
        assert_eq!(
            s.take_result(),
            Some(Err(TraceStoreError::Codec(CodecError::BadRepoIndex)))
        );
        let mut state = TraceStoreState::new("gold", layout);
        let m = Put::new(
            &mut state,
            0,
            None,
            vec![entry()],
            Timestamp(-1),
            Start::within(Timestamp(T0), 1, PUT_DEADLINE_MICROS),
        );
        let mut s = Script::new(m, Timestamp(T0));
        s.expect_no_request();
        assert_eq!(s.take_result(), Some(Err(TraceStoreError::BadTimestamp)));
        drop(s);
        let m = ReadDense::new(
            &mut state,
            5,
            0,
            Start::within(Timestamp(T0), 1, READ_DEADLINE_MICROS),
        );
        let mut s = Script::new(m, Timestamp(T0));
        s.expect_no_request();
        assert_eq!(s.take_result(), Some(Err(TraceStoreError::BadArgument)));
    }
}

#[test]
fn s29_backoff_until_deadline() {
    for layout in [Layout::Md5, Layout::DigestId] {
        let a = backoff_run(layout, 7);
        assert!(a.len() >= 5, "{a:?}");
        assert_eq!(a, backoff_run(layout, 7), "same seed, same wake-ups");
        assert_ne!(a, backoff_run(layout, 8), "the seed drives the jitter");
    }
}

#[test]
fn cancel_aborts_outstanding_reads() {
    let mut state = TraceStoreState::new("gold", Layout::Md5);
    let m = rowkit_statemachines::tracestore::ReadRange::new(
        &mut state,
        0,
        2,
        Start::within(Timestamp(T0), 1, READ_DEADLINE_MICROS),
    );
    let mut s = Script::new(m, Timestamp(T0));
    let mut sent = 0;
    while s.next_request().is_some() {
        sent += 1;
    }
    assert_eq!(
        sent, 65,
        "OPS read, 32 trace scans and 32 options scans together"
    );
    s.cancel();
    assert_eq!(s.aborted().len(), 65);
    assert_eq!(s.take_result(), Some(Err(TraceStoreError::Aborted)));
}

/// 150 new digests assigned from a pool of ids 1..=150 (no increment needed).
fn digests_150() -> Vec<String> {
    (0..150u64)
        .map(|i| format!("{:032x}", i + 1).chars().rev().collect())
        .collect()
}

/// Runs AssignDigestIds until its inserts are out, answers insert 0 "lost" and insert 1
/// "written", then ends the machine with `end` (cancel, deadline or drop); returns the pool.
fn stopped_assignment(end: &str) -> Vec<u64> {
    use rowkit_statemachines::Response;
    use rowkit_statemachines::tracestore::AssignDigestIds;
    let mut state = TraceStoreState::new("gold", Layout::DigestId);
    state.return_digest_ids(&(1..=150).collect::<Vec<_>>());
    let deadline = Timestamp(T0 + 1_000_000);
    let m = AssignDigestIds::new(
        &mut state,
        digests_150(),
        Start {
            now: Timestamp(T0),
            seed: 3,
            deadline,
        },
    );
    let mut s = Script::new(m, Timestamp(T0));
    let (lookup, request) = s.next_request().unwrap();
    assert!(matches!(request, Request::ReadRows(_)), "{request:?}");
    s.end_stream(lookup);
    let mut inserts = Vec::new();
    while let Some((tag, request)) = s.next_request() {
        assert!(
            matches!(request, Request::CheckAndMutateRow(_)),
            "{request:?}"
        );
        inserts.push(tag);
    }
    assert_eq!(inserts.len(), 100, "the insert window");
    s.respond(
        inserts[0],
        Response::CheckAndMutateRow {
            predicate_matched: true,
        },
    );
    s.respond(
        inserts[1],
        Response::CheckAndMutateRow {
            predicate_matched: false,
        },
    );
    // Two answers let two more inserts out (ids 101 and 102).
    assert_eq!(
        s.next_request()
            .map(|(_, r)| matches!(r, Request::CheckAndMutateRow(_))),
        Some(true)
    );
    assert_eq!(
        s.next_request()
            .map(|(_, r)| matches!(r, Request::CheckAndMutateRow(_))),
        Some(true)
    );
    match end {
        "cancel" => {
            s.cancel();
            assert_eq!(s.take_result(), Some(Err(TraceStoreError::Aborted)));
            assert_eq!(
                s.aborted().len(),
                100,
                "the outstanding inserts are aborted"
            );
            drop(s);
        }
        "deadline" => {
            s.set_clock(deadline);
            s.timeout();
            assert_eq!(s.take_result(), Some(Err(TraceStoreError::Aborted)));
            drop(s);
        }
        _ => drop(s),
    }
    state.pool().collect()
}

/// `spec/tracestore.md` 17.1: a machine stopped during its inserts returns the id whose insert
/// lost and the ids of inserts never sent; ids of outstanding inserts (their cell may exist) and
/// of the written one are gone. Cancel, deadline and dropping the machine behave the same.
#[test]
fn stopped_assignment_returns_only_unwritten_ids() {
    let want: Vec<u64> = std::iter::once(1).chain(103..=150).collect();
    for end in ["cancel", "deadline", "drop"] {
        assert_eq!(stopped_assignment(end), want, "{end}");
    }
}
