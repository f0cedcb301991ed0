//! Literals: bool, int64, float64, text, blob (spec §2.3).

use alloc::string::String;
use alloc::vec::Vec;

use super::error::{ParseError, Part, Reason};
use super::gotext::{format_f64, parse_bool, parse_f64, parse_i64, parse_u8, trim_space};
use super::predicate::put_varint;
use super::uuid::Uuid;

/// The smallest int64 literal whose UUID the original can compute (−2^55).
pub const INT64_MIN: i64 = -(1 << 55);
/// The largest int64 literal whose UUID the original can compute (2^55 − 1).
pub const INT64_MAX: i64 = (1 << 55) - 1;

/// The value of a literal.
#[derive(Clone, Debug, PartialEq)]
pub enum LiteralValue {
    /// `type:bool`.
    Bool(bool),
    /// `type:int64` (always within [`INT64_MIN`]..=[`INT64_MAX`] inside a [`Literal`]).
    Int64(i64),
    /// `type:float64`.
    Float64(f64),
    /// `type:text`: raw bytes, no escaping.
    Text(Vec<u8>),
    /// `type:blob`.
    Blob(Vec<u8>),
}

/// A literal; int64 values are range-checked on construction.
#[derive(Clone, Debug, PartialEq)]
pub struct Literal(LiteralValue);

impl Literal {
    /// A literal of `value`; an int64 outside `[−2^55, 2^55−1]` is rejected.
    pub fn new(value: LiteralValue) -> Result<Literal, Reason> {
        if let LiteralValue::Int64(v) = value
            && !(INT64_MIN..=INT64_MAX).contains(&v)
        {
            return Err(Reason::Int64OutOfRange(v));
        }
        Ok(Literal(value))
    }

    /// The value.
    pub fn value(&self) -> &LiteralValue {
        &self.0
    }

    /// The type name (`bool`, `int64`, `float64`, `text`, `blob`).
    pub fn type_name(&self) -> &'static str {
        match self.0 {
            LiteralValue::Bool(_) => "bool",
            LiteralValue::Int64(_) => "int64",
            LiteralValue::Float64(_) => "float64",
            LiteralValue::Text(_) => "text",
            LiteralValue::Blob(_) => "blob",
        }
    }

    /// Parses the text form (original `literal.DefaultBuilder().Parse`, with errors for an
    /// unknown type and the inputs that panic in the original).
    pub fn parse(text: &[u8]) -> Result<Literal, ParseError> {
        let raw = trim_space(text);
        let err = |reason| ParseError::new(Part::Literal, reason, raw);
        match raw.first() {
            None => return Err(err(Reason::Empty)),
            Some(b'"') => {}
            Some(_) => return Err(err(Reason::BadStart)),
        }
        let marker = b"\"^^type:";
        let i = raw
            .windows(marker.len())
            .position(|w| w == marker)
            .filter(|&i| i > 0)
            .ok_or_else(|| err(Reason::MissingType))?;
        let v = &raw[1..i];
        let t = &raw[i + marker.len()..];
        let value = match t {
            b"bool" => {
                LiteralValue::Bool(parse_bool(v).ok_or_else(|| err(Reason::BadValue("bool")))?)
            }
            b"int64" => {
                LiteralValue::Int64(parse_i64(v).ok_or_else(|| err(Reason::BadValue("int64")))?)
            }
            b"float64" => {
                LiteralValue::Float64(parse_f64(v).ok_or_else(|| err(Reason::BadValue("float64")))?)
            }
            b"text" => LiteralValue::Text(v.to_vec()),
            b"blob" => {
                if v.len() < 2 {
                    return Err(err(Reason::BadValue("blob")));
                }
                let inner = &v[1..v.len() - 1];
                let mut bytes = Vec::new();
                if !inner.is_empty() {
                    for part in inner.split(|&c| c == b' ') {
                        bytes.push(parse_u8(part).ok_or_else(|| err(Reason::BadValue("blob")))?);
                    }
                }
                LiteralValue::Blob(bytes)
            }
            other => {
                return Err(err(Reason::UnknownType(
                    String::from_utf8_lossy(other).into_owned(),
                )));
            }
        };
        Literal::new(value).map_err(err)
    }

    /// The text of the value (between the quotes).
    pub fn value_text(&self) -> Vec<u8> {
        match &self.0 {
            LiteralValue::Bool(b) => if *b { "true" } else { "false" }.into(),
            LiteralValue::Int64(v) => alloc::format!("{v}").into_bytes(),
            LiteralValue::Float64(f) => format_f64(*f).into_bytes(),
            LiteralValue::Text(t) => t.clone(),
            LiteralValue::Blob(b) => {
                let parts: Vec<String> = b.iter().map(|x| alloc::format!("{x}")).collect();
                alloc::format!("[{}]", parts.join(" ")).into_bytes()
            }
        }
    }

    /// The text form `"<value>"^^type:<name>`.
    pub fn to_text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.push(b'"');
        out.extend_from_slice(&self.value_text());
        out.extend_from_slice(b"\"^^type:");
        out.extend_from_slice(self.type_name().as_bytes());
        out
    }

    /// The bytes the UUID hashes (the type is not part of them, quirk 5).
    pub fn uuid_input(&self) -> Vec<u8> {
        self.with_uuid_input(|parts| parts.concat())
    }

    /// Calls `f` with the bytes the UUID hashes (one part), borrowed or on the stack.
    pub(crate) fn with_uuid_input<R>(&self, f: impl FnOnce(&[&[u8]]) -> R) -> R {
        match &self.0 {
            LiteralValue::Bool(b) => f(&[if *b { b"true" } else { b"false" }]),
            LiteralValue::Int64(v) => f(&[&put_varint::<8>(*v).unwrap_or([0; 8])]),
            LiteralValue::Float64(x) => f(&[&x.to_bits().to_le_bytes()]),
            LiteralValue::Text(t) | LiteralValue::Blob(t) => f(&[t]),
        }
    }

    /// The UUID.
    pub fn uuid(&self) -> Uuid {
        self.with_uuid_input(Uuid::v5_of)
    }
}
