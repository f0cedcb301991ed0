//! Arsenal listing ranges (`gt`, `gte`, `lt`, `lte`) and their row ranges in a collection
//! (`objmeta.md` 5.8).

use alloc::string::String;

use serde::{Deserialize, Serialize};

use super::json::{Json, JsonObject};
use super::keys::{collection_end, row_key};
use crate::model::{KeyBound, RowRange};

/// One Arsenal range: each bound optional; empty strings count as absent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeParams {
    /// Exclusive start.
    pub gt: Option<String>,
    /// Inclusive start.
    pub gte: Option<String>,
    /// Exclusive end.
    pub lt: Option<String>,
    /// Inclusive end.
    pub lte: Option<String>,
}

impl RangeParams {
    /// The range as a JSON object (`{gt?, gte?, lt?, lte?}`), as the vectors write it.
    pub fn to_json(&self) -> Json {
        let mut o = JsonObject::new();
        for (n, v) in [
            ("gt", &self.gt),
            ("gte", &self.gte),
            ("lt", &self.lt),
            ("lte", &self.lte),
        ] {
            if let Some(v) = v {
                o.set(n, Json::str(v.clone()));
            }
        }
        Json::Object(o)
    }

    /// Reads `{gt?, gte?, lt?, lte?}`; non-string members are ignored.
    pub fn from_json(v: &Json) -> RangeParams {
        let s = |n: &str| v.get(n).and_then(Json::as_str).map(String::from);
        RangeParams {
            gt: s("gt"),
            gte: s("gte"),
            lt: s("lt"),
            lte: s("lte"),
        }
    }

    /// The row range of these bounds inside `collection`.
    ///
    /// ```
    /// use rowkit_codec::model::KeyBound;
    /// use rowkit_codec::objmeta::range::RangeParams;
    /// let r = RangeParams { gt: Some("b".into()), gte: Some("a".into()), ..Default::default() };
    /// let rr = r.to_row_range("b");
    /// assert_eq!(rr.start, KeyBound::Open(b"b\x00b".to_vec()));
    /// assert_eq!(rr.end, KeyBound::Open(b"b\x01".to_vec()));
    /// ```
    pub fn to_row_range(&self, collection: &str) -> RowRange {
        let key = |k: &Option<String>| {
            k.as_deref()
                .filter(|s| !s.is_empty())
                .map(|s| row_key(collection, s))
        };
        let start = match (key(&self.gt), key(&self.gte)) {
            (Some(gt), Some(gte)) if gte > gt => KeyBound::Closed(gte),
            (Some(gt), _) => KeyBound::Open(gt),
            (None, Some(gte)) => KeyBound::Closed(gte),
            (None, None) => KeyBound::Closed(row_key(collection, "")),
        };
        let end = match (key(&self.lt), key(&self.lte)) {
            (Some(lt), Some(lte)) if lte < lt => KeyBound::Closed(lte),
            (Some(lt), _) => KeyBound::Open(lt),
            (None, Some(lte)) => KeyBound::Closed(lte),
            (None, None) => KeyBound::Open(collection_end(collection)),
        };
        RowRange { start, end }
    }
}
