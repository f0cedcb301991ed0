//! Parsing `--now`: microseconds since the epoch, or an RFC 3339 date-time.

use rowkit_codec::civil::{days_from_civil, days_in_month};
use rowkit_codec::model::Timestamp;

use crate::error::CliError;

/// Parses `TIME` as an integer number of microseconds or as RFC 3339
/// (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`), truncating below a microsecond.
pub fn parse_time(text: &str) -> Result<Timestamp, CliError> {
    if let Ok(us) = text.parse::<i64>() {
        return Ok(Timestamp(us));
    }
    parse_rfc3339(text).ok_or_else(|| {
        CliError::usage(format!(
            "--now {text:?}: expected microseconds or RFC 3339 like 2024-01-02T03:04:05Z"
        ))
    })
}

fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let d = b.get(r)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| d.iter().fold(0i64, |a, c| a * 10 + i64::from(c - b'0')))
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > i64::from(days_in_month(year, month as u8))
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut micros = 0i64;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
        let digits = &b[start..i.min(start + 6)];
        micros = digits
            .iter()
            .fold(0i64, |a, c| a * 10 + i64::from(c - b'0'))
            * 10i64.pow(6 - digits.len() as u32);
    }
    let offset = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let h = num(i + 1..i + 3)?;
            let m = num(i + 4..i + 6)?;
            let _ = (h1, h2, m1, m2);
            if h > 23 || m > 59 {
                return None;
            }
            let secs = h * 3600 + m * 60;
            if *sign == b'+' { secs } else { -secs }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some(Timestamp(secs.checked_mul(1_000_000)?.checked_add(micros)?))
}

pub use rowkit_codec::civil::format_rfc3339_millis;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn formats_iso() {
        assert_eq!(
            format_rfc3339_millis(1_700_000_000, 5),
            "2023-11-14T22:13:20.005Z"
        );
    }

    #[test]
    fn parses_both_forms() {
        assert_eq!(parse_time("1500").unwrap(), Timestamp(1500));
        assert_eq!(parse_time("1970-01-01T00:00:00Z").unwrap(), Timestamp(0));
        assert_eq!(
            parse_time("2024-01-02T03:04:05.123456Z").unwrap(),
            Timestamp(1_704_164_645_123_456)
        );
        assert_eq!(
            parse_time("2024-01-02T04:04:05+01:00").unwrap(),
            Timestamp(1_704_164_645_000_000)
        );
        assert!(parse_time("2024-02-30T00:00:00Z").is_err());
        assert!(parse_time("yesterday").is_err());
    }
}
