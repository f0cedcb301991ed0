//! BadWolf's triple store on Bigtable (`spec/triples.md` §4–§6, §10): one machine per
//! operation. Keys and parsing come from `rowkit_codec::triples`; reads nest
//! [`crate::readrows::ReadRows`], batch writes nest [`crate::raw::MutateRows`] (through
//! [`crate::children`]), and every nested machine gets its seed from the operation's PRNG.
//!
//! ```
//! use rowkit_codec::triples::Triple;
//! use rowkit_statemachines::triples::{AddTriples, OperationConfig};
//! use rowkit_statemachines::{Machine, Request, Timestamp};
//!
//! let t = Triple::parse(b"/u<joe> \"parent_of\"@[] /u<mary>").unwrap();
//! let config = OperationConfig::new("badwolf", Timestamp::from_secs(60));
//! let mut m = AddTriples::new(b"test", vec![t], config, Timestamp(0), 1);
//! let (_tag, request) = m.poll_request().unwrap();
//! let Request::MutateRows(batch) = request else { panic!() };
//! assert_eq!(batch.entries.len(), 4);
//! ```

mod graph;
mod lookup;
mod op;
mod write;

use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::triples::gotext::quote;
use rowkit_codec::triples::{KeyError, ParseError};

pub use graph::{
    DeleteGraph, DeleteGraphFlow, GraphExists, GraphExistsFlow, GraphNames, GraphNamesFlow,
    NewGraph, NewGraphFlow,
};
pub use lookup::{
    Exist, FilterField, FilterOperation, FilterOptions, Found, FoundText, Item, Lookup,
    LookupMethod, LookupOptions, LookupParseError, Pipeline, Projection, filter_candidates,
};
pub use op::Op;
pub use write::{AddFlow, AddTriples, RemoveFlow, RemoveTriples};

use crate::{RetryPolicy, StoreError, Timestamp};

/// Most entries one `MutateRows` batch carries (spec §4).
pub const MAX_BATCH_ENTRIES: usize = 100_000;
/// Rows per page when `DeleteGraph` lists an index (spec §4).
pub const DELETE_PAGE_ROWS: i64 = 100_000;

/// Where and until when an operation runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperationConfig {
    /// The table (rowkit's default: `badwolf`).
    pub table: String,
    /// The operation deadline; nested machines get the time left.
    pub deadline: Timestamp,
    /// Back-off parameters of nested machines (`operation_timeout` is replaced by the time
    /// left until `deadline`).
    pub retry: RetryPolicy,
    /// A deliberate bug for the fault simulator's self-test; `None` in every real use (and
    /// ignored unless built with the `planted-bugs` feature).
    pub planted: Option<crate::planted::PlantedBug>,
}

impl OperationConfig {
    /// `table` until `deadline`, default back-off.
    pub fn new(table: &str, deadline: Timestamp) -> OperationConfig {
        OperationConfig {
            table: table.into(),
            deadline,
            retry: RetryPolicy::default(),
            planted: None,
        }
    }
}

/// Why a triple-store operation failed (spec §7).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
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
    /// The operation deadline was reached.
    #[error("deadline exceeded")]
    DeadlineExceeded,
}

impl From<TriplesError> for StoreError {
    fn from(e: TriplesError) -> StoreError {
        use crate::Code;
        match e {
            TriplesError::Store(s) => s,
            TriplesError::AlreadyExists(_) => StoreError::new(Code::AlreadyExists, e.to_string()),
            TriplesError::DoesNotExist(_) => StoreError::new(Code::NotFound, e.to_string()),
            TriplesError::DeadlineExceeded => {
                StoreError::new(Code::DeadlineExceeded, e.to_string())
            }
            TriplesError::Key(_) | TriplesError::Options(_) => {
                StoreError::new(Code::InvalidArgument, e.to_string())
            }
            TriplesError::LookupParse { .. } => StoreError::new(Code::DataLoss, e.to_string()),
        }
    }
}

use alloc::string::ToString;
