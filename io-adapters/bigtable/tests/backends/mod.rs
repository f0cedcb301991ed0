//! The servers the emulator suites also run on: rowkit's own gRPC server (`rowkit-grpc`) over
//! a memory store and over a redb file, each behind the [`Emulator`] fixture (a fresh server
//! over a fresh store per instance).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use rowkit_bigtable::emulator::Emulator;
use rowkit_embedded::{MemoryStore, RedbStore, Store};

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
pub fn rowkit_embedded() -> &'static Emulator {
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
