//! The Go standard-library text rules the BadWolf text forms depend on, written out so the
//! bytes match the original: `strings.TrimSpace`, `strconv.Quote`/`Unquote`,
//! `strconv.ParseBool`/`ParseInt`/`ParseUint`/`ParseFloat` and `%v` of a float64.

use alloc::string::String;
use alloc::vec::Vec;

use super::isprint;

/// Decodes the first UTF-8 scalar of `b`: `(char, len)`, or `None` for an invalid sequence.
fn decode_first(b: &[u8]) -> Option<(char, usize)> {
    let len = match *b.first()? {
        0x00..=0x7f => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    let s = core::str::from_utf8(b.get(..len)?).ok()?;
    s.chars().next().map(|c| (c, len))
}

/// Decodes the last UTF-8 scalar of `b`: `(char, len)`, or `None` if the tail is invalid.
fn decode_last(b: &[u8]) -> Option<(char, usize)> {
    for len in 1..=4.min(b.len()) {
        let tail = &b[b.len() - len..];
        if let Some((c, n)) = decode_first(tail)
            && n == len
        {
            return Some((c, len));
        }
    }
    None
}

/// Go `strings.TrimSpace`: removes leading and trailing Unicode White_Space (invalid UTF-8 is
/// never space).
pub fn trim_space(b: &[u8]) -> &[u8] {
    // An ASCII byte is a whole scalar: it is tested without decoding (the usual case).
    let mut start = 0;
    while let Some(&first) = b.get(start) {
        let (c, n) = if first.is_ascii() {
            (char::from(first), 1)
        } else {
            match decode_first(&b[start..]) {
                Some(decoded) => decoded,
                None => break,
            }
        };
        if !c.is_whitespace() {
            break;
        }
        start += n;
    }
    let mut end = b.len();
    while end > start {
        let last = b[end - 1];
        let (c, n) = if last.is_ascii() {
            (char::from(last), 1)
        } else {
            match decode_last(&b[start..end]) {
                Some(decoded) => decoded,
                None => break,
            }
        };
        if !c.is_whitespace() {
            break;
        }
        end -= n;
    }
    &b[start..end]
}

/// Go `strconv.IsPrint` (= `unicode.IsPrint`): the rune is a letter, mark, number,
/// punctuation or symbol of Unicode 15.0.0 (go 1.24's), or U+0020. Everything else —
/// controls, format characters (tag characters included), separators other than U+0020,
/// surrogates, private use and unassigned code points — `strconv.Quote` escapes. Looked up
/// as Go does, in Go's compact tables (`isprint.rs`).
pub fn is_print(c: char) -> bool {
    let r = c as u32;
    // Latin-1 without a lookup, as Go does (the usual case).
    if r <= 0xff {
        return (0x20..=0x7e).contains(&r) || ((0xa1..=0xff).contains(&r) && r != 0xad);
    }
    if let Ok(r16) = u16::try_from(r) {
        return in_ranges(&isprint::IS_PRINT16, r16)
            && isprint::IS_NOT_PRINT16.binary_search(&r16).is_err();
    }
    if !in_ranges(&isprint::IS_PRINT32, r) {
        return false;
    }
    // The exceptions above U+FFFF are all below U+20000, stored less 0x10000.
    match u16::try_from(r - 0x10000) {
        Ok(offset) => isprint::IS_NOT_PRINT32.binary_search(&offset).is_err(),
        Err(_) => true,
    }
}

/// Whether `x` lies in one of the `[lo, hi]` pairs of a sorted range table.
fn in_ranges<T: Ord + Copy>(pairs: &[T], x: T) -> bool {
    // The first bound ≥ x is the start (even index) or the end (odd) of the only pair that
    // can hold x.
    let i = pairs.partition_point(|&bound| bound < x);
    match (pairs.get(i & !1), pairs.get(i | 1)) {
        (Some(&lo), Some(&hi)) => lo <= x && x <= hi,
        _ => false,
    }
}

/// Go `strconv.Quote` of a byte string (spec §2.2).
pub fn quote(b: &[u8]) -> String {
    use core::fmt::Write;
    let mut out = String::with_capacity(b.len() + 2);
    out.push('"');
    let mut i = 0;
    while i < b.len() {
        let Some((c, n)) = decode_first(&b[i..]) else {
            let _ = write!(out, "\\x{:02x}", b[i]);
            i += 1;
            continue;
        };
        i += n;
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_print(c) => out.push(c),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Why [`unquote`] rejected a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnquoteError {
    /// Not of the form `"…"`.
    NotQuoted,
    /// An unescaped `"` or a raw line feed inside.
    UnescapedCharacter,
    /// An unknown or malformed escape sequence.
    BadEscape,
}

fn hex_val(c: u8) -> Option<u32> {
    match c {
        b'0'..=b'9' => Some(u32::from(c - b'0')),
        b'a'..=b'f' => Some(u32::from(c - b'a' + 10)),
        b'A'..=b'F' => Some(u32::from(c - b'A' + 10)),
        _ => None,
    }
}

/// Go `strconv.Unquote` of a double-quoted text (spec §2.2).
pub fn unquote(b: &[u8]) -> Result<Vec<u8>, UnquoteError> {
    if b.len() < 2 || b[0] != b'"' || b[b.len() - 1] != b'"' {
        return Err(UnquoteError::NotQuoted);
    }
    let body = &b[1..b.len() - 1];
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        match c {
            b'"' | b'\n' => return Err(UnquoteError::UnescapedCharacter),
            b'\\' => {
                let esc = *body.get(i + 1).ok_or(UnquoteError::BadEscape)?;
                i += 2;
                match esc {
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(0xc),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'v' => out.push(0xb),
                    b'\\' => out.push(b'\\'),
                    b'"' => out.push(b'"'),
                    b'x' | b'u' | b'U' => {
                        let n = match esc {
                            b'x' => 2,
                            b'u' => 4,
                            _ => 8,
                        };
                        let digits = body.get(i..i + n).ok_or(UnquoteError::BadEscape)?;
                        let mut v = 0u32;
                        for &d in digits {
                            v = (v << 4) | hex_val(d).ok_or(UnquoteError::BadEscape)?;
                        }
                        i += n;
                        if esc == b'x' {
                            out.push(v as u8);
                        } else {
                            let ch = char::from_u32(v).ok_or(UnquoteError::BadEscape)?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                    }
                    b'0'..=b'7' => {
                        let digits = body.get(i - 1..i + 2).ok_or(UnquoteError::BadEscape)?;
                        let mut v = 0u32;
                        for &d in digits {
                            if !(b'0'..=b'7').contains(&d) {
                                return Err(UnquoteError::BadEscape);
                            }
                            v = (v << 3) | u32::from(d - b'0');
                        }
                        if v > 255 {
                            return Err(UnquoteError::BadEscape);
                        }
                        out.push(v as u8);
                        i += 2;
                    }
                    _ => return Err(UnquoteError::BadEscape),
                }
            }
            _ => match decode_first(&body[i..]) {
                Some((_, n)) => {
                    out.extend_from_slice(&body[i..i + n]);
                    i += n;
                }
                None => {
                    out.extend_from_slice("\u{FFFD}".as_bytes());
                    i += 1;
                }
            },
        }
    }
    Ok(out)
}

/// Go `strconv.ParseBool`.
pub fn parse_bool(b: &[u8]) -> Option<bool> {
    match b {
        b"1" | b"t" | b"T" | b"TRUE" | b"true" | b"True" => Some(true),
        b"0" | b"f" | b"F" | b"FALSE" | b"false" | b"False" => Some(false),
        _ => None,
    }
}

/// Go `strconv.ParseInt(v, 10, 64)`.
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    let digits = match b.first() {
        Some(b'+' | b'-') => &b[1..],
        _ => b,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(b).ok()?.parse().ok()
}

/// Go `strconv.ParseUint(v, 10, 8)`.
pub fn parse_u8(b: &[u8]) -> Option<u8> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(b).ok()?.parse().ok()
}

/// Go `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
pub fn format_f64(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits, like Go's shortest mode.
    let sci = alloc::format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::new();
    if f < 0.0 {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&alloc::format!("{:02}", exp.unsigned_abs()));
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
    out
}

/// Go's `underscoreOK`: underscores only between digits (or after a base prefix).
fn underscore_ok(s: &[u8]) -> bool {
    let mut saw = b'^';
    let mut s = s;
    if let Some(b'+' | b'-') = s.first() {
        s = &s[1..];
    }
    let mut i = 0;
    let mut hex = false;
    if s.len() >= 2 && s[0] == b'0' && matches!(s[1] | 0x20, b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = s[1] | 0x20 == b'x';
    }
    while i < s.len() {
        let c = s[i];
        if c.is_ascii_digit() || (hex && (c | 0x20).is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// Go `strconv.ParseFloat(v, 64)`: `None` on a syntax or range error.
pub fn parse_f64(b: &[u8]) -> Option<f64> {
    // Specials: signed inf/infinity, unsigned nan, any case, nothing after.
    let (neg, unsigned) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    if unsigned.eq_ignore_ascii_case(b"inf") || unsigned.eq_ignore_ascii_case(b"infinity") {
        return Some(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if b.eq_ignore_ascii_case(b"nan") {
        return Some(f64::from_bits(0x7ff8_0000_0000_0001));
    }
    if b.contains(&b'_') && !underscore_ok(b) {
        return None;
    }
    // Copied only when there are underscores to drop.
    let without_underscores: Vec<u8>;
    let clean: &[u8] = if unsigned.contains(&b'_') {
        without_underscores = unsigned.iter().copied().filter(|&c| c != b'_').collect();
        &without_underscores
    } else {
        unsigned
    };
    if clean.len() > 2 && clean[0] == b'0' && clean[1] | 0x20 == b'x' {
        return parse_hex_f64(&clean[2..], neg);
    }
    // Decimal: Rust's grammar for finite decimals equals Go's; exclude the words and the second
    // sign it would also take.
    if matches!(clean.first(), Some(b'+' | b'-'))
        || !clean
            .iter()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    let f: f64 = core::str::from_utf8(clean).ok()?.parse().ok()?;
    if f.is_infinite() {
        return None;
    }
    Some(if neg { -f } else { f })
}

/// Go `readFloat` + `atofHex` for the part after `0x`.
fn parse_hex_f64(s: &[u8], neg: bool) -> Option<f64> {
    let mut mantissa: u64 = 0;
    let (mut nd, mut nd_mant, mut dp) = (0i64, 0i64, 0i64);
    let (mut sawdot, mut sawdigits, mut trunc) = (false, false, false);
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == b'.' {
            if sawdot {
                break;
            }
            sawdot = true;
            dp = nd;
        } else if let Some(v) = hex_val(c) {
            sawdigits = true;
            if c == b'0' && nd == 0 {
                dp -= 1;
            } else {
                nd += 1;
                if nd_mant < 16 {
                    mantissa = mantissa * 16 + u64::from(v);
                    nd_mant += 1;
                } else if c != b'0' {
                    trunc = true;
                }
            }
        } else {
            break;
        }
        i += 1;
    }
    if !sawdigits {
        return None;
    }
    if !sawdot {
        dp = nd;
    }
    dp *= 4;
    nd_mant *= 4;
    // Mandatory binary exponent.
    if s.get(i).map(|c| c | 0x20) != Some(b'p') {
        return None;
    }
    i += 1;
    let mut esign = 1i64;
    match s.get(i) {
        Some(b'+') => i += 1,
        Some(b'-') => {
            esign = -1;
            i += 1
        }
        _ => {}
    }
    if !s.get(i).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let mut e = 0i64;
    while let Some(&c) = s.get(i) {
        if !c.is_ascii_digit() {
            return None;
        }
        if e < 10000 {
            e = e * 10 + i64::from(c - b'0');
        }
        i += 1;
    }
    dp += e * esign;
    let exp = if mantissa != 0 { dp - nd_mant } else { 0 };
    atof_hex(mantissa, exp, neg, trunc)
}

fn atof_hex(mut mantissa: u64, mut exp: i64, neg: bool, trunc: bool) -> Option<f64> {
    const MANTBITS: u32 = 52;
    const BIAS: i64 = -1023;
    let max_exp = (1i64 << 11) + BIAS - 2;
    let min_exp = BIAS + 1;
    exp += i64::from(MANTBITS);
    while mantissa != 0 && mantissa >> (MANTBITS + 2) == 0 {
        mantissa <<= 1;
        exp -= 1;
    }
    if trunc {
        mantissa |= 1;
    }
    while mantissa >> (1 + MANTBITS + 2) != 0 {
        mantissa = (mantissa >> 1) | (mantissa & 1);
        exp += 1;
    }
    while mantissa > 1 && exp < min_exp - 2 {
        mantissa = (mantissa >> 1) | (mantissa & 1);
        exp += 1;
    }
    let mut round = mantissa & 3;
    mantissa >>= 2;
    round |= mantissa & 1;
    exp += 2;
    if round == 3 {
        mantissa += 1;
        if mantissa == 1 << (1 + MANTBITS) {
            mantissa >>= 1;
            exp += 1;
        }
    }
    if mantissa >> MANTBITS == 0 {
        exp = BIAS;
    }
    if exp > max_exp {
        return None;
    }
    let mut bits = mantissa & ((1 << MANTBITS) - 1);
    bits |= (((exp - BIAS) & ((1 << 11) - 1)) as u64) << MANTBITS;
    if neg {
        bits |= 1 << 63;
    }
    Some(f64::from_bits(bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_format_like_go() {
        for (f, s) in [
            (1.0, "1"),
            (1e6, "1e+06"),
            (123456.789, "123456.789"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (100000.0, "100000"),
            (123456789012.0, "1.23456789012e+11"),
            (-0.0, "-0"),
            (1e21, "1e+21"),
            (1.5e-300, "1.5e-300"),
            (-2.5, "-2.5"),
            (f64::INFINITY, "+Inf"),
        ] {
            assert_eq!(format_f64(f), s);
        }
    }

    #[test]
    fn floats_parse_like_go() {
        assert_eq!(parse_f64(b"1_000.5"), Some(1000.5));
        assert_eq!(parse_f64(b"1__0"), None);
        assert_eq!(parse_f64(b"_1"), None);
        assert_eq!(parse_f64(b"0x1p-2"), Some(0.25));
        assert_eq!(parse_f64(b"0x1.8p1"), Some(3.0));
        assert_eq!(parse_f64(b"0x1"), None);
        assert_eq!(parse_f64(b"-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"+nan"), None);
        assert_eq!(
            parse_f64(b"NaN").map(f64::to_bits),
            Some(0x7ff8_0000_0000_0001)
        );
        assert_eq!(parse_f64(b"1e400"), None);
        assert_eq!(parse_f64(b"1e-400"), Some(0.0));
        assert_eq!(parse_f64(b"."), None);
        assert_eq!(parse_f64(b"infinit"), None);
        assert_eq!(parse_f64(b"0x1p1024"), None);
        assert_eq!(parse_f64(b"0x1p-1074"), Some(f64::from_bits(1)));
    }

    #[test]
    fn quote_and_unquote() {
        assert_eq!(
            quote(b"a\"b\\c\n\x01\x7f\xff"),
            "\"a\\\"b\\\\c\\n\\x01\\x7f\\xff\""
        );
        assert_eq!(quote("é\u{a0}".as_bytes()), "\"é\\u00a0\"");
        assert_eq!(
            unquote(b"\"a\\x41\\101\\u00e9\"").unwrap(),
            "aAAé".as_bytes()
        );
        assert_eq!(unquote(b"\"a\"b\""), Err(UnquoteError::UnescapedCharacter));
        assert_eq!(unquote(b"\"\\'\""), Err(UnquoteError::BadEscape));
        assert_eq!(unquote(b"\"\\400\""), Err(UnquoteError::BadEscape));
        assert_eq!(unquote(b"\"\\ud800\""), Err(UnquoteError::BadEscape));
        assert_eq!(unquote(b"\"\xff\"").unwrap(), "\u{FFFD}".as_bytes());
        assert_eq!(trim_space(" \u{a0}x y\t\n".as_bytes()), b"x y");
    }

    /// The format characters issue 34 lists (Go escapes them, go 1.24 = Unicode 15.0), an
    /// unassigned code point, private use, noncharacters; and printable runes, one of them
    /// assigned only in Unicode 15.0.
    #[test]
    fn is_print_is_go_1_24s() {
        let not_printable = [
            0x0890..=0x0891,
            0x08e2..=0x08e2,
            0x110bd..=0x110bd,
            0x110cd..=0x110cd,
            0x13430..=0x1343f,
            0x1bca0..=0x1bca3,
            0x1d173..=0x1d17a,
            0xe0001..=0xe0001,
            0xe0020..=0xe007f,
            0x0378..=0x0378,
            0xe000..=0xf8ff,
            0xfffe..=0xffff,
            0x10fffe..=0x10ffff,
            0x0080..=0x00a0,
            0x00ad..=0x00ad,
            0x2028..=0x2029,
        ];
        for r in not_printable.into_iter().flatten() {
            let c = char::from_u32(r).unwrap();
            assert!(!is_print(c), "U+{r:04X}");
        }
        for c in [
            'a',
            ' ',
            '~',
            'é',
            '\u{0870}',
            '\u{1f3f4}',
            '\u{11f00}',
            '\u{13440}',
            '\u{4e00}',
        ] {
            assert!(is_print(c), "{c:?}");
        }
        assert_eq!(
            quote("\u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}".as_bytes()),
            "\"\u{1f3f4}\\U000e0067\\U000e0062\\U000e0073\\U000e0063\\U000e0074\\U000e007f\""
        );
    }

    /// Go's `TrimSpace` with every scalar decoded: the reference for the ASCII fast path.
    fn trim_space_reference(b: &[u8]) -> &[u8] {
        let mut start = 0;
        while let Some((c, n)) = decode_first(&b[start..]) {
            if !c.is_whitespace() {
                break;
            }
            start += n;
        }
        let mut end = b.len();
        while end > start {
            match decode_last(&b[start..end]) {
                Some((c, n)) if c.is_whitespace() => end -= n,
                _ => break,
            }
        }
        &b[start..end]
    }

    #[test]
    fn trim_space_equals_reference() {
        // Spaces (ASCII, U+0085, U+00A0, U+3000), non-spaces (0x1c, 'x', 'é') and invalid
        // bytes, in every sequence of up to 4 of them.
        let pieces: [&[u8]; 9] = [
            b" ",
            b"\t",
            b"\x0b",
            "\u{85}".as_bytes(),
            "\u{a0}".as_bytes(),
            "\u{3000}".as_bytes(),
            b"\x1c",
            "x\u{e9}".as_bytes(),
            b"\xff\x80",
        ];
        let mut inputs: Vec<Vec<u8>> = alloc::vec![Vec::new()];
        let mut frontier = inputs.clone();
        for _ in 0..4 {
            frontier = frontier
                .iter()
                .flat_map(|s| pieces.iter().map(move |p| [s.as_slice(), p].concat()))
                .collect();
            inputs.extend(frontier.iter().cloned());
        }
        for s in &inputs {
            assert_eq!(trim_space(s), trim_space_reference(s), "{s:?}");
        }
    }

    #[test]
    fn ints() {
        assert_eq!(parse_i64(b"+5"), Some(5));
        assert_eq!(parse_i64(b"-"), None);
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_u8(b"+5"), None);
        assert_eq!(parse_u8(b"256"), None);
    }
}
