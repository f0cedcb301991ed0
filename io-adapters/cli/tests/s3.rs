//! `rowkit s3` and `rowkit key … s3` end to end on a temporary embedded file (`objmeta.md` 18,
//! scenario 36).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rowkit-cli-s3-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn rowkit(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .arg("--store")
            .arg(format!("embedded:{}", self.0.join("t.redb").display()))
            .args(args)
            .env_remove("ROWKIT_STORE")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> Value {
        let o = self.rowkit(args);
        assert!(o.status.success(), "{args:?}: {o:?}");
        serde_json::from_slice(&o.stdout).unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn key_encode_and_decode() {
    let s = Scratch::new("keys");
    let v = s.ok(&[
        "--json", "key", "encode", "s3", "--bucket", "b", "--key", "k",
    ]);
    assert_eq!(v["row_key"], "b\\x00\\x7fMk");
    assert_eq!(v["row_key_hex"], "62007f4d6b");
    assert_eq!(
        (v["kind"].as_str(), v["format"].as_str()),
        (Some("master"), Some("v1"))
    );
    let o = s.rowkit(&["key", "encode", "s3", "--bucket", "b", "--key", "k"]);
    assert_eq!(String::from_utf8(o.stdout).unwrap(), "b\\x00\\x7fMk\n");
    let vid = "98299999999998999999RG001  4242.0";
    let v = s.ok(&[
        "--json",
        "key",
        "encode",
        "s3",
        "--bucket",
        "b",
        "--key",
        "k",
        "--version-id",
        vid,
    ]);
    assert_eq!(
        v["row_key_hex"],
        "62007f566b00393832393939393939393939393839393939393952473030312020343234322e30"
    );
    let v = s.ok(&["--json", "key", "decode", "hex:62006b"]);
    assert_eq!(
        (&v["collection"], &v["kind"], &v["format"], &v["object_key"]),
        (&json!("b"), &json!("master"), &json!("v0"), &json!("k"))
    );
    let o = s.rowkit(&["--json", "key", "decode", "--schema", "s3", "hex:4200ff"]);
    assert_eq!(o.status.code(), Some(2));
    let e: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(e["error"]["id"], "not_an_s3_row_key");
}

#[test]
fn objects_versions_and_listings() {
    let s = Scratch::new("objects");
    s.ok(&["--json", "s3", "setup"]);
    let b = s.ok(&[
        "--json",
        "--now",
        "1700000000000000",
        "s3",
        "bucket",
        "create",
        "b",
    ]);
    assert_eq!(b["vformat"], "v1");
    let o = s.rowkit(&["--json", "s3", "get", "b", "missing"]);
    assert_eq!(o.status.code(), Some(1));
    let e: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(e["error"]["id"], "NoSuchKey");
    // Scenario 9 (v1): a version, then a delete marker.
    let p1 = s.ok(&[
        "--json",
        "--now",
        "1700000000001000",
        "s3",
        "--pid",
        "4242",
        "put",
        "b",
        "k",
        "--value",
        r#"{"key":"k","n":1}"#,
        "--versioning",
    ]);
    let v1 = p1["version_id"].as_str().unwrap().to_string();
    let p2 = s.ok(&[
        "--json",
        "--now",
        "1700000000002000",
        "s3",
        "--pid",
        "4242",
        "put",
        "b",
        "k",
        "--value",
        r#"{"key":"k","isDeleteMarker":true}"#,
        "--versioning",
    ]);
    let dm = p2["version_id"].as_str().unwrap().to_string();
    assert_eq!(
        p2["events"][1],
        json!({"type": "delete", "collection": "b", "key": "\u{7f}Mk"})
    );
    let v = s.ok(&["--json", "s3", "versions", "b"]);
    assert_eq!(v["Versions"][0]["versionId"], json!(v1));
    assert_eq!(v["DeleteMarkers"][0]["versionId"], json!(dm));
    assert_eq!(v["IsTruncated"], false);
    // Scenario 21's first page.
    s.ok(&["--json", "s3", "bucket", "create", "c"]);
    for k in ["a", "b/1", "b/2", "c", "d/e/f", "d/g", "e"] {
        s.ok(&[
            "--json",
            "s3",
            "put",
            "c",
            k,
            "--value",
            &format!(r#"{{"key":"{k}"}}"#),
        ]);
    }
    let l = s.ok(&[
        "--json",
        "s3",
        "list",
        "c",
        "--delimiter",
        "/",
        "--max-keys",
        "2",
    ]);
    assert_eq!(l["Contents"][0]["key"], "a");
    assert_eq!(l["CommonPrefixes"], json!(["b/"]));
    assert_eq!(
        (&l["IsTruncated"], &l["NextMarker"], &l["Delimiter"]),
        (&json!(true), &json!("b/"), &json!("/"))
    );
    // A delete of the current version with the repair run at its due time.
    s.ok(&[
        "--json",
        "--now",
        "1700000000003000",
        "s3",
        "--pid",
        "4242",
        "put",
        "b",
        "x",
        "--value",
        r#"{"key":"x","n":1}"#,
        "--versioning",
    ]);
    let p = s.ok(&[
        "--json",
        "--now",
        "1700000000004000",
        "s3",
        "--pid",
        "4243",
        "put",
        "b",
        "x",
        "--value",
        r#"{"key":"x","n":2}"#,
        "--versioning",
    ]);
    let cur = p["version_id"].as_str().unwrap().to_string();
    let d = s.ok(&[
        "--json",
        "--now",
        "1700000000005000",
        "s3",
        "delete",
        "b",
        "x",
        "--version-id",
        &cur,
    ]);
    assert_eq!(d["repairs"][0]["outcome"], "repaired");
    let g = s.ok(&["--json", "s3", "get", "b", "x"]);
    assert_eq!(g["value"]["n"], 1);
    assert_eq!(g["value"]["originOp"], "s3:ObjectRemoved:Delete");
    let del = s.ok(&["--json", "s3", "bucket", "delete", "c"]);
    assert_eq!(del["deleted_rows"], 7);
}

/// Scenario 19 through `s3 put --version-id X --repair-master` (Case4, `objmeta.md` 7): with
/// the master at X the master becomes the updated X; after a newer version only `V(X)`
/// changes and the master stays; the result echoes the value's `versionId`.
#[test]
fn put_repair_master() {
    let s = Scratch::new("repair-master");
    s.ok(&["--json", "s3", "setup"]);
    s.ok(&["--json", "s3", "bucket", "create", "b"]);
    let put = |now: &str, value: &str, extra: &[&str]| {
        let mut args = vec![
            "--json", "--now", now, "s3", "--pid", "4242", "put", "b", "k", "--value", value,
        ];
        args.extend_from_slice(extra);
        s.ok(&args)
    };
    let x = put(
        "1700000000001000",
        r#"{"key":"k","n":1}"#,
        &["--versioning"],
    )["version_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(x, "98299999999998999999RG001  4242.0");
    let x2 = json!({"key": "k", "n": 2, "versionId": x});
    let r = put(
        "1700000000002000",
        &x2.to_string(),
        &["--version-id", &x, "--repair-master"],
    );
    assert_eq!(r["result"], json!(format!(r#"{{"versionId": "{x}"}}"#)));
    assert_eq!(r["version_id"], json!(x));
    assert_eq!(
        r["events"],
        json!([
            {"type": "put", "collection": "b", "key": format!("\u{7f}Vk\u{0}{x}"), "value": x2},
            {"type": "put", "collection": "b", "key": "\u{7f}Mk", "value": x2},
        ])
    );
    assert_eq!(s.ok(&["--json", "s3", "get", "b", "k"])["value"], x2);
    let v2 = put(
        "1700000000003000",
        r#"{"key":"k","n":3}"#,
        &["--versioning"],
    )["version_id"]
        .as_str()
        .unwrap()
        .to_string();
    let x4 = json!({"key": "k", "n": 4, "versionId": x});
    let r = put(
        "1700000000004000",
        &x4.to_string(),
        &["--version-id", &x, "--repair-master"],
    );
    assert_eq!(r["version_id"], json!(x));
    let master = s.ok(&["--json", "s3", "get", "b", "k"]);
    assert_eq!(
        master["value"],
        json!({"key": "k", "n": 3, "versionId": v2})
    );
    let vx = s.ok(&["--json", "s3", "get", "b", "k", "--version-id", &x]);
    assert_eq!(vx["value"], x4);
    // No versionId in the value: the result says "undefined".
    let r = put(
        "1700000000005000",
        r#"{"key":"k","n":5}"#,
        &["--version-id", &x, "--repair-master"],
    );
    assert_eq!(r["result"], json!(r#"{"versionId": "undefined"}"#));
    assert_eq!(r["version_id"], json!("undefined"));
}
