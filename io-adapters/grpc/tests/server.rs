//! The server over the wire with a raw tonic client: the token rule, the reverse-scan feature
//! flag, values split into chunks inside their row's response (every response ends on a row
//! boundary, as Google's Go client checks), and a reader that stops reading mid-scan while
//! writers go on.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use pb::bigtable_client::BigtableClient;
use rowkit_codec::model::{ColumnFamily, Row, Timestamp};
use rowkit_embedded::driver::SystemClock;
use rowkit_embedded::{MemoryStore, Store};
use rowkit_grpc::{GrpcConfig, GrpcServer, MAX_MESSAGE_BYTES, VALUE_CHUNK_BYTES};
use rowkit_statemachines::readrows::{ChunkMerger, MergeState};
use tonic::transport::Channel;

const TABLE: &str = "projects/p/instances/i/tables/t";

async fn start(token: Option<&str>) -> (SocketAddr, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    store.create_table("t", &[ColumnFamily::new("cf")]).unwrap();
    let config = GrpcConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        token: token.map(str::to_string),
    };
    let server = GrpcServer::bind(config, store.clone(), Arc::new(SystemClock))
        .await
        .unwrap();
    let addr = server.local_addr().unwrap();
    tokio::spawn(server.serve(std::future::pending()));
    (addr, store)
}

async fn client(addr: SocketAddr) -> BigtableClient<Channel> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    BigtableClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES)
}

fn set(row: &[u8], qualifier: &[u8], value: Vec<u8>) -> pb::MutateRowRequest {
    use pb::mutation::{Mutation as M, SetCell};
    pb::MutateRowRequest {
        table_name: TABLE.into(),
        row_key: row.to_vec(),
        mutations: vec![pb::Mutation {
            mutation: Some(M::SetCell(SetCell {
                family_name: "cf".into(),
                column_qualifier: qualifier.to_vec(),
                timestamp_micros: 1000,
                value,
            })),
        }],
        ..Default::default()
    }
}

fn read_all(reversed: bool) -> pb::ReadRowsRequest {
    pb::ReadRowsRequest {
        table_name: TABLE.into(),
        reversed,
        ..Default::default()
    }
}

/// Reads a whole ReadRows stream through rowkit's merger; also returns the responses' count.
async fn read_rows(
    client: &mut BigtableClient<Channel>,
    request: tonic::Request<pb::ReadRowsRequest>,
) -> Result<(Vec<Row>, usize), tonic::Status> {
    let reversed = request.get_ref().reversed;
    let mut stream = client.read_rows(request).await?.into_inner();
    let mut merger = ChunkMerger::new(reversed, 0);
    let mut rows = Vec::new();
    let mut responses = 0;
    while let Some(response) = stream.message().await? {
        responses += 1;
        let response = rowkit_bigtable::convert::read_rows_response_from_pb(response);
        merger.push_response(response).unwrap();
        // What the Go client's `chunkReader.Close` checks after every response.
        assert_eq!(
            merger.state(),
            MergeState::NewRow,
            "a response ended inside a row"
        );
        while let Some(row) = merger.pop_row() {
            rows.push(row);
        }
    }
    merger.end_of_stream().unwrap();
    Ok((rows, responses))
}

#[tokio::test]
async fn a_token_is_checked_as_bearer_metadata() {
    let (addr, _store) = start(Some("s3cret")).await;
    let mut c = client(addr).await;
    let e = c
        .mutate_row(set(b"r", b"q", b"v".to_vec()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated);
    let mut wrong = tonic::Request::new(set(b"r", b"q", b"v".to_vec()));
    wrong
        .metadata_mut()
        .insert("authorization", "Bearer nope".parse().unwrap());
    assert_eq!(
        c.mutate_row(wrong).await.unwrap_err().code(),
        tonic::Code::Unauthenticated
    );
    let mut right = tonic::Request::new(set(b"r", b"q", b"v".to_vec()));
    right
        .metadata_mut()
        .insert("authorization", "Bearer s3cret".parse().unwrap());
    c.mutate_row(right).await.unwrap();
}

#[tokio::test]
async fn reversed_reads_need_the_feature_flag() {
    let (addr, _store) = start(None).await;
    let mut c = client(addr).await;
    for key in [b"a", b"b", b"c"] {
        c.mutate_row(set(key, b"q", b"v".to_vec())).await.unwrap();
    }
    let e = read_rows(&mut c, tonic::Request::new(read_all(true)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unimplemented);
    let mut flagged = tonic::Request::new(read_all(true));
    flagged
        .metadata_mut()
        .insert("bigtable-features", "CAE=".parse().unwrap());
    let (rows, _) = read_rows(&mut c, flagged).await.unwrap();
    let keys: Vec<&[u8]> = rows.iter().map(|r| r.key.as_slice()).collect();
    assert_eq!(keys, [b"c", b"b", b"a"]);
}

#[tokio::test]
async fn a_large_value_is_split_inside_its_rows_response() {
    let (addr, store) = start(None).await;
    let mut c = client(addr).await;
    let big: Vec<u8> = (0..VALUE_CHUNK_BYTES * 5 + 123).map(|i| i as u8).collect();
    c.mutate_row(set(b"big", b"q", big.clone())).await.unwrap();
    c.mutate_row(set(b"small", b"q", b"v".to_vec()))
        .await
        .unwrap();
    let (rows, responses) = read_rows(&mut c, tonic::Request::new(read_all(false)))
        .await
        .unwrap();
    // The big row's six chunks in one response, then the small row in the next (a response
    // takes no row once it holds 1 MiB of values).
    assert_eq!(responses, 2);
    let local = rowkit_client::read_rows_blocking(
        store.as_ref(),
        rowkit_statemachines::ReadRowsRequest {
            table: "t".into(),
            ..Default::default()
        },
        Timestamp::from_secs(1),
    )
    .unwrap();
    assert_eq!(rows, local);
    assert_eq!(rows[0].cells[0].value, big);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_stops_reading_blocks_no_writer() {
    let (addr, _store) = start(None).await;
    let mut c = client(addr).await;
    let value = vec![7u8; 64 << 10];
    for i in 0..400u32 {
        c.mutate_row(set(format!("r{i:04}").as_bytes(), b"q", value.clone()))
            .await
            .unwrap();
    }
    // Take the first response of a 25 MiB scan and stop reading: the server's send buffers
    // and channel fill and its scan waits.
    let mut reader = client(addr).await;
    let mut stalled = reader
        .read_rows(read_all(false))
        .await
        .unwrap()
        .into_inner();
    assert!(stalled.message().await.unwrap().is_some());
    // Writers to the rows being scanned and to new rows still complete.
    for i in (0..400u32).step_by(7) {
        c.mutate_row(set(format!("r{i:04}").as_bytes(), b"w", b"x".to_vec()))
            .await
            .unwrap();
        c.mutate_row(set(format!("s{i:04}").as_bytes(), b"q", b"x".to_vec()))
            .await
            .unwrap();
    }
    // The stalled reader still gets the rest of its scan.
    let mut rest = 0;
    while stalled.message().await.unwrap().is_some() {
        rest += 1;
    }
    assert!(rest > 0);
}
