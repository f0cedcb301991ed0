//! The trace store's one error type (`spec/tracestore.md` 18): what its operations end with,
//! following the schemas' error contract ([`OperationError`]).

use alloc::string::String;

use rowkit_codec::tracestore::CodecError;

use crate::operation::{ABORTED_ID, ABORTED_MESSAGE, OperationError};
use crate::{Code, StoreError};

/// Everything that can go wrong in the trace store. The `Display` text is the spec's message
/// (the vectors' `error` fields); [`OperationError::id`] is the stable id of the CLI and the
/// JavaScript API.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceStoreError {
    /// A repo index outside `0 ..= 2147483647`, or `first > last`.
    #[error("bad repo index")]
    BadRepoIndex,
    /// A negative `ts` or needed commit time.
    #[error("bad timestamp")]
    BadTimestamp,
    /// An argument out of range (`ReadDense` with `n = 0`).
    #[error("bad argument")]
    BadArgument,
    /// A trace or options row key over 4096 bytes.
    #[error("row key too long")]
    RowKeyTooLong,
    /// `EncodeParamsAsString` found no key of the params in the KeyOrder.
    #[error("No params encoded.")]
    NoParamsEncoded,
    /// `EncodeParamsAsString` met a value the param set does not hold.
    #[error("Unknown value")]
    UnknownValue,
    /// `DecodeParamsFromString` failed; the message is the original's.
    #[error("{reason}")]
    BadTraceId {
        /// `failed to parse`, `failed to find key` or `failed to find value`.
        reason: &'static str,
        /// The offending piece of the encoded id.
        piece: String,
    },
    /// The OPS row does not hold exactly `O:H` and `O:OPS`, or `H` is empty.
    #[error("{reason}")]
    BadOpsRow {
        /// `incorrect number of OPS columns` or `missing hash`.
        reason: &'static str,
    },
    /// The `O:OPS` gob could not be decoded.
    #[error("corrupted paramset")]
    CorruptedParamset {
        /// Byte offset in the gob where decoding failed.
        offset: usize,
        /// What was wrong there.
        detail: &'static str,
    },
    /// A trace qualifier that is not a decimal offset in `[0, 256)`.
    #[error("bad trace column")]
    BadTraceColumn,
    /// An options cell that does not parse.
    #[error("bad options")]
    BadOptions,
    /// Range assembly went wrong (cannot happen for valid ranges).
    #[error("incorrect tile math")]
    IncorrectTileMath,
    /// An OPS row key whose tile key is not 10 digits in `0 ..= 2147483647`.
    #[error("bad tile key")]
    BadTileKey,
    /// A Put with options on a digest-id table.
    #[error("options not supported by the digest-id layout")]
    OptionsNotSupported,
    /// A trace cell of the digest-id layout that is not a valid uvarint.
    #[error("corrupt digest id cell")]
    CorruptDigestIdCell,
    /// A digest map cell that does not parse, or a map merge violation.
    #[error("corrupt digest map")]
    CorruptDigestMap,
    /// An id found in a trace cell that the digest map does not hold.
    #[error("unknown digest id {0}")]
    UnknownDigestId(u64),
    /// The increment answer does not hold one 8-byte `I` cell, or is smaller than the increment.
    #[error("{reason}")]
    BadIdCounter {
        /// `malformed id counter response` or `corrupt id counter`.
        reason: &'static str,
    },
    /// A table without the families `T` and `O`.
    #[error("not a trace store table")]
    NotATraceStoreTable,
    /// A table whose families fit both layouts or neither.
    #[error("ambiguous trace store layout")]
    AmbiguousLayout,
    /// The named layout contradicts the table's families.
    #[error("layout mismatch")]
    LayoutMismatch,
    /// A `MutateRows` entry failed after the retry rule.
    #[error("write failed: {code}: {message}")]
    WriteFailed {
        /// Status of the first failed entry.
        code: Code,
        /// Its message.
        message: String,
    },
    /// Any other store error.
    #[error("store error: {code}: {message}")]
    Store {
        /// The status code.
        code: Code,
        /// The store's message.
        message: String,
    },
    /// The deadline passed or the operation was cancelled.
    #[error("{}", ABORTED_MESSAGE)]
    Aborted,
}

impl OperationError for TraceStoreError {
    fn id(&self) -> &'static str {
        match self {
            TraceStoreError::BadRepoIndex => "bad_repo_index",
            TraceStoreError::BadTimestamp => "bad_timestamp",
            TraceStoreError::BadArgument => "bad_argument",
            TraceStoreError::RowKeyTooLong => "row_key_too_long",
            TraceStoreError::NoParamsEncoded => "no_params_encoded",
            TraceStoreError::UnknownValue => "unknown_value",
            TraceStoreError::BadTraceId { .. } => "bad_trace_id",
            TraceStoreError::BadOpsRow { .. } => "bad_ops_row",
            TraceStoreError::CorruptedParamset { .. } => "corrupted_paramset",
            TraceStoreError::BadTraceColumn => "bad_trace_column",
            TraceStoreError::BadOptions => "bad_options",
            TraceStoreError::IncorrectTileMath => "incorrect_tile_math",
            TraceStoreError::BadTileKey => "bad_tile_key",
            TraceStoreError::OptionsNotSupported => "options_not_supported",
            TraceStoreError::CorruptDigestIdCell => "corrupt_digest_id_cell",
            TraceStoreError::CorruptDigestMap => "corrupt_digest_map",
            TraceStoreError::UnknownDigestId(_) => "unknown_digest_id",
            TraceStoreError::BadIdCounter { .. } => "bad_id_counter",
            TraceStoreError::NotATraceStoreTable => "not_a_trace_store_table",
            TraceStoreError::AmbiguousLayout => "ambiguous_layout",
            TraceStoreError::LayoutMismatch => "layout_mismatch",
            TraceStoreError::WriteFailed { .. } => "write_failed",
            TraceStoreError::Store { .. } => "store_error",
            TraceStoreError::Aborted => ABORTED_ID,
        }
    }

    fn aborted() -> TraceStoreError {
        TraceStoreError::Aborted
    }

    fn store(error: StoreError) -> TraceStoreError {
        TraceStoreError::Store {
            code: error.code,
            message: error.message,
        }
    }

    /// Raised before any request (CLI exit code 2).
    fn is_bad_input(&self) -> bool {
        matches!(
            self,
            TraceStoreError::BadRepoIndex
                | TraceStoreError::BadTimestamp
                | TraceStoreError::BadArgument
                | TraceStoreError::OptionsNotSupported
        )
    }
}

/// Each codec error is the operation error of the same name and message.
impl From<CodecError> for TraceStoreError {
    fn from(e: CodecError) -> TraceStoreError {
        match e {
            CodecError::BadRepoIndex => TraceStoreError::BadRepoIndex,
            CodecError::NoParamsEncoded => TraceStoreError::NoParamsEncoded,
            CodecError::UnknownValue => TraceStoreError::UnknownValue,
            CodecError::BadTraceId { reason, piece } => {
                TraceStoreError::BadTraceId { reason, piece }
            }
            CodecError::CorruptedParamset { offset, detail } => {
                TraceStoreError::CorruptedParamset { offset, detail }
            }
            CodecError::BadTraceColumn => TraceStoreError::BadTraceColumn,
            CodecError::BadOptions => TraceStoreError::BadOptions,
            CodecError::BadTileKey => TraceStoreError::BadTileKey,
            CodecError::CorruptDigestIdCell => TraceStoreError::CorruptDigestIdCell,
            CodecError::CorruptDigestMap => TraceStoreError::CorruptDigestMap,
            CodecError::BadIdCounter { reason } => TraceStoreError::BadIdCounter { reason },
            CodecError::NotATraceStoreTable => TraceStoreError::NotATraceStoreTable,
            CodecError::AmbiguousLayout => TraceStoreError::AmbiguousLayout,
            CodecError::LayoutMismatch => TraceStoreError::LayoutMismatch,
            // A codec error added later than this mapping: its message is kept.
            other => TraceStoreError::Store {
                code: Code::Internal,
                message: alloc::string::ToString::to_string(&other),
            },
        }
    }
}
