use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use super::{Timestamp, ValidationError, limits, validate_family_name};

/// A `[start, end)` timestamp range in microseconds; `end == 0` means infinity
/// (`data.proto` `TimestampRange`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TimestampRange {
    /// Inclusive start; 0 = from the epoch.
    pub start: i64,
    /// Exclusive end; 0 = infinity.
    pub end: i64,
}

impl TimestampRange {
    /// Whether `ts` lies in the range.
    pub fn contains(&self, ts: Timestamp) -> bool {
        self.start <= ts.0 && (self.end == 0 || ts.0 < self.end)
    }
}

/// One of the four mutation kinds (`spec/bigtable.md` 5). Mutations of one request apply in
/// order, atomically for the row.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mutation {
    /// Writes one cell, replacing the value of a cell with the same column and timestamp.
    SetCell {
        /// Declared column family.
        family: String,
        /// Column qualifier.
        qualifier: Vec<u8>,
        /// Explicit millisecond-aligned timestamp, or [`Timestamp::SERVER_TIME`].
        timestamp: Timestamp,
        /// Value.
        value: Vec<u8>,
    },
    /// Deletes the cells of one column, all of them or those in a timestamp range.
    DeleteFromColumn {
        /// Declared column family.
        family: String,
        /// Column qualifier.
        qualifier: Vec<u8>,
        /// `None`: every cell of the column.
        range: Option<TimestampRange>,
    },
    /// Deletes every cell of one family in the row.
    DeleteFromFamily {
        /// Declared column family.
        family: String,
    },
    /// Deletes the whole row.
    DeleteFromRow,
}

impl Mutation {
    /// `SetCell(family, qualifier, timestamp, value)`: the one builder every schema writes
    /// cells with.
    pub fn set_cell(
        family: &str,
        qualifier: &[u8],
        timestamp: Timestamp,
        value: impl Into<Vec<u8>>,
    ) -> Mutation {
        Mutation::SetCell {
            family: family.into(),
            qualifier: qualifier.to_vec(),
            timestamp,
            value: value.into(),
        }
    }

    /// The family the mutation names, if any.
    pub fn family(&self) -> Option<&str> {
        match self {
            Mutation::SetCell { family, .. }
            | Mutation::DeleteFromColumn { family, .. }
            | Mutation::DeleteFromFamily { family } => Some(family),
            Mutation::DeleteFromRow => None,
        }
    }

    /// Whether applying the mutation twice has the same effect as once: false only for a
    /// `SetCell` stamped with server time (`spec/bigtable.md` 6, client retry rule).
    pub fn is_idempotent(&self) -> bool {
        !matches!(self, Mutation::SetCell { timestamp, .. } if *timestamp == Timestamp::SERVER_TIME)
    }
}

/// Checks one mutation on its own (family syntax, sizes, timestamps); whether its family is
/// declared is checked against the table schema by the store.
pub fn validate_mutation(m: &Mutation) -> Result<(), ValidationError> {
    if let Some(family) = m.family() {
        validate_family_name(family)?;
    }
    match m {
        Mutation::SetCell {
            qualifier,
            timestamp,
            value,
            ..
        } => {
            check_qualifier(qualifier)?;
            if value.len() > limits::MAX_VALUE_BYTES {
                return Err(ValidationError::ValueTooLarge { len: value.len() });
            }
            if *timestamp != Timestamp::SERVER_TIME && !timestamp.is_valid_cell_timestamp() {
                return Err(ValidationError::InvalidTimestamp {
                    micros: timestamp.0,
                });
            }
            Ok(())
        }
        Mutation::DeleteFromColumn {
            qualifier, range, ..
        } => {
            check_qualifier(qualifier)?;
            if let Some(r) = range {
                let aligned = |t: i64| t >= 0 && t % 1000 == 0;
                if !aligned(r.start) || !aligned(r.end) || (r.end != 0 && r.start >= r.end) {
                    return Err(ValidationError::InvalidTimestampRange {
                        start: r.start,
                        end: r.end,
                    });
                }
            }
            Ok(())
        }
        Mutation::DeleteFromFamily { .. } | Mutation::DeleteFromRow => Ok(()),
    }
}

pub(crate) fn check_qualifier(qualifier: &[u8]) -> Result<(), ValidationError> {
    if qualifier.len() > limits::MAX_QUALIFIER_BYTES {
        return Err(ValidationError::QualifierTooLong {
            len: qualifier.len(),
        });
    }
    Ok(())
}

/// What a read-modify-write rule does to the latest cell of its column.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RuleOp {
    /// Appends bytes to the latest value (absent cell = empty value).
    AppendValue(Vec<u8>),
    /// Adds to the latest value read as a big-endian `i64` (absent cell = 0); the value must be
    /// exactly 8 bytes. Overflow wraps.
    IncrementAmount(i64),
}

/// One rule of a `ReadModifyWriteRow` (`spec/bigtable.md` 8).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReadModifyWriteRule {
    /// Declared column family.
    pub family: String,
    /// Column qualifier.
    pub qualifier: Vec<u8>,
    /// The modification.
    pub op: RuleOp,
}

/// Checks one read-modify-write rule on its own.
pub fn validate_rule(rule: &ReadModifyWriteRule) -> Result<(), ValidationError> {
    validate_family_name(&rule.family)?;
    check_qualifier(&rule.qualifier)?;
    if let RuleOp::AppendValue(v) = &rule.op
        && v.len() > limits::MAX_VALUE_BYTES
    {
        return Err(ValidationError::ValueTooLarge { len: v.len() });
    }
    Ok(())
}
