//! `--store` values: where the tables live.

use std::path::PathBuf;

use rowkit_embedded::{MemoryStore, RedbStore, Store};

use crate::error::CliError;

/// A parsed `--store` value.
#[derive(Debug, PartialEq, Eq)]
pub enum StoreLocation {
    /// `memory:` — a fresh in-memory store that lives as long as the process.
    Memory,
    /// `embedded:PATH` — a redb file, created if missing.
    Embedded(PathBuf),
    /// `bigtable://PROJECT/INSTANCE[?emulator=HOST:PORT]`.
    Bigtable(String),
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
        } else {
            Err(CliError::usage(format!(
                "--store {text:?}: expected memory:, embedded:PATH or bigtable://PROJECT/INSTANCE"
            )))
        }
    }

    /// Opens the store.
    pub fn open(&self) -> Result<Box<dyn Store>, CliError> {
        match self {
            StoreLocation::Memory => Ok(Box::new(MemoryStore::new())),
            StoreLocation::Embedded(path) => Ok(Box::new(RedbStore::open(path)?)),
            // Emulator from `?emulator=` or BIGTABLE_EMULATOR_HOST; otherwise Cloud Bigtable
            // with ROWKIT_BIGTABLE_TOKEN or Application Default Credentials (google-cloud-auth).
            StoreLocation::Bigtable(url) => {
                Ok(Box::new(rowkit_bigtable::BigtableStore::open(url)?))
            }
        }
    }
}
