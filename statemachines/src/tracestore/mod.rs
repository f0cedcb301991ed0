//! Skia Gold's Bigtable trace store as sans-IO machines (`spec/tracestore.md` 9-12, 17), both
//! layouts: [`Put`], [`ReadRange`], [`ReadDense`], [`NewestTile`], [`StreamTile`] (a tile's
//! traces handed over as they arrive, for viewers), and the digest-id layout's
//! [`AssignDigestIds`] and [`AllocateDigestIds`] (public for tests).
//!
//! Every operation is an [`Operation`](crate::operation::Operation) of
//! [`TraceStoreSchema`] written in the crate's dialect, `Op::new(state, args…, start)`: the
//! instance's [`TraceStoreState`] exclusively — borrowed (`&mut state`), or moved into the
//! machine (`state` by value, for a `'static` machine, taken back with
//! [`Operation::take_context`](crate::operation::Operation::take_context); see [`ContextArg`])
//! — then the operation's arguments, then its [`Start`] (the current time, the seed of the
//! back-off jitter, the deadline: callers without one of their own give reads
//! [`READ_DEADLINE_MICROS`] and writes [`PUT_DEADLINE_MICROS`]). Errors are
//! [`TraceStoreError`]s. The machine is `Send`, emits requests under increasing tags, runs
//! every request in a child of [`crate::children::Children`] ([`crate::readrows::ReadRows`],
//! [`crate::raw::MutateRows`], [`crate::raw::Unary`]); only [`StreamTile`] emits events. Each
//! operation is an explicit state machine (a [`Flow`](crate::operation::Flow) with a phase
//! enum); no async code is involved.
//!
//! `Put`, `ReadRange`, `ReadDense`, `NewestTile` and `StreamTile` run inside [`Aware`]: on a
//! state whose [`TraceStoreConfig::migration_aware`] is set (the client facade's) they follow
//! the table's live layout migration (`docs/migration.md` §9) — reads on the truth's table, a
//! Put mirrored into the other table or paused in a fence; on a bare state (Gold's behaviour)
//! they are the spec's operations on the state's table, with no request more.
//!
//! ```
//! use rowkit_codec::tracestore::Layout;
//! use rowkit_statemachines::operation::Start;
//! use rowkit_statemachines::tracestore::{NewestTile, READ_DEADLINE_MICROS, TraceStoreState};
//! use rowkit_statemachines::{Machine, Request, Response, Timestamp};
//!
//! let mut state = TraceStoreState::new("gold", Layout::Md5);
//! let start = Start::within(Timestamp(0), 1, READ_DEADLINE_MICROS);
//! let mut m = NewestTile::new(&mut state, start);
//! let (tag, request) = m.poll_request().unwrap();
//! assert!(matches!(request, Request::ReadRows(_)));
//! m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(1));
//! assert_eq!(m.result(), Some(Ok(None)));
//! ```

mod allocate;
mod assign;
mod aware;
mod check;
mod digest_map;
mod error;
pub mod migrate;
mod newest_tile;
mod put;
mod range;
mod read_dense;
mod read_range;
mod requests;
mod state;
mod stream_tile;
mod tile;
mod update_ops;

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::tracestore::{ParamSet, Params};

pub use allocate::{AllocateDigestIds, AllocateDigestIdsFlow};
pub use assign::{AssignDigestIds, AssignDigestIdsFlow};
pub use aware::{Aware, TableFlow};
pub use check::{Check, CheckFlow, MAX_ID_BITS};
pub use error::TraceStoreError;
pub use newest_tile::{NewestTile, NewestTileFlow};
pub use put::{Put, PutFlow};
pub use read_dense::{ReadDense, ReadDenseFlow};
pub use read_range::{ReadRange, ReadRangeFlow};
pub use state::{CachedOps, DigestCache, TraceStoreConfig, TraceStoreState};
pub use stream_tile::{StreamTile, StreamTileFlow};

#[allow(unused_imports)]
use crate::Machine;
use crate::RetryPolicy;
use crate::operation::{ContextArg, Flow, Operation, Schema, Start};

/// The deadline of a read when the caller sets none: 4 minutes after it starts.
pub const READ_DEADLINE_MICROS: i64 = 4 * 60 * 1_000_000;
/// The deadline of a Put (and of the id operations) when the caller sets none: 10 minutes
/// after it starts.
pub const PUT_DEADLINE_MICROS: i64 = 10 * 60 * 1_000_000;
/// Entries per `MutateRows` request of a Put.
pub const PUT_CHUNK_ENTRIES: usize = put::PUT_CHUNK;

/// The trace store's operations: they run on a [`TraceStoreState`], emit
/// [`TraceStoreEvent`]s (only [`StreamTile`] does), fail with a [`TraceStoreError`] and end
/// [`TraceStoreError::Aborted`] when cancelled or past their deadline.
#[derive(Debug)]
pub struct TraceStoreSchema;

impl Schema for TraceStoreSchema {
    type Context = TraceStoreState;
    type Event = TraceStoreEvent;
    type Error = TraceStoreError;
}

/// What a trace store operation reports along the way.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceStoreEvent {
    /// [`StreamTile`]: traces of the tile as they arrived.
    Traces(TraceBatch),
    /// The migration's progress ([`migrate`]).
    Migrate(migrate::TraceMigrateEvent),
}

/// A batch of a streamed tile's traces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceBatch {
    /// Trace id text and trace: params, and one digest per commit of the tile (`""` =
    /// missing); options are not read.
    pub traces: Vec<(String, Trace)>,
    /// How many of the tile's 32 shard scans have ended so far.
    pub shards_done: u32,
}

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

/// What a trace store flow's step gives: `Ok(None)` while it waits.
pub(crate) type Progress<T> = crate::operation::Progress<T, TraceStoreSchema>;

/// Starts `flow` on `state` as `start` says; a flow whose arguments were rejected (`Err`)
/// ends with that error before any request.
fn begin<'a, F: Flow<Schema = TraceStoreSchema>>(
    state: impl Into<ContextArg<'a, TraceStoreState>>,
    flow: Result<F, TraceStoreError>,
    start: Start,
) -> Operation<'a, F> {
    let state = state.into();
    match flow {
        Ok(flow) => Operation::begin(state, start, RetryPolicy::default(), flow),
        Err(e) => Operation::failed(state, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Timestamp;
    use crate::operation::Operation;

    fn assert_send<T: Send>() {}

    /// Every trace store machine (and every flow inside one) can move between threads, so a
    /// multi-threaded async driver can run it on any worker.
    #[test]
    fn every_machine_is_send() {
        assert_send::<Put<'static>>();
        assert_send::<ReadRange<'static>>();
        assert_send::<ReadDense<'static>>();
        assert_send::<NewestTile<'static>>();
        assert_send::<StreamTile<'static>>();
        assert_send::<AssignDigestIds<'static>>();
        assert_send::<AllocateDigestIds<'static>>();
        assert_send::<put::WriteChunks>();
        assert_send::<update_ops::UpdateOps>();
        assert_send::<digest_map::LookupDigests>();
        assert_send::<digest_map::ReadFullMap>();
        assert_send::<tile::LoadTile>();
        assert_send::<range::TracesInRange>();
        assert_send::<TraceStoreState>();
    }

    /// A machine that owns its state sends what the borrowing constructor sends, answers the
    /// same, and hands the state back (with what the run cached) once it ended.
    #[test]
    fn an_owning_machine_sends_what_a_borrowing_one_sends() {
        use rowkit_codec::tracestore::Layout;
        use rowkit_codec::tracestore::ops::params_from;

        use crate::operation::Flow;
        use crate::{Machine, Response};
        let entry = PutEntry {
            params: params_from([("name", "a"), ("config", "8888")]),
            digest: "000075b9c0f1b6a831c399e269772661".into(),
            ..PutEntry::default()
        };
        // Drives a machine answering every read with an empty stream and every other request
        // with a non-retryable error (the put then ends); returns what it sent and its result.
        fn drive<F>(m: &mut Operation<'_, F>) -> (Vec<(crate::Tag, crate::Request)>, Option<String>)
        where
            F: Flow<Schema = TraceStoreSchema>,
            F::Output: core::fmt::Debug,
        {
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
                    crate::Request::ReadRow(_) => Ok(Response::Row(None)),
                    _ => Err(crate::StoreError::new(crate::Code::PermissionDenied, "x")),
                };
                m.handle_response(tag, reply, now);
            }
            (sent, m.result().map(|r| alloc::format!("{r:?}")))
        }
        let put_start = Start {
            now: Timestamp(1),
            seed: 7,
            deadline: Timestamp(2_000_000),
        };
        for layout in [Layout::Md5, Layout::DigestId] {
            let mut borrowed_state = TraceStoreState::new("gold", layout);
            let mut borrowed = Put::new(
                &mut borrowed_state,
                3,
                None,
                alloc::vec![entry.clone()],
                Timestamp(5_000_000),
                put_start,
            );
            let mut owned = Put::new(
                TraceStoreState::new("gold", layout),
                3,
                None,
                alloc::vec![entry.clone()],
                Timestamp(5_000_000),
                put_start,
            );
            assert!(owned.take_context().is_none(), "taken while running");
            let a = drive(&mut borrowed);
            let b = drive(&mut owned);
            assert!(!a.0.is_empty());
            assert_eq!(a, b);
            drop(borrowed);
            let state = owned.take_context().unwrap();
            assert_eq!(state.layout(), layout);
            assert_eq!(state.pool, borrowed_state.pool);
            assert!(owned.take_context().is_none(), "taken twice");
        }
        let mut a = TraceStoreState::new("gold", Layout::DigestId);
        let read_start = Start::within(Timestamp(1), 3, READ_DEADLINE_MICROS);
        let mut borrowed = ReadRange::new(&mut a, 0, 300, read_start);
        let mut owned = ReadRange::new(
            TraceStoreState::new("gold", Layout::DigestId),
            0,
            300,
            read_start,
        );
        assert_eq!(drive(&mut borrowed), drive(&mut owned));
    }

    /// A machine running on another thread than the one that created it.
    #[test]
    fn a_machine_runs_on_another_thread() {
        use rowkit_codec::tracestore::Layout;

        use crate::{Machine, Response};
        let mut state = TraceStoreState::new("gold", Layout::Md5);
        let start = Start::within(Timestamp(0), 1, READ_DEADLINE_MICROS);
        let mut m = NewestTile::new(&mut state, start);
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
