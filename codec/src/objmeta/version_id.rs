//! Arsenal version ids (`objmeta.md` 3): generation, the "infinite" id, and the external
//! base62 / hex encodings used at the API edge. Keys and documents always hold raw ids.
//!
//! Hand-written on purpose: Arsenal's "base62" is not a base62 crate's encoding of bytes but
//! two 10-digit decimal parts as base62 integers padded to 6, then base-x of the rest padded
//! to 20 ([`base62_encode`]); ids must be byte-equal to Arsenal's, which no crate produces.
//!
//! ```
//! use rowkit_codec::objmeta::version_id::{VersionIdGenerator, encode, decode};
//!
//! let mut g = VersionIdGenerator::default();
//! let id = g.generate_with_info(1_700_000_000_001_000, "4242.0", "RG001", None);
//! assert_eq!(id, "98299999999998999999RG001  4242.0");
//! let short = "98299999999998999999RG001  ";
//! assert_eq!(encode(short), "aJfG35aUGMFx00000000001I4j3QKItW");
//! assert_eq!(decode("aJfG35aUGMFx00000000001I4j3QKItW").unwrap(), short);
//! ```

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::error::ObjmetaCodecError;
use crate::digits::decimal;

/// The base62 alphabet of both Arsenal encoders: `0-9a-zA-Z`.
const ALPHABET: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
/// `99999999999999`: the timestamp part is this minus the ms time, so newer ids sort first.
const TS_MAX: i64 = 99_999_999_999_999;
/// `999999`: the sequence part is this minus the per-ms counter.
const SEQ_MAX: i64 = 999_999;

/// Per-process generator state (`objmeta.md` 3.2): Arsenal's `lastTimestamp`, `lastSeq` and the
/// backend's `uidCounter`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionIdGenerator {
    /// The ms time of the last id.
    pub last_timestamp: i64,
    /// How many ids were generated before in that ms.
    pub last_seq: i64,
    /// The backend's counter appended to the pid as the id's info.
    pub uid_counter: u64,
}

impl VersionIdGenerator {
    /// Arsenal's `generateVersionId(info, rg)` at `now_us`: advances `last_timestamp` /
    /// `last_seq` and returns the raw id. `encoding_type` is `S3_VERSION_ID_ENCODING_TYPE`:
    /// the info is kept only when it is unset or `hex`.
    pub fn generate_with_info(
        &mut self,
        now_us: i64,
        info: &str,
        replication_group_id: &str,
        encoding_type: Option<&str>,
    ) -> String {
        let mut id = self.next_id_head(now_us, replication_group_id, info.len());
        if keeps_info(encoding_type) {
            id.extend_from_slice(info.as_bytes());
        }
        into_string(id)
    }

    /// The backend wrapper: info = `"<pid>.<uidCounter>"`, then `uidCounter += 1` (also when
    /// the info is dropped).
    pub fn generate(
        &mut self,
        now_us: i64,
        pid: u64,
        replication_group_id: &str,
        encoding_type: Option<&str>,
    ) -> String {
        let counter = self.uid_counter;
        self.uid_counter = self.uid_counter.wrapping_add(1);
        // The info is written straight into the id: up to 20 digits, '.', 20 digits.
        let mut id = self.next_id_head(now_us, replication_group_id, 41);
        if keeps_info(encoding_type) {
            let mut buf = [0u8; 20];
            id.extend_from_slice(decimal(pid, &mut buf));
            id.push(b'.');
            id.extend_from_slice(decimal(counter, &mut buf));
        }
        into_string(id)
    }

    /// Advances `last_timestamp` / `last_seq` to `now_us` and returns the bytes of
    /// `ts14 ‖ seq6 ‖ rg7` with room for `info_len` more.
    fn next_id_head(
        &mut self,
        now_us: i64,
        replication_group_id: &str,
        info_len: usize,
    ) -> Vec<u8> {
        let t = now_us.div_euclid(1000);
        self.last_seq = if self.last_timestamp == t {
            self.last_seq.wrapping_add(1)
        } else {
            0
        };
        self.last_timestamp = t;
        let mut id = Vec::with_capacity(27 + info_len);
        let mut buf = [0u8; 21];
        push_pad_left(&mut id, i64_text(TS_MAX.wrapping_sub(t), &mut buf), 14);
        push_pad_left(
            &mut id,
            i64_text(SEQ_MAX.wrapping_sub(self.last_seq), &mut buf),
            6,
        );
        push_pad_right_spaces(&mut id, replication_group_id, 7);
        id
    }
}

/// Whether the info is kept for `S3_VERSION_ID_ENCODING_TYPE`: when it is unset or `hex`.
fn keeps_info(encoding_type: Option<&str>) -> bool {
    matches!(encoding_type, None | Some("hex"))
}

/// The id built as bytes: ASCII digits and spaces around UTF-8 taken from `&str`s, so it is
/// UTF-8 (checked once here rather than per part).
fn into_string(id: Vec<u8>) -> String {
    String::from_utf8(id).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The decimal text of a signed `v` (a `-` before the digits when negative).
fn i64_text(v: i64, buf: &mut [u8; 21]) -> &[u8] {
    let mut digits = [0u8; 20];
    let d = decimal(v.unsigned_abs(), &mut digits);
    let end = buf.len();
    let start = end - d.len() - usize::from(v < 0);
    buf[end - d.len()..].copy_from_slice(d);
    if v < 0 {
        buf[start] = b'-';
    }
    &buf[start..]
}

/// The ms time a raw id was generated at: `99999999999999 − ts14` (`objmeta.md` 3.1), or
/// `None` when the first 14 characters are not decimal digits (e.g. a caller-made id). Used to
/// tell when a placeholder master's repair was due.
///
/// ```
/// use rowkit_codec::objmeta::version_id::generated_at_ms;
///
/// assert_eq!(generated_at_ms("98299999999998999999RG001  4242.0"), Some(1_700_000_000_001));
/// assert_eq!(generated_at_ms("lonevid"), None);
/// ```
pub fn generated_at_ms(raw: &str) -> Option<i64> {
    let ts = raw
        .get(..14)
        .filter(|t| t.bytes().all(|b| b.is_ascii_digit()))?;
    ts.parse::<i64>().ok().map(|n| TS_MAX - n)
}

/// `getInfVid(rg)`: the greatest possible id for a replication group.
pub fn inf_vid(replication_group_id: &str) -> String {
    let mut id = b"99999999999999999999".to_vec();
    push_pad_right_spaces(&mut id, replication_group_id, 7);
    into_string(id)
}

/// `(c × n ‖ v).slice(−n)` with `c = '0'`, for an ASCII `v`.
fn pad_left(v: &str, n: usize) -> String {
    let mut s = Vec::with_capacity(n);
    push_pad_left(&mut s, v.as_bytes(), n);
    into_string(s)
}

/// Appends `(c × n ‖ v).slice(−n)` with `c = '0'`: the last `n` characters. `v` is ASCII
/// (digits, `-` and the base62 alphabet), one byte per UTF-16 unit.
fn push_pad_left(out: &mut Vec<u8>, v: &[u8], n: usize) {
    if v.len() < n {
        out.extend(core::iter::repeat_n(b'0', n - v.len()));
        out.extend_from_slice(v);
    } else {
        out.extend_from_slice(&v[v.len() - n..]);
    }
}

/// Appends `(v ‖ ' ' × n).slice(0, n)` in UTF-16 code units.
fn push_pad_right_spaces(out: &mut Vec<u8>, v: &str, n: usize) {
    if v.is_ascii() {
        // One byte per UTF-16 unit: no pair can be split.
        let kept = &v.as_bytes()[..v.len().min(n)];
        out.extend_from_slice(kept);
        out.extend(core::iter::repeat_n(b' ', n - kept.len()));
        return;
    }
    let mut units: Vec<u16> = v.encode_utf16().collect();
    units.extend(core::iter::repeat_n(u16::from(b' '), n));
    units.truncate(n);
    out.extend_from_slice(String::from_utf16_lossy(&units).as_bytes());
}

/// The external form of a raw id: base62 for 27-unit ids, else lowercase hex of its UTF-8.
pub fn encode(raw: &str) -> String {
    if raw.encode_utf16().count() == 27 {
        base62_encode(raw)
    } else {
        hex::encode(raw.as_bytes())
    }
}

/// Arsenal's `base62Encode` of a 27-character id.
pub fn base62_encode(raw: &str) -> String {
    let units: Vec<u16> = raw.encode_utf16().collect();
    let part = |a: usize, b: usize| {
        String::from_utf16_lossy(units.get(a..b.min(units.len())).unwrap_or(&[]))
    };
    let n1 = js_number(&part(0, 10));
    let n2 = js_number(&part(10, 20));
    let rest = part(20, units.len());
    let mut out = pad_left(&b62_int(n1), 6);
    out.push_str(&pad_left(&b62_int(n2), 6));
    out.push_str(&pad_left(&base_x_encode(rest.as_bytes()), 20));
    out
}

/// `Number(s)` for the digit strings of generated ids; anything else counts as 0 (non-numeric
/// parts are outside what Arsenal generates).
fn js_number(s: &str) -> u64 {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse().unwrap_or(0)
    } else {
        0
    }
}

/// `base62.encode(int)`: most significant digit first, `"0"` for 0.
fn b62_int(mut n: u64) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(ALPHABET[(n % 62) as usize]);
        n /= 62;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    String::from_utf8_lossy(&digits).into_owned()
}

/// `base-x` encode: one `0` per leading zero byte, then the big-integer value in base 62.
fn base_x_encode(bytes: &[u8]) -> String {
    let zeros = bytes.iter().take_while(|&&b| b == 0).count();
    // Little-endian base-62 digits of the value.
    let mut digits: Vec<u8> = Vec::new();
    for &byte in &bytes[zeros..] {
        let mut carry = u32::from(byte);
        for d in digits.iter_mut() {
            carry += u32::from(*d) << 8;
            *d = (carry % 62) as u8;
            carry /= 62;
        }
        while carry > 0 {
            digits.push((carry % 62) as u8);
            carry /= 62;
        }
    }
    let mut out = "0".repeat(zeros);
    out.extend(
        digits
            .iter()
            .rev()
            .map(|&d| char::from(ALPHABET[d as usize])),
    );
    out
}

/// `base-x` decode; `Err(offset)` at the first character outside the alphabet.
fn base_x_decode(text: &[u16]) -> Result<Vec<u8>, usize> {
    let zeros = text.iter().take_while(|&&c| c == u16::from(b'0')).count();
    let mut bytes: Vec<u8> = Vec::new(); // little-endian base 256
    for (i, &c) in text.iter().enumerate().skip(zeros) {
        let value = ALPHABET.iter().position(|&a| u16::from(a) == c).ok_or(i)? as u32;
        let mut carry = value;
        for b in bytes.iter_mut() {
            carry += u32::from(*b) * 62;
            *b = (carry & 0xff) as u8;
            carry >>= 8;
        }
        while carry > 0 {
            bytes.push((carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    let mut out = alloc::vec![0u8; zeros];
    out.extend(bytes.iter().rev());
    Ok(out)
}

/// Arsenal's `base62Decode`; the length check of [`decode`] is not applied here.
pub fn base62_decode(encoded: &str) -> Result<String, ObjmetaCodecError> {
    let units: Vec<u16> = encoded.encode_utf16().collect();
    let int62 = |part: &[u16]| -> i64 {
        part.iter().fold(0i64, |acc, &c| {
            let c = i64::from(c);
            let digit = if c < 58 {
                c - 48
            } else if c < 91 {
                c - 29
            } else {
                c - 87
            };
            acc.wrapping_mul(62).wrapping_add(digit)
        })
    };
    let n1 = int62(units.get(..6).unwrap_or(&units));
    let n2 = int62(units.get(6..12).unwrap_or(&[]));
    let rest = units.get(12..).unwrap_or(&[]);
    let stripped_from = rest
        .iter()
        .position(|&c| c != u16::from(b'0'))
        .unwrap_or(rest.len());
    let bytes = base_x_decode(&rest[stripped_from..]).map_err(|i| {
        ObjmetaCodecError::NonBase62Character {
            offset: 12 + stripped_from + i,
        }
    })?;
    let mut out = pad_left(&n1.to_string(), 10);
    out.push_str(&pad_left(&n2.to_string(), 10));
    out.push_str(&String::from_utf8_lossy(&bytes));
    Ok(out)
}

/// The raw id of an external one (`objmeta.md` 3.3).
pub fn decode(encoded: &str) -> Result<String, ObjmetaCodecError> {
    let len = encoded.encode_utf16().count();
    if len == 32 {
        let raw = base62_decode(encoded)?;
        if raw.encode_utf16().count() != 27 {
            return Err(ObjmetaCodecError::NotLength27 {
                input: encoded.to_string(),
            });
        }
        Ok(raw)
    } else if len > 32 {
        let bytes = node_hex_decode(encoded);
        if bytes.is_empty() {
            return Err(ObjmetaCodecError::InvalidDecodedValue);
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    } else {
        Err(ObjmetaCodecError::CannotDecodeStr { len })
    }
}

/// Node's `Buffer.from(s, 'hex')`: pairs until the first invalid one; an odd last char is
/// ignored.
fn node_hex_decode(s: &str) -> Vec<u8> {
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.as_bytes()
        .chunks_exact(2)
        .map_while(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples() {
        assert_eq!(
            base62_encode("98376906954349999999RG001  145.20.5"),
            "aJLWKz4Ko9IjBBgXKj5KQT2G9UHv0g7P"
        );
        assert_eq!(inf_vid("RG001"), "99999999999999999999RG001  ");
        assert_eq!(encode("null"), "6e756c6c");
        assert_eq!(
            decode("6e756c6c"),
            Err(ObjmetaCodecError::CannotDecodeStr { len: 8 })
        );
    }

    /// The JS rules of `objmeta.md` 3.1 written out with `format!` and UTF-16 slices: the
    /// reference the allocation-free generator must equal.
    fn reference_id(t: i64, seq: i64, rg: &str, info: &str) -> String {
        let last = |s: String, n: usize| {
            let units: Vec<u16> = s.encode_utf16().collect();
            String::from_utf16_lossy(&units[units.len().saturating_sub(n)..])
        };
        let ts = last(
            alloc::format!("{}{}", "0".repeat(14), TS_MAX.wrapping_sub(t)),
            14,
        );
        let sq = last(
            alloc::format!("{}{}", "0".repeat(6), SEQ_MAX.wrapping_sub(seq)),
            6,
        );
        let rg_units: Vec<u16> = alloc::format!("{rg}       ")
            .encode_utf16()
            .take(7)
            .collect();
        alloc::format!("{ts}{sq}{}{info}", String::from_utf16_lossy(&rg_units))
    }

    #[test]
    fn generation_matches_js_padding_rules() {
        let times_ms = [
            0,
            1,
            1_700_000_000_000,
            TS_MAX,
            TS_MAX + 5,
            -1,
            -1_000_000_000_000_000,
        ];
        let rgs = [
            "RG001",
            "",
            "RG",
            "LONGER-THAN-SEVEN",
            "é",
            "aaaaaa\u{1F600}",
            "ab\u{1F600}",
        ];
        for t in times_ms {
            for rg in rgs {
                for seq_before in [0, 5, SEQ_MAX, SEQ_MAX + 3] {
                    for encoding in [None, Some("hex"), Some("base62")] {
                        let mut g = VersionIdGenerator {
                            last_timestamp: t,
                            last_seq: seq_before,
                            uid_counter: 41,
                        };
                        let seq = seq_before + 1;
                        let id = g.generate(t * 1000 + 999, 4242, rg, encoding);
                        let info = if encoding == Some("base62") {
                            ""
                        } else {
                            "4242.41"
                        };
                        assert_eq!(id, reference_id(t, seq, rg, info), "{t} {rg:?} {seq}");
                        assert_eq!((g.last_timestamp, g.last_seq, g.uid_counter), (t, seq, 42));
                        let id = g.generate_with_info(t * 1000 + 1000, "i.1", rg, encoding);
                        let info = if encoding == Some("base62") {
                            ""
                        } else {
                            "i.1"
                        };
                        assert_eq!(id, reference_id(t + 1, 0, rg, info));
                    }
                }
            }
        }
        assert_eq!(inf_vid("RG1234567"), "99999999999999999999RG12345");
    }

    #[test]
    fn garbage_never_panics() {
        for s in [
            "",
            "\u{ffff}\u{10000}",
            "ééééééééééééééééééééééééééééééééé",
            "zz",
        ] {
            let _ = decode(s);
            let _ = encode(s);
            let _ = base62_decode(s);
        }
    }
}
