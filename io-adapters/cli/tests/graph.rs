//! End-to-end tests of `rowkit graph` and `rowkit key … graph` on a real embedded file.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rowkit-graph-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rowkit"));
        c.arg("--store")
            .arg(format!("embedded:{}", self.0.join("t.redb").display()))
            .args(args)
            .env_remove("ROWKIT_STORE");
        c
    }

    fn rowkit(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn with_stdin(&self, args: &[&str], input: &str) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn graph_lifecycle_and_queries() {
    let s = Scratch::new("life");
    assert!(s.rowkit(&["graph", "setup"]).status.success());
    let created = json(&s.rowkit(&["--json", "graph", "create", "test"]));
    assert_eq!(created["row_key"], "graph:test");
    let again = s.rowkit(&["--json", "graph", "create", "test"]);
    assert_eq!(again.status.code(), Some(1));
    let added = json(&s.with_stdin(
        &["--json", "graph", "add", "test"],
        "/u<joe> \"parent_of\"@[] /u<mary>\n\n/u<joe>\t\"parent_of\"@[]\t/u<anne>\n",
    ));
    assert_eq!(added["added"], 2);
    let found = json(&s.rowkit(&[
        "--json",
        "graph",
        "query",
        "test",
        "objects",
        "/u<joe>",
        "\"parent_of\"@[]",
    ]));
    let items: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["item"].as_str().unwrap())
        .collect();
    assert_eq!(items, ["/u<anne>", "/u<mary>"]);
    assert_eq!(found[1]["uuid"], "c7f35b5c-36f5-508c-9eb3-331a556dee3c");
    assert_eq!(found[1]["triple"], "/u<joe>\t\"parent_of\"@[]\t/u<mary>");
    let page = json(&s.rowkit(&[
        "--json", "graph", "query", "test", "triples", "--max", "1", "--offset", "1",
    ]));
    assert_eq!(page.as_array().unwrap().len(), 1);
    let t = "/u<joe> \"parent_of\"@[] /u<mary>";
    let yes = s.rowkit(&["--json", "graph", "query", "test", "exist", t]);
    assert_eq!(json(&yes).as_array().unwrap().len(), 1);
    let removed = json(&s.rowkit(&["--json", "graph", "remove", "test", t]));
    assert_eq!(removed["removed"], 1);
    let no = s.rowkit(&["--json", "graph", "query", "test", "exist", t]);
    assert_eq!(no.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&no.stdout).trim(), "[]");
    let list = json(&s.rowkit(&["--json", "graph", "list"]));
    assert_eq!(list, serde_json::json!(["test"]));
    let bad = s.rowkit(&["graph", "query", "test", "objects", "nonsense"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(s.rowkit(&["graph", "drop", "test"]).status.success());
    let gone = s.rowkit(&["graph", "query", "test", "triples"]);
    assert_eq!(gone.status.code(), Some(1));
}

#[test]
fn key_encode_and_decode() {
    let s = Scratch::new("key");
    let enc = json(&s.rowkit(&[
        "--json",
        "key",
        "encode",
        "graph",
        "test",
        "/u<joe> \"parent_of\"@[] /u<mary>",
    ]));
    assert_eq!(enc["uuid"], "c7f35b5c-36f5-508c-9eb3-331a556dee3c");
    assert_eq!(enc["family"], "immutable_triple");
    assert_eq!(enc["timestamp_us"], 72000000);
    assert_eq!(enc["rows"][0]["index"], "OSP");
    assert_eq!(enc["rows"][0]["qualifier"], "SP");
    assert_eq!(enc["graph_row"]["row_key"], "graph:test");
    let key = enc["rows"][3]["row_key"].as_str().unwrap();
    let dec = json(&s.rowkit(&["--json", "key", "decode", "--schema", "graph", key]));
    assert_eq!(dec["kind"], "triple");
    assert_eq!(dec["index"], "SPO");
    assert_eq!(dec["s"], "2821fefc-a86e-597b-b187-58805cad8813");
    let g = json(&s.rowkit(&["--json", "key", "decode", "--schema", "graph", "graph:a:b"]));
    assert_eq!(g["kind"], "graph");
    assert_eq!(g["graph"], "a:b");
    let bad = s.rowkit(&["key", "decode", "--schema", "graph", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `graph check`: a clean graph exits 0; a stray key and a triple written to one of its four
/// rows only (in a graph never created) are reported (text on stdout, one JSON entry per
/// finding), exit 1; `--fix` repairs the index and graph rows, after which only the
/// report-only finding is left; a check without `--fix` opens the file read-only.
#[test]
fn check_reports_fixes_and_exits_by_what_is_left() {
    let s = Scratch::new("check");
    let ok = |args: &[&str]| {
        let o = s.rowkit(args);
        assert!(o.status.success(), "{args:?}: {o:?}");
        o
    };
    ok(&["graph", "setup"]);
    ok(&["graph", "create", "test"]);
    ok(&["graph", "add", "test", "/u<a> \"knows\"@[] /u<b>"]);
    let clean = ok(&["graph", "check"]);
    assert_eq!(
        String::from_utf8_lossy(&clean.stdout),
        "graph: 5 rows scanned, 0 findings, 0 repaired, 0 left\n"
    );

    let osp = "orphan:OSP:ab0e8971-e7d9-549d-9124-d50759a18131:b6e62536-564c-5b86-bc87-30bf8543d607:d12508a9-abfd-5a33-ba63-c8d86584d929";
    let cell = "immutable_triple:SP=/u<a>\\x09\"knows\"@[]\\x09/u<b>";
    ok(&[
        "admin",
        "set",
        "badwolf",
        osp,
        cell,
        "--timestamp",
        "1000000",
    ]);
    ok(&[
        "admin",
        "set",
        "badwolf",
        "test:XYZ:junk",
        "immutable_triple:SP=x",
    ]);

    let o = s.rowkit(&["--json", "graph", "check", "--grace", "0"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["schema"], "graph");
    assert_eq!(doc["rows_scanned"], 7);
    assert_eq!(
        doc["findings_by_kind"],
        serde_json::json!({"graph_without_metadata": 1, "missing_index": 3, "undecodable_key": 1})
    );
    assert_eq!(
        (doc["repaired"].as_u64(), doc["left"].as_u64()),
        (Some(0), Some(5))
    );
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 5);
    let rows: Vec<&str> = findings
        .iter()
        .map(|f| f["row_key"].as_str().unwrap())
        .collect();
    assert!(
        rows.contains(&"graph:orphan") && rows.contains(&"test:XYZ:junk"),
        "{rows:?}"
    );
    for f in findings {
        let repairable = f["kind"] != "undecodable_key";
        assert_eq!(f["repair"] != "none", repairable, "{f}");
        assert_eq!(f["repaired"], false);
        assert_eq!(f["row_key_hex"], hex_of(f["row_key"].as_str().unwrap()));
    }

    let fixed = s.rowkit(&["graph", "check", "--fix", "--grace", "0"]);
    assert_eq!(fixed.status.code(), Some(1), "{fixed:?}");
    let text = String::from_utf8_lossy(&fixed.stdout);
    assert_eq!(text.matches("(repaired: ").count(), 4, "{text}");
    assert!(text.ends_with("4 repaired, 1 left\n"), "{text}");

    let after = s.rowkit(&["graph", "check", "--grace", "0"]);
    assert_eq!(after.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&after.stdout),
        "undecodable_key\ttest:XYZ:junk\tnot a triple row g:IDX:<uuid>:<uuid>:<uuid> nor a graph row graph:<g>\n\
         graph: 11 rows scanned, 1 findings (undecodable_key 1), 0 repaired, 1 left\n"
    );
    let exist = ok(&[
        "graph",
        "query",
        "orphan",
        "exist",
        "/u<a> \"knows\"@[] /u<b>",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&exist.stdout),
        "/u<a>\t\"knows\"@[]\t/u<b>\n"
    );
    let bad = s.rowkit(&["graph", "check", "--grace", "x"]);
    assert_eq!(bad.status.code(), Some(2));
}

fn hex_of(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}
