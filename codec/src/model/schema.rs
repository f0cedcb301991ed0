use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use super::{Timestamp, ValidationError, limits};

/// A garbage-collection policy of a column family (admin `table.proto` `GcRule`).
///
/// GC is an explicit maintenance call in rowkit stores (`spec/bigtable.md` 12): reads never
/// hide GC-eligible cells.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GcRule {
    /// Keep only the newest N cells of each column.
    MaxNumVersions(u32),
    /// Delete cells older than this many microseconds (at least 1 ms).
    MaxAge(i64),
    /// Delete what every sub-rule deletes.
    Intersection(Vec<GcRule>),
    /// Delete what any sub-rule deletes.
    Union(Vec<GcRule>),
}

impl GcRule {
    /// Checks the rule: at least one version, ages of at least 1 ms.
    pub fn validate(&self) -> Result<(), ValidationError> {
        match self {
            GcRule::MaxNumVersions(0) => Err(ValidationError::InvalidGcRule {
                reason: "max_num_versions must be at least 1".to_string(),
            }),
            GcRule::MaxAge(age) if *age < 1000 => Err(ValidationError::InvalidGcRule {
                reason: "max_age must be at least 1ms".to_string(),
            }),
            GcRule::Intersection(rules) | GcRule::Union(rules) => {
                rules.iter().try_for_each(GcRule::validate)
            }
            _ => Ok(()),
        }
    }

    /// Whether the cell at `index` among its column's cells (0 = newest) stamped `ts` is
    /// eligible for collection at `now`.
    pub fn collects(&self, index: usize, ts: Timestamp, now: Timestamp) -> bool {
        match self {
            GcRule::MaxNumVersions(n) => index >= *n as usize,
            GcRule::MaxAge(age) => ts.0 < now.0.saturating_sub(*age),
            GcRule::Intersection(rules) => {
                !rules.is_empty() && rules.iter().all(|r| r.collects(index, ts, now))
            }
            GcRule::Union(rules) => rules.iter().any(|r| r.collects(index, ts, now)),
        }
    }
}

/// A column family of a table schema.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ColumnFamily {
    /// Family name, `[-_.a-zA-Z0-9]+`, at most 64 characters.
    pub name: String,
    /// GC policy; `None` keeps every cell.
    pub gc_rule: Option<GcRule>,
}

impl ColumnFamily {
    /// A family that keeps every cell.
    pub fn new(name: impl Into<String>) -> ColumnFamily {
        ColumnFamily {
            name: name.into(),
            gc_rule: None,
        }
    }

    /// A family that keeps the newest `n` cells of each column.
    pub fn max_versions(name: impl Into<String>, n: u32) -> ColumnFamily {
        ColumnFamily {
            name: name.into(),
            gc_rule: Some(GcRule::MaxNumVersions(n)),
        }
    }
}

/// Whether a byte may stand in a family name or table id: `[-_.a-zA-Z0-9]`.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

/// Checks a family name: `[-_.a-zA-Z0-9]+`, at most 64 characters.
pub fn validate_family_name(name: &str) -> Result<(), ValidationError> {
    let ok = !name.is_empty()
        && name.len() <= limits::MAX_FAMILY_NAME_CHARS
        && name.bytes().all(is_name_byte);
    if ok {
        Ok(())
    } else {
        Err(ValidationError::InvalidFamilyName {
            name: name.to_string(),
        })
    }
}

/// Checks a table id: `[_a-zA-Z0-9][-_.a-zA-Z0-9]*`, at most 50 characters.
pub fn validate_table_name(name: &str) -> Result<(), ValidationError> {
    let bytes = name.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= limits::MAX_TABLE_NAME_CHARS
        && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
        && bytes.iter().all(|&b| is_name_byte(b));
    if ok {
        Ok(())
    } else {
        Err(ValidationError::InvalidTableName {
            name: name.to_string(),
        })
    }
}

/// One modification of a table's families (admin `ModifyColumnFamiliesRequest.Modification`),
/// as the gRPC and JSON admin APIs decode it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FamilyChange {
    /// Add a family the table does not have.
    Create(ColumnFamily),
    /// Replace the GC rule of a family the table has.
    Update(ColumnFamily),
    /// Drop the family of this name, with its cells.
    Drop(String),
}

impl FamilyChange {
    /// The name of the family it changes.
    pub fn family(&self) -> &str {
        match self {
            FamilyChange::Create(f) | FamilyChange::Update(f) => &f.name,
            FamilyChange::Drop(name) => name,
        }
    }
}
