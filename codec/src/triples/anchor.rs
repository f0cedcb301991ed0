//! Time anchors of temporal predicates: Go `time.Parse(time.RFC3339Nano, …)` (go 1.24) and
//! `Format(time.RFC3339Nano)`, plus the wrapping `UnixNano` the original uses for UUIDs and
//! cell timestamps (spec §2.6).

use alloc::string::String;
use core::cmp::Ordering;
use core::fmt::Write;

use crate::civil::{days_from_civil, days_in_month};

/// Why an anchor text was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnchorError {
    /// The text does not follow `YYYY-MM-DDTHH:MM:SS[.frac](Z|±hh:mm)`.
    #[error("anchor does not match RFC 3339 at byte {0}")]
    Syntax(usize),
    /// A field is outside its range.
    #[error("anchor field {0} out of range")]
    Range(&'static str),
    /// Text left after the zone.
    #[error("extra text after the anchor at byte {0}")]
    ExtraText(usize),
}

/// An instant with the zone offset it was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Anchor {
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    nanos: u32,
    offset_seconds: i32,
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn digits(&mut self, min: usize, max: usize) -> Result<u32, AnchorError> {
        let mut v = 0u32;
        let mut n = 0;
        while n < max && self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            v = v * 10 + u32::from(self.s[self.i] - b'0');
            self.i += 1;
            n += 1;
        }
        if n < min {
            return Err(AnchorError::Syntax(self.i));
        }
        Ok(v)
    }

    fn literal(&mut self, c: u8) -> Result<(), AnchorError> {
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(AnchorError::Syntax(self.i))
        }
    }
}

impl Anchor {
    /// Parses an RFC 3339 text as Go 1.24's `time.Parse(time.RFC3339Nano, …)` does.
    pub fn parse(text: &[u8]) -> Result<Anchor, AnchorError> {
        let mut c = Cursor { s: text, i: 0 };
        let year = c.digits(4, 4)?;
        c.literal(b'-')?;
        let month = c.digits(2, 2)?;
        c.literal(b'-')?;
        let day = c.digits(2, 2)?;
        c.literal(b'T')?;
        let hour = c.digits(1, 2)?;
        c.literal(b':')?;
        let minute = c.digits(2, 2)?;
        c.literal(b':')?;
        let second = c.digits(2, 2)?;
        let mut nanos = 0u32;
        if matches!(text.get(c.i), Some(b'.' | b','))
            && text.get(c.i + 1).is_some_and(u8::is_ascii_digit)
        {
            c.i += 1;
            let mut n = 0;
            while let Some(&d) = text.get(c.i).filter(|d| d.is_ascii_digit()) {
                if n < 9 {
                    nanos = nanos * 10 + u32::from(d - b'0');
                    n += 1;
                }
                c.i += 1;
            }
            for _ in n..9 {
                nanos *= 10;
            }
        }
        let offset_seconds = match text.get(c.i) {
            Some(b'Z') => {
                c.i += 1;
                0
            }
            Some(&sign @ (b'+' | b'-')) => {
                c.i += 1;
                let hh = c.digits(2, 2)?;
                c.literal(b':')?;
                let mm = c.digits(2, 2)?;
                if hh > 24 || mm > 60 {
                    return Err(AnchorError::Range("zone offset"));
                }
                let off = ((hh * 60 + mm) * 60) as i32;
                if sign == b'-' { -off } else { off }
            }
            _ => return Err(AnchorError::Syntax(c.i)),
        };
        if c.i != text.len() {
            return Err(AnchorError::ExtraText(c.i));
        }
        if !(1..=12).contains(&month) {
            return Err(AnchorError::Range("month"));
        }
        if day < 1 || day > u32::from(days_in_month(i64::from(year), month as u8)) {
            return Err(AnchorError::Range("day"));
        }
        if hour > 23 {
            return Err(AnchorError::Range("hour"));
        }
        if minute > 59 {
            return Err(AnchorError::Range("minute"));
        }
        if second > 59 {
            return Err(AnchorError::Range("second"));
        }
        Ok(Anchor {
            year: year as u16,
            month: month as u8,
            day: day as u8,
            hour: hour as u8,
            minute: minute as u8,
            second: second as u8,
            nanos,
            offset_seconds,
        })
    }

    /// Seconds since the Unix epoch of the instant (exact, no wrapping).
    pub fn unix_seconds(&self) -> i64 {
        let days = days_from_civil(
            i64::from(self.year),
            i64::from(self.month),
            i64::from(self.day),
        );
        days * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second)
            - i64::from(self.offset_seconds)
    }

    /// The nanoseconds within the second.
    pub fn nanos(&self) -> u32 {
        self.nanos
    }

    /// The zone offset in seconds east of UTC.
    pub fn offset_seconds(&self) -> i32 {
        self.offset_seconds
    }

    /// Go `UnixNano()`: `seconds * 10^9 + nanos` in wrapping 64-bit arithmetic (quirk 4).
    pub fn unix_nano_wrapping(&self) -> i64 {
        self.unix_seconds()
            .wrapping_mul(1_000_000_000)
            .wrapping_add(i64::from(self.nanos))
    }

    /// Compares the true instants (Go `Before`/`After`/`Equal`), ignoring the offsets.
    pub fn cmp_instant(&self, other: &Anchor) -> Ordering {
        (self.unix_seconds(), self.nanos).cmp(&(other.unix_seconds(), other.nanos))
    }

    /// Whether both denote the same instant.
    pub fn same_instant(&self, other: &Anchor) -> bool {
        self.cmp_instant(other) == Ordering::Equal
    }

    /// Go `Format(time.RFC3339Nano)`.
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(35);
        let _ = write!(
            s,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        );
        if self.nanos != 0 {
            let frac = alloc::format!("{:09}", self.nanos);
            s.push('.');
            s.push_str(frac.trim_end_matches('0'));
        }
        if self.offset_seconds == 0 {
            s.push('Z');
        } else {
            let minutes = self.offset_seconds / 60;
            let sign = if minutes < 0 { '-' } else { '+' };
            let m = minutes.unsigned_abs();
            let _ = write!(s, "{sign}{:02}:{:02}", m / 60, m % 60);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Anchor, AnchorError> {
        Anchor::parse(s.as_bytes())
    }

    #[test]
    fn parse_and_format() {
        let a = p("2016-01-01T00:00:00-08:00").unwrap();
        assert_eq!(a.to_text(), "2016-01-01T00:00:00-08:00");
        assert_eq!(a.unix_nano_wrapping(), 1_451_635_200_000_000_000);
        assert_eq!(
            p("2010-04-10T4:21:00.000000000Z").unwrap().to_text(),
            "2010-04-10T04:21:00Z"
        );
        assert_eq!(
            p("2016-01-01T00:00:00,5Z").unwrap().to_text(),
            "2016-01-01T00:00:00.5Z"
        );
        assert_eq!(
            p("2016-01-01T00:00:00.1234567891Z").unwrap().to_text(),
            "2016-01-01T00:00:00.123456789Z"
        );
        assert_eq!(
            p("2020-06-15T09:00:00+00:00").unwrap().to_text(),
            "2020-06-15T09:00:00Z"
        );
        assert_eq!(
            p("2020-06-15T09:00:00+00:60").unwrap().to_text(),
            "2020-06-15T09:00:00+01:00"
        );
        assert_eq!(
            p("2300-01-01T00:00:00Z").unwrap().unix_nano_wrapping(),
            -8_032_952_073_709_551_616
        );
        for bad in [
            "2016-01-01t00:00:00Z",
            "2016-01-01T00:00:00z",
            "2016-01-01T00:00:00+0100",
            "2016-1-01T00:00:00Z",
            " 2016-01-01T00:00:00Z",
            "2016-01-01T00:00:00Zx",
            "2015-02-29T00:00:00Z",
            "2016-01-01T24:00:00Z",
            "2016-01-01T00:00:60Z",
            "2016-01-01T00:00:00+25:00",
            "2016-01-01T00:00:00.Z",
            "16-01-01T00:00:00Z",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
        assert!(p("2016-02-29T00:00:00Z").is_ok());
        let x = p("2015-01-01T00:00:00-09:00").unwrap();
        let y = p("2015-01-01T01:00:00-08:00").unwrap();
        assert!(x.same_instant(&y));
        assert_ne!(x, y);
    }
}
