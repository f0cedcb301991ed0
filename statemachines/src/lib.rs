//! Sans-IO state machines for rowkit.
//!
//! This crate holds the Bigtable request vocabulary ([`Request`], [`Response`],
//! [`StoreError`]), the [`Machine`] protocol every operation follows, the ReadRows chunk merger
//! with resume ([`readrows`]), the generic machines for raw requests ([`raw`]), and the four
//! schemas' operations ([`mounttable`], [`tracestore`], [`objmeta`], [`triples`]). It does no
//! I/O, reads no clock and draws no OS randomness: time arrives as a [`Timestamp`] argument and
//! randomness from a caller-given seed. Drivers (embedded sync, Tokio, wasm) do the I/O.
//!
//! ```
//! use rowkit_codec::model::{Mutation, Timestamp};
//! use rowkit_statemachines::raw::Unary;
//! use rowkit_statemachines::{Machine, MutateRowRequest, Request, Response};
//!
//! let request = Request::MutateRow(MutateRowRequest {
//!     table: "t".into(),
//!     app_profile_id: String::new(),
//!     row_key: b"r".to_vec(),
//!     mutations: vec![Mutation::DeleteFromRow],
//! });
//! let mut m = Unary::new(request);
//! let (tag, _request) = m.poll_request().unwrap();
//! m.handle_response(tag, Ok(Response::MutateRow), Timestamp(0));
//! assert_eq!(m.result(), Some(Ok(Response::MutateRow)));
//! ```
//!
//! # The schema dialect
//!
//! Every schema's operations are written one way, so that a reviewer can hold one operation
//! of any schema against this list:
//!
//! 1. **One schema type** implements [`operation::Schema`]: its `Context` (the per-instance
//!    state operations read and update: the table, caches, allocators), its `Event`s and its
//!    one `Error`.
//! 2. **One error contract**: the schema's error implements [`operation::OperationError`] —
//!    a stable `id()`, a readable `Display`, and the errors every schema has, provided once:
//!    `aborted()` (id [`operation::ABORTED_ID`], message [`operation::ABORTED_MESSAGE`]),
//!    `store(e)`, `stalled()` and `unexpected(reply)`. Drivers run an operation with
//!    `rowkit_client::run_operation` (a stalled machine is the schema's error), the CLI maps
//!    every schema's error with one function and the JavaScript API with another.
//! 3. **Every operation is `Op::new(ctx, args…, Start { now, seed, deadline })`**: the context
//!    first, the operation's own arguments, and its [`operation::Start`] last; arguments it
//!    refuses end it at once ([`operation::Operation::failed`]), before any request.
//! 4. **One wait idiom**: a flow is an explicit phase enum advanced by
//!    [`operation::Flow::advance`]; every wait is [`ready!`] — the step's value, its error
//!    returned, or `Ok(None)` while it waits (putting the phase back when it was moved out).
//! 5. **Shared request handles**: requests go out through [`operation::Io`] (`read_rows`,
//!    `read_row` for a read of exactly one key, `mutate_row`, `mutate_rows`, `unary`) and come
//!    back through its handles (`rows`, `row`, `stream_rows`, `matched`, `written`;
//!    `rows_or_wait`, `row_or_wait`, `written_or_wait` for a child that
//!    gave up to wait for the deadline), which map store errors and replies of the wrong
//!    kind through the schema's error contract; cells are built with
//!    [`Mutation::set_cell`](rowkit_codec::model::Mutation::set_cell).
//! 6. **Machines return what they wrote** (row keys, ids, stored values), so no caller
//!    re-derives them.
//!
//! A toy schema in the dialect: a `Claim` writes a name's row unless it exists, and returns
//! the row key it wrote.
//!
//! ```
//! use rowkit_codec::model::{Mutation, RowFilter, Timestamp};
//! use rowkit_statemachines::children::ChildId;
//! use rowkit_statemachines::operation::{
//!     ABORTED_ID, ABORTED_MESSAGE, ContextArg, Flow, Io, Operation, OperationError, Progress,
//!     Schema, Start,
//! };
//! use rowkit_statemachines::{
//!     CheckAndMutateRowRequest, Machine, Request, Response, RetryPolicy, StoreError, ready,
//! };
//!
//! /// The schema: its context is the table name.
//! struct Names;
//! impl Schema for Names {
//!     type Context = String;
//!     type Event = ();
//!     type Error = NamesError;
//! }
//!
//! /// Its one error type.
//! #[derive(Debug, PartialEq, thiserror::Error)]
//! enum NamesError {
//!     #[error("name {0} is taken")]
//!     Taken(String),
//!     #[error("store: {0}")]
//!     Store(StoreError),
//!     #[error("{}", ABORTED_MESSAGE)]
//!     Aborted,
//! }
//! impl OperationError for NamesError {
//!     fn id(&self) -> &'static str {
//!         match self {
//!             NamesError::Taken(_) => "taken",
//!             NamesError::Store(_) => "store",
//!             NamesError::Aborted => ABORTED_ID,
//!         }
//!     }
//!     fn aborted() -> NamesError {
//!         NamesError::Aborted
//!     }
//!     fn store(e: StoreError) -> NamesError {
//!         NamesError::Store(e)
//!     }
//! }
//!
//! /// `Claim(name)`: the operation is the generic [`Operation`] of its flow.
//! type Claim<'a> = Operation<'a, ClaimFlow>;
//! fn claim<'a>(table: impl Into<ContextArg<'a, String>>, name: &str, start: Start) -> Claim<'a> {
//!     let table = table.into();
//!     if name.is_empty() {
//!         return Operation::failed(table, NamesError::Taken(String::new()));
//!     }
//!     let flow = ClaimFlow { name: name.into(), phase: Phase::Send };
//!     Operation::begin(table, start, RetryPolicy::default(), flow)
//! }
//!
//! /// Its phases.
//! enum Phase {
//!     Send,
//!     Wait(ChildId),
//! }
//! struct ClaimFlow {
//!     name: String,
//!     phase: Phase,
//! }
//! impl Flow for ClaimFlow {
//!     type Schema = Names;
//!     /// The row key it wrote.
//!     type Output = Vec<u8>;
//!     fn advance(&mut self, io: &mut Io<()>, table: &mut String) -> Progress<Vec<u8>, Names> {
//!         if let Phase::Send = self.phase {
//!             let cell = Mutation::set_cell("f", b"owner", Timestamp(0), b"me".to_vec());
//!             let id = io.unary(Request::CheckAndMutateRow(CheckAndMutateRowRequest {
//!                 table: table.clone(),
//!                 app_profile_id: String::new(),
//!                 row_key: self.name.clone().into_bytes(),
//!                 predicate: Some(RowFilter::PassAll),
//!                 true_mutations: vec![],
//!                 false_mutations: vec![cell],
//!             }));
//!             self.phase = Phase::Wait(id);
//!         }
//!         let Phase::Wait(id) = self.phase else { unreachable!() };
//!         if ready!(io.matched(id)) {
//!             return Err(NamesError::Taken(self.name.clone()));
//!         }
//!         Ok(Some(self.name.clone().into_bytes()))
//!     }
//! }
//!
//! // A driver sends the request and hands back the reply.
//! let start = Start { now: Timestamp(0), seed: 7, deadline: Timestamp(60_000_000) };
//! let mut m = claim(ContextArg::owned("names".to_string()), "ada", start);
//! let (tag, _request) = m.poll_request().unwrap();
//! let reply = Response::CheckAndMutateRow { predicate_matched: false };
//! m.handle_response(tag, Ok(reply), Timestamp(1));
//! assert_eq!(m.result(), Some(Ok(b"ada".to_vec())));
//!
//! // Past its deadline it ends aborted, as every schema's operation does.
//! let mut m = claim(ContextArg::owned("names".to_string()), "bob", start);
//! m.handle_timeout(Timestamp(60_000_000));
//! let error = m.result().unwrap().unwrap_err();
//! assert_eq!((error.id(), error.to_string()), (ABORTED_ID, ABORTED_MESSAGE.to_string()));
//! ```
//!
//! All four schemas follow the dialect in full. Object metadata reads with `rows_or_wait` and
//! `written_or_wait`, the handles of its rule that a read or batch no retry fits before the
//! deadline waits for it (`objmeta.md` 16.3). The mount table checks its
//! [`Start`](operation::Start)'s deadline at the points its spec names rather than through the
//! operation's budget, and its requests carry deadlines of their own
//! ([`operation::Io::read_rows_until`], [`operation::Io::unary_until`]).
#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

mod attempt;
pub mod check;
pub mod children;
mod machine;
pub mod migration;
pub mod mounttable;
pub mod objmeta;
pub mod operation;
#[cfg(feature = "_planted_bugs")]
#[doc(hidden)]
pub mod planted;
pub mod raw;
pub mod readrows;
mod request;
mod retry;
mod rng;
pub mod tracestore;
pub mod triples;

pub use machine::{Machine, Tag, TagAllocator};
pub use request::{
    CellChunk, CheckAndMutateRowRequest, MutateRowRequest, MutateRowsEntry, MutateRowsEntryResult,
    MutateRowsRequest, MutateRowsResponse, ReadModifyWriteRowRequest, ReadRowRequest,
    ReadRowsRequest, ReadRowsResponse, Request, Response, RowStatus, SampleRowKeysRequest,
    SampleRowKeysResponse, StoreError,
};
pub use retry::{Backoff, RetryPolicy};
pub use rng::SplitMix64;
pub use rowkit_codec::model::{Code, Timestamp};
