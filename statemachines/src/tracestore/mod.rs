//! Skia Gold's Bigtable trace store as sans-IO machines (`spec/tracestore.md` 9-12, 17), both
//! layouts: [`put`], [`read_range`], [`read_dense`], [`newest_tile`], and the digest-id
//! layout's [`assign_digest_ids`] and [`allocate_digest_ids`] (public for tests).
//!
//! Every constructor takes the instance's [`TraceStoreState`] exclusively — borrowed
//! (`&mut state`), or moved into the machine (`state` by value, for a `'static` machine, taken
//! back with [`Op::take_state`]; see [`StateArg`]) — the current time, a
//! seed (back-off jitter only) and an optional deadline, and returns an [`Op`] — a `Send`
//! [`Machine`] that emits requests under increasing tags, runs every request in a child of
//! [`crate::children::Children`] ([`crate::readrows::ReadRows`], [`crate::raw::MutateRows`],
//! [`crate::raw::Unary`]), and emits no events. Each operation is an explicit state machine
//! (a struct with a phase enum, see `op.rs`); no async code is involved.
//!
//! ```
//! use rowkit_codec::tracestore::Layout;
//! use rowkit_statemachines::tracestore::{TraceStoreState, newest_tile};
//! use rowkit_statemachines::{Machine, Request, Response, Timestamp};
//!
//! let mut state = TraceStoreState::new("gold", Layout::Md5);
//! let mut m = newest_tile(&mut state, Timestamp(0), 1, None);
//! let (tag, request) = m.poll_request().unwrap();
//! assert!(matches!(request, Request::ReadRows(_)));
//! m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(1));
//! assert_eq!(m.result(), Some(Ok(None)));
//! ```

mod digest_ids;
mod op;
mod put;
mod read;
mod requests;
mod state;
mod update_ops;

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::tracestore::{ParamSet, Params, TraceStoreError};

pub use op::{Op, StateArg};
pub use state::{CachedOps, DigestCache, TraceStoreState};

#[allow(unused_imports)]
use crate::Machine;
use crate::Timestamp;

/// Default deadline of read machines: 4 minutes after `now`.
pub const READ_DEADLINE_MICROS: i64 = 4 * 60 * 1_000_000;
/// Default deadline of Put: 10 minutes after `now`.
pub const PUT_DEADLINE_MICROS: i64 = 10 * 60 * 1_000_000;
/// Entries per `MutateRows` request of a Put.
pub const PUT_CHUNK_ENTRIES: usize = put::PUT_CHUNK;

/// One value of a Put: a trace's params, its options (md5 layout only) and its digest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PutEntry {
    /// The trace's params.
    pub params: Params,
    /// Options (must be empty in the digest-id layout).
    pub options: Params,
    /// 32 hex characters; anything else is stored as missing.
    pub digest: String,
}

/// One trace of a read result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// The trace's params.
    pub params: Params,
    /// Its options (md5 layout; empty in the digest-id layout).
    pub options: Params,
    /// One digest per commit of the result, `""` = missing.
    pub digests: Vec<String>,
}

/// A read result (`spec/tracestore.md` 12.2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tile {
    /// Repo indices of the columns, ascending.
    pub commits: Vec<u32>,
    /// Trace id text -> trace, in ascending id order.
    pub traces: BTreeMap<String, Trace>,
    /// Every key and value of the traces (and options), value lists sorted.
    pub paramset: ParamSet,
}

fn deadline(now: Timestamp, given: Option<Timestamp>, default: i64) -> Timestamp {
    given.unwrap_or_else(|| now.saturating_add_micros(default))
}

/// `Put(commit, entries, ts)`: OPS update, (digest-id) id assignment, then `MutateRows` chunks.
/// `bad repo index`, `bad timestamp` and `options not supported by the digest-id layout` are
/// raised before any request.
#[allow(clippy::too_many_arguments)]
pub fn put<'a>(
    state: impl Into<StateArg<'a>>,
    repo_index: i64,
    commit_time: Option<Timestamp>,
    entries: Vec<PutEntry>,
    ts: Timestamp,
    now: Timestamp,
    seed: u64,
    deadline_at: Option<Timestamp>,
) -> Op<'a, ()> {
    let mut state = state.into();
    if let Err(e) = state.get().map_or(Ok(()), |s| {
        put::check_put(s, repo_index, commit_time, &entries, ts)
    }) {
        return Op::failed(state, e);
    }
    let d = deadline(now, deadline_at, PUT_DEADLINE_MICROS);
    let flow = put::Put::new(repo_index, commit_time, entries, ts);
    Op::start(state, now, d, seed, flow)
}

/// `ReadRange(first, last)`: every trace of the commits `first ..= last`.
pub fn read_range<'a>(
    state: impl Into<StateArg<'a>>,
    first: i64,
    last: i64,
    now: Timestamp,
    seed: u64,
    deadline_at: Option<Timestamp>,
) -> Op<'a, Tile> {
    let state = state.into();
    if let Err(e) = read::check_range(first, last) {
        return Op::failed(state, e);
    }
    let d = deadline(now, deadline_at, READ_DEADLINE_MICROS);
    Op::start(state, now, d, seed, read::ReadRange::new(first, last))
}

/// `ReadDense(last, n)`: the newest `n` commits up to `last` that hold data.
pub fn read_dense<'a>(
    state: impl Into<StateArg<'a>>,
    last: i64,
    n: usize,
    now: Timestamp,
    seed: u64,
    deadline_at: Option<Timestamp>,
) -> Op<'a, Tile> {
    let state = state.into();
    if let Err(e) = rowkit_codec::tracestore::keys::repo_index_position(last) {
        return Op::failed(state, e);
    }
    if n == 0 {
        return Op::failed(state, TraceStoreError::BadArgument);
    }
    let d = deadline(now, deadline_at, READ_DEADLINE_MICROS);
    Op::start(state, now, d, seed, read::ReadDense::new(last, n))
}

/// `NewestTile`: the index of the newest tile, `None` when the table has none.
pub fn newest_tile<'a>(
    state: impl Into<StateArg<'a>>,
    now: Timestamp,
    seed: u64,
    deadline_at: Option<Timestamp>,
) -> Op<'a, Option<u32>> {
    let state = state.into();
    let d = deadline(now, deadline_at, READ_DEADLINE_MICROS);
    Op::start(state, now, d, seed, read::NewestTile::new())
}

/// `AssignDigestIds(digests)` (digest-id layout): the id of every input digest, in input
/// order (`""` and invalid digests -> 0).
pub fn assign_digest_ids<'a>(
    state: impl Into<StateArg<'a>>,
    digests: Vec<String>,
    now: Timestamp,
    seed: u64,
    deadline_at: Option<Timestamp>,
) -> Op<'a, Vec<u64>> {
    let state = state.into();
    let d = deadline(now, deadline_at, PUT_DEADLINE_MICROS);
    Op::start(
        state,
        now,
        d,
        seed,
        digest_ids::AssignDigestIds::new(digests),
    )
}

/// `AllocateDigestIds(n)` (digest-id layout): `n` distinct, never used ids.
pub fn allocate_digest_ids<'a>(
    state: impl Into<StateArg<'a>>,
    n: usize,
    now: Timestamp,
    seed: u64,
    deadline_at: Option<Timestamp>,
) -> Op<'a, Vec<u64>> {
    let state = state.into();
    let d = deadline(now, deadline_at, PUT_DEADLINE_MICROS);
    Op::start(state, now, d, seed, digest_ids::AllocateDigestIds::new(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>() {}

    /// Every trace store machine (and every flow inside one) can move between threads, so a
    /// multi-threaded async driver can run it on any worker.
    #[test]
    fn every_machine_is_send() {
        assert_send::<Op<'static, ()>>();
        assert_send::<Op<'static, Tile>>();
        assert_send::<Op<'static, Option<u32>>>();
        assert_send::<Op<'static, Vec<u64>>>();
        assert_send::<put::Put>();
        assert_send::<put::WriteChunks>();
        assert_send::<update_ops::UpdateOps>();
        assert_send::<digest_ids::AllocateDigestIds>();
        assert_send::<digest_ids::AssignDigestIds>();
        assert_send::<digest_ids::LookupDigests>();
        assert_send::<digest_ids::ReadFullMap>();
        assert_send::<read::ReadRange>();
        assert_send::<read::ReadDense>();
        assert_send::<read::NewestTile>();
        assert_send::<TraceStoreState>();
    }

    /// A machine that owns its state sends what the borrowing constructor sends, answers the
    /// same, and hands the state back (with what the run cached) once it ended.
    #[test]
    fn an_owning_machine_sends_what_a_borrowing_one_sends() {
        use rowkit_codec::tracestore::Layout;
        use rowkit_codec::tracestore::ops::params_from;

        use crate::{Machine, Response};
        let entry = PutEntry {
            params: params_from([("name", "a"), ("config", "8888")]),
            digest: "000075b9c0f1b6a831c399e269772661".into(),
            ..PutEntry::default()
        };
        // Drives a machine answering every read with an empty stream and every other request
        // with a non-retryable error (the put then ends); returns what it sent and its result.
        fn drive<T: core::fmt::Debug>(
            m: &mut Op<'_, T>,
        ) -> (Vec<(crate::Tag, crate::Request)>, Option<String>) {
            let mut sent = Vec::new();
            let mut now = Timestamp(10);
            for _ in 0..10_000 {
                now = now.saturating_add_micros(1);
                let Some((tag, request)) = m.poll_request() else {
                    // Nothing to send: wait for the machine's timer, or stop once it ended.
                    match m.poll_timeout() {
                        Some(t) => {
                            now = now.max(t);
                            m.handle_timeout(now);
                            continue;
                        }
                        None => break,
                    }
                };
                sent.push((tag, request.clone()));
                let reply = match request {
                    crate::Request::ReadRows(_) => Ok(Response::StreamEnd),
                    _ => Err(crate::StoreError::new(crate::Code::PermissionDenied, "x")),
                };
                m.handle_response(tag, reply, now);
            }
            (sent, m.result().map(|r| alloc::format!("{r:?}")))
        }
        for layout in [Layout::Md5, Layout::DigestId] {
            let mut borrowed_state = TraceStoreState::new("gold", layout);
            let mut borrowed = put(
                &mut borrowed_state,
                3,
                None,
                alloc::vec![entry.clone()],
                Timestamp(5_000_000),
                Timestamp(1),
                7,
                Some(Timestamp(2_000_000)),
            );
            let mut owned = put(
                TraceStoreState::new("gold", layout),
                3,
                None,
                alloc::vec![entry.clone()],
                Timestamp(5_000_000),
                Timestamp(1),
                7,
                Some(Timestamp(2_000_000)),
            );
            assert!(owned.take_state().is_none(), "taken while running");
            let a = drive(&mut borrowed);
            let b = drive(&mut owned);
            assert!(!a.0.is_empty());
            assert_eq!(a, b);
            drop(borrowed);
            let state = owned.take_state().unwrap();
            assert_eq!(state.layout(), layout);
            assert_eq!(state.pool, borrowed_state.pool);
            assert!(owned.take_state().is_none(), "taken twice");
        }
        let mut a = TraceStoreState::new("gold", Layout::DigestId);
        let mut borrowed = read_range(&mut a, 0, 300, Timestamp(1), 3, None);
        let mut owned = read_range(
            TraceStoreState::new("gold", Layout::DigestId),
            0,
            300,
            Timestamp(1),
            3,
            None,
        );
        assert_eq!(drive(&mut borrowed), drive(&mut owned));
    }

    /// A machine running on another thread than the one that created it.
    #[test]
    fn a_machine_runs_on_another_thread() {
        use rowkit_codec::tracestore::Layout;

        use crate::{Machine, Response};
        let mut state = TraceStoreState::new("gold", Layout::Md5);
        let mut m = newest_tile(&mut state, Timestamp(0), 1, None);
        let (tag, _) = m.poll_request().unwrap();
        let result = std::thread::scope(|s| {
            s.spawn(move || {
                m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(1));
                m.result()
            })
            .join()
            .unwrap()
        });
        assert_eq!(result, Some(Ok(None)));
    }
}
