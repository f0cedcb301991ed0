//! Translation of Bigtable's RE2 patterns (raw bytes, Latin-1, full match) into patterns for
//! Rust's `regex::bytes` (`spec/bigtable.md` 10.5).
//!
//! The translation is a pure function so that the filter validator can reject a pattern before
//! any row is read; stores compile the result with the `regex` crate.
//!
//! ```
//! use rowkit_codec::model::regex::translate;
//! assert_eq!(translate(b"q\\C", "value_regex_filter").unwrap(), "(?-u)^(?:q(?s-u:.))$");
//! assert_eq!(translate(b"\xe9", "value_regex_filter").unwrap(), "(?-u)^(?:\\xe9)$");
//! assert!(translate(b"(?x)a", "value_regex_filter").is_err());
//! ```

use alloc::format;
use alloc::string::{String, ToString};

use super::ValidationError;

/// Largest repetition count RE2 accepts in `{n,m}`.
const MAX_REPEAT: u32 = 1000;

/// Translates an RE2 pattern into an anchored Rust byte-regex pattern, or explains why it cannot
/// be used. `field` names the filter field for the error.
pub fn translate(pattern: &[u8], field: &'static str) -> Result<String, ValidationError> {
    let fail = |reason: &str| ValidationError::InvalidRegex {
        field,
        pattern: String::from_utf8_lossy(pattern).into_owned(),
        reason: reason.to_string(),
    };
    let mut out = String::from("(?-u)^(?:");
    let mut i = 0;
    // Index of the first byte of the open class's body, when inside `[...]`.
    let mut class_body: Option<usize> = None;
    while i < pattern.len() {
        let b = pattern[i];
        if b >= 0x80 {
            out.push_str(&format!("\\x{b:02x}"));
            i += 1;
            continue;
        }
        if b == b'\\' {
            let Some(&n) = pattern.get(i + 1) else {
                return Err(fail("trailing backslash"));
            };
            match n {
                _ if n >= 0x80 => return Err(fail("backslash before a non-ASCII byte")),
                b'C' if class_body.is_some() => return Err(fail("\\C inside a character class")),
                b'C' => out.push_str("(?s-u:.)"),
                b'Q' | b'E' => return Err(fail("\\Q...\\E quoting is not supported")),
                b'p' | b'P' => return Err(fail("Unicode classes \\p and \\P are not supported")),
                _ => {
                    out.push('\\');
                    out.push(char::from(n));
                }
            }
            i += 2;
            continue;
        }
        if let Some(body) = class_body {
            match b {
                b']' if i > body => {
                    out.push(']');
                    class_body = None;
                }
                b'[' if pattern[i..].starts_with(b"[:") => {
                    let Some(len) = find(&pattern[i + 2..], b":]") else {
                        return Err(fail("unterminated POSIX class"));
                    };
                    let end = i + 2 + len + 2;
                    push_ascii(&mut out, &pattern[i..end]);
                    i = end;
                    continue;
                }
                b'-' if pattern.get(i + 1) == Some(&b'-') => {
                    return Err(fail("'--' inside a character class"));
                }
                b'[' | b']' | b'&' | b'~' => {
                    out.push('\\');
                    out.push(char::from(b));
                }
                _ => out.push(char::from(b)),
            }
            i += 1;
            continue;
        }
        match b {
            b'[' => {
                out.push('[');
                i += 1;
                if pattern.get(i) == Some(&b'^') {
                    out.push('^');
                    i += 1;
                }
                class_body = Some(i);
                continue;
            }
            b'(' if pattern.get(i + 1) == Some(&b'?') => {
                let rest = &pattern[i + 2..];
                if rest.starts_with(b"P<") || rest.starts_with(b"<") {
                    out.push_str("(?");
                    i += 2;
                    continue;
                }
                let flags_len = rest
                    .iter()
                    .position(|&c| c == b')' || c == b':')
                    .ok_or_else(|| fail("unterminated group flags"))?;
                let flags = &rest[..flags_len];
                if flags.is_empty() || !flags.iter().all(|c| b"imsU-".contains(c)) {
                    return Err(fail("only the flags i, m, s and U are supported"));
                }
                out.push_str("(?");
                push_ascii(&mut out, flags);
                i += 2 + flags_len;
                continue;
            }
            b'{' => match repetition(&pattern[i..]) {
                Some((len, max)) => {
                    if max > MAX_REPEAT {
                        return Err(fail("repetition count over 1000"));
                    }
                    push_ascii(&mut out, &pattern[i..i + len]);
                    i += len;
                    continue;
                }
                // RE2 reads a brace that does not start a repetition as a literal.
                None => out.push_str("\\{"),
            },
            _ => out.push(char::from(b)),
        }
        i += 1;
    }
    if class_body.is_some() {
        return Err(fail("missing closing ]"));
    }
    out.push_str(")$");
    Ok(out)
}

/// Parses `{n}`, `{n,}` or `{n,m}` at the start of `s`: its length and the largest count in it.
fn repetition(s: &[u8]) -> Option<(usize, u32)> {
    let close = s.iter().position(|&c| c == b'}')?;
    let body = &s[1..close];
    let (lo, hi) = match body.iter().position(|&c| c == b',') {
        Some(comma) => (&body[..comma], Some(&body[comma + 1..])),
        None => (body, None),
    };
    let number = |d: &[u8]| -> Option<u32> {
        if d.is_empty() || d.len() > 9 || !d.iter().all(u8::is_ascii_digit) {
            return None;
        }
        d.iter().try_fold(0u32, |acc, c| {
            acc.checked_mul(10)?.checked_add(u32::from(c - b'0'))
        })
    };
    let lo = number(lo)?;
    let max = match hi {
        None | Some([]) => lo,
        Some(h) => number(h)?.max(lo),
    };
    Some((close + 1, max))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn push_ascii(out: &mut String, bytes: &[u8]) {
    out.extend(bytes.iter().map(|&b| char::from(b)));
}
