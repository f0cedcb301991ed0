//! Arsenal keys and rowkit row keys (`objmeta.md` 4, 5.2): master and version keys in the v0
//! and v1 formats, `inc`, collections, the bucket row prefix, and decoding a row key back into
//! its parts. The only module that knows these layouts.
//!
//! ```
//! use rowkit_codec::objmeta::keys::{VFormat, master_key, row_key, version_key};
//!
//! assert_eq!(master_key(VFormat::V1, "k"), "\x7fMk");
//! assert_eq!(version_key(VFormat::V0, "k", "x"), "k\0x");
//! assert_eq!(row_key("b", &master_key(VFormat::V1, "k")), b"b\x00\x7fMk");
//! ```

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::error::ObjmetaCodecError;
use crate::segment::{KeySegment, Segments};

/// `VersionId.Separator`: between an object key and a version id.
pub const SEPARATOR: char = '\0';
/// [`SEPARATOR`] as a one-byte string, for concatenation.
const SEPARATOR_STR: &str = match core::str::from_utf8(&[SEPARATOR as u8]) {
    Ok(s) => s,
    Err(_) => panic!("the separator is ASCII"),
};
/// `DbPrefixes.Master`.
pub const MASTER_PREFIX: &str = "\x7fM";
/// `DbPrefixes.Version`.
pub const VERSION_PREFIX: &str = "\x7fV";
/// `DbPrefixes.Replay` (never written).
pub const REPLAY_PREFIX: &str = "\x7fR";
/// The collection of bucket attributes.
pub const METASTORE: &str = "__metastore";
/// The collection of the uuid and count documents.
pub const INFOSTORE: &str = "__infostore";
/// The collection standing for the bucket `users..bucket`.
pub const USERS_BUCKET_COLLECTION: &str = "__usersbucket";
/// The bucket stored in [`USERS_BUCKET_COLLECTION`].
pub const USERS_BUCKET: &str = "users..bucket";
/// The Arsenal key of the uuid document in [`INFOSTORE`].
pub const UUID_KEY: &str = "uuid";
/// The Arsenal key of the count document in [`INFOSTORE`].
pub const COUNT_ITEMS_KEY: &str = "countitems";

/// A bucket's key format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum VFormat {
    /// Masters at `k`, versions at `k\0vid`, interleaved.
    #[default]
    V0,
    /// Masters at `\x7fMk`, versions at `\x7fVk\0vid`, in two ranges.
    V1,
}

impl VFormat {
    /// `"v0"` / `"v1"`.
    pub fn as_str(self) -> &'static str {
        match self {
            VFormat::V0 => "v0",
            VFormat::V1 => "v1",
        }
    }

    /// Arsenal's reading of a stored vFormat: `v1` is v1, anything else uses the v0 layout.
    pub fn from_stored(s: &str) -> VFormat {
        if s == "v1" { VFormat::V1 } else { VFormat::V0 }
    }

    /// Strict parsing for user input (`--format`).
    pub fn parse(s: &str) -> Result<VFormat, ObjmetaCodecError> {
        match s {
            "v0" => Ok(VFormat::V0),
            "v1" => Ok(VFormat::V1),
            other => Err(ObjmetaCodecError::UnknownVFormat(other.to_string())),
        }
    }

    /// The vFormat `createBucket` writes for `bucket` given the configured default
    /// (`objmeta.md` 4.3): v0 for `users..bucket`, `PENSIEVE` and `mpuShadowBucket*`.
    pub fn for_new_bucket(bucket: &str, default: VFormat) -> VFormat {
        if bucket == USERS_BUCKET || bucket == "PENSIEVE" || bucket.starts_with("mpuShadowBucket") {
            VFormat::V0
        } else {
            default
        }
    }
}

/// `M(k)`.
pub fn master_key(vf: VFormat, key: &str) -> String {
    match vf {
        VFormat::V0 => key.to_string(),
        VFormat::V1 => concat(&[MASTER_PREFIX, key]),
    }
}

/// `V(k, x)`.
pub fn version_key(vf: VFormat, key: &str, version_id: &str) -> String {
    match vf {
        VFormat::V0 => concat(&[key, SEPARATOR_STR, version_id]),
        VFormat::V1 => concat(&[VERSION_PREFIX, key, SEPARATOR_STR, version_id]),
    }
}

/// The parts in one exactly sized allocation (keys are built on every request).
fn concat(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        out.push_str(p);
    }
    out
}

/// The collection holding a bucket's objects.
pub fn collection_for_bucket(bucket: &str) -> &str {
    if bucket == USERS_BUCKET {
        USERS_BUCKET_COLLECTION
    } else {
        bucket
    }
}

/// Whether a bucket is "special" (`objmeta.md` 11): not counted by countItems.
pub fn is_special_bucket(bucket: &str) -> bool {
    bucket == USERS_BUCKET
        || bucket == "PENSIEVE"
        || bucket.starts_with("mpuShadowBucket")
        || bucket.starts_with("__")
}

/// `UTF-8(collection) ‖ 00 ‖ UTF-8(arsenal_key)`.
pub fn row_key(collection: &str, arsenal_key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(collection.len() + 1 + arsenal_key.len());
    k.extend_from_slice(collection.as_bytes());
    k.push(0);
    k.extend_from_slice(arsenal_key.as_bytes());
    k
}

/// `C ‖ 00`: the start of a collection's rows (and the prefix every row key of it has).
pub fn collection_start(collection: &str) -> Vec<u8> {
    row_key(collection, "")
}

/// `C ‖ 01`: the exclusive end of a collection's rows.
pub fn collection_end(collection: &str) -> Vec<u8> {
    let mut k = collection.as_bytes().to_vec();
    k.push(1);
    k
}

/// `inc(s)` (`objmeta.md` 4.2): the last UTF-16 unit plus one (0xFFFF wraps to 0); an
/// ill-formed result is an error.
pub fn inc(s: &str) -> Result<String, ObjmetaCodecError> {
    let mut units: Vec<u16> = s.encode_utf16().collect();
    let Some(last) = units.last_mut() else {
        return Ok(String::new());
    };
    *last = last.wrapping_add(1);
    String::from_utf16(&units).map_err(|_| ObjmetaCodecError::IllFormedInc {
        input: s.to_string(),
    })
}

/// JavaScript string comparison: UTF-16 code units.
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// `hay.indexOf(needle, from)` in UTF-16 units.
pub fn index_of_utf16(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let h: Vec<u16> = hay.encode_utf16().collect();
    let n: Vec<u16> = needle.encode_utf16().collect();
    let from = from.min(h.len());
    if n.is_empty() {
        return Some(from);
    }
    (from..=h.len().saturating_sub(n.len())).find(|&i| h.get(i..i + n.len()) == Some(n.as_slice()))
}

/// `s.slice(0, end)` in UTF-16 units (a split surrogate pair becomes U+FFFD).
pub fn slice_utf16(s: &str, end: usize) -> String {
    let units: Vec<u16> = s.encode_utf16().take(end).collect();
    String::from_utf16_lossy(&units)
}

/// Length in UTF-16 units.
pub fn len_utf16(s: &str) -> usize {
    s.encode_utf16().count()
}

/// What a row key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyKind {
    /// A master key (v0 plain, v1 `\x7fM`).
    Master,
    /// A version key.
    Version,
    /// A v1 replay key.
    Replay,
    /// A `__metastore` row.
    Metastore,
    /// An `__infostore` row.
    Infostore,
}

/// A row key taken apart (`objmeta.md` 17, "Decoding").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedRowKey {
    /// The bytes before the first `00`.
    pub collection: String,
    /// The bucket, `None` for `__metastore` / `__infostore`.
    pub bucket: Option<String>,
    /// What the row holds.
    pub kind: KeyKind,
    /// The key format, for object rows.
    pub format: Option<VFormat>,
    /// The object key (for internal collections: the Arsenal key).
    pub object_key: String,
    /// The raw version id of a version key.
    pub version_id: Option<String>,
    /// The Arsenal key (after the `00`).
    pub arsenal_key: String,
}

/// Whether a collection name is one rowkit writes: an internal collection, `PENSIEVE`,
/// `mpuShadowBucket…` or an S3-style bucket name (`[a-z0-9.-]`, 1 to 63 bytes, alphanumeric at both ends;
/// shorter than S3 allows, so that the one-letter buckets of the spec examples decode).
pub fn is_known_collection(c: &str) -> bool {
    if [METASTORE, INFOSTORE, USERS_BUCKET_COLLECTION, "PENSIEVE"].contains(&c)
        || c.starts_with("mpuShadowBucket")
    {
        return true;
    }
    let b = c.as_bytes();
    let edge = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    (1..=63).contains(&b.len())
        && b.first().is_some_and(|&x| edge(x))
        && b.last().is_some_and(|&x| edge(x))
        && b.iter().all(|&x| edge(x) || x == b'.' || x == b'-')
}

/// Decodes a row key; errors name why it is not an objmeta row key.
pub fn decode_row_key(key: &[u8]) -> Result<DecodedRowKey, ObjmetaCodecError> {
    let sep = key
        .iter()
        .position(|&b| b == 0)
        .ok_or(ObjmetaCodecError::NoCollectionSeparator)?;
    let utf8 = |bytes: &[u8], base: usize| {
        core::str::from_utf8(bytes)
            .map(ToString::to_string)
            .map_err(|e| ObjmetaCodecError::NotUtf8 {
                offset: base + e.valid_up_to(),
            })
    };
    let collection = utf8(&key[..sep], 0)?;
    let arsenal_key = utf8(&key[sep + 1..], sep + 1)?;
    if !is_known_collection(&collection) {
        return Err(ObjmetaCodecError::NotACollection { collection });
    }
    let internal = |kind| DecodedRowKey {
        collection: collection.clone(),
        bucket: None,
        kind,
        format: None,
        object_key: arsenal_key.clone(),
        version_id: None,
        arsenal_key: arsenal_key.clone(),
    };
    if collection == METASTORE {
        return Ok(internal(KeyKind::Metastore));
    }
    if collection == INFOSTORE {
        return Ok(internal(KeyKind::Infostore));
    }
    let bucket = if collection == USERS_BUCKET_COLLECTION {
        USERS_BUCKET.to_string()
    } else {
        collection.clone()
    };
    let ObjectKeyParts {
        format,
        kind,
        object_key,
        version_id,
    } = decode_object_key(&arsenal_key);
    Ok(DecodedRowKey {
        collection,
        bucket: Some(bucket),
        kind,
        format: Some(format),
        object_key: object_key.to_string(),
        version_id: version_id.map(ToString::to_string),
        arsenal_key,
    })
}

/// An object collection's Arsenal key taken apart (see [`decode_object_key`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectKeyParts<'k> {
    /// The layout the key's bytes say: v1 when it starts with a `DbPrefixes` prefix.
    pub format: VFormat,
    /// Master, version or (v1) replay.
    pub kind: KeyKind,
    /// The object key: after the v1 prefix, up to the first [`SEPARATOR`] of a version.
    pub object_key: &'k str,
    /// The version id of a version key: after the first [`SEPARATOR`].
    pub version_id: Option<&'k str>,
}

/// Reads an Arsenal key of an object collection as the layouts define it (`objmeta.md` 4.1):
/// a `\x7fM` / `\x7fV` / `\x7fR` prefix makes it v1, otherwise it is v0, where a key is a
/// version iff it contains [`SEPARATOR`]; a version splits at its first separator. The one
/// decoder of key layouts ([`decode_row_key`] and the migration's key mapping use it).
pub fn decode_object_key(arsenal_key: &str) -> ObjectKeyParts<'_> {
    let (format, kind, rest) = if let Some(r) = arsenal_key.strip_prefix(MASTER_PREFIX) {
        (VFormat::V1, KeyKind::Master, r)
    } else if let Some(r) = arsenal_key.strip_prefix(VERSION_PREFIX) {
        (VFormat::V1, KeyKind::Version, r)
    } else if let Some(r) = arsenal_key.strip_prefix(REPLAY_PREFIX) {
        (VFormat::V1, KeyKind::Replay, r)
    } else if arsenal_key.contains(SEPARATOR) {
        (VFormat::V0, KeyKind::Version, arsenal_key)
    } else {
        (VFormat::V0, KeyKind::Master, arsenal_key)
    };
    let (object_key, version_id) = match (kind, rest.split_once(SEPARATOR)) {
        (KeyKind::Version, Some((k, v))) => (k, Some(v)),
        _ => (rest, None),
    };
    ObjectKeyParts {
        format,
        kind,
        object_key,
        version_id,
    }
}

/// The segments of an object metadata row key (as [`decode_row_key`] reads it): collection,
/// `00`, then the Arsenal key: the v1 kind prefix, the object key, and for a version `00` and
/// the version id.
pub fn row_key_segments(key: &[u8]) -> Result<Vec<KeySegment>, ObjmetaCodecError> {
    let d = decode_row_key(key)?;
    let mut s = Segments::new();
    s.push(
        d.collection.len(),
        "collection",
        "collection: the bucket's name (or an internal collection)",
    );
    s.push(
        1,
        "separator",
        "00: ends the collection; the Arsenal key follows",
    );
    if d.format.is_none() {
        s.push(
            d.arsenal_key.len(),
            "internal key",
            "a key of the internal collection (bucket attributes, counters)",
        );
        return Ok(s.finish());
    }
    if d.format == Some(VFormat::V1) {
        s.push(
            MASTER_PREFIX.len(),
            "kind prefix",
            "v1 key format: \\x7fM master, \\x7fV version, \\x7fR replay",
        );
    }
    s.push(d.object_key.len(), "object key", "the object's key");
    if let Some(version_id) = &d.version_id {
        s.push(1, "separator", "00: the version id follows");
        s.push(
            version_id.len(),
            "version id",
            "version id: smaller for newer versions, so a key's versions list newest first",
        );
    }
    Ok(s.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inc_wraps_and_rejects_ill_formed() {
        assert_eq!(inc("a\u{ffff}").unwrap(), "a\0");
        assert!(inc("a\u{d7ff}").is_err());
        assert_eq!(inc("").unwrap(), "");
    }

    #[test]
    fn decode_examples() {
        let d = decode_row_key(b"b\x00k").unwrap();
        assert_eq!(
            (d.kind, d.format, d.object_key.as_str()),
            (KeyKind::Master, Some(VFormat::V0), "k")
        );
        let d = decode_row_key(b"b\x00\x7fVk\x00v").unwrap();
        assert_eq!(d.version_id.as_deref(), Some("v"));
        assert!(decode_row_key(b"B\x00k").is_err());
        assert!(decode_row_key(b"bkt").is_err());
        assert!(decode_row_key(b"bkt\x00\xff").is_err());
    }
}
