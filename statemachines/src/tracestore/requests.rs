//! The requests the trace store machines send and the decoding of their answers
//! (`spec/tracestore.md` 5, 9, 11.4, 12): filters, read requests, OPS rows and digest-map
//! rows. Replies come back through [`Io`](crate::operation::Io)'s request handles.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::model::{Row, RowFilter, RowSet};
use rowkit_codec::tracestore::cells::{
    COLUMN_HASH, COLUMN_OPS, FAMILY_DIGEST_MAP, FAMILY_OPS, decode_digest_map_value,
    digest_of_map_cell,
};
use rowkit_codec::tracestore::decode_ops_gob;
use rowkit_codec::tracestore::keys::ops_row_name;

use super::TraceStoreError;
use super::state::{CachedOps, DigestCache, TraceStoreState};
use crate::{ReadRowRequest, ReadRowsRequest};

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

/// A point read of row `row_key` of the state's table.
pub(crate) fn read_row_request(
    state: &TraceStoreState,
    row_key: Vec<u8>,
    filter: RowFilter,
) -> ReadRowRequest {
    ReadRowRequest {
        table: state.table.clone(),
        app_profile_id: state.app_profile_id.clone(),
        row_key,
        filter: Some(filter),
    }
}

/// `ReadRow(":ts:o:<tk>:", Chain(LatestN(1), Family("O")))`, a point read.
pub(crate) fn ops_read_request(state: &TraceStoreState, tile_key: i32) -> ReadRowRequest {
    read_row_request(
        state,
        ops_row_name(tile_key),
        RowFilter::Chain(alloc::vec![latest(), family(FAMILY_OPS)]),
    )
}

/// Decodes the answer of an OPS read (no row -> `None`) and caches what it found.
pub(crate) fn take_ops_read(
    state: &mut TraceStoreState,
    tile_key: i32,
    row: Option<&Row>,
) -> Result<Option<CachedOps>, TraceStoreError> {
    let Some(row) = row else {
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
