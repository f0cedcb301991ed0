//! The `rowkit` binary on `--store bigtable://…` against the real Bigtable emulator (started by
//! `rowkit_testkit::emulator`), and interop with Google's own `cbt` both ways.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

use rowkit_testkit::emulator::{CBT_BIN, Emulator};

fn rowkit(store: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ROWKIT_STORE")
        .env_remove("BIGTABLE_EMULATOR_HOST")
        .output()
        .unwrap()
}

fn ok(o: Output) -> Vec<u8> {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

fn cbt_installed() -> bool {
    let installed = std::path::Path::new(CBT_BIN).is_file();
    if !installed {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "cbt is not installed at {CBT_BIN} (Debian package google-cloud-cli-cbt)"
        );
        eprintln!("\n!!!!! SKIPPED cbt interop: {CBT_BIN} is not installed\n");
    }
    installed
}

/// rowkit writes; `cbt read` shows exactly those bytes (keys raw, values Go-quoted).
#[test]
fn cbt_reads_what_rowkit_wrote() {
    let Some(emu) = Emulator::shared_or_skip("cbt_reads_what_rowkit_wrote") else {
        return;
    };
    if !cbt_installed() {
        return;
    }
    let instance = emu.fresh_target().instance;
    let store = emu.url(&instance);
    ok(rowkit(
        &store,
        &["admin", "create-table", "t", "--family", "cf:maxversions=2"],
    ));
    ok(rowkit(
        &store,
        &[
            "admin",
            "set",
            "t",
            "k\\xfe1",
            "cf:q=\\x00\\xffa\"",
            "--timestamp",
            "5000",
        ],
    ));
    ok(rowkit(
        &store,
        &[
            "admin",
            "set",
            "t",
            "k2",
            "cf:col=plain",
            "--timestamp",
            "7000",
        ],
    ));
    let out = ok(emu.cbt(&instance, &["read", "t"]).unwrap());
    let text = out.clone();
    // The row key is printed raw: the 0xfe byte itself.
    assert!(
        text.windows(3).any(|w| w == b"k\xfe1"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    let shown = String::from_utf8_lossy(&out);
    assert!(shown.contains("cf:q "), "{shown}");
    assert!(shown.contains(r#""\x00\xffa\"""#), "{shown}");
    assert!(shown.contains("1970/01/01-00:00:00.005000"), "{shown}");
    assert!(
        shown.contains("cf:col") && shown.contains("\"plain\""),
        "{shown}"
    );
    // Families and GC policy as cbt sees them.
    let ls = String::from_utf8_lossy(&ok(emu.cbt(&instance, &["ls", "t"]).unwrap())).to_string();
    assert!(ls.contains("cf") && ls.contains("versions() > 2"), "{ls}");
}

/// `cbt` writes; `rowkit admin dump` (and list-tables) read it through the adapter, via the
/// URL and via `BIGTABLE_EMULATOR_HOST`.
#[test]
fn rowkit_dumps_what_cbt_wrote() {
    let Some(emu) = Emulator::shared_or_skip("rowkit_dumps_what_cbt_wrote") else {
        return;
    };
    if !cbt_installed() {
        return;
    }
    let instance = emu.fresh_target().instance;
    ok(emu
        .cbt(&instance, &["createtable", "u", "families=cf,cg"])
        .unwrap());
    ok(emu
        .cbt(
            &instance,
            &["set", "u", "r1", "cf:a=v1@1000", "cg:b=two words@2000"],
        )
        .unwrap());
    ok(emu
        .cbt(&instance, &["set", "u", "r2", "cf:a=v2@3000"])
        .unwrap());
    let store = emu.url(&instance);
    let dump = String::from_utf8(ok(rowkit(&store, &["admin", "dump", "u"]))).unwrap();
    // Family order within a row is unspecified (the emulator's varies), so compare as a set
    // of lines; rows themselves come in key order.
    let mut lines: Vec<&str> = dump.lines().collect();
    assert_eq!(
        lines.last(),
        Some(&"r2\tcf:a\t@1970-01-01T00:00:00.003Z\tv2")
    );
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "r1\tcf:a\t@1970-01-01T00:00:00.001Z\tv1",
            "r1\tcg:b\t@1970-01-01T00:00:00.002Z\ttwo words",
            "r2\tcf:a\t@1970-01-01T00:00:00.003Z\tv2"
        ]
    );
    let json: serde_json::Value = serde_json::from_slice(&ok(rowkit(
        &store,
        &["--json", "admin", "dump", "u", "--prefix", "r2"],
    )))
    .unwrap();
    assert_eq!(json["rows"], 1);
    assert_eq!(json["cells"][0]["value"], "v2");

    // The emulator from the environment, as Google's clients take it.
    let out = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .args([
            "--store",
            &format!("bigtable://rowkit/{instance}"),
            "admin",
            "list-tables",
        ])
        .env_remove("ROWKIT_STORE")
        .env("BIGTABLE_EMULATOR_HOST", emu.host())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(ok(out)).unwrap(), "u\n");
}

/// Every admin command and the error paths on a Bigtable store.
#[test]
fn admin_commands_on_bigtable() {
    let Some(emu) = Emulator::shared_or_skip("admin_commands_on_bigtable") else {
        return;
    };
    let instance = emu.fresh_target().instance;
    let store = emu.url(&instance);
    ok(rowkit(
        &store,
        &[
            "admin",
            "create-table",
            "a",
            "--family",
            "cf:maxage=1d,maxversions=3",
        ],
    ));
    let listed: serde_json::Value =
        serde_json::from_slice(&ok(rowkit(&store, &["--json", "admin", "list-tables"]))).unwrap();
    assert_eq!(listed["tables"][0]["table"], "a");
    assert_eq!(
        listed["tables"][0]["families"][0]["gc_rule"],
        serde_json::json!({"union": [{"max_age_us": 86_400_000_000_i64}, {"max_num_versions": 3}]})
    );
    // Server time when no timestamp is given.
    ok(rowkit(&store, &["admin", "set", "a", "r", "cf:q=v"]));
    let dump = String::from_utf8(ok(rowkit(&store, &["admin", "dump", "a"]))).unwrap();
    assert!(
        dump.starts_with("r\tcf:q\t@") && dump.ends_with("\tv\n"),
        "{dump}"
    );
    let dup = rowkit(&store, &["admin", "create-table", "a", "--family", "cf"]);
    assert_eq!(dup.status.code(), Some(1));
    let missing = rowkit(&store, &["--json", "admin", "dump", "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stdout).contains("not_found"));
    ok(rowkit(&store, &["admin", "delete-table", "a"]));
    assert_eq!(ok(rowkit(&store, &["admin", "list-tables"])), b"");
    // A malformed location is a usage error.
    assert_eq!(
        rowkit("bigtable://only-project", &["admin", "list-tables"])
            .status
            .code(),
        Some(2)
    );
}

/// A service-account key file with `--store bigtable://p/i`: Cloud Bigtable itself, with
/// Application Default Credentials made by the binary (in CI: no network). The command ends
/// within the connect timeout with one line and exit 1, never a panic (101).
fn with_a_key_file(args: &[&str]) -> std::process::Child {
    let dir = std::env::temp_dir().join(format!(
        "rowkit-cli-prod-{}-{}",
        args[0],
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let key = serde_json::json!({
        "type": "service_account",
        "project_id": "p",
        "private_key_id": "k",
        "private_key": include_str!("../../bigtable/testdata/throwaway-test-rsa-key.pem"),
        "client_email": "rowkit@p.iam.gserviceaccount.com",
        "token_uri": "https://oauth2.googleapis.com/token",
    });
    let file = dir.join("key.json");
    std::fs::write(&file, key.to_string()).unwrap();
    Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .args(["--store", "bigtable://p/i"])
        .args(args)
        .env("GOOGLE_APPLICATION_CREDENTIALS", &file)
        .env("HOME", &dir)
        .env_remove("ROWKIT_STORE")
        .env_remove("BIGTABLE_EMULATOR_HOST")
        .env_remove("ROWKIT_BIGTABLE_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` up to `limit`; `None` if it still runs (then it is killed).
fn wait_at_most(mut child: std::process::Child, limit: std::time::Duration) -> Option<Output> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    eprintln!(
        "still running after {limit:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    None
}

/// One line on stderr, exit 1.
fn assert_fails_with_one_line(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("rowkit: "), "{stderr}");
}

/// Connecting (20 s at most) plus the resolver's own timeouts, with room to spare.
const PROD_LIMIT: std::time::Duration = std::time::Duration::from_secs(90);

#[test]
fn a_key_file_on_cloud_bigtable_fails_cleanly_offline() {
    let out = wait_at_most(with_a_key_file(&["admin", "list-tables"]), PROD_LIMIT)
        .expect("the command ends");
    // Offline: UNAVAILABLE (the endpoint cannot be reached); online: Google refuses the key.
    assert_fails_with_one_line(&out);
}

/// `serve` opens its store before it listens: unreachable Cloud Bigtable is its one error.
#[test]
fn serve_on_cloud_bigtable_fails_cleanly_offline() {
    let child = with_a_key_file(&["serve", "--listen", "127.0.0.1:0"]);
    match wait_at_most(child, PROD_LIMIT) {
        Some(out) => {
            assert_fails_with_one_line(&out);
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("UNAVAILABLE"),
                "{out:?}"
            );
        }
        // Only with a network that reaches Google: connected, so it serves (calls then fail
        // one by one as Google refuses the key). CI has no such network.
        None => assert_ne!(std::env::var("CI").as_deref(), Ok("true")),
    }
}

/// A Bigtable store has no file to back up to: `admin backup` says to use Cloud Bigtable's own
/// backups, and writes nothing.
#[test]
fn backup_of_a_bigtable_store_names_the_clouds_own_backups() {
    let Some(emu) =
        Emulator::shared_or_skip("backup_of_a_bigtable_store_names_the_clouds_own_backups")
    else {
        return;
    };
    let instance = emu.fresh_target().instance;
    let file = std::env::temp_dir().join(format!("rowkit-bt-backup-{}.redb", std::process::id()));
    let o = rowkit(
        &emu.url(&instance),
        &["admin", "backup", file.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("UNIMPLEMENTED"), "{stderr}");
    assert!(
        stderr.contains("gcloud bigtable backups create"),
        "{stderr}"
    );
    assert!(!file.exists());
}
