//! [`BigtableStore`]: the blocking [`Store`] over a [`BigtableConnection`], so every sync code
//! path (the sync driver, the CLI, the semantics and schema suites written over `&dyn Store`)
//! runs unchanged against the emulator or Cloud Bigtable.
//!
//! Each call blocks the calling thread on the store's Tokio runtime; streamed replies are
//! blocking iterators that pull one gRPC message per `next()`, so a long scan is never
//! buffered and dropping the iterator cancels the call. Do not call it from inside an async
//! task (Tokio forbids `block_on` there); async code uses the connection
//! through `rowkit-client`'s `TokioDriver` instead.
//!
//! A blocked caller cannot give up by itself (the sync driver runs a machine's request to its
//! answer), so a store opened with a call timeout ([`BigtableStore::open_with_call_timeout`])
//! ends a call `DEADLINE_EXCEEDED` when the server sends nothing for that long: a server that
//! accepts and never answers cannot hold a command past its deadline.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use rowkit_codec::model::{Code, ColumnFamily, Timestamp};
use rowkit_store::{Reply, Store};
use rowkit_statemachines::{Request, Response, StoreError};
use tokio::runtime::Runtime;

use crate::auth::TokenProvider;
use crate::connection::{AsyncReply, BigtableConnection, PartStream};
use crate::target::{Endpoint, Target};

/// The environment variable holding a ready access token for Cloud Bigtable.
pub const TOKEN_ENV: &str = "ROWKIT_BIGTABLE_TOKEN";

/// A blocking store backed by Bigtable. Cheap to clone (shares runtime and channels).
#[derive(Clone, Debug)]
pub struct BigtableStore {
    runtime: Arc<Runtime>,
    conn: BigtableConnection,
    /// How long a call may wait for the server's next answer (`None`: for ever).
    call_timeout: Option<Duration>,
}

/// A runtime for blocking stores: two worker threads drive the HTTP/2 connections while
/// callers block.
pub fn new_runtime() -> Result<Arc<Runtime>, StoreError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("rowkit-bigtable")
        .enable_all()
        .build()
        .map(Arc::new)
        .map_err(|e| StoreError::new(Code::Internal, format!("starting the Tokio runtime: {e}")))
}

impl BigtableStore {
    /// Connects to `target` on a new runtime.
    pub fn connect(
        target: Target,
        tokens: Option<Arc<dyn TokenProvider>>,
    ) -> Result<BigtableStore, StoreError> {
        let runtime = new_runtime()?;
        let conn = runtime.block_on(BigtableConnection::connect(target, tokens))?;
        Ok(BigtableStore::from_parts(runtime, conn))
    }

    /// Opens a `bigtable://PROJECT/INSTANCE[?emulator=HOST:PORT|?endpoint=URL[&ca=FILE]]`
    /// location (the emulator also from `BIGTABLE_EMULATOR_HOST`). Cloud Bigtable (or an
    /// endpoint override) uses the token in `ROWKIT_BIGTABLE_TOKEN` if set (e.g. from
    /// `gcloud auth print-access-token`), else Application Default Credentials, built on the
    /// store's runtime. It gets the first token before connecting, so credentials that cannot
    /// give one fail here, with what is wrong, not at the first call.
    pub fn open(url: &str) -> Result<BigtableStore, StoreError> {
        BigtableStore::open_within(url, None)
    }

    /// [`BigtableStore::open`] bounded by `limit` (the first token and the connection), and
    /// every call then ends `DEADLINE_EXCEEDED` when the server sends nothing for `limit`
    /// (see the module doc): for a command with a deadline.
    pub fn open_with_call_timeout(url: &str, limit: Duration) -> Result<BigtableStore, StoreError> {
        BigtableStore::open_within(url, Some(limit))
    }

    fn open_within(url: &str, limit: Option<Duration>) -> Result<BigtableStore, StoreError> {
        let target = Target::parse(url)
            .map_err(|e| StoreError::new(Code::InvalidArgument, e.to_string()))?;
        let tokens: Option<Arc<dyn TokenProvider>> = match target.endpoint {
            Endpoint::Emulator(_) => None,
            Endpoint::Cloud | Endpoint::Custom { .. } => match std::env::var(TOKEN_ENV) {
                Ok(token) if !token.is_empty() => {
                    Some(Arc::new(crate::auth::StaticToken::new(token)))
                }
                _ => Some(Arc::new(
                    crate::credentials::GoogleCredentials::application_default(),
                )),
            },
        };
        let runtime = new_runtime()?;
        let connect = async {
            if let Some(tokens) = &tokens {
                tokens.headers().await?;
            }
            BigtableConnection::connect(target, tokens).await
        };
        let conn = runtime.block_on(within(limit, "opening the store", connect))?;
        Ok(BigtableStore {
            runtime,
            conn,
            call_timeout: limit,
        })
    }

    /// A store over an existing connection and runtime.
    pub fn from_parts(runtime: Arc<Runtime>, conn: BigtableConnection) -> BigtableStore {
        BigtableStore {
            runtime,
            conn,
            call_timeout: None,
        }
    }

    /// The same channels and runtime, another instance (a fresh namespace on the emulator).
    pub fn with_instance(&self, project: &str, instance: &str) -> BigtableStore {
        BigtableStore {
            runtime: self.runtime.clone(),
            conn: self.conn.with_instance(project, instance),
            call_timeout: self.call_timeout,
        }
    }

    /// Blocks on one call, bounded by the call timeout.
    fn wait<T>(&self, call: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
        self.runtime
            .block_on(within(self.call_timeout, "waiting for Bigtable", call))
    }

    /// The async connection underneath.
    pub fn connection(&self) -> &BigtableConnection {
        &self.conn
    }

    /// The runtime the store blocks on.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }
}

/// `work`, ended `DEADLINE_EXCEEDED` (saying it was `doing` it) when `limit` passes first.
async fn within<T>(
    limit: Option<Duration>,
    doing: &str,
    work: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let Some(limit) = limit else {
        return work.await;
    };
    tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
        Err(StoreError::new(
            Code::DeadlineExceeded,
            format!("{doing}: no answer within {} s", limit.as_secs_f64()),
        ))
    })
}

/// A gRPC stream as a blocking iterator of parts; stops after the first error. Each part is
/// waited for at most the store's call timeout.
struct BlockingParts<'a> {
    store: &'a BigtableStore,
    parts: Option<PartStream>,
}

impl Iterator for BlockingParts<'_> {
    type Item = Result<Response, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let parts = self.parts.as_mut()?;
        let item = self
            .store
            .wait(async { Ok(parts.next().await) })
            .unwrap_or_else(|timeout| Some(Err(timeout)));
        if !matches!(item, Some(Ok(_))) {
            self.parts = None;
        }
        item
    }
}

impl Store for BigtableStore {
    /// Runs one RPC. `now` is ignored: Bigtable stamps server-time cells and
    /// read-modify-write results with its own clock.
    fn execute(&self, request: Request, _now: Timestamp) -> Result<Reply<'_>, StoreError> {
        match self.wait(self.conn.execute(request))? {
            AsyncReply::Unary(r) => Ok(Reply::Unary(r)),
            AsyncReply::Stream(parts) => Ok(Reply::Stream(Box::new(BlockingParts {
                store: self,
                parts: Some(parts),
            }))),
        }
    }

    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        self.create_table_with_splits(table, families, &[])
    }

    /// CreateTable with `initial_splits`: Bigtable pre-splits the table's tablets there.
    fn create_table_with_splits(
        &self,
        table: &str,
        families: &[ColumnFamily],
        splits: &[Vec<u8>],
    ) -> Result<(), StoreError> {
        self.wait(self.conn.create_table_with_splits(table, families, splits))
    }

    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        self.wait(self.conn.delete_table(table))
    }

    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        self.wait(self.conn.list_tables())
    }

    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        self.wait(self.conn.families(table))
    }

    /// `ModifyColumnFamilies` through the admin API (`create`, or `update` of an existing
    /// family's GC rule).
    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        self.wait(self.conn.set_family(table, family))
    }

    fn drop_family(&self, table: &str, family: &str) -> Result<(), StoreError> {
        self.wait(self.conn.drop_family(table, family))
    }

    /// Garbage collection on Bigtable is done by the server, asynchronously and on its own
    /// schedule (up to a week in production, about every second on the emulator), and there
    /// is no RPC to trigger it. So this only checks that the table exists and returns 0: no
    /// cell was deleted *by this call*. Reads may still return GC-eligible cells, as on
    /// production; filter on timestamps or versions to hide them.
    fn gc(&self, table: &str, _now: Timestamp) -> Result<u64, StoreError> {
        self.families(table).map(|_| 0)
    }

    /// Cloud Bigtable keeps backups itself, per table and inside the instance; there is no
    /// file to copy it to.
    fn backup_to(
        &self,
        path: &std::path::Path,
        _overwrite: bool,
    ) -> Result<rowkit_store::BackupSummary, StoreError> {
        Err(StoreError::new(
            Code::Unimplemented,
            format!(
                "a Bigtable store is not backed up to a file ({}): use Cloud Bigtable's own backups (`gcloud bigtable backups create`, the admin API's CreateBackup); the emulator keeps none",
                path.display()
            ),
        ))
    }
}
