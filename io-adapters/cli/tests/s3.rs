//! `rowkit s3` and `rowkit key … s3` end to end (`objmeta.md` 17, 18 scenario 36), on a
//! temporary embedded file and, for each flow, on the emulator through
//! `--store bigtable://…?emulator=HOST:PORT` (skipped, printed, when it is not installed
//! outside CI).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

use rowkit_testkit::emulator::Emulator;
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
        self.cli().rowkit(args)
    }

    fn ok(&self, args: &[&str]) -> Value {
        self.cli().ok(args)
    }

    /// The CLI on this directory's embedded file.
    fn cli(&self) -> Cli {
        Cli {
            store: format!("embedded:{}", self.0.join("t.redb").display()),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `rowkit --store STORE …`: an embedded file, or an emulator instance
/// (`bigtable://…?emulator=HOST:PORT`).
struct Cli {
    store: String,
}

impl Cli {
    /// A fresh instance of the shared emulator, or `None` (printed) when it is not installed
    /// outside CI.
    fn emulator(test: &str) -> Option<Cli> {
        let emu = Emulator::shared_or_skip(test)?;
        Some(Cli {
            store: emu.url(&emu.fresh_target().instance),
        })
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rowkit"));
        c.arg("--store")
            .arg(&self.store)
            .args(args)
            .env_remove("ROWKIT_STORE")
            .env_remove("BIGTABLE_EMULATOR_HOST")
            .env_remove("INITIAL_INSTANCE_ID")
            .env_remove("DEFAULT_BUCKET_KEY_FORMAT");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    fn rowkit(&self, args: &[&str]) -> Output {
        self.run(args, &[])
    }

    /// `rowkit --json ARGS`, which must succeed; its JSON output.
    fn ok(&self, args: &[&str]) -> Value {
        self.ok_env(args, &[])
    }

    fn ok_env(&self, args: &[&str], env: &[(&str, &str)]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args.strip_prefix(&["--json"]).unwrap_or(args));
        let o = self.run(&all, env);
        assert!(o.status.success(), "{all:?}: {o:?}");
        serde_json::from_slice(&o.stdout).unwrap()
    }

    /// `rowkit --json ARGS`, which must exit with `code`; its JSON output.
    fn fails(&self, args: &[&str], code: i32) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let o = self.rowkit(&all);
        assert_eq!(o.status.code(), Some(code), "{all:?}: {o:?}");
        serde_json::from_slice(&o.stdout).unwrap_or(Value::Null)
    }

    /// `rowkit --json --now T0+ms s3 --pid 4242 ARGS`.
    fn at(&self, ms: i64, args: &[&str]) -> Value {
        let now = ((T0 + ms) * 1000).to_string();
        let mut all = vec!["--now", now.as_str(), "s3", "--pid", "4242"];
        all.extend_from_slice(args);
        self.ok(&all)
    }
}

/// The scenarios' clock origin, ms (`objmeta.md` 18).
const T0: i64 = 1_700_000_000_000;

/// The id a fresh CLI process (pid 4242, rg `RG001`, uid counter 0) generates at `T0 + ms`.
fn vid(ms: i64) -> String {
    format!("{:014}999999RG001  4242.0", 99_999_999_999_999 - (T0 + ms))
}

/// The two tests of one flow: on a temporary embedded file, and on a fresh instance of the
/// emulator through `--store bigtable://…?emulator=…` (skipped, printed, when the emulator is
/// not installed outside CI).
macro_rules! on_both_stores {
    ($flow:ident: $embedded:ident, $emulator:ident) => {
        #[test]
        fn $embedded() {
            $flow(&Scratch::new(stringify!($embedded)).cli());
        }

        #[test]
        fn $emulator() {
            if let Some(cli) = Cli::emulator(stringify!($emulator)) {
                $flow(&cli);
            }
        }
    };
}

on_both_stores!(main_flow: objects_versions_and_listings, objects_versions_and_listings_on_the_emulator);
on_both_stores!(put_aliases: put_aliases_and_versioning_modes, put_aliases_and_versioning_modes_on_the_emulator);
on_both_stores!(listing_pages: listing_markers_and_tokens, listing_markers_and_tokens_on_the_emulator);
on_both_stores!(version_pages: versions_key_and_version_id_markers, versions_key_and_version_id_markers_on_the_emulator);
on_both_stores!(repair_left_placeholders: repair_finds_left_placeholders, repair_finds_left_placeholders_on_the_emulator);
on_both_stores!(buckets_uuid_count: buckets_uuid_and_count, buckets_uuid_and_count_on_the_emulator);

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

/// Scenario 36 (`objmeta.md` 18): a missing key, scenario 9's versions and delete marker,
/// scenario 21's first page, a delete of the current version with its repair run at `due`.
fn main_flow(s: &Cli) {
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
    let version_id = |put: Value| put["version_id"].as_str().unwrap().to_string();
    let x = version_id(put(
        "1700000000001000",
        r#"{"key":"k","n":1}"#,
        &["--versioning"],
    ));
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
    let v2 = version_id(put(
        "1700000000003000",
        r#"{"key":"k","n":3}"#,
        &["--versioning"],
    ));
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

/// A listing entry `{key, value: {key}}` of a non-versioned object.
fn content(key: &str) -> Value {
    json!({"key": key, "value": {"key": key}})
}

/// A `versions` entry: `{key, versionId, value}` with the stored value `{key, n, versionId}`
/// (`n` absent for a delete marker, which has `isDeleteMarker`).
fn version(key: &str, n: Option<i64>, id: &str) -> Value {
    let value = match n {
        Some(n) => json!({"key": key, "n": n, "versionId": id}),
        None => json!({"key": key, "isDeleteMarker": true, "versionId": id}),
    };
    json!({"key": key, "versionId": id, "value": value})
}

/// `s3 put` aliases and modes: `--meta` for `--value`; `--versioning` bare or `enabled`
/// (Case1), `suspended` (Case2 with `isNull`), `off` (non-versioned, even over
/// `--params {"versioning": true}`); whole outputs, then the whole `versions` listing.
fn put_aliases(s: &Cli) {
    s.ok(&["s3", "setup"]);
    s.at(0, &["bucket", "create", "b"]);
    let put = |ms: i64, key: &str, n: i64, mode: &[&str]| {
        let meta = json!({"key": key, "n": n}).to_string();
        let mut args = vec!["put", "b", key, "--meta", meta.as_str()];
        args.extend_from_slice(mode);
        s.at(ms, &args)
    };
    let row = |key: &str| {
        let hex: String = format!("b\0\x7fM{key}")
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect();
        (format!("b\\x00\\x7fM{key}"), hex)
    };
    let (k_row, k_hex) = row("k");
    for (ms, mode) in [
        (1, &["--versioning"][..]),
        (2, &["--versioning", "enabled"][..]),
    ] {
        let id = vid(ms);
        let stored = json!({"key": "k", "n": ms, "versionId": id});
        assert_eq!(
            put(ms, "k", ms, mode),
            json!({
                "bucket": "b", "key": "k", "vformat": "v1", "row_key": k_row, "row_key_hex": k_hex,
                "result": format!(r#"{{"versionId": "{id}"}}"#), "version_id": id,
                "events": [
                    {"type": "put", "collection": "b", "key": format!("\u{7f}Vk\u{0}{id}"), "value": stored},
                    {"type": "put", "collection": "b", "key": "\u{7f}Mk", "value": stored},
                ],
            }),
            "{mode:?}"
        );
    }
    let s3 = vid(3);
    let null_version = json!({"key": "k", "n": 3, "isNull": true, "versionId": s3});
    assert_eq!(
        put(3, "k", 3, &["--versioning", "suspended"]),
        json!({
            "bucket": "b", "key": "k", "vformat": "v1", "row_key": k_row, "row_key_hex": k_hex,
            "result": format!(r#"{{"versionId": "{s3}"}}"#), "version_id": s3,
            "events": [{"type": "put", "collection": "b", "key": "\u{7f}Mk", "value": null_version}],
        })
    );
    for (key, extra) in [
        ("o", &["--versioning", "off"][..]),
        (
            "p",
            &["--params", r#"{"versioning":true}"#, "--versioning", "off"][..],
        ),
    ] {
        let (r, hex) = row(key);
        assert_eq!(
            put(4, key, 4, extra),
            json!({
                "bucket": "b", "key": key, "vformat": "v1", "row_key": r, "row_key_hex": hex,
                "result": null, "version_id": null,
                "events": [{"type": "put", "collection": "b", "key": format!("\u{7f}M{key}"), "value": {"key": key, "n": 4}}],
            })
        );
    }
    // A null-version put takes no version id; modes are the three; `--meta` and
    // `--value-file` exclude each other.
    let meta = r#"{"key":"k"}"#;
    for extra in [
        &[
            "--meta",
            meta,
            "--versioning",
            "suspended",
            "--version-id",
            "x",
        ][..],
        &["--versioning", "sometimes", "--meta", meta],
        &["--meta", meta, "--value-file", "/dev/null"],
    ] {
        s.fails(&[&["s3", "put", "b", "k"][..], extra].concat(), 2);
    }
    let none = |key: &str| json!({"key": key, "versionId": "null", "value": {"key": key, "n": 4}});
    assert_eq!(
        s.ok(&["s3", "versions", "b"]),
        json!({
            "CommonPrefixes": [],
            "Versions": [
                {"key": "k", "versionId": s3, "value": null_version},
                version("k", Some(2), &vid(2)),
                version("k", Some(1), &vid(1)),
                none("o"),
                none("p"),
            ],
            "DeleteMarkers": [],
            "IsTruncated": false,
        })
    );
}

/// Scenarios 21–22 through `s3 list`: `--marker` pages, v2 pages by `--max-keys`,
/// `--continuation-token` and `--start-after` (both imply `--v2`), plain `Delimiter`; every
/// output compared whole.
fn listing_pages(s: &Cli) {
    s.ok(&["s3", "setup"]);
    s.ok(&["s3", "bucket", "create", "c"]);
    let keys = ["a", "b/1", "b/2", "c", "d/e/f", "d/g", "e"];
    for k in keys {
        let v = json!({"key": k}).to_string();
        s.ok(&["s3", "put", "c", k, "--value", &v]);
    }
    let list = |extra: &[&str]| {
        let mut args = vec!["s3", "list", "c"];
        args.extend_from_slice(extra);
        s.ok(&args)
    };
    let by_slash = ["--delimiter", "/", "--max-keys", "2"];
    assert_eq!(
        list(&by_slash),
        json!({"CommonPrefixes": ["b/"], "Contents": [content("a")], "IsTruncated": true, "Delimiter": "/", "NextMarker": "b/"})
    );
    assert_eq!(
        list(&[&by_slash[..], &["--marker", "b/"]].concat()),
        json!({"CommonPrefixes": ["d/"], "Contents": [content("c")], "IsTruncated": true, "Delimiter": "/", "NextMarker": "d/"})
    );
    assert_eq!(
        list(&[&by_slash[..], &["--marker", "d/"]].concat()),
        json!({"CommonPrefixes": [], "Contents": [content("e")], "IsTruncated": false, "Delimiter": "/"})
    );
    assert_eq!(
        list(&["--prefix", "d/", "--delimiter", "/"]),
        json!({"CommonPrefixes": ["d/e/"], "Contents": [content("d/g")], "IsTruncated": false, "Delimiter": "/"})
    );
    assert_eq!(
        list(&["--v2", "--max-keys", "3"]),
        json!({"CommonPrefixes": [], "Contents": [content("a"), content("b/1"), content("b/2")], "IsTruncated": true, "NextContinuationToken": "b/2"})
    );
    assert_eq!(
        list(&["--continuation-token", "c"]),
        json!({"CommonPrefixes": [], "Contents": [content("d/e/f"), content("d/g"), content("e")], "IsTruncated": false})
    );
    assert_eq!(
        list(&["--start-after", "b/1", "--max-keys", "3"]),
        json!({"CommonPrefixes": [], "Contents": [content("b/2"), content("c"), content("d/e/f")], "IsTruncated": true, "NextContinuationToken": "d/e/f"})
    );
    assert_eq!(
        list(&["--max-keys", "0", "--v2"]),
        json!({"CommonPrefixes": [], "Contents": keys.map(content), "IsTruncated": false})
    );
    assert_eq!(
        list(&["--algo", "Delimiter", "--delimiter", "/"]),
        json!({"CommonPrefixes": ["b/", "d/"], "Contents": [content("a"), content("c"), content("e")], "IsTruncated": false, "Delimiter": "/"})
    );
    s.fails(
        &["s3", "list", "c", "--marker", "a", "--start-after", "b"],
        2,
    );
    s.fails(
        &[
            "s3",
            "list",
            "c",
            "--marker",
            "a",
            "--continuation-token",
            "b",
        ],
        2,
    );
    assert_eq!(s.ok(&["s3", "bucket", "delete", "c"])["deleted_rows"], 7);
}

/// Scenario 23 through `s3 versions`: two versions each of `a`, `b/x`, `c`, then a delete
/// marker on `c`; pages of two by `--key-marker` / `--version-id-marker`, `--key-marker`
/// alone, `--delimiter`; every output compared whole.
fn version_pages(s: &Cli) {
    s.ok(&["s3", "setup"]);
    s.at(0, &["bucket", "create", "v"]);
    let mut ms = 0;
    for key in ["a", "b/x", "c"] {
        for n in 1..=2 {
            ms += 1;
            let meta = json!({"key": key, "n": n}).to_string();
            s.at(ms, &["put", "v", key, "--meta", &meta, "--versioning"]);
        }
    }
    s.at(
        7,
        &[
            "put",
            "v",
            "c",
            "--meta",
            r#"{"key":"c","isDeleteMarker":true}"#,
            "--versioning",
        ],
    );
    let (a1, a2, x3, x4, c5, c6, dm) = (vid(1), vid(2), vid(3), vid(4), vid(5), vid(6), vid(7));
    let versions = |extra: &[&str]| {
        let mut args = vec!["s3", "versions", "v"];
        args.extend_from_slice(extra);
        s.ok(&args)
    };
    assert_eq!(
        versions(&["--max-keys", "2"]),
        json!({"CommonPrefixes": [], "Versions": [version("a", Some(2), &a2), version("a", Some(1), &a1)], "DeleteMarkers": [], "IsTruncated": true, "NextKeyMarker": "a", "NextVersionIdMarker": a1})
    );
    assert_eq!(
        versions(&[
            "--max-keys",
            "2",
            "--key-marker",
            "a",
            "--version-id-marker",
            &a1
        ]),
        json!({"CommonPrefixes": [], "Versions": [version("b/x", Some(2), &x4), version("b/x", Some(1), &x3)], "DeleteMarkers": [], "IsTruncated": true, "NextKeyMarker": "b/x", "NextVersionIdMarker": x3})
    );
    assert_eq!(
        versions(&[
            "--max-keys",
            "2",
            "--key-marker",
            "b/x",
            "--version-id-marker",
            &x3
        ]),
        json!({"CommonPrefixes": [], "Versions": [version("c", Some(2), &c6)], "DeleteMarkers": [version("c", None, &dm)], "IsTruncated": true, "NextKeyMarker": "c", "NextVersionIdMarker": c6})
    );
    assert_eq!(
        versions(&[
            "--max-keys",
            "2",
            "--key-marker",
            "c",
            "--version-id-marker",
            &c6
        ]),
        json!({"CommonPrefixes": [], "Versions": [version("c", Some(1), &c5)], "DeleteMarkers": [], "IsTruncated": false})
    );
    assert_eq!(
        versions(&["--key-marker", "a"]),
        json!({"CommonPrefixes": [], "Versions": [version("b/x", Some(2), &x4), version("b/x", Some(1), &x3), version("c", Some(2), &c6), version("c", Some(1), &c5)], "DeleteMarkers": [version("c", None, &dm)], "IsTruncated": false})
    );
    assert_eq!(
        versions(&["--delimiter", "/"]),
        json!({"CommonPrefixes": ["b/"], "Versions": [version("a", Some(2), &a2), version("a", Some(1), &a1), version("c", Some(2), &c6), version("c", Some(1), &c5)], "DeleteMarkers": [version("c", None, &dm)], "IsTruncated": false, "Delimiter": "/"})
    );
    s.fails(&["s3", "versions", "v", "--version-id-marker", &a1], 2);
}

/// `s3 repair [BUCKET] [--all]`: placeholder masters left by deletes whose process exited
/// before the repair's due time (`s3 delete --repair skip`, `objmeta.md` 8.4) are found in
/// the rows; a repair is due 15 s after the placeholder id's time. Before that the bucket's
/// placeholder is reported `not_due`; at its due time `s3 repair` (every bucket of the
/// metastore) repairs it and leaves the later one; `--all` repairs that one too; then nothing
/// is left. Both formats.
fn repair_left_placeholders(s: &Cli) {
    s.ok(&["s3", "setup"]);
    s.at(0, &["bucket", "create", "r"]);
    s.at(0, &["bucket", "create", "r0", "--vformat", "v0"]);
    // Two versions of k in each bucket, then the delete of the current one, repair skipped.
    let mut phd = Vec::new();
    for (bucket, base) in [("r", 0), ("r0", 10)] {
        for n in 1..=2 {
            let meta = json!({"key": "k", "n": n}).to_string();
            s.at(
                base + n,
                &["put", bucket, "k", "--meta", &meta, "--versioning"],
            );
        }
        let d = s.at(
            base + 3,
            &[
                "delete",
                bucket,
                "k",
                "--version-id",
                &vid(base + 2),
                "--repair",
                "skip",
            ],
        );
        let p = vid(base + 3);
        let due = (T0 + base + 3) * 1000 + 15_000_000;
        assert_eq!(
            d["repairs"],
            json!([{"key": "k", "phd_version_id": p, "due": due, "outcome": "skipped"}])
        );
        phd.push((bucket, p, due, vid(base + 1)));
    }
    let entry = |i: usize, outcome: &str| {
        let (bucket, p, due, _) = &phd[i];
        json!({"bucket": bucket, "key": "k", "phd_version_id": p, "due": due, "outcome": outcome})
    };
    let repaired_event = |i: usize| {
        let (bucket, _, _, v1) = &phd[i];
        let key = if *bucket == "r" { "\u{7f}Mk" } else { "k" };
        json!({"type": "put", "collection": bucket, "key": key,
               "value": {"key": "k", "n": 1, "versionId": v1, "originOp": "s3:ObjectRemoved:Delete"}})
    };
    let now = |us: i64| us.to_string();
    let just_before = now(phd[0].2 - 1);
    assert_eq!(
        s.ok(&["--now", &just_before, "s3", "repair", "r"]),
        json!({"buckets": ["r"], "repairs": [entry(0, "not_due")], "events": []})
    );
    let at_due = now(phd[0].2);
    assert_eq!(
        s.ok(&["--now", &at_due, "s3", "repair"]),
        json!({"buckets": ["r", "r0"], "repairs": [entry(0, "repaired"), entry(1, "not_due")], "events": [repaired_event(0)]})
    );
    assert_eq!(
        s.ok(&["--now", &at_due, "s3", "repair", "--all"]),
        json!({"buckets": ["r", "r0"], "repairs": [entry(1, "repaired")], "events": [repaired_event(1)]})
    );
    assert_eq!(
        s.ok(&["s3", "repair"]),
        json!({"buckets": ["r", "r0"], "repairs": [], "events": []})
    );
    for (i, bucket) in ["r", "r0"].into_iter().enumerate() {
        assert_eq!(
            s.ok(&["s3", "get", bucket, "k"]),
            json!({"bucket": bucket, "key": "k", "version_id": null, "value": repaired_event(i)["value"]})
        );
    }
}

/// `s3 bucket get`, `s3 bucket put-attributes` (putBucketAttributes keeps the vFormat),
/// `s3 bucket list`, `s3 count` and `s3 uuid` (the first candidate, from
/// `INITIAL_INSTANCE_ID`, stays); whole outputs.
fn buckets_uuid_count(s: &Cli) {
    s.ok(&["s3", "setup"]);
    s.at(0, &["bucket", "create", "b"]);
    let md = json!({"name": "c", "owner": "o", "locationConstraint": "us-east-1",
                    "versioningConfiguration": {"Status": "Enabled"}, "quotaMax": 5, "unknown": 1});
    s.ok(&["s3", "bucket", "create", "c", "--md", &md.to_string()]);
    let stored = json!({"name": "c", "owner": "o", "versioningConfiguration": {"Status": "Enabled"},
                        "locationConstraint": "us-east-1", "quotaMax": 5});
    assert_eq!(
        s.ok(&["s3", "bucket", "get", "c"]),
        json!({"bucket": "c", "value": stored})
    );
    let e = s.fails(&["s3", "bucket", "get", "missing"], 1);
    assert_eq!(e["error"]["id"], "NoSuchBucket");
    assert_eq!(
        s.ok(&["s3", "count"]),
        json!({"objects": 0, "versions": 0, "buckets": 2, "bucketList": [
            {"name": "b", "location": null, "isVersioned": false, "ownerCanonicalId": "rowkit", "ingestion": false},
            {"name": "c", "location": "us-east-1", "isVersioned": true, "ownerCanonicalId": "o", "ingestion": false},
        ], "dataManaged": {"total": {"curr": 0, "prev": 0}, "byLocation": {}}, "stalled": 0, "bucketWithQuotaCount": 1})
    );
    let replaced = json!({"name": "c", "owner": "o2"});
    assert_eq!(
        s.ok(&[
            "s3",
            "bucket",
            "put-attributes",
            "c",
            "--md",
            r#"{"owner":"o2","name":"c","x":1}"#
        ]),
        json!({"bucket": "c", "row_key": "__metastore\\x00c", "row_key_hex": "5f5f6d65746173746f72650063",
               "value": replaced,
               "events": [{"type": "put", "collection": "__metastore", "key": "c", "value": replaced}]})
    );
    assert_eq!(
        s.ok(&["s3", "bucket", "get", "c"]),
        json!({"bucket": "c", "value": replaced})
    );
    assert_eq!(
        s.ok(&["s3", "bucket", "list"]),
        json!({"buckets": [
            {"name": "b", "vformat": "v1", "special": false, "row_key": "__metastore\\x00b", "row_key_hex": "5f5f6d65746173746f72650062"},
            {"name": "c", "vformat": "v1", "special": false, "row_key": "__metastore\\x00c", "row_key_hex": "5f5f6d65746173746f72650063"},
        ]})
    );
    let first = "00000000-0000-4000-8000-000000000001";
    for candidate in [first, "00000000-0000-4000-8000-000000000002"] {
        assert_eq!(
            s.ok_env(&["s3", "uuid"], &[("INITIAL_INSTANCE_ID", candidate)]),
            json!({"uuid": first})
        );
    }
    assert_eq!(s.ok(&["--seed", "9", "s3", "uuid"]), json!({"uuid": first}));
}

/// A store failure (here a table without objmeta's families) is Arsenal's `InternalError`, its
/// message saying so once before the store's own status.
#[test]
fn a_store_failure_says_internal_error_once() {
    let s = Scratch::new("store-failure");
    s.ok(&["admin", "create-table", "objmeta", "--family", "x"]);
    let error = &s.cli().fails(&["s3", "bucket", "create", "b"], 1)["error"];
    assert_eq!(error["id"], "InternalError", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("InternalError: NOT_FOUND: "),
        "{message}"
    );
    assert_eq!(message.matches("InternalError").count(), 1, "{message}");
}

/// `rowkit --now T0+ms s3 --pid 4242+ms migrate ARGS` (text, or JSON with a leading
/// `--json`): its whole output, whatever the exit code. Each run is another process id, as
/// the operator's reruns are: a run that stopped at a gate released its lease.
fn migrate_at(s: &Cli, ms: i64, args: &[&str]) -> Output {
    let now = ((T0 + ms) * 1000).to_string();
    let pid = (4242 + ms).to_string();
    let (json, args) = match args.strip_prefix(&["--json"]) {
        Some(rest) => (true, rest),
        None => (false, args),
    };
    let mut all = if json { vec!["--json"] } else { vec![] };
    all.extend_from_slice(&[
        "--now",
        now.as_str(),
        "s3",
        "--pid",
        pid.as_str(),
        "migrate",
    ]);
    all.extend_from_slice(args);
    s.rowkit(&all)
}

/// `s3 migrate` (docs/migration.md §3, §7.3, §11.7) on the embedded store with the manual
/// clock (`--now`: the settle waits cost no time): a v0 bucket with versions; the run without
/// gates ends in `verifying` (text summary; JSON document and JSON Lines progress); with
/// `--switch --finish` the marker is removed and the bucket is v1, its objects readable; then
/// `--to v1` again is "already v1"; a bad `--to` is one usage line, exit 2.
#[test]
fn migrate_a_v0_bucket_to_v1() {
    let scratch = Scratch::new("migrate");
    let s = &scratch.cli();
    s.ok(&["s3", "setup"]);
    s.at(0, &["bucket", "create", "m", "--vformat", "v0"]);
    for (i, key) in ["a", "b/c"].into_iter().enumerate() {
        for n in 1..=2 {
            let meta = json!({"key": key, "n": n}).to_string();
            let ms = 1 + 2 * i64::try_from(i).unwrap() + n;
            s.at(ms, &["put", "m", key, "--meta", &meta, "--versioning"]);
        }
    }

    let o = migrate_at(s, 100, &["m", "--to", "v1"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.starts_with("bucket m: verifying (") && text.contains("--switch"),
        "{text}"
    );
    // Piped: no progress bar on stderr.
    assert!(
        o.stderr.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&o.stderr)
    );

    let o = migrate_at(s, 200, &["--json", "m", "--to", "v1", "--page", "2"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["state"], "verifying");
    assert_eq!(doc["to"], "v1");
    assert_eq!(doc["blocked"], false);
    assert_eq!(doc["passes"][0]["kind"], "verify");
    assert_eq!(doc["passes"][0]["diffs"], 0);
    let lines: Vec<Value> = String::from_utf8(o.stderr)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 2, "one line per page of 2 rows: {lines:?}");
    assert!(
        lines
            .iter()
            .all(|l| l["state"] == "verifying" && l["rows_scanned"].is_u64())
    );

    let o = migrate_at(
        s,
        300,
        &["--json", "m", "--to", "v1", "--switch", "--finish"],
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["state"], "removed", "{doc}");
    assert_eq!(doc["conflicts"], json!([]));
    assert_eq!(doc["findings"], json!([]));
    let buckets = s.ok(&["s3", "bucket", "list"]);
    assert_eq!(buckets["buckets"][0]["vformat"], "v1", "{buckets}");
    for key in ["a", "b/c"] {
        let got = s.ok(&["s3", "get", "m", key]);
        assert_eq!(
            (&got["value"]["key"], &got["value"]["n"]),
            (&json!(key), &json!(2)),
            "{got}"
        );
    }

    let o = migrate_at(s, 400, &["m", "--to", "v1"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "bucket m: already v1, nothing to do\n"
    );

    let o = migrate_at(s, 500, &["m", "--to", "v2"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(
        String::from_utf8(o.stderr).unwrap(),
        "rowkit: --to \"v2\": expected v1 or v0\n"
    );
    // Below the minimum settle: refused before any request, exit 2.
    let o = migrate_at(s, 500, &["m", "--to", "v0", "--settle", "10s"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}

/// `s3 migrate`'s flags of docs/migration.md §4.6, §4.9 and §11.2: a bad `--resolve` is one
/// usage line (exit 2); `--max-pause` shorter than the expected pause refuses the fence in one
/// line naming the estimate (exit 1) and leaves the bucket verifying; the switch prints the
/// expected pause; `--to v0` on the switched bucket needs `--switch` (exit 2), and with
/// `--switch --finish` rolls the bucket back to v0, every object readable.
#[test]
fn migrate_max_pause_resolve_and_rollback() {
    let scratch = Scratch::new("migrate-flags");
    let s = &scratch.cli();
    s.ok(&["s3", "setup"]);
    s.at(0, &["bucket", "create", "m", "--vformat", "v0"]);
    for (i, key) in ["a", "b/c", "d"].into_iter().enumerate() {
        let meta = json!({"key": key, "n": i}).to_string();
        s.at(
            1 + i64::try_from(i).unwrap(),
            &["put", "m", key, "--meta", &meta],
        );
    }
    let o = migrate_at(s, 100, &["m", "--to", "v1", "--resolve", "keep-both"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(
        String::from_utf8(o.stderr).unwrap(),
        "rowkit: --resolve \"keep-both\": expected keep-to or keep-from\n"
    );

    // Embedded store: Δ is the minimum, 85 s; the manual clock makes the pass take no time.
    let o = migrate_at(
        s,
        200,
        &["m", "--switch", "--max-pause", "10s", "--to", "v1"],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("expected pause of the switch is 85 s"),
        "{err}"
    );
    assert!(err.contains("--max-pause 10 s"), "{err}");
    let o = migrate_at(s, 300, &["--json", "m", "--to", "v1"]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["state"], "verifying", "{doc}");
    assert_eq!(doc["pause_estimate_us"], Value::Null, "{doc}");

    let o = migrate_at(
        s,
        400,
        &["m", "--to", "v1", "--max-pause", "2m", "--switch"],
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.starts_with("bucket m: switched ("), "{text}");
    assert!(text.contains("expected pause of the switch 85 s"), "{text}");
    let buckets = s.ok(&["s3", "bucket", "list"]);
    assert_eq!(buckets["buckets"][0]["vformat"], "v1", "{buckets}");

    // Rolling the switch back fences the writers: --switch is required.
    let o = migrate_at(s, 500, &["m", "--to", "v0"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("needs --switch"), "{err}");
    let o = migrate_at(
        s,
        600,
        &[
            "--json",
            "m",
            "--to",
            "v0",
            "--switch",
            "--finish",
            "--resolve",
            "keep-to",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["state"], "removed", "{doc}");
    assert_eq!(doc["resolved"], json!([]), "{doc}");
    let buckets = s.ok(&["s3", "bucket", "list"]);
    assert_eq!(buckets["buckets"][0]["vformat"], "v0", "{buckets}");
    for (i, key) in ["a", "b/c", "d"].into_iter().enumerate() {
        let got = s.ok(&["s3", "get", "m", key]);
        assert_eq!(got["value"], json!({"key": key, "n": i}), "{got}");
    }
}
