//! Where a backup lands: a temporary file beside the destination, synced, then put in place in
//! one step, so that the destination's name never holds a half-written backup (a crash leaves at
//! most a stray temporary file, named so it is recognisable). Shared by every store's
//! [`crate::Store::backup_to`].

use std::fs::File;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rowkit_statemachines::{Code, StoreError};

use crate::BackupSummary;

/// Writes a backup to `dest`: `fill` writes a complete redb store file at the temporary path it
/// is given (and closes it) and returns the number of rowkit tables in it. An existing `dest`
/// is refused unless `overwrite`; `store_file`, the file of the store being copied, is always
/// refused as a destination (replacing a live file under its open handle loses it).
pub(crate) fn write_atomically(
    dest: &Path,
    overwrite: bool,
    store_file: Option<&Path>,
    fill: impl FnOnce(&Path) -> Result<usize, StoreError>,
) -> Result<BackupSummary, StoreError> {
    let name = dest.file_name().ok_or_else(|| {
        StoreError::new(
            Code::InvalidArgument,
            format!("backup: {} does not name a file", dest.display()),
        )
    })?;
    if let Some(store_file) = store_file
        && same_file(dest, store_file)
    {
        return Err(StoreError::new(
            Code::InvalidArgument,
            format!(
                "backup: {} is the store's own file; write the backup to another path",
                dest.display()
            ),
        ));
    }
    match dest.symlink_metadata() {
        Err(_) => {}
        Ok(_) if !overwrite => return Err(exists(dest)),
        // A rename would put the backup in place of a device, a directory's entry or a link:
        // only a file that is one (an older backup) is ever replaced.
        Ok(meta) if !meta.is_file() => {
            return Err(StoreError::new(
                Code::FailedPrecondition,
                format!(
                    "backup: {} exists and is not a regular file; not replaced",
                    dest.display()
                ),
            ));
        }
        Ok(_) => {}
    }
    let dir = match dest.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(StoreError::new(
            Code::NotFound,
            format!("backup: no directory {}", dir.display()),
        ));
    }
    let temp = dir.join(temp_name(name));
    let written = fill(&temp).and_then(|tables| {
        // redb synced its commits; this also covers the file's length and metadata.
        File::open(&temp)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_error("sync", &temp, &e))?;
        place(&temp, dest, overwrite)?;
        // The rename is durable once the directory is.
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_error("sync", &dir, &e))?;
        let bytes = dest
            .metadata()
            .map_err(|e| io_error("read", dest, &e))?
            .len();
        Ok(BackupSummary { tables, bytes })
    });
    if written.is_err() {
        // Nothing of a failed backup stays (the temporary file may not even exist yet).
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// A name for the temporary file beside the destination, unique within this process and
/// across processes: `.NAME.PID-N.backup-tmp`.
fn temp_name(name: &std::ffi::OsStr) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        ".{}.{}-{}.backup-tmp",
        name.to_string_lossy(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Moves the finished `temp` to `dest`. Without `overwrite` a hard link does it, which fails if
/// `dest` appeared meanwhile (a check then a rename would replace it); where links are not
/// supported, the rename after the check is the best the file system offers.
fn place(temp: &Path, dest: &Path, overwrite: bool) -> Result<(), StoreError> {
    if !overwrite {
        match std::fs::hard_link(temp, dest) {
            Ok(()) => {
                let _ = std::fs::remove_file(temp);
                return Ok(());
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => return Err(exists(dest)),
            Err(_) if dest.symlink_metadata().is_ok() => return Err(exists(dest)),
            Err(_) => {}
        }
    }
    std::fs::rename(temp, dest).map_err(|e| io_error("rename the backup to", dest, &e))
}

/// Whether `a` and `b` name the same file (`b` exists; `a` may not).
fn same_file(a: &Path, b: &Path) -> bool {
    let Ok(b) = b.canonicalize() else {
        return false;
    };
    match a.canonicalize() {
        Ok(a) => a == b,
        // Not there yet: the same file only if it would be created where `b` is.
        Err(_) => {
            let dir = match a.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            match (dir.canonicalize(), a.file_name()) {
                (Ok(dir), Some(name)) => dir.join(name) == b,
                _ => false,
            }
        }
    }
}

fn exists(dest: &Path) -> StoreError {
    StoreError::new(
        Code::AlreadyExists,
        format!(
            "backup: {} already exists; not replaced (--force replaces it)",
            dest.display()
        ),
    )
}

/// A file-system failure of a backup as a status: what the caller can fix (a missing
/// directory, a permission, a full disk) gets its own code.
pub(crate) fn io_error(what: &str, path: &Path, e: &std::io::Error) -> StoreError {
    let code = match e.kind() {
        ErrorKind::NotFound => Code::NotFound,
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => Code::PermissionDenied,
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => Code::ResourceExhausted,
        _ => Code::Internal,
    };
    StoreError::new(code, format!("backup: {what} {}: {e}", path.display()))
}
