//! Name-based (version 5, nil namespace) UUIDs as the original computes them with
//! `pborman/uuid.NewSHA1(uuid.NIL, data)` (spec §2.5).

use alloc::string::String;
use core::fmt;

use super::sha1::Sha1;

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
        h.update(&[0u8; 16]);
        for part in parts {
            h.update(part);
        }
        let digest = h.finish();
        let mut b = [0u8; 16];
        b.copy_from_slice(&digest[..16]);
        b[6] = (b[6] & 0x0f) | 0x50;
        b[8] = (b[8] & 0x3f) | 0x80;
        Uuid(b)
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
        const HEX: &[u8; 16] = b"0123456789abcdef";
        /// Where the text of each byte starts (the dashes sit at 8, 13, 18 and 23).
        const AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
        let mut out = [b'-'; 36];
        for (b, at) in self.0.iter().zip(AT) {
            out[at] = HEX[usize::from(b >> 4)];
            out[at + 1] = HEX[usize::from(b & 0x0f)];
        }
        out
    }

    /// Parses the canonical lowercase text form only (the form row keys hold); `None` for
    /// anything else, including uppercase hex.
    pub fn parse_canonical(text: &[u8]) -> Option<Uuid> {
        if text.len() != 36 {
            return None;
        }
        let mut out = [0u8; 16];
        let mut nibbles = 0usize;
        for (i, &c) in text.iter().enumerate() {
            if matches!(i, 8 | 13 | 18 | 23) {
                if c != b'-' {
                    return None;
                }
                continue;
            }
            let v = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                _ => return None,
            };
            let byte = out.get_mut(nibbles / 2)?;
            *byte = (*byte << 4) | v;
            nibbles += 1;
        }
        Some(Uuid(out))
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
