//! Parsing `--now`: microseconds since the epoch, or an RFC 3339 date-time.

use rowkit_codec::model::Timestamp;

use crate::error::CliError;

/// Parses `TIME` as an integer number of microseconds or as RFC 3339
/// (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`), truncating below a microsecond.
pub fn parse_time(text: &str) -> Result<Timestamp, CliError> {
    if let Ok(us) = text.parse::<i64>() {
        return Ok(Timestamp(us));
    }
    parse_rfc3339(text).map_err(|e| {
        CliError::usage(format!(
            "--now {text:?}: expected microseconds or RFC 3339 like 2024-01-02T03:04:05Z ({e})"
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

/// RFC 3339 by `jiff`'s parser (jiff is already built into rowkit through google-cloud-auth;
/// its errors say what is wrong where, in one line). The parsed pieces are converted here, not
/// through `jiff::Timestamp`: that type ends at 9999-12-30T22:00:00Z (room for offsets), and
/// `--now` goes to [`MAX_NOW`], the last microsecond of 9999.
fn parse_rfc3339(text: &str) -> Result<Timestamp, String> {
    use jiff::fmt::temporal::{Pieces, PiecesOffset};
    let pieces = Pieces::parse(text).map_err(|e| e.to_string())?;
    let time = pieces.time().ok_or("no time of day")?;
    let offset_secs = match pieces.offset() {
        Some(PiecesOffset::Zulu) => 0,
        Some(PiecesOffset::Numeric(n)) => i128::from(n.offset().seconds()),
        _ => return Err("no offset (Z or ±HH:MM)".into()),
    };
    if pieces.time_zone_annotation().is_some() {
        return Err("a time zone annotation is not RFC 3339".into());
    }
    let epoch = jiff::civil::DateTime::constant(1970, 1, 1, 0, 0, 0, 0);
    let since_epoch = pieces.date().to_datetime(time).duration_since(epoch);
    // Floor to the microsecond: a fraction below it is dropped (also before the epoch).
    let micros = since_epoch.as_nanos().div_euclid(1000) - offset_secs * 1_000_000;
    // Years -9999..=9999 are about ±3.2e17 µs: always inside i64.
    i64::try_from(micros)
        .map(Timestamp)
        .map_err(|_| "out of range".into())
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
