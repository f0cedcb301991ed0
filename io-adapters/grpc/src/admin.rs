//! `google.bigtable.admin.v2.BigtableTableAdmin`: the table calls clients and `cbt` use, over
//! the store's schema calls. Table data is only ever touched through the store's evaluator
//! (DropRowRange deletes rows with ordinary MutateRows requests; a dropped family goes through
//! the store's `drop_family`).

use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use rowkit_bigtable::convert;
use rowkit_codec::model::{ColumnFamily, Mutation, RowFilter, RowRange, RowSet, Timestamp};
use rowkit_embedded::Store;
use rowkit_gateway::serving;
use rowkit_statemachines::{
    Code, MutateRowsEntry, MutateRowsRequest, ReadRowsRequest, Request, StoreError,
};
use tonic::{Request as GrpcRequest, Response as GrpcResponse, Status};

use crate::generated::admin::bigtable_table_admin_server::BigtableTableAdmin;
use crate::{Shared, names};

/// One modification of a ModifyColumnFamilies request, checked.
enum FamilyChange {
    Create(ColumnFamily),
    Update(ColumnFamily),
    /// The family's name.
    Drop(String),
}

impl FamilyChange {
    /// The name of the family it changes.
    fn family(&self) -> &str {
        match self {
            FamilyChange::Create(f) | FamilyChange::Update(f) => &f.name,
            FamilyChange::Drop(name) => name,
        }
    }
}

/// Rows deleted per MutateRows request by DropRowRange.
const DROP_PAGE_ROWS: i64 = 1000;

/// The table admin service over the shared store.
pub(crate) struct AdminService(pub(crate) Shared);

fn status(e: StoreError) -> Status {
    convert::error_to_status(&e)
}

fn invalid(message: impl Into<String>) -> Status {
    status(StoreError::new(Code::InvalidArgument, message))
}

/// A family of a request (its GC rule converted); an unset rule keeps everything.
fn family_from_pb(name: &str, family: &admin::ColumnFamily) -> Result<ColumnFamily, Status> {
    let gc_rule = match &family.gc_rule {
        Some(rule) => convert::gc_rule_from_pb(rule).map_err(|e| status(e.into_request_error()))?,
        None => None,
    };
    Ok(ColumnFamily {
        name: name.to_string(),
        gc_rule,
    })
}

/// The table's schema as an admin `Table` named `name`.
fn table_pb(store: &dyn Store, table: &str, name: String) -> Result<admin::Table, StoreError> {
    Ok(convert::table_to_pb(name, &store.families(table)?))
}

/// Deletes every row of `range`, a page at a time, through ordinary requests: a key-only read
/// (first cell, value stripped) and a MutateRows of `DeleteFromRow`s. Not atomic, as in
/// production; rows written meanwhile may survive.
fn drop_rows(
    store: &dyn Store,
    table: &str,
    range: RowRange,
    now: Timestamp,
) -> Result<(), StoreError> {
    loop {
        let read = ReadRowsRequest {
            table: table.to_string(),
            rows: RowSet {
                row_keys: Vec::new(),
                row_ranges: vec![range.clone()],
            },
            filter: Some(RowFilter::Chain(vec![
                RowFilter::CellsPerRowLimit(1),
                RowFilter::StripValue,
            ])),
            rows_limit: DROP_PAGE_ROWS,
            ..Default::default()
        };
        let rows = rowkit_client::read_rows_blocking(store, read, now)?;
        if rows.is_empty() {
            return Ok(());
        }
        let entries = rows
            .into_iter()
            .map(|row| MutateRowsEntry {
                row_key: row.key,
                mutations: vec![Mutation::DeleteFromRow],
            })
            .collect();
        let request = Request::MutateRows(MutateRowsRequest {
            table: table.to_string(),
            entries,
            ..Default::default()
        });
        let reply = store.execute(request, now)?;
        if let rowkit_embedded::Reply::Stream(parts) = reply {
            for part in parts {
                if let rowkit_statemachines::Response::MutateRowsPart(p) = part? {
                    for entry in p.entries {
                        entry.result?;
                    }
                }
            }
        }
    }
}

#[tonic::async_trait]
impl BigtableTableAdmin for AdminService {
    async fn create_table(
        &self,
        request: GrpcRequest<admin::CreateTableRequest>,
    ) -> Result<GrpcResponse<admin::Table>, Status> {
        let r = request.into_inner();
        names::check_instance(&r.parent).map_err(status)?;
        let mut families = Vec::new();
        if let Some(table) = &r.table {
            for (name, family) in &table.column_families {
                families.push(family_from_pb(name, family)?);
            }
        }
        let splits: Vec<Vec<u8>> = r.initial_splits.into_iter().map(|s| s.key).collect();
        let store = self.0.store.clone();
        let name = format!("{}/tables/{}", r.parent, r.table_id);
        let table = serving::blocking(move || {
            store.create_table_with_splits(&r.table_id, &families, &splits)?;
            table_pb(store.as_ref(), &r.table_id, name)
        })
        .await
        .map_err(status)?;
        Ok(GrpcResponse::new(table))
    }

    async fn list_tables(
        &self,
        request: GrpcRequest<admin::ListTablesRequest>,
    ) -> Result<GrpcResponse<admin::ListTablesResponse>, Status> {
        let r = request.into_inner();
        names::check_instance(&r.parent).map_err(status)?;
        let store = self.0.store.clone();
        let ids = serving::blocking(move || store.list_tables())
            .await
            .map_err(status)?;
        let tables = ids
            .into_iter()
            .map(|id| admin::Table {
                name: format!("{}/tables/{id}", r.parent),
                ..Default::default()
            })
            .collect();
        Ok(GrpcResponse::new(admin::ListTablesResponse {
            tables,
            next_page_token: String::new(),
        }))
    }

    async fn get_table(
        &self,
        request: GrpcRequest<admin::GetTableRequest>,
    ) -> Result<GrpcResponse<admin::Table>, Status> {
        let r = request.into_inner();
        let id = names::table_id(&r.name).map_err(status)?;
        let store = self.0.store.clone();
        let table = serving::blocking(move || table_pb(store.as_ref(), &id, r.name))
            .await
            .map_err(status)?;
        Ok(GrpcResponse::new(table))
    }

    async fn delete_table(
        &self,
        request: GrpcRequest<admin::DeleteTableRequest>,
    ) -> Result<GrpcResponse<()>, Status> {
        let id = names::table_id(&request.get_ref().name).map_err(status)?;
        let store = self.0.store.clone();
        serving::blocking(move || store.delete_table(&id))
            .await
            .map_err(status)?;
        Ok(GrpcResponse::new(()))
    }

    async fn modify_column_families(
        &self,
        request: GrpcRequest<admin::ModifyColumnFamiliesRequest>,
    ) -> Result<GrpcResponse<admin::Table>, Status> {
        use admin::modify_column_families_request::modification::Mod;
        let r = request.into_inner();
        let id = names::table_id(&r.name).map_err(status)?;
        // Every modification is checked before any is applied.
        let mut changes = Vec::new();
        for m in &r.modifications {
            changes.push(match &m.r#mod {
                Some(Mod::Create(f)) => FamilyChange::Create(family_from_pb(&m.id, f)?),
                Some(Mod::Update(f)) => FamilyChange::Update(family_from_pb(&m.id, f)?),
                Some(Mod::Drop(true)) => FamilyChange::Drop(m.id.clone()),
                Some(Mod::Drop(false)) => {
                    return Err(invalid(format!(
                        "the modification of column family {:?} is a drop set to false",
                        m.id
                    )));
                }
                None => {
                    return Err(invalid(
                        "a column family modification has no create, update or drop",
                    ));
                }
            });
        }
        let store = self.0.store.clone();
        let table = serving::blocking(move || {
            let mut existing: Vec<String> =
                store.families(&id)?.into_iter().map(|f| f.name).collect();
            for change in &changes {
                let name = change.family();
                let exists = existing.iter().any(|f| f == name);
                match change {
                    FamilyChange::Create(_) if exists => {
                        return Err(StoreError::new(
                            Code::AlreadyExists,
                            format!("column family {name:?} already exists in table {id:?}"),
                        ));
                    }
                    FamilyChange::Update(_) | FamilyChange::Drop(_) if !exists => {
                        return Err(StoreError::new(
                            Code::NotFound,
                            format!("column family {name:?} not found in table {id:?}"),
                        ));
                    }
                    FamilyChange::Drop(_) => existing.retain(|f| f != name),
                    FamilyChange::Create(_) | FamilyChange::Update(_) => {
                        existing.push(name.to_string())
                    }
                }
            }
            for change in &changes {
                match change {
                    FamilyChange::Create(family) | FamilyChange::Update(family) => {
                        store.set_family(&id, family)?
                    }
                    FamilyChange::Drop(name) => store.drop_family(&id, name)?,
                }
            }
            table_pb(store.as_ref(), &id, r.name)
        })
        .await
        .map_err(status)?;
        Ok(GrpcResponse::new(table))
    }

    async fn drop_row_range(
        &self,
        request: GrpcRequest<admin::DropRowRangeRequest>,
    ) -> Result<GrpcResponse<()>, Status> {
        use admin::drop_row_range_request::Target;
        let r = request.into_inner();
        let id = names::table_id(&r.name).map_err(status)?;
        let range = match r.target {
            Some(Target::RowKeyPrefix(prefix)) if !prefix.is_empty() => RowRange::prefix(&prefix),
            Some(Target::DeleteAllDataFromTable(true)) => RowRange::all(),
            _ => {
                return Err(invalid(
                    "DropRowRange needs a non-empty row_key_prefix or delete_all_data_from_table = true",
                ));
            }
        };
        let store = self.0.store.clone();
        let now = self.0.clock.now();
        serving::blocking(move || {
            // The table must exist even when it has no row to drop.
            store.families(&id)?;
            drop_rows(store.as_ref(), &id, range, now)
        })
        .await
        .map_err(status)?;
        Ok(GrpcResponse::new(()))
    }
}
