//! Name-based (version 5, nil namespace) UUIDs as the original computes them with
//! `pborman/uuid.NewSHA1(uuid.NIL, data)` (spec §2.5).
//!
//! SHA-1 is the RustCrypto `sha1` crate (the family of the `sha2` and `md-5` already used); the
//! version and variant bits and the text form are the `uuid` crate's. `uuid`'s own `v5` feature
//! is not used: it hashes with `sha1_smol`, a second SHA-1 implementation in the package, and
//! takes the name as one slice, where a triple's UUID is hashed from its three parts without
//! joining them ([`Uuid::v5_of`]). [`Uuid`] stays this crate's type (the canonical-only parser
//! row keys need, the allocation-free text bytes).

use alloc::string::String;
use core::fmt;

use sha1::{Digest, Sha1};

/// A 16-byte UUID; its text form is lowercase `8-4-4-4-12`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    /// The v5 UUID of `data` in the nil namespace: `sha1(16 zero bytes ‖ data)[0..16]` with the
    /// version and variant bits set.
    pub fn v5(data: &[u8]) -> Uuid {
        Uuid::v5_of(&[data])
    }

    /// [`Uuid::v5`] of the concatenation of `parts`, hashed part by part without joining them.
    pub(crate) fn v5_of(parts: &[&[u8]]) -> Uuid {
        let mut h = Sha1::new();
        h.update([0u8; 16]);
        for part in parts {
            h.update(part);
        }
        let digest = h.finalize();
        let mut b = [0u8; 16];
        b.copy_from_slice(&digest[..16]);
        Uuid(*uuid::Builder::from_sha1_bytes(b).as_uuid().as_bytes())
    }

    /// Whether the v5 inputs `a` and `b` (each the concatenation of its parts) are the same
    /// bytes: then their UUIDs are equal without hashing either. Different inputs say nothing
    /// by themselves (only the hashes can), so a caller hashes when this is `false`.
    pub(crate) fn same_input(a: &[&[u8]], b: &[&[u8]]) -> bool {
        let len = |parts: &[&[u8]]| parts.iter().map(|p| p.len()).sum::<usize>();
        len(a) == len(b) && a.iter().copied().flatten().eq(b.iter().copied().flatten())
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The canonical text (36 bytes, lowercase).
    pub fn to_text(&self) -> String {
        self.text_bytes().iter().map(|&b| b as char).collect()
    }

    /// The canonical text as ASCII bytes (no allocation; row keys are built from these).
    pub fn text_bytes(&self) -> [u8; 36] {
        let mut out = [0u8; uuid::fmt::Hyphenated::LENGTH];
        uuid::Uuid::from_bytes(self.0)
            .hyphenated()
            .encode_lower(&mut out);
        out
    }

    /// Parses the canonical lowercase text form only (the form row keys hold); `None` for
    /// anything else, including uppercase hex and the other forms `uuid` accepts.
    pub fn parse_canonical(text: &[u8]) -> Option<Uuid> {
        let canonical = text.len() == uuid::fmt::Hyphenated::LENGTH
            && text
                .iter()
                .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f' | b'-'));
        if !canonical {
            return None;
        }
        // Of 36 bytes, `uuid` reads only the hyphenated form: dashes at 8, 13, 18 and 23.
        uuid::Uuid::try_parse_ascii(text)
            .ok()
            .map(|u| Uuid(*u.as_bytes()))
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.text_bytes();
        f.write_str(core::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

#[cfg(test)]
mod tests {
    use super::Uuid;

    #[test]
    fn node_uuid_and_round_trip() {
        let u = Uuid::v5(b"/ujoe");
        assert_eq!(u.to_text(), "2821fefc-a86e-597b-b187-58805cad8813");
        assert_eq!(Uuid::parse_canonical(u.to_text().as_bytes()), Some(u));
        assert_eq!(
            Uuid::parse_canonical(b"2821FEFC-a86e-597b-b187-58805cad8813"),
            None
        );
        assert_eq!(
            Uuid::parse_canonical(b"2821fefc-a86e-597b-b187-58805cad881"),
            None
        );
    }
}
