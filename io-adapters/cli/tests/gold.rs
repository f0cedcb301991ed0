//! `rowkit gold …` and `rowkit key … gold` end to end on a temporary embedded file
//! (`spec/tracestore.md` 20, scenario 31).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rowkit-gold-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn rowkit(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .arg("--store")
            .arg(format!("embedded:{}", self.0.join("t.redb").display()))
            .args(["--now", "1557018184000000"])
            .args(args)
            .env_remove("ROWKIT_STORE")
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
