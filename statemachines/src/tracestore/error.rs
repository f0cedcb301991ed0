//! The trace store's one error type (`spec/tracestore.md` 18): what its operations end with,
//! following the schemas' error contract ([`OperationError`]).

use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::migration::{MarkerTransitionError, MigrationRecordError};
use rowkit_codec::tracestore::CodecError;

use crate::operation::{ABORTED_ID, ABORTED_MESSAGE, OperationError};
use crate::{Code, StoreError};

/// Everything that can go wrong in the trace store. The `Display` text is the spec's message
/// (the vectors' `error` fields); [`OperationError::id`] is the stable id of the CLI and the
/// JavaScript API.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceStoreError {
    /// A key, param encoding, cell or table schema the codec refuses (`bad repo index`,
    /// `corrupt digest map`, …), under the codec's own id and message.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A negative `ts` or needed commit time.
    #[error("bad timestamp")]
    BadTimestamp,
    /// An argument out of range (`ReadDense` with `n = 0`).
    #[error("bad argument")]
    BadArgument,
    /// A trace or options row key over 4096 bytes.
    #[error("row key too long")]
    RowKeyTooLong,
    /// The OPS row does not hold exactly `O:H` and `O:OPS`, or `H` is empty.
    #[error("{reason}")]
    BadOpsRow {
        /// `incorrect number of OPS columns` or `missing hash`.
        reason: &'static str,
    },
    /// Range assembly went wrong (cannot happen for valid ranges).
    #[error("incorrect tile math")]
    IncorrectTileMath,
    /// A Put with options on a digest-id table.
    #[error("options not supported by the digest-id layout")]
    OptionsNotSupported,
    /// An id found in a trace cell that the digest map does not hold.
    #[error("unknown digest id {0}")]
    UnknownDigestId(u64),
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
    /// A migration marker changed under the migrator (`docs/migration.md` §2.2).
    #[error("the migration marker changed under this migrator")]
    MarkerChanged,
    /// Another migrator wrote the run's checkpoint (`docs/migration.md` §7.1).
    #[error("the migration was taken over by {owner}")]
    MigrationTakenOver {
        /// The checkpoint's owner now (empty when there is no checkpoint).
        owner: String,
    },
    /// Another migrator holds the run's lease, or another migration is in progress.
    #[error("a migration is in progress: {0}")]
    MigrationInProgress(String),
    /// A stored migration marker or checkpoint that does not decode.
    #[error("the stored migration {column} is invalid: {error}")]
    MigrationRecordInvalid {
        /// `marker` or `checkpoint`.
        column: &'static str,
        /// What is wrong with it.
        error: MigrationRecordError,
    },
    /// A marker change `docs/migration.md` §3 does not allow, refused before anything is
    /// sent.
    #[error("migration change refused: {0}")]
    MigrationChangeRefused(MarkerTransitionError),
    /// A migrator's arguments refused before any write (the CLI's usage error).
    #[error("usage: {0}")]
    MigrationUsage(String),
    /// The migration found options rows under `--options refuse` (`docs/migration.md` §5.7):
    /// the digest-id layout cannot hold them.
    #[error(
        "tile {tile_key} holds {rows} options row(s): the digest-id layout has no options (--options drop drops them)"
    )]
    MigrationOptions {
        /// The tile.
        tile_key: i32,
        /// Its options rows.
        rows: u64,
    },
    /// The check of the target before the switch (`docs/migration.md` §5.5, §8) found what
    /// the source does not have: the run stays in `verifying`, nothing of the switch written.
    #[error("the migration stops in verifying: {} finding(s) of the target block the switch: {}",
        findings.len(), crate::objmeta::migration_findings_text(findings))]
    MigrationBlocked {
        /// The target's findings, each marked whether the source has it too (those do not
        /// block).
        findings: Vec<crate::objmeta::migrate::pass::PassFinding>,
    },
    /// A record of the migration that cannot be written (cannot happen for the values the
    /// machines build).
    #[error("internal error: {0}")]
    Internal(String),
    /// The deadline passed or the operation was cancelled.
    #[error("{}", ABORTED_MESSAGE)]
    Aborted,
}

impl OperationError for TraceStoreError {
    fn id(&self) -> &'static str {
        match self {
            TraceStoreError::Codec(e) => e.id(),
            TraceStoreError::BadTimestamp => "bad_timestamp",
            TraceStoreError::BadArgument => "bad_argument",
            TraceStoreError::RowKeyTooLong => "row_key_too_long",
            TraceStoreError::BadOpsRow { .. } => "bad_ops_row",
            TraceStoreError::IncorrectTileMath => "incorrect_tile_math",
            TraceStoreError::OptionsNotSupported => "options_not_supported",
            TraceStoreError::UnknownDigestId(_) => "unknown_digest_id",
            TraceStoreError::WriteFailed { .. } => "write_failed",
            TraceStoreError::Store { .. } => "store_error",
            TraceStoreError::MarkerChanged => "marker_changed",
            TraceStoreError::MigrationTakenOver { .. } => "migration_taken_over",
            TraceStoreError::MigrationInProgress(_) => "migration_in_progress",
            TraceStoreError::MigrationRecordInvalid { .. } => "migration_record_invalid",
            TraceStoreError::MigrationChangeRefused(_) => "migration_change_refused",
            TraceStoreError::MigrationUsage(_) => "usage_error",
            TraceStoreError::MigrationOptions { .. } => "options_not_supported",
            TraceStoreError::MigrationBlocked { .. } => "migration_blocked",
            TraceStoreError::Internal(_) => "internal_error",
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
            TraceStoreError::Codec(CodecError::BadRepoIndex)
                | TraceStoreError::BadTimestamp
                | TraceStoreError::BadArgument
                | TraceStoreError::OptionsNotSupported
                | TraceStoreError::MigrationUsage(_)
        )
    }
}
