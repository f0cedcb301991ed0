//! The escaped text form of keys used by the CLI and in JSON output (`DESIGN.md`, "Escaped key
//! text"): bytes `0x20..=0x7e` other than `\` verbatim, `\` as `\\`, any other byte as `\xHH`
//! (lowercase). Input accepts the same form, or `hex:` followed by hex digits of either case.
//!
//! Hand-written on purpose: this exact form (which bytes stay verbatim, lowercase `\xHH`, the
//! `hex:` prefix) is rowkit's own interface, shared with `cbt`-style key text; Rust's
//! `escape_ascii` escapes differently (`\t`, `\'`, `\"`), so a crate would change every key
//! users type and read.
//!
//! ```
//! use rowkit_codec::escape::{escape, parse};
//! assert_eq!(escape(b"a\\b\x00\xff"), "a\\\\b\\x00\\xff");
//! assert_eq!(parse("a\\\\b\\x00\\xff").unwrap(), b"a\\b\x00\xff");
//! assert_eq!(parse("hex:00FFab").unwrap(), b"\x00\xff\xab");
//! ```

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

/// Why an escaped key text cannot be parsed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EscapeError {
    /// A `\` is followed by something other than `\` or `xHH`.
    #[error("bad escape at byte {offset}: expected \\\\ or \\xHH")]
    BadEscape {
        /// Byte offset of the backslash.
        offset: usize,
    },
    /// The text after `hex:` is not an even number of hex digits.
    #[error("bad hex after 'hex:': {0}")]
    BadHex(hex::FromHexError),
}

/// Escapes bytes into the key text form.
///
/// A key that itself starts with `hex:` gets its `h` written as `\x68`, so that parsing the
/// text gives the key back instead of reading it as hex notation.
///
/// ```
/// use rowkit_codec::escape::{escape, parse};
/// assert_eq!(escape(b"hex:00"), "\\x68ex:00");
/// assert_eq!(parse(&escape(b"hex:00")).unwrap(), b"hex:00");
/// ```
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let hex_lookalike = bytes.starts_with(b"hex:");
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e if !(i == 0 && hex_lookalike) => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out
}

/// Parses the key text form (or `hex:…`) back into bytes. Characters outside ASCII are taken
/// as their UTF-8 bytes.
pub fn parse(text: &str) -> Result<Vec<u8>, EscapeError> {
    if let Some(h) = text.strip_prefix("hex:") {
        return hex::decode(h).map_err(EscapeError::BadHex);
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let digits = bytes
                    .get(i + 2..i + 4)
                    .ok_or(EscapeError::BadEscape { offset: i })?;
                let mut byte = [0u8; 1];
                hex::decode_to_slice(digits, &mut byte)
                    .map_err(|_| EscapeError::BadEscape { offset: i })?;
                out.push(byte[0]);
                i += 4;
            }
            _ => return Err(EscapeError::BadEscape { offset: i }),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(parse(&escape(&all)).unwrap(), all);
    }

    #[test]
    fn hex_lookalike_keys_round_trip() {
        for key in [&b"hex:"[..], b"hex:ab", b"hex", b"hexx:"] {
            assert_eq!(parse(&escape(key)).unwrap(), key);
        }
        assert_eq!(escape(b"hex"), "hex");
    }

    #[test]
    fn rejects_bad_escapes() {
        assert_eq!(parse("a\\q"), Err(EscapeError::BadEscape { offset: 1 }));
        assert!(parse("\\x4").is_err());
        assert!(parse("hex:abc").is_err());
    }
}
