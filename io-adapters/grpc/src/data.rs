//! `google.bigtable.v2.Bigtable`: each call converted to a rowkit request, executed by the store
//! off the runtime (`rowkit_serving`), and its answer converted back.

use base64::Engine as _;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use prost::Message as _;
use rowkit_codec::model::Row;
use rowkit_proto::{self as convert, ConvertError};
use rowkit_serving::{self as serving, Encode, Execution, StoreStream, StreamMsg};
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

/// What the client declared it supports: metadata `bigtable-features` = web-safe base64 of a
/// `FeatureFlags` message (`spec/bigtable.md` 9.2); none when missing or unreadable.
fn feature_flags(metadata: &tonic::metadata::MetadataMap) -> pb::FeatureFlags {
    let Some(value) = metadata
        .get("bigtable-features")
        .and_then(|v| v.to_str().ok())
    else {
        return pb::FeatureFlags::default();
    };
    let trimmed = value.trim_end_matches('=');
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    engine
        .decode(trimmed)
        .ok()
        .and_then(|bytes| pb::FeatureFlags::decode(bytes.as_slice()).ok())
        .unwrap_or_default()
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

/// gRPC's default limit on a received message: what a client that does not raise it takes.
const DEFAULT_RECEIVE_LIMIT: usize = 4 << 20;

/// The encoded length of a `ReadRowsResponse` holding just `chunks`.
fn response_len(chunks: &[pb::read_rows_response::CellChunk]) -> usize {
    chunks
        .iter()
        .map(|c| {
            let len = c.encoded_len();
            1 + prost::length_delimiter_len(len) + len
        })
        .sum()
}

/// Whether the client checks that every ReadRows response ends on a row boundary: Google's Go
/// client (and `cbt`, built on it) does, and says so in `x-goog-api-client` (`gl-go/…`); the
/// others (Python, Node, Java, rowkit's) merge a row over several responses.
fn checks_row_boundaries(metadata: &tonic::metadata::MetadataMap) -> bool {
    metadata
        .get_all("x-goog-api-client")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split_whitespace().any(|part| part.starts_with("gl-go/")))
}

/// ReadRows responses as production sends them: a row never spans two responses (Google's Go
/// client and `cbt` check that every response ends on a row boundary); values over
/// [`VALUE_CHUNK_BYTES`] are cut into chunks inside their row's response; small rows are packed
/// into one response until it carries [`RESPONSE_BYTES`] of values, and a row larger than that
/// is a response of its own (up to [`crate::MAX_MESSAGE_BYTES`]). One exception: a row whose
/// response would pass gRPC's default receive limit ([`DEFAULT_RECEIVE_LIMIT`]) is spread over
/// responses of about [`RESPONSE_BYTES`] for a client that does not check row boundaries per
/// response, since such a client may keep that limit (Python's data client does over
/// `BIGTABLE_EMULATOR_HOST`) and merges a row over several responses anyway; the Go client gets
/// it whole, as from production. Parts a store already cut
/// (a network store, a store's test chunking) are sent as they are, after the rows packed
/// before them; so are scan markers (`last_scanned_row_key`), but only to a client that
/// declared `last_scanned_row_responses`, as production does (`feature_flags.proto`). A marker
/// sends the rows packed before it either way, so a long filtered-out stretch holds none back.
#[derive(Default)]
struct ReadRowsPacker {
    /// The client takes responses that carry only `last_scanned_row_key`.
    scan_markers: bool,
    /// The client checks that every response ends on a row boundary
    /// ([`checks_row_boundaries`]): a row is one response whatever its size.
    whole_rows: bool,
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
        let chunks: Vec<pb::read_rows_response::CellChunk> =
            row_chunks(row, Some(VALUE_CHUNK_BYTES))
                .into_iter()
                .map(convert::chunk_to_pb)
                .collect();
        if !self.whole_rows && response_len(&chunks) > DEFAULT_RECEIVE_LIMIT {
            // The row alone passes the limit (so nothing was packed before it): spread it.
            for chunk in chunks {
                self.packed_bytes += chunk.value.len();
                self.packed.chunks.push(chunk);
                if self.packed_bytes >= RESPONSE_BYTES {
                    self.flush(out);
                }
            }
            self.flush(out);
            return;
        }
        self.packed.chunks.extend(chunks);
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
            Response::ReadRowsPart(mut p) => {
                // Rows packed before any part go first, before a scan marker too: a long
                // filtered-out stretch does not hold them back, whether or not the marker
                // is sent.
                self.flush(&mut out);
                if !self.scan_markers {
                    if p.chunks.is_empty() {
                        return Ok(out);
                    }
                    p.last_scanned_row_key.clear();
                }
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
        let flags = feature_flags(request.metadata());
        let whole_rows = checks_row_boundaries(request.metadata());
        let reverse_ok = flags.reverse_scans;
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
            ReadRowsPacker {
                scan_markers: flags.last_scanned_row_responses,
                whole_rows,
                ..ReadRowsPacker::default()
            },
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
        assert!(!feature_flags(&md).reverse_scans);
        md.insert("bigtable-features", "CAE=".parse().unwrap());
        assert!(feature_flags(&md).reverse_scans);
        md.insert("bigtable-features", "CAEgAQ".parse().unwrap());
        assert!(feature_flags(&md).reverse_scans);
        md.insert("bigtable-features", "IAE=".parse().unwrap());
        assert!(!feature_flags(&md).reverse_scans);
        assert!(feature_flags(&md).last_scanned_row_responses);
    }

    fn cell(q: &str, n: usize) -> Cell {
        Cell {
            family: "f".into(),
            qualifier: q.as_bytes().to_vec(),
            timestamp: Timestamp(1000),
            value: vec![7; n],
            labels: Vec::new(),
        }
    }

    fn row(key: &str, cells: Vec<Cell>) -> Arc<Row> {
        Arc::new(Row {
            key: key.as_bytes().to_vec(),
            cells,
        })
    }

    /// Feeds each part to a packer, then finishes it: the responses a client gets.
    fn pack(parts: Vec<Response>) -> Vec<pb::ReadRowsResponse> {
        pack_for(true, parts)
    }

    fn pack_for(scan_markers: bool, parts: Vec<Response>) -> Vec<pb::ReadRowsResponse> {
        pack_with(
            ReadRowsPacker {
                scan_markers,
                ..ReadRowsPacker::default()
            },
            parts,
        )
    }

    fn pack_with(mut packer: ReadRowsPacker, parts: Vec<Response>) -> Vec<pb::ReadRowsResponse> {
        let mut out = Vec::new();
        for part in parts {
            out.extend(packer.encode(part).unwrap());
        }
        out.extend(packer.finish());
        out
    }

    /// The row keys each response holds, in order: each row's key is on its first chunk.
    fn keys_per_response(responses: &[pb::ReadRowsResponse]) -> Vec<Vec<String>> {
        responses
            .iter()
            .map(|r| {
                r.chunks
                    .iter()
                    .filter(|c| !c.row_key.is_empty())
                    .map(|c| String::from_utf8(c.row_key.clone()).unwrap())
                    .collect()
            })
            .collect()
    }

    /// Every response ends with a committing chunk (no row left open), as the Go client's
    /// `chunkReader.Close` after each response demands.
    fn assert_rows_whole(responses: &[pb::ReadRowsResponse]) {
        for (i, r) in responses.iter().enumerate() {
            if let Some(last) = r.chunks.last() {
                assert!(
                    matches!(
                        last.row_status,
                        Some(pb::read_rows_response::cell_chunk::RowStatus::CommitRow(
                            true
                        ))
                    ),
                    "response {i} ends inside a row"
                );
            }
        }
    }

    #[test]
    fn a_big_value_is_chunked_inside_its_rows_response() {
        let big = row("a", vec![cell("x", (1 << 21) + 5), cell("y", 3)]);
        let small = row("b", vec![cell("x", 3)]);
        let responses = pack(vec![Response::Rows(vec![big]), Response::Rows(vec![small])]);
        assert_rows_whole(&responses);
        assert_eq!(keys_per_response(&responses), [vec!["a"], vec!["b"]]);
        // 2 MiB + 5 in three chunks (1 MiB, 1 MiB, 5), the first announcing the whole size.
        let a = &responses[0].chunks;
        assert_eq!(a.len(), 4);
        assert_eq!(a[0].value_size, (1 << 21) + 5);
        assert_eq!(
            a.iter().take(3).map(|c| c.value.len()).collect::<Vec<_>>(),
            [1 << 20, 1 << 20, 5]
        );
        assert_eq!(a[2].value_size, 0);
    }

    #[test]
    fn the_go_client_is_told_apart_by_its_api_client_header() {
        let mut md = tonic::metadata::MetadataMap::new();
        assert!(!checks_row_boundaries(&md));
        md.insert(
            "x-goog-api-client",
            "gl-python/3.11.7 grpc/1.71.0 gax/2.24.2 gapic/2.50.2 gccl/2.50.2"
                .parse()
                .unwrap(),
        );
        assert!(!checks_row_boundaries(&md));
        md.insert(
            "x-goog-api-client",
            "gl-go/1.19.8 gccl/20200915 grpc/1.27.1".parse().unwrap(),
        );
        assert!(checks_row_boundaries(&md));
    }

    /// A 5 MiB row: whole for a client that checks row boundaries (the Go client), spread
    /// over responses under gRPC's default receive limit for the others; the rows around it
    /// stay whole either way, and every response stays under the limit for the others.
    #[test]
    fn a_row_over_the_default_receive_limit_is_spread_only_for_clients_that_merge_across() {
        let parts = || {
            vec![
                Response::Rows(vec![row("a", vec![cell("x", 10)])]),
                Response::Rows(vec![row("big", vec![cell("x", 5 << 20), cell("y", 7)])]),
                Response::Rows(vec![row("z", vec![cell("x", 10)])]),
            ]
        };
        let go = pack_with(
            ReadRowsPacker {
                whole_rows: true,
                ..ReadRowsPacker::default()
            },
            parts(),
        );
        assert_rows_whole(&go);
        assert_eq!(keys_per_response(&go), [vec!["a"], vec!["big"], vec!["z"]]);

        let others = pack(parts());
        assert!(others.len() >= 6, "{} responses", others.len());
        for r in &others {
            assert!(r.encoded_len() <= DEFAULT_RECEIVE_LIMIT);
        }
        assert_eq!(keys_per_response(&others[..1]), [vec!["a"]]);
        assert_eq!(keys_per_response(&others[others.len() - 1..]), [vec!["z"]]);
        let big: Vec<_> = others[1..others.len() - 1]
            .iter()
            .flat_map(|r| &r.chunks)
            .collect();
        let value: usize = big.iter().map(|c| c.value.len()).sum();
        assert_eq!(value, (5 << 20) + 7);
        assert_eq!(big.iter().filter(|c| !c.row_key.is_empty()).count(), 1);
        assert!(matches!(
            big.last().unwrap().row_status,
            Some(pb::read_rows_response::cell_chunk::RowStatus::CommitRow(
                true
            ))
        ));
    }

    #[test]
    fn a_wide_row_is_one_response() {
        let cells = (0..1500).map(|i| cell(&format!("q{i:04}"), 1024)).collect();
        let responses = pack(vec![Response::Rows(vec![row("wide", cells)])]);
        assert_eq!(responses.len(), 1);
        assert_eq!(responses[0].chunks.len(), 1500);
        assert_rows_whole(&responses);
    }

    #[test]
    fn small_rows_are_packed_up_to_about_a_mebibyte() {
        // 100 rows of 100 KiB: 10 fit under 1 MiB, the 11th would pass it.
        let parts = (0..100)
            .map(|i| Response::Rows(vec![row(&format!("r{i:03}"), vec![cell("q", 100 << 10)])]))
            .collect();
        let responses = pack(parts);
        assert_rows_whole(&responses);
        let sizes: Vec<usize> = keys_per_response(&responses).iter().map(Vec::len).collect();
        assert_eq!(sizes, [10, 10, 10, 10, 10, 10, 10, 10, 10, 10]);
        // Rows before a bigger one are sent without it; the big one goes alone.
        let responses = pack(vec![
            Response::Rows(vec![row("a", vec![cell("q", 10)])]),
            Response::Rows(vec![row("b", vec![cell("q", 1 << 20)])]),
            Response::Rows(vec![row("c", vec![cell("q", 10)])]),
        ]);
        assert_eq!(
            keys_per_response(&responses),
            [vec!["a"], vec!["b"], vec!["c"]]
        );
    }

    #[test]
    fn a_scan_marker_follows_the_rows_before_it() {
        let parts = || {
            vec![
                Response::Rows(vec![row("a", vec![cell("q", 1)])]),
                Response::ReadRowsPart(rowkit_statemachines::ReadRowsResponse {
                    chunks: Vec::new(),
                    last_scanned_row_key: b"m".to_vec(),
                }),
                Response::Rows(vec![row("z", vec![cell("q", 1)])]),
            ]
        };
        let responses = pack(parts());
        assert_eq!(responses.len(), 3);
        assert_eq!(keys_per_response(&responses[..1]), [vec!["a"]]);
        assert!(responses[1].chunks.is_empty());
        assert_eq!(responses[1].last_scanned_row_key, b"m");
        assert_eq!(keys_per_response(&responses[2..]), [vec!["z"]]);
        // A client that did not declare `last_scanned_row_responses` gets no marker, but the
        // rows before it are sent all the same.
        let responses = pack_for(false, parts());
        assert_eq!(keys_per_response(&responses), [vec!["a"], vec!["z"]]);
        assert!(responses.iter().all(|r| r.last_scanned_row_key.is_empty()));
    }

    #[test]
    fn finish_sends_what_is_packed_once() {
        let mut packer = ReadRowsPacker::default();
        assert!(
            packer
                .encode(Response::Rows(vec![row("a", vec![cell("q", 1)])]))
                .unwrap()
                .is_empty()
        );
        assert_eq!(keys_per_response(&packer.finish()), [vec!["a"]]);
        assert!(packer.finish().is_empty());
        assert!(packer.encode(Response::MutateRow).is_err());
    }
}
