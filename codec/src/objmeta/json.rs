//! JSON documents with JavaScript semantics (`objmeta.md` 5.3): objects keep member order
//! (unknown members are preserved), numbers are doubles, and [`Json::stringify`] writes
//! exactly what `JSON.stringify` writes (integer-like keys first, no whitespace).
//!
//! ```
//! use rowkit_codec::objmeta::json::Json;
//!
//! let v = Json::parse(r#"{"b":1.0,"a":[true,null],"2":"x","1":-0}"#).unwrap();
//! assert_eq!(v.stringify(), r#"{"1":0,"2":"x","b":1,"a":[true,null]}"#);
//! ```

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::{self, Write};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::error::ObjmetaCodecError;

/// A JSON value as JavaScript holds it.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Json {
    /// `null`.
    #[default]
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A double (non-finite values are written `null`).
    Number(f64),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, members in insertion order.
    Object(JsonObject),
}

/// An object: members in insertion order, names unique.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct JsonObject {
    members: Vec<(String, Json)>,
}

impl JsonObject {
    /// An empty object.
    pub fn new() -> JsonObject {
        JsonObject::default()
    }

    /// The member named `name`.
    pub fn get(&self, name: &str) -> Option<&Json> {
        self.members.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The member named `name`, mutably.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Json> {
        self.members
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// JavaScript "set property": keeps the member's position if it exists, else appends.
    pub fn set(&mut self, name: impl Into<String>, value: Json) {
        let name = name.into();
        match self.get_mut(&name) {
            Some(v) => *v = value,
            None => self.members.push((name, value)),
        }
    }

    /// Removes a member; returns it.
    pub fn remove(&mut self, name: &str) -> Option<Json> {
        let i = self.members.iter().position(|(n, _)| n == name)?;
        Some(self.members.remove(i).1)
    }

    /// Members in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Json)> {
        self.members.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there is no member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Members in JavaScript property order: integer-like names ascending, then the others
    /// in insertion order.
    pub fn js_order(&self) -> Vec<(&str, &Json)> {
        let mut ints: Vec<(u32, &str, &Json)> = Vec::new();
        let mut rest = Vec::new();
        for (n, v) in &self.members {
            match array_index(n) {
                Some(i) => ints.push((i, n, v)),
                None => rest.push((n.as_str(), v)),
            }
        }
        ints.sort_by_key(|(i, _, _)| *i);
        ints.into_iter()
            .map(|(_, n, v)| (n, v))
            .chain(rest)
            .collect()
    }
}

/// A canonical decimal below 2^32 − 1 (JavaScript's array-index property names).
fn array_index(name: &str) -> Option<u32> {
    if name.is_empty() || (name.len() > 1 && name.starts_with('0')) {
        return None;
    }
    if !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse::<u32>().ok().filter(|&i| i < u32::MAX)
}

impl FromIterator<(String, Json)> for JsonObject {
    fn from_iter<I: IntoIterator<Item = (String, Json)>>(iter: I) -> Self {
        let mut o = JsonObject::new();
        for (n, v) in iter {
            o.set(n, v);
        }
        o
    }
}

impl Json {
    /// `JSON.parse`: numbers become doubles; a repeated member keeps its first position and
    /// its last value.
    pub fn parse(text: &str) -> Result<Json, ObjmetaCodecError> {
        serde_json::from_str(text).map_err(|e| ObjmetaCodecError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    }

    /// `JSON.stringify`.
    pub fn stringify(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => write_number(*n, out),
            Json::String(s) => write_string(s, out),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(o) => {
                out.push('{');
                for (i, (n, v)) in o.js_order().into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(n, out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// JavaScript truthiness (`objmeta.md` 2).
    pub fn truthy(&self) -> bool {
        match self {
            Json::Null => false,
            Json::Bool(b) => *b,
            Json::Number(n) => *n != 0.0 && !n.is_nan(),
            Json::String(s) => !s.is_empty(),
            Json::Array(_) | Json::Object(_) => true,
        }
    }

    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&JsonObject> {
        match self {
            Json::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The object, mutably, if this is one.
    pub fn as_object_mut(&mut self) -> Option<&mut JsonObject> {
        match self {
            Json::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// The member `name` of an object (`None` for non-objects).
    pub fn get(&self, name: &str) -> Option<&Json> {
        self.as_object()?.get(name)
    }

    /// Whether member `name` is truthy (absent = falsy).
    pub fn member_truthy(&self, name: &str) -> bool {
        self.get(name).is_some_and(Json::truthy)
    }

    /// A string value.
    pub fn str(s: impl Into<String>) -> Json {
        Json::String(s.into())
    }
}

/// `Number.prototype.toString` for doubles (shortest round trip).
fn write_number(n: f64, out: &mut String) {
    if !n.is_finite() {
        out.push_str("null");
    } else if n == 0.0 {
        out.push('0');
    } else if n.abs() >= 1e21 || n.abs() < 1e-6 {
        // Exponent form: Rust writes `1e21` / `1.5e-7`; JavaScript adds `+` to positive exponents.
        let s = alloc::format!("{n:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => {
                let _ = write!(out, "{m}e+{e}");
            }
            _ => out.push_str(&s),
        }
    } else {
        let _ = write!(out, "{n}");
    }
}

/// `JSON.stringify` of a string.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Number(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut o = JsonObject::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            o.set(k, v);
        }
        Ok(Json::Object(o))
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) if !n.is_finite() => s.serialize_unit(),
            Json::Number(n) if n.abs() < 9.007_199_254_740_992e15 && (*n as i64) as f64 == *n => {
                s.serialize_i64(*n as i64)
            }
            Json::Number(n) => s.serialize_f64(*n),
            Json::String(v) => s.serialize_str(v),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(o) => {
                let mut map = s.serialize_map(Some(o.len()))?;
                for (n, v) in o.js_order() {
                    map.serialize_entry(n, v)?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_text() {
        let v = Json::parse(r#"{"a":1,"a2":"\u0001\n","a":2, "x": 1e21, "y": 1.5e-7, "z": 0.5}"#)
            .unwrap();
        assert_eq!(
            v.stringify(),
            r#"{"a":2,"a2":"\u0001\n","x":1e+21,"y":1.5e-7,"z":0.5}"#
        );
        assert!(Json::parse("{").is_err());
        assert!(!Json::str("").truthy());
        assert!(Json::str("false").truthy());
    }
}
