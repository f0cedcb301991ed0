//! One rule for a store that cannot be used, and options checked against their ranges, end to
//! end through the `rowkit` binary: a store file another process holds (a real `rowkit serve`)
//! fails every command at once with the lock message naming the holder (exit 1; a check's
//! "could not run" is 2, its 1 being "findings left"); `--deadline` bounds every command, the
//! triple store's operations as every other schema's, and against a server that never
//! answers; `--now` and tokens out of range are usage errors (exit 2) that touch no file.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// What redb says when another process holds the file: the message every command must give.
const LOCKED: &str = "Database already open. Cannot acquire lock.";

/// A scratch directory with one store file in it, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("rowkit-store-errors-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self) -> PathBuf {
        self.0.join("t.redb")
    }

    fn store(&self) -> String {
        format!("embedded:{}", self.file().display())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `rowkit --store STORE ARGS…` with no stdin, and how long it took.
fn rowkit(store: &str, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ROWKIT_STORE")
        .env_remove("ROWKIT_GATEWAY_TOKEN")
        .env_remove("ROWKIT_BIGTABLE_TOKEN")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (output, started.elapsed())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn error_document(o: &Output) -> Value {
    let doc: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    doc["error"].clone()
}

/// Every command family on a store a running server holds: the lock message at once, whatever
/// `--deadline` allows, exit 1 — and 2 for the checks, whose 1 means findings left. Before this,
/// `s3` waited for its deadline and said only "Aborted", `graph` and `mt` took a minute, and
/// `check` exited 1.
#[test]
fn a_store_another_process_holds_fails_every_command_at_once() {
    let s = Scratch::new("locked");
    for args in [
        &["s3", "setup"][..],
        &["s3", "bucket", "create", "b"],
        &["gold", "setup"],
        &["graph", "setup"],
        &["graph", "create", "g"],
        &["mt", "setup"],
    ] {
        let (o, _) = rowkit(&s.store(), args);
        assert!(o.status.success(), "{args:?}: {o:?}");
    }
    let (server, _, _) = support::serve_grpc(&s.store(), &[]);
    // The message names the holder (from /proc/locks, on Linux).
    let holder = format!("Held by process {}: ", server.0.id());
    // A valid digest: a bad one is refused before the store is opened.
    const DIGEST: &str = "9e1d402515193304cafbdf02b8fd751b";
    let cases: &[(&[&str], u8)] = &[
        (&["admin", "list-tables"], 1),
        (&["admin", "create-table", "x", "--family", "f"], 1),
        (&["gold", "newest"], 1),
        (
            &[
                "gold", "put", "--commit", "1", "--params", "a=b", "--digest", DIGEST,
            ],
            1,
        ),
        (&["s3", "list", "b"], 1),
        (&["s3", "put", "b", "k", "--value", "{}"], 1),
        (&["graph", "list"], 1),
        (&["graph", "create", "g2"], 1),
        (&["graph", "query", "g", "triples"], 1),
        (&["mt", "resolve", "a"], 1),
        (&["mt", "mount", "a", "/h:1"], 1),
        (&["check"], 2),
        (&["graph", "check"], 2),
        (&["gold", "check"], 2),
        (&["s3", "check"], 2),
        (&["mt", "fsck"], 2),
    ];
    for (args, exit) in cases {
        let line = [&["--deadline", "30"][..], args].concat();
        let (o, took) = rowkit(&s.store(), &line);
        assert_eq!(o.status.code(), Some(i32::from(*exit)), "{args:?}: {o:?}");
        let message = stderr(&o);
        assert!(
            message.starts_with("rowkit: UNAVAILABLE: ") && message.contains(LOCKED),
            "{args:?}: {message}"
        );
        if cfg!(target_os = "linux") {
            assert!(message.contains(&holder), "{args:?}: {message}");
        }
        assert_eq!(message.lines().count(), 1, "{args:?}: {message}");
        assert!(took < Duration::from_secs(3), "{args:?} took {took:?}");
        // The same error under --json, with the status as its id.
        let (o, _) = rowkit(&s.store(), &[&["--json"][..], &line].concat());
        assert_eq!(o.status.code(), Some(i32::from(*exit)), "{args:?}: {o:?}");
        let error = error_document(&o);
        assert_eq!(error["id"], "unavailable", "{args:?}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains(LOCKED),
            "{error}"
        );
    }
}

/// `graph --deadline 0` ends every operation `aborted` before it writes, as the other
/// schemas' do (it used to create the graph, on the triple store's own 60 s); without
/// `--deadline` the operation runs.
#[test]
fn graph_operations_end_at_the_deadline() {
    let s = Scratch::new("graph-deadline");
    let (o, _) = rowkit(&s.store(), &["graph", "setup"]);
    assert!(o.status.success(), "{o:?}");
    for args in [
        &["graph", "create", "g1"][..],
        &["graph", "list"],
        &["graph", "drop", "g1"],
    ] {
        let (o, _) = rowkit(
            &s.store(),
            &[&["--json", "--deadline", "0"][..], args].concat(),
        );
        assert_eq!(o.status.code(), Some(1), "{args:?}: {o:?}");
        assert_eq!(error_document(&o)["id"], "aborted", "{args:?}");
    }
    let (o, _) = rowkit(&s.store(), &["graph", "list"]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "",
        "no graph was created"
    );
    let (o, _) = rowkit(&s.store(), &["graph", "create", "g1"]);
    assert!(o.status.success(), "{o:?}");
    // A check keeps its own (longer) time: --deadline 0 does not stop it.
    let (o, _) = rowkit(&s.store(), &["--deadline", "0", "graph", "check"]);
    assert!(o.status.success(), "{o:?}");
}

/// `--deadline 0` ends a graph, an `mt` and a `gold` command with the very error an `s3`
/// command ends with (id, message and exit code, as JSON and as the stderr line): every schema
/// takes the deadline the same way, and the aborted error is spelled once (the mount table's
/// used to be Vanadium's `v.io/v23/verror.Aborted`, the trace store's a bare "aborted").
#[test]
fn every_schema_aborts_with_the_same_error() {
    let s = Scratch::new("same-aborted");
    for args in [
        &["graph", "setup"][..],
        &["s3", "setup"],
        &["mt", "setup"],
        &["gold", "setup"],
    ] {
        let (o, _) = rowkit(&s.store(), args);
        assert!(o.status.success(), "{args:?}: {o:?}");
    }
    let aborted = |args: &[&str]| {
        let (o, _) = rowkit(
            &s.store(),
            &[&["--json", "--deadline", "0"][..], args].concat(),
        );
        assert_eq!(o.status.code(), Some(1), "{args:?}: {o:?}");
        error_document(&o)
    };
    let graph = aborted(&["graph", "create", "g1"]);
    let s3 = aborted(&["s3", "bucket", "create", "b"]);
    let gold_put = [
        "gold",
        "put",
        "--commit",
        "1",
        "--params",
        "name=a",
        "--digest",
        "000075b9c0f1b6a831c399e269772661",
    ];
    let gold = aborted(&gold_put);
    let mt = aborted(&["mt", "mount", "a", "/h:1"]);
    assert_eq!(graph, s3);
    assert_eq!(gold, s3, "gold put");
    assert_eq!(mt, s3, "mt mount");
    assert_eq!(graph["id"], "aborted");
    assert_eq!(
        graph["message"], "aborted (deadline exceeded or cancelled)",
        "a message that says why"
    );
    // The same line on stderr without --json.
    let line = |args: &[&str]| {
        let (o, _) = rowkit(&s.store(), &[&["--deadline", "0"][..], args].concat());
        assert_eq!(o.status.code(), Some(1), "{args:?}: {o:?}");
        stderr(&o)
    };
    let s3_line = line(&["s3", "bucket", "create", "b"]);
    assert!(
        s3_line.contains("aborted (deadline exceeded or cancelled)"),
        "{s3_line}"
    );
    assert_eq!(line(&["mt", "mount", "a", "/h:1"]), s3_line);
    assert_eq!(line(&["graph", "create", "g1"]), s3_line);
    assert_eq!(line(&gold_put), s3_line);
}

/// Against a port nothing listens on, `graph` fails at once with the connection's error
/// (exit 1), as `admin` and `gold` do, instead of retrying for a minute whatever `--deadline`
/// said.
#[test]
fn graph_against_a_dead_port_fails_within_the_deadline() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let store = format!("bigtable://p/i?emulator=127.0.0.1:{port}");
    for args in [
        &["graph", "list"][..],
        &["graph", "create", "g"],
        &["mt", "resolve", "a"],
    ] {
        let (o, took) = rowkit(&store, &[&["--deadline", "2"][..], args].concat());
        assert_eq!(o.status.code(), Some(1), "{args:?}: {o:?}");
        assert!(
            stderr(&o).starts_with("rowkit: UNAVAILABLE: "),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(took < Duration::from_secs(3), "{args:?} took {took:?}");
    }
}

/// Against a server that accepts connections and never answers, every command ends at its
/// `--deadline` (it used to wait for ever: the sync driver blocks on a call it cannot
/// abandon, so the Bigtable store now bounds each call by the deadline). The mount table is
/// left out: its requests get at least 60 s by design, as btmtd's (`spec/mounttable.md` 17).
#[test]
fn every_command_ends_at_its_deadline_against_a_silent_server() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Holds every connection open, reading nothing and sending nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in listener.incoming() {
            held.push(connection);
        }
    });
    let store = format!("bigtable://p/i?emulator=127.0.0.1:{port}");
    let cases: &[(&[&str], u8)] = &[
        (&["graph", "list"], 1),
        (&["graph", "create", "g"], 1),
        (&["s3", "list", "b"], 1),
        (&["gold", "newest"], 1),
        (&["admin", "list-tables"], 1),
        (&["check"], 2),
    ];
    for (args, exit) in cases {
        let (o, took) = rowkit(&store, &[&["--deadline", "2"][..], args].concat());
        assert_eq!(o.status.code(), Some(i32::from(*exit)), "{args:?}: {o:?}");
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(6),
            "{args:?} took {took:?}"
        );
    }
}

/// `--now` is a time the stores can stamp: from the epoch to the end of year 9999. Anything
/// else is a usage error (exit 2) before the store is opened (no file is created); it used to
/// wrap (i64::MIN) or be clamped to 0 silently.
#[test]
fn now_out_of_range_is_a_usage_error() {
    let s = Scratch::new("now");
    for now in [
        "-9223372036854775808",
        "-1",
        "-5000",
        "253402300800000000",
        "9223372036854775807",
    ] {
        let (o, _) = rowkit(
            &s.store(),
            &[
                &format!("--now={now}"),
                "admin",
                "create-table",
                "t",
                "--family",
                "cf",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{now}: {o:?}");
        assert!(stderr(&o).contains("out of range"), "{now}: {}", stderr(&o));
        assert!(!s.file().exists(), "{now}: the store was created");
    }
    let (o, _) = rowkit(
        &s.store(),
        &[
            "--now",
            "9999-12-31T23:59:59.999999Z",
            "admin",
            "create-table",
            "t",
            "--family",
            "cf",
        ],
    );
    assert!(o.status.success(), "{o:?}");
    let (o, _) = rowkit(&s.store(), &["--now=0", "admin", "set", "t", "r", "cf:q=v"]);
    assert!(o.status.success(), "{o:?}");
    let (o, _) = rowkit(&s.store(), &["admin", "dump", "t"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "r\tcf:q\t@1970-01-01T00:00:00Z\tv\n"
    );
}

/// A token is visible ASCII: a server refuses one it could never match (exit 2), from
/// `--token` or the environment; the Bigtable client refuses to send one, before connecting.
#[test]
fn tokens_are_visible_ascii() {
    for token in ["tök", "a b", "tab\there"] {
        let (o, _) = rowkit(
            "memory:",
            &["serve", "--listen", "127.0.0.1:0", "--token", token],
        );
        assert_eq!(o.status.code(), Some(2), "{token:?}: {o:?}");
        assert!(stderr(&o).contains("visible ASCII"), "{}", stderr(&o));
        let o = Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .args(["--store", "memory:", "serve", "--listen", "127.0.0.1:0"])
            .args(["--grpc", "127.0.0.1:0"])
            .env("ROWKIT_GATEWAY_TOKEN", token)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{token:?}: {o:?}");
        assert!(stderr(&o).contains("visible ASCII"), "{}", stderr(&o));
        // Nothing listens on port 1: the token is refused before any connection is tried.
        let o = Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .args(["--store", "bigtable://p/i?endpoint=https://127.0.0.1:1"])
            .args(["admin", "list-tables"])
            .env("ROWKIT_BIGTABLE_TOKEN", token)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{token:?}: {o:?}");
        let message = stderr(&o);
        assert!(
            message.contains("INVALID_ARGUMENT") && message.contains("visible ASCII"),
            "{message}"
        );
    }
}

/// A range of repo indices too long to subtract in i64 is refused as too many commits, not a
/// panic (exit 101 in a debug build).
#[test]
fn gold_traces_with_a_huge_range_is_a_usage_error() {
    let s = Scratch::new("gold-range");
    let (o, _) = rowkit(&s.store(), &["gold", "setup"]);
    assert!(o.status.success(), "{o:?}");
    for (from, to) in [("0", "9223372036854775807"), ("-9223372036854775808", "1")] {
        let (o, _) = rowkit(&s.store(), &["gold", "traces", "--from", from, "--to", to]);
        assert_eq!(o.status.code(), Some(2), "{from}..{to}: {o:?}");
    }
}
