#![allow(clippy::unwrap_used)]
//! Every case of `$ROWKIT_SHARED/vectors/mounttable.json` (spec/mounttable.md §22 scenario 24),
//! read at run time into strict structs (`common`): every field of every case is checked, and
//! a case kind, a field or an operation this file does not know fails the test.

mod common;

use common::{Cases, check_meta, hex, load, required_nullable, unhex};
use rowkit_codec::mounttable::*;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    meta: Value,
    row_keys: Cases<RowKey>,
    fnv1_32: Cases<Fnv>,
    naming_clean: Cases<Clean>,
    naming_join: Cases<Join>,
    row_key_decode: Cases<RowKeyDecode>,
    version_increment: Cases<VersionIncrement>,
    child_columns: Cases<ChildColumn>,
    permissions_json: Cases<PermissionsJson>,
    mount_flags: Cases<MountFlagsCase>,
    fixed_cells: FixedCells,
    deadlines: Cases<Deadline>,
    expiry: Cases<Expiry>,
    counter_values: Cases<CounterValue>,
    counter_row_keys: Cases<CounterRowKey>,
    creator_ids: Cases<CreatorId>,
    server_validation: Cases<ServerValidation>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RowKey {
    name: String,
    cleaned: String,
    fnv1_32: String,
    row_key: String,
    row_key_hex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fnv {
    input: String,
    hash: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Clean {
    input: String,
    output: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Join {
    elems: Vec<String>,
    output: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RowKeyDecode {
    row_key: String,
    /// `null`: not a node row key.
    #[serde(deserialize_with = "required_nullable")]
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VersionIncrement {
    version: String,
    next: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChildColumn {
    parent_version: String,
    child_name: String,
    qualifier: String,
    qualifier_hex: String,
    value_hex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PermissionsJson {
    description: String,
    operation: String,
    input: Value,
    json: String,
    /// `template` only.
    child: Option<String>,
    /// `copy` only.
    caller_blessing_names: Option<Vec<String>>,
    /// `copy` only.
    final_element: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MountFlagsCase {
    flags: u32,
    value: String,
    value_hex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FixedCells {
    sticky_value_hex: String,
    child_value_hex: String,
    root_id: String,
    root_id_hex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Deadline {
    now_unix_nanos: i64,
    ttl_seconds: u32,
    deadline_micros: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expiry {
    deadline_micros: i64,
    now_unix_nanos: i64,
    expired: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CounterValue {
    value: i64,
    bytes_hex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CounterRowKey {
    counter: String,
    creator: String,
    row_key: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreatorId {
    remote_blessing_names: Vec<String>,
    caller_is_server: bool,
    creator: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerValidation {
    server: String,
    valid: bool,
}

fn vectors() -> File {
    let f: File = load("mounttable.json");
    check_meta(&f.meta, "mounttable.md");
    f
}

fn perms_from(v: &Value) -> Permissions {
    decode_permissions(serde_json::to_string(v).unwrap().as_bytes()).unwrap()
}

#[test]
fn row_keys() {
    let v = vectors();
    for c in v.row_keys.non_empty("row_keys") {
        let name = c.name.trim_start_matches('/');
        let key = row_key(name);
        assert_eq!(key, c.row_key.as_bytes(), "{c:?}");
        assert_eq!(hex(&key), c.row_key_hex, "{c:?}");
        assert_eq!(unhex(&c.row_key_hex), c.row_key.as_bytes(), "{c:?}");
        assert_eq!(clean(&format!("/{name}")), c.cleaned, "{c:?}");
        assert_eq!(
            format!("{:08x}", fnv1_32(c.cleaned.as_bytes())),
            c.fnv1_32,
            "{c:?}"
        );
        // The key is the hash, then the cleaned name (§4).
        assert_eq!(c.row_key, format!("{}{}", c.fnv1_32, c.cleaned), "{c:?}");
    }
    for c in v.fnv1_32.non_empty("fnv1_32") {
        assert_eq!(
            format!("{:08x}", fnv1_32(c.input.as_bytes())),
            c.hash,
            "{c:?}"
        );
    }
    for c in v.row_key_decode.non_empty("row_key_decode") {
        let got = decode_row_key(c.row_key.as_bytes());
        assert_eq!(got, c.name.as_deref().map(str::as_bytes), "{c:?}");
    }
}

#[test]
fn names() {
    let v = vectors();
    for c in v.naming_clean.non_empty("naming_clean") {
        assert_eq!(clean(&c.input), c.output, "{c:?}");
    }
    for c in v.naming_join.non_empty("naming_join") {
        let elems: Vec<&str> = c.elems.iter().map(String::as_str).collect();
        assert_eq!(join(&elems), c.output, "{c:?}");
    }
}

#[test]
fn versions_and_children() {
    let v = vectors();
    for c in v.version_increment.non_empty("version_increment") {
        assert_eq!(next_version(c.version.as_bytes()).unwrap(), c.next, "{c:?}");
    }
    for c in v.child_columns.non_empty("child_columns") {
        let q = child_qualifier(c.parent_version.as_bytes(), &c.child_name);
        assert_eq!(q, c.qualifier.as_bytes(), "{c:?}");
        assert_eq!(hex(&q), c.qualifier_hex, "{c:?}");
        assert_eq!(hex(MARKER_VALUE), c.value_hex, "{c:?}");
        // The vector's qualifier bytes decode to its parent version and child name.
        let back = decode_child_qualifier(&unhex(&c.qualifier_hex)).unwrap();
        assert_eq!(back.id, c.parent_version.as_bytes(), "{c:?}");
        assert_eq!(back.name, c.child_name, "{c:?}");
    }
    let f = &v.fixed_cells;
    assert_eq!(hex(MARKER_VALUE), f.sticky_value_hex);
    assert_eq!(hex(MARKER_VALUE), f.child_value_hex);
    assert_eq!(ROOT_ID.as_slice(), f.root_id.as_bytes());
    assert_eq!(hex(ROOT_ID), f.root_id_hex);
}

#[test]
fn permissions_json() {
    let v = vectors();
    for c in v.permissions_json.non_empty("permissions_json") {
        let what = format!("{} ({c:?})", c.description);
        let input = perms_from(&c.input);
        // Fields that belong to one operation only must not come with another: a case is
        // never checked with part of its data ignored.
        let only = |field: &str, present: bool, op: &str| {
            assert!(
                !present || c.operation == op,
                "{what}: `{field}` is not an input of operation {:?}",
                c.operation
            );
        };
        only("child", c.child.is_some(), "template");
        only(
            "caller_blessing_names",
            c.caller_blessing_names.is_some(),
            "copy",
        );
        only("final_element", c.final_element.is_some(), "copy");
        let out = match c.operation.as_str() {
            "setup_default" => {
                let mut p = input.clone();
                p.add("...", tags::ADMIN);
                if input.0.is_empty() {
                    assert_eq!(p, default_root_permissions(), "{what}");
                }
                p
            }
            "marshal" => input.clone(),
            "normalize" => {
                let mut p = input.clone();
                p.normalize();
                p
            }
            "template" => {
                let child = c
                    .child
                    .as_deref()
                    .unwrap_or_else(|| panic!("{what}: no child"));
                let mut p = input
                    .template(child)
                    .unwrap_or_else(|| panic!("{what}: no template"));
                p.normalize();
                p
            }
            "copy" => {
                assert!(input.template("x").is_none(), "{what}");
                let mut p = input.clone();
                let final_element = c
                    .final_element
                    .unwrap_or_else(|| panic!("{what}: no final_element"));
                let names = c
                    .caller_blessing_names
                    .as_ref()
                    .unwrap_or_else(|| panic!("{what}: no caller_blessing_names"));
                if final_element {
                    for n in names {
                        p.add(n, tags::ADMIN);
                    }
                }
                p.normalize();
                p
            }
            other => panic!("{what}: unknown operation {other:?}"),
        };
        let json = encode_permissions(&out);
        assert_eq!(String::from_utf8(json.clone()).unwrap(), c.json, "{what}");
        // The vector's bytes decode to the same value.
        assert_eq!(
            decode_permissions(c.json.as_bytes()).unwrap(),
            out,
            "{what}"
        );
    }
}

/// Permissions read from a JSON tree of the marshalled shape (`{tag: null | {"In": list,
/// "NotIn": list}}`, lists of strings or null), independently of the codec's readers.
fn perms_of_value(v: &Value) -> Permissions {
    let list = |l: &Value| match l {
        Value::Null => None,
        Value::Array(items) => Some(
            items
                .iter()
                .map(|s| s.as_str().unwrap_or_default().to_string())
                .collect(),
        ),
        other => panic!("not a list: {other}"),
    };
    let mut p = Permissions::default();
    for (tag, acl) in v.as_object().into_iter().flatten() {
        let acl = match acl {
            Value::Null => AccessList::default(),
            acl => AccessList {
                in_: list(&acl["In"]),
                not_in: list(&acl["NotIn"]),
            },
        };
        p.0.insert(tag.clone(), acl);
    }
    p
}

/// `decode_permissions` reads the marshalled form directly, without a JSON tree: on every
/// permissions text of the vectors (as stored, the inputs re-serialised, and both pretty
/// printed) it gives what a JSON tree of the same text holds.
#[test]
fn permissions_shortcut_matches_the_json_tree() {
    let v = vectors();
    for c in v.permissions_json.non_empty("permissions_json") {
        let stored: Value = serde_json::from_str(&c.json).unwrap();
        let texts = [
            c.json.clone(),
            serde_json::to_string(&c.input).unwrap(),
            serde_json::to_string_pretty(&stored).unwrap(),
            serde_json::to_string_pretty(&c.input).unwrap(),
        ];
        for text in texts {
            let tree: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                decode_permissions(text.as_bytes()).unwrap(),
                perms_of_value(&tree),
                "{} ({text})",
                c.description
            );
        }
    }
}

#[test]
fn flags_counters_deadlines() {
    let v = vectors();
    for c in v.mount_flags.non_empty("mount_flags") {
        let b = encode_flags(MountFlags(c.flags));
        assert_eq!(b, c.value.as_bytes(), "{c:?}");
        assert_eq!(hex(&b), c.value_hex, "{c:?}");
        // The vector's stored bytes decode to the flag bits it names.
        let (mut mt, mut leaf) = (false, false);
        decode_flags_into(&unhex(&c.value_hex), &mut mt, &mut leaf).unwrap();
        assert_eq!((mt, leaf), (c.flags & 2 != 0, c.flags & 4 != 0), "{c:?}");
    }
    for c in v.counter_values.non_empty("counter_values") {
        assert_eq!(hex(&encode_counter_value(c.value)), c.bytes_hex, "{c:?}");
        assert_eq!(
            decode_counter_value(&unhex(&c.bytes_hex)).unwrap(),
            c.value,
            "{c:?}"
        );
    }
    for c in v.counter_row_keys.non_empty("counter_row_keys") {
        let kind = match c.counter.as_str() {
            "nodes" => CounterKind::Nodes,
            "servers" => CounterKind::Servers,
            o => panic!("{c:?}: unknown counter {o:?}"),
        };
        let key = counter_row_key(kind, &c.creator);
        assert_eq!(key, c.row_key.as_bytes(), "{c:?}");
        assert_eq!(
            decode_counter_row_key(c.row_key.as_bytes()),
            Some((kind, c.creator.as_bytes())),
            "{c:?}"
        );
    }
    for c in v.deadlines.non_empty("deadlines") {
        assert_eq!(
            mount_deadline(c.now_unix_nanos.div_euclid(1000), c.ttl_seconds),
            c.deadline_micros,
            "{c:?}"
        );
    }
    for c in v.expiry.non_empty("expiry") {
        let ns = c.now_unix_nanos;
        let now = ns.div_euclid(1000) + i64::from(ns.rem_euclid(1000) != 0);
        assert_eq!(is_expired(c.deadline_micros, now), c.expired, "{c:?}");
    }
}

#[test]
fn creators_and_addresses() {
    let v = vectors();
    for c in v.creator_ids.non_empty("creator_ids") {
        let names: Vec<&str> = c.remote_blessing_names.iter().map(String::as_str).collect();
        let caller = Caller::new(&names, c.caller_is_server);
        assert_eq!(creator_of(&caller), c.creator, "{c:?}");
    }
    for c in v.server_validation.non_empty("server_validation") {
        assert_eq!(validate_server(&c.server), c.valid, "{c:?}");
    }
    // Spec §14 and §22 scenario 16 examples.
    for ok in [
        "/127.0.0.1:8000/quux",
        "/@6@tcp@127.0.0.1:1234@@00000000000000000000000000000000@m@@/collection",
        "/127.0.0.1:8000/life/on/the/mississippi",
        "host:",
        ":80",
        "[::1]:80",
        "(x)@h:1",
    ] {
        assert!(validate_server(ok), "{ok}");
    }
    for bad in ["", "[::1:80", "a:b:c", "/"] {
        assert!(!validate_server(bad), "{bad}");
    }
}
