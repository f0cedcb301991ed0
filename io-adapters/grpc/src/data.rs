//! `google.bigtable.v2.Bigtable`: each call converted to a rowkit request, executed by the store
//! off the runtime (`rowkit_gateway::serving`), and its answer converted back.

use base64::Engine as _;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use prost::Message as _;
use rowkit_bigtable::convert::{self, ConvertError};
use rowkit_gateway::serving::{self, Execution, StoreStream, StreamMsg};
use rowkit_statemachines::readrows::row_chunks;
use rowkit_statemachines::{Code, Request, Response, StoreError};
use tonic::{Request as GrpcRequest, Response as GrpcResponse, Status};

use crate::generated::bigtable::bigtable_server::Bigtable;
use crate::{RESPONSE_BYTES, Shared, VALUE_CHUNK_BYTES, names};

/// A server-streamed reply (the generated traits' `BoxStream`).
type ReplyStream<T> = tonic::codegen::BoxStream<T>;

/// The data service over the shared store.
pub(crate) struct DataService(pub(crate) Shared);

fn status(e: StoreError) -> Status {
    convert::error_to_status(&e)
}

fn bad_request(e: ConvertError) -> Status {
    status(e.into_request_error())
}

/// The table a data request addresses. Authorized and materialized views are out of scope
/// (`spec/bigtable.md` 1): `UNIMPLEMENTED`.
fn target_table(table_name: &str, views: &[&str]) -> Result<String, Status> {
    if views.iter().any(|v| !v.is_empty()) {
        return Err(status(StoreError::new(
            Code::Unimplemented,
            "authorized and materialized views are not supported by rowkit",
        )));
    }
    names::table_id(table_name).map_err(status)
}

/// Whether the client declared reverse-scan support: metadata `bigtable-features` = web-safe
/// base64 of a `FeatureFlags` message with `reverse_scans` (`spec/bigtable.md` 9.2).
fn supports_reverse_scans(metadata: &tonic::metadata::MetadataMap) -> bool {
    let Some(value) = metadata
        .get("bigtable-features")
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let trimmed = value.trim_end_matches('=');
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    engine
        .decode(trimmed)
        .ok()
        .and_then(|bytes| pb::FeatureFlags::decode(bytes.as_slice()).ok())
        .is_some_and(|flags| flags.reverse_scans)
}

/// Turns the serving channel into a gRPC response stream: parts, then OK or the error status;
/// a channel closed without either is `INTERNAL`.
fn reply_stream<T: Send + 'static>(rx: StoreStream<T>) -> ReplyStream<T> {
    Box::pin(futures_util::stream::unfold(Some(rx), |rx| async move {
        let mut rx = rx?;
        match rx.recv().await {
            Some(StreamMsg::Part(p)) => Some((Ok(p), Some(rx))),
            Some(StreamMsg::Failed(e)) => Some((Err(status(e)), None)),
            Some(StreamMsg::End) => None,
            None => Some((
                Err(Status::internal("the store task ended mid-stream")),
                None,
            )),
        }
    }))
}

fn unexpected(what: &str) -> StoreError {
    StoreError::new(
        Code::Internal,
        format!("the store answered {what} with another reply"),
    )
}

/// The wire messages of one ReadRows part: whole rows are cut as production does (values over
/// [`VALUE_CHUNK_BYTES`] split, a response closed after [`RESPONSE_BYTES`] of values, a row's
/// last chunk committing it); chunks a store already cut are passed on.
fn read_rows_messages(part: Response) -> Result<Vec<pb::ReadRowsResponse>, StoreError> {
    match part {
        Response::ReadRowsPart(p) => Ok(vec![convert::read_rows_response_to_pb(p)]),
        Response::Rows(rows) => {
            let mut messages = Vec::new();
            let mut current = pb::ReadRowsResponse::default();
            let mut bytes = 0;
            for row in rows {
                for chunk in row_chunks(&row, Some(VALUE_CHUNK_BYTES)) {
                    bytes += chunk.value.len();
                    current.chunks.push(convert::chunk_to_pb(chunk));
                    if bytes >= RESPONSE_BYTES {
                        messages.push(std::mem::take(&mut current));
                        bytes = 0;
                    }
                }
            }
            if !current.chunks.is_empty() {
                messages.push(current);
            }
            Ok(messages)
        }
        _ => Err(unexpected("ReadRows")),
    }
}

#[tonic::async_trait]
impl Bigtable for DataService {
    async fn read_rows(
        &self,
        request: GrpcRequest<pb::ReadRowsRequest>,
    ) -> Result<GrpcResponse<ReplyStream<pb::ReadRowsResponse>>, Status> {
        let reverse_ok = supports_reverse_scans(request.metadata());
        let r = request.into_inner();
        let table = target_table(
            &r.table_name,
            &[&r.authorized_view_name, &r.materialized_view_name],
        )?;
        if r.reversed && !reverse_ok {
            return Err(Status::unimplemented(
                "Client doesn't support reverse scans yet",
            ));
        }
        let read = convert::read_rows_request_from_pb(r, table).map_err(bad_request)?;
        Ok(self.stream(Request::ReadRows(read), Execution::Rows, read_rows_messages))
    }

    async fn sample_row_keys(
        &self,
        request: GrpcRequest<pb::SampleRowKeysRequest>,
    ) -> Result<GrpcResponse<ReplyStream<pb::SampleRowKeysResponse>>, Status> {
        let r = request.into_inner();
        let table = target_table(
            &r.table_name,
            &[&r.authorized_view_name, &r.materialized_view_name],
        )?;
        let sample = rowkit_statemachines::SampleRowKeysRequest {
            table,
            app_profile_id: r.app_profile_id,
        };
        Ok(self.stream(
            Request::SampleRowKeys(sample),
            Execution::Wire,
            |part| match part {
                Response::SampleRowKeysPart(p) => Ok(vec![convert::sample_to_pb(p)]),
                _ => Err(unexpected("SampleRowKeys")),
            },
        ))
    }

    async fn mutate_row(
        &self,
        request: GrpcRequest<pb::MutateRowRequest>,
    ) -> Result<GrpcResponse<pb::MutateRowResponse>, Status> {
        let r = request.into_inner();
        let table = target_table(&r.table_name, &[&r.authorized_view_name])?;
        let req = convert::mutate_row_request_from_pb(r, table).map_err(bad_request)?;
        match self.unary(Request::MutateRow(req)).await? {
            Response::MutateRow => Ok(GrpcResponse::new(pb::MutateRowResponse {})),
            _ => Err(status(unexpected("MutateRow"))),
        }
    }

    async fn mutate_rows(
        &self,
        request: GrpcRequest<pb::MutateRowsRequest>,
    ) -> Result<GrpcResponse<ReplyStream<pb::MutateRowsResponse>>, Status> {
        let r = request.into_inner();
        let table = target_table(&r.table_name, &[&r.authorized_view_name])?;
        let req = convert::mutate_rows_request_from_pb(r, table).map_err(bad_request)?;
        Ok(self.stream(
            Request::MutateRows(req),
            Execution::Wire,
            |part| match part {
                Response::MutateRowsPart(p) => Ok(vec![convert::mutate_rows_response_to_pb(&p)]),
                _ => Err(unexpected("MutateRows")),
            },
        ))
    }

    async fn check_and_mutate_row(
        &self,
        request: GrpcRequest<pb::CheckAndMutateRowRequest>,
    ) -> Result<GrpcResponse<pb::CheckAndMutateRowResponse>, Status> {
        let r = request.into_inner();
        let table = target_table(&r.table_name, &[&r.authorized_view_name])?;
        let req = convert::check_and_mutate_request_from_pb(r, table).map_err(bad_request)?;
        match self.unary(Request::CheckAndMutateRow(req)).await? {
            Response::CheckAndMutateRow { predicate_matched } => {
                Ok(GrpcResponse::new(pb::CheckAndMutateRowResponse {
                    predicate_matched,
                }))
            }
            _ => Err(status(unexpected("CheckAndMutateRow"))),
        }
    }

    async fn ping_and_warm(
        &self,
        request: GrpcRequest<pb::PingAndWarmRequest>,
    ) -> Result<GrpcResponse<pb::PingAndWarmResponse>, Status> {
        names::check_instance(&request.get_ref().name).map_err(status)?;
        Ok(GrpcResponse::new(pb::PingAndWarmResponse {}))
    }

    async fn read_modify_write_row(
        &self,
        request: GrpcRequest<pb::ReadModifyWriteRowRequest>,
    ) -> Result<GrpcResponse<pb::ReadModifyWriteRowResponse>, Status> {
        let r = request.into_inner();
        let table = target_table(&r.table_name, &[&r.authorized_view_name])?;
        let req = convert::read_modify_write_request_from_pb(r, table).map_err(bad_request)?;
        match self.unary(Request::ReadModifyWriteRow(req)).await? {
            Response::ReadModifyWriteRow(row) => {
                Ok(GrpcResponse::new(pb::ReadModifyWriteRowResponse {
                    row: Some(convert::row_to_pb(row)),
                }))
            }
            _ => Err(status(unexpected("ReadModifyWriteRow"))),
        }
    }
}

impl DataService {
    /// Runs a streamed request; `encode` makes each store part the wire messages it becomes.
    fn stream<T: Send + 'static>(
        &self,
        request: Request,
        execution: Execution,
        encode: impl FnMut(Response) -> Result<Vec<T>, StoreError> + Send + 'static,
    ) -> GrpcResponse<ReplyStream<T>> {
        let now = self.0.clock.now();
        let rx = serving::stream(self.0.store.clone(), request, now, execution, encode);
        GrpcResponse::new(reply_stream(rx))
    }

    async fn unary(&self, request: Request) -> Result<Response, Status> {
        let now = self.0.clock.now();
        serving::unary(self.0.store.clone(), request, now)
            .await
            .map_err(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowkit_codec::model::{Cell, Row, Timestamp};
    use std::sync::Arc;

    #[test]
    fn reverse_scan_flag() {
        let mut md = tonic::metadata::MetadataMap::new();
        assert!(!supports_reverse_scans(&md));
        md.insert("bigtable-features", "CAE=".parse().unwrap());
        assert!(supports_reverse_scans(&md));
        md.insert("bigtable-features", "CAEgAQ".parse().unwrap());
        assert!(supports_reverse_scans(&md));
        md.insert("bigtable-features", "IAE=".parse().unwrap());
        assert!(!supports_reverse_scans(&md));
    }

    #[test]
    fn big_rows_spread_over_responses() {
        let cell = |q: &str, n: usize| Cell {
            family: "f".into(),
            qualifier: q.as_bytes().to_vec(),
            timestamp: Timestamp(1000),
            value: vec![7; n],
            labels: Vec::new(),
        };
        let big = Row {
            key: b"a".to_vec(),
            cells: vec![cell("x", VALUE_CHUNK_BYTES * 2 + 5), cell("y", 3)],
        };
        let small = Row {
            key: b"b".to_vec(),
            cells: vec![cell("x", 3)],
        };
        let messages =
            read_rows_messages(Response::Rows(vec![Arc::new(big), Arc::new(small)])).unwrap();
        // 1 MiB, 1 MiB, then the 5-byte tail, the small cell and the second row.
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[0].chunks[0].value_size as usize,
            VALUE_CHUNK_BYTES * 2 + 5
        );
        assert_eq!(messages[2].chunks.len(), 3);
        let merged: Vec<u8> = messages
            .iter()
            .flat_map(|m| &m.chunks)
            .filter(|c| c.row_key.is_empty() || c.row_key == b"a")
            .take(3)
            .flat_map(|c| c.value.clone())
            .collect();
        assert_eq!(merged.len(), VALUE_CHUNK_BYTES * 2 + 5);
    }
}
