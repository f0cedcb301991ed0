//! `google.bigtable.v2.Bigtable`: each call converted to a rowkit request, executed by the store
//! off the runtime (`rowkit_gateway::serving`), and its answer converted back.

use base64::Engine as _;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use prost::Message as _;
use rowkit_bigtable::convert::{self, ConvertError};
use rowkit_codec::model::Row;
use rowkit_gateway::serving::{self, Encode, Execution, StoreStream, StreamMsg};
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

/// ReadRows responses as production sends them: a row never spans two responses (Google's Go
/// client and `cbt` check that every response ends on a row boundary); values over
/// [`VALUE_CHUNK_BYTES`] are cut into chunks inside their row's response; small rows are packed
/// into one response until it carries [`RESPONSE_BYTES`] of values, and a row larger than that
/// is a response of its own (up to [`crate::MAX_MESSAGE_BYTES`]). Parts a store already cut
/// (a network store, a store's test chunking) and scan markers (`last_scanned_row_key`) are
/// sent as they are, after the rows packed before them.
#[derive(Default)]
struct ReadRowsPacker {
    /// Rows packed and not sent yet.
    packed: pb::ReadRowsResponse,
    /// Value bytes in `packed`.
    packed_bytes: usize,
}

impl ReadRowsPacker {
    /// Adds one row's chunks, first sending the packed rows into `out` if the row would take
    /// the response past [`RESPONSE_BYTES`], and the response itself once it reaches it.
    fn pack(&mut self, row: &Row, out: &mut Vec<pb::ReadRowsResponse>) {
        let row_bytes: usize = row.cells.iter().map(|c| c.value.len()).sum();
        if !self.packed.chunks.is_empty() && self.packed_bytes + row_bytes > RESPONSE_BYTES {
            self.flush(out);
        }
        self.packed.chunks.extend(
            row_chunks(row, Some(VALUE_CHUNK_BYTES))
                .into_iter()
                .map(convert::chunk_to_pb),
        );
        self.packed_bytes += row_bytes;
        if self.packed_bytes >= RESPONSE_BYTES {
            self.flush(out);
        }
    }

    fn flush(&mut self, out: &mut Vec<pb::ReadRowsResponse>) {
        if !self.packed.chunks.is_empty() {
            out.push(std::mem::take(&mut self.packed));
        }
        self.packed_bytes = 0;
    }
}

impl Encode<pb::ReadRowsResponse> for ReadRowsPacker {
    fn encode(&mut self, part: Response) -> Result<Vec<pb::ReadRowsResponse>, StoreError> {
        let mut out = Vec::new();
        match part {
            Response::Rows(rows) => {
                for row in &rows {
                    self.pack(row, &mut out);
                }
            }
            Response::ReadRowsPart(p) => {
                self.flush(&mut out);
                out.push(convert::read_rows_response_to_pb(p));
            }
            _ => return Err(unexpected("ReadRows")),
        }
        Ok(out)
    }

    fn finish(&mut self) -> Vec<pb::ReadRowsResponse> {
        let mut out = Vec::new();
        self.flush(&mut out);
        out
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
        Ok(self.stream(
            Request::ReadRows(read),
            Execution::Rows,
            ReadRowsPacker::default(),
        ))
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
        encode: impl Encode<T>,
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
}
