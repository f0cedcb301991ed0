//! HTTP gateway serving the Bigtable v2 JSON API and its table admin (`spec/rest-json.md`) over any rowkit
//! [`Store`]: the embedded redb store, the memory store, or Bigtable itself (gRPC, through
//! `rowkit_bigtable::BigtableStore`). It also serves the browser tool's static files.
//!
//! - [`GatewayConfig`]: listen address, bearer token, CORS origins, extra `Host` names, body
//!   limit, static files. A listen address other than loopback requires a token
//!   ([`ServeError::TokenRequired`]). Every request must name an allowed `Host` (IP
//!   addresses, `localhost` names and `allowed_hosts`; see `host.rs`), so a web page cannot
//!   reach a loopback gateway through DNS rebinding.
//! - [`Gateway::bind`] binds the socket (so `127.0.0.1:0` reports its real port through
//!   [`Gateway::local_addr`]), [`Gateway::serve`] runs until the future given resolves.
//! - Table admin in Google's JSON shapes (the Admin v2 REST binding, [`rowkit_rest::admin`]):
//!   create, list, get and delete tables, modify their families, under the same token, `Host`,
//!   CORS and body rules as the data calls.
//! - [`router`] is the axum router alone, for embedding; `GET /healthz` answers `200 ok`
//!   without a token (it says only that the process serves HTTP, nothing about the store).
//! - The serving core this gateway shares with the gRPC server is `rowkit-serving`: the
//!   address/token rule, the bearer check, store calls off the runtime, the connection layer,
//!   one `tracing` line per request (`rowkit_serving::access_log`; the binary sets up where
//!   it goes).
//! - [`backup`]: `POST /v2/rowkit:backup`, a backup of the store written by the serving
//!   process (which holds the store file), for `rowkit admin backup` against a gateway.
//! - [`gc::BackgroundGc`]: garbage collection of an in-process store in the background, one per
//!   server process, in bounded steps that never hold writers for long.
//!
//! Stores are blocking: calls run in `tokio::task::spawn_blocking`, and streamed replies are
//! pumped from the blocking thread through a bounded channel, so a slow client applies
//! back-pressure and a disconnected one stops the scan. The one exception is a read of a few
//! row keys on an in-process store, answered on the runtime thread (`rowkit_serving::stream`).
#![forbid(unsafe_code)]

mod api;
pub mod backup;
mod body;
mod cors;
pub mod gc;
mod host;
mod table_admin;
mod www;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rowkit_serving as serving;
use rowkit_store::Store;
use rowkit_store::driver::Clock;
use tokio::net::TcpListener;

pub use api::router;
pub use host::AllowedHosts;
pub use rowkit_serving::ServeError;
pub use rowkit_statemachines::{Request, Response, StoreError};

/// The default body limit: 400 MiB. A `MutateRow` may carry a 256 MiB row (`bigtable.md` 4),
/// which base64 grows by a third; larger bodies cannot be valid.
pub const DEFAULT_MAX_BODY_BYTES: usize = 400 << 20;

/// Files built into a binary (path relative to the tool's root, `/`-separated; bytes), e.g.
/// with `include_bytes!`: the browser tool served without a directory.
pub type EmbeddedFiles = &'static [(&'static str, &'static [u8])];

/// How the gateway is exposed.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// Address to listen on; default `127.0.0.1:8080`.
    pub listen: SocketAddr,
    /// Bearer token every data request (`/v2/…`) must carry; required unless `listen` is
    /// loopback. Static files and CORS preflights are served without it.
    pub token: Option<String>,
    /// Origins allowed by CORS (`http://127.0.0.1:8000`); empty = any loopback origin.
    /// `*` allows every origin, only on an open (token-less) gateway.
    pub cors_origins: Vec<String>,
    /// Directory of the browser tool's static files, read per request (`--www DIR`, for
    /// development); when `None`, `www_files` are served.
    pub www: Option<PathBuf>,
    /// The browser tool built into the binary, served when `www` is `None`; empty = a built-in
    /// page saying the tool is missing.
    pub www_files: EmbeddedFiles,
    /// Largest request body accepted, in bytes: a larger declared `Content-Length` is refused
    /// before the body is read, and a body streamed past it is cut off.
    pub max_body_bytes: usize,
    /// Host names requests may be addressed to besides IP addresses and `localhost` names
    /// (`name` or `name:port`), e.g. the machine's DNS name when it listens beyond loopback.
    pub allowed_hosts: Vec<String>,
    /// The directory `POST /v2/rowkit:backup` may write into (`serve --backup-dir`); `None`
    /// refuses server-side backups, so a token never lets a client write files elsewhere.
    pub backup_dir: Option<PathBuf>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            token: None,
            cors_origins: Vec::new(),
            www: None,
            www_files: &[],
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            allowed_hosts: Vec::new(),
            backup_dir: None,
        }
    }
}

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The exposure rule refused the address or token, or the socket could not be bound (the
    /// rule and the listening every server shares).
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// A CORS origin that is not a valid header value, or `*` with a token.
    #[error("--cors-origin {origin:?}: {reason}")]
    BadOrigin {
        /// The origin given.
        origin: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The static files directory cannot be resolved.
    #[error("--www {dir}: {source}")]
    Www {
        /// The directory given.
        dir: PathBuf,
        /// Why it cannot be used.
        source: std::io::Error,
    },
    /// The backup directory is not an existing directory.
    #[error("--backup-dir {}: not an existing directory", dir.display())]
    BackupDir {
        /// The directory given.
        dir: PathBuf,
    },
}

/// What every request handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The store requests run on.
    pub store: Arc<dyn Store>,
    /// Server time for `-1` timestamps and read-modify-write.
    pub clock: Arc<dyn Clock + Send + Sync>,
    /// The token, if the gateway requires one.
    pub token: Option<Arc<str>>,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Static files directory, with every link resolved: files are served only from inside it.
    pub www: Option<Arc<PathBuf>>,
    /// The files served when there is no directory.
    pub www_files: EmbeddedFiles,
    /// The `Host` allow-list.
    pub hosts: Arc<AllowedHosts>,
    /// Where server-side backups may go, with every link resolved ([`GatewayConfig::backup_dir`]).
    pub backup_dir: Option<Arc<PathBuf>>,
}

/// A bound gateway, ready to serve.
pub struct Gateway {
    listener: TcpListener,
    app: axum::Router,
}

impl Gateway {
    /// Checks the configuration and binds the socket.
    pub async fn bind(
        config: GatewayConfig,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock + Send + Sync>,
    ) -> Result<Gateway, GatewayError> {
        serving::check_exposure(config.listen, config.token.as_deref())?;
        let cors = cors::layer(&config.cors_origins, config.token.is_some())?;
        let www = match config.www {
            Some(dir) => Some(Arc::new(
                std::fs::canonicalize(&dir).map_err(|source| GatewayError::Www { dir, source })?,
            )),
            None => None,
        };
        let backup_dir = match config.backup_dir {
            Some(dir) => Some(Arc::new(
                std::fs::canonicalize(&dir)
                    .ok()
                    .filter(|d| d.is_dir())
                    .ok_or(GatewayError::BackupDir { dir })?,
            )),
            None => None,
        };
        let state = AppState {
            store,
            clock,
            token: config.token.map(Arc::from),
            max_body_bytes: config.max_body_bytes,
            www,
            www_files: config.www_files,
            hosts: Arc::new(AllowedHosts::new(&config.allowed_hosts)),
            backup_dir,
        };
        // The log layer outermost, so its duration and status are what the client got.
        let app = router(state)
            .layer(cors)
            .layer(axum::middleware::from_fn(serving::access_log::json));
        let listener = serving::listen(config.listen).await?;
        Ok(Gateway { listener, app })
    }

    /// The address actually bound (the real port when asked for port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// `http://ADDR/`, the URL clients use.
    pub fn url(&self) -> std::io::Result<String> {
        Ok(format!("http://{}/", self.local_addr()?))
    }

    /// Serves until `shutdown` resolves, with the default `rowkit_serving::connections` limits of
    /// a server alone in its process (see [`Gateway::serve_with`]).
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let connections = serving::connections::Connections::new(Default::default());
        self.serve_with(connections, shutdown).await
    }

    /// Serves until `shutdown` resolves, then drains and closes (see
    /// `rowkit_serving::connections::serve`); `connections` may be shared with the process's other
    /// servers, so one connection limit covers them all.
    pub async fn serve_with(
        self,
        connections: Arc<serving::connections::Connections>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        serving::connections::serve(
            self.listener,
            self.app,
            connections,
            serving::connections::Protocols::Http1And2,
            serving::connections::plaintext,
            shutdown,
        )
        .await
    }
}
