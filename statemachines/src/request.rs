//! The store vocabulary: one request type per Bigtable data RPC, the responses (streamed ones
//! arrive as parts followed by [`Response::StreamEnd`]), and [`StoreError`].
//!
//! These are rowkit's own `no_std` types; adapters convert prost or JSON messages at the edge.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::model::{
    Code, Mutation, ReadModifyWriteRule, Row, RowFilter, RowSet, ValidationError,
};
use serde::{Deserialize, Serialize};

/// `ReadRows`: stream the rows of `rows` that survive `filter` (`spec/bigtable.md` 9).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadRowsRequest {
    /// Table id (not the full resource name).
    pub table: String,
    /// App profile; empty = default.
    pub app_profile_id: String,
    /// Rows to read; empty = the whole table.
    pub rows: RowSet,
    /// Filter applied to each row; `None` = every cell.
    pub filter: Option<RowFilter>,
    /// At most this many rows; 0 = unlimited; negative is invalid.
    pub rows_limit: i64,
    /// Descending key order.
    pub reversed: bool,
}

/// A point read: the one row `row_key`, its cells that survive `filter` — what a one-key
/// [`ReadRowsRequest`] reads, asked as its own request so that a store in the driver's process
/// answers it with one lookup (no row set, merger or stream) and a remote one as that one-key
/// ReadRows ([`ReadRowRequest::into_read_rows`]); the wire never carries it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadRowRequest {
    /// Table id (not the full resource name).
    pub table: String,
    /// App profile; empty = default.
    pub app_profile_id: String,
    /// The row.
    pub row_key: Vec<u8>,
    /// Filter applied to the row; `None` = every cell.
    pub filter: Option<RowFilter>,
}

impl ReadRowRequest {
    /// The same read as a ReadRows of one key, as a store over a network is asked it.
    pub fn into_read_rows(self) -> ReadRowsRequest {
        ReadRowsRequest {
            table: self.table,
            app_profile_id: self.app_profile_id,
            rows: RowSet::key(self.row_key),
            filter: self.filter,
            rows_limit: 0,
            reversed: false,
        }
    }
}

/// `MutateRow`: apply mutations to one row atomically (`spec/bigtable.md` 6).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MutateRowRequest {
    /// Table id.
    pub table: String,
    /// App profile; empty = default.
    pub app_profile_id: String,
    /// The row.
    pub row_key: Vec<u8>,
    /// 1..=100 000 mutations, applied in order.
    pub mutations: Vec<Mutation>,
}

/// One row of a [`MutateRowsRequest`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MutateRowsEntry {
    /// The row.
    pub row_key: Vec<u8>,
    /// Its mutations, applied atomically.
    pub mutations: Vec<Mutation>,
}

/// `MutateRows`: many rows, each atomic, the batch not (`spec/bigtable.md` 6).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MutateRowsRequest {
    /// Table id.
    pub table: String,
    /// App profile; empty = default.
    pub app_profile_id: String,
    /// 1 or more entries, at most 100 000 mutations in total. Shared: a retry keeps the
    /// batch by count while the attempt goes out (an ingest's batch was deep-copied per call).
    pub entries: Arc<[MutateRowsEntry]>,
}

/// `CheckAndMutateRow`: test a predicate on one row and apply one of two mutation lists
/// atomically (`spec/bigtable.md` 7).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckAndMutateRowRequest {
    /// Table id.
    pub table: String,
    /// App profile; empty = default.
    pub app_profile_id: String,
    /// The row.
    pub row_key: Vec<u8>,
    /// Matches when it yields at least one cell; `None` = "the row has any cell".
    pub predicate: Option<RowFilter>,
    /// Applied when the predicate matches.
    pub true_mutations: Vec<Mutation>,
    /// Applied otherwise.
    pub false_mutations: Vec<Mutation>,
}

/// `ReadModifyWriteRow`: append to or increment the latest cells of columns atomically
/// (`spec/bigtable.md` 8).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadModifyWriteRowRequest {
    /// Table id.
    pub table: String,
    /// App profile; empty = default.
    pub app_profile_id: String,
    /// The row.
    pub row_key: Vec<u8>,
    /// 1..=100 000 rules, applied in order.
    pub rules: Vec<ReadModifyWriteRule>,
}

/// `SampleRowKeys`: approximate split points of the table (`spec/bigtable.md` 11).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleRowKeysRequest {
    /// Table id.
    pub table: String,
    /// App profile; empty = default.
    pub app_profile_id: String,
}

/// A request to a store: one Bigtable data RPC.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// Streamed: [`Response::ReadRowsPart`]s (or, from a store in the same process,
    /// [`Response::Rows`]), then [`Response::StreamEnd`].
    ReadRows(ReadRowsRequest),
    /// Unary: [`Response::Row`]. Sent as a one-key `ReadRows` over a network.
    ReadRow(ReadRowRequest),
    /// Unary: [`Response::MutateRow`].
    MutateRow(MutateRowRequest),
    /// Streamed: [`Response::MutateRowsPart`]s, then [`Response::StreamEnd`].
    MutateRows(MutateRowsRequest),
    /// Unary: [`Response::CheckAndMutateRow`].
    CheckAndMutateRow(CheckAndMutateRowRequest),
    /// Unary: [`Response::ReadModifyWriteRow`].
    ReadModifyWriteRow(ReadModifyWriteRowRequest),
    /// Streamed: [`Response::SampleRowKeysPart`]s, then [`Response::StreamEnd`].
    SampleRowKeys(SampleRowKeysRequest),
}

impl Request {
    /// The table the request addresses.
    pub fn table(&self) -> &str {
        match self {
            Request::ReadRows(r) => &r.table,
            Request::ReadRow(r) => &r.table,
            Request::MutateRow(r) => &r.table,
            Request::MutateRows(r) => &r.table,
            Request::CheckAndMutateRow(r) => &r.table,
            Request::ReadModifyWriteRow(r) => &r.table,
            Request::SampleRowKeys(r) => &r.table,
        }
    }

    /// Whether the response is a stream of parts ended by [`Response::StreamEnd`].
    pub fn is_streaming(&self) -> bool {
        matches!(
            self,
            Request::ReadRows(_) | Request::MutateRows(_) | Request::SampleRowKeys(_)
        )
    }

    /// The RPC's name as in `bigtable.proto`, e.g. `ReadRows` (a point read's too: that is
    /// the RPC it is sent as).
    pub fn rpc_name(&self) -> &'static str {
        match self {
            Request::ReadRows(_) | Request::ReadRow(_) => "ReadRows",
            Request::MutateRow(_) => "MutateRow",
            Request::MutateRows(_) => "MutateRows",
            Request::CheckAndMutateRow(_) => "CheckAndMutateRow",
            Request::ReadModifyWriteRow(_) => "ReadModifyWriteRow",
            Request::SampleRowKeys(_) => "SampleRowKeys",
        }
    }
}

/// Whether a chunk resets or commits the row in progress (`CellChunk.row_status`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RowStatus {
    /// Neither.
    #[default]
    None,
    /// `reset_row = true`: drop the row in progress.
    Reset,
    /// `commit_row = true`: the row is complete.
    Commit,
}

/// One `ReadRowsResponse.CellChunk` (`spec/bigtable.md` 15.1). Presence rules: `row_key` present
/// = non-empty; `family_name` / `qualifier` present = `Some` (even if empty);
/// `timestamp_micros`, `labels`, `value` present = non-zero / non-empty; `value_size > 0` = the
/// cell continues in the next chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CellChunk {
    /// Row key; empty = same row.
    pub row_key: Vec<u8>,
    /// Family, when it changes (`google.protobuf.StringValue`).
    pub family_name: Option<String>,
    /// Qualifier, when it changes (`google.protobuf.BytesValue`).
    pub qualifier: Option<Vec<u8>>,
    /// Cell timestamp.
    pub timestamp_micros: i64,
    /// Labels from the filter.
    pub labels: Vec<String>,
    /// The value, or a piece of it.
    pub value: Vec<u8>,
    /// Total value length when the cell continues in the next chunk, else 0.
    pub value_size: i32,
    /// Reset or commit marker.
    pub row_status: RowStatus,
}

/// One streamed `ReadRowsResponse`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReadRowsResponse {
    /// Chunks, in order.
    pub chunks: Vec<CellChunk>,
    /// A key the server has scanned up to (rows before it need not be re-read); empty = none.
    pub last_scanned_row_key: Vec<u8>,
}

/// The outcome of one entry of a `MutateRows` request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MutateRowsEntryResult {
    /// Index of the entry in the request.
    pub index: usize,
    /// `Ok` when the entry was applied.
    pub result: Result<(), StoreError>,
}

/// One streamed `MutateRowsResponse`: results for some of the request's entries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MutateRowsResponse {
    /// Entry results, in any order.
    pub entries: Vec<MutateRowsEntryResult>,
}

/// One streamed `SampleRowKeysResponse`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleRowKeysResponse {
    /// A split point; empty = end of table (the last sample).
    pub row_key: Vec<u8>,
    /// Approximate bytes of the table before `row_key`.
    pub offset_bytes: i64,
}

/// A response from a store: a unary reply, or one part of a stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// One message of a ReadRows stream.
    ReadRowsPart(ReadRowsResponse),
    /// One message of a ReadRows stream as whole rows: each one committed, in scan order, as
    /// [`ReadRowsPart`](Response::ReadRowsPart)'s chunks would have merged into. Only a store
    /// or cache in the driver's own process sends it (a local store, the mount table's hot-row
    /// cache): it has the rows already, and cutting them into chunks for a merger to join
    /// again would only copy them twice. Rows are shared, so a cached row reaches the machine
    /// without a copy. The gRPC and JSON paths never carry it;
    /// [`row_chunks`](crate::readrows::row_chunks) turns it into chunks where a wire format
    /// needs them.
    Rows(Vec<Arc<Row>>),
    /// The reply to a point read ([`Request::ReadRow`]): the row with the cells that survive
    /// the filter, or `None` when the row is missing or no cell survives. Shared, like
    /// [`Response::Rows`].
    Row(Option<Arc<Row>>),
    /// One message of a MutateRows stream.
    MutateRowsPart(MutateRowsResponse),
    /// One message of a SampleRowKeys stream.
    SampleRowKeysPart(SampleRowKeysResponse),
    /// The stream ended with status OK.
    StreamEnd,
    /// The reply to MutateRow.
    MutateRow,
    /// The reply to CheckAndMutateRow.
    CheckAndMutateRow {
        /// Whether the predicate yielded at least one cell.
        predicate_matched: bool,
    },
    /// The reply to ReadModifyWriteRow: the new latest cell of every modified column.
    ReadModifyWriteRow(Row),
}

/// A failed call: the status code a store or transport answered and its message.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct StoreError {
    /// The `google.rpc.Code`.
    pub code: Code,
    /// Human-readable detail.
    pub message: String,
}

impl StoreError {
    /// A status with a message.
    pub fn new(code: Code, message: impl Into<String>) -> StoreError {
        StoreError {
            code,
            message: message.into(),
        }
    }
}

impl From<ValidationError> for StoreError {
    fn from(e: ValidationError) -> StoreError {
        StoreError::new(e.code(), alloc::string::ToString::to_string(&e))
    }
}
