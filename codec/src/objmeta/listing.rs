//! Arsenal's listing algorithms (`objmeta.md` 10): `Delimiter`, `DelimiterMaster` and
//! `DelimiterVersions`, each as `genMDParams` (the key range to scan), `filter` (one entry at a
//! time), `skipping` (where a long run of skipped keys may jump to) and `result`.
//!
//! Keys are strings compared as JavaScript does (UTF-16 code units). In v1 the algorithms see
//! keys without their 2-character prefix; [`Listing::filter`] takes the stored Arsenal key
//! and strips it.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Ordering;

use super::error::ObjmetaCodecError;
use super::json::{Json, JsonObject};
use super::keys::{
    MASTER_PREFIX, REPLAY_PREFIX, SEPARATOR, VERSION_PREFIX, VFormat, cmp_utf16, inc,
    index_of_utf16, len_utf16, slice_utf16,
};
use super::range::RangeParams;

/// `FILTER_ACCEPT`.
pub const FILTER_ACCEPT: i32 = 1;
/// `FILTER_SKIP`.
pub const FILTER_SKIP: i32 = 0;
/// `FILTER_END`.
pub const FILTER_END: i32 = -1;

/// Which algorithm (`params.listingType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListingType {
    /// Plain S3 listing (the default).
    #[default]
    Delimiter,
    /// S3 ListObjects on a versioned bucket: masters only, PHDs and delete markers resolved.
    DelimiterMaster,
    /// S3 ListObjectVersions.
    DelimiterVersions,
}

impl ListingType {
    /// Arsenal's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ListingType::Delimiter => "Delimiter",
            ListingType::DelimiterMaster => "DelimiterMaster",
            ListingType::DelimiterVersions => "DelimiterVersions",
        }
    }
}

/// Listing parameters (`objmeta.md` 10.2–10.5). Empty strings count as absent, as the
/// JavaScript truthiness tests do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListingParams {
    /// The algorithm.
    pub listing_type: ListingType,
    /// Delimiter.
    pub delimiter: Option<String>,
    /// Prefix.
    pub prefix: Option<String>,
    /// `maxKeys`; `None` or 0 mean 1000.
    pub max_keys: Option<i64>,
    /// S3 v1 marker.
    pub marker: Option<String>,
    /// S3 v2 flavour.
    pub v2: bool,
    /// v2 start-after.
    pub start_after: Option<String>,
    /// v2 continuation token.
    pub continuation_token: Option<String>,
    /// Versions: key marker.
    pub key_marker: Option<String>,
    /// Versions: raw version-id marker.
    pub version_id_marker: Option<String>,
}

impl ListingParams {
    /// Reads Arsenal's params object (`listingType`, `delimiter`, `prefix`, `maxKeys`, `marker`,
    /// `v2`, `startAfter`, `continuationToken`, `keyMarker`, `versionIdMarker`).
    pub fn from_json(v: &Json) -> ListingParams {
        let s = |n: &str| {
            v.get(n)
                .and_then(Json::as_str)
                .filter(|s| !s.is_empty())
                .map(String::from)
        };
        let listing_type = match v.get("listingType").and_then(Json::as_str) {
            Some("DelimiterMaster") => ListingType::DelimiterMaster,
            Some("DelimiterVersions") => ListingType::DelimiterVersions,
            _ => ListingType::Delimiter,
        };
        let max_keys = match v.get("maxKeys") {
            Some(Json::Number(n)) if n.is_finite() => Some(*n as i64),
            _ => None,
        };
        ListingParams {
            listing_type,
            delimiter: s("delimiter"),
            prefix: s("prefix"),
            max_keys,
            marker: s("marker"),
            v2: v.member_truthy("v2"),
            start_after: s("startAfter"),
            continuation_token: s("continuationToken"),
            key_marker: s("keyMarker"),
            version_id_marker: s("versionIdMarker"),
        }
    }
}

/// The ranges to scan: one, or a master/version pair (DelimiterVersions in v1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MdParams {
    /// One range.
    Single(RangeParams),
    /// Master range, version range.
    Pair(RangeParams, RangeParams),
}

impl MdParams {
    /// As the vectors write it: an object, or an array of two.
    pub fn to_json(&self) -> Json {
        match self {
            MdParams::Single(r) => r.to_json(),
            MdParams::Pair(m, v) => Json::Array(vec![m.to_json(), v.to_json()]),
        }
    }
}

/// Where a skip may jump to: one key, or a master/version pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// New `gte` for the single range.
    Single(String),
    /// New `gte`s for the master and version ranges.
    Pair(String, String),
}

/// `Version.isPHD(text)`.
pub fn text_is_phd(text: &str) -> bool {
    text.contains("isPHD") && Json::parse(text).is_ok_and(|v| v.member_truthy("isPHD"))
}

/// `Version.isDeleteMarker(text)`.
pub fn text_is_delete_marker(text: &str) -> bool {
    text.contains("isDeleteMarker")
        && Json::parse(text).is_ok_and(|v| v.member_truthy("isDeleteMarker"))
}

/// `trimMetadata`: values of 10 000 units or more lose their `location` member.
pub fn trim_metadata(text: &str) -> String {
    if len_utf16(text) >= 10_000
        && let Ok(Json::Object(mut o)) = Json::parse(text)
    {
        o.remove("location");
        return Json::Object(o).stringify();
    }
    text.to_string()
}

fn ge(a: &str, b: &str) -> bool {
    cmp_utf16(a, b) != Ordering::Less
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    NotSkipping,
    SkippingPrefix(String),
    /// DelimiterMaster v0: skipping the versions of master `m`. DelimiterVersions: skipping
    /// up to the version-id marker.
    SkippingVersions(String),
    WaitVersionAfterPhd(String),
}

/// One entry of a listing result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedEntry {
    /// Object key (without v1 prefix or version suffix).
    pub key: String,
    /// Version id (DelimiterVersions only; `"null"` for a non-versioned master).
    pub version_id: Option<String>,
    /// Value JSON text.
    pub value: String,
}

/// A listing in progress: Arsenal's extension object.
#[derive(Clone, Debug)]
pub struct Listing {
    params: ListingParams,
    vformat: VFormat,
    max_keys: i64,
    keys: i64,
    truncated: bool,
    state: State,
    contents: Vec<ListedEntry>,
    common_prefixes: Vec<String>,
    next_marker: Option<String>,
    next_version_id_marker: Option<String>,
    master_key: Option<String>,
    master_version_id: Option<String>,
}

impl Listing {
    /// A listing of `params` over a bucket in `vformat`.
    pub fn new(params: ListingParams, vformat: VFormat) -> Listing {
        let max_keys = match params.max_keys {
            None | Some(0) => 1000,
            Some(n) => n,
        };
        let marker = Listing::marker_of(&params);
        let (state, next_marker) = match params.listing_type {
            ListingType::Delimiter => (State::NotSkipping, marker),
            ListingType::DelimiterMaster => match (&marker, vformat) {
                (Some(m), VFormat::V0) => (State::SkippingVersions(m.clone()), marker.clone()),
                _ => (State::NotSkipping, marker),
            },
            ListingType::DelimiterVersions => {
                let state = match (&params.key_marker, &params.version_id_marker) {
                    (Some(_), Some(_)) => State::SkippingVersions(String::new()),
                    _ => State::NotSkipping,
                };
                (state, params.key_marker.clone())
            }
        };
        Listing {
            params,
            vformat,
            max_keys,
            keys: 0,
            truncated: false,
            state,
            contents: Vec::new(),
            common_prefixes: Vec::new(),
            next_marker,
            next_version_id_marker: None,
            master_key: None,
            master_version_id: None,
        }
    }

    fn marker_of(p: &ListingParams) -> Option<String> {
        if p.v2 {
            p.continuation_token.clone().or(p.start_after.clone())
        } else {
            p.marker.clone()
        }
    }

    /// The params.
    pub fn params(&self) -> &ListingParams {
        &self.params
    }

    /// The bucket's key format.
    pub fn vformat(&self) -> VFormat {
        self.vformat
    }

    /// `genMDParams`; fails only when `inc` would build an ill-formed string.
    pub fn gen_md_params(&self) -> Result<MdParams, ObjmetaCodecError> {
        let p = &self.params;
        let versions = p.listing_type == ListingType::DelimiterVersions;
        let marker = if versions {
            p.key_marker.clone()
        } else {
            Listing::marker_of(p)
        };
        let mut r = RangeParams::default();
        if let Some(prefix) = &p.prefix {
            r.gte = Some(prefix.clone());
            r.lt = Some(inc(prefix)?);
        }
        if let (Some(m), Some(_)) = (&marker, &p.delimiter)
            && let Some(cp) = self.common_prefix(m)
        {
            let a = inc(&cp)?;
            if r.gte
                .as_deref()
                .is_none_or(|g| cmp_utf16(&a, g) == Ordering::Greater)
            {
                r.gte = Some(a);
            }
        }
        if let Some(m) = &marker
            && r.gte.as_deref().is_none_or(|g| ge(m, g))
        {
            r.gte = None;
            if !versions {
                r.gt = Some(m.clone());
            } else if p.version_id_marker.is_some() {
                r.gte = Some(alloc::format!("{m}{SEPARATOR}"));
            } else {
                r.gt = Some(alloc::format!("{m}\u{1}"));
            }
        }
        Ok(match (self.vformat, versions) {
            (VFormat::V0, _) => MdParams::Single(r),
            (VFormat::V1, false) => MdParams::Single(master_range_v1(&r)),
            (VFormat::V1, true) => {
                MdParams::Pair(master_range_v1(&r), v1_range(&r, VERSION_PREFIX, "\x7fW"))
            }
        })
    }

    /// `getCommonPrefix(key)`.
    fn common_prefix(&self, key: &str) -> Option<String> {
        let d = self.params.delimiter.as_deref()?;
        let from = self.params.prefix.as_deref().map_or(0, len_utf16);
        let i = index_of_utf16(key, d, from)?;
        Some(slice_utf16(key, i + len_utf16(d)))
    }

    /// `reachedMaxKeys()`.
    fn reached_max_keys(&mut self) -> bool {
        if self.keys >= self.max_keys {
            self.truncated = self.max_keys > 0;
            true
        } else {
            false
        }
    }

    /// `filter(entry)`: `key` is the stored Arsenal key (with its v1 prefix), `value` the
    /// JSON text. Returns [`FILTER_ACCEPT`], [`FILTER_SKIP`] or [`FILTER_END`].
    pub fn filter(&mut self, key: &str, value: &str) -> i32 {
        let key = match self.vformat {
            VFormat::V0 => key,
            VFormat::V1 => key
                .strip_prefix(MASTER_PREFIX)
                .or_else(|| key.strip_prefix(VERSION_PREFIX))
                .unwrap_or(key),
        };
        match self.params.listing_type {
            ListingType::Delimiter => self.delimiter_filter(key, value),
            ListingType::DelimiterMaster => match self.vformat {
                VFormat::V0 => self.master_v0_filter(key, value),
                VFormat::V1 => self.master_v1_filter(key, value),
            },
            ListingType::DelimiterVersions => self.versions_filter(key, value),
        }
    }

    fn add_prefix_or_content(&mut self, key: &str, value: &str) -> Option<String> {
        self.keys += 1;
        if let Some(cp) = self.common_prefix(key) {
            self.common_prefixes.push(cp.clone());
            self.next_marker = Some(cp.clone());
            self.state = State::SkippingPrefix(cp.clone());
            Some(cp)
        } else {
            self.contents.push(ListedEntry {
                key: key.to_string(),
                version_id: None,
                value: trim_metadata(value),
            });
            self.next_marker = Some(key.to_string());
            None
        }
    }

    fn delimiter_not_skipping(&mut self, key: &str, value: &str) -> i32 {
        if self.reached_max_keys() {
            return FILTER_END;
        }
        if self.add_prefix_or_content(key, value).is_none() {
            self.state = State::NotSkipping;
        }
        FILTER_ACCEPT
    }

    fn delimiter_filter(&mut self, key: &str, value: &str) -> i32 {
        if let State::SkippingPrefix(p) = &self.state {
            if key.starts_with(p.as_str()) {
                return FILTER_SKIP;
            }
            self.state = State::NotSkipping;
        }
        self.delimiter_not_skipping(key, value)
    }

    fn master_v1_filter(&mut self, key: &str, value: &str) -> i32 {
        if let State::SkippingPrefix(p) = &self.state {
            if key.starts_with(p.as_str()) {
                return FILTER_SKIP;
            }
            self.state = State::NotSkipping;
        }
        if text_is_delete_marker(value) {
            return FILTER_ACCEPT;
        }
        self.delimiter_not_skipping(key, value)
    }

    fn on_new_master(&mut self, key: &str, value: &str) -> i32 {
        if text_is_delete_marker(value) {
            self.state = State::SkippingVersions(key.to_string());
            return FILTER_ACCEPT;
        }
        if text_is_phd(value) {
            self.state = State::WaitVersionAfterPhd(key.to_string());
            return FILTER_ACCEPT;
        }
        if key.starts_with(REPLAY_PREFIX) {
            self.state = State::SkippingPrefix(REPLAY_PREFIX.to_string());
            return FILTER_SKIP;
        }
        if self.reached_max_keys() {
            return FILTER_END;
        }
        if self.add_prefix_or_content(key, value).is_none() {
            self.state = State::SkippingVersions(key.to_string());
        }
        FILTER_ACCEPT
    }

    fn master_v0_filter(&mut self, key: &str, value: &str) -> i32 {
        match &self.state {
            State::SkippingPrefix(p) => {
                if key.starts_with(p.as_str()) {
                    return FILTER_SKIP;
                }
                self.state = State::NotSkipping;
                self.on_new_master(key, value)
            }
            State::SkippingVersions(_) => {
                if key.contains(SEPARATOR) {
                    FILTER_SKIP
                } else {
                    self.on_new_master(key, value)
                }
            }
            State::WaitVersionAfterPhd(m) => {
                let m = m.clone();
                match key.strip_prefix(m.as_str()) {
                    Some(rest) if rest.starts_with(SEPARATOR) => self.on_new_master(&m, value),
                    _ => self.on_new_master(key, value),
                }
            }
            State::NotSkipping => self.on_new_master(key, value),
        }
    }

    fn versions_filter(&mut self, key: &str, value: &str) -> i32 {
        let (k, vid) = match key.split_once(SEPARATOR) {
            Some((k, v)) => (k, Some(v)),
            None => (key, None),
        };
        match &self.state {
            State::SkippingPrefix(p) => {
                if k.starts_with(p.as_str()) {
                    return FILTER_SKIP;
                }
                self.state = State::NotSkipping;
            }
            State::SkippingVersions(_) => {
                let km = self.params.key_marker.as_deref().unwrap_or("");
                let vm = self.params.version_id_marker.as_deref().unwrap_or("");
                if k == km
                    && let Some(vid) = vid
                {
                    match cmp_utf16(vid, vm) {
                        Ordering::Less => return FILTER_SKIP,
                        Ordering::Equal => return FILTER_ACCEPT,
                        Ordering::Greater => {}
                    }
                }
                self.state = State::NotSkipping;
            }
            _ => {}
        }
        if self.vformat == VFormat::V0 && key.starts_with(REPLAY_PREFIX) {
            self.state = State::SkippingPrefix(REPLAY_PREFIX.to_string());
            return FILTER_SKIP;
        }
        if text_is_phd(value) {
            return FILTER_ACCEPT;
        }
        if self.reached_max_keys() {
            return FILTER_END;
        }
        let version_id = match vid {
            None => {
                let mv = Json::parse(value)
                    .ok()
                    .and_then(|v| v.get("versionId").filter(|x| x.truthy()).cloned())
                    .map(|x| match x {
                        Json::String(s) => s,
                        other => other.stringify(),
                    })
                    .unwrap_or_else(|| "null".to_string());
                self.master_key = Some(k.to_string());
                self.master_version_id = Some(mv.clone());
                mv
            }
            Some(vid) => {
                if self.master_key.as_deref() == Some(k)
                    && self.master_version_id.as_deref() == Some(vid)
                {
                    return FILTER_ACCEPT;
                }
                vid.to_string()
            }
        };
        self.keys += 1;
        if let Some(cp) = self.common_prefix(k) {
            self.common_prefixes.push(cp.clone());
            self.next_marker = Some(cp.clone());
            self.next_version_id_marker = None;
            self.state = State::SkippingPrefix(cp);
        } else {
            self.contents.push(ListedEntry {
                key: k.to_string(),
                version_id: Some(version_id.clone()),
                value: trim_metadata(value),
            });
            self.next_marker = Some(k.to_string());
            self.next_version_id_marker = Some(version_id);
        }
        FILTER_ACCEPT
    }

    /// `skipping()`: where a skip streak may restart the scan, `None` for "no skip".
    pub fn skipping(&self) -> Option<Skip> {
        let s = match (&self.state, self.params.listing_type) {
            (State::SkippingPrefix(p), _) => inc(p).ok()?,
            (State::SkippingVersions(m), ListingType::DelimiterMaster) => {
                alloc::format!("{m}\u{1}")
            }
            (State::SkippingVersions(_), ListingType::DelimiterVersions) => alloc::format!(
                "{}{SEPARATOR}{}{SEPARATOR}",
                self.params.key_marker.as_deref().unwrap_or(""),
                self.params.version_id_marker.as_deref().unwrap_or("")
            ),
            _ => return None,
        };
        Some(match (self.vformat, self.params.listing_type) {
            (VFormat::V0, _) => Skip::Single(s),
            (VFormat::V1, ListingType::DelimiterVersions) => Skip::Pair(
                alloc::format!("{MASTER_PREFIX}{s}"),
                alloc::format!("{VERSION_PREFIX}{s}"),
            ),
            (VFormat::V1, _) => Skip::Single(alloc::format!("{MASTER_PREFIX}{s}")),
        })
    }

    /// Entries listed so far (contents or versions).
    pub fn entries(&self) -> &[ListedEntry] {
        &self.contents
    }

    /// `result()`: Arsenal's result object; values are JSON text.
    pub fn result(&self) -> Json {
        let mut o = JsonObject::new();
        o.set(
            "CommonPrefixes",
            Json::Array(
                self.common_prefixes
                    .iter()
                    .cloned()
                    .map(Json::String)
                    .collect(),
            ),
        );
        let versions = self.params.listing_type == ListingType::DelimiterVersions;
        let entries = self
            .contents
            .iter()
            .map(|e| {
                let mut m = JsonObject::new();
                m.set("key", Json::str(e.key.clone()));
                if let Some(v) = &e.version_id {
                    m.set("versionId", Json::str(v.clone()));
                }
                m.set("value", Json::str(e.value.clone()));
                Json::Object(m)
            })
            .collect();
        o.set(
            if versions { "Versions" } else { "Contents" },
            Json::Array(entries),
        );
        o.set("IsTruncated", Json::Bool(self.truncated));
        if let Some(d) = &self.params.delimiter {
            o.set("Delimiter", Json::str(d.clone()));
        }
        if versions {
            if self.truncated {
                if let Some(m) = &self.next_marker {
                    o.set("NextKeyMarker", Json::str(m.clone()));
                }
                if let Some(v) = &self.next_version_id_marker {
                    o.set("NextVersionIdMarker", Json::str(v.clone()));
                }
            }
        } else if self.params.v2 {
            if self.truncated
                && let Some(m) = &self.next_marker
            {
                o.set("NextContinuationToken", Json::str(m.clone()));
            }
        } else if self.truncated
            && self.params.delimiter.is_some()
            && let Some(m) = &self.next_marker
        {
            o.set("NextMarker", Json::str(m.clone()));
        }
        Json::Object(o)
    }
}

/// The v0 → v1 conversion of a master-key listing range (`objmeta.md` 10.3, vectors
/// `listing_params_v0_to_v1`): `gt` else `gte` prefixed with `\x7fM` (default `gte = \x7fM`),
/// `lt` else `lte` prefixed (default `lt = \x7fN`).
pub fn master_range_v1(v0: &RangeParams) -> RangeParams {
    v1_range(v0, MASTER_PREFIX, "\x7fN")
}

/// A v0 range in v1 form: `gt` / `gte` / `lt` / `lte` prefixed, defaults `gte = prefix`,
/// `lt = end`.
fn v1_range(r: &RangeParams, prefix: &str, end: &str) -> RangeParams {
    let p = |s: &Option<String>| s.as_ref().map(|s| alloc::format!("{prefix}{s}"));
    let mut out = RangeParams::default();
    if r.gt.is_some() {
        out.gt = p(&r.gt);
    } else if r.gte.is_some() {
        out.gte = p(&r.gte);
    } else {
        out.gte = Some(prefix.to_string());
    }
    if r.lt.is_some() {
        out.lt = p(&r.lt);
    } else if r.lte.is_some() {
        out.lte = p(&r.lte);
    } else {
        out.lt = Some(end.to_string());
    }
    out
}
