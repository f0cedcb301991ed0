//! The Go `encoding/gob` form of an OrderedParamSet, as stored in `O:OPS`
//! (`spec/tracestore.md` 7): a writer that produces exactly Go's bytes and a reader for every
//! layout Go can produce (any type ids, any map order), rejecting everything else.
//!
//! Hand-written on purpose: no Rust gob crate writes Go's exact bytes (type ids, field order,
//! Go's map encoding) that the trace store's vectors pin, and the reader must accept exactly
//! the layouts Go produces; a general gob or serde crate would be a second format to police.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use super::{CodecError, OrderedParamSet, ParamSet};

/// The type definitions Go's fresh encoder sends before an OrderedParamSet (type ids 65-67).
const TYPEDEFS: &[u8] = b"\x39\xff\x81\x03\x01\x01\x0fOrderedParamSet\x01\xff\x82\x00\x01\x02\x01\x08KeyOrder\x01\xff\x84\x00\x01\x08ParamSet\x01\xff\x86\x00\x00\x00\x16\xff\x83\x02\x01\x01\x08[]string\x01\xff\x84\x00\x01\x0c\x00\x00\x19\xff\x85\x04\x01\x01\x08ParamSet\x01\xff\x86\x00\x01\x0c\x01\xff\x84\x00\x00";

/// The struct's type id in [`TYPEDEFS`].
const OPS_TYPE_ID: i64 = 65;
/// Gob's predefined type id of `string`.
const STRING_TYPE_ID: i64 = 6;

fn put_uint(out: &mut Vec<u8>, x: u64) {
    if x < 128 {
        out.push(x as u8);
        return;
    }
    let bytes = x.to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count();
    let n = 8 - skip;
    out.push((256 - n) as u8);
    out.extend_from_slice(&bytes[skip..]);
}

fn put_int(out: &mut Vec<u8>, i: i64) {
    let u = if i >= 0 {
        (i as u64) << 1
    } else {
        ((!i as u64) << 1) | 1
    };
    put_uint(out, u);
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    put_uint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn put_strings(out: &mut Vec<u8>, list: &[String]) {
    put_uint(out, list.len() as u64);
    for s in list {
        put_string(out, s);
    }
}

/// Encodes an OPS exactly as Go's `gob.NewEncoder(buf).Encode(ops)`, with map entries in
/// KeyOrder order (then any other keys in byte order).
pub fn encode_ops_gob(ops: &OrderedParamSet) -> Vec<u8> {
    let mut payload = Vec::new();
    put_int(&mut payload, OPS_TYPE_ID);
    let mut delta = 1;
    if !ops.key_order().is_empty() {
        put_uint(&mut payload, 1);
        put_strings(&mut payload, ops.key_order());
    } else {
        delta = 2;
    }
    put_uint(&mut payload, delta);
    put_uint(&mut payload, ops.param_set().len() as u64);
    let mut written: BTreeSet<&str> = BTreeSet::new();
    for key in ops.key_order() {
        if written.contains(key.as_str()) {
            continue;
        }
        if let Some(values) = ops.param_set().get(key) {
            put_string(&mut payload, key);
            put_strings(&mut payload, values);
            written.insert(key);
        }
    }
    for (key, values) in ops.param_set() {
        if !written.contains(key.as_str()) {
            put_string(&mut payload, key);
            put_strings(&mut payload, values);
        }
    }
    payload.push(0);
    let mut out = Vec::with_capacity(TYPEDEFS.len() + payload.len() + 9);
    out.extend_from_slice(TYPEDEFS);
    put_uint(&mut out, payload.len() as u64);
    out.extend_from_slice(&payload);
    out
}

/// The `O:H` token of stored OPS bytes: lowercase hex MD5.
pub fn ops_hash(bytes: &[u8]) -> String {
    use md5::Digest;
    hex::encode(md5::Md5::digest(bytes))
}

/// A gob cursor over one message; every failure is `corrupted paramset` at an offset.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Offset of `bytes[0]` in the whole input, for error offsets.
    base: usize,
}

fn corrupt(offset: usize, detail: &'static str) -> CodecError {
    CodecError::CorruptedParamset { offset, detail }
}

impl<'a> Reader<'a> {
    fn err(&self, detail: &'static str) -> CodecError {
        corrupt(self.base + self.pos, detail)
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    fn byte(&mut self) -> Result<u8, CodecError> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| self.err("unexpected end"))?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if n > self.remaining() {
            return Err(self.err("length past the end"));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn uint(&mut self) -> Result<u64, CodecError> {
        let b = self.byte()?;
        if b < 128 {
            return Ok(u64::from(b));
        }
        let n = 256 - usize::from(b);
        if n > 8 {
            return Err(self.err("unsigned integer out of range"));
        }
        let bytes = self.take(n)?;
        Ok(bytes.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    fn int(&mut self) -> Result<i64, CodecError> {
        let u = self.uint()?;
        Ok(if u & 1 == 1 {
            !((u >> 1) as i64)
        } else {
            (u >> 1) as i64
        })
    }

    /// A count of items, each at least one byte long, so it is bounded by what is left.
    fn count(&mut self) -> Result<usize, CodecError> {
        let n = self.uint()?;
        if n > self.remaining() as u64 {
            return Err(self.err("count larger than the message"));
        }
        Ok(n as usize)
    }

    fn string(&mut self) -> Result<String, CodecError> {
        let n = self.uint()?;
        if n > self.remaining() as u64 {
            return Err(self.err("string past the end"));
        }
        let start = self.pos;
        let bytes = self.take(n as usize)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| corrupt(self.base + start, "string not UTF-8"))
    }

    fn strings(&mut self) -> Result<Vec<String>, CodecError> {
        let n = self.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.string()?);
        }
        Ok(out)
    }

    /// Walks a struct's field deltas, calling `field(self, number)` for each; ends at `0`.
    fn fields(
        &mut self,
        max_fields: u64,
        mut field: impl FnMut(&mut Self, u64) -> Result<(), CodecError>,
    ) -> Result<(), CodecError> {
        let mut number: i64 = -1;
        loop {
            let delta = self.uint()?;
            if delta == 0 {
                return Ok(());
            }
            let next = number
                .checked_add(i64::try_from(delta).map_err(|_| self.err("field delta too large"))?)
                .ok_or_else(|| self.err("field delta too large"))?;
            if next as u64 >= max_fields {
                return Err(self.err("field number out of range"));
            }
            number = next;
            field(self, number as u64)?;
        }
    }

    /// `CommonType{Name, Id}`.
    fn common_type(&mut self) -> Result<(String, i64), CodecError> {
        let mut name = String::new();
        let mut id = 0;
        self.fields(2, |r, f| {
            match f {
                0 => name = r.string()?,
                _ => id = r.int()?,
            }
            Ok(())
        })?;
        Ok((name, id))
    }
}

/// A type definition the stream carried.
#[derive(Clone, Debug)]
enum WireType {
    Slice {
        elem: i64,
    },
    Struct {
        fields: Vec<(String, i64)>,
    },
    Map {
        key: i64,
        elem: i64,
    },
    /// Arrays and (un)marshaler types: legal gob, never part of this schema.
    Other,
}

fn read_wire_type(r: &mut Reader<'_>) -> Result<(i64, WireType), CodecError> {
    let mut result: Option<(i64, WireType)> = None;
    r.fields(7, |r, f| {
        let parsed = match f {
            // arrayType{CommonType, Elem, Len}
            0 => {
                let mut id = 0;
                r.fields(3, |r, g| {
                    match g {
                        0 => id = r.common_type()?.1,
                        _ => {
                            r.int()?;
                        }
                    }
                    Ok(())
                })?;
                (id, WireType::Other)
            }
            // sliceType{CommonType, Elem}
            1 => {
                let (mut id, mut elem) = (0, 0);
                r.fields(2, |r, g| {
                    match g {
                        0 => id = r.common_type()?.1,
                        _ => elem = r.int()?,
                    }
                    Ok(())
                })?;
                (id, WireType::Slice { elem })
            }
            // structType{CommonType, Field []fieldType{Name, Id}}
            2 => {
                let mut id = 0;
                let mut fields = Vec::new();
                r.fields(2, |r, g| {
                    match g {
                        0 => id = r.common_type()?.1,
                        _ => {
                            let n = r.count()?;
                            for _ in 0..n {
                                let (mut name, mut fid) = (String::new(), 0);
                                r.fields(2, |r, h| {
                                    match h {
                                        0 => name = r.string()?,
                                        _ => fid = r.int()?,
                                    }
                                    Ok(())
                                })?;
                                fields.push((name, fid));
                            }
                        }
                    }
                    Ok(())
                })?;
                (id, WireType::Struct { fields })
            }
            // mapType{CommonType, Key, Elem}
            3 => {
                let (mut id, mut key, mut elem) = (0, 0, 0);
                r.fields(3, |r, g| {
                    match g {
                        0 => id = r.common_type()?.1,
                        1 => key = r.int()?,
                        _ => elem = r.int()?,
                    }
                    Ok(())
                })?;
                (id, WireType::Map { key, elem })
            }
            // gobEncoderType / binary / text marshaler: {CommonType}
            _ => {
                let mut id = 0;
                r.fields(1, |r, _| {
                    id = r.common_type()?.1;
                    Ok(())
                })?;
                (id, WireType::Other)
            }
        };
        result = Some(parsed);
        Ok(())
    })?;
    result.ok_or_else(|| r.err("empty type definition"))
}

/// How a field of the OPS struct is decoded.
#[derive(Clone, Copy)]
enum FieldKind {
    KeyOrder,
    ParamSet,
}

/// Decodes the gob of an OrderedParamSet as written by any Go encoder: type ids are resolved
/// from the stream, fields by name, map entries in any order. Anything outside the schema,
/// invalid UTF-8 or trailing bytes is `corrupted paramset`.
pub fn decode_ops_gob(bytes: &[u8]) -> Result<OrderedParamSet, CodecError> {
    let mut types: BTreeMap<i64, WireType> = BTreeMap::new();
    let mut outer = Reader {
        bytes,
        pos: 0,
        base: 0,
    };
    loop {
        if outer.at_end() {
            return Err(outer.err("no value in the stream"));
        }
        let len = outer.uint()?;
        if len == 0 || len > outer.remaining() as u64 {
            return Err(outer.err("bad message length"));
        }
        let base = outer.pos;
        let payload = outer.take(len as usize)?;
        let mut r = Reader {
            bytes: payload,
            pos: 0,
            base,
        };
        let type_id = r.int()?;
        if type_id < 0 {
            let (id, wire) = read_wire_type(&mut r)?;
            // i64::MIN has no negation: no definition can match it.
            if type_id.checked_neg() != Some(id) {
                return Err(r.err("type definition id mismatch"));
            }
            if !r.at_end() {
                return Err(r.err("extra data in a type definition"));
            }
            types.insert(id, wire);
            continue;
        }
        let ops = decode_value(&mut r, type_id, &types)?;
        if !r.at_end() {
            return Err(r.err("extra data in the value"));
        }
        if !outer.at_end() {
            return Err(outer.err("trailing bytes after the value"));
        }
        return Ok(ops);
    }
}

fn decode_value(
    r: &mut Reader<'_>,
    type_id: i64,
    types: &BTreeMap<i64, WireType>,
) -> Result<OrderedParamSet, CodecError> {
    let Some(WireType::Struct { fields }) = types.get(&type_id) else {
        return Err(r.err("value is not a defined struct"));
    };
    let is_string_slice = |id: &i64| matches!(types.get(id), Some(WireType::Slice { elem }) if *elem == STRING_TYPE_ID);
    let mut kinds = Vec::with_capacity(fields.len());
    for (name, id) in fields {
        let kind = match name.as_str() {
            "KeyOrder" if is_string_slice(id) => FieldKind::KeyOrder,
            "ParamSet" => match types.get(id) {
                Some(WireType::Map { key, elem })
                    if *key == STRING_TYPE_ID && is_string_slice(elem) =>
                {
                    FieldKind::ParamSet
                }
                _ => return Err(r.err("ParamSet is not a map of string lists")),
            },
            _ => return Err(r.err("unexpected struct field")),
        };
        kinds.push(kind);
    }
    let mut key_order = Vec::new();
    let mut param_set = ParamSet::new();
    r.fields(kinds.len() as u64, |r, f| {
        let kind = kinds
            .get(f as usize)
            .copied()
            .ok_or_else(|| r.err("field number out of range"))?;
        match kind {
            FieldKind::KeyOrder => key_order = r.strings()?,
            FieldKind::ParamSet => {
                let n = r.count()?;
                for _ in 0..n {
                    let key = r.string()?;
                    let values = r.strings()?;
                    param_set.insert(key, values);
                }
            }
        }
        Ok(())
    })?;
    // A KeyOrder key with no map entry keeps no entry: lookups treat it as an empty list.
    Ok(OrderedParamSet::from_parts(key_order, param_set))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uint_encoding() {
        let mut v = Vec::new();
        put_int(&mut v, 65);
        assert_eq!(v, [0xff, 0x82]);
        v.clear();
        put_int(&mut v, -65);
        assert_eq!(v, [0xff, 0x81]);
        v.clear();
        put_uint(&mut v, 256);
        assert_eq!(v, [0xfe, 1, 0]);
    }

    #[test]
    fn a_type_definition_numbered_i64_min_is_an_error() {
        // Found by the tracestore fuzz target: a type id of i64::MIN has no negation.
        let input = [
            0x10, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0xff, 0x01, 0x00,
            0xff, 0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        assert!(decode_ops_gob(&input).is_err());
    }

    #[test]
    fn garbage_never_panics() {
        let good = encode_ops_gob(&OrderedParamSet::new());
        for cut in 0..good.len() {
            assert!(decode_ops_gob(&good[..cut]).is_err());
        }
        let mut seed = 1u64;
        for _ in 0..2000 {
            let mut b = good.clone();
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let i = (seed >> 33) as usize % b.len();
            b[i] ^= (seed >> 8) as u8 | 1;
            let _ = decode_ops_gob(&b);
        }
    }
}
