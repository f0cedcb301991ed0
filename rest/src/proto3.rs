//! proto3 JSON scalars (`rest-json.md` 3): `bytes` as base64, `int64` as decimal strings,
//! `int32` as numbers, `double` as numbers (or the strings `NaN` / `Infinity`).
//!
//! Each is a newtype whose `Serialize` emits Google's form and whose `Deserialize` accepts every
//! form of the "Accept" column, plus `null` (= the default value). Decoding errors say which
//! proto type was expected, so serde_json's message reads e.g.
//! "invalid base64 (bytes field): … at line 1 column 17".

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Decodes padded or unpadded input; trailing bits must be zero (canonical encodings only).
const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_encode_padding(true)
    .with_decode_padding_mode(DecodePaddingMode::Indifferent);
/// The standard alphabet, emitting padding, accepting either.
const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
/// The URL-safe alphabet, accepting padding or not.
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

/// Encodes bytes as proto3 JSON does: standard alphabet with padding.
pub fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes proto3 JSON bytes: standard or URL-safe alphabet, with or without padding.
pub fn decode_base64(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    if text.bytes().any(|b| b == b'-' || b == b'_') {
        URL_SAFE.decode(text)
    } else {
        STANDARD.decode(text)
    }
}

/// A proto `bytes` value (base64 in JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct B64(pub Vec<u8>);

impl B64 {
    /// Whether the value is empty (the proto3 default, omitted when emitting).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for B64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode_base64(&self.0))
    }
}

impl<'de> Deserialize<'de> for B64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<B64, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = B64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a base64 string (proto bytes)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<B64, E> {
                decode_base64(v)
                    .map(B64)
                    .map_err(|e| E::custom(format_args!("invalid base64 (bytes field): {e}")))
            }
            fn visit_unit<E: de::Error>(self) -> Result<B64, E> {
                Ok(B64::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// A proto `int64` (a decimal string in JSON; a JSON integer is accepted too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Int64(pub i64);

impl Int64 {
    /// Whether the value is 0 (the proto3 default, omitted when emitting).
    pub fn is_zero(&self) -> bool {
        self.0 == 0
    }
}

impl Serialize for Int64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Int64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Int64, D::Error> {
        d.deserialize_any(IntVisitor {
            what: "an int64 as a decimal string or integer",
            min: i64::MIN,
            max: i64::MAX,
        })
        .map(Int64)
    }
}

/// A proto `int32` (a JSON number; a decimal string is accepted too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Int32(pub i32);

impl Int32 {
    /// Whether the value is 0 (the proto3 default, omitted when emitting).
    pub fn is_zero(&self) -> bool {
        self.0 == 0
    }
}

impl Serialize for Int32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i32(self.0)
    }
}

impl<'de> Deserialize<'de> for Int32 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Int32, D::Error> {
        let v = d.deserialize_any(IntVisitor {
            what: "an int32 as a number or decimal string",
            min: i64::from(i32::MIN),
            max: i64::from(i32::MAX),
        })?;
        // In range by construction of the visitor bounds.
        i32::try_from(v)
            .map(Int32)
            .map_err(|_| de::Error::custom("int32 out of range"))
    }
}

/// Accepts an integer as a JSON number (integral), a decimal string, or `null` (= 0).
struct IntVisitor {
    what: &'static str,
    min: i64,
    max: i64,
}

impl IntVisitor {
    fn check<E: de::Error>(&self, v: i128) -> Result<i64, E> {
        if v < i128::from(self.min) || v > i128::from(self.max) {
            return Err(E::custom(format_args!(
                "{}: value {v} out of range",
                self.what
            )));
        }
        // In range of i64 because min/max are i64.
        i64::try_from(v).map_err(|_| E::custom("integer out of range"))
    }
}

impl<'de> Visitor<'de> for IntVisitor {
    type Value = i64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        self.check(i128::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        self.check(i128::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        // proto3 JSON parsers accept exponent notation for integral values ("1e3").
        if v.is_finite() && v == (v as i64) as f64 && v.abs() < 9.2e18 {
            self.check(i128::from(v as i64))
        } else {
            Err(E::custom(format_args!(
                "{}: {v} is not an integer",
                self.what
            )))
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
        let digits = v.strip_prefix('-').unwrap_or(v);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(E::custom(format_args!(
                "{}: {v:?} is not a decimal integer",
                self.what
            )));
        }
        let n: i128 = v
            .parse()
            .map_err(|_| E::custom(format_args!("{}: {v:?} out of range", self.what)))?;
        self.check(n)
    }
    fn visit_unit<E: de::Error>(self) -> Result<i64, E> {
        Ok(0)
    }
}

/// A proto `double` (a JSON number; `"NaN"`, `"Infinity"`, `"-Infinity"` and decimal strings
/// are accepted, and emitted for the non-finite values JSON numbers cannot carry).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Double(pub f64);

impl Serialize for Double {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.is_nan() {
            s.serialize_str("NaN")
        } else if v == f64::INFINITY {
            s.serialize_str("Infinity")
        } else if v == f64::NEG_INFINITY {
            s.serialize_str("-Infinity")
        } else {
            s.serialize_f64(v)
        }
    }
}

impl<'de> Deserialize<'de> for Double {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Double, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Double;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a double as a number or string")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Double, E> {
                Ok(Double(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Double, E> {
                Ok(Double(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Double, E> {
                Ok(Double(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Double, E> {
                match v {
                    "NaN" => Ok(Double(f64::NAN)),
                    "Infinity" => Ok(Double(f64::INFINITY)),
                    "-Infinity" => Ok(Double(f64::NEG_INFINITY)),
                    _ => v
                        .parse()
                        .map(Double)
                        .map_err(|_| E::custom(format_args!("{v:?} is not a double"))),
                }
            }
            fn visit_unit<E: de::Error>(self) -> Result<Double, E> {
                Ok(Double(0.0))
            }
        }
        d.deserialize_any(V)
    }
}

/// A `google.protobuf.Duration` in whole microseconds (rowkit's resolution): `"3600s"`,
/// `"1.5s"`, `"-0.001s"` in JSON. Emitted with 0, 3 or 6 fractional digits, as proto3 JSON
/// prints them; accepted with up to 9 (nanoseconds below a microsecond are dropped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DurationMicros(pub i64);

impl Serialize for DurationMicros {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let (secs, micros) = (abs / 1_000_000, abs % 1_000_000);
        if micros == 0 {
            s.collect_str(&format_args!("{sign}{secs}s"))
        } else if micros % 1000 == 0 {
            s.collect_str(&format_args!("{sign}{secs}.{:03}s", micros / 1000))
        } else {
            s.collect_str(&format_args!("{sign}{secs}.{micros:06}s"))
        }
    }
}

/// Parses `-?SECONDS(.FRACTION)?s` (at most 9 fraction digits) into microseconds.
fn parse_duration(text: &str) -> Option<i64> {
    let body = text.strip_suffix('s')?;
    let (negative, body) = match body.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, body),
    };
    let (secs, fraction) = body.split_once('.').unwrap_or((body, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if secs.is_empty() || !digits(secs) || !digits(fraction) || fraction.len() > 9 {
        return None;
    }
    if body.contains('.') && fraction.is_empty() {
        return None;
    }
    let secs: i64 = secs.parse().ok()?;
    // The first six fraction digits are microseconds; the rest (nanoseconds) are dropped.
    let mut micros: i64 = 0;
    for (i, b) in fraction.bytes().take(6).enumerate() {
        micros += i64::from(b - b'0') * 10_i64.pow(5 - i as u32);
    }
    let total = secs.checked_mul(1_000_000)?.checked_add(micros)?;
    Some(if negative { -total } else { total })
}

impl<'de> Deserialize<'de> for DurationMicros {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<DurationMicros, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DurationMicros;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration as a string of seconds ending in s, e.g. \"3600s\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<DurationMicros, E> {
                parse_duration(v).map(DurationMicros).ok_or_else(|| {
                    E::custom(format_args!(
                        "{v:?} is not a duration (seconds ending in s, e.g. \"3600s\" or \"1.5s\")"
                    ))
                })
            }
            fn visit_unit<E: de::Error>(self) -> Result<DurationMicros, E> {
                Ok(DurationMicros(0))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    fn de<T: for<'a> Deserialize<'a>>(s: &str) -> Result<T, serde_json::Error> {
        serde_json::from_str(s)
    }

    #[test]
    fn bytes_accept_both_alphabets_with_and_without_padding() {
        assert_eq!(encode_base64(b"q\\C"), "cVxD");
        assert_eq!(encode_base64(&[0xfb, 0xff]), "+/8=");
        for text in ["\"+/8=\"", "\"+/8\"", "\"-_8=\"", "\"-_8\""] {
            assert_eq!(de::<B64>(text).unwrap().0, vec![0xfb, 0xff], "{text}");
        }
        assert_eq!(de::<B64>("null").unwrap(), B64::default());
        let err = de::<B64>("\"!!\"").unwrap_err().to_string();
        assert!(err.contains("invalid base64"), "{err}");
        assert!(de::<B64>("12").is_err());
    }

    #[test]
    fn int64_is_a_string_and_accepts_numbers() {
        assert_eq!(serde_json::to_string(&Int64(-1)).unwrap(), "\"-1\"");
        assert_eq!(de::<Int64>("\"1000\"").unwrap().0, 1000);
        assert_eq!(de::<Int64>("1000").unwrap().0, 1000);
        assert_eq!(de::<Int64>("1e3").unwrap().0, 1000);
        assert_eq!(de::<Int64>("\"-9223372036854775808\"").unwrap().0, i64::MIN);
        for bad in [
            "\"9223372036854775808\"",
            "\"1.5\"",
            "1.5",
            "\"\"",
            "\"x\"",
            "true",
        ] {
            assert!(de::<Int64>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn int32_is_a_number_and_accepts_strings() {
        assert_eq!(serde_json::to_string(&Int32(-3)).unwrap(), "-3");
        assert_eq!(de::<Int32>("\"7\"").unwrap().0, 7);
        assert!(de::<Int32>("2147483648").is_err());
    }

    #[test]
    fn durations_are_seconds_strings() {
        for (micros, text) in [
            (3_600_000_000, "\"3600s\""),
            (1_500_000, "\"1.500s\""),
            (1_000, "\"0.001s\""),
            (1, "\"0.000001s\""),
            (-2_000_000, "\"-2s\""),
            (0, "\"0s\""),
        ] {
            assert_eq!(
                serde_json::to_string(&DurationMicros(micros)).unwrap(),
                text
            );
            assert_eq!(de::<DurationMicros>(text).unwrap().0, micros, "{text}");
        }
        assert_eq!(
            de::<DurationMicros>("\"1.000000999s\"").unwrap().0,
            1_000_000
        );
        assert_eq!(de::<DurationMicros>("\"0.25s\"").unwrap().0, 250_000);
        for bad in [
            "\"3600\"",
            "\"1.s\"",
            "\"s\"",
            "\"1.0000000001s\"",
            "3600",
            "\"x1s\"",
        ] {
            assert!(de::<DurationMicros>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn doubles_keep_their_exact_value() {
        for v in [0.1, 0.5, 1.0 / 3.0, 1e-300, 0.30000000000000004] {
            let text = serde_json::to_string(&Double(v)).unwrap();
            assert_eq!(de::<Double>(&text).unwrap().0, v);
        }
        assert!(de::<Double>("\"NaN\"").unwrap().0.is_nan());
        assert_eq!(
            serde_json::to_string(&Double(f64::INFINITY)).unwrap(),
            "\"Infinity\""
        );
        assert_eq!(de::<Double>("\"0.25\"").unwrap().0, 0.25);
    }
}
