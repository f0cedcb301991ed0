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

/// The latest `--now`: the last microsecond of year 9999, the last RFC 3339 can write. Far
/// enough inside `i64` that the deadlines and lifetimes machines add to `now` never saturate.
pub const MAX_NOW: Timestamp = Timestamp(253_402_300_799_999_999);

/// Parses `--now` ([`parse_time`]) and checks it is a time the stores can stamp: from the
/// epoch (timestamps are never negative, `spec/bigtable.md` 3) to [`MAX_NOW`]. Below a
/// millisecond it is kept; cells get it truncated to the millisecond, as production's clock.
pub fn parse_now(text: &str) -> Result<Timestamp, CliError> {
    let now = parse_time(text)?;
    if (0..=MAX_NOW.0).contains(&now.0) {
        Ok(now)
    } else {
        Err(CliError::usage(format!(
            "--now {text}: out of range: from 0 (1970-01-01T00:00:00Z) to {} \
             (9999-12-31T23:59:59.999999Z) microseconds",
            MAX_NOW.0
        )))
    }
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

/// A timestamp in µs since the epoch as text output shows it: RFC 3339 in UTC, with as many
/// fraction digits as it needs to be exact (none, milliseconds, or microseconds), so that
/// `--now` and `--from`/`--to` take it back. `--json` keeps the raw µs.
pub fn format_micros(us: i64) -> String {
    let micros = us.rem_euclid(1_000_000);
    // `…:SS.mmmZ`: the millisecond form the codec writes, trimmed or extended below.
    let millis_form = format_rfc3339_millis(us.div_euclid(1_000_000), micros / 1000);
    let seconds_part = &millis_form[..millis_form.len() - ".000Z".len()];
    match micros {
        0 => format!("{seconds_part}Z"),
        m if m % 1000 == 0 => millis_form,
        m => format!("{seconds_part}.{m:06}Z"),
    }
}

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
    fn formats_micros_exactly_and_parses_back() {
        let cases = [
            (0, "1970-01-01T00:00:00Z"),
            (1_704_164_645_000_000, "2024-01-02T03:04:05Z"),
            (1_704_164_645_678_000, "2024-01-02T03:04:05.678Z"),
            (1_704_164_645_000_001, "2024-01-02T03:04:05.000001Z"),
            (253_402_300_799_999_999, "9999-12-31T23:59:59.999999Z"),
            (-1, "1969-12-31T23:59:59.999999Z"),
        ];
        for (us, text) in cases {
            assert_eq!(format_micros(us), text, "{us}");
            assert_eq!(parse_time(text).unwrap(), Timestamp(us), "{text}");
        }
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

    #[test]
    fn now_is_between_the_epoch_and_the_end_of_9999() {
        assert_eq!(parse_now("0").unwrap(), Timestamp(0));
        assert_eq!(
            parse_now("9999-12-31T23:59:59.999999Z").unwrap(),
            Timestamp(253_402_300_799_999_999)
        );
        for bad in [
            "-1",
            "-5000",
            "-9223372036854775808",
            "253402300800000000",
            "9223372036854775807",
            "1969-12-31T23:59:59Z",
        ] {
            let e = parse_now(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(
                e.message().contains("out of range"),
                "{bad}: {}",
                e.message()
            );
        }
    }
}
