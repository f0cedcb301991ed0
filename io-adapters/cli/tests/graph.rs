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

/// The triples of the repository's own escaping vectors (`codec/tests/vectors/
/// triples_gotext.json`, written by Go's `strconv.Quote` in `codec/tools/gotext/
/// make_vectors.go`).
fn go_quote_triples() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../codec/tests/vectors/triples_gotext.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let triples = v["triples"].as_array().unwrap().clone();
    assert!(!triples.is_empty());
    triples
}

/// `key encode graph` prints the text, UUID, family, timestamp and row keys BadWolf writes for
/// triples whose predicates hold format and tag characters, unassigned code points and a flag
/// emoji (escaped by Go) or a rune printable from Unicode 15.0 (kept raw).
#[test]
fn key_encode_graph_escapes_like_go() {
    let s = Scratch::new("goquote");
    for c in go_quote_triples() {
        let graph = c["graph"].as_str().unwrap();
        let input = c["input"].as_str().unwrap();
        let enc = json(&s.rowkit(&["--json", "key", "encode", "graph", graph, input]));
        assert_eq!(enc["triple"], c["text"], "{c}");
        assert_eq!(enc["uuid"], c["triple_uuid"], "{c}");
        assert_eq!(enc["family"], c["family"], "{c}");
        assert_eq!(enc["timestamp_us"], c["timestamp_micros"], "{c}");
        let rows = enc["rows"].as_array().unwrap();
        let cells = c["cells"].as_array().unwrap();
        assert_eq!(rows.len(), cells.len(), "{c}");
        for (row, cell) in rows.iter().zip(cells) {
            assert_eq!(row["row_key"], cell["row"], "{c}");
            let column = format!("{}:{}", c["family"].as_str().unwrap(), row["qualifier"]);
            assert_eq!(column.replace('"', ""), cell["column"].as_str().unwrap());
        }
    }
}

/// A triple whose predicate holds a tag character, written by BadWolf (its four cells, value
/// = Go's escaped text, timestamp from that text's SHA-256, all from the Go-written vectors):
/// rowkit finds it, `graph add` of the same triple lands on the same cells (no second version),
/// and `graph remove` (RemoveTriples) deletes every one of them.
#[test]
fn a_badwolf_triple_with_a_tag_character_is_removed() {
    let s = Scratch::new("tagremove");
    assert!(s.rowkit(&["graph", "setup"]).status.success());
    assert!(s.rowkit(&["graph", "create", "test"]).status.success());
    let tagged: Vec<Value> = go_quote_triples()
        .into_iter()
        .filter(|c| c["text"].as_str().unwrap().contains("\\U000e0067"))
        .collect();
    assert!(!tagged.is_empty(), "vectors with a tag character");
    let dump_of = |rows: &[&str]| -> Vec<Value> {
        let d = json(&s.rowkit(&["--json", "admin", "dump", "badwolf"]));
        d["cells"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|cell| rows.contains(&cell["row_key"].as_str().unwrap()))
            .cloned()
            .collect()
    };
    for c in &tagged {
        let text = c["text"].as_str().unwrap();
        let ts = c["timestamp_micros"].as_i64().unwrap().to_string();
        let rows: Vec<&str> = c["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|cell| cell["row"].as_str().unwrap())
            .collect();
        // BadWolf's write: the escaped text as the value of each of the four cells.
        for cell in c["cells"].as_array().unwrap() {
            let spec = format!("{}=hex:{}", cell["column"].as_str().unwrap(), hex_of(text));
            let row = cell["row"].as_str().unwrap();
            let set = s.rowkit(&["admin", "set", "badwolf", row, &spec, "--timestamp", &ts]);
            assert!(
                set.status.success(),
                "{}",
                String::from_utf8_lossy(&set.stderr)
            );
        }
        let input = c["input"].as_str().unwrap();
        let found = json(&s.rowkit(&["--json", "graph", "query", "test", "exist", input]));
        assert_eq!(found.as_array().unwrap().len(), 1, "{c}");
        let added = json(&s.with_stdin(&["--json", "graph", "add", "test"], input));
        assert_eq!(added["added"], 1);
        let cells = dump_of(&rows);
        assert_eq!(
            cells.len(),
            4,
            "one cell per row, not a second version: {cells:?}"
        );
        for cell in &cells {
            assert_eq!(cell["timestamp_us"], c["timestamp_micros"], "{c}");
            assert_eq!(cell["value_hex"], hex_of(text), "{c}");
        }
        let removed = json(&s.rowkit(&["--json", "graph", "remove", "test", input]));
        assert_eq!(removed["removed"], 1, "{c}");
        assert_eq!(
            dump_of(&rows),
            Vec::<Value>::new(),
            "BadWolf's cells are gone: {c}"
        );
        let gone = s.rowkit(&["--json", "graph", "query", "test", "exist", input]);
        assert_eq!(gone.status.code(), Some(1), "{c}");
    }
}
