//! End-to-end tests of `rowkit mt` and `rowkit key … mt` on a real embedded (redb) file.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

const T0: &str = "1700000000000000";
const S: &str = "/127.0.0.1:8000/quux";

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rowkit-mt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .arg("--store")
            .arg(format!("embedded:{}", self.0.join("t.redb").display()))
            .args(["--now", T0, "--json"])
            .args(args)
            .env_remove("ROWKIT_STORE")
            .output()
            .unwrap()
    }

    /// The text output (no `--json`) of a command that succeeds.
    fn text(&self, args: &[&str]) -> String {
        let o = Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .arg("--store")
            .arg(format!("embedded:{}", self.0.join("t.redb").display()))
            .args(["--now", T0])
            .args(args)
            .env_remove("ROWKIT_STORE")
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {o:?}");
        String::from_utf8(o.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).unwrap()
    }

    fn fails(&self, args: &[&str], code: i32, id: &str) {
        let o = self.run(args);
        assert_eq!(o.status.code(), Some(code), "{args:?}");
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["error"]["id"], id, "{args:?}");
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Text output: RFC 3339 deadlines (T0 is 2023-11-14T22:13:20Z), no blank line for the root,
/// no leading space when the whole name resolved.
#[test]
fn text_output_is_tidy_and_readable() {
    let s = Scratch::new("text");
    s.text(&["mt", "setup"]);
    assert_eq!(
        s.text(&["mt", "mount", "a/b", S, "--ttl", "3600"]),
        format!("mounted {S} on a/b until 2023-11-14T23:13:20Z (row c8d81ac6/a/b)\n")
    );
    s.text(&["mt", "mount", "a/c", "/h:1", "--ttl", "1", "--mt", "--leaf"]);
    assert_eq!(
        s.text(&["mt", "glob", "..."]),
        format!(
            "(root)\na\na/b {S} (until 2023-11-14T23:13:20Z)\n\
             a/c /h:1 (until 2023-11-14T22:13:21Z) [mt] [leaf]\n"
        )
    );
    assert_eq!(
        s.text(&["mt", "resolve", "a/b"]),
        format!("{S} (until 2023-11-14T23:13:20Z)\n")
    );
    assert_eq!(
        s.text(&["mt", "resolve", "a/b/x/y"]),
        format!("{S} (until 2023-11-14T23:13:20Z) (suffix x/y)\n")
    );
}

#[test]
fn mount_resolve_glob_delete() {
    let s = Scratch::new("basic");
    assert_eq!(s.json(&["mt", "setup"]), json!({}));
    let m = s.json(&["mt", "mount", "stuff", S, "--ttl", "3600"]);
    assert_eq!(
        m,
        json!({"name": "stuff", "server": S, "deadline_us": 1_700_003_600_000_000i64,
            "row_key": "dac22346/stuff", "row_key_hex": "64616332323334362f7374756666"})
    );
    assert_eq!(
        s.json(&["mt", "resolve", "stuff/the/rain"]),
        json!({"name": "the/rain", "servers": [{"server": S, "deadline_us": 1_700_003_600_000_000i64}], "mt": false, "leaf": false})
    );
    s.json(&["mt", "mount", "a/b", S, "--mt", "--leaf"]);
    let g = s.json(&["mt", "glob", "*/..."]);
    let names: Vec<&str> = g
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, ["a", "a/b", "stuff"]);
    let ab = g
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "a/b")
        .unwrap();
    assert_eq!(
        (ab["mt"].clone(), ab["leaf"].clone()),
        (json!(true), json!(true))
    );
    s.fails(
        &["mt", "delete", "a"],
        1,
        "v.io/x/ref/services/mounttable/btmtd/internal.errNotEmpty",
    );
    assert_eq!(s.json(&["mt", "delete", "a", "--subtree"]), json!({}));
    assert_eq!(s.json(&["mt", "unmount", "stuff"]), json!({}));
    s.fails(
        &["mt", "resolve", "stuff"],
        1,
        "v.io/v23/naming.nameDoesntExist",
    );
    s.fails(
        &["mt", "mount", "x", "/atrampabroad"],
        2,
        "v.io/x/ref/services/mounttable/btmtd/internal.errMalformedAddress",
    );
    s.fails(&["mt", "glob", "/x"], 2, "path.ErrBadPattern");
    let f = s.json(&["mt", "fsck"]);
    assert_eq!(f["inconsistent"], 0);
}

/// A second `mt setup` finds the root and changes nothing: exit 0 without a permissions file;
/// with one (which it cannot apply), exit 1 saying so.
#[test]
fn setup_twice() {
    let s = Scratch::new("setup-twice");
    assert_eq!(s.json(&["mt", "setup"]), json!({}));
    s.json(&["mt", "mount", "a", S]);
    assert_eq!(s.json(&["mt", "setup"]), json!({}));
    let text = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .arg("--store")
        .arg(format!("embedded:{}", s.0.join("t.redb").display()))
        .args(["mt", "setup"])
        .env_remove("ROWKIT_STORE")
        .output()
        .unwrap();
    assert!(text.status.success());
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("already set up"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    let file = s.0.join("root.perms");
    std::fs::write(&file, r#"{"":{"Admin":{"In":["root"]}}}"#).unwrap();
    s.fails(
        &["mt", "setup", "--perms-file", file.to_str().unwrap()],
        1,
        "v.io/x/ref/services/mounttable/btmtd/internal.errConcurrentAccess",
    );
    // The mount made before is still there.
    let r = s.json(&["mt", "resolve", "a"]);
    assert!(r.to_string().contains("127.0.0.1:8000"), "{r}");
}

#[test]
fn perms_and_setup_file() {
    let s = Scratch::new("perms");
    let file = s.0.join("test.perms");
    std::fs::write(&file, r#"{"":{"Read":{"In":["..."]},"Admin":{"In":["root"]},"Create":{"In":["root","bob"]}},"users":{"Create":{"In":["..."]},"Resolve":{"In":["..."]}},"users/%%":{"Admin":{"In":["%%"]}}}"#).unwrap();
    s.json(&["mt", "setup", "--perms-file", file.to_str().unwrap()]);
    s.json(&["--as", "alice", "mt", "mount", "users/alice", S]);
    let p = s.json(&["--as", "alice", "mt", "perms", "get", "users/alice"]);
    assert_eq!(
        p["perms"],
        json!({"Admin": {"In": ["alice"], "NotIn": null}})
    );
    let v = p["version"].as_str().unwrap().to_string();
    s.fails(
        &[
            "mt",
            "perms",
            "set",
            "users/alice",
            "{}",
            "--version",
            "xyzzy",
        ],
        1,
        "v.io/v23/verror.BadVersion",
    );
    let set = s.json(&[
        "mt",
        "perms",
        "set",
        "users/alice",
        r#"{"Read":{"In":["b","a","a"]}}"#,
        "--version",
        &v,
    ]);
    assert_eq!(
        set["perms"],
        json!({"Read": {"In": ["a", "b"], "NotIn": null}})
    );
    assert_ne!(set["version"].as_str().unwrap(), v);
    s.fails(
        &["--as", "carol", "mt", "perms", "set", "x", "{}"],
        1,
        "v.io/v23/security/access.NoPermissions",
    );
    let o = s.run(&["mt", "perms", "set", "x", "not json"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn key_encode_decode() {
    let s = Scratch::new("key");
    assert_eq!(
        s.json(&["key", "encode", "mt", "foo"]),
        json!({"schema": "mt", "name": "foo", "row_key": "88e481b8/foo", "row_key_hex": "38386534383162382f666f6f"})
    );
    let plain = s.run(&["key", "encode", "mt", "foo/bar"]);
    let o = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .args(["key", "encode", "mt", "foo/bar"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "aeeed5fe/foo/bar\n");
    assert!(plain.status.success());
    let d = s.json(&["key", "decode", "--schema", "mt", "88e481b8/foo"]);
    assert_eq!(d["kind"], "node");
    assert_eq!(d["name"], "foo");
    assert_eq!(d["hash"], "88e481b8");
    assert_eq!(d["hash_ok"], true);
    let bad = s.json(&["key", "decode", "--schema", "mt", "00000000/foo"]);
    assert_eq!(bad["hash_ok"], false);
    let c = s.json(&[
        "key",
        "decode",
        "--schema",
        "mt",
        "num-servers-per-user:dev.v.io:u:alice",
    ]);
    assert_eq!(
        (
            c["kind"].clone(),
            c["counter"].clone(),
            c["creator"].clone()
        ),
        (
            json!("counter"),
            json!("servers"),
            json!("dev.v.io:u:alice")
        )
    );
    let o = s.run(&["key", "decode", "--schema", "mt", "short"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Sets up the tables with `a/b` mounted and a node row for `zz` that the root does not
/// reference (an orphan); returns the orphan's row key (escaped text).
fn with_orphan(s: &Scratch) -> String {
    s.json(&["mt", "setup"]);
    s.json(&["mt", "mount", "a/b", S, "--ttl", "600"]);
    let key = s.json(&["key", "encode", "mt", "zz"])["row_key"]
        .as_str()
        .unwrap()
        .to_string();
    s.json(&["admin", "set", "mounttable", &key, "m:x=1"]);
    key
}

/// Fsck findings reach the operator (issue 17, point 6): each on stderr as it is found, all of
/// them in the `--json` document beside the summary, and the failure's id there too. Before,
/// the CLI dropped them: the JSON was only the error document.
#[test]
fn fsck_findings_on_stderr_and_in_json() {
    let s = Scratch::new("fsck-findings");
    let key = with_orphan(&s);

    let o = s.run(&["mt", "fsck"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["error"]["id"], "rowkit.mounttable.FsckInconsistent");
    assert_eq!(doc["inconsistent"], 1);
    assert_eq!(
        doc["findings"],
        json!([{"row_key": key, "row_key_hex": hex::encode(&key), "kind": "orphan", "fixed": false,
                "detail": "node \"zz\" (id \"\"): its parent \"\" does not reference it"}])
    );
    // The counter of its (empty) creator does not count it: said, not an inconsistency.
    let counter = "num-nodes-per-user:";
    assert_eq!(
        doc["counters"],
        json!([{"row_key": counter, "row_key_hex": hex::encode(counter),
                "detail": "no counter row; the nodes imply 1", "rebuilt": false}])
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(&format!(
            "rowkit: fsck: orphan row {key}: node \"zz\" (id \"\"): its parent \"\" does not reference it\n"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("FsckInconsistent") || stderr.contains("inconsistencies"),
        "{stderr}"
    );
}

/// `rowkit check` reports the mount table's fsck findings as check findings (kind, row, what a
/// repair does), left without `--fix` (rowkit-client's `MountTable::check`, which the browser
/// tool's Check runs too).
#[test]
fn check_reports_an_orphan() {
    let s = Scratch::new("check-orphan");
    let key = with_orphan(&s);

    let o = s.run(&["check"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mt = &doc["checks"][0];
    assert_eq!(mt["schema"], "mt");
    assert_eq!(mt["findings_by_kind"], json!({"orphan": 1}));
    assert_eq!(
        (mt["repaired"].clone(), mt["left"].clone()),
        (json!(0), json!(1))
    );
    assert_eq!(
        mt["notes"],
        json!(["counter row num-nodes-per-user:: no counter row; the nodes imply 1"])
    );
    assert_eq!(
        mt["findings"][0],
        json!({"schema": "mt", "kind": "orphan", "row_key": key, "row_key_hex": hex::encode(&key),
            "detail": "node \"zz\" (id \"\"): its parent \"\" does not reference it",
            "repair": "delete the orphan node", "repaired": false})
    );
}

/// Mount and SetPermissions on the root name `""` (its walk visits the root twice, §12.1).
/// Before, the creating walk took the root for an unreferenced child of itself and tried to
/// adopt it until the deadline ran out (exit 1, "aborted", a minute of CPU).
#[test]
fn mount_and_set_permissions_on_the_root() {
    let s = Scratch::new("root");
    s.json(&["mt", "setup"]);
    let m = s.json(&["--deadline", "5", "mt", "mount", "", S, "--ttl", "600"]);
    assert_eq!(m["name"], "");
    let r = s.json(&["mt", "resolve", ""]);
    assert_eq!(r["servers"][0]["server"], S);
    let p = s.json(&[
        "--deadline",
        "5",
        "mt",
        "perms",
        "set",
        "",
        r#"{"Admin":{"In":["..."]}}"#,
    ]);
    assert_eq!(p["perms"]["Admin"]["In"], json!(["..."]));
    assert_eq!(s.json(&["mt", "fsck"])["inconsistent"], 0);
}

/// `--deadline` bounds every `mt` command as it does the other schemas' (`aborted` before
/// anything is written), except `fsck`, which as a check keeps its own (longer) time.
#[test]
fn deadline_zero_aborts_mt_commands_but_not_fsck() {
    let s = Scratch::new("deadline-zero");
    s.json(&["mt", "setup"]);
    s.fails(
        &["--deadline", "0", "mt", "mount", "a", "/h:1"],
        1,
        "aborted",
    );
    s.fails(&["--deadline", "0", "mt", "resolve", "a"], 1, "aborted");
    // Nothing was mounted.
    s.fails(
        &["mt", "resolve", "a"],
        1,
        "v.io/v23/naming.nameDoesntExist",
    );
    assert_eq!(
        s.json(&["--deadline", "0", "mt", "fsck"])["inconsistent"],
        0
    );
}
