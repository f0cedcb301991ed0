//! Scripted tests of the trace store machines (`spec/tracestore.md` 17, scenario 29).
#![allow(clippy::unwrap_used)]

use rowkit_codec::tracestore::ops::params_from;
use rowkit_codec::tracestore::{Layout, TraceStoreError};
use rowkit_statemachines::testing::Script;
use rowkit_statemachines::tracestore::{PutEntry, TraceStoreState, put, read_dense};
use rowkit_statemachines::{Code, Request, StoreError, Timestamp};

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
    let m = put(
        &mut state,
        0,
        None,
        vec![entry()],
        Timestamp(T0),
        Timestamp(T0),
        seed,
        Some(deadline),
    );
    let mut s = Script::new(m, Timestamp(T0));
    let mut wakeups = Vec::new();
    loop {
        let (tag, request) = s.next_request().expect("an OPS read");
        assert!(matches!(request, Request::ReadRows(_)), "{request:?}");
        s.end_stream(tag);
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
        let m = put(
            &mut state,
            2_147_483_648,
            None,
            vec![entry()],
            Timestamp(T0),
            Timestamp(T0),
            1,
            None,
        );
        let mut s = Script::new(m, Timestamp(T0));
        s.expect_no_request();
        assert_eq!(s.take_result(), Some(Err(TraceStoreError::BadRepoIndex)));
        let mut state = TraceStoreState::new("gold", layout);
        let m = put(
            &mut state,
            0,
            None,
            vec![entry()],
            Timestamp(-1),
            Timestamp(T0),
            1,
            None,
        );
        let mut s = Script::new(m, Timestamp(T0));
        s.expect_no_request();
        assert_eq!(s.take_result(), Some(Err(TraceStoreError::BadTimestamp)));
        drop(s);
        let m = read_dense(&mut state, 5, 0, Timestamp(T0), 1, None);
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
    let m = rowkit_statemachines::tracestore::read_range(&mut state, 0, 2, Timestamp(T0), 1, None);
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
