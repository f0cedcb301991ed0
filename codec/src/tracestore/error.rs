//! Why a trace-store key, param encoding, cell or table schema does not encode or decode
//! (`spec/tracestore.md` 18). The operations' error, `TraceStoreError` of
//! `rowkit_statemachines::tracestore`, carries each of these under the same name and message.

use alloc::string::String;

/// What the codec refuses. The `Display` text is the spec's message (the vectors' `error`
/// fields); [`CodecError::id`] is its stable id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// A repo index outside `0 ..= 2147483647`, or `first > last`.
    #[error("bad repo index")]
    BadRepoIndex,
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
    /// An OPS row key whose tile key is not 10 digits in `0 ..= 2147483647`.
    #[error("bad tile key")]
    BadTileKey,
    /// A trace cell of the digest-id layout that is not a valid uvarint.
    #[error("corrupt digest id cell")]
    CorruptDigestIdCell,
    /// A digest map cell that does not parse, or a map merge violation.
    #[error("corrupt digest map")]
    CorruptDigestMap,
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
}

impl CodecError {
    /// The stable id of the error (the CLI's and the JavaScript API's `id`).
    pub fn id(&self) -> &'static str {
        match self {
            CodecError::BadRepoIndex => "bad_repo_index",
            CodecError::NoParamsEncoded => "no_params_encoded",
            CodecError::UnknownValue => "unknown_value",
            CodecError::BadTraceId { .. } => "bad_trace_id",
            CodecError::CorruptedParamset { .. } => "corrupted_paramset",
            CodecError::BadTraceColumn => "bad_trace_column",
            CodecError::BadOptions => "bad_options",
            CodecError::BadTileKey => "bad_tile_key",
            CodecError::CorruptDigestIdCell => "corrupt_digest_id_cell",
            CodecError::CorruptDigestMap => "corrupt_digest_map",
            CodecError::BadIdCounter { .. } => "bad_id_counter",
            CodecError::NotATraceStoreTable => "not_a_trace_store_table",
            CodecError::AmbiguousLayout => "ambiguous_layout",
            CodecError::LayoutMismatch => "layout_mismatch",
        }
    }
}
