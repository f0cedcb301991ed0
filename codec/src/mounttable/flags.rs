//! Mount flags (§7.4): the JSON stored as each `s:<server>` cell value.

use alloc::vec::Vec;

/// The MountFlag bits a Mount call takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MountFlags(pub u32);

impl MountFlags {
    /// Replace every other server.
    pub const REPLACE: u32 = 1;
    /// The server is a mount table.
    pub const MT: u32 = 2;
    /// The server is a leaf.
    pub const LEAF: u32 = 4;

    /// Whether `bit` is set.
    pub fn has(self, bit: u32) -> bool {
        self.0 & bit != 0
    }
}

/// The stored JSON: `{"mt":true,"leaf":true}` with absent-when-false fields; `Replace` is never
/// stored.
pub fn encode_flags(flags: MountFlags) -> Vec<u8> {
    let mt = flags.has(MountFlags::MT);
    let leaf = flags.has(MountFlags::LEAF);
    let s: &str = match (mt, leaf) {
        (true, true) => "{\"mt\":true,\"leaf\":true}",
        (true, false) => "{\"mt\":true}",
        (false, true) => "{\"leaf\":true}",
        (false, false) => "{}",
    };
    s.as_bytes().to_vec()
}

/// Why a mount-flags value did not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FlagsDecodeError {
    /// Not JSON.
    #[error("mount flags are not valid JSON: {0}")]
    Syntax(alloc::string::String),
    /// Not an object, or `mt`/`leaf` not a boolean.
    #[error("mount flags JSON has the wrong shape at {field}")]
    Shape {
        /// The offending field (`$` for the whole value).
        field: alloc::string::String,
    },
}

/// Decodes a value into shared flags `(mt, leaf)` like Go's `json.Unmarshal` into one struct:
/// a present field overwrites, an absent one leaves the flag as it was.
pub fn decode_flags_into(
    bytes: &[u8],
    mt: &mut bool,
    leaf: &mut bool,
) -> Result<(), FlagsDecodeError> {
    let text = alloc::string::String::from_utf8_lossy(bytes);
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| FlagsDecodeError::Syntax(alloc::format!("{e}")))?;
    let map = match value {
        serde_json::Value::Null => return Ok(()),
        serde_json::Value::Object(m) => m,
        _ => {
            return Err(FlagsDecodeError::Shape { field: "$".into() });
        }
    };
    for (k, v) in map {
        let target = if k.eq_ignore_ascii_case("mt") {
            &mut *mt
        } else if k.eq_ignore_ascii_case("leaf") {
            &mut *leaf
        } else {
            continue;
        };
        match v {
            serde_json::Value::Bool(b) => *target = b,
            serde_json::Value::Null => {}
            _ => return Err(FlagsDecodeError::Shape { field: k }),
        }
    }
    Ok(())
}
