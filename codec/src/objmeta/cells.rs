//! Documents as Bigtable cells (`objmeta.md` 5.1, 5.3–5.5): the `d` / `f` families, the
//! `REPLACE` mutation list, reading a document back from a row, the named filters, and the
//! tag-key escaping of `MongoUtils.serialize` / `unserialize`.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use sha2::{Digest, Sha256};

use super::error::ObjmetaCodecError;
use super::json::{Json, JsonObject};
use crate::model::{ColumnFamily, KeyBound, Mutation, Row, RowFilter, Timestamp};

/// The family of document fields (JSON text).
pub const DOC_FAMILY: &str = "d";
/// The family of derived cells used by conditions and read filters.
pub const FLAG_FAMILY: &str = "f";
/// The default table.
pub const DEFAULT_TABLE: &str = "objmeta";

/// The families `setup` creates: `d` and `f`, each `MaxVersions(1)`.
pub fn families() -> Vec<ColumnFamily> {
    [DOC_FAMILY, FLAG_FAMILY]
        .into_iter()
        .map(|f| ColumnFamily::max_versions(f, 1))
        .collect()
}

fn set(family: &str, qualifier: &str, value: Vec<u8>) -> Mutation {
    Mutation::SetCell {
        family: family.to_string(),
        qualifier: qualifier.as_bytes().to_vec(),
        timestamp: Timestamp(0),
        value,
    }
}

/// SHA-256 of the stored `d:value` text.
pub fn value_hash(text: &str) -> Vec<u8> {
    Sha256::digest(text.as_bytes()).to_vec()
}

/// `REPLACE(value[, vFormat])`: the mutation list that stores a document's value (and the
/// metastore's vFormat) with its derived `f:` cells. `text` is the value's JSON text.
pub fn replace(value: &Json, vformat: Option<&str>) -> Vec<Mutation> {
    replace_text(value, &value.stringify(), vformat)
}

/// [`replace`] of a value whose JSON text `text` (`value.stringify()`) the caller has made
/// already, for a change event or a second write of the same document.
pub fn replace_text(value: &Json, text: &str, vformat: Option<&str>) -> Vec<Mutation> {
    let mut m = vec![
        Mutation::DeleteFromFamily {
            family: FLAG_FAMILY.to_string(),
        },
        set(DOC_FAMILY, "value", text.as_bytes().to_vec()),
    ];
    if let Some(vf) = vformat {
        m.push(set(
            DOC_FAMILY,
            "vFormat",
            Json::str(vf).stringify().into_bytes(),
        ));
    }
    m.push(set(FLAG_FAMILY, "hash", value_hash(text)));
    if let Some(Json::String(vid)) = value.get("versionId") {
        m.push(set(FLAG_FAMILY, "versionId", vid.as_bytes().to_vec()));
    }
    if value.get("isPHD") == Some(&Json::Bool(true)) {
        m.push(set(FLAG_FAMILY, "isPHD", vec![1]));
    }
    if value.get("deleted") == Some(&Json::Bool(true)) {
        m.push(set(FLAG_FAMILY, "deleted", vec![1]));
    }
    m
}

/// A document read back from a row.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredDoc {
    /// The `d:value` text as stored.
    pub text: String,
    /// The parsed value.
    pub value: Json,
    /// `f:hash`, if present.
    pub hash: Option<Vec<u8>>,
    /// `f:deleted` present.
    pub deleted: bool,
    /// `d:vFormat` (metastore rows), parsed.
    pub vformat: Option<Json>,
}

impl StoredDoc {
    /// Reads the latest cells of a row; `None` when it has no `d:value`.
    pub fn from_row(row: &Row) -> Result<Option<StoredDoc>, ObjmetaCodecError> {
        let cell = |f: &str, q: &str| {
            row.cells
                .iter()
                .find(|c| c.family == f && c.qualifier == q.as_bytes())
        };
        let Some(value_cell) = cell(DOC_FAMILY, "value") else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&value_cell.value).into_owned();
        let value = Json::parse(&text)?;
        let vformat = match cell(DOC_FAMILY, "vFormat") {
            Some(c) => Some(Json::parse(&String::from_utf8_lossy(&c.value))?),
            None => None,
        };
        Ok(Some(StoredDoc {
            text,
            value,
            hash: cell(FLAG_FAMILY, "hash").map(|c| c.value.clone()),
            deleted: cell(FLAG_FAMILY, "deleted").is_some(),
            vformat,
        }))
    }
}

fn family(f: &str) -> RowFilter {
    RowFilter::FamilyNameRegex(f.to_string())
}

fn column(q: &str) -> RowFilter {
    RowFilter::ColumnQualifierRegex(q.as_bytes().to_vec())
}

fn condition(p: RowFilter, t: Option<RowFilter>, f: Option<RowFilter>) -> RowFilter {
    RowFilter::Condition {
        predicate: Some(Box::new(p)),
        true_filter: t.map(Box::new),
        false_filter: f.map(Box::new),
    }
}

/// Named filters of `objmeta.md` 5.5.
pub mod filters {
    use super::*;

    /// `EXISTS`: the row exists.
    pub fn exists() -> RowFilter {
        RowFilter::Chain(vec![family(DOC_FAMILY), column("value")])
    }

    /// `FLAG(q)`: cell `f:q` exists.
    pub fn flag(q: &str) -> RowFilter {
        RowFilter::Chain(vec![family(FLAG_FAMILY), column(q)])
    }

    fn vid_range(start: KeyBound, end: KeyBound) -> RowFilter {
        RowFilter::Chain(vec![
            flag("versionId"),
            RowFilter::ValueRange { start, end },
        ])
    }

    /// `VID_EQ(x)`.
    pub fn vid_eq(x: &str) -> RowFilter {
        vid_range(
            KeyBound::Closed(x.as_bytes().to_vec()),
            KeyBound::Closed(x.as_bytes().to_vec()),
        )
    }

    /// `VID_LE(x)`.
    pub fn vid_le(x: &str) -> RowFilter {
        vid_range(KeyBound::Unbounded, KeyBound::Closed(x.as_bytes().to_vec()))
    }

    /// `VID_GE(x)`.
    pub fn vid_ge(x: &str) -> RowFilter {
        vid_range(KeyBound::Closed(x.as_bytes().to_vec()), KeyBound::Unbounded)
    }

    /// `HASH_EQ(h)`: the stored value is unchanged.
    pub fn hash_eq(h: &[u8]) -> RowFilter {
        RowFilter::Chain(vec![
            flag("hash"),
            RowFilter::ValueRange {
                start: KeyBound::Closed(h.to_vec()),
                end: KeyBound::Closed(h.to_vec()),
            },
        ])
    }

    /// `AND(a, b)`.
    pub fn and(a: RowFilter, b: RowFilter) -> RowFilter {
        condition(a, Some(b), Some(RowFilter::BlockAll))
    }

    /// `EXISTS_AND_NOT(a)`.
    pub fn exists_and_not(a: RowFilter) -> RowFilter {
        condition(a, Some(RowFilter::BlockAll), Some(exists()))
    }

    /// `LIVE`: the row exists and is not flagged deleted.
    pub fn live() -> RowFilter {
        condition(flag("deleted"), Some(RowFilter::BlockAll), Some(exists()))
    }

    /// `PHD_IS(v)`.
    pub fn phd_is(v: &str) -> RowFilter {
        and(flag("isPHD"), vid_eq(v))
    }

    /// `LIVE_VALUE`: the `d:value` of live rows only.
    pub fn live_value() -> RowFilter {
        condition(
            flag("deleted"),
            Some(RowFilter::BlockAll),
            Some(RowFilter::Chain(vec![
                exists(),
                RowFilter::CellsPerColumnLimit(1),
            ])),
        )
    }

    /// `LatestN(1)`: the default filter of `ReadRow`.
    pub fn latest() -> RowFilter {
        RowFilter::CellsPerColumnLimit(1)
    }
}

/// Tag-key escaping on write: `$` → U+FF04, `.` → U+FF0E in the names of `value.tags`.
pub fn escape_tags(value: &mut Json) {
    rename_tags(value, |c| match c {
        '$' => '\u{ff04}',
        '.' => '\u{ff0e}',
        c => c,
    });
}

/// The inverse of [`escape_tags`], applied on every read path.
pub fn unescape_tags(value: &mut Json) {
    rename_tags(value, |c| match c {
        '\u{ff04}' => '$',
        '\u{ff0e}' => '.',
        c => c,
    });
}

fn rename_tags(value: &mut Json, map: impl Fn(char) -> char) {
    let Some(Json::Object(tags)) = value.as_object_mut().and_then(|o| o.get_mut("tags")) else {
        return;
    };
    let renamed: JsonObject = tags
        .js_order()
        .into_iter()
        .map(|(n, v)| (n.chars().map(&map).collect::<String>(), v.clone()))
        .collect();
    *tags = renamed;
}
