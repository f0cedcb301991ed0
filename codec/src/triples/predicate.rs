//! Predicates: immutable `"id"@[]` and temporal `"id"@[RFC3339Nano]` (spec §2.2).

use alloc::vec::Vec;

use super::anchor::Anchor;
use super::error::{ParseError, Part, Reason};
use super::gotext::{quote, trim_space, unquote};
use super::uuid::Uuid;

/// A predicate: an id and, for a temporal predicate, its anchor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Predicate {
    id: Vec<u8>,
    anchor: Option<Anchor>,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl Predicate {
    /// An immutable predicate.
    pub fn immutable(id: &[u8]) -> Predicate {
        Predicate {
            id: id.to_vec(),
            anchor: None,
        }
    }

    /// A temporal predicate.
    pub fn temporal(id: &[u8], anchor: Anchor) -> Predicate {
        Predicate {
            id: id.to_vec(),
            anchor: Some(anchor),
        }
    }

    /// Parses the text form (original `predicate.Parse`, with errors instead of panics).
    pub fn parse(text: &[u8]) -> Result<Predicate, ParseError> {
        let raw = trim_space(text);
        let err = |reason| ParseError::new(Part::Predicate, reason, raw);
        match raw.first() {
            None => return Err(err(Reason::Empty)),
            Some(b'"') => {}
            Some(_) => return Err(err(Reason::BadStart)),
        }
        let i = find(raw, b"\"@[").ok_or_else(|| err(Reason::MissingAnchorMarker))?;
        if raw.len() < i + 4 {
            return Err(err(Reason::Truncated));
        }
        let id = unquote(&raw[..i + 1]).map_err(|e| err(Reason::Unquote(e)))?;
        // The last byte is dropped whatever it is (reproduce).
        let mut ta = &raw[i + 3..raw.len() - 1];
        if ta.is_empty() {
            return Ok(Predicate { id, anchor: None });
        }
        if let Some(rest) = ta.strip_prefix(b"\"") {
            ta = rest;
        }
        if ta.is_empty() {
            return Err(err(Reason::EmptyAnchor));
        }
        if let Some(rest) = ta.strip_suffix(b"\"") {
            ta = rest;
        }
        let anchor = Anchor::parse(ta).map_err(|e| err(Reason::Anchor(e)))?;
        Ok(Predicate {
            id,
            anchor: Some(anchor),
        })
    }

    /// The id.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// The anchor of a temporal predicate.
    pub fn anchor(&self) -> Option<&Anchor> {
        self.anchor.as_ref()
    }

    /// Whether the predicate has no anchor.
    pub fn is_immutable(&self) -> bool {
        self.anchor.is_none()
    }

    /// The text form: Go `%q` of the id, then `@[]` or `@[RFC3339Nano]`.
    pub fn to_text(&self) -> Vec<u8> {
        let mut out = quote(&self.id).into_bytes();
        out.extend_from_slice(b"@[");
        if let Some(a) = &self.anchor {
            out.extend_from_slice(a.to_text().as_bytes());
        }
        out.push(b']');
        out
    }

    /// The full UUID: id ‖ `immutable`, or id ‖ the 16-byte varint buffer of `UnixNano`.
    pub fn uuid(&self) -> Uuid {
        self.with_uuid_input(Uuid::v5_of)
    }

    /// Calls `f` with the parts of the bytes the full UUID hashes.
    pub(crate) fn with_uuid_input<R>(&self, f: impl FnOnce(&[&[u8]]) -> R) -> R {
        match &self.anchor {
            None => f(&[&self.id, b"immutable"]),
            Some(a) => f(&[&self.id, &varint16(a.unix_nano_wrapping())]),
        }
    }

    /// The partial UUID: v5 of the id alone (used in row keys).
    pub fn partial_uuid(&self) -> Uuid {
        Uuid::v5(&self.id)
    }
}

/// Go `binary.PutVarint(n)` (zig-zag, LEB128) into a zero-filled buffer of `N` bytes; `None` if
/// it does not fit.
pub fn put_varint<const N: usize>(n: i64) -> Option<[u8; N]> {
    let mut u = (n as u64) << 1;
    if n < 0 {
        u = !u;
    }
    let mut buf = [0u8; N];
    let mut i = 0;
    while u >= 0x80 {
        *buf.get_mut(i)? = (u as u8) | 0x80;
        u >>= 7;
        i += 1;
    }
    *buf.get_mut(i)? = u as u8;
    Some(buf)
}

/// The 16-byte anchor buffer of the full predicate UUID (a 64-bit varint always fits).
pub fn varint16(n: i64) -> [u8; 16] {
    put_varint::<16>(n).unwrap_or([0; 16])
}
