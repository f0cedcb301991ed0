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

/// One `In`/`NotIn` value; `path` names it in an error (built only then).
fn decode_list(
    v: &serde_json::Value,
    path: impl Fn() -> String,
) -> Result<Option<Vec<String>>, PermsDecodeError> {
    match v {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                serde_json::Value::String(s) => Ok(s.clone()),
                // Go leaves a null element as the zero value.
                serde_json::Value::Null => Ok(String::new()),
                _ => Err(shape(alloc::format!("{}[{i}]", path()), "a string")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        _ => Err(shape(path(), "an array of strings or null")),
    }
}

/// Decodes stored permissions like Go's `json.Unmarshal`: unknown fields ignored, `In`/`NotIn`
/// matched case-insensitively, `null` → nil (a top-level `null` is the empty map).
///
/// The form Go's `json.Marshal` writes (what the table holds) is read directly
/// ([`decode_marshalled`]); anything else goes through a `serde_json::Value` tree.
pub fn decode_permissions(bytes: &[u8]) -> Result<Permissions, PermsDecodeError> {
    match decode_marshalled(bytes) {
        Some(p) => Ok(p),
        None => decode_permissions_lenient(bytes),
    }
}

/// The reader of [`decode_marshalled`]: a position in the stored text.
struct Marshalled<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Marshalled<'a> {
    /// What is left to read.
    fn rest(&self) -> &'a [u8] {
        self.text.as_bytes().get(self.at..).unwrap_or_default()
    }

    fn skip_ws(&mut self) {
        self.at += self
            .rest()
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            .count();
    }

    /// Skips whitespace, then takes `token` if it comes next.
    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        let found = self.rest().starts_with(token.as_bytes());
        if found {
            self.at += token.len();
        }
        found
    }

    /// A string without escapes or control characters (`None` for any other string: the
    /// lenient path reads those).
    fn plain_string(&mut self) -> Option<&'a str> {
        if !self.eat("\"") {
            return None;
        }
        let start = self.at;
        let rest = self.rest();
        let len = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if rest.get(len) != Some(&b'"') {
            return None;
        }
        self.at = start + len + 1;
        self.text.get(start..start + len)
    }

    /// `null` or an array of plain strings and `null`s.
    fn list(&mut self) -> Option<Option<Vec<String>>> {
        if self.eat("null") {
            return Some(None);
        }
        if !self.eat("[") {
            return None;
        }
        let mut items = Vec::new();
        if self.eat("]") {
            return Some(Some(items));
        }
        loop {
            // Go leaves a null element as the zero value.
            let item = if self.eat("null") {
                String::new()
            } else {
                String::from(self.plain_string()?)
            };
            items.push(item);
            if self.eat("]") {
                return Some(Some(items));
            }
            if !self.eat(",") {
                return None;
            }
        }
    }

    /// `null` or `{"In":list,"NotIn":list}`, exactly these fields in this order.
    fn access_list(&mut self) -> Option<AccessList> {
        if self.eat("null") {
            return Some(AccessList::default());
        }
        if !(self.eat("{") && self.eat("\"In\"") && self.eat(":")) {
            return None;
        }
        let in_ = self.list()?;
        if !(self.eat(",") && self.eat("\"NotIn\"") && self.eat(":")) {
            return None;
        }
        let not_in = self.list()?;
        self.eat("}").then_some(AccessList { in_, not_in })
    }
}

/// Reads `bytes` when they are in the form Go's `json.Marshal` writes permissions (plain
/// strings, each tag's `In` then `NotIn`; whitespace between tokens allowed), without the
/// `serde_json::Value` tree; `None` for anything else. Exact: whatever it reads, the lenient
/// path reads the same (a repeated tag is the last one in both).
fn decode_marshalled(bytes: &[u8]) -> Option<Permissions> {
    let mut r = Marshalled {
        text: core::str::from_utf8(bytes).ok()?,
        at: 0,
    };
    let mut out = Permissions::default();
    if !r.eat("null") {
        if !r.eat("{") {
            return None;
        }
        if !r.eat("}") {
            loop {
                let tag = r.plain_string()?;
                if !r.eat(":") {
                    return None;
                }
                let acl = r.access_list()?;
                out.0.insert(String::from(tag), acl);
                if r.eat("}") {
                    break;
                }
                if !r.eat(",") {
                    return None;
                }
            }
        }
    }
    r.skip_ws();
    (r.at == bytes.len()).then_some(out)
}

/// [`decode_permissions`] through a `serde_json::Value` tree: any JSON Go accepts, and the
/// errors.
fn decode_permissions_lenient(bytes: &[u8]) -> Result<Permissions, PermsDecodeError> {
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
        let mut acl = AccessList::default();
        match acl_v {
            serde_json::Value::Null => {}
            serde_json::Value::Object(fields) => {
                for (field, v) in fields {
                    let path = || alloc::format!("$.{tag}.{field}");
                    if field.eq_ignore_ascii_case("In") {
                        acl.in_ = decode_list(&v, path)?;
                    } else if field.eq_ignore_ascii_case("NotIn") {
                        acl.not_in = decode_list(&v, path)?;
                    }
                }
            }
            _ => return Err(shape(alloc::format!("$.{tag}"), "an object or null")),
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

    /// The direct reader against the `Value` path: what it reads it reads the same, and it
    /// reads the forms Go writes (with or without whitespace); every other text goes to the
    /// `Value` path, so `decode_permissions` answers for it exactly as that path does,
    /// errors included.
    #[test]
    fn marshalled_form_reads_as_the_value_path() {
        let read_directly = [
            "null",
            " null ",
            "{}",
            "{ }",
            r#"{"Admin":{"In":["..."],"NotIn":null}}"#,
            r#"{"%%/Admin":{"In":["%%"],"NotIn":null},"Admin":{"In":["root"],"NotIn":null},"Read":{"In":["..."],"NotIn":null}}"#,
            "{\"Read\":{\"In\":[\"\u{e9}\",\"x\u{7f}y\"],\"NotIn\":[\"a\",null,\"\"]}}",
            r#"{"Read":{"In":[],"NotIn":[]}}"#,
            r#"{"Read":null,"Admin":{"In":null,"NotIn":null}}"#,
            r#"{"B":{"In":["x"],"NotIn":null},"A":{"In":["y"],"NotIn":null}}"#,
            // A repeated tag: the last one, in both.
            r#"{"A":{"In":["x"],"NotIn":null},"A":{"In":["y"],"NotIn":null}}"#,
            "\n{ \"A\" : { \"In\" : [ \"x\" , \"y\" ] ,\r\n\t\"NotIn\" : null } }\n",
        ];
        for text in read_directly {
            let lenient = decode_permissions_lenient(text.as_bytes());
            assert!(lenient.is_ok(), "{text:?}");
            assert_eq!(decode_marshalled(text.as_bytes()), lenient.ok(), "{text:?}");
        }
        let left_to_the_value_path: [&[u8]; 16] = [
            b"",
            b"nul",
            b"null x",
            b"[1]",
            br#"{"A":{"in":["x"],"NotIn":null}}"#,
            br#"{"A":{"NotIn":null,"In":["x"]}}"#,
            br#"{"A":{"In":["x"]}}"#,
            br#"{"A":{"In":["x"],"NotIn":null,"Other":1}}"#,
            br#"{"A":{"In":["\u003cx"],"NotIn":null}}"#,
            br#"{"A\"":null}"#,
            br#"{"A":{"In":[1],"NotIn":null}}"#,
            br#"{"A":{"In":["x"],"NotIn":null},}"#,
            br#"{"A":{"In":["x"],"NotIn":null}} {}"#,
            b"{\"A\":{\"In\":[\"x\tz\"],\"NotIn\":null}}",
            b"{\"A\":{\"In\":[\"\xff\"],\"NotIn\":null}}",
            br#"{"A":3}"#,
        ];
        for text in left_to_the_value_path {
            let shown = String::from_utf8_lossy(text);
            assert_eq!(decode_marshalled(text), None, "{shown:?}");
            assert_eq!(
                decode_permissions(text),
                decode_permissions_lenient(text),
                "{shown:?}"
            );
        }
        // What rowkit itself writes is read directly.
        let mut p = Permissions::default();
        p.add("root:alice", "Admin");
        p.add("...", "Resolve");
        p.0.entry(String::from("Read")).or_default().not_in = Some(alloc::vec![String::from("x")]);
        let stored = encode_permissions(&p);
        assert_eq!(decode_marshalled(&stored), Some(p.clone()));
        assert_eq!(decode_permissions_lenient(&stored), Ok(p));
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
