//! Requests that never reach a handler get production's codes, over raw HTTP/2 (a gRPC client
//! only sends what it can encode): a message that does not decode → `INVALID_ARGUMENT`, one
//! whose frame announces more than the limit → `RESOURCE_EXHAUSTED` (tonic's own answers are
//! `INTERNAL` and `OUT_OF_RANGE`). A well-formed request still gets its ordinary answer.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use rowkit_codec::model::ColumnFamily;
use rowkit_store::driver::SystemClock;
use rowkit_store::{MemoryStore, Store};
use rowkit_grpc::{GrpcConfig, GrpcServer, MAX_MESSAGE_BYTES};
use tonic::codegen::{Bytes, http};
use tonic::{Code, Status};

async fn start() -> SocketAddr {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    store.create_table("t", &[ColumnFamily::new("cf")]).unwrap();
    let config = GrpcConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        token: None,
    };
    let server = GrpcServer::bind(config, store, Arc::new(SystemClock))
        .await
        .unwrap();
    let addr = server.local_addr().unwrap();
    tokio::spawn(server.serve(std::future::pending()));
    addr
}

/// A gRPC frame header: not compressed, then the announced message length.
fn frame_header(len: u32) -> Vec<u8> {
    let mut header = vec![0];
    header.extend_from_slice(&len.to_be_bytes());
    header
}

/// Sends `body` (the stream left open unless `end`) to the method at `path` and returns the
/// status the server answers with, from its headers (trailers-only) or its trailers.
async fn call(addr: SocketAddr, path: &str, body: Vec<u8>, end: bool) -> Status {
    call_with(addr, path, &[], body, end).await
}

/// [`call`] with extra request headers.
async fn call_with(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
    end: bool,
) -> Status {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (send, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut send = send.ready().await.unwrap();
    let mut request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(()).unwrap();
    let (response, mut stream) = send.send_request(request, false).unwrap();
    stream.send_data(Bytes::from(body), end).unwrap();
    let response = response.await.unwrap();
    let (parts, mut body) = response.into_parts();
    if let Some(status) = Status::from_header_map(&parts.headers) {
        return status;
    }
    while let Some(data) = body.data().await {
        data.unwrap();
    }
    let trailers = body.trailers().await.unwrap().unwrap();
    Status::from_header_map(&trailers).unwrap()
}

const MUTATE_ROW: &str = "/google.bigtable.v2.Bigtable/MutateRow";

#[tokio::test]
async fn an_undecodable_request_is_invalid_argument() {
    let addr = start().await;
    // Field 1 (table_name, a string) with the varint wire type, then a truncated varint.
    let garbage = [0x08, 0xff, 0xff];
    let mut body = frame_header(garbage.len() as u32);
    body.extend_from_slice(&garbage);
    for path in [
        MUTATE_ROW,
        "/google.bigtable.v2.Bigtable/ReadRows",
        "/google.bigtable.admin.v2.BigtableTableAdmin/ListTables",
        "/google.bigtable.admin.v2.BigtableInstanceAdmin/GetInstance",
    ] {
        let status = call(addr, path, body.clone(), true).await;
        assert_eq!(status.code(), Code::InvalidArgument, "{path}: {status:?}");
    }
}

#[tokio::test]
async fn a_request_over_the_limit_is_resource_exhausted() {
    let addr = start().await;
    // Only the header: the server answers from the announced length, before the message.
    let over = u32::try_from(MAX_MESSAGE_BYTES + 1).unwrap();
    for path in [MUTATE_ROW, "/google.bigtable.v2.Bigtable/ReadRows"] {
        let status = call(addr, path, frame_header(over), false).await;
        assert_eq!(status.code(), Code::ResourceExhausted, "{path}: {status:?}");
        assert!(status.message().contains("too large"), "{status:?}");
    }
}

/// The rewrite leaves every other answer alone: an empty MutateRowRequest names no table, and
/// keeps the handler's own `INVALID_ARGUMENT`; a mutation of a missing table its `NOT_FOUND`.
#[tokio::test]
async fn other_answers_keep_their_codes() {
    let addr = start().await;
    let status = call(addr, MUTATE_ROW, frame_header(0), true).await;
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(!status.message().contains("decode"), "{status:?}");
    // table_name = "projects/p/instances/i/tables/missing", row_key = "r", one DeleteFromRow.
    let table = b"projects/p/instances/i/tables/missing";
    let mut message = vec![0x0a, table.len() as u8];
    message.extend_from_slice(table);
    message.extend_from_slice(&[0x12, 1, b'r', 0x1a, 2, 0x22, 0]);
    let mut body = frame_header(message.len() as u32);
    body.extend_from_slice(&message);
    let status = call(addr, MUTATE_ROW, body, true).await;
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
}

/// A call still waiting for its request message when its `grpc-timeout` passes is answered
/// `DEADLINE_EXCEEDED` by the server (the client here holds no deadline of its own).
#[tokio::test]
async fn a_call_past_its_grpc_timeout_is_deadline_exceeded() {
    let addr = start().await;
    let started = std::time::Instant::now();
    // The frame announces 10 bytes and none follow: the handler waits for them.
    let status = call_with(
        addr,
        MUTATE_ROW,
        &[("grpc-timeout", "300m")],
        frame_header(10),
        false,
    )
    .await;
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    let took = started.elapsed();
    assert!(took >= std::time::Duration::from_millis(300), "{took:?}");
}
