//! `rowkit gold …` and `rowkit key … gold` end to end on a temporary embedded file
//! (`spec/tracestore.md` 20, scenario 31).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

/// A scratch directory and the store the commands run on: an embedded file in it, or a
/// fresh instance of the Bigtable emulator.
struct Scratch(PathBuf, String);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rowkit-gold-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let store = format!("embedded:{}", dir.join("t.redb").display());
        Scratch(dir, store)
    }

    /// A fresh emulator instance (`None`, printed, when the emulator cannot be started and
    /// `CI` is not set).
    fn emulator(name: &str) -> Option<Scratch> {
        let emu = rowkit_testkit::emulator::Emulator::shared_or_skip(name)?;
        let mut s = Scratch::new(name);
        s.1 = emu.url(&emu.fresh_target().instance);
        Some(s)
    }

    fn rowkit(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .arg("--store")
            .arg(&self.1)
            .args(["--now", "1557018184000000"])
            .args(args)
            .env_remove("ROWKIT_STORE")
            .env_remove("BIGTABLE_EMULATOR_HOST")
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let o = self.rowkit(&all);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).unwrap()
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const POINTS: [(u32, &str, &str, &str); 16] = [
    (
        2,
        "angler",
        "test_alpha",
        "000075b9c0f1b6a831c399e269772661",
    ),
    (2, "angler", "test_beta", "4444e0910d750195b448797616e091ad"),
    (
        2,
        "bullhead",
        "test_alpha",
        "222208f09d37b73795649038408b5f33",
    ),
    (
        2,
        "bullhead",
        "test_beta",
        "4444e0910d750195b448797616e091ad",
    ),
    (
        2,
        "crosshatch",
        "test_alpha",
        "000075b9c0f1b6a831c399e269772661",
    ),
    (
        1,
        "angler",
        "test_alpha",
        "11115ffee6ae2fec3ad71c777531578f",
    ),
    (1, "angler", "test_beta", "4444e0910d750195b448797616e091ad"),
    (
        1,
        "bullhead",
        "test_alpha",
        "11115ffee6ae2fec3ad71c777531578f",
    ),
    (
        1,
        "bullhead",
        "test_beta",
        "4444e0910d750195b448797616e091ad",
    ),
    (
        1,
        "crosshatch",
        "test_alpha",
        "11115ffee6ae2fec3ad71c777531578f",
    ),
    (
        0,
        "angler",
        "test_alpha",
        "11115ffee6ae2fec3ad71c777531578f",
    ),
    (0, "angler", "test_beta", "4444e0910d750195b448797616e091ad"),
    (
        0,
        "bullhead",
        "test_alpha",
        "11115ffee6ae2fec3ad71c777531578f",
    ),
    (
        0,
        "bullhead",
        "test_beta",
        "4444e0910d750195b448797616e091ad",
    ),
    (
        0,
        "crosshatch",
        "test_alpha",
        "11115ffee6ae2fec3ad71c777531578f",
    ),
    (
        0,
        "crosshatch",
        "test_beta",
        "55554cdd754f91cc6554c9e71929cce7",
    ),
];

#[test]
fn key_encode_and_decode() {
    let s = Scratch::new("keys");
    let v = s.json(&[
        "key",
        "encode",
        "gold",
        "trace",
        "--commit",
        "1000",
        "--subkey",
        ",0=0,1=0,2=0,",
    ]);
    assert_eq!(v["row_key"], "28:ts:t:2147483644:,0=0,1=0,2=0,");
    assert_eq!(
        v["row_key_hex"],
        "32383a74733a743a323134373438333634343a2c303d302c313d302c323d302c"
    );
    assert_eq!(
        (
            v["tile_index"].as_u64(),
            v["tile_key"].as_u64(),
            v["offset"].as_u64(),
            v["shard"].as_u64()
        ),
        (Some(3), Some(2147483644), Some(232), Some(28))
    );
    assert_eq!(v["qualifier_md5"]["qualifier"], "232");
    assert_eq!(v["qualifier_digest_id"]["qualifier_hex"], "323332");
    let v = s.json(&[
        "key",
        "encode",
        "gold",
        "trace",
        "--commit",
        "300",
        "--subkey",
        ",0=1,1=3,3=0,",
    ]);
    assert_eq!(v["row_key"], "09:ts:t:2147483646:,0=1,1=3,3=0,");
    assert_eq!(v["qualifier_md5"]["qualifier"], "044");
    assert_eq!(v["qualifier_digest_id"]["qualifier"], "44");
    let o = s.rowkit(&[
        "key",
        "encode",
        "gold",
        "trace",
        "--commit",
        "300",
        "--subkey",
        ",0=1,1=3,3=0,",
    ]);
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "09:ts:t:2147483646:,0=1,1=3,3=0,\n"
    );
    let v = s.json(&[
        "key",
        "decode",
        "hex:32313a74733a643a303030303030303030303a396531",
    ]);
    assert_eq!(v["type"], "digest_map");
    assert_eq!(v["shard"], 21);
    assert_eq!(v["shard_ok"], true);
    assert_eq!(v["tile_key"], 0);
    assert!(v["tile_index"].is_null());
    assert_eq!(v["subkey"], "9e1");
    let v = s.json(&[
        "key",
        "encode",
        "gold",
        "digest",
        "9E1D402515193304CAFBDF02B8FD751B",
    ]);
    assert_eq!(v["row_key"], "21:ts:d:0000000000:9e1");
    assert_eq!(v["qualifier"], "d402515193304cafbdf02b8fd751b");
    let o = s.rowkit(&["--json", "key", "encode", "gold", "digest", "NOPE"]);
    assert_eq!(o.status.code(), Some(2));
    let o = s.rowkit(&["--json", "key", "decode", "--schema", "gold", "not-a-key"]);
    assert_eq!(o.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["id"], "not_a_gold_row_key");
    assert!(
        !s.0.join("t.redb").exists(),
        "key commands must not create a store"
    );
}

fn scenario(layout: &str) {
    let s = Scratch::new(layout);
    s.json(&["gold", "setup", "--layout", layout]);
    let v = s.json(&["gold", "newest"]);
    assert!(v["tile_index"].is_null());
    let v = s.json(&["gold", "tile"]);
    assert!(v["tile_index"].is_null());
    for (j, (c, d, n, digest)) in POINTS.iter().enumerate() {
        let params = format!("device={d},name={n},source_type=gm");
        let ts = (1_557_018_184_000_000i64 + 7_000_000 * j as i64).to_string();
        let c = c.to_string();
        let mut args = vec![
            "gold", "put", "--commit", &c, "--params", &params, "--digest", digest, "--ts", &ts,
        ];
        if layout == "md5" {
            args.extend(["--options", "ext=png", "--commit-time", "1556280003000000"]);
        }
        let v = s.json(&args);
        assert_eq!(v["layout"], layout);
        assert_eq!(v["ops_row"]["row_key"], ":ts:o:2147483647:");
    }
    let v = s.json(&["gold", "newest"]);
    assert_eq!(
        (v["tile_index"].as_u64(), v["tile_key"].as_u64()),
        (Some(0), Some(2147483647))
    );
    assert_eq!(v["row_key"], ":ts:o:2147483647:");
    let v = s.json(&["gold", "traces", "--from", "0", "--to", "2"]);
    assert_eq!(v["commits"], serde_json::json!([0, 1, 2]));
    let traces = v["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 6);
    assert_eq!(
        traces[0]["id"],
        ",device=angler,name=test_alpha,source_type=gm,"
    );
    assert_eq!(
        traces[0]["digests"],
        serde_json::json!([
            "11115ffee6ae2fec3ad71c777531578f",
            "11115ffee6ae2fec3ad71c777531578f",
            "000075b9c0f1b6a831c399e269772661"
        ])
    );
    assert_eq!(
        traces[5]["digests"],
        serde_json::json!(["55554cdd754f91cc6554c9e71929cce7", "", ""])
    );
    assert_eq!(
        v["paramset"]["device"],
        serde_json::json!(["angler", "bullhead", "crosshatch"])
    );
    let v = s.json(&[
        "gold",
        "traces",
        "--from",
        "0",
        "--to",
        "2",
        "--match",
        "device=bullhead",
    ]);
    assert_eq!(v["traces"].as_array().unwrap().len(), 2);
    let v = s.json(&["gold", "tile"]);
    assert_eq!(v["tile_index"], 0);
    assert_eq!(v["traces"].as_array().unwrap().len(), 6);
    let v = s.json(&["gold", "tile", "0", "--dense", "3"]);
    assert_eq!(v["commits"], serde_json::json!([0, 1, 2]));
    // Errors before any request.
    let o = s.rowkit(&[
        "--json",
        "gold",
        "put",
        "--commit",
        "2147483648",
        "--params",
        "a=b",
        "--digest",
        "00",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(e["error"]["id"], "bad_repo_index");
    if layout == "digest-id" {
        let o = s.rowkit(&[
            "--json",
            "gold",
            "put",
            "--commit",
            "3",
            "--params",
            "a=b",
            "--digest",
            "00",
            "--options",
            "ext=png",
        ]);
        assert_eq!(o.status.code(), Some(2));
        let e: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(e["error"]["id"], "options_not_supported");
        let o = s.rowkit(&["--json", "gold", "--layout", "md5", "newest"]);
        assert_eq!(o.status.code(), Some(1));
    }
    // Import.
    let lines = "{\"commit\": 300, \"ts\": 1557018184000000, \"entries\": [{\"params\": {\"device\": \"angler\", \"name\": \"x\"}, \"digest\": \"000075b9c0f1b6a831c399e269772661\"}]}\n\
                 {\"commit\": 301, \"ts\": 1557018184000000, \"entries\": [{\"params\": {\"device\": \"angler\", \"name\": \"x\"}, \"digest\": \"11115ffee6ae2fec3ad71c777531578f\"}]}\n";
    let file = s.file("import.jsonl", lines);
    let v = s.json(&["gold", "import", &file]);
    assert_eq!(
        (v["puts"].as_u64(), v["entries"].as_u64()),
        (Some(2), Some(2))
    );
    let v = s.json(&[
        "gold", "traces", "--from", "300", "--to", "301", "--match", "name=x",
    ]);
    assert_eq!(
        v["traces"][0]["digests"],
        serde_json::json!([
            "000075b9c0f1b6a831c399e269772661",
            "11115ffee6ae2fec3ad71c777531578f"
        ])
    );
    let bad = s.file("bad.jsonl", "{\"commit\": 5, \"entries\": []}\n{\"commit\": -1, \"entries\": [{\"params\": {\"a\": \"b\"}, \"digest\": \"\"}]}\n");
    let o = s.rowkit(&["gold", "import", &bad]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains(":2:"));
}

#[test]
fn gold_md5() {
    scenario("md5");
}

#[test]
fn gold_digest_id() {
    scenario("digest-id");
}

/// `key decode --schema gold` of a trace row and a digest-map row: every field of §19.
#[test]
fn key_decode_gold_rows() {
    let s = Scratch::new("decode");
    let trace = ",0=1,1=3,3=0,";
    let v = s.json(&[
        "key",
        "decode",
        "--schema",
        "gold",
        &format!("09:ts:t:2147483646:{trace}"),
    ]);
    assert_eq!(
        v,
        serde_json::json!({
            "schema": "gold",
            "row_key": "09:ts:t:2147483646:,0=1,1=3,3=0,",
            "row_key_hex": hex(&format!("09:ts:t:2147483646:{trace}")),
            "type": "trace",
            "shard": 9,
            "shard_ok": true,
            "tile_key": 2147483646u32,
            "tile_index": 1,
            "first_repo_index": 256,
            "last_repo_index": 511,
            "subkey": trace,
            "subkey_hex": hex(trace),
        })
    );
    let v = s.json(&[
        "key",
        "decode",
        "--schema",
        "gold",
        "21:ts:d:0000000000:9e1",
    ]);
    assert_eq!(
        v,
        serde_json::json!({
            "schema": "gold",
            "row_key": "21:ts:d:0000000000:9e1",
            "row_key_hex": "32313a74733a643a303030303030303030303a396531",
            "type": "digest_map",
            "shard": 21,
            "shard_ok": true,
            "tile_key": 0,
            "tile_index": null,
            "first_repo_index": null,
            "last_repo_index": null,
            "subkey": "9e1",
            "subkey_hex": "396531",
        })
    );
    // A trace row in the wrong shard still decodes, with shard_ok false.
    let v = s.json(&[
        "key",
        "decode",
        "--schema",
        "gold",
        &format!("10:ts:t:2147483646:{trace}"),
    ]);
    assert_eq!(
        (&v["shard"], &v["shard_ok"]),
        (&Value::from(10), &Value::from(false))
    );
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

/// `gold import` lines in `gold put`'s flat form (params and options as objects or `k=v,…`,
/// times as µs or RFC 3339) mixed with the spec's `entries` form.
#[test]
fn import_flat_lines() {
    let s = Scratch::new("import-flat");
    s.json(&["gold", "setup", "--layout", "md5"]);
    let lines = [
        r#"{"commit": 0, "commit_time": 1556280003000000, "ts": 1557018184000000, "params": {"device": "angler", "name": "test_alpha"}, "digest": "11115ffee6ae2fec3ad71c777531578f", "options": {"ext": "png"}}"#,
        "",
        r#"{"commit": 1, "commit_time": "2019-04-26T11:50:18Z", "ts": "2019-05-05T01:03:05Z", "params": "device=angler,name=test_alpha", "digest": "000075B9C0F1B6A831C399E269772661", "options": "ext=png"}"#,
        r#"{"commit": 1, "params": "device=bullhead,name=test_alpha", "digest": "NOPE"}"#,
        r#"{"commit": 2, "ts": 1557018184000000, "entries": [{"params": {"device": "angler", "name": "test_alpha"}, "digest": "222208f09d37b73795649038408b5f33"}]}"#,
    ];
    let file = s.file("flat.jsonl", &lines.join("\n"));
    let o = s.rowkit(&["--json", "gold", "import", &file]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["puts"].as_u64(), v["entries"].as_u64()),
        (Some(4), Some(4))
    );
    let v = s.json(&["gold", "traces", "--from", "0", "--to", "2"]);
    let traces = v["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 2);
    assert_eq!(traces[0]["id"], ",device=angler,name=test_alpha,");
    assert_eq!(
        traces[0]["digests"],
        serde_json::json!([
            "11115ffee6ae2fec3ad71c777531578f",
            "000075b9c0f1b6a831c399e269772661",
            "222208f09d37b73795649038408b5f33"
        ])
    );
    assert_eq!(traces[0]["options"], serde_json::json!({"ext": "png"}));
    assert_eq!(traces[1]["id"], ",device=bullhead,name=test_alpha,");
    assert_eq!(traces[1]["digests"], serde_json::json!(["", "", ""]));
    assert_eq!(traces[1]["options"], serde_json::json!({}));
}

/// A malformed line stops the import with exit 1 (`spec/tracestore.md` 19) and a message
/// naming its line. The whole file is parsed before the first Put (issue 17, point 1: all
/// input is checked before anything is written), so no line is imported.
#[test]
fn import_malformed_line() {
    let s = Scratch::new("import-bad");
    s.json(&["gold", "setup", "--layout", "digest-id"]);
    let good = |commit: u32| {
        format!(
            r#"{{"commit": {commit}, "ts": 1557018184000000, "params": "name=x", "digest": "11115ffee6ae2fec3ad71c777531578f"}}"#
        )
    };
    let malformed = [
        "{\"commit\": 1, \"params\": ",
        r#"{"commit": "one", "params": "name=x", "digest": ""}"#,
        r#"{"commit": 1, "params": "name", "digest": ""}"#,
        r#"{"commit": 1, "digest": ""}"#,
        r#"{"commit": 1, "params": "name=x", "entries": []}"#,
        r#"{"commit": 1, "params": "name=x", "digest": 7}"#,
        r#"{"commit": 1, "ts": "yesterday", "params": "name=x"}"#,
    ];
    for (i, bad) in malformed.iter().enumerate() {
        let table = format!("gold{i}");
        let o = s.rowkit(&["gold", "--table", &table, "--layout", "digest-id", "setup"]);
        assert!(o.status.success());
        let file = s.file(
            &format!("bad{i}.jsonl"),
            &format!("{}\n\n{bad}\n{}\n", good(0), good(2)),
        );
        let o = s.rowkit(&["--json", "gold", "--table", &table, "import", &file]);
        assert_eq!(o.status.code(), Some(1), "{bad}");
        let e: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(e["error"]["id"], "bad_import_line", "{bad}");
        let message = e["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("{file}:3: ")),
            "{bad}: {message}"
        );
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(&format!("{file}:3: ")),
            "{bad}"
        );
        let v = s.json(&[
            "gold", "--table", &table, "traces", "--from", "0", "--to", "2",
        ]);
        // Issue 17 point 1: all of a command's input is checked before its first request, so
        // the good line before the malformed one is not imported either.
        assert_eq!(
            v["traces"],
            serde_json::json!([]),
            "{bad}: nothing imported"
        );
    }
}

/// With stderr piped, an import prints no progress at all; on a terminal (a pty from
/// `script`) it draws the bar.
#[test]
fn import_progress_only_on_a_terminal() {
    let s = Scratch::new("import-progress");
    s.json(&["gold", "setup", "--layout", "md5"]);
    let lines: Vec<String> = (0..3)
        .map(|c| {
            format!(
                r#"{{"commit": {c}, "ts": 1557018184000000, "params": "name=x", "digest": "11115ffee6ae2fec3ad71c777531578f"}}"#
            )
        })
        .collect();
    let file = s.file("three.jsonl", &lines.join("\n"));
    let o = s.rowkit(&["gold", "import", &file]);
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "imported 3 puts, 3 entries\n"
    );
    assert!(
        o.stderr.is_empty(),
        "piped stderr: {:?}",
        String::from_utf8_lossy(&o.stderr)
    );
    let Ok(o) = Command::new("script")
        .args(["-qec"])
        .arg(format!(
            "'{}' --store 'embedded:{}' --now 1557018184000000 gold import '{file}'",
            env!("CARGO_BIN_EXE_rowkit"),
            s.0.join("t.redb").display()
        ))
        .arg("/dev/null")
        .env_remove("ROWKIT_STORE")
        .output()
    else {
        eprintln!("`script` (util-linux) is not installed: the terminal half is not run");
        return;
    };
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{shown}");
    assert!(
        shown.contains(&format!("[{}] 100% 3/3 puts", "#".repeat(30))),
        "no bar on the terminal: {shown:?}"
    );
    assert!(shown.contains("imported 3 puts, 3 entries"), "{shown:?}");
}

/// `gold check`: a clean digest-id table exits 0; a stray key and an OPS row whose gob does
/// not decode are reported by kind and row (JSON), exit 1; `--fix` repairs nothing; the check
/// opens the file read-only (it never writes).
#[test]
fn check_reports_and_exits_by_what_is_left() {
    let s = Scratch::new("check");
    s.json(&["gold", "setup", "--layout", "digest-id"]);
    let digest = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    s.json(&[
        "gold", "put", "--commit", "3", "--params", "name=foo", "--digest", digest,
    ]);
    let clean = s.json(&["gold", "check"]);
    assert_eq!(
        (
            clean["left"].as_u64(),
            clean["findings"].as_array().map(Vec::len)
        ),
        (Some(0), Some(0))
    );
    assert!(clean["rows_scanned"].as_u64().unwrap() >= 3, "{clean}");

    s.json(&["admin", "set", "gold", "zz:junk", "T:0=x"]);
    s.json(&["admin", "set", "gold", ":ts:o:2147483640:", "O:OPS=garbage"]);
    for fix in [false, true] {
        let mut args = vec!["--json", "gold", "check"];
        if fix {
            args.push("--fix");
        }
        let o = s.rowkit(&args);
        assert_eq!(o.status.code(), Some(1), "{o:?}");
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        let found: Vec<(&str, &str)> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["kind"].as_str().unwrap(), f["row_key"].as_str().unwrap()))
            .collect();
        assert_eq!(
            found,
            [
                ("ops_incomplete", ":ts:o:2147483640:"),
                ("ops_undecodable", ":ts:o:2147483640:"),
                ("undecodable_key", "zz:junk"),
            ]
        );
        assert_eq!(
            (doc["repaired"].as_u64(), doc["left"].as_u64()),
            (Some(0), Some(3))
        );
    }
}

/// `gold migrate` (docs/migration.md §5, §11.6, §11.7) on the embedded store with the manual
/// clock (`--now`: the settle waits cost no time): a missing target is one usage line naming
/// the setup command; without gates the run ends in `verifying` (progress as JSON Lines on
/// stderr with `--json`); with `--switch --finish` the target reads what the source did and
/// checks clean, and the source holds only its marker row.
#[test]
fn migrate_md5_into_digest_id() {
    let s = Scratch::new("migrate");
    seed_md5_points(&s);
    let migrate = MIGRATE_TO_GOLD2;

    let o = s.rowkit(&migrate);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(
        String::from_utf8(o.stderr).unwrap(),
        "rowkit: usage: the target table gold2 must be an empty table of the digest-id layout: \
         rowkit gold setup --table gold2 --layout digest-id\n"
    );

    s.json(&["gold", "setup", "--table", "gold2", "--layout", "digest-id"]);
    let o = s.rowkit(&[&["--json"], &migrate[..]].concat());
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (&doc["state"], &doc["to"]),
        (&json_str("verifying"), &json_str("digest-id"))
    );
    // rowkit_client::migration_json's trace document, the browser's too.
    assert_eq!(
        (&doc["table"], &doc["target_table"], &doc["abort"]),
        (&json_str("gold"), &json_str("gold2"), &Value::Bool(false)),
        "{doc}"
    );
    let lines: Vec<Value> = String::from_utf8(o.stderr)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        !lines.is_empty() && lines.iter().all(|l| l["rows_scanned"].is_u64()),
        "{lines:?}"
    );

    // `gold put` is an aware process (§9): while the table migrates, its Put lands in both
    // tables with its own timestamp (the mirror), before any pass of the migrator runs again.
    let put_ts: i64 = 1_557_018_190_000_000;
    s.json(&[
        "gold",
        "put",
        "--commit",
        "5",
        "--params",
        "name=c,config=8888",
        "--digest",
        "000075b9c0f1b6a831c399e269772664",
        "--ts",
        &put_ts.to_string(),
    ]);
    let trace_cell_times = |table: &str| -> Vec<i64> {
        let dump = s.json(&["admin", "dump", table]);
        dump["cells"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["family"] == "T")
            .map(|c| c["timestamp_us"].as_i64().unwrap())
            .collect()
    };
    for table in ["gold", "gold2"] {
        assert!(trace_cell_times(table).contains(&put_ts), "{table}");
    }

    let o = s.rowkit(&[&["--json"], &migrate[..], &["--switch", "--finish"]].concat());
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["state"], "cleaned", "{doc}");

    // The target reads every point the source was written with.
    let traces = s.json(&[
        "gold", "--table", "gold2", "traces", "--from", "0", "--to", "511",
    ]);
    let digests = |id: &str| {
        let trace = traces["traces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {traces}"));
        trace["digests"].clone()
    };
    let a = digests(",config=8888,name=a,");
    assert_eq!(a[1], "000075b9c0f1b6a831c399e269772661");
    assert_eq!(a[2], "000075b9c0f1b6a831c399e269772662");
    assert_eq!(
        digests(",config=8888,name=b,")[300],
        "000075b9c0f1b6a831c399e269772663"
    );
    assert_eq!(
        digests(",config=8888,name=c,")[5],
        "000075b9c0f1b6a831c399e269772664"
    );
    let o = s.rowkit(&["gold", "--table", "gold2", "check"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    // The source: no trace left, its marker row only.
    let dump = s.json(&["admin", "dump", "gold"]);
    let cells = dump["cells"].as_array().unwrap();
    assert!(!cells.is_empty());
    assert!(
        cells.iter().all(|c| c["row_key"] == ":rk:m:0000000000:"),
        "{dump}"
    );
    // Its marker is the forwarding note: `gold` commands on it read the target (tile 1 holds
    // commit 300).
    assert_eq!(s.json(&["gold", "newest"])["tile_index"], 1);
}

/// `gold migrate` of `gold` (md5) into `gold2` (digest-id), before the flags a test adds.
const MIGRATE_TO_GOLD2: [&str; 6] = [
    "gold",
    "migrate",
    "--to",
    "digest-id",
    "--target-table",
    "gold2",
];

/// Three points in `gold` (md5) and an empty `gold2` (digest-id) to migrate them into.
fn seed_migration(s: &Scratch) {
    seed_md5_points(s);
    s.json(&["gold", "setup", "--table", "gold2", "--layout", "digest-id"]);
}

/// Three points in a new `gold` (md5): `a` at commits 1 and 2, `b` at 300.
fn seed_md5_points(s: &Scratch) {
    s.json(&["gold", "setup"]);
    for (commit, name, digest) in [
        ("1", "a", "000075b9c0f1b6a831c399e269772661"),
        ("2", "a", "000075b9c0f1b6a831c399e269772662"),
        ("300", "b", "000075b9c0f1b6a831c399e269772663"),
    ] {
        let params = format!("name={name},config=8888");
        s.json(&[
            "gold", "put", "--commit", commit, "--params", &params, "--digest", digest,
        ]);
    }
}

/// The digest of commit `commit` of trace `name` in `table`, read through `gold traces`.
fn digest_at(s: &Scratch, table: &str, name: &str, commit: usize) -> Value {
    let traces = s.json(&[
        "gold", "--table", table, "traces", "--from", "0", "--to", "511",
    ]);
    let id = format!(",config=8888,name={name},");
    let trace = traces["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id}: {traces}"))
        .clone();
    trace["digests"][commit].clone()
}

/// The one line a refused command prints, with exit 2.
fn refused(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let stderr = String::from_utf8(o.stderr.clone()).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

/// §5.9's rollback of a switched migration: the swapped run, `gold migrate` on the target
/// back into the source with `--switch` (refused without it, one line); the source then
/// reads every point, those written into the target after the switch included, and the
/// target keeps only its marker row.
fn rollback_of_switched(s: &Scratch) {
    seed_migration(s);
    let forward = [&MIGRATE_TO_GOLD2[..], &["--switch"]].concat();
    assert_eq!(s.json(&forward)["state"], "switched");
    // A Gold writer restarted on gold2 writes a point gold does not have.
    s.json(&[
        "gold",
        "--table",
        "gold2",
        "put",
        "--commit",
        "5",
        "--params",
        "name=c,config=8888",
        "--digest",
        "000075b9c0f1b6a831c399e269772664",
    ]);
    let back = [
        "gold",
        "--table",
        "gold2",
        "migrate",
        "--to",
        "md5",
        "--target-table",
        "gold",
    ];
    let line = refused(&s.rowkit(&back));
    assert!(
        line.starts_with("rowkit: usage: run ") && line.contains("needs --switch"),
        "{line}"
    );
    let doc = s.json(&[&back[..], &["--switch", "--finish"]].concat());
    assert_eq!(
        (&doc["state"], &doc["table"], &doc["target_table"]),
        (&json_str("cleaned"), &json_str("gold2"), &json_str("gold")),
        "{doc}"
    );
    assert_eq!(
        digest_at(s, "gold", "a", 1),
        "000075b9c0f1b6a831c399e269772661"
    );
    assert_eq!(
        digest_at(s, "gold", "a", 2),
        "000075b9c0f1b6a831c399e269772662"
    );
    assert_eq!(
        digest_at(s, "gold", "b", 300),
        "000075b9c0f1b6a831c399e269772663"
    );
    assert_eq!(
        digest_at(s, "gold", "c", 5),
        "000075b9c0f1b6a831c399e269772664"
    );
    let o = s.rowkit(&["gold", "check"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(
        s.json(&["gold", "--table", "gold2", "newest"])["newest"],
        Value::Null
    );
}

/// §5.8's `--drop-source`: refused (one line, exit 2) without `--finish`; after a complete
/// clean-up the source table is deleted, and a command on it fails.
fn drop_source(s: &Scratch) {
    seed_migration(s);
    let migrate = [&MIGRATE_TO_GOLD2[..], &["--drop-source"]].concat();
    let line = refused(&s.rowkit(&migrate));
    assert!(line.contains("needs --finish"), "{line}");
    let line = refused(&s.rowkit(&[&migrate[..], &["--finish", "--abort"]].concat()));
    assert!(line.contains("no --abort"), "{line}");
    let tables = s.json(&["admin", "list-tables"]);
    assert!(tables.to_string().contains("\"gold\""), "{tables}");

    let doc = s.json(&[&migrate[..], &["--switch", "--finish"]].concat());
    assert_eq!(
        (&doc["state"], &doc["source_dropped"]),
        (&json_str("cleaned"), &Value::Bool(true)),
        "{doc}"
    );
    let tables = s.json(&["admin", "list-tables"]);
    assert!(!tables.to_string().contains("\"gold\""), "{tables}");
    assert_eq!(
        digest_at(s, "gold2", "b", 300),
        "000075b9c0f1b6a831c399e269772663"
    );
    let o = s.rowkit(&["gold", "newest"]);
    assert_ne!(o.status.code(), Some(0), "{o:?}");
}

/// §5.5, §8: the check of the target before the switch; a damage only the target has
/// blocks the switch (exit 1, one line, the markers left in `verifying`).
#[test]
fn migrate_is_blocked_by_a_finding_only_the_target_has() {
    let s = Scratch::new("migrate-blocked");
    seed_migration(&s);
    s.json(&["admin", "set", "gold2", "zz:junk", "O:junk=1"]);
    let migrate = [&MIGRATE_TO_GOLD2[..], &["--switch"]].concat();
    let o = s.rowkit(&migrate);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("block the switch") && stderr.contains("undecodable_key: zz:junk"),
        "{stderr}"
    );
    // The same damage in the source too: the source's own, reported, not blocking.
    s.json(&["admin", "set", "gold", "zz:junk", "O:junk=1"]);
    let doc = s.json(&migrate);
    assert_eq!(doc["state"], "switched", "{doc}");
    assert_eq!(doc["findings"][0]["id"], "undecodable_key", "{doc}");
}

#[test]
fn migrate_rollback_of_switched_embedded() {
    rollback_of_switched(&Scratch::new("rollback"));
}

#[test]
fn migrate_rollback_of_switched_emulator() {
    if let Some(s) = Scratch::emulator("migrate_rollback_of_switched_emulator") {
        rollback_of_switched(&s);
    }
}

#[test]
fn migrate_drop_source_embedded() {
    drop_source(&Scratch::new("drop-source"));
}

#[test]
fn migrate_drop_source_emulator() {
    if let Some(s) = Scratch::emulator("migrate_drop_source_emulator") {
        drop_source(&s);
    }
}

/// `--max-inflight N` (§12.94): out of 1–256 or not a number, one usage line (exit 2) and
/// nothing written; with one request in flight the whole migration runs as with the default.
fn one_request_in_flight(s: &Scratch) {
    seed_migration(s);
    let dump = || ["gold", "gold2"].map(|t| s.json(&["admin", "dump", t]));
    let before = dump();
    for n in ["0", "257", "many"] {
        let o = s.rowkit(&[&MIGRATE_TO_GOLD2[..], &["--max-inflight", n]].concat());
        let line = refused(&o);
        assert!(line.contains("--max-inflight"), "{line}");
    }
    assert_eq!(dump(), before);
    let doc = s.json(
        &[
            &MIGRATE_TO_GOLD2[..],
            &["--max-inflight", "1", "--switch", "--finish"],
        ]
        .concat(),
    );
    assert_eq!(doc["state"], "cleaned", "{doc}");
    for (name, commit, digest) in [
        ("a", 1, "000075b9c0f1b6a831c399e269772661"),
        ("a", 2, "000075b9c0f1b6a831c399e269772662"),
        ("b", 300, "000075b9c0f1b6a831c399e269772663"),
    ] {
        assert_eq!(digest_at(s, "gold2", name, commit), digest);
    }
}

#[test]
fn migrate_with_one_request_in_flight_embedded() {
    one_request_in_flight(&Scratch::new("one-in-flight"));
}

#[test]
fn migrate_with_one_request_in_flight_emulator() {
    if let Some(s) = Scratch::emulator("migrate_with_one_request_in_flight_emulator") {
        one_request_in_flight(&s);
    }
}

fn json_str(s: &str) -> Value {
    Value::String(s.into())
}
