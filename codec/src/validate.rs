//! The input rules the CLI and the browser tool share: one function per kind of input, each
//! refusing a value before anything is written, with one readable sentence naming the value
//! and the rule it breaks. [`validate`] dispatches on a [`Field`] (the JS `validate(field,
//! value)`); the CLI calls the same functions on its arguments.
//!
//! Only rules the specs allow are here: a value a schema accepts (the one-letter buckets of
//! `objmeta.md`'s scenarios, the empty graph id of `triples.md` 4, the empty — missing —
//! digest of `tracestore.md` 5.2) passes.
//!
//! [`is_bearer_token`] is the one rule for a bearer token, which rowkit's servers (`--token`)
//! and its Cloud Bigtable adapter (access tokens) both apply.

use alloc::format;
use alloc::string::{String, ToString};

use crate::mounttable::{clean, validate_server};
use crate::objmeta::keys::is_special_bucket;
use crate::tracestore::keys::repo_index_position;
use crate::tracestore::ops::Params;
use crate::triples::Triple;
use crate::triples::keys::MAX_GRAPH_ID_LEN;

/// Whether `token` can be a bearer token: not empty, and visible ASCII only (`!` to `~`), what
/// a client can send in `Authorization: Bearer TOKEN` and a server compare byte for byte (a
/// space would be trimmed; other bytes are not header text every client sends, or are sent as
/// bytes no server matches).
pub fn is_bearer_token(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic())
}

/// A kind of input, by its JS name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// An S3 bucket name (`"bucket"`).
    Bucket,
    /// An S3 object key (`"objectKey"`).
    ObjectKey,
    /// A Gold commit (repo index) as typed (`"commit"`).
    Commit,
    /// A Gold digest (`"digest"`).
    Digest,
    /// Gold trace params as `k=v,…` (`"params"`).
    Params,
    /// A triple-store graph id (`"graph"`).
    Graph,
    /// One triple in BadWolf's text form (`"triple"`).
    Triple,
    /// A mount-table name (`"mountName"`).
    MountName,
    /// A server address to mount (`"address"`).
    Address,
}

impl Field {
    /// Every field, in the order of their JS names' documentation.
    pub const ALL: [Field; 9] = [
        Field::Bucket,
        Field::ObjectKey,
        Field::Commit,
        Field::Digest,
        Field::Params,
        Field::Graph,
        Field::Triple,
        Field::MountName,
        Field::Address,
    ];

    /// The JS name (`"bucket"`, `"objectKey"`, …).
    pub fn name(self) -> &'static str {
        match self {
            Field::Bucket => "bucket",
            Field::ObjectKey => "objectKey",
            Field::Commit => "commit",
            Field::Digest => "digest",
            Field::Params => "params",
            Field::Graph => "graph",
            Field::Triple => "triple",
            Field::MountName => "mountName",
            Field::Address => "address",
        }
    }

    /// The field of a JS name.
    pub fn parse(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// A refused input: one sentence naming the value and the rule it breaks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InvalidInput {
    /// What kind of input it was.
    pub field: Field,
    /// The sentence.
    pub message: String,
}

fn invalid(field: Field, message: String) -> InvalidInput {
    InvalidInput { field, message }
}

/// Checks `value` as a `field`.
pub fn validate(field: Field, value: &str) -> Result<(), InvalidInput> {
    match field {
        Field::Bucket => bucket_name(value),
        Field::ObjectKey => object_key(value),
        Field::Commit => commit(value).map(|_| ()),
        Field::Digest => digest(value),
        Field::Params => params(value).map(|_| ()),
        Field::Graph => graph_id(value),
        Field::Triple => triple(value).map(|_| ()),
        Field::MountName => mount_name(value),
        Field::Address => address(value),
    }
}

/// Longest bucket name (S3's and Arsenal's rule).
const MAX_BUCKET_NAME: usize = 63;

/// A bucket name as Arsenal's `isValidBucketName` checks it (DNS-compatible: lowercase
/// letters and digits in labels joined by `.` or runs of `-`; at most 63 characters; not an
/// IPv4 address), except that names shorter than 3 characters pass (the specs' scenarios use
/// bucket `b`), and Arsenal's special buckets (`users..bucket`, `PENSIEVE`,
/// `mpuShadowBucket…`) pass.
pub fn bucket_name(name: &str) -> Result<(), InvalidInput> {
    let bad = |rule: &str| invalid(Field::Bucket, format!("bucket name {name:?}: {rule}"));
    if is_special_bucket(name) && !name.starts_with("__") {
        return Ok(());
    }
    if name.is_empty() {
        return Err(invalid(Field::Bucket, "a bucket name is required".into()));
    }
    if name.len() > MAX_BUCKET_NAME {
        return Err(bad("a bucket name has at most 63 characters"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '.' || *c == '-'))
    {
        return Err(bad(&format!(
            "{c:?} is not allowed: only lowercase letters, digits, '.' and '-'"
        )));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !alnum(name.chars().next()) || !alnum(name.chars().last()) {
        return Err(bad(
            "a bucket name starts and ends with a letter or a digit",
        ));
    }
    if name.contains("..") || name.contains(".-") || name.contains("-.") {
        return Err(bad("a '.' has a letter or a digit on both sides"));
    }
    let is_ipv4 = name.split('.').count() == 4
        && name
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if is_ipv4 {
        return Err(bad("a bucket name is not an IP address"));
    }
    Ok(())
}

/// Longest object key (S3's limit, in UTF-8 bytes).
const MAX_OBJECT_KEY: usize = 1024;

/// An object key: not empty, at most 1024 bytes (S3's rules).
pub fn object_key(key: &str) -> Result<(), InvalidInput> {
    if key.is_empty() {
        return Err(invalid(
            Field::ObjectKey,
            "an object key is required".into(),
        ));
    }
    if key.len() > MAX_OBJECT_KEY {
        return Err(invalid(
            Field::ObjectKey,
            format!(
                "object key is {} bytes long: at most {MAX_OBJECT_KEY}",
                key.len()
            ),
        ));
    }
    Ok(())
}

/// A commit as typed: a whole number from 0 to 2147483647 (`tracestore.md` 4), nothing else.
pub fn commit(text: &str) -> Result<i64, InvalidInput> {
    let rule = "a commit is a whole number from 0 to 2147483647";
    let bad = || invalid(Field::Commit, format!("commit {text:?}: {rule}"));
    if text.is_empty() {
        return Err(invalid(
            Field::Commit,
            format!("a commit is required: {rule}"),
        ));
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: i64 = text.parse().map_err(|_| bad())?;
    repo_index_position(n).map_err(|_| bad())?;
    Ok(n)
}

/// A digest: 32 hexadecimal characters (an MD5, either case, `tracestore.md` 11.2) or empty
/// (a missing point). Gold's Put stores any other text as missing without a word; callers
/// refuse it instead.
pub fn digest(text: &str) -> Result<(), InvalidInput> {
    if text.is_empty() || (text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit())) {
        return Ok(());
    }
    Err(invalid(
        Field::Digest,
        format!(
            "digest {text:?}: a digest is 32 hexadecimal characters (an MD5), or empty for a missing point"
        ),
    ))
}

/// `k=v,…` (trace params or options): split at `,`, empty pieces skipped, then at the first
/// `=`; keys and values may be empty, as Gold's own encoding allows.
pub fn param_pairs(text: &str) -> Result<Params, InvalidInput> {
    let mut out = Params::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(invalid(Field::Params, format!("{part:?} is not key=value")));
        };
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

/// A trace's params as `k=v,…` ([`param_pairs`]) with at least one pair: Gold's Put fails on
/// a trace without params (`No params encoded.`).
pub fn params(text: &str) -> Result<Params, InvalidInput> {
    let out = param_pairs(text)?;
    if out.is_empty() {
        return Err(invalid(
            Field::Params,
            "a trace has at least one param key=value".into(),
        ));
    }
    Ok(out)
}

/// A graph id: at most 3981 bytes (`triples.md` 4; the empty id is allowed).
pub fn graph_id(id: &str) -> Result<(), InvalidInput> {
    if id.len() > MAX_GRAPH_ID_LEN {
        return Err(invalid(
            Field::Graph,
            format!(
                "graph id is {} bytes long: at most {MAX_GRAPH_ID_LEN}",
                id.len()
            ),
        ));
    }
    Ok(())
}

/// One triple in BadWolf's text form (`/u<joe> "parent_of"@[] /u<mary>`).
pub fn triple(text: &str) -> Result<Triple, InvalidInput> {
    // The parse error names the triple and the part that failed.
    Triple::parse(text.as_bytes()).map_err(|e| invalid(Field::Triple, e.to_string()))
}

/// Longest cleaned name whose row key fits Bigtable's 4096 bytes (`mounttable.md` 4.2).
const MAX_MOUNT_NAME: usize = 4088;

/// A mount-table name: its row key fits (`Clean("/" + name)` at most 4088 bytes).
pub fn mount_name(name: &str) -> Result<(), InvalidInput> {
    let cleaned = clean(&format!("/{name}"));
    if cleaned.len() > MAX_MOUNT_NAME {
        return Err(invalid(
            Field::MountName,
            format!(
                "name is {} bytes long once cleaned: at most {MAX_MOUNT_NAME}",
                cleaned.len()
            ),
        ));
    }
    Ok(())
}

/// A server address Mount accepts (`mounttable.md` 14).
pub fn address(server: &str) -> Result<(), InvalidInput> {
    if validate_server(server) {
        return Ok(());
    }
    Err(invalid(
        Field::Address,
        format!(
            "malformed address {server:?}: expected host:port, /host:port/name or an endpoint @6@…@@"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(field: Field, value: &str) -> String {
        validate(field, value).unwrap_err().message
    }

    #[test]
    fn bearer_tokens() {
        for ok in ["t", "!azAZ09-._~+/=", "ya29.a0Af"] {
            assert!(is_bearer_token(ok), "{ok:?}");
        }
        for bad in ["", "tök", "a b", " t", "tab\there", "nul\0", "\u{7f}"] {
            assert!(!is_bearer_token(bad), "{bad:?}");
        }
    }

    #[test]
    fn bucket_names() {
        for ok in [
            "b",
            "photos",
            "my.bucket-1",
            "a--b",
            "users..bucket",
            "PENSIEVE",
            "mpuShadowBucketb",
        ] {
            assert_eq!(validate(Field::Bucket, ok), Ok(()), "{ok}");
        }
        assert_eq!(
            refused(Field::Bucket, "Bad_Name!!"),
            r#"bucket name "Bad_Name!!": 'B' is not allowed: only lowercase letters, digits, '.' and '-'"#
        );
        assert!(refused(Field::Bucket, "").contains("required"));
        assert!(refused(Field::Bucket, "-ab").contains("starts and ends"));
        assert!(refused(Field::Bucket, "a..b").contains("both sides"));
        assert!(refused(Field::Bucket, "a.-b").contains("both sides"));
        assert!(refused(Field::Bucket, "192.168.5.4").contains("IP address"));
        assert!(refused(Field::Bucket, &"a".repeat(64)).contains("at most 63"));
        assert!(refused(Field::Bucket, "__metastore").contains("not allowed"));
    }

    #[test]
    fn gold_inputs() {
        assert_eq!(commit("0"), Ok(0));
        assert_eq!(commit("2147483647"), Ok(2147483647));
        for bad in ["", " 1", "-1", "1.5", "2147483648", "x"] {
            assert!(commit(bad).is_err(), "{bad}");
        }
        assert!(refused(Field::Commit, "").starts_with("a commit is required"));
        for ok in [
            "",
            "9e1d402515193304cafbdf02b8fd751b",
            "9E1D402515193304CAFBDF02B8FD751B",
        ] {
            assert_eq!(digest(ok), Ok(()), "{ok}");
        }
        assert!(refused(Field::Digest, "xyz").contains("32 hexadecimal characters"));
        assert!(digest("9e1d402515193304cafbdf02b8fd751").is_err());
        assert_eq!(params("os=linux,test=").unwrap().len(), 2);
        assert!(refused(Field::Params, "").contains("at least one"));
        assert!(refused(Field::Params, "os").contains("not key=value"));
    }

    #[test]
    fn graph_and_mount_inputs() {
        assert_eq!(validate(Field::Graph, ""), Ok(()));
        assert!(validate(Field::Graph, &"g".repeat(3982)).is_err());
        assert!(triple(r#"/u<joe> "parent_of"@[] /u<mary>"#).is_ok());
        assert!(refused(Field::Triple, "not a triple").contains("\"not a triple\""));
        assert_eq!(validate(Field::Address, "/host:1234"), Ok(()));
        assert_eq!(validate(Field::Address, "host:1234"), Ok(()));
        assert!(refused(Field::Address, "x").starts_with("malformed address \"x\""));
        assert_eq!(validate(Field::MountName, "a/b"), Ok(()));
        assert!(validate(Field::MountName, &"a".repeat(4088)).is_err());
        assert!(refused(Field::ObjectKey, "").contains("required"));
    }

    #[test]
    fn field_names_round_trip() {
        for f in Field::ALL {
            assert_eq!(Field::parse(f.name()), Some(f));
        }
        assert_eq!(Field::parse("nope"), None);
    }
}
