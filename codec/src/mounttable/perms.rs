//! Permissions (§7.3): the model, Go `encoding/json` bytes (sorted keys, `null`, HTML escapes),
//! a lenient decoder that accepts what Go's `json.Unmarshal` accepts, the Normalize / Add /
//! Template operations and blessing-pattern matching (§12.2).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

/// One tag's access list. `None` is Go's nil list (`null`), `Some(vec![])` an empty one (`[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessList {
    /// Blessing patterns granted.
    pub in_: Option<Vec<String>>,
    /// Blessing names (used as patterns) excluded.
    pub not_in: Option<Vec<String>>,
}

/// Permissions: tag → access list, in byte order of the tag.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions(pub BTreeMap<String, AccessList>);

/// Why stored permissions did not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PermsDecodeError {
    /// Not JSON at all.
    #[error("permissions are not valid JSON: {0}")]
    Syntax(String),
    /// JSON, but not `{tag: {In: [..], NotIn: [..]}}`.
    #[error("permissions JSON has the wrong shape at {path}: expected {expected}")]
    Shape {
        /// Where (`$`, `$.Admin`, `$.Admin.In[2]`).
        path: String,
        /// What was expected there.
        expected: &'static str,
    },
}

/// The permissions a root gets without a permissions file: `{"Admin":{"In":["..."]}}`.
pub fn default_root_permissions() -> Permissions {
    let mut p = Permissions::default();
    p.add("...", super::tags::ADMIN);
    p
}

fn dedup_sorted(list: &mut Option<Vec<String>>) {
    if let Some(l) = list.as_mut() {
        l.sort();
        l.dedup();
        if l.is_empty() {
            *list = None;
        }
    }
}

impl Permissions {
    /// Normalize: dedup and sort `In` and `NotIn` of every tag; an empty list becomes nil.
    pub fn normalize(&mut self) {
        for acl in self.0.values_mut() {
            dedup_sorted(&mut acl.in_);
            dedup_sorted(&mut acl.not_in);
        }
    }

    /// Add `pattern` to `In` of `tag` (sorted, deduplicated), creating the tag if missing.
    pub fn add(&mut self, pattern: &str, tag: &str) {
        let acl = self.0.entry(String::from(tag)).or_default();
        let list = acl.in_.get_or_insert_with(Vec::new);
        list.push(String::from(pattern));
        list.sort();
        list.dedup();
    }

    /// Template: tags `%%/T` become `T` with every `%%` replaced by `child`; `None` if there are
    /// no template tags.
    pub fn template(&self, child: &str) -> Option<Permissions> {
        let mut out = Permissions::default();
        let mut any = false;
        let subst = |l: &Option<Vec<String>>| {
            l.as_ref()
                .map(|v| v.iter().map(|s| s.replace("%%", child)).collect::<Vec<_>>())
        };
        for (tag, acl) in &self.0 {
            if let Some(t) = tag.strip_prefix("%%/") {
                any = true;
                out.0.insert(
                    String::from(t),
                    AccessList {
                        in_: subst(&acl.in_),
                        not_in: subst(&acl.not_in),
                    },
                );
            }
        }
        any.then_some(out)
    }

    /// Whether `names` are granted `tag` (§12.2 `Includes`).
    pub fn includes(&self, tag: &str, names: &[String]) -> bool {
        self.0.get(tag).is_some_and(|acl| acl.includes(names))
    }
}

impl AccessList {
    /// §12.2: drop names matched by a `NotIn` pattern, then true iff an `In` pattern matches a
    /// remaining name.
    pub fn includes(&self, names: &[String]) -> bool {
        let not_in = self.not_in.as_deref().unwrap_or(&[]);
        let in_ = self.in_.as_deref().unwrap_or(&[]);
        names
            .iter()
            .filter(|n| !not_in.iter().any(|p| blessing_pattern_matches(p, n)))
            .any(|n| in_.iter().any(|p| blessing_pattern_matches(p, n)))
    }
}

/// Blessing pattern validity (§12.2).
pub fn blessing_pattern_is_valid(p: &str) -> bool {
    if p == "..." {
        return true;
    }
    let p = p.strip_suffix(":$").unwrap_or(p);
    if p.ends_with(':') {
        return false;
    }
    p.split(':').all(|c| {
        !c.is_empty()
            && c != "$"
            && !["...", "::", ",", "@@", "(", ")", "<", ">", "/"]
                .iter()
                .any(|bad| c.contains(bad))
    })
}

/// Whether pattern `p` matches blessing name `b` (§12.2).
pub fn blessing_pattern_matches(p: &str, b: &str) -> bool {
    if p.is_empty() || !blessing_pattern_is_valid(p) {
        return false;
    }
    if p == "..." {
        return true;
    }
    if p == "$" {
        return false;
    }
    if let Some(exact) = p.strip_suffix(":$") {
        return b == exact;
    }
    b == p || (b.len() > p.len() && b.starts_with(p) && b.as_bytes()[p.len()] == b':')
}

fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&alloc::format!("\\u{:04x}", ch as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&alloc::format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_list(out: &mut String, l: &Option<Vec<String>>) {
    match l {
        None => out.push_str("null"),
        Some(v) => {
            out.push('[');
            for (i, s) in v.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_string(out, s);
            }
            out.push(']');
        }
    }
}

/// Go `json.Marshal` of the permissions, as text.
pub fn encode_permissions_string(p: &Permissions) -> String {
    let mut out = String::from("{");
    for (i, (tag, acl)) in p.0.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_string(&mut out, tag);
        out.push_str(":{\"In\":");
        push_list(&mut out, &acl.in_);
        out.push_str(",\"NotIn\":");
        push_list(&mut out, &acl.not_in);
        out.push('}');
    }
    out.push('}');
    out
}

/// Go `json.Marshal` of the permissions: the `m:p` cell value.
pub fn encode_permissions(p: &Permissions) -> Vec<u8> {
    encode_permissions_string(p).into_bytes()
}

fn shape(path: String, expected: &'static str) -> PermsDecodeError {
    PermsDecodeError::Shape { path, expected }
}

fn decode_list(v: &serde_json::Value, path: &str) -> Result<Option<Vec<String>>, PermsDecodeError> {
    match v {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                serde_json::Value::String(s) => Ok(s.clone()),
                // Go leaves a null element as the zero value.
                serde_json::Value::Null => Ok(String::new()),
                _ => Err(shape(alloc::format!("{path}[{i}]"), "a string")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        _ => Err(shape(String::from(path), "an array of strings or null")),
    }
}

/// Decodes stored permissions like Go's `json.Unmarshal`: unknown fields ignored, `In`/`NotIn`
/// matched case-insensitively, `null` → nil (a top-level `null` is the empty map).
pub fn decode_permissions(bytes: &[u8]) -> Result<Permissions, PermsDecodeError> {
    // Go replaces invalid UTF-8 with U+FFFD rather than failing.
    let text = String::from_utf8_lossy(bytes);
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| PermsDecodeError::Syntax(alloc::format!("{e}")))?;
    let mut out = Permissions::default();
    let map = match value {
        serde_json::Value::Null => return Ok(out),
        serde_json::Value::Object(m) => m,
        _ => return Err(shape(String::from("$"), "an object")),
    };
    for (tag, acl_v) in map {
        let path = alloc::format!("$.{tag}");
        let mut acl = AccessList::default();
        match acl_v {
            serde_json::Value::Null => {}
            serde_json::Value::Object(fields) => {
                for (field, v) in fields {
                    if field.eq_ignore_ascii_case("In") {
                        acl.in_ = decode_list(&v, &alloc::format!("{path}.{field}"))?;
                    } else if field.eq_ignore_ascii_case("NotIn") {
                        acl.not_in = decode_list(&v, &alloc::format!("{path}.{field}"))?;
                    }
                }
            }
            _ => return Err(shape(path, "an object or null")),
        }
        out.0.insert(tag, acl);
    }
    Ok(out)
}

/// Decodes a btmtd permissions file: a JSON object `{name: Permissions}` (§16).
pub fn decode_permissions_file(
    bytes: &[u8],
) -> Result<BTreeMap<String, Permissions>, PermsDecodeError> {
    let text = String::from_utf8_lossy(bytes);
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| PermsDecodeError::Syntax(alloc::format!("{e}")))?;
    let serde_json::Value::Object(map) = value else {
        return Err(shape(String::from("$"), "an object of name -> permissions"));
    };
    let mut out = BTreeMap::new();
    for (name, v) in map {
        let p =
            decode_permissions(alloc::string::ToString::to_string(&v).as_bytes()).map_err(|e| {
                match e {
                    PermsDecodeError::Shape { path, expected } => PermsDecodeError::Shape {
                        path: alloc::format!("$.{name:?}{}", path.trim_start_matches('$')),
                        expected,
                    },
                    other => other,
                }
            })?;
        out.insert(name, p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_lenient_read() {
        let mut p = Permissions::default();
        p.add("<a&b>\u{8}\u{c}\u{7f}", "Read");
        let s = encode_permissions_string(&p);
        assert_eq!(
            s,
            "{\"Read\":{\"In\":[\"\\u003ca\\u0026b\\u003e\\u0008\\u000c\u{7f}\"],\"NotIn\":null}}"
        );
        assert_eq!(decode_permissions(s.as_bytes()).unwrap(), p);
        let q = decode_permissions(br#"{"Admin":{"in":["x"],"other":1}}"#).unwrap();
        assert_eq!(q.0["Admin"].in_, Some(alloc::vec![String::from("x")]));
        assert_eq!(decode_permissions(b"null").unwrap(), Permissions::default());
        assert!(decode_permissions(b"[1]").is_err());
        assert!(decode_permissions(b"{\"A\":{\"In\":[1]}}").is_err());
    }

    #[test]
    fn patterns() {
        assert!(blessing_pattern_matches("root", "root:phone"));
        assert!(!blessing_pattern_matches("root:$", "root:phone"));
        assert!(blessing_pattern_matches("root:$", "root"));
        assert!(!blessing_pattern_matches("ro", "root"));
        assert!(!blessing_pattern_matches("a::b", "a::b"));
        assert!(blessing_pattern_matches("...", "anything"));
    }
}
