//! The two layouts of a trace store table (`spec/tracestore.md` 2, 8): the setup plan of each
//! and the detection of an existing table's layout from its family names.

use alloc::vec::Vec;

use super::CodecError;
use super::cells::{
    FAMILY_DIGEST_MAP, FAMILY_ID_COUNTER, FAMILY_OPS, FAMILY_OPTIONS, FAMILY_TRACE,
};
use crate::model::ColumnFamily;

/// Which of the two required layouts a table holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// The final production layout: trace cells hold 16 MD5 bytes; options rows.
    Md5,
    /// The design document's layout: trace cells hold digest ids; digest map and id counter.
    DigestId,
}

impl Layout {
    /// `md5` or `digest-id`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Md5 => "md5",
            Layout::DigestId => "digest-id",
        }
    }

    /// Parses `md5` or `digest-id`.
    pub fn parse(name: &str) -> Option<Layout> {
        match name {
            "md5" => Some(Layout::Md5),
            "digest-id" => Some(Layout::DigestId),
            _ => None,
        }
    }

    /// The table's families after setup.
    pub fn families(self) -> Vec<ColumnFamily> {
        match self {
            Layout::Md5 => [FAMILY_OPS, FAMILY_OPTIONS, FAMILY_TRACE]
                .into_iter()
                .map(|f| ColumnFamily::max_versions(f, 1))
                .collect(),
            Layout::DigestId => [
                FAMILY_TRACE,
                FAMILY_OPS,
                FAMILY_ID_COUNTER,
                FAMILY_DIGEST_MAP,
            ]
            .into_iter()
            .map(ColumnFamily::new)
            .collect(),
        }
    }

    /// The admin requests that set a table up (`spec/tracestore.md` 8.1, 8.2); each ignores
    /// `ALREADY_EXISTS`.
    pub fn setup_plan(self) -> Vec<SetupRequest> {
        match self {
            Layout::Md5 => alloc::vec![SetupRequest::CreateTable {
                families: self.families()
            }],
            Layout::DigestId => {
                let mut plan = alloc::vec![SetupRequest::CreateTable {
                    families: Vec::new()
                }];
                plan.extend(
                    self.families()
                        .into_iter()
                        .map(|family| SetupRequest::CreateColumnFamily { family }),
                );
                plan
            }
        }
    }
}

/// One admin request of a setup plan; `ALREADY_EXISTS` answers are ignored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetupRequest {
    /// `CreateTable` with these families.
    CreateTable {
        /// Families created with the table.
        families: Vec<ColumnFamily>,
    },
    /// `ModifyColumnFamilies` with one `create`.
    CreateColumnFamily {
        /// The family (no GC rule in the digest-id layout).
        family: ColumnFamily,
    },
}

/// The layout of a table from its family names (`spec/tracestore.md` 8.3). With `named`, the
/// named layout is checked against the families instead of chosen by them.
pub fn detect_layout<S: AsRef<str>>(
    families: &[S],
    named: Option<Layout>,
) -> Result<Layout, CodecError> {
    let has = |f: &str| families.iter().any(|x| x.as_ref() == f);
    if !has(FAMILY_TRACE) || !has(FAMILY_OPS) {
        return Err(CodecError::NotATraceStoreTable);
    }
    let id_and_map = has(FAMILY_ID_COUNTER) && has(FAMILY_DIGEST_MAP);
    let options = has(FAMILY_OPTIONS);
    let by_families = if id_and_map && !options {
        Some(Layout::DigestId)
    } else if options && !id_and_map {
        Some(Layout::Md5)
    } else {
        None
    };
    match (named, by_families) {
        (None, Some(layout)) => Ok(layout),
        (None, None) => Err(CodecError::AmbiguousLayout),
        (Some(n), Some(layout)) if n != layout => Err(CodecError::LayoutMismatch),
        (Some(n), _) => Ok(n),
    }
}
