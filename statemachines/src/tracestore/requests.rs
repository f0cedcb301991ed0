//! The requests the trace store machines send and the decoding of their answers
//! (`spec/tracestore.md` 5, 9, 11.4, 12): filters, read requests, cells, OPS rows and
//! child outcomes turned into typed results.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::model::{Row, RowFilter, RowSet};
use rowkit_codec::tracestore::cells::{
    COLUMN_HASH, COLUMN_OPS, FAMILY_DIGEST_MAP, FAMILY_OPS, decode_digest_map_value,
    digest_of_map_cell,
};
use rowkit_codec::tracestore::keys::ops_row_name;
use rowkit_codec::tracestore::{TraceStoreError, decode_ops_gob};

use super::state::{CachedOps, DigestCache, TraceStoreState};
use crate::children::{ChildOutput, owned_rows};
use crate::{ReadRowsRequest, Response, StoreError};

/// A store error as the trace store reports it.
pub(crate) fn store_error(e: StoreError) -> TraceStoreError {
    TraceStoreError::Store {
        code: e.code,
        message: e.message,
    }
}

/// A child answered with the wrong kind of response (a broken store or driver).
pub(crate) fn unexpected(what: &str) -> TraceStoreError {
    TraceStoreError::Store {
        code: crate::Code::Internal,
        message: alloc::format!("unexpected response to {what}"),
    }
}

/// `LatestN(1)`.
pub(crate) fn latest() -> RowFilter {
    RowFilter::CellsPerColumnLimit(1)
}

/// `Family(f)`.
pub(crate) fn family(f: &str) -> RowFilter {
    RowFilter::FamilyNameRegex(f.into())
}

/// A read of the state's table.
pub(crate) fn read_request(
    state: &TraceStoreState,
    rows: RowSet,
    filter: RowFilter,
    rows_limit: i64,
) -> ReadRowsRequest {
    ReadRowsRequest {
        table: state.table.clone(),
        app_profile_id: state.app_profile_id.clone(),
        rows,
        filter: Some(filter),
        rows_limit,
        reversed: false,
    }
}

/// The rows of a finished read child.
pub(crate) fn rows_of(
    outcome: Result<ChildOutput, StoreError>,
) -> Result<Vec<Row>, TraceStoreError> {
    match outcome.map_err(store_error)? {
        ChildOutput::Rows(rows) => Ok(owned_rows(rows)),
        _ => Err(unexpected("ReadRows")),
    }
}

/// `predicate_matched` of a finished `CheckAndMutateRow` child (the store error kept as is:
/// callers decide whether it ends the operation).
pub(crate) fn matched_of(outcome: Result<ChildOutput, StoreError>) -> Result<bool, StoreError> {
    match outcome? {
        ChildOutput::Unary(Response::CheckAndMutateRow { predicate_matched }) => {
            Ok(predicate_matched)
        }
        _ => Err(StoreError::new(
            crate::Code::Internal,
            "unexpected response to CheckAndMutateRow",
        )),
    }
}

/// Decodes an OPS row (`spec/tracestore.md` 5.1).
fn decode_ops_row(row: &Row) -> Result<CachedOps, TraceStoreError> {
    let cells: Vec<_> = row
        .cells
        .iter()
        .filter(|c| c.family == FAMILY_OPS)
        .collect();
    if cells.len() != 2 {
        return Err(TraceStoreError::BadOpsRow {
            reason: "incorrect number of OPS columns",
        });
    }
    let hash = cells.iter().find(|c| c.qualifier == COLUMN_HASH);
    let ops = cells.iter().find(|c| c.qualifier == COLUMN_OPS);
    let (Some(hash), Some(ops)) = (hash, ops) else {
        return Err(TraceStoreError::BadOpsRow {
            reason: "incorrect number of OPS columns",
        });
    };
    if hash.value.is_empty() {
        return Err(TraceStoreError::BadOpsRow {
            reason: "missing hash",
        });
    }
    Ok(CachedOps {
        ops: Arc::new(decode_ops_gob(&ops.value)?),
        hash: String::from_utf8_lossy(&hash.value).into_owned(),
        ts_hash: hash.timestamp,
    })
}

/// `ReadRow(":ts:o:<tk>:", Chain(LatestN(1), Family("O")))`.
pub(crate) fn ops_read_request(state: &TraceStoreState, tile_key: i32) -> ReadRowsRequest {
    read_request(
        state,
        RowSet::key(ops_row_name(tile_key)),
        RowFilter::Chain(alloc::vec![latest(), family(FAMILY_OPS)]),
        0,
    )
}

/// Decodes the answer of an OPS read (no row -> `None`) and caches what it found.
pub(crate) fn take_ops_read(
    state: &mut TraceStoreState,
    tile_key: i32,
    rows: &[Row],
) -> Result<Option<CachedOps>, TraceStoreError> {
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let cached = decode_ops_row(row)?;
    state
        .ops_cache
        .insert(ops_row_name(tile_key), cached.clone());
    Ok(Some(cached))
}

/// Merges the `D` cells of digest-map rows into the cache (`spec/tracestore.md` 5.6).
pub(crate) fn merge_map_rows(cache: &mut DigestCache, rows: &[Row]) -> Result<(), TraceStoreError> {
    let mut entries = Vec::new();
    for row in rows {
        for cell in row.cells.iter().filter(|c| c.family == FAMILY_DIGEST_MAP) {
            let digest = digest_of_map_cell(&row.key, &cell.qualifier)?;
            let id = decode_digest_map_value(&cell.value)?;
            entries.push((digest, id));
        }
    }
    cache.merge(&entries)
}

/// `Chain(Family("D"), LatestN(1))`.
pub(crate) fn map_filter() -> RowFilter {
    RowFilter::Chain(alloc::vec![family(FAMILY_DIGEST_MAP), latest()])
}
