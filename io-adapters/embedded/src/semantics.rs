//! The one evaluator of Bigtable semantics shared by every local store (placeholder: being
//! written).
use rowkit_codec::model::{ColumnFamily, Timestamp};
use rowkit_statemachines::{Code, Request, StoreError};

use crate::{Reply, Store, TableStorage};

impl<S: TableStorage> Store for S {
    fn execute(&self, _request: Request, _now: Timestamp) -> Result<Reply<'_>, StoreError> {
        Err(StoreError::new(
            Code::Unimplemented,
            "evaluator not written yet",
        ))
    }
    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        TableStorage::create_table(self, table, families)
    }
    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        TableStorage::delete_table(self, table)
    }
    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        TableStorage::list_tables(self)
    }
    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        TableStorage::families(self, table)
    }
    fn gc(&self, _table: &str, _now: Timestamp) -> Result<u64, StoreError> {
        Err(StoreError::new(
            Code::Unimplemented,
            "evaluator not written yet",
        ))
    }
}
