//! `--store http://HOST:PORT` (or `https://`): a running `rowkit serve`'s gateway, for the one
//! call only the serving process can make on its locked store file, `admin backup` (the
//! gateway's `POST /v2/rowkit:backup`). Data and table calls go to a server by its gRPC address
//! (`bigtable://p/i?emulator=HOST:PORT`); here they answer `UNIMPLEMENTED` saying so.

use std::path::Path;
use std::time::Duration;

use rowkit_codec::model::{ColumnFamily, Timestamp};
use rowkit_store::{BackupSummary, Reply, Store};
use rowkit_gateway::backup::{BACKUP_PATH, BackupRequest, decode_answer};
use rowkit_statemachines::{Code, Request, StoreError};

/// The environment variable with the gateway's bearer token (the one `rowkit serve` reads).
const TOKEN_ENV: &str = "ROWKIT_GATEWAY_TOKEN";

/// A gateway reached over HTTP for `admin backup`.
pub struct GatewayStore {
    /// `http(s)://HOST:PORT`, without a trailing `/`.
    url: String,
    /// `ROWKIT_GATEWAY_TOKEN`, when set.
    token: Option<String>,
}

impl GatewayStore {
    /// The gateway at `url`, with the token from `ROWKIT_GATEWAY_TOKEN`.
    pub fn new(url: &str) -> GatewayStore {
        GatewayStore {
            url: url.trim_end_matches('/').to_string(),
            token: std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()),
        }
    }

    fn only_backup(&self) -> StoreError {
        StoreError::new(
            Code::Unimplemented,
            format!(
                "--store {}: a gateway address serves `rowkit admin backup` only; reach a server's tables by its gRPC address (`rowkit serve --grpc`): --store 'bigtable://p/i?emulator=HOST:PORT'",
                self.url
            ),
        )
    }

    /// One `POST /v2/rowkit:backup` on a runtime of its own (the CLI is synchronous).
    async fn post_backup(&self, body: Vec<u8>) -> Result<BackupSummary, StoreError> {
        let unreachable = |e: reqwest::Error| {
            StoreError::new(
                Code::Unavailable,
                format!(
                    "cannot reach the gateway at {}: {}",
                    self.url,
                    rowkit_bigtable::error_chain(&e)
                ),
            )
        };
        // No overall timeout: copying a large store takes as long as it takes.
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(20))
            .build()
            .map_err(unreachable)?;
        let mut request = client
            .post(format!("{}{BACKUP_PATH}", self.url))
            .header("Content-Type", "application/json")
            .body(body);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(unreachable)?;
        decode_answer(status, &bytes)
    }
}

impl Store for GatewayStore {
    fn execute(&self, _request: Request, _now: Timestamp) -> Result<Reply<'_>, StoreError> {
        Err(self.only_backup())
    }

    fn create_table(&self, _table: &str, _families: &[ColumnFamily]) -> Result<(), StoreError> {
        Err(self.only_backup())
    }

    fn delete_table(&self, _table: &str) -> Result<(), StoreError> {
        Err(self.only_backup())
    }

    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        Err(self.only_backup())
    }

    fn families(&self, _table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        Err(self.only_backup())
    }

    fn gc(&self, _table: &str, _now: Timestamp) -> Result<u64, StoreError> {
        Err(self.only_backup())
    }

    /// Asks the server to write the backup: `path` is on the server's machine.
    fn backup_to(&self, path: &Path, overwrite: bool) -> Result<BackupSummary, StoreError> {
        let path = path.to_str().ok_or_else(|| {
            StoreError::new(
                Code::InvalidArgument,
                format!("backup path {} is not UTF-8", path.display()),
            )
        })?;
        let body = serde_json::to_vec(&BackupRequest {
            path: path.to_string(),
            overwrite,
        })
        .map_err(|e| StoreError::new(Code::Internal, e.to_string()))?;
        // reqwest builds its TLS configuration for plain `http://` clients too.
        rowkit_bigtable::credentials::install_crypto_provider();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::new(Code::Internal, format!("cannot start a runtime: {e}")))?
            .block_on(self.post_backup(body))
    }
}
