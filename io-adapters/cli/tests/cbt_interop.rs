//! Interop with Google's `cbt` for the four schemas, on the Bigtable emulator.
//!
//! - rowkit writes (gold, s3, graph), `cbt read` shows the exact row names, families,
//!   qualifiers, timestamps and value bytes the specs and vectors define. The expected rows are
//!   built from `../shared/vectors/*.json` and the spec tables, never from rowkit's encoders.
//! - A table populated only with `cbt createtable` + `cbt set` in the original's layout (or
//!   `rowkit admin set` for the cells `cbt` cannot express: a NUL byte in a row key or value)
//!   is read correctly by the real `rowkit` binary: `mt resolve/glob`, `gold tile/traces`,
//!   `s3 get/versions/list`, `graph query`.
//!
//! `cbt read` prints row keys raw, `family:qualifier` raw, the timestamp as
//! `2006/01/02-15:04:05.000000` in local time (run with `TZ=UTC`) and values Go-quoted (`%q`).
//!
//! Every test also runs against rowkit's own gRPC server over memory: and embedded:
//! (`every_test_on_rowkit_grpc_*`, the Bigtable adapter's backends).
#![allow(clippy::unwrap_used)]

// The Bigtable adapter's test backends (rowkit-grpc fixtures), shared rather than copied.
#[path = "../../bigtable/tests/backends/mod.rs"]
mod backends;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Output};

use rowkit_store::driver::{Clock, SystemClock};
use rowkit_testkit::emulator::{CBT_BIN, Emulator};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Harness

fn shared_dir() -> String {
    std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared").to_string())
}

fn vectors(name: &str) -> Value {
    let path = format!("{}/vectors/{name}", shared_dir());
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The emulator and a fresh instance, or `None` (printed) when the emulator or `cbt` is not
/// installed outside CI.
fn setup(test: &str) -> Option<(&'static Emulator, String)> {
    let emu = backends::selected(test)?;
    if !std::path::Path::new(CBT_BIN).is_file() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "cbt is not installed at {CBT_BIN} (Debian package google-cloud-cli-cbt)"
        );
        eprintln!("\n!!!!! SKIPPED {test}: {CBT_BIN} is not installed\n");
        return None;
    }
    Some((emu, emu.fresh_target().instance))
}

fn check(o: Output) -> Vec<u8> {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// `rowkit --store bigtable://…?emulator=… ARGS`.
fn rowkit(emu: &Emulator, instance: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .arg("--store")
        .arg(emu.url(instance))
        .args(args)
        .env_remove("ROWKIT_STORE")
        .env_remove("BIGTABLE_EMULATOR_HOST")
        .output()
        .unwrap()
}

fn rowkit_json(emu: &Emulator, instance: &str, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_slice(&check(rowkit(emu, instance, &all))).unwrap()
}

/// `cbt ARGS` on `instance`, in UTC; arguments are raw bytes (any byte but NUL).
fn cbt<A: AsRef<[u8]>>(emu: &Emulator, instance: &str, args: &[A]) -> Vec<u8> {
    let out = Command::new(CBT_BIN)
        .env("BIGTABLE_EMULATOR_HOST", emu.host_for(instance))
        .env("TZ", "UTC")
        // No credentials file: cbt otherwise asks gcloud for one (about 2 s per call).
        .args(["-creds", "/dev/null"])
        .args([
            "-project",
            rowkit_testkit::emulator::PROJECT,
            "-instance",
            instance,
        ])
        .args(args.iter().map(|a| OsStr::from_bytes(a.as_ref())))
        .output()
        .unwrap();
    check(out)
}

/// `FAMILY:QUALIFIER=VALUE@TS` for `cbt set`.
fn cbt_cell(column: &str, value: &[u8], ts: i64) -> Vec<u8> {
    let mut a = format!("{column}=").into_bytes();
    a.extend_from_slice(value);
    a.extend_from_slice(format!("@{ts}").as_bytes());
    a
}

/// One cell as `cbt read` shows it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Shown {
    row: Vec<u8>,
    /// `family:qualifier`.
    column: Vec<u8>,
    /// `2006/01/02-15:04:05.000000`, UTC.
    time: String,
    value: Vec<u8>,
}

impl Shown {
    fn new(row: &[u8], column: &[u8], micros: i64, value: &[u8]) -> Shown {
        Shown {
            row: row.to_vec(),
            column: column.to_vec(),
            time: cbt_time(micros),
            value: value.to_vec(),
        }
    }
}

/// µs since the epoch as `cbt read` prints it (Go layout `2006/01/02-15:04:05.000000`, UTC).
fn cbt_time(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}/{month:02}/{day:02}-{:02}:{:02}:{:02}.{frac:06}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Undoes Go's `%q` (`strconv.Quote`) of a byte string.
fn go_unquote(q: &[u8]) -> Vec<u8> {
    assert!(
        q.len() >= 2 && q[0] == b'"' && q[q.len() - 1] == b'"',
        "not a Go-quoted string: {}",
        String::from_utf8_lossy(q)
    );
    let s = &q[1..q.len() - 1];
    let hex = |h: &[u8]| u32::from_str_radix(std::str::from_utf8(h).unwrap(), 16).unwrap();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        let (len, bytes): (usize, Vec<u8>) = match s[i + 1] {
            b'a' => (2, vec![7]),
            b'b' => (2, vec![8]),
            b'f' => (2, vec![12]),
            b'n' => (2, vec![b'\n']),
            b'r' => (2, vec![b'\r']),
            b't' => (2, vec![b'\t']),
            b'v' => (2, vec![11]),
            b'\\' => (2, vec![b'\\']),
            b'"' => (2, vec![b'"']),
            b'x' => (4, vec![hex(&s[i + 2..i + 4]) as u8]),
            b'u' | b'U' => {
                let n = if s[i + 1] == b'u' { 4 } else { 8 };
                let c = char::from_u32(hex(&s[i + 2..i + 2 + n])).unwrap();
                (2 + n, c.to_string().into_bytes())
            }
            other => panic!("unknown escape \\{}", other as char),
        };
        out.extend(bytes);
        i += len;
    }
    out
}

/// Every cell of `cbt read TABLE` (`latest`: with `cells-per-column=1`, for tables whose
/// families keep one version: the emulator garbage-collects lazily).
fn cbt_read(emu: &Emulator, instance: &str, table: &str, latest: bool) -> BTreeSet<Shown> {
    let mut args = vec!["read", table];
    if latest {
        args.push("cells-per-column=1");
    }
    let out = cbt(emu, instance, &args);
    let mut cells = BTreeSet::new();
    let mut row: Option<Vec<u8>> = None;
    let mut column: Option<(Vec<u8>, String)> = None;
    let mut after_rule = false;
    for line in out.split(|b| *b == b'\n') {
        if line.starts_with(b"----------") {
            after_rule = true;
            continue;
        }
        if after_rule {
            row = Some(line.to_vec());
            after_rule = false;
        } else if let Some(v) = line.strip_prefix(b"    ") {
            let (c, time) = column.take().expect("value line without a column line");
            cells.insert(Shown {
                row: row.clone().unwrap(),
                column: c,
                time,
                value: go_unquote(v),
            });
        } else if let Some(c) = line.strip_prefix(b"  ") {
            let at = c.windows(3).rposition(|w| w == b" @ ").unwrap();
            let mut name = c[..at].to_vec();
            while name.last() == Some(&b' ') {
                name.pop();
            }
            let time = String::from_utf8(c[at + 3..].to_vec()).unwrap();
            column = Some((name, time));
        }
    }
    cells
}

/// Asserts `shown` is exactly `expected`, listing the differences.
fn assert_cells(what: &str, shown: &BTreeSet<Shown>, expected: &BTreeSet<Shown>) {
    let fmt = |c: &Shown| {
        format!(
            "{} {} @ {} = {}",
            String::from_utf8_lossy(&c.row).escape_debug(),
            String::from_utf8_lossy(&c.column),
            c.time,
            c.value.escape_ascii()
        )
    };
    let missing: Vec<String> = expected.difference(shown).map(fmt).collect();
    let extra: Vec<String> = shown.difference(expected).map(fmt).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: cbt read differs from the spec\n  missing:\n    {}\n  unexpected:\n    {}",
        missing.join("\n    "),
        extra.join("\n    ")
    );
}

fn unhex(h: &str) -> Vec<u8> {
    hex::decode(h).unwrap()
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str()
        .unwrap_or_else(|| panic!("{k} is not a string in {v}"))
}

// ---------------------------------------------------------------------------------------------
// gold (`spec/tracestore.md` 4, 5)

mod gold {
    use super::*;

    /// Put time (`cell_timestamps[0]`) and a commit time, both whole milliseconds.
    const TS: i64 = 1_557_018_184_000_000;
    const COMMIT_TIME: i64 = 1_556_280_003_000_000;

    struct Fixture {
        v: Value,
        /// The OPS of key order `[config]`, values `[8888, 565]` (`ops_gob[1]`).
        ops: Value,
    }

    impl Fixture {
        fn load() -> Fixture {
            let v = vectors("tracestore.json");
            let ops = v["ops_gob"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["param_set"] == json!({"config": ["8888", "565"]}))
                .unwrap()
                .clone();
            assert_eq!(ops["key_order"], json!(["config"]));
            Fixture { v, ops }
        }

        /// The OPS row of tile 0 (`ops_row_names`).
        fn ops_row(&self) -> String {
            let r = self.v["ops_row_names"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["tile_key"] == 2147483647)
                .unwrap();
            s(r, "row").to_string()
        }

        /// The shard of a subkey (`shards`).
        fn shard(&self, subkey: &str) -> u64 {
            self.v["shards"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["subkey"] == subkey)
                .unwrap()["shard"]
                .as_u64()
                .unwrap()
        }

        /// `"%02d:ts:%s:%010d:%s"` (§4) in tile 0 (tile key 2147483647).
        fn row(&self, kind: &str, subkey: &str) -> String {
            format!("{:02}:ts:{kind}:2147483647:{subkey}", self.shard(subkey))
        }

        /// Two digests: `digest_to_cell[0]` and `digest_map_cells[0]`, with their bytes.
        fn digests(&self) -> [(String, Vec<u8>); 2] {
            let a = &self.v["digest_to_cell"][0];
            let b = &self.v["digest_map_cells"][0];
            [
                (s(a, "digest").to_string(), unhex(s(a, "cell_hex"))),
                (s(b, "digest").to_string(), unhex(s(b, "digest"))),
            ]
        }

        fn digest_map(&self, i: usize) -> &Value {
            &self.v["digest_map_cells"][i]
        }
    }

    /// `config=8888` is `,0=0,` and `config=565` is `,0=1,` under key order `[config]` and
    /// values `[8888, 565]` (§6.1); commits 0 and 10 are columns `000`/`010` (md5) or `0`/`10`
    /// (digest-id) of tile 0 (`repo_index_to_tile`, `digest_id_columns`).
    const POINTS: [(&str, i64, &str); 2] = [("8888", 0, ",0=0,"), ("565", 10, ",0=1,")];

    fn put(emu: &Emulator, instance: &str, layout: &str, config: &str, commit: i64, digest: &str) {
        let commit = commit.to_string();
        let params = format!("config={config}");
        let ts = TS.to_string();
        let ct = COMMIT_TIME.to_string();
        let mut args = vec![
            "gold", "put", "--commit", &commit, "--params", &params, "--digest", digest, "--ts",
            &ts,
        ];
        if layout == "md5" {
            args.extend(["--options", "ext=png", "--commit-time", &ct]);
        }
        rowkit_json(emu, instance, &args);
    }

    /// md5 layout: the OPS row (gob bytes and hash of `ops_gob`), trace rows (16 digest bytes
    /// at the put time, plus `P:B` at the commit time: the shared-mutation quirk, §5.4) and
    /// options rows (`P:B = ,ext=png,`, plus the digest cell), nothing else.
    #[test]
    fn cbt_reads_the_gold_md5_layout_rowkit_wrote() {
        let Some((emu, instance)) = setup("cbt_reads_the_gold_md5_layout_rowkit_wrote") else {
            return;
        };
        let f = Fixture::load();
        rowkit_json(emu, &instance, &["gold", "setup", "--layout", "md5"]);
        let digests = f.digests();
        for ((config, commit, _), (digest, _)) in POINTS.iter().zip(&digests) {
            put(emu, &instance, "md5", config, *commit, digest);
        }
        let shown = cbt_read(emu, &instance, "gold", true);
        let ops_row = f.ops_row();
        // The OPS cells' timestamp is the writer's clock (§9): take it from what is shown.
        let ops_time = shown
            .iter()
            .find(|c| c.row == ops_row.as_bytes())
            .map(|c| c.time.clone())
            .unwrap();
        let mut expected = BTreeSet::new();
        for (col, value) in [
            ("O:OPS", unhex(s(&f.ops, "gob_hex"))),
            ("O:H", s(&f.ops, "md5_hex").as_bytes().to_vec()),
        ] {
            expected.insert(Shown {
                row: ops_row.clone().into_bytes(),
                column: col.as_bytes().to_vec(),
                time: ops_time.clone(),
                value,
            });
        }
        let options = f.v["options_value"][0]["cell"].as_str().unwrap();
        assert_eq!(options, ",ext=png,");
        let columns = ["000", "010"];
        for (((_, _, subkey), (_, bytes)), column) in POINTS.iter().zip(&digests).zip(columns) {
            for kind in ["t", "p"] {
                let row = f.row(kind, subkey);
                let t = format!("T:{column}");
                expected.insert(Shown::new(row.as_bytes(), t.as_bytes(), TS, bytes));
                expected.insert(Shown::new(
                    row.as_bytes(),
                    b"P:B",
                    COMMIT_TIME,
                    options.as_bytes(),
                ));
            }
        }
        assert_cells("gold md5", &shown, &expected);
    }

    /// Digest-id layout: the OPS row, trace cells holding the ids as uvarints, the digest map
    /// (row and qualifier of `digest_map_cells`, decimal id) and the id counter (8 bytes
    /// big-endian). Each `rowkit gold put` is a fresh process with an empty id pool, so each
    /// allocates with an increment of 1 + 256 (§11.3): the first gets id 1 (id 0 is the missing
    /// digest), the second id 257, and the counter ends at 514.
    #[test]
    fn cbt_reads_the_gold_digest_id_layout_rowkit_wrote() {
        let Some((emu, instance)) = setup("cbt_reads_the_gold_digest_id_layout_rowkit_wrote")
        else {
            return;
        };
        let f = Fixture::load();
        rowkit_json(emu, &instance, &["gold", "setup", "--layout", "digest-id"]);
        for (i, (config, commit, _)) in POINTS.iter().enumerate() {
            put(
                emu,
                &instance,
                "digest-id",
                config,
                *commit,
                s(f.digest_map(i), "digest"),
            );
        }
        let shown = cbt_read(emu, &instance, "gold", true);
        let time_of = |row: &[u8]| {
            shown
                .iter()
                .find(|c| c.row == row)
                .map(|c| c.time.clone())
                .unwrap()
        };
        let mut expected = BTreeSet::new();
        let ops_row = f.ops_row().into_bytes();
        for (col, value) in [
            ("O:OPS", unhex(s(&f.ops, "gob_hex"))),
            ("O:H", s(&f.ops, "md5_hex").as_bytes().to_vec()),
        ] {
            expected.insert(Shown {
                row: ops_row.clone(),
                column: col.as_bytes().to_vec(),
                time: time_of(&ops_row),
                value,
            });
        }
        let ids: [(u64, &[u8]); 2] = [(1, &[0x01]), (257, &[0x81, 0x02])];
        for (i, ((_, _, subkey), column)) in POINTS.iter().zip(["0", "10"]).enumerate() {
            let (id, uvarint) = ids[i];
            let t = format!("T:{column}");
            expected.insert(Shown::new(
                f.row("t", subkey).as_bytes(),
                t.as_bytes(),
                TS,
                uvarint,
            ));
            // The map cell is stamped with the inserting machine's clock (§5.6).
            let m = f.digest_map(i);
            let row = s(m, "row").as_bytes().to_vec();
            let q = format!("D:{}", s(m, "qualifier"));
            expected.insert(Shown {
                time: time_of(&row),
                row,
                column: q.into_bytes(),
                value: id.to_string().into_bytes(),
            });
        }
        let counter = f.v["id_counter"][0]["row"]
            .as_str()
            .unwrap()
            .as_bytes()
            .to_vec();
        assert_eq!(counter, b":ts:i:0000000000:");
        expected.insert(Shown {
            time: time_of(&counter),
            row: counter,
            column: b"I:idc".to_vec(),
            value: 514i64.to_be_bytes().to_vec(),
        });
        assert_cells("gold digest-id", &shown, &expected);
    }

    fn check_read(emu: &Emulator, instance: &str, f: &Fixture, digests: [&str; 2], md5: bool) {
        let tile = rowkit_json(emu, instance, &["gold", "tile", "0"]);
        assert_eq!(tile["tile_index"], 0, "{tile}");
        let traces = tile["traces"].as_array().unwrap();
        assert_eq!(traces.len(), 2, "{tile}");
        let by_id: BTreeMap<&str, &Value> = traces
            .iter()
            .map(|t| (t["id"].as_str().unwrap(), t))
            .collect();
        for ((config, commit, _), digest) in POINTS.iter().zip(digests) {
            let t = by_id[format!(",config={config},").as_str()];
            assert_eq!(t["digests"][*commit as usize], digest, "{t}");
            let others = t["digests"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .filter(|(i, d)| *i != *commit as usize && d.as_str() != Some(""))
                .count();
            assert_eq!(others, 0, "{t}");
            if md5 {
                assert_eq!(t["options"], json!({"ext": "png"}), "{t}");
            }
        }
        // The paramset has the options' keys too (md5 layout, §12.2).
        let paramset = if md5 {
            json!({"config": ["565", "8888"], "ext": ["png"]})
        } else {
            json!({"config": ["565", "8888"]})
        };
        assert_eq!(tile["paramset"], paramset);
        let newest = rowkit_json(emu, instance, &["gold", "newest"]);
        assert_eq!(newest["tile_index"], 0);
        let range = rowkit_json(
            emu,
            instance,
            &[
                "gold",
                "traces",
                "--from",
                "5",
                "--to",
                "10",
                "--match",
                "config=565",
            ],
        );
        assert_eq!(range["commits"], json!([5, 6, 7, 8, 9, 10]));
        assert_eq!(range["traces"][0]["digests"][5], digests[1]);
        assert_eq!(range["traces"].as_array().unwrap().len(), 1);
        let _ = f;
    }

    /// A tile written by `cbt set` in Gold's md5 layout (the OPS row's gob holds NUL bytes, so
    /// that one row goes through `rowkit admin set`) reads back with `rowkit gold`.
    #[test]
    fn rowkit_reads_a_gold_md5_tile_cbt_wrote() {
        let Some((emu, instance)) = setup("rowkit_reads_a_gold_md5_tile_cbt_wrote") else {
            return;
        };
        let f = Fixture::load();
        cbt(
            emu,
            &instance,
            &[
                "createtable",
                "gold",
                "families=O:maxversions=1,P:maxversions=1,T:maxversions=1",
            ],
        );
        let gob = format!("O:OPS=hex:{}", s(&f.ops, "gob_hex"));
        let h = format!("O:H={}", s(&f.ops, "md5_hex"));
        let ops_row = f.ops_row();
        let ts = TS.to_string();
        let r = rowkit(
            emu,
            &instance,
            &[
                "admin",
                "set",
                "gold",
                &ops_row,
                &gob,
                &h,
                "--timestamp",
                &ts,
            ],
        );
        check(r);
        let digests = f.digests();
        for (((_, _, subkey), (_, bytes)), column) in
            POINTS.iter().zip(&digests).zip(["000", "010"])
        {
            for kind in ["t", "p"] {
                let row = f.row(kind, subkey);
                let t = cbt_cell(&format!("T:{column}"), bytes, TS);
                let p = cbt_cell("P:B", b",ext=png,", COMMIT_TIME);
                cbt(
                    emu,
                    &instance,
                    &[b"set".to_vec(), b"gold".to_vec(), row.into_bytes(), t, p],
                );
            }
        }
        check_read(emu, &instance, &f, [&digests[0].0, &digests[1].0], true);
    }

    /// The same in the digest-id layout: trace cells `01`/`02`, the digest map and the
    /// counter (8 bytes with NULs: `rowkit admin set`).
    #[test]
    fn rowkit_reads_a_gold_digest_id_tile_cbt_wrote() {
        let Some((emu, instance)) = setup("rowkit_reads_a_gold_digest_id_tile_cbt_wrote") else {
            return;
        };
        let f = Fixture::load();
        cbt(emu, &instance, &["createtable", "gold", "families=T,O,I,D"]);
        let gob = format!("O:OPS=hex:{}", s(&f.ops, "gob_hex"));
        let h = format!("O:H={}", s(&f.ops, "md5_hex"));
        let ts = TS.to_string();
        check(rowkit(
            emu,
            &instance,
            &[
                "admin",
                "set",
                "gold",
                &f.ops_row(),
                &gob,
                &h,
                "--timestamp",
                &ts,
            ],
        ));
        let counter = format!("I:idc=hex:{}", hex::encode(257i64.to_be_bytes()));
        check(rowkit(
            emu,
            &instance,
            &[
                "admin",
                "set",
                "gold",
                ":ts:i:0000000000:",
                &counter,
                "--timestamp",
                &ts,
            ],
        ));
        for (i, ((_, _, subkey), column)) in POINTS.iter().zip(["0", "10"]).enumerate() {
            let id = i as u8 + 1;
            let t = cbt_cell(&format!("T:{column}"), &[id], TS);
            cbt(
                emu,
                &instance,
                &[
                    b"set".to_vec(),
                    b"gold".to_vec(),
                    f.row("t", subkey).into_bytes(),
                    t,
                ],
            );
            let m = f.digest_map(i);
            let d = cbt_cell(
                &format!("D:{}", s(m, "qualifier")),
                id.to_string().as_bytes(),
                TS,
            );
            cbt(
                emu,
                &instance,
                &[
                    b"set".to_vec(),
                    b"gold".to_vec(),
                    s(m, "row").as_bytes().to_vec(),
                    d,
                ],
            );
        }
        let digests = [s(f.digest_map(0), "digest"), s(f.digest_map(1), "digest")];
        check_read(emu, &instance, &f, digests, false);
    }
}

// ---------------------------------------------------------------------------------------------
// s3 / objmeta (`spec/objmeta.md` 5)

mod s3 {
    use super::*;
    use rowkit_bigtable::BigtableStore;
    use rowkit_client::CallOptions;
    use rowkit_client::objmeta::ObjectMetadata;
    use rowkit_client::{SyncDriver, block_on};
    use rowkit_codec::model::Timestamp;
    use rowkit_codec::objmeta::json::Json;
    use rowkit_codec::objmeta::keys::VFormat;
    use rowkit_store::driver::ManualClock;
    use rowkit_testkit::scenarios::objmeta::scenario_state;

    const V0: &str = "98299999999998999999RG001  4242.0";
    const V1: &str = "98299999999997999999RG001  4242.1";
    const V2: &str = "98299999999996999999RG001  4242.2";

    struct Rows {
        v: Value,
    }

    /// A row as `(row key, [(family:qualifier, value)])`.
    type RawRow = (Vec<u8>, Vec<(String, Vec<u8>)>);

    /// The `d`/`f` cells of the vectors as `(column, bytes)`: `f:X_hex` is column `f:X`.
    fn cells(c: &Value) -> Vec<(String, Vec<u8>)> {
        c.as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| match k.strip_suffix("_hex") {
                Some(col) => (col.to_string(), unhex(v.as_str().unwrap())),
                None => (k.clone(), v.as_str().unwrap().as_bytes().to_vec()),
            })
            .collect()
    }

    impl Rows {
        fn load() -> Rows {
            Rows {
                v: vectors("objmeta.json"),
            }
        }

        fn metastore_b(&self) -> &Value {
            self.v["metastore_rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["bucket"] == "b")
                .unwrap()
        }

        fn row_cells(&self, key: &str, value: Value) -> &Value {
            self.v["row_cells"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["arsenal_key"] == key && r["value"] == value)
                .unwrap_or_else(|| panic!("no row_cells entry {key:?} {value}"))
        }

        /// The metastore row of bucket `b` (v1).
        fn metastore(&self) -> RawRow {
            let meta = self.metastore_b();
            (unhex(s(meta, "row_key_hex")), cells(&meta["cells"]))
        }

        /// The version row of `{"key":"k","n":1}`, version 4242.0: the document of its v0 twin
        /// in `row_cells`, at its v1 key from `row_keys`.
        fn first_version(&self) -> RawRow {
            let v0_key = format!("k\u{0}{V0}");
            let first = self.row_cells(&v0_key, json!({"key": "k", "n": 1, "versionId": V0}));
            let key = self.v["row_keys"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["arsenal_key"] == format!("\u{7f}Vk\u{0}{V0}"))
                .unwrap();
            (unhex(s(key, "row_key_hex")), cells(&first["cells"]))
        }

        /// Bucket `b` (v1) after: put k n:1 (4242.0), put k n:2 (4242.1), delete version
        /// 4242.1 (the current one): the master is a placeholder (§8) holding the deleted
        /// document under the new version id 4242.2; the version row of n:1 remains.
        fn after_delete(&self) -> Vec<RawRow> {
            let phd = self.row_cells(
                "\u{7f}Mk",
                json!({"key": "k", "n": 2, "versionId": V2, "isPHD": true, "deleted": false}),
            );
            vec![
                self.metastore(),
                (unhex(s(phd, "row_key_hex")), cells(&phd["cells"])),
                self.first_version(),
            ]
        }

        /// The delete-marker version row of bucket `b` after: put k n:1 (4242.0), put a delete
        /// marker (4242.1).
        fn delete_marker(&self) -> RawRow {
            let dm_key = format!("\u{7f}Vk\u{0}{V1}");
            let dm = self.row_cells(
                &dm_key,
                json!({"key": "k", "n": 0, "isDeleteMarker": true, "versionId": V1}),
            );
            (unhex(s(dm, "row_key_hex")), cells(&dm["cells"]))
        }
    }

    fn j(text: &str) -> Json {
        Json::parse(text).unwrap()
    }

    fn expect(rows: &[RawRow]) -> BTreeSet<Shown> {
        let mut expected = BTreeSet::new();
        for (row, cells) in rows {
            for (column, value) in cells {
                expected.insert(Shown::new(row, column.as_bytes(), 0, value));
            }
        }
        expected
    }

    /// Runs `ops` (`(ms after the vectors' clock, value, version id)` versioned puts, then
    /// deletes of version ids) through rowkit's ObjectMetadata over the emulator, as the
    /// scenario process of the vectors (pid 4242, RG001), in table `table`.
    fn write(
        store: &BigtableStore,
        rows: &Rows,
        table: &str,
        puts: &[(i64, &str, &str)],
        delete: Option<&str>,
    ) {
        let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
        let om = ObjectMetadata::new(
            SyncDriver::new(store, &clock),
            scenario_state(table, VFormat::V1),
        )
        .with_options(CallOptions {
            seed: 1,
            ..CallOptions::default()
        });
        block_on(om.setup()).unwrap();
        // The bucket document exactly as stored in the vectors (member order kept).
        let md = Json::parse(s(&rows.metastore_b()["cells"], "d:value")).unwrap();
        assert_eq!(block_on(om.create_bucket("b", &md)).unwrap(), VFormat::V1);
        let ver = j(r#"{"versioning":true}"#);
        let mut last = 0;
        for (ms, value, id) in puts {
            last = *ms;
            clock.advance_to(Timestamp::from_millis(1_700_000_000_000 + ms));
            let put = block_on(om.put_object("b", "k", &j(value), Some(&ver))).unwrap();
            let put = Json::parse(&put.result.unwrap()).unwrap();
            assert_eq!(put.get("versionId").and_then(Json::as_str), Some(*id));
        }
        if let Some(id) = delete {
            clock.advance_to(Timestamp::from_millis(1_700_000_000_001 + last));
            let by_version = j(&format!(r#"{{"versionId":"{id}"}}"#));
            block_on(om.delete_object("b", "k", Some(&by_version), None)).unwrap();
            assert_eq!(
                om.pending_repairs().len(),
                1,
                "a placeholder master was left"
            );
        }
        if table == "objmeta" {
            let uuid = &rows.v["infostore_get_uuid"][0];
            for call in uuid["calls"].as_array().unwrap() {
                assert_eq!(
                    block_on(om.get_uuid(call["candidate"].as_str())).unwrap(),
                    s(call, "result")
                );
            }
        }
    }

    /// rowkit's ObjectMetadata writes bucket `b`, versions, a delete of the current version
    /// (placeholder master), a delete marker (second table) and `getUUID`; `cbt read` shows
    /// exactly the vectors' row keys and `d`/`f` cells, all at timestamp 0 (§5).
    #[test]
    fn cbt_reads_the_objmeta_rows_rowkit_wrote() {
        let Some((emu, instance)) = setup("cbt_reads_the_objmeta_rows_rowkit_wrote") else {
            return;
        };
        let rows = Rows::load();
        let store = BigtableStore::open(&emu.url(&instance)).unwrap();
        let n1 = r#"{"key":"k","n":1}"#;
        write(
            &store,
            &rows,
            "objmeta",
            &[(1, n1, V0), (2, r#"{"key":"k","n":2}"#, V1)],
            Some(V1),
        );
        let shown = cbt_read(emu, &instance, "objmeta", true);
        let mut expected = expect(&rows.after_delete());
        // The uuid row: the vector gives its key and `d:value`; `f:hash` is SHA-256 of that
        // value (§5), 32 bytes: taken from what is shown after checking its length.
        let uuid = &rows.v["infostore_get_uuid"][0];
        let uuid_row = unhex(s(uuid, "row_key_hex"));
        let final_value = s(uuid, "final_d_value").as_bytes().to_vec();
        expected.insert(Shown::new(&uuid_row, b"d:value", 0, &final_value));
        let hash = shown
            .iter()
            .find(|c| c.row == uuid_row && c.column == b"f:hash")
            .unwrap();
        assert_eq!(hash.value.len(), 32);
        expected.insert(hash.clone());
        assert_cells("objmeta", &shown, &expected);

        // A delete marker over a version (v1: the master row goes, §8).
        let dm = r#"{"key":"k","n":0,"isDeleteMarker":true}"#;
        write(
            &store,
            &rows,
            "objmeta-dm",
            &[(1, n1, V0), (2, dm, V1)],
            None,
        );
        let shown = cbt_read(emu, &instance, "objmeta-dm", true);
        let expected = expect(&[rows.metastore(), rows.first_version(), rows.delete_marker()]);
        assert_cells("objmeta delete marker", &shown, &expected);
    }

    /// The rows after a delete of the current version, created by `cbt createtable` and
    /// written with `rowkit admin set` (every row key holds a NUL, which `cbt set` cannot
    /// pass), read by `rowkit s3`: the placeholder master resolves to the remaining version.
    #[test]
    fn rowkit_reads_objmeta_rows_written_raw() {
        let Some((emu, instance)) = setup("rowkit_reads_objmeta_rows_written_raw") else {
            return;
        };
        let rows = Rows::load();
        cbt(
            emu,
            &instance,
            &[
                "createtable",
                "objmeta",
                "families=d:maxversions=1,f:maxversions=1",
            ],
        );
        for (row, cells) in rows.after_delete() {
            let key = format!("hex:{}", hex::encode(&row));
            let specs: Vec<String> = cells
                .iter()
                .map(|(c, v)| format!("{c}=hex:{}", hex::encode(v)))
                .collect();
            let mut args = vec!["admin", "set", "objmeta", &key];
            args.extend(specs.iter().map(String::as_str));
            args.extend(["--timestamp", "0"]);
            check(rowkit(emu, &instance, &args));
        }
        // The placeholder master resolves to the latest version, n:1 (§8).
        let latest = rowkit_json(emu, &instance, &["s3", "get", "b", "k"]);
        let text = latest.to_string();
        assert!(
            text.contains(V0) && text.contains("\"n\":1") && !text.contains("isPHD"),
            "{latest}"
        );
        let old = rowkit_json(emu, &instance, &["s3", "get", "b", "k", "--version-id", V0]);
        assert_eq!(old["value"], latest["value"]);
        let versions = rowkit_json(emu, &instance, &["s3", "versions", "b"]);
        let listed: Vec<&Value> = versions["Versions"].as_array().unwrap().iter().collect();
        assert_eq!(listed.len(), 1, "{versions}");
        assert_eq!(listed[0]["versionId"], V0, "{versions}");
        let masters = rowkit_json(emu, &instance, &["s3", "list", "b"]);
        let contents = masters["Contents"].as_array().unwrap();
        assert_eq!(contents.len(), 1, "{masters}");
        assert_eq!(contents[0]["key"], "k", "{masters}");
        assert!(contents[0].to_string().contains(V0), "{masters}");
        let buckets = rowkit_json(emu, &instance, &["s3", "bucket", "list"]);
        assert!(buckets.to_string().contains("\"b\""), "{buckets}");
    }
}

// ---------------------------------------------------------------------------------------------
// graph / triples (`spec/triples.md` 3)

mod graph {
    use super::*;

    /// The vector triples of graph `test` (`triples`) and the graph row (`graph_rows`).
    fn fixture() -> (Vec<Value>, Value) {
        let v = vectors("triples.json");
        let triples: Vec<Value> = v["triples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["graph"] == "test")
            .cloned()
            .collect();
        assert!(
            !triples.is_empty(),
            "no triples of graph test in the vectors"
        );
        let graph_row = v["graph_rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["graph"] == "test")
            .unwrap()
            .clone();
        (triples, graph_row)
    }

    /// A cell as `(row, family:qualifier, timestamp µs, value)`.
    type Cell = (String, String, i64, String);

    /// Every cell the spec gives for the fixture: four per triple (row, `family:qualifier`,
    /// timestamp, value = the triple's text) and the graph row.
    fn vector_cells(triples: &[Value], graph_row: &Value) -> Vec<Cell> {
        let mut cells = Vec::new();
        for t in triples {
            let ts = t["timestamp_micros"].as_i64().unwrap();
            for c in t["cells"].as_array().unwrap() {
                let (row, column) = (s(c, "row"), s(c, "column"));
                cells.push((row.into(), column.into(), ts, s(t, "text").into()));
            }
        }
        let ts = graph_row["timestamp_micros"].as_i64().unwrap();
        let (row, column) = (s(graph_row, "row"), s(graph_row, "column"));
        cells.push((row.into(), column.into(), ts, s(graph_row, "value").into()));
        cells
    }

    fn expected_cells(triples: &[Value], graph_row: &Value) -> BTreeSet<Shown> {
        vector_cells(triples, graph_row)
            .iter()
            .map(|(row, column, ts, value)| {
                Shown::new(row.as_bytes(), column.as_bytes(), *ts, value.as_bytes())
            })
            .collect()
    }

    /// `rowkit graph create test` + `graph add test` (the vector triples on stdin): `cbt read`
    /// shows the driver's exact row keys, families, qualifiers, timestamps and values.
    #[test]
    fn cbt_reads_the_triples_rowkit_wrote() {
        let Some((emu, instance)) = setup("cbt_reads_the_triples_rowkit_wrote") else {
            return;
        };
        let (triples, graph_row) = fixture();
        rowkit_json(emu, &instance, &["graph", "setup"]);
        rowkit_json(emu, &instance, &["graph", "create", "test"]);
        let input: String = triples
            .iter()
            .map(|t| format!("{}\n", s(t, "input")))
            .collect();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .args([
                "--store",
                &emu.url(&instance),
                "--json",
                "graph",
                "add",
                "test",
            ])
            .env_remove("ROWKIT_STORE")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let added: Value =
            serde_json::from_slice(&check(child.wait_with_output().unwrap())).unwrap();
        assert_eq!(added["added"], triples.len());
        let shown = cbt_read(emu, &instance, "badwolf", false);
        assert_cells("triples", &shown, &expected_cells(&triples, &graph_row));
    }

    /// A table created and filled only with `cbt createtable` / `cbt set` in the driver's
    /// layout: `rowkit graph list` and `graph query` find every triple, through every index.
    #[test]
    fn rowkit_queries_triples_cbt_wrote() {
        let Some((emu, instance)) = setup("rowkit_queries_triples_cbt_wrote") else {
            return;
        };
        let (triples, graph_row) = fixture();
        cbt(
            emu,
            &instance,
            &[
                "createtable",
                "badwolf",
                "families=graph,immutable_triple,temporal_triple",
            ],
        );
        for (row, column, ts, value) in vector_cells(&triples, &graph_row) {
            let set = cbt_cell(&column, value.as_bytes(), ts);
            cbt(
                emu,
                &instance,
                &[b"set".to_vec(), b"badwolf".to_vec(), row.into_bytes(), set],
            );
        }
        assert_eq!(
            rowkit_json(emu, &instance, &["graph", "list"]),
            json!(["test"])
        );
        let found = rowkit_json(emu, &instance, &["graph", "query", "test", "triples"]);
        let got: BTreeSet<&str> = found
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["triple"].as_str().unwrap())
            .collect();
        let want: BTreeSet<&str> = triples.iter().map(|t| s(t, "text")).collect();
        assert_eq!(got, want);
        // Through the other indexes: each triple's subject, predicate and object lookups.
        let first = triples[0]["text"].as_str().unwrap();
        let parts: Vec<&str> = first.split('\t').collect();
        let objects = rowkit_json(
            emu,
            &instance,
            &["graph", "query", "test", "objects", parts[0], parts[1]],
        );
        assert!(
            objects
                .to_string()
                .contains(&format!("\"{}\"", parts[2].replace('"', "\\\""))),
            "{objects}"
        );
        let by_object = rowkit_json(
            emu,
            &instance,
            &["graph", "query", "test", "triples-for-object", parts[2]],
        );
        assert!(
            by_object
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["triple"] == first),
            "{by_object}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// mt (`spec/mounttable.md` 5); rowkit -> cbt is `cbt_reads_the_mounttable_layout` in
// rowkit-bigtable `tests/schemas.rs`.

mod mt {
    use super::*;

    /// btmtd's layout written with `cbt set` only (the `foreign_layout` scenario's rows: the
    /// root `050c5d30/` and `88e481b8/foo` with a leaf server mounted for an hour):
    /// `rowkit mt resolve` and `mt glob` answer from it.
    #[test]
    fn rowkit_resolves_a_mounttable_cbt_wrote() {
        let Some((emu, instance)) = setup("rowkit_resolves_a_mounttable_cbt_wrote") else {
            return;
        };
        cbt(
            emu,
            &instance,
            &[
                "createtable",
                "mounttable",
                "families=m:maxversions=1,s:maxversions=1,c:maxversions=1",
            ],
        );
        cbt(
            emu,
            &instance,
            &[
                "createtable",
                "mounttable-counters",
                "families=m:maxversions=1",
            ],
        );
        let ms = 1_700_000_000_000_000i64;
        let now = SystemClock.now().truncate_to_millis().0;
        let deadline = now + 3_600_000_000;
        let set = |row: &str, cells: &[(&str, &[u8], i64)]| {
            let mut args = vec![
                b"set".to_vec(),
                b"mounttable".to_vec(),
                row.as_bytes().to_vec(),
            ];
            args.extend(cells.iter().map(|(c, v, ts)| cbt_cell(c, v, *ts)));
            cbt(emu, &instance, &args);
        };
        set(
            "050c5d30/",
            &[
                ("m:i", b"ROOTNODE", ms),
                ("m:c", b"self:?:ServerUser", ms),
                ("m:p", br#"{"Admin":{"In":["..."],"NotIn":null}}"#, ms),
                ("m:v", b"0000abcd", ms),
                ("c:0000abccfoo", &[1], ms),
            ],
        );
        set(
            "88e481b8/foo",
            &[
                ("m:i", b"0000abcc", ms),
                ("m:c", b"someone", ms),
                ("m:p", br#"{"Read":{"In":["..."],"NotIn":null}}"#, ms),
                ("m:v", b"12345678", ms),
                ("s:/1.2.3.4:5", br#"{"leaf":true}"#, deadline),
            ],
        );
        let r = rowkit_json(
            emu,
            &instance,
            &["--as", "alice", "mt", "resolve", "foo/bar"],
        );
        assert_eq!(r["name"], "bar", "{r}");
        assert_eq!(r["servers"][0]["server"], "/1.2.3.4:5", "{r}");
        assert_eq!(r["servers"][0]["deadline_us"], deadline, "{r}");
        assert_eq!(
            (r["mt"].clone(), r["leaf"].clone()),
            (json!(false), json!(true)),
            "{r}"
        );
        let g = rowkit_json(emu, &instance, &["--as", "alice", "mt", "glob", "*"]);
        let names: Vec<&str> = g
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["foo"], "{g}");
        let g = rowkit_json(emu, &instance, &["--as", "alice", "mt", "glob", "..."]);
        assert_eq!(g.as_array().unwrap().len(), 2, "{g}");
    }
}

crate::every_test_on_rowkit_grpc!();
