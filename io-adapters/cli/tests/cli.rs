//! End-to-end tests of the `rowkit` binary on a real embedded (redb) file.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

mod support;

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rowkit-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn store(&self) -> String {
        format!("embedded:{}", self.0.join("t.redb").display())
    }

    fn rowkit(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .arg("--store")
            .arg(self.store())
            .args(args)
            .env_remove("ROWKIT_STORE")
            .output()
            .unwrap()
    }
}

impl Scratch {
    /// Every schema's tables, with bucket `b` holding object `k`, graph `g`, and table `t`
    /// with family `cf`.
    fn set_up_every_schema(&self) {
        for args in [
            &["s3", "setup"][..],
            &["s3", "bucket", "create", "b"],
            &["s3", "put", "b", "k", "--value", r#"{"a":1}"#],
            &["gold", "setup"],
            &["graph", "setup"],
            &["graph", "create", "g"],
            &["mt", "setup"],
            &["admin", "create-table", "t", "--family", "cf"],
        ] {
            let o = self.rowkit(args);
            assert!(o.status.success(), "{args:?}: {o:?}");
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn create_set_dump_round_trip() {
    let s = Scratch::new("roundtrip");
    let o = s.rowkit(&[
        "admin",
        "create-table",
        "demo",
        "--family",
        "cf:maxversions=2",
        "--family",
        "meta",
    ]);
    assert!(o.status.success(), "{o:?}");
    let o = s.rowkit(&[
        "--now",
        "2024-01-02T03:04:05.678Z",
        "admin",
        "set",
        "demo",
        "user\\x00#1",
        "cf:name=Ada",
        "meta:\\xff=\\\\",
    ]);
    assert!(o.status.success(), "{o:?}");
    let o = s.rowkit(&[
        "admin",
        "set",
        "demo",
        "other",
        "cf:x=1",
        "--timestamp",
        "5000",
    ]);
    assert!(o.status.success(), "{o:?}");

    let o = s.rowkit(&["admin", "dump", "demo"]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        stdout(&o),
        "other\tcf:x\t@1970-01-01T00:00:00.005Z\t1\n\
         user\\x00#1\tcf:name\t@2024-01-02T03:04:05.678Z\tAda\n\
         user\\x00#1\tmeta:\\xff\t@2024-01-02T03:04:05.678Z\t\\\\\n"
    );

    let o = s.rowkit(&[
        "--json",
        "admin",
        "dump",
        "demo",
        "--prefix",
        "hex:75736572",
    ]);
    assert!(o.status.success(), "{o:?}");
    let v = json(&o);
    assert_eq!(v["rows"], 1);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    assert_eq!(cells[0]["row_key"], "user\\x00#1");
    assert_eq!(cells[0]["row_key_hex"], "75736572002331");
    assert_eq!(cells[1]["qualifier_hex"], "ff");
    assert_eq!(cells[1]["value"], "\\\\");

    let o = s.rowkit(&["--json", "admin", "list-tables"]);
    assert_eq!(
        json(&o)["tables"][0]["families"][0]["gc_rule"]["max_num_versions"],
        2
    );
}

#[test]
fn exit_codes_and_errors() {
    let s = Scratch::new("errors");
    // Unknown table: the operation fails.
    let o = s.rowkit(&["--json", "admin", "dump", "nope"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(json(&o)["error"]["id"], "not_found");
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);

    // A schema's table missing: the store is not set up, and the error says how to set it up
    // (a read-write command first: it creates the store file the read-only ones need).
    for (args, table, setup) in [
        (&["mt", "resolve", "a"][..], "mounttable", "rowkit mt setup"),
        (&["gold", "tile"][..], "gold", "rowkit gold setup"),
        (&["s3", "list", "photos"][..], "objmeta", "rowkit s3 setup"),
        (&["graph", "list"][..], "badwolf", "rowkit graph setup"),
    ] {
        let o = s.rowkit(&[&["--json"][..], args].concat());
        assert_eq!(o.status.code(), Some(1), "{args:?}: {o:?}");
        let error = &json(&o)["error"];
        assert_eq!(error["id"], "not_set_up", "{args:?}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("(table \"{table}\" does not exist): `{setup}`")),
            "{args:?}: {message}"
        );
    }

    // Bad input: an invalid family name and a bad timestamp are rejected by the store.
    let o = s.rowkit(&["admin", "create-table", "t", "--family", "bad:name"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let o = s.rowkit(&["admin", "create-table", "t", "--family", "cf"]);
    assert!(o.status.success());
    let o = s.rowkit(&[
        "--json",
        "admin",
        "set",
        "t",
        "r",
        "cf:q=v",
        "--timestamp",
        "1234",
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(json(&o)["error"]["id"], "invalid_argument");
    let o = s.rowkit(&["--json", "admin", "set", "t", "r", "nofam:q=v"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        json(&o)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Requested column family not found.")
    );

    // Bad usage.
    assert_eq!(s.rowkit(&["admin", "frobnicate"]).status.code(), Some(2));
    assert_eq!(
        s.rowkit(&["--now", "soon", "admin", "list-tables"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        s.rowkit(&["admin", "dump", "t", "--prefix", "\\q"])
            .status
            .code(),
        Some(2)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .args(["--store", "floppy:", "admin", "list-tables"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn memory_store_and_env_default() {
    let o = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .args(["admin", "list-tables"])
        .env("ROWKIT_STORE", "memory:")
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "");
}

/// A closed stdout (`rowkit … | head`) ends every command quietly (issue 17, point 2): the
/// exit code it has when its output is read (0 here), nothing on stderr, no panic, with and
/// without `--json`. Before the fix `println!` panicked: exit 101 and "failed printing to
/// stdout: Broken pipe".
#[test]
fn closed_stdout_ends_quietly() {
    let s = Scratch::new("closed-pipe");
    let setup: [&[&str]; 10] = [
        &["s3", "setup"],
        &["s3", "bucket", "create", "b"],
        &["s3", "put", "b", "k", "--value", r#"{"a":1}"#],
        &["mt", "setup"],
        &["mt", "mount", "a/b", "/srv:1", "--ttl", "600"],
        &["gold", "setup"],
        &["graph", "setup"],
        &["graph", "create", "g"],
        &["graph", "add", "g", "/u<joe>\t\"parent_of\"@[]\t/u<mary>"],
        &["admin", "create-table", "t1", "--family", "f"],
    ];
    for args in setup {
        let o = s.rowkit(args);
        assert!(o.status.success(), "{args:?}: {o:?}");
    }
    let commands: [&[&str]; 17] = [
        &["admin", "list-tables"],
        &["admin", "dump", "objmeta"],
        &["s3", "list", "b"],
        &["s3", "versions", "b"],
        &["s3", "get", "b", "k"],
        &["s3", "bucket", "list"],
        &["s3", "uuid"],
        &["mt", "glob", "..."],
        &["mt", "resolve", "a/b"],
        &["mt", "fsck"],
        &["gold", "newest"],
        &["gold", "tile"],
        &["graph", "list"],
        &["graph", "query", "g", "triples"],
        &["key", "encode", "mt", "a/b"],
        &["s3", "count"],
        &["--version"],
    ];
    for args in commands {
        for json in [false, true] {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_rowkit"));
            cmd.env("ROWKIT_STORE", s.store());
            if json {
                cmd.arg("--json");
            }
            // A pipe whose reader is gone: every write to it fails with EPIPE.
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            let o = cmd.args(args).stdout(writer).output().unwrap();
            assert_eq!(o.status.code(), Some(0), "{args:?} json={json}: {o:?}");
            assert_eq!(
                String::from_utf8_lossy(&o.stderr),
                "",
                "{args:?} json={json}"
            );
        }
    }
    // A failing command still says why on stderr and keeps its exit code.
    for json in [false, true] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rowkit"));
        cmd.arg("--store").arg(s.store()).env_remove("ROWKIT_STORE");
        if json {
            cmd.arg("--json");
        }
        let o = cmd
            .args(["key", "decode", "hex:00"])
            .stdout(writer)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "json={json}: {o:?}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.starts_with("rowkit: ") && stderr.lines().count() == 1,
            "{stderr}"
        );
    }
}

/// The store and group options in every position clap's `global = true` arguments (with their
/// hidden top-level copies, issue 33) take: before the group, after it, and after the
/// operation's own arguments; a group's option before a group without it is a usage error, as
/// after it. `--now` (RFC 3339, by jiff) and `maxage` (durations, by humantime) errors are one
/// line that names the option, the text and what is wrong.
#[test]
fn options_in_every_position_and_one_line_parse_errors() {
    let s = Scratch::new("positions");
    let store = s.store();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .args(args)
            .env_remove("ROWKIT_STORE")
            .output()
            .unwrap()
    };
    for args in [
        &["--store", &store, "s3", "setup"][..],
        &["s3", "--store", &store, "bucket", "create", "b"],
        &["s3", "put", "b", "k", "--value", "{}", "--store", &store],
        &[
            "--pid", "7", "s3", "put", "b", "k2", "--store", &store, "--value", "{}",
        ],
        &[
            "s3", "put", "b", "k3", "--value", "{}", "--pid", "7", "--store", &store,
        ],
    ] {
        let o = run(args);
        assert!(o.status.success(), "{args:?}: {o:?}");
    }
    let o = run(&["s3", "list", "b", "--json", "--store", &store]);
    assert!(o.status.success(), "{o:?}");
    let listed = json(&o).to_string();
    for key in ["\"k\"", "\"k2\"", "\"k3\""] {
        assert!(listed.contains(key), "{key} not in {listed}");
    }

    for args in [
        &["--pid", "7", "--store", &store, "admin", "list-tables"][..],
        &["--store", &store, "admin", "list-tables", "--pid", "7"],
        &["--layout", "md5", "--store", &store, "s3", "list", "b"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        let option = args
            .iter()
            .find(|a| ["--pid", "--layout"].contains(a))
            .unwrap();
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(option),
            "{args:?}: {o:?}"
        );
    }

    let one_line = |o: &Output, wanted: &[&str]| {
        assert_eq!(o.status.code(), Some(2), "{o:?}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.starts_with("rowkit: ") && stderr.lines().count() == 1,
            "{stderr}"
        );
        for part in wanted {
            assert!(stderr.contains(part), "{part:?} not in {stderr}");
        }
    };
    let o = s.rowkit(&["--now", "2024-13-01T00:00:00Z", "admin", "list-tables"]);
    one_line(&o, &["--now", "2024-13-01T00:00:00Z", "month"]);
    let o = s.rowkit(&["admin", "list-tables", "--now", "2024-01-01T00:00:00"]);
    one_line(&o, &["--now", "2024-01-01T00:00:00", "offset"]);
    let o = s.rowkit(&["admin", "create-table", "u", "--family", "old:maxage=5x"]);
    one_line(&o, &["maxage", "5x", "unknown time unit"]);
    // Accepted: the forms of the old parser, and more.
    let o = s.rowkit(&[
        "admin",
        "create-table",
        "u",
        "--family",
        "old:maxage=1h 30m",
    ]);
    assert!(o.status.success(), "{o:?}");
    let o = s.rowkit(&[
        "--now",
        "2024-01-01t00:00:00.5+01:00",
        "admin",
        "list-tables",
    ]);
    assert!(o.status.success(), "{o:?}");
}

/// Options go anywhere on the line (issue 17, point 3): a group's options before the group or
/// after its operation, top-level options after the operation; each help page lists only the
/// options that apply; usage errors also give the JSON error document with `--json`. Before:
/// `--pid` before `s3`, `--layout` before `gold` and `graph list --table X` were usage errors,
/// `--as`/`--table` of the mount table were on every help page, and `--json` usage errors
/// printed nothing on stdout.
#[test]
fn options_anywhere_on_the_line() {
    let s = Scratch::new("options");
    for args in [
        &["--layout", "digest-id", "gold", "setup"][..],
        &["graph", "setup", "--table", "tri"],
        &["--table", "names", "mt", "setup"],
        &["s3", "setup"],
        &["s3", "bucket", "create", "b", "--rg", "RG002"],
        &["--pid", "4242", "s3", "put", "b", "k", "--value", "{}"],
    ] {
        let o = s.rowkit(args);
        assert!(o.status.success(), "{args:?}: {o:?}");
    }
    let o = s.rowkit(&["admin", "list-tables", "--json"]);
    let tables = json(&o)["tables"].as_array().unwrap().clone();
    let table = |name: &str| {
        tables
            .iter()
            .find(|t| t["table"] == name)
            .unwrap_or_else(|| panic!("no table {name} in {tables:?}"))
            .clone()
    };
    for t in ["tri", "names", "names-counters", "objmeta"] {
        table(t);
    }
    // `--layout digest-id` before `gold`: the id counter family `I` is there.
    let gold = table("gold");
    assert!(
        gold["families"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"] == "I"),
        "{gold}"
    );
    let o = s.rowkit(&["gold", "newest", "--json", "--layout", "digest-id"]);
    assert!(o.status.success(), "{o:?}");
    let o = s.rowkit(&["graph", "list", "--table", "tri", "--json"]);
    assert!(o.status.success(), "{o:?}");

    for (page, absent) in [
        (&["gold", "setup", "--help"][..], "--as"),
        (&["s3", "--help"], "Node table"),
        (&["admin", "dump", "--help"], "--table"),
        (&["graph", "list", "--help"], "--pid"),
    ] {
        let o = s.rowkit(page);
        assert!(o.status.success(), "{page:?}");
        assert!(!stdout(&o).contains(absent), "{page:?} lists {absent}");
    }
    let o = s.rowkit(&["mt", "glob", "--help"]);
    assert!(stdout(&o).contains("--as"));
    // The store options belong to the groups with a store: not on `key`'s pages (which still
    // accept them, ignored, so a line written for every command runs) nor at the top.
    for page in [&["key", "encode", "--help"][..], &["key", "--help"]] {
        let o = s.rowkit(page);
        assert!(o.status.success(), "{page:?}");
        for option in ["--store", "--now", "--seed", "--deadline"] {
            assert!(!stdout(&o).contains(option), "{page:?} lists {option}");
        }
    }
    let o = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        !stdout(&o).contains("--store"),
        "top-level help lists --store"
    );
    let o = s.rowkit(&["admin", "list-tables", "--help"]);
    assert!(stdout(&o).contains("--store") && stdout(&o).contains("--deadline"));
    let o = s.rowkit(&["--seed", "3", "key", "encode", "mt", "a/b"]);
    assert!(o.status.success(), "{o:?}");

    let o = s.rowkit(&["--json", "s3", "list", "b", "--bogus"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(json(&o)["error"]["id"], "usage");
    assert!(
        json(&o)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--bogus")
    );
}

/// Every command checks all of its input before its first request (issue 17, point 1): each
/// invalid input below is refused (exit 2, one line on stderr) and the store file is byte for
/// byte what it was; a read-only command neither creates a missing file nor touches an
/// existing one (point 4). Before: `s3 delete b k --repair bogus` deleted the object and then
/// refused the option, a non-object `--params` and a negative `--max-keys` were accepted, and
/// every command opened the file read-write (a read created it, or grew an empty one).
#[test]
fn rejected_input_leaves_the_store_untouched() {
    let s = Scratch::new("rejected");
    s.set_up_every_schema();
    let file = s.0.join("t.redb");
    let before = std::fs::read(&file).unwrap();
    let rejected: &[&[&str]] = &[
        // admin
        &["admin", "create-table", "u", "--family", "b@d"],
        &["admin", "create-table", "-bad", "--family", "f"],
        &["admin", "create-table", "u", "--family", "f:maxversions=0"],
        &[
            "admin",
            "create-table",
            "u",
            "--family",
            "f",
            "--family",
            "f",
        ],
        &["admin", "set", "t", "r", "nocolon"],
        &["admin", "set", "t", "r", "cf:q=v", "--timestamp", "1234"],
        &["admin", "set", "t", "r", "cf:q=v", "--timestamp", "-5000"],
        &["admin", "set", "t", "\\q", "cf:q=v"],
        &["admin", "dump", "t", "--prefix", "\\q"],
        // s3
        &["s3", "delete", "b", "k", "--repair", "bogus"],
        &["s3", "put", "b", "k", "--value", "[1]"],
        &["s3", "put", "b", "k", "--value", "{"],
        &["s3", "put", "b", "k", "--value", "{}", "--params", "[]"],
        &["s3", "put", "b", "k", "--value", "{}", "--params", "7"],
        &[
            "s3",
            "put",
            "b",
            "k",
            "--value",
            "{}",
            "--versioning",
            "bogus",
        ],
        &["s3", "put", "b", "k"],
        &["s3", "put", "b", "k", "--value-file", "/nonexistent/v.json"],
        &[
            "s3",
            "put",
            "b",
            "k",
            "--value",
            "{}",
            "--versioning",
            "suspended",
            "--version-id",
            "x",
        ],
        &["s3", "list", "b", "--max-keys", "-1"],
        &["s3", "list", "b", "--algo", "Bogus"],
        &["s3", "versions", "b", "--version-id-marker", "x"],
        &["s3", "bucket", "create", "c", "--md", "[]"],
        &["s3", "bucket", "create", "c", "--vformat", "v9"],
        &["s3", "bucket", "put-attributes", "b", "--md", "x"],
        // gold
        &["gold", "setup", "--layout", "bogus"],
        &[
            "gold",
            "put",
            "--commit",
            "1",
            "--params",
            "a=b",
            "--digest",
            "x",
            "--entries",
            "f",
        ],
        &[
            "gold",
            "put",
            "--commit",
            "1",
            "--entries",
            "/nonexistent/e.json",
        ],
        &[
            "gold", "put", "--commit", "1", "--params", "novalue", "--digest", "0",
        ],
        &["gold", "traces", "--first", "x"],
        &["gold", "tile", "--layout", "bogus"],
        // graph
        &["graph", "add", "g", "not a triple"],
        &["graph", "remove", "g", "/u<a>"],
        &["graph", "query", "g", "bogus-method"],
        &["graph", "query", "g", "objects"],
        // mount table
        &["mt", "mount", "a/b", "/srv:1", "--ttl", "-5"],
        &["mt", "mount", "a/b", "/srv:1", "--flags", "bogus"],
        &["mt", "perms", "set", "a", "notjson"],
        &["mt", "setup", "--perms-file", "/nonexistent/p.json"],
        // global options
        &["--now", "soon", "s3", "put", "b", "k2", "--value", "{}"],
        &["--deadline", "99999999999999999999", "admin", "list-tables"],
        &["--seed", "-1", "admin", "list-tables"],
        &["--store", "floppy:", "admin", "list-tables"],
        &["frobnicate"],
    ];
    for args in rejected {
        for with_json in [false, true] {
            let mut line = Vec::from(*args);
            if with_json {
                line.insert(0, "--json");
            }
            let o = s.rowkit(&line);
            assert_eq!(o.status.code(), Some(2), "{line:?}: {o:?}");
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(!stderr.contains("panicked"), "{line:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{line:?}: {stderr}");
            assert!(stderr.starts_with("rowkit: "), "{line:?}: {stderr}");
            if with_json {
                assert!(json(&o)["error"]["id"].is_string(), "{line:?}: {o:?}");
            }
            assert!(
                std::fs::read(&file).unwrap() == before,
                "{line:?} changed the store file"
            );
        }
    }

    // An import file is parsed whole before its first Put: a bad second line writes nothing.
    let import = s.0.join("import.jsonl");
    std::fs::write(
        &import,
        "{\"commit\": 1, \"ts\": 1000, \"params\": {\"a\": \"b\"}, \"digest\": \"\"}\nnot json\n",
    )
    .unwrap();
    let o = s.rowkit(&["gold", "import", import.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("import.jsonl:2:"),
        "{o:?}"
    );
    assert!(
        std::fs::read(&file).unwrap() == before,
        "a failed import changed the store"
    );

    // Reads: a missing file is not created, an existing one not touched.
    for args in [
        &["admin", "list-tables"][..],
        &["admin", "dump", "objmeta"],
        &["s3", "get", "b", "k"],
        &["s3", "list", "b"],
        &["s3", "versions", "b"],
        &["s3", "bucket", "list"],
        &["gold", "newest"],
        &["graph", "list"],
        &["graph", "query", "g", "triples"],
    ] {
        let o = s.rowkit(args);
        assert!(o.status.success(), "{args:?}: {o:?}");
        assert!(
            std::fs::read(&file).unwrap() == before,
            "{args:?} changed the store file"
        );
    }
    let missing = s.0.join("missing.redb");
    let o = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .arg("--store")
        .arg(format!("embedded:{}", missing.display()))
        .args(["--json", "s3", "list", "b"])
        .env_remove("ROWKIT_STORE")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let message = json(&o)["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("no store at"), "{message}");
    assert!(!missing.exists());
    let empty = s.0.join("empty.redb");
    std::fs::write(&empty, b"").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .arg("--store")
        .arg(format!("embedded:{}", empty.display()))
        .args(["admin", "list-tables"])
        .env_remove("ROWKIT_STORE")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
}

/// Hostile input, as a matrix (issue 17): every value-taking option of every command and the
/// positional slots of the commands that take names, keys, triples or JSON, each given a set
/// of malformed values. No run may panic, hang or fail without a message, and no refused run
/// (exit 2) may change the store file.
#[test]
fn hostile_values_never_panic_hang_or_write() {
    let s = Scratch::new("hostile");
    s.set_up_every_schema();
    let long = "x".repeat(5000);
    let values = [
        "",
        "-1",
        "99999999999999999999",
        "[]",
        "null",
        "\u{e9}\u{2603}",
        &long,
        "hex:zz",
        "{\"a\":",
    ];
    // (command, its value-taking options); the command must be complete without them.
    let with_options: &[(&[&str], &[&str])] = &[
        (&["admin", "create-table", "u"], &["--family"]),
        (&["admin", "set", "t", "r", "cf:q=v"], &["--timestamp"]),
        (&["admin", "dump", "t"], &["--prefix"]),
        (
            &["s3", "put", "b", "k", "--value", "{}"],
            &["--params", "--versioning", "--version-id", "--origin-op"],
        ),
        (&["s3", "put", "b", "k"], &["--value", "--value-file"]),
        (&["s3", "get", "b", "k"], &["--version-id"]),
        (
            &["s3", "delete", "b", "k"],
            &["--version-id", "--origin-op", "--repair"],
        ),
        (
            &["s3", "list", "b"],
            &[
                "--prefix",
                "--delimiter",
                "--max-keys",
                "--marker",
                "--algo",
                "--start-after",
            ],
        ),
        (&["s3", "versions", "b"], &["--key-marker", "--max-keys"]),
        (
            &["s3", "bucket", "create", "c"],
            &["--md", "--vformat", "--owner"],
        ),
        (&["s3", "bucket", "put-attributes", "b"], &["--md"]),
        (
            &[
                "gold", "put", "--commit", "1", "--params", "a=b", "--digest", "0",
            ],
            &["--commit-time", "--ts", "--options"],
        ),
        (
            &["gold", "put", "--params", "a=b", "--digest", "0"],
            &["--commit"],
        ),
        (&["gold", "tile"], &["--index"]),
        (&["gold", "newest"], &["--layout", "--table"]),
        (
            &["graph", "query", "g", "triples"],
            &["--max", "--offset", "--lower", "--upper", "--filter"],
        ),
        (&["graph", "list"], &["--table"]),
        (&["mt", "mount", "a/b", "/srv:1"], &["--ttl", "--flags"]),
        (&["mt", "perms", "set", "a", "{}"], &["--version"]),
        (&["mt", "setup"], &["--perms-file"]),
        (&["mt", "glob", "..."], &["--table", "--as"]),
        (
            &["admin", "list-tables"],
            &["--now", "--seed", "--deadline", "--store"],
        ),
    ];
    // Commands whose last argument is a name, key, triple or document.
    let with_positional: &[&[&str]] = &[
        &["s3", "get", "b"],
        &["s3", "put", "b"],
        &["graph", "add", "g"],
        &["graph", "query", "g"],
        &["graph", "create"],
        &["mt", "mount", "a"],
        &["mt", "glob"],
        &["mt", "resolve"],
        &["mt", "perms", "set", "a"],
        &["key", "decode"],
        &["key", "encode", "mt"],
        &["admin", "set", "t", "r"],
    ];
    let mut lines: Vec<Vec<&str>> = Vec::new();
    for (command, options) in with_options {
        for option in *options {
            for value in &values {
                let mut line = command.to_vec();
                line.extend([*option, *value]);
                lines.push(line);
            }
        }
    }
    for command in with_positional {
        for value in &values {
            let mut line = command.to_vec();
            line.push(value);
            lines.push(line);
        }
    }
    let file = s.0.join("t.redb");
    for line in &lines {
        let before = std::fs::read(&file).unwrap();
        // A fixed clock: a delete's repair then comes due at once instead of in 15 s.
        let clock: &[&str] = if line.contains(&"--now") {
            &[]
        } else {
            &["--now", "2026-01-01T00:00:00Z"]
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .arg("--store")
            .arg(s.store())
            .args(clock)
            .args(line)
            .env_remove("ROWKIT_STORE")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            // Far above any of these runs (milliseconds); a run this long is a hang.
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "{line:?} hangs"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        let code = status.code();
        assert!(
            matches!(code, Some(0..=2)),
            "{line:?}: exit {code:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{line:?}: {stderr}");
        if code != Some(0) {
            assert!(
                stderr.starts_with("rowkit: ") || stderr.starts_with("error: "),
                "{line:?}: {stderr}"
            );
        }
        if code == Some(2) {
            assert!(
                std::fs::read(&file).unwrap() == before,
                "{line:?} changed the store"
            );
        }
    }
}

/// `rowkit check` checks every schema table it finds by its families (the mount table by its
/// fsck), names the others it skipped, exits 0 when all are clean and 1 when one is not, and
/// without `--fix` leaves the file exactly as it was.
#[test]
fn check_every_schema_table() {
    let s = Scratch::new("check-all");
    s.set_up_every_schema();
    let o = s.rowkit(&["--json", "check"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let doc = json(&o);
    let checked: Vec<(&str, &str, u64)> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["schema"].as_str().unwrap(),
                c["table"].as_str().unwrap(),
                c["left"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        checked,
        [
            ("graph", "badwolf", 0),
            ("gold", "gold", 0),
            ("mt", "mounttable", 0),
            ("s3", "objmeta", 0)
        ]
    );
    assert_eq!(doc["skipped"], serde_json::json!(["t"]));
    // The mount table's fsck counts the node rows it reads too (the root, at least).
    let mt = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["schema"] == "mt")
        .unwrap();
    assert!(mt["rows_scanned"].as_u64().unwrap() >= 1, "{mt}");

    let o = s.rowkit(&["admin", "set", "objmeta", "nosep", "d:value={}"]);
    assert!(o.status.success(), "{o:?}");
    let file = s.0.join("t.redb");
    let before = std::fs::read(&file).unwrap();
    let o = s.rowkit(&["check", "--grace", "0"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let text = stdout(&o);
    assert!(
        text.contains("undecodable_key\tnosep\t")
            && text.contains("s3 (table objmeta): 3 rows scanned, 1 findings (undecodable_key 1), 0 repaired, 1 left"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "a check without --fix wrote"
    );
    // One bucket's check reads its collection and metastore row only: `nosep` is not in it.
    let o = s.rowkit(&["s3", "check", "b", "--grace", "0"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(
        stdout(&o),
        "s3: 2 rows scanned, 0 findings, 0 repaired, 0 left\n"
    );
}

/// `rowkit …` with no store option (commands that take none).
fn rowkit_bare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .args(args)
        .env_remove("ROWKIT_STORE")
        .output()
        .unwrap()
}

#[test]
fn completions_and_man_page() {
    let bash = rowkit_bare(&["completions", "bash"]);
    assert!(bash.status.success(), "{bash:?}");
    let script = stdout(&bash);
    assert!(script.contains("complete -F _rowkit"), "{script}");
    // Every command group, and a nested operation, is offered.
    for word in [
        "admin",
        "graph",
        "gold",
        "s3",
        "mt",
        "key",
        "serve",
        "check",
        "create-table",
    ] {
        assert!(script.contains(word), "bash completions lack {word}");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = rowkit_bare(&["completions", shell]);
        assert!(o.status.success() && !o.stdout.is_empty(), "{shell}: {o:?}");
    }
    let unknown = rowkit_bare(&["completions", "tcsh"]);
    assert_eq!(unknown.status.code(), Some(2), "{unknown:?}");

    let man = rowkit_bare(&["man"]);
    assert!(man.status.success(), "{man:?}");
    let page = stdout(&man);
    // clap_mangen opens with a groff string definition, then the title line.
    assert!(
        page.lines().any(|l| l.starts_with(".TH rowkit 1")),
        "{page}"
    );
    assert!(
        page.contains(".SH SYNOPSIS") && page.contains("mt"),
        "{page}"
    );
    // Rendered by man(1) where it is installed: a page it can lay out without warnings.
    if Command::new("man").arg("--version").output().is_ok() {
        let mut man_l = Command::new("man");
        man_l.args(["-l", "-"]).env("MANWIDTH", "80");
        let rendered = support::output_with_stdin(man_l, &man.stdout);
        assert!(rendered.status.success(), "{rendered:?}");
        // Bold and underline come as overstrikes (`S\bS`): keep the last of each pair.
        let mut text = String::new();
        for c in String::from_utf8_lossy(&rendered.stdout).chars() {
            if c == '\u{8}' {
                text.pop();
            } else {
                text.push(c);
            }
        }
        assert!(
            text.contains("SYNOPSIS") && text.contains("rowkit"),
            "{text}"
        );
        assert!(
            rendered.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&rendered.stderr)
        );
    }
}

impl Scratch {
    /// `rowkit --store … ARGS…` with `input` on its stdin.
    fn rowkit_stdin(&self, args: &[&str], input: &str) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_rowkit"));
        command
            .arg("--store")
            .arg(self.store())
            .args(args)
            .env_remove("ROWKIT_STORE");
        support::output_with_stdin(command, input.as_bytes())
    }
}

#[test]
fn dash_reads_stdin_wherever_a_file_is_read() {
    let s = Scratch::new("stdin");
    let ok = |o: Output| {
        assert!(o.status.success(), "{o:?}");
        o
    };
    // mt setup --perms-file -: the node it names is created with those permissions.
    let perms = r#"{"": {"Admin": {"In": ["..."]}}, "x": {"Admin": {"In": ["alice"]}}}"#;
    ok(s.rowkit_stdin(&["mt", "setup", "--perms-file", "-"], perms));
    let got = json(&ok(s.rowkit(&["--json", "mt", "perms", "get", "x"])));
    assert_eq!(
        got["perms"]["Admin"]["In"],
        serde_json::json!(["alice"]),
        "{got}"
    );

    // s3 put --value-file -.
    ok(s.rowkit(&["s3", "setup"]));
    ok(s.rowkit(&["s3", "bucket", "create", "b"]));
    ok(s.rowkit_stdin(
        &["s3", "put", "b", "k", "--value-file", "-"],
        r#"{"size": 7}"#,
    ));
    let got = json(&ok(s.rowkit(&["--json", "s3", "get", "b", "k"])));
    assert_eq!(got["value"]["size"], 7, "{got}");

    // gold put --entries - and gold import -.
    ok(s.rowkit(&["gold", "setup"]));
    let digest_a = "9e1d402515193304cafbdf02b8fd751b";
    let digest_b = "60b5e978d116cccc0ef12278d724245b";
    let entries =
        format!(r#"[{{"params": {{"os": "linux", "test": "blur"}}, "digest": "{digest_a}"}}]"#);
    ok(s.rowkit_stdin(
        &["gold", "put", "--commit", "0", "--entries", "-"],
        &entries,
    ));
    let line =
        format!(r#"{{"commit": 1, "params": "os=linux,test=blur", "digest": "{digest_b}"}}"#);
    ok(s.rowkit_stdin(&["gold", "import", "-"], &format!("\n{line}\n")));
    let traces = stdout(&ok(
        s.rowkit(&["gold", "traces", "--from", "0", "--to", "1"])
    ));
    assert_eq!(
        traces,
        format!(",os=linux,test=blur, {digest_a} {digest_b}\n")
    );

    // graph add - and graph remove -.
    ok(s.rowkit(&["graph", "setup"]));
    ok(s.rowkit(&["graph", "create", "g"]));
    let triples = "/u<a> \"knows\"@[] /u<b>\n/u<a> \"knows\"@[] /u<c>\n";
    let added = ok(s.rowkit_stdin(&["graph", "add", "g", "-"], triples));
    assert_eq!(stdout(&added), "added 2 triples\n");
    let query = ["graph", "query", "g", "objects", "/u<a>", "\"knows\"@[]"];
    assert_eq!(stdout(&ok(s.rowkit(&query))), "/u<b>\n/u<c>\n");
    let removed = ok(s.rowkit_stdin(&["graph", "remove", "g", "-"], "/u<a> \"knows\"@[] /u<b>\n"));
    assert_eq!(stdout(&removed), "removed 1 triple\n");
    assert_eq!(stdout(&ok(s.rowkit(&query))), "/u<c>\n");

    // A read error names stdin, not `-`; malformed input from stdin is a usage error.
    let bad = s.rowkit_stdin(
        &["s3", "put", "b", "k2", "--value-file", "-"],
        "\u{0}not json",
    );
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    let bad = s.rowkit_stdin(&["gold", "put", "--commit", "2", "--entries", "-"], "\u{0}");
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("rowkit: stdin:"),
        "{bad:?}"
    );
    // stdin is read once: a server's certificate and key cannot both come from it.
    let both = s.rowkit_stdin(
        &["serve", "--listen", "127.0.0.1:0", "--grpc", "127.0.0.1:0"]
            .into_iter()
            .chain(["--tls-cert", "-", "--tls-key", "-"])
            .collect::<Vec<_>>(),
        "",
    );
    assert_eq!(both.status.code(), Some(2), "{both:?}");
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot both be read from stdin"));
}

#[test]
fn quiet_and_verbose_anywhere_on_the_line() {
    let s = Scratch::new("verbosity");
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(s.rowkit(&["mt", "setup"]).status.success());

    // -v: the store, how it is opened, the clock, the time taken; error ids.
    let now = "2024-01-02T03:04:05.678Z";
    for args in [
        &["-v", "admin", "list-tables", "--now", now][..],
        &["admin", "--verbose", "list-tables", "--now", now],
        &["admin", "list-tables", "--now", now, "-v"],
    ] {
        let o = s.rowkit(args);
        assert!(o.status.success(), "{args:?}: {o:?}");
        let err = stderr(&o);
        let store = format!(
            "rowkit: store {} (read-only), clock {now} (--now)\n",
            s.store()
        );
        assert!(err.starts_with(&store), "{args:?}: {err}");
        assert!(err.contains("rowkit: took "), "{args:?}: {err}");
        assert_eq!(stdout(&o), "mounttable\nmounttable-counters\n");
    }
    let o = s.rowkit(&["mt", "resolve", "nope", "-v"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o)
            .contains("rowkit: name \"nope\" doesn't exist [v.io/v23/naming.nameDoesntExist]\n"),
        "{o:?}"
    );

    // -q: errors still said, and nothing else.
    let o = s.rowkit(&["-q", "mt", "resolve", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), "rowkit: name \"nope\" doesn't exist\n");
    let o = s.rowkit(&["mt", "--quiet", "resolve", "nope"]);
    assert_eq!(stderr(&o), "rowkit: name \"nope\" doesn't exist\n");
    // Both at once is bad usage.
    let o = s.rowkit(&["-q", "-v", "admin", "list-tables"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");

    // A server's startup and stopping lines are informational: gone with -q, there without.
    for (quiet, expect_lines) in [(true, false), (false, true)] {
        use std::io::BufRead;
        let mut args = vec!["--store", "memory:", "serve", "--listen", "127.0.0.1:0"];
        if quiet {
            args.push("-q");
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .args(&args)
            .env_remove("ROWKIT_STORE")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut url = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut url)
            .unwrap();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::TERM,
        )
        .unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            stderr(&o).contains("rowkit serve:"),
            expect_lines,
            "quiet {quiet}: {}",
            stderr(&o)
        );
    }
}
