//! Row keys (§4.2), child qualifiers (§6) and versions (§7.1).

use alloc::string::String;
use alloc::vec::Vec;

use super::names::push_clean;
use crate::digits::hex8;
use crate::segment::{KeySegment, Segments};

/// FNV-1 (not 1a) 32-bit hash.
pub fn fnv1_32(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in data {
        h = h.wrapping_mul(0x0100_0193);
        h ^= u32::from(b);
    }
    h
}

/// The row key of node `name` (relative to the root, root = `""`): hex FNV-1 of
/// `Clean("/" + name)` followed by that cleaned name.
pub fn row_key(name: &str) -> Vec<u8> {
    // The cleaned name is written once, after 8 placeholder bytes that become its hash.
    let mut key = String::with_capacity(9 + name.len());
    key.push_str("00000000");
    push_clean(&mut key, "/", name);
    let hash = hex8(fnv1_32(&key.as_bytes()[8..]));
    let mut key = key.into_bytes();
    key[..8].copy_from_slice(&hash);
    key
}

/// The row key for an already cleaned, rooted name (`/a/b`).
pub fn row_key_for_cleaned(cleaned: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(8 + cleaned.len());
    key.extend_from_slice(&hex8(fnv1_32(cleaned.as_bytes())));
    key.extend_from_slice(cleaned.as_bytes());
    key
}

/// The node name of a row key (`key[9..]`), or `None` when the key is shorter than 9 bytes.
pub fn decode_row_key(key: &[u8]) -> Option<&[u8]> {
    key.get(9..)
}

/// The segments of a node row key (as [`decode_row_key`] reads it): the hash, the root `/`,
/// then the name's elements and the `/` between them. `None` when the key is shorter than
/// 9 bytes.
pub fn row_key_segments(key: &[u8]) -> Option<Vec<KeySegment>> {
    let name = decode_row_key(key)?;
    let mut s = Segments::new();
    s.push(
        8,
        "hash",
        "FNV-1 32-bit hash of the cleaned rooted name, 8 hex digits: spreads names over the table",
    );
    s.push(1, "separator", "'/': the root; the name follows");
    for (i, element) in name.split(|&b| b == b'/').enumerate() {
        if i > 0 {
            s.push(1, "separator", "'/' between name elements");
        }
        s.push(element.len(), "name", "one element of the node's name");
    }
    Some(s.finish())
}

/// A child reference decoded from a `c:` qualifier.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChildRef {
    /// The child's 8-byte id (its parent's version when it was created).
    pub id: Vec<u8>,
    /// The child's last name element.
    pub name: String,
    /// Timestamp (µs) of the reference cell, i.e. when it was written (server time); 0 when
    /// decoded from a qualifier alone. Tells an in-flight reference from a crash leftover.
    pub written_us: i64,
}

/// Why a child qualifier did not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QualifierDecodeError {
    /// Qualifiers of 8 bytes or fewer carry no name and are ignored by readers.
    #[error("child qualifier of {len} bytes: at least 9 are needed (8-byte id + name)")]
    TooShort {
        /// Length found.
        len: usize,
    },
    /// The name part is not UTF-8.
    #[error("child qualifier name is not UTF-8 at byte {offset}")]
    NotUtf8 {
        /// Offset of the first bad byte in the qualifier.
        offset: usize,
    },
}

/// The qualifier of a child reference: `id ‖ name`, no separator.
pub fn child_qualifier(id: &[u8], name: &str) -> Vec<u8> {
    let mut q = Vec::with_capacity(id.len() + name.len());
    q.extend_from_slice(id);
    q.extend_from_slice(name.as_bytes());
    q
}

/// Splits a child qualifier into id (first 8 bytes) and name.
pub fn decode_child_qualifier(q: &[u8]) -> Result<ChildRef, QualifierDecodeError> {
    if q.len() <= 8 {
        return Err(QualifierDecodeError::TooShort { len: q.len() });
    }
    let name = core::str::from_utf8(&q[8..]).map_err(|e| QualifierDecodeError::NotUtf8 {
        offset: 8 + e.valid_up_to(),
    })?;
    Ok(ChildRef {
        id: q[..8].to_vec(),
        name: String::from(name),
        written_us: 0,
    })
}

/// A version string that Go's `ParseUint(v, 16, 32)` rejects.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad version string {value:?}: {reason}")]
pub struct VersionError {
    /// The offending text (lossy).
    pub value: String,
    /// What was wrong.
    pub reason: &'static str,
}

/// Go `ParseUint(v, 16, 32)`: one or more hex digits of either case, value ≤ `u32::MAX`.
pub fn parse_version(v: &[u8]) -> Result<u32, VersionError> {
    let err = |reason| VersionError {
        value: String::from_utf8_lossy(v).into_owned(),
        reason,
    };
    if v.is_empty() {
        return Err(err("empty"));
    }
    let mut n: u64 = 0;
    for &b in v {
        let d = (b as char)
            .to_digit(16)
            .ok_or_else(|| err("not a hex digit"))?;
        n = n * 16 + u64::from(d);
        if n > u64::from(u32::MAX) {
            return Err(err("out of range"));
        }
    }
    Ok(n as u32)
}

/// `%08x` of a version.
pub fn format_version(v: u32) -> String {
    hex8(v).iter().map(|&d| char::from(d)).collect()
}

/// The version an OCC mutation writes: `(parse(v) + 1) mod 2^32` as `%08x`.
pub fn next_version(v: &[u8]) -> Result<String, VersionError> {
    Ok(format_version(parse_version(v)?.wrapping_add(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_version(b"00FF").unwrap(), 255);
        assert!(parse_version(b"100000000").is_err());
        assert!(parse_version(b"+1").is_err());
        assert_eq!(parse_version(b"0000000000001").unwrap(), 1);
        assert!(decode_child_qualifier(b"12345678").is_err());
    }
}
