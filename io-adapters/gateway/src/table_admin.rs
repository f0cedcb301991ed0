//! The table admin calls in Google's JSON shapes ([`rowkit_rest::admin`]): CreateTable,
//! ListTables, GetTable, DeleteTable and ModifyColumnFamilies over the store's schema calls,
//! after the same token and `Host` checks as the data calls (done by the caller), with the same
//! content type and body limit. The store validates table ids, family names and GC rules; the
//! family checks of ModifyColumnFamilies are shared with the gRPC server
//! (`rowkit_serving::modify_families`).

use axum::body::Body;
use axum::http::{HeaderMap, Method as HttpMethod, StatusCode, Uri};
use axum::response::Response;
use rowkit_rest::TableName;
use rowkit_rest::admin::{self, AdminPath, TableView};
use rowkit_statemachines::{Code, StoreError};

use crate::AppState;
use crate::api::{ApiError, check_content_type, json_response, parse_query, read_body};
use crate::serving;

/// Answers one admin call on `path`.
pub(crate) async fn call(
    state: &AppState,
    path: AdminPath,
    http_method: &HttpMethod,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let query = parse_query(uri)?;
    let view = match query.view.as_deref() {
        Some(v) => TableView::parse(v).map_err(StoreError::from)?,
        None => None,
    };
    let store = state.store.clone();
    let answer = match (path, http_method.clone()) {
        (AdminPath::Tables { project, instance }, HttpMethod::POST) => {
            check_content_type(headers)?;
            let bytes = read_body(body, headers, state.max_body_bytes).await?;
            let create = admin::decode_create_table(&project, &instance, &bytes)
                .map_err(StoreError::from)?;
            let name = TableName::new(project, instance, create.table_id.as_str());
            let families = serving::blocking(move || {
                store.create_table_with_splits(
                    &create.table_id,
                    &create.families,
                    &create.initial_splits,
                )?;
                store.families(&create.table_id)
            })
            .await?;
            admin::encode_table(&admin::table_to_json(&name, &families, TableView::Schema))
        }
        (AdminPath::Tables { project, instance }, HttpMethod::GET) => {
            let view = view.unwrap_or(TableView::NameOnly);
            let tables = serving::blocking(move || {
                let mut tables = Vec::new();
                for id in store.list_tables()? {
                    let name = TableName::new(project.as_str(), instance.as_str(), id.as_str());
                    if !view.shows_families() {
                        // Listed, so it exists: no read per table.
                        tables.push(admin::table_to_json(&name, &[], view));
                        continue;
                    }
                    match store.families(&id) {
                        Ok(families) => tables.push(admin::table_to_json(&name, &families, view)),
                        // Deleted since it was listed.
                        Err(e) if e.code == Code::NotFound => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(tables)
            })
            .await?;
            admin::encode_list_tables(tables)
        }
        (AdminPath::Tables { .. }, method) => {
            return Err(ApiError::wrong_method(&method, "tables", "GET, POST"));
        }
        (AdminPath::Table(name), HttpMethod::GET) => {
            let view = view.unwrap_or(TableView::Schema);
            let id = name.table.clone();
            // Read even when the view shows no family: the table must exist.
            let families = serving::blocking(move || store.families(&id)).await?;
            admin::encode_table(&admin::table_to_json(&name, &families, view))
        }
        (AdminPath::Table(name), HttpMethod::DELETE) => {
            serving::blocking(move || store.delete_table(&name.table)).await?;
            Ok(b"{}".to_vec())
        }
        (AdminPath::Table(_), method) => {
            return Err(ApiError::wrong_method(&method, "a table", "GET, DELETE"));
        }
        (AdminPath::ModifyColumnFamilies(name), HttpMethod::POST) => {
            check_content_type(headers)?;
            let bytes = read_body(body, headers, state.max_body_bytes).await?;
            let changes = admin::decode_modify_families(&name, &bytes).map_err(StoreError::from)?;
            let id = name.table.clone();
            let families =
                serving::blocking(move || serving::modify_families(store.as_ref(), &id, &changes))
                    .await?;
            admin::encode_table(&admin::table_to_json(&name, &families, TableView::Schema))
        }
        (AdminPath::ModifyColumnFamilies(_), method) => {
            return Err(ApiError::wrong_method(
                &method,
                "modifyColumnFamilies",
                "POST",
            ));
        }
    };
    let body = answer.map_err(|e| ApiError::new(Code::Internal, e.to_string()))?;
    Ok(json_response(StatusCode::OK, body))
}
