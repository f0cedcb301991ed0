//! `--store` values: where the tables live.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use rowkit_codec::model::{ColumnFamily, Timestamp};
use rowkit_statemachines::{Code, Request, StoreError};
use rowkit_store::{GcPage, MemoryStore, RedbStore, Reply, Store};

use crate::error::CliError;
use crate::gateway_store::GatewayStore;

/// A parsed `--store` value.
#[derive(Debug, PartialEq, Eq)]
pub enum StoreLocation {
    /// `memory:` — a fresh in-memory store that lives as long as the process.
    Memory,
    /// `embedded:PATH` — a redb file, created if missing.
    Embedded(PathBuf),
    /// `bigtable://PROJECT/INSTANCE[?emulator=HOST:PORT|?endpoint=https://HOST:PORT[&ca=FILE]]`.
    Bigtable(String),
    /// `http://HOST:PORT` or `https://…`: a running `rowkit serve`, for `admin backup`.
    Gateway(String),
}

impl StoreLocation {
    /// Parses a `--store` value.
    pub fn parse(text: &str) -> Result<StoreLocation, CliError> {
        if text == "memory:" {
            Ok(StoreLocation::Memory)
        } else if let Some(path) = text.strip_prefix("embedded:") {
            if path.is_empty() {
                return Err(CliError::usage(
                    "--store embedded: needs a path, e.g. embedded:./rowkit.redb",
                ));
            }
            Ok(StoreLocation::Embedded(PathBuf::from(path)))
        } else if text.starts_with("bigtable://") {
            Ok(StoreLocation::Bigtable(text.to_string()))
        } else if text.starts_with("http://") || text.starts_with("https://") {
            Ok(StoreLocation::Gateway(text.to_string()))
        } else {
            Err(CliError::usage(format!(
                "--store {text:?}: expected memory:, embedded:PATH, bigtable://PROJECT/INSTANCE or a server's http://HOST:PORT"
            )))
        }
    }

    /// Opens the store; an embedded file `read_only` (never created or written). Bigtable is
    /// given `deadline` to open and to answer each call: a server that never answers fails
    /// the command at its deadline rather than holding it.
    pub fn open(&self, read_only: bool, deadline: Duration) -> Result<Box<dyn Store>, StoreError> {
        match self {
            StoreLocation::Memory => Ok(Box::new(MemoryStore::new())),
            StoreLocation::Embedded(path) => {
                let opened = if read_only {
                    RedbStore::open_read_only(path)
                } else {
                    RedbStore::open(path)
                };
                match opened {
                    Ok(store) => Ok(Box::new(store)),
                    Err(mut e) if e.code == Code::Unavailable => {
                        if let Some(holder) = lock_holder(path) {
                            e.message = format!("{} Held by {holder}.", e.message);
                        }
                        Err(held_by_server_hint(e))
                    }
                    Err(e) => Err(e),
                }
            }
            StoreLocation::Gateway(url) => Ok(Box::new(GatewayStore::new(url))),
            // Emulator from `?emulator=` or BIGTABLE_EMULATOR_HOST; otherwise Cloud Bigtable (or
            // `?endpoint=`) with ROWKIT_BIGTABLE_TOKEN or Application Default Credentials
            // (google-cloud-auth), built on the store's own runtime.
            StoreLocation::Bigtable(url) => Ok(Box::new(
                rowkit_bigtable::BigtableStore::open_with_call_timeout(url, deadline)?,
            )),
        }
    }
}

/// A file another process holds (`UNAVAILABLE`) is most often held by `rowkit serve`: the error
/// says how to reach the file through it instead.
fn held_by_server_hint(mut e: StoreError) -> StoreError {
    if e.code == Code::Unavailable {
        e.message.push_str(
            "; if `rowkit serve` holds it, use the server's address: --store 'bigtable://p/i?emulator=GRPC_ADDR' (serve --grpc) for tables, --store http://ADDR for `admin backup`",
        );
    }
    e
}

/// The process holding the lock on the file at `path` (`process 4242: rowkit … serve`), from
/// `/proc/locks` on Linux: the lock message then says who to stop. `None` where there is no
/// such table or no lock on the file is listed.
fn lock_holder(path: &Path) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let file = std::fs::metadata(path).ok()?;
        // `/proc/locks` names a file `MAJOR:MINOR:INODE` (hex, hex, decimal); st_dev encodes
        // major and minor as glibc's `major()` and `minor()` decode them.
        let dev = file.dev();
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
        let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
        let wanted = format!("{major:02x}:{minor:02x}:{}", file.ino());
        let locks = std::fs::read_to_string("/proc/locks").ok()?;
        // `ID: FLOCK ADVISORY WRITE PID DEV:INODE START END`; a waiter's line has `->` after ID.
        let pid = locks.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().filter(|f| *f != "->").collect();
            let pid: u32 = fields.get(4)?.parse().ok()?;
            (fields.get(5) == Some(&wanted.as_str()) && pid != std::process::id()).then_some(pid)
        })?;
        let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let command: Vec<String> = command
            .split(|b| *b == 0)
            .filter(|arg| !arg.is_empty())
            .map(|arg| String::from_utf8_lossy(arg).into_owned())
            .collect();
        Some(if command.is_empty() {
            format!("process {pid}")
        } else {
            format!("process {pid}: {}", command.join(" "))
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// A store opened by its first request, not before: a command checks all of its input first,
/// so one refused for bad input has not even opened (let alone created or changed) the file.
pub struct StoreOnFirstUse {
    location: StoreLocation,
    read_only: bool,
    deadline: Duration,
    store: OnceLock<Result<Box<dyn Store>, StoreError>>,
}

impl StoreOnFirstUse {
    /// The store at `location`, to be opened `read_only` or not, with the command's `deadline`
    /// ([`StoreLocation::open`]).
    pub fn new(location: StoreLocation, read_only: bool, deadline: Duration) -> StoreOnFirstUse {
        StoreOnFirstUse {
            location,
            read_only,
            deadline,
            store: OnceLock::new(),
        }
    }

    /// The open store, or why it did not open (each use reports the same error).
    fn get(&self) -> Result<&dyn Store, StoreError> {
        match self
            .store
            .get_or_init(|| self.location.open(self.read_only, self.deadline))
        {
            Ok(store) => Ok(store.as_ref()),
            Err(e) => Err(e.clone()),
        }
    }
}

impl Store for StoreOnFirstUse {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        self.get()?.execute(request, now)
    }

    fn execute_local(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        self.get()?.execute_local(request, now)
    }

    /// `false` until the store is open: opening may block (a file lock, a connection), so the
    /// first call goes to a blocking thread, which opens it.
    fn in_process(&self) -> bool {
        self.store
            .get()
            .is_some_and(|opened| opened.as_ref().is_ok_and(|store| store.in_process()))
    }

    /// `false` until the store is open, as [`Store::in_process`].
    fn writes_in_memory(&self) -> bool {
        self.store
            .get()
            .is_some_and(|opened| opened.as_ref().is_ok_and(|store| store.writes_in_memory()))
    }

    /// The open's error once it failed (a file another process holds, …): every command then
    /// fails at once with it instead of its machine retrying it until the deadline.
    fn unusable(&self) -> Option<StoreError> {
        match self.store.get() {
            Some(Err(e)) => Some(e.clone()),
            Some(Ok(store)) => store.unusable(),
            None => None,
        }
    }

    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        self.get()?.create_table(table, families)
    }

    fn create_table_with_splits(
        &self,
        table: &str,
        families: &[ColumnFamily],
        splits: &[Vec<u8>],
    ) -> Result<(), StoreError> {
        self.get()?
            .create_table_with_splits(table, families, splits)
    }

    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        self.get()?.delete_table(table)
    }

    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        self.get()?.list_tables()
    }

    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        self.get()?.families(table)
    }

    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        self.get()?.set_family(table, family)
    }

    fn drop_family(&self, table: &str, family: &str) -> Result<(), StoreError> {
        self.get()?.drop_family(table, family)
    }

    fn gc(&self, table: &str, now: Timestamp) -> Result<u64, StoreError> {
        self.get()?.gc(table, now)
    }

    fn gc_page(
        &self,
        table: &str,
        after: Option<&[u8]>,
        max_rows: usize,
        now: Timestamp,
    ) -> Result<GcPage, StoreError> {
        self.get()?.gc_page(table, after, max_rows, now)
    }

    fn backup_to(
        &self,
        path: &std::path::Path,
        overwrite: bool,
    ) -> Result<rowkit_store::BackupSummary, StoreError> {
        self.get()?.backup_to(path, overwrite)
    }
}
