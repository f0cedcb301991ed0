//! Input the CLI refuses before writing (issue 31): creating a bucket that exists, names and
//! values the shared validator (`rowkit_codec::validate`) refuses, object calls on a missing
//! bucket, triples for a missing graph. Each must exit non-zero with one line on stderr and
//! leave every table as it was (read back with `admin dump`).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

struct Store(PathBuf);

impl Store {
    /// A fresh store with every schema's tables.
    fn new(name: &str) -> Store {
        let dir =
            std::env::temp_dir().join(format!("rowkit-cli-refused-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let s = Store(dir);
        for schema in ["s3", "gold", "graph", "mt"] {
            s.ok(&[schema, "setup"]);
        }
        s
    }

    fn rowkit(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .arg("--store")
            .arg(format!("embedded:{}", self.0.join("t.redb").display()))
            .args(args)
            .env_remove("ROWKIT_STORE")
            .env_remove("DEFAULT_BUCKET_KEY_FORMAT")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.rowkit(args);
        assert!(o.status.success(), "{args:?}: {o:?}");
        String::from_utf8(o.stdout).unwrap()
    }

    /// Every table's rows, as `admin dump` prints them.
    fn dump(&self) -> String {
        ["objmeta", "gold", "badwolf", "mounttable"]
            .iter()
            .map(|t| self.ok(&["admin", "dump", t]))
            .collect()
    }

    /// Runs `args`, which must fail with `exit` and one stderr line containing `says`, and
    /// change nothing in the store.
    fn refused(&self, args: &[&str], exit: i32, says: &str) {
        let before = self.dump();
        let o = self.rowkit(args);
        let stderr = String::from_utf8(o.stderr).unwrap();
        assert_eq!(o.status.code(), Some(exit), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(self.dump(), before, "{args:?} changed the store");
    }

    fn teardown(self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn create_of_an_existing_bucket_changes_nothing() {
    let s = Store::new("create");
    s.ok(&["s3", "bucket", "create", "photos", "--vformat", "v0"]);
    for k in ["a.jpg", "b/c.jpg"] {
        s.ok(&[
            "s3",
            "put",
            "photos",
            k,
            "--value",
            r#"{"content-length":4}"#,
        ]);
    }
    let listing = s.ok(&["--json", "s3", "list", "photos"]);
    s.refused(
        &["s3", "bucket", "create", "photos"],
        1,
        "bucket photos already exists (key format v0); create does not change a bucket's format",
    );
    // The same with an explicit format: still refused, still v0.
    s.refused(
        &["s3", "bucket", "create", "photos", "--vformat", "v1"],
        1,
        "already exists (key format v0)",
    );
    let o = s.rowkit(&["--json", "s3", "bucket", "create", "photos"]);
    let e: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(e["error"]["id"], "BucketAlreadyExists");
    assert_eq!(s.ok(&["--json", "s3", "list", "photos"]), listing);
    let buckets: Value = serde_json::from_str(&s.ok(&["--json", "s3", "bucket", "list"])).unwrap();
    assert_eq!(buckets["buckets"][0]["vformat"], "v0");
    let check: Value = serde_json::from_str(&s.ok(&["--json", "s3", "check"])).unwrap();
    assert_eq!(check["findings"], Value::Array(vec![]), "{check}");
    s.teardown();
}

#[test]
fn bad_input_is_refused_before_any_write() {
    let s = Store::new("inputs");
    s.ok(&["s3", "bucket", "create", "photos"]);
    s.ok(&["graph", "create", "family"]);
    // Buckets and objects.
    s.refused(
        &["s3", "bucket", "create", "Bad_Name!!"],
        2,
        r#"bucket name "Bad_Name!!": 'B' is not allowed: only lowercase letters, digits, '.' and '-'"#,
    );
    s.refused(&["s3", "bucket", "create", "a..b"], 2, "both sides");
    s.refused(
        &["s3", "bucket", "create", "10.0.0.1"],
        2,
        "not an IP address",
    );
    s.refused(
        &["s3", "put", "nosuch", "k", "--value", "{}"],
        1,
        "NoSuchBucket",
    );
    s.refused(&["s3", "delete", "nosuch", "k"], 1, "NoSuchBucket");
    s.refused(&["s3", "get", "nosuch", "k"], 1, "NoSuchBucket");
    s.refused(&["s3", "list", "nosuch"], 1, "NoSuchBucket");
    s.refused(
        &["s3", "put", "photos", "", "--value", "{}"],
        2,
        "an object key is required",
    );
    // Gold.
    let put = |digest: &'static str| -> Vec<&'static str> {
        vec![
            "gold", "put", "--commit", "1", "--params", "os=linux", "--digest", digest,
        ]
    };
    s.refused(
        &put("xyz"),
        2,
        r#"digest "xyz": a digest is 32 hexadecimal characters"#,
    );
    s.refused(&put("9e1d402515193304cafbdf02b8fd751"), 2, "32 hexadecimal");
    s.refused(
        &[
            "gold", "put", "--commit", "1", "--params", "os", "--digest", "",
        ],
        2,
        r#""os" is not key=value"#,
    );
    // Graphs.
    s.refused(
        &["graph", "add", "nosuch", r#"/u<a> "p"@[] /u<b>"#],
        1,
        r#"graph "nosuch" does not exist"#,
    );
    s.refused(
        &["graph", "add", "family", "not a triple"],
        2,
        r#""not a triple""#,
    );
    // Mount table.
    s.refused(&["mt", "mount", "a", "x"], 2, r#"malformed address "x""#);
    // What the validator lets through is written.
    s.ok(&put("9E1D402515193304CAFBDF02B8FD751B"));
    s.ok(&["s3", "bucket", "create", "b"]);
    s.teardown();
}
