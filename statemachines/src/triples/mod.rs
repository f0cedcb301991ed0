//! BadWolf's triple store on Bigtable (`spec/triples.md` §4–§6, §10): one machine per
//! operation, each an [`Operation`] of [`TriplesSchema`] whose context is the operation's
//! [`OperationConfig`] (moved into the machine). Keys and parsing come from
//! `rowkit_codec::triples`; reads nest [`crate::readrows::ReadRows`], batch writes nest
//! [`crate::raw::MutateRows`] (through [`crate::children`]), and every nested machine gets its
//! seed from the operation's PRNG. Cancel and the deadline end an operation with
//! [`TriplesError::Aborted`].
//!
//! ```
//! use rowkit_codec::triples::Triple;
//! use rowkit_statemachines::operation::Start;
//! use rowkit_statemachines::triples::{AddTriples, OperationConfig};
//! use rowkit_statemachines::{Machine, Request, Timestamp};
//!
//! let t = Triple::parse(b"/u<joe> \"parent_of\"@[] /u<mary>").unwrap();
//! let start = Start::within(Timestamp(0), 1, 60_000_000);
//! let mut m = AddTriples::new(OperationConfig::new("badwolf"), b"test", vec![t], start);
//! let (_tag, request) = m.poll_request().unwrap();
//! let Request::MutateRows(batch) = request else { panic!() };
//! assert_eq!(batch.entries.len(), 4);
//! ```

mod check;
mod delete_graph;
mod exist;
mod graph_exists;
mod graph_names;
mod lookup;
mod new_graph;
mod requests;
mod write;

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use rowkit_codec::triples::gotext::quote;
use rowkit_codec::triples::{KeyError, ParseError};

pub use check::{Check, CheckFlow};
pub use delete_graph::{DeleteGraph, DeleteGraphFlow};
pub use exist::{Exist, ExistFlow};
pub use graph_exists::{GraphExists, GraphExistsFlow};
pub use graph_names::{GraphNames, GraphNamesFlow};
pub use lookup::{
    FilterField, FilterOperation, FilterOptions, Found, FoundText, Item, Lookup, LookupFlow,
    LookupMethod, LookupOptions, LookupParseError, Pipeline, Projection, filter_candidates,
};
pub use new_graph::{NewGraph, NewGraphFlow};
pub use write::{
    AddTriples, AddTriplesFlow, CellBatches, CellChange, DeleteCells, RemoveTriples,
    RemoveTriplesFlow, SetCells,
};

use crate::operation::{
    ABORTED_ID, ABORTED_MESSAGE, ContextArg, Flow, Operation, OperationError, Schema, Start,
};
use crate::{RetryPolicy, StoreError};

/// Most entries one `MutateRows` batch carries (spec §4).
pub const MAX_BATCH_ENTRIES: usize = 100_000;
/// Rows per page when `DeleteGraph` lists an index (spec §4).
pub const DELETE_PAGE_ROWS: i64 = 100_000;

/// The triple store's operations: they run on their [`OperationConfig`], emit no events, fail
/// with a [`TriplesError`] and end [`TriplesError::Aborted`] when cancelled or past their
/// deadline.
#[derive(Debug)]
pub struct TriplesSchema;

impl Schema for TriplesSchema {
    type Context = OperationConfig;
    type Event = ();
    type Error = TriplesError;
}

impl OperationError for TriplesError {
    /// The id of the store status each error stands for (`already_exists`, `not_found`, …), so
    /// that callers that show store statuses show the same ids.
    fn id(&self) -> &'static str {
        match self {
            TriplesError::AlreadyExists(_) => "already_exists",
            TriplesError::DoesNotExist(_) => "not_found",
            TriplesError::Key(_) | TriplesError::Options(_) => "invalid_argument",
            TriplesError::LookupParse { .. } => "data_loss",
            TriplesError::Store(_) => "store",
            TriplesError::Aborted => ABORTED_ID,
        }
    }

    fn aborted() -> TriplesError {
        TriplesError::Aborted
    }

    fn store(error: StoreError) -> TriplesError {
        TriplesError::Store(error)
    }

    fn as_store(&self) -> Option<&StoreError> {
        match self {
            TriplesError::Store(s) => Some(s),
            _ => None,
        }
    }

    fn is_bad_input(&self) -> bool {
        matches!(self, TriplesError::Key(_) | TriplesError::Options(_))
    }
}

/// What a triple-store flow's step gives: `Ok(None)` while it waits.
pub(crate) type Progress<T> = crate::operation::Progress<T, TriplesSchema>;

/// Starts `flow` on `config` (which the machine owns) as `start` says.
fn begin<F: Flow<Schema = TriplesSchema>>(
    config: OperationConfig,
    start: Start,
    flow: F,
) -> Operation<'static, F> {
    let retry = config.retry;
    Operation::begin(ContextArg::owned(config), start, retry, flow)
}

/// An operation on `config` whose arguments were rejected: it ends with `error` and sends
/// nothing.
fn failed<F: Flow<Schema = TriplesSchema>>(
    config: OperationConfig,
    error: impl Into<TriplesError>,
) -> Operation<'static, F> {
    Operation::failed(ContextArg::owned(config), error.into())
}

/// Where an operation runs (when, and until when, is its [`Start`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperationConfig {
    /// The table (rowkit's default: `badwolf`).
    pub table: String,
    /// Back-off parameters of nested machines (`operation_timeout` is replaced by the time
    /// left until `deadline`).
    pub retry: RetryPolicy,
    /// A deliberate bug for the fault simulator's self-test; `None` in every real use (not
    /// public API: only with the `_planted_bugs` feature).
    #[cfg(feature = "_planted_bugs")]
    #[doc(hidden)]
    pub planted: Option<crate::planted::PlantedBug>,
}

impl OperationConfig {
    /// `table`, default back-off.
    pub fn new(table: &str) -> OperationConfig {
        OperationConfig {
            table: table.into(),
            retry: RetryPolicy::default(),
            #[cfg(feature = "_planted_bugs")]
            planted: None,
        }
    }
}

/// Why a triple-store operation failed (spec §7).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TriplesError {
    /// `NewGraph` on an existing graph.
    #[error("graph {} already exist", quote(.0))]
    AlreadyExists(Vec<u8>),
    /// `Graph`/`DeleteGraph` on a missing graph.
    #[error("graph {} does not exist", quote(.0))]
    DoesNotExist(Vec<u8>),
    /// A graph id over 3981 bytes (no request sent).
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A cell of a lookup or `Exist` that does not parse as a triple.
    #[error("cell in row {} does not parse: {error}", rowkit_codec::escape::escape(.row_key))]
    LookupParse {
        /// The row holding the cell.
        row_key: Vec<u8>,
        /// Why it failed.
        error: ParseError,
    },
    /// Invalid lookup options (spec §5.2 messages).
    #[error("{0}")]
    Options(String),
    /// A store request failed after the retries of spec §6.
    #[error("store: {0}")]
    Store(StoreError),
    /// The operation deadline passed or the operation was cancelled.
    #[error("{}", ABORTED_MESSAGE)]
    Aborted,
}

impl TriplesError {
    /// The status code of the [`StoreError`] the error converts to.
    fn status_code(&self) -> crate::Code {
        use crate::Code;
        match self {
            TriplesError::Store(s) => s.code,
            TriplesError::AlreadyExists(_) => Code::AlreadyExists,
            TriplesError::DoesNotExist(_) => Code::NotFound,
            // Only a caller's own cancel aborts otherwise; callers without one see a deadline.
            TriplesError::Aborted => Code::DeadlineExceeded,
            TriplesError::Key(_) | TriplesError::Options(_) => Code::InvalidArgument,
            TriplesError::LookupParse { .. } => Code::DataLoss,
        }
    }
}

impl From<TriplesError> for StoreError {
    fn from(e: TriplesError) -> StoreError {
        match e {
            TriplesError::Store(s) => s,
            other => StoreError::new(other.status_code(), other.to_string()),
        }
    }
}
