//! `google.bigtable.admin.v2.BigtableTableAdmin`: the table calls clients and `cbt` use, over
//! the store's schema calls. Table data is only ever touched through the store's evaluator
//! (DropRowRange deletes rows with ordinary MutateRows requests; a dropped family goes through
//! the store's `drop_family`). Tables are answered in the view asked for, their replication
//! state as the instance's one cluster's (`crate::instance`); consistency tokens come from
//! `crate::consistency`; the IAM policy calls answer as the instance admin's do.

use std::collections::HashMap;

use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use googleapis_tonic_google_bigtable_admin_v2::google::iam::v1 as iam;
use rowkit_codec::model::{
    ColumnFamily, FamilyChange, Mutation, RowFilter, RowRange, RowSet, Timestamp,
};
use rowkit_proto as convert;
use rowkit_serving as serving;
use rowkit_statemachines::readrows::ChunkMerger;
use rowkit_statemachines::{
    Code, MutateRowsEntry, MutateRowsRequest, ReadRowsRequest, Request, Response, StoreError,
};
use rowkit_store::{Reply, Store};
use tonic::{Request as GrpcRequest, Response as GrpcResponse, Status};

use crate::consistency::ConsistencyTokens;
use crate::generated::admin::bigtable_table_admin_server::BigtableTableAdmin;
use crate::names::Instance;
use crate::wire::{ListTablesReply, TableReply};
use crate::{Shared, instance, names};

/// Rows deleted per MutateRows request by DropRowRange.
const DROP_PAGE_ROWS: i64 = 1000;

/// The table admin service over the shared store.
pub(crate) struct AdminService {
    shared: Shared,
    tokens: ConsistencyTokens,
}

impl AdminService {
    /// The service over `shared`, issuing tokens under a fresh key.
    pub(crate) fn new(shared: Shared) -> AdminService {
        AdminService {
            shared,
            tokens: ConsistencyTokens::new(),
        }
    }
}

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

/// What parts of a table a view shows.
struct ViewParts {
    schema: bool,
    replication: bool,
    encryption: bool,
}

impl ViewParts {
    /// `view` as asked (an unknown value as the default), `default` when unspecified.
    fn of(view: i32, default: admin::table::View) -> ViewParts {
        use admin::table::View;
        let view = match View::try_from(view).unwrap_or(View::Unspecified) {
            View::Unspecified => default,
            view => view,
        };
        ViewParts {
            schema: matches!(view, View::SchemaView | View::Full),
            replication: matches!(view, View::ReplicationView | View::Full),
            encryption: matches!(view, View::EncryptionView | View::Full),
        }
    }
}

/// The table's replication state: the instance's one cluster, always ready (and encrypted
/// with Google's default encryption, as every production table without a CMEK key).
fn cluster_states(at: &Instance, parts: &ViewParts) -> HashMap<String, admin::table::ClusterState> {
    let encryption_info = if parts.encryption {
        vec![admin::EncryptionInfo {
            encryption_type: admin::encryption_info::EncryptionType::GoogleDefaultEncryption as i32,
            ..Default::default()
        }]
    } else {
        Vec::new()
    };
    let state = admin::table::ClusterState {
        replication_state: if parts.replication {
            admin::table::cluster_state::ReplicationState::Ready as i32
        } else {
            admin::table::cluster_state::ReplicationState::StateNotKnown as i32
        },
        encryption_info,
    };
    HashMap::from([(instance::cluster_id(&at.instance), state)])
}

/// The table as an admin `Table` in the view `parts`; `NOT_FOUND` when it does not exist.
fn table_pb(
    store: &dyn Store,
    table: &str,
    at: &Instance,
    parts: &ViewParts,
) -> Result<admin::Table, StoreError> {
    // Read even when the view shows no family: the table must exist.
    let families = store.families(table)?;
    Ok(table_view(table, &families, at, parts))
}

/// Table `table` of instance `at` with `families` (used only by views that show them) in the
/// view `parts`.
fn table_view(
    table: &str,
    families: &[ColumnFamily],
    at: &Instance,
    parts: &ViewParts,
) -> admin::Table {
    let name = format!("{}/tables/{table}", at.name());
    let mut pb = if parts.schema {
        convert::table_to_pb(name, families)
    } else {
        admin::Table {
            name,
            ..Default::default()
        }
    };
    if parts.replication || parts.encryption {
        pb.cluster_states = cluster_states(at, parts);
    }
    pb
}

/// The schema view every call that changes a table answers with.
const SCHEMA: ViewParts = ViewParts {
    schema: true,
    replication: false,
    encryption: false,
};

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
        let keys = page_keys(store, read, now)?;
        if keys.is_empty() {
            return Ok(());
        }
        let entries = keys
            .into_iter()
            .map(|row_key| MutateRowsEntry {
                row_key,
                mutations: vec![Mutation::DeleteFromRow],
            })
            .collect();
        let request = Request::MutateRows(MutateRowsRequest {
            table: table.to_string(),
            entries,
            ..Default::default()
        });
        let reply = store.execute(request, now)?;
        if let Reply::Stream(parts) = reply {
            for part in parts {
                if let Response::MutateRowsPart(p) = part? {
                    for entry in p.entries {
                        entry.result?;
                    }
                }
            }
        }
    }
}

/// The row keys one read selects, in one attempt: a failure fails the DropRowRange (which the
/// client retries as any admin call), so no retry loop runs here. An in-process store answers
/// with whole rows, a network store with chunks, which the merger joins.
fn page_keys(
    store: &dyn Store,
    read: ReadRowsRequest,
    now: Timestamp,
) -> Result<Vec<Vec<u8>>, StoreError> {
    let mut merger = ChunkMerger::new(read.reversed, read.rows_limit);
    let parts = match store.execute_local(Request::ReadRows(read), now)? {
        Reply::Stream(parts) => parts,
        Reply::Unary(r) => Box::new(std::iter::once(Ok(r))),
    };
    for part in parts {
        match part? {
            Response::Rows(rows) => merger.push_rows(rows)?,
            Response::ReadRowsPart(r) => merger.push_response(r)?,
            Response::StreamEnd => break,
            other => {
                return Err(StoreError::new(
                    Code::Internal,
                    format!("the store answered a read with {other:?}"),
                ));
            }
        }
    }
    merger.end_of_stream()?;
    Ok(std::iter::from_fn(|| merger.pop_row())
        .map(|row| row.key)
        .collect())
}

#[tonic::async_trait]
impl BigtableTableAdmin for AdminService {
    async fn create_table(
        &self,
        request: GrpcRequest<admin::CreateTableRequest>,
    ) -> Result<GrpcResponse<TableReply>, Status> {
        let r = request.into_inner();
        let at = names::instance(&r.parent).map_err(status)?;
        let mut families = Vec::new();
        if let Some(table) = &r.table {
            for (name, family) in &table.column_families {
                families.push(family_from_pb(name, family)?);
            }
        }
        let splits: Vec<Vec<u8>> = r.initial_splits.into_iter().map(|s| s.key).collect();
        let store = self.shared.store.clone();
        let table = serving::blocking(move || {
            store.create_table_with_splits(&r.table_id, &families, &splits)?;
            table_pb(store.as_ref(), &r.table_id, &at, &SCHEMA)
        })
        .await
        .map_err(status)?;
        Ok(GrpcResponse::new(TableReply(table)))
    }

    async fn list_tables(
        &self,
        request: GrpcRequest<admin::ListTablesRequest>,
    ) -> Result<GrpcResponse<ListTablesReply>, Status> {
        let r = request.into_inner();
        let at = names::instance(&r.parent).map_err(status)?;
        let parts = ViewParts::of(r.view, admin::table::View::NameOnly);
        let store = self.shared.store.clone();
        let tables = serving::blocking(move || {
            let mut tables = Vec::new();
            for id in store.list_tables()? {
                if !parts.schema {
                    // Listed, so it exists: no read per table (a remote store's round trip).
                    tables.push(table_view(&id, &[], &at, &parts));
                    continue;
                }
                match table_pb(store.as_ref(), &id, &at, &parts) {
                    Ok(table) => tables.push(table),
                    // Deleted since it was listed.
                    Err(e) if e.code == Code::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(tables)
        })
        .await
        .map_err(status)?;
        Ok(GrpcResponse::new(ListTablesReply(
            admin::ListTablesResponse {
                tables,
                next_page_token: String::new(),
            },
        )))
    }

    async fn get_table(
        &self,
        request: GrpcRequest<admin::GetTableRequest>,
    ) -> Result<GrpcResponse<TableReply>, Status> {
        let r = request.into_inner();
        let (at, id) = names::table(&r.name).map_err(status)?;
        let parts = ViewParts::of(r.view, admin::table::View::SchemaView);
        let store = self.shared.store.clone();
        let table = serving::blocking(move || table_pb(store.as_ref(), &id, &at, &parts))
            .await
            .map_err(status)?;
        Ok(GrpcResponse::new(TableReply(table)))
    }

    async fn delete_table(
        &self,
        request: GrpcRequest<admin::DeleteTableRequest>,
    ) -> Result<GrpcResponse<()>, Status> {
        let id = names::table_id(&request.get_ref().name).map_err(status)?;
        let store = self.shared.store.clone();
        serving::blocking(move || store.delete_table(&id))
            .await
            .map_err(status)?;
        Ok(GrpcResponse::new(()))
    }

    async fn modify_column_families(
        &self,
        request: GrpcRequest<admin::ModifyColumnFamiliesRequest>,
    ) -> Result<GrpcResponse<TableReply>, Status> {
        use admin::modify_column_families_request::modification::Mod;
        let r = request.into_inner();
        let (at, id) = names::table(&r.name).map_err(status)?;
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
        let store = self.shared.store.clone();
        let table = serving::blocking(move || {
            let families = serving::modify_families(store.as_ref(), &id, &changes)?;
            Ok(table_view(&id, &families, &at, &SCHEMA))
        })
        .await
        .map_err(status)?;
        Ok(GrpcResponse::new(TableReply(table)))
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
        let store = self.shared.store.clone();
        let now = self.shared.clock.now();
        serving::blocking(move || {
            // The table must exist even when it has no row to drop.
            store.families(&id)?;
            drop_rows(store.as_ref(), &id, range, now)
        })
        .await
        .map_err(status)?;
        Ok(GrpcResponse::new(()))
    }

    async fn generate_consistency_token(
        &self,
        request: GrpcRequest<admin::GenerateConsistencyTokenRequest>,
    ) -> Result<GrpcResponse<admin::GenerateConsistencyTokenResponse>, Status> {
        let id = names::table_id(&request.get_ref().name).map_err(status)?;
        self.existing(&id).await?;
        let consistency_token = self.tokens.issue(&id, self.shared.clock.now().0);
        Ok(GrpcResponse::new(admin::GenerateConsistencyTokenResponse {
            consistency_token,
        }))
    }

    async fn check_consistency(
        &self,
        request: GrpcRequest<admin::CheckConsistencyRequest>,
    ) -> Result<GrpcResponse<admin::CheckConsistencyResponse>, Status> {
        let r = request.into_inner();
        let id = names::table_id(&r.name).map_err(status)?;
        self.existing(&id).await?;
        if !self.tokens.recognises(&id, &r.consistency_token) {
            return Err(invalid(format!(
                "consistency token {:?} was not issued for table {:?}",
                r.consistency_token, r.name
            )));
        }
        // One replica: whatever was acknowledged before the token is everywhere.
        Ok(GrpcResponse::new(admin::CheckConsistencyResponse {
            consistent: true,
        }))
    }

    async fn get_iam_policy(
        &self,
        request: GrpcRequest<iam::GetIamPolicyRequest>,
    ) -> Result<GrpcResponse<iam::Policy>, Status> {
        Err(instance::iam_denied(
            &request.get_ref().resource,
            "getIamPolicy",
        ))
    }

    async fn set_iam_policy(
        &self,
        request: GrpcRequest<iam::SetIamPolicyRequest>,
    ) -> Result<GrpcResponse<iam::Policy>, Status> {
        Err(instance::iam_denied(
            &request.get_ref().resource,
            "setIamPolicy",
        ))
    }

    async fn test_iam_permissions(
        &self,
        request: GrpcRequest<iam::TestIamPermissionsRequest>,
    ) -> Result<GrpcResponse<iam::TestIamPermissionsResponse>, Status> {
        Ok(GrpcResponse::new(instance::granted(request.into_inner())))
    }
}

impl AdminService {
    /// `NOT_FOUND` unless table `id` exists.
    async fn existing(&self, id: &str) -> Result<(), Status> {
        let store = self.shared.store.clone();
        let id = id.to_string();
        serving::blocking(move || store.families(&id).map(|_| ()))
            .await
            .map_err(status)
    }
}
