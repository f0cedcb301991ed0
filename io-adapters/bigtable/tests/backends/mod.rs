//! The servers the emulator suites also run on: rowkit's own gRPC server (`rowkit-grpc`) over
//! a memory store and over a redb file, each behind the [`Emulator`] fixture (a fresh server
//! over a fresh store per instance).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use rowkit_store::{MemoryStore, RedbStore, Store};
use rowkit_testkit::emulator::Emulator;

fn fixture(
    cell: &'static OnceLock<Emulator>,
    name: &str,
    store: fn() -> Result<Arc<dyn Store>, String>,
) -> &'static Emulator {
    cell.get_or_init(|| {
        let start = Box::new(move || {
            let addr = rowkit_grpc::background::serve(store()?).map_err(|e| e.to_string())?;
            Ok(addr.to_string())
        });
        Emulator::rowkit(name, start).unwrap_or_else(|e| panic!("starting {name}: {e}"))
    })
}

/// `rowkit-grpc` over `memory:`.
pub fn rowkit_memory() -> &'static Emulator {
    static CELL: OnceLock<Emulator> = OnceLock::new();
    fixture(&CELL, "rowkit-grpc over memory:", || {
        Ok(Arc::new(MemoryStore::new()))
    })
}

/// `rowkit-grpc` over `embedded:` (a fresh redb file per server, under the test target's
/// temporary directory).
pub fn rowkit_store() -> &'static Emulator {
    static CELL: OnceLock<Emulator> = OnceLock::new();
    static FILES: AtomicU64 = AtomicU64::new(0);
    fixture(&CELL, "rowkit-grpc over embedded:", || {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("rowkit-grpc");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let n = FILES.fetch_add(1, Ordering::SeqCst);
        let path = dir.join(format!("{}-{n}.redb", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Ok(Arc::new(RedbStore::open(&path).map_err(|e| e.to_string())?))
    })
}

/// Selects the server a test binary's emulator tests run on: unset or `cbtemulator` = the
/// emulator, `rowkit-memory` / `rowkit-store` = [`rowkit_memory`] / [`rowkit_store`].
pub const SERVER_ENV: &str = "ROWKIT_BIGTABLE_SERVER";

/// The server [`SERVER_ENV`] selects for `test`; `None` when that is the emulator and it is
/// not installed (see [`Emulator::shared_or_skip`]).
#[allow(dead_code)]
pub fn selected(test: &str) -> Option<&'static Emulator> {
    match std::env::var(SERVER_ENV).as_deref() {
        Ok("rowkit-memory") => Some(rowkit_memory()),
        Ok("rowkit-store") => Some(rowkit_store()),
        Ok("cbtemulator") | Err(_) => Emulator::shared_or_skip(test),
        Ok(other) => {
            panic!("{SERVER_ENV}={other}: expected cbtemulator, rowkit-memory or rowkit-store")
        }
    }
}

/// Whether [`SERVER_ENV`] selects a rowkit server (no emulator deviation is tolerated).
#[allow(dead_code)]
pub fn selected_is_rowkit() -> bool {
    std::env::var(SERVER_ENV).is_ok_and(|s| s.starts_with("rowkit-"))
}

/// Runs every other test of this binary again in a child process with [`SERVER_ENV`] =
/// `server`, and fails if any of them fails (its output is shown). Tests whose name contains
/// `skip` are left out (the ones calling this).
#[allow(dead_code)]
pub fn rerun_all_on(server: &str, skip: &str) {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("the test binary: {e}"));
    let output = std::process::Command::new(exe)
        .args(["--skip", skip])
        .env(SERVER_ENV, server)
        .output()
        .unwrap_or_else(|e| panic!("running the tests on {server}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{text}");
    assert!(output.status.success(), "tests failed on {server}");
    assert!(text.contains("test result: ok"), "no test ran on {server}");
}

/// Two tests that rerun every other test of the binary on rowkit's server over memory: and
/// embedded: ([`rerun_all_on`]).
#[macro_export]
macro_rules! every_test_on_rowkit_grpc {
    () => {
        #[test]
        fn every_test_on_rowkit_grpc_over_memory() {
            backends::rerun_all_on("rowkit-memory", "on_rowkit_grpc");
        }

        #[test]
        fn every_test_on_rowkit_grpc_over_embedded() {
            backends::rerun_all_on("rowkit-store", "on_rowkit_grpc");
        }
    };
}
