use alloc::string::String;

use super::Code;

/// Why a request, or a part of it, breaks the rules of `spec/bigtable.md`.
///
/// Each variant names the field that is wrong; [`ValidationError::code`] gives the
/// `google.rpc.Code` a store answers with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValidationError {
    /// A row key is empty.
    #[error("row key must not be empty")]
    EmptyRowKey,
    /// A row key is longer than 4 KiB.
    #[error("row key is {len} bytes, over the limit of 4096")]
    RowKeyTooLong {
        /// Its length.
        len: usize,
    },
    /// A family name breaks `[-_.a-zA-Z0-9]+`, at most 64 characters.
    #[error("invalid column family name {name:?}")]
    InvalidFamilyName {
        /// The name as given.
        name: String,
    },
    /// The family is not declared in the table schema.
    #[error("Requested column family not found. (family {name:?})")]
    FamilyNotFound {
        /// The family named by the request.
        name: String,
    },
    /// A table id breaks `[_a-zA-Z0-9][-_.a-zA-Z0-9]*`, at most 50 characters.
    #[error("invalid table name {name:?}")]
    InvalidTableName {
        /// The name as given.
        name: String,
    },
    /// A column qualifier is longer than 16 KiB.
    #[error("column qualifier is {len} bytes, over the limit of 16384")]
    QualifierTooLong {
        /// Its length.
        len: usize,
    },
    /// A cell value is larger than 100 MiB.
    #[error("cell value is {len} bytes, over the limit of 104857600")]
    ValueTooLarge {
        /// Its length.
        len: usize,
    },
    /// A mutation would make the row larger than 256 MiB.
    #[error("row would be {size} bytes, over the limit of 268435456")]
    RowTooLarge {
        /// The size the row would have.
        size: u64,
    },
    /// A written timestamp is negative (other than the server-time marker) or not a multiple of
    /// 1000.
    #[error("invalid timestamp {micros}: must be >= 0 and a multiple of 1000")]
    InvalidTimestamp {
        /// The value as given.
        micros: i64,
    },
    /// A timestamp range is negative, not millisecond-aligned, or inverted.
    #[error("inverted or invalid timestamp range [{start}, {end})")]
    InvalidTimestampRange {
        /// Inclusive start.
        start: i64,
        /// Exclusive end (0 = infinity).
        end: i64,
    },
    /// A request carries no mutations (or, for `CheckAndMutateRow`, neither list has any).
    #[error("no mutations provided")]
    NoMutations,
    /// A request carries more than 100 000 mutations.
    #[error("{count} mutations, over the limit of 100000")]
    TooManyMutations {
        /// How many the request carries.
        count: usize,
    },
    /// A `MutateRows` request has no entries.
    #[error("no entries provided")]
    NoEntries,
    /// A `ReadModifyWriteRow` has no rules.
    #[error("no rules provided")]
    NoRules,
    /// A `ReadModifyWriteRow` has more than 100 000 rules.
    #[error("{count} rules, over the limit of 100000")]
    TooManyRules {
        /// How many the request carries.
        count: usize,
    },
    /// A row range or other key range has its start after its end.
    #[error("{field}: start must not be after end")]
    InvertedRange {
        /// Which range.
        field: &'static str,
    },
    /// `rows_limit` is negative.
    #[error("rows_limit must not be negative, got {0}")]
    NegativeRowsLimit(i64),
    /// A filter node is invalid; `reason` says why.
    #[error("invalid {field}: {reason}")]
    InvalidFilter {
        /// The proto field of the offending filter, e.g. `cells_per_row_limit_filter`.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A regular expression cannot be used (RE2 rejects it, or RE2 and Rust differ on it).
    #[error("invalid {field} {pattern:?}: {reason}")]
    InvalidRegex {
        /// The proto field, e.g. `value_regex_filter`.
        field: &'static str,
        /// The pattern as given, lossily decoded.
        pattern: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The filter's protobuf encoding is larger than 20 480 bytes.
    #[error("filter is {size} bytes when encoded, over the limit of 20480")]
    FilterTooLarge {
        /// Its encoded size.
        size: usize,
    },
    /// The filter nests deeper than 20.
    #[error("filter nests {depth} deep, over the limit of 20")]
    FilterTooDeep {
        /// Its depth.
        depth: usize,
    },
    /// An increment hit a cell whose value is not exactly 8 bytes.
    #[error(
        "Cannot increment value of length {len}: the increment operation can only be performed on 64-bit values"
    )]
    IncrementNonInt64 {
        /// The length of the existing value.
        len: usize,
    },
    /// A table has more than 100 column families.
    #[error("{count} column families, over the limit of 100")]
    TooManyFamilies {
        /// How many the table would have.
        count: usize,
    },
    /// A GC rule is malformed (e.g. `max_age` under 1 ms, or zero versions).
    #[error("invalid GC rule: {reason}")]
    InvalidGcRule {
        /// What is wrong with it.
        reason: String,
    },
}

impl ValidationError {
    /// The status a store answers with (`spec/bigtable.md` 13).
    pub fn code(&self) -> Code {
        match self {
            ValidationError::FamilyNotFound { .. } => Code::NotFound,
            ValidationError::IncrementNonInt64 { .. } => Code::FailedPrecondition,
            _ => Code::InvalidArgument,
        }
    }
}
