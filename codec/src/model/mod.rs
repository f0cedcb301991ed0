//! The Bigtable wide-column model (`spec/bigtable.md` sections 1-12).
//!
//! Requests carry plain bytes and strings so that any request a client may send — valid or
//! not — can be represented; the `validate_*` functions apply the production limits of section 4
//! and return a typed [`ValidationError`] that maps to the `google.rpc.Code` a store answers.

mod cell;
mod error;
mod filter;
pub mod limits;
mod mutation;
pub mod regex;
mod rowset;
mod schema;
mod status;
mod timestamp;

pub use cell::{Cell, Row, compare_canonical, row_size};
pub use error::ValidationError;
pub use filter::{RowFilter, filter_depth, filter_encoded_len, literal_regex, validate_filter};
pub use mutation::{
    Mutation, ReadModifyWriteRule, RuleOp, TimestampRange, validate_mutation, validate_rule,
};
pub use rowset::{KeyBound, RowRange, RowSet, prefix_successor};
pub use schema::{ColumnFamily, FamilyChange, GcRule, validate_family_name, validate_table_name};
pub use status::Code;
pub use timestamp::Timestamp;

/// Checks a row key against `spec/bigtable.md` section 4: non-empty, at most 4 KiB.
pub fn validate_row_key(key: &[u8]) -> Result<(), ValidationError> {
    if key.is_empty() {
        return Err(ValidationError::EmptyRowKey);
    }
    if key.len() > limits::MAX_ROW_KEY_BYTES {
        return Err(ValidationError::RowKeyTooLong { len: key.len() });
    }
    Ok(())
}
