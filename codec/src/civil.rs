//! Proleptic Gregorian calendar arithmetic (Howard Hinnant's `days_from_civil` /
//! `civil_from_days`), shared by every text form of a date: RFC 3339 anchors of the triple
//! store and the CLI's `--now` and ISO dates.
//!
//! ```
//! use rowkit_codec::civil::{civil_from_days, days_from_civil};
//! assert_eq!(days_from_civil(1970, 1, 1), 0);
//! assert_eq!(days_from_civil(2000, 3, 1), 11_017);
//! assert_eq!(civil_from_days(11_017), (2000, 3, 1));
//! assert_eq!(civil_from_days(-1), (1969, 12, 31));
//! ```

/// Whether `year` is a leap year.
pub fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// The number of days of `month` (1–12) in `year`.
pub fn days_in_month(year: i64, month: u8) -> u8 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of the date `y-m-d` (`m` 1–12, `d` 1–31).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `(year, month, day)` of `days` since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    // Both fit: d is 1..=31 and m 1..=12 by construction.
    let d = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYY-MM-DDTHH:MM:SS.sssZ` for seconds since the epoch plus milliseconds (JavaScript's
/// `Date.prototype.toISOString`).
///
/// ```
/// assert_eq!(
///     rowkit_codec::civil::format_rfc3339_millis(1_700_000_000, 5),
///     "2023-11-14T22:13:20.005Z"
/// );
/// ```
pub fn format_rfc3339_millis(secs: i64, millis: i64) -> alloc::string::String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    alloc::format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_day_of_eight_centuries() {
        for days in -200_000..100_000 {
            let (y, m, d) = civil_from_days(days);
            assert!((1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m));
            assert_eq!(days_from_civil(y, i64::from(m), i64::from(d)), days);
        }
    }
}
