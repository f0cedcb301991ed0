//! `POST /v2/rowkit:backup`: the serving process writes a backup of its store
//! ([`Store::backup_to`]) to a file on the server's machine. rowkit's own route, not
//! Bigtable's (whose backups are per table and kept inside the instance): `rowkit serve` holds
//! its store file locked, so only the server can copy it while it serves. It is a data call,
//! behind the token, and serves `rowkit serve --grpc` too (that process runs the gateway
//! beside the gRPC server).
//!
//! Request body: `{"path": "/abs/path/backup.redb", "overwrite": false}` (`path` absolute,
//! since a relative one would depend on the server's working directory). The server writes only
//! into the directory it was given (`rowkit serve --backup-dir DIR`), and refuses every backup
//! without one: the token grants the store's data, not the server's file system. Answer:
//! `{"path": …, "tables": N, "bytes": N}`, or a `google.rpc.Status` error body.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rowkit_store::{BackupSummary, Store};
use rowkit_statemachines::{Code, StoreError};
use serde::{Deserialize, Serialize};

use crate::serving;

/// The route's path.
pub const BACKUP_PATH: &str = "/v2/rowkit:backup";

/// The request body.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BackupRequest {
    /// Where the backup goes on the server's machine: an absolute path.
    pub path: String,
    /// Whether an existing file there is replaced.
    #[serde(default)]
    pub overwrite: bool,
}

/// The answer of a backup that was written.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct BackupAnswer {
    /// Where it was written (as asked).
    pub path: String,
    /// The rowkit tables in it.
    pub tables: usize,
    /// Its size in bytes.
    pub bytes: u64,
}

impl From<BackupAnswer> for BackupSummary {
    fn from(answer: BackupAnswer) -> BackupSummary {
        BackupSummary {
            tables: answer.tables,
            bytes: answer.bytes,
        }
    }
}

/// Runs one backup request (its body already read) on `store`, off the runtime, into a file
/// directly or further down inside `backup_dir`.
pub(crate) async fn backup(
    store: Arc<dyn Store>,
    backup_dir: Option<Arc<PathBuf>>,
    body: &[u8],
) -> Result<Vec<u8>, StoreError> {
    let request: BackupRequest = serde_json::from_slice(body).map_err(|e| {
        StoreError::new(
            Code::InvalidArgument,
            format!(r#"backup: expected {{"path": "/abs/file.redb", "overwrite": false}}: {e}"#),
        )
    })?;
    let path = PathBuf::from(&request.path);
    if !path.is_absolute() {
        return Err(StoreError::new(
            Code::InvalidArgument,
            format!(
                "backup: {:?} is not an absolute path (it names a file on the server's machine)",
                request.path
            ),
        ));
    }
    inside_backup_dir(&path, backup_dir.as_deref().map(PathBuf::as_path))?;
    let overwrite = request.overwrite;
    let summary = serving::blocking(move || store.backup_to(&path, overwrite)).await?;
    let answer = BackupAnswer {
        path: request.path,
        tables: summary.tables,
        bytes: summary.bytes,
    };
    serde_json::to_vec(&answer).map_err(|e| StoreError::new(Code::Internal, e.to_string()))
}

/// A gateway's answer to a backup request, as the caller sees it: the summary of a 200, the
/// status of an error body.
pub fn decode_answer(http_status: u16, body: &[u8]) -> Result<BackupSummary, StoreError> {
    if http_status != 200 {
        return Err(rowkit_rest::decode_error(http_status, body));
    }
    serde_json::from_slice::<BackupAnswer>(body)
        .map(BackupSummary::from)
        .map_err(|e| {
            StoreError::new(
                Code::Unknown,
                format!("the gateway's backup answer is not one: {e}"),
            )
        })
}

/// Refuses a backup `path` whose directory (links resolved) is not `backup_dir` or below it.
fn inside_backup_dir(path: &Path, backup_dir: Option<&Path>) -> Result<(), StoreError> {
    let Some(backup_dir) = backup_dir else {
        return Err(StoreError::new(
            Code::FailedPrecondition,
            "backup: this server takes no backups; start it with `rowkit serve --backup-dir DIR` \
             to allow backups into DIR",
        ));
    };
    let outside = || {
        StoreError::new(
            Code::PermissionDenied,
            format!(
                "backup: {} is outside the server's backup directory {}",
                path.display(),
                backup_dir.display()
            ),
        )
    };
    // `file_name` is `None` for a path ending in `..`; the parent is resolved as it is now.
    path.file_name().ok_or_else(outside)?;
    let dir = path
        .parent()
        .and_then(|dir| std::fs::canonicalize(dir).ok())
        .ok_or_else(outside)?;
    if dir.starts_with(backup_dir) {
        Ok(())
    } else {
        Err(outside())
    }
}
