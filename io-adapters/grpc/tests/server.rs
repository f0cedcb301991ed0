//! The server over the wire with a raw tonic client: the token rule, the reverse-scan feature
//! flag, values split into chunks inside their row's response (every response ends on a row
//! boundary for Google's Go client, which checks it; a row over 4 MiB is spread for the
//! others), a reader that stops reading mid-scan while writers go on; the admin services'
//! replies.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use pb::bigtable_client::BigtableClient;
use rowkit_codec::model::{ColumnFamily, Row, Timestamp};
use rowkit_grpc::{GrpcConfig, GrpcServer, MAX_MESSAGE_BYTES, VALUE_CHUNK_BYTES};
use rowkit_statemachines::readrows::{ChunkMerger, MergeState};
use rowkit_store::driver::SystemClock;
use rowkit_store::{MemoryStore, Store};
use tonic::transport::Channel;

const TABLE: &str = "projects/p/instances/i/tables/t";

async fn start(token: Option<&str>) -> (SocketAddr, Arc<dyn Store>) {
    start_on(Arc::new(MemoryStore::new()), token).await
}

/// The server over `store`, which gets table `t` with family `cf`.
async fn start_on(store: Arc<dyn Store>, token: Option<&str>) -> (SocketAddr, Arc<dyn Store>) {
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

/// What Google's Go client sends in `x-goog-api-client`: the server then keeps every row in
/// one response, whatever its size.
const GO_CLIENT: &str = "gl-go/1.19.8 gccl/20200915 grpc/1.27.1";

/// Reads a whole ReadRows stream through rowkit's merger; also returns the responses' count.
/// When the request says it comes from the Go client, checks after every response what that
/// client checks: that the response ended on a row boundary.
async fn read_rows(
    client: &mut BigtableClient<Channel>,
    request: tonic::Request<pb::ReadRowsRequest>,
) -> Result<(Vec<Row>, usize), tonic::Status> {
    let go = request.metadata().get("x-goog-api-client").is_some();
    let reversed = request.get_ref().reversed;
    let mut stream = client.read_rows(request).await?.into_inner();
    let mut merger = ChunkMerger::new(reversed, 0);
    let mut rows = Vec::new();
    let mut responses = 0;
    while let Some(response) = stream.message().await? {
        responses += 1;
        let response = rowkit_proto::read_rows_response_from_pb(response);
        merger.push_response(response).unwrap();
        // What the Go client's `chunkReader.Close` checks after every response.
        if go {
            assert_eq!(
                merger.state(),
                MergeState::NewRow,
                "a response ended inside a row"
            );
        }
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
    flagged
        .metadata_mut()
        .insert("x-goog-api-client", GO_CLIENT.parse().unwrap());
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
    let mut from_go = tonic::Request::new(read_all(false));
    from_go
        .metadata_mut()
        .insert("x-goog-api-client", GO_CLIENT.parse().unwrap());
    let (rows, responses) = read_rows(&mut c, from_go).await.unwrap();
    // For the Go client: the big row's six chunks in one response, then the small row in the
    // next (a response takes no row once it holds 1 MiB of values).
    assert_eq!(responses, 2);
    // For the others, the 5 MiB row passes gRPC's default receive limit: spread over responses
    // of about 1 MiB, which their mergers join.
    let (spread, responses) = read_rows(&mut c, tonic::Request::new(read_all(false)))
        .await
        .unwrap();
    assert_eq!(responses, 7);
    assert_eq!(spread, rows);
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

mod admin_replies {
    //! The admin services through Google's tonic clients (and, where the client's decoding
    //! would hide it, the raw wire): map entries carry their values, views, consistency tokens,
    //! and the instance admin of the one instance the server is.

    use super::*;
    use admin::bigtable_instance_admin_client::BigtableInstanceAdminClient;
    use admin::bigtable_table_admin_client::BigtableTableAdminClient;
    use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
    use googleapis_tonic_google_bigtable_admin_v2::google::iam::v1 as iam;
    use tonic::Code;

    const INSTANCE: &str = "projects/p/instances/i";

    async fn channel(addr: SocketAddr) -> Channel {
        Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    /// A map entry as it is on the wire: a repeated message of key and (optional) value.
    #[derive(Clone, PartialEq, prost::Message)]
    struct RawEntry {
        #[prost(string, tag = "1")]
        key: String,
        #[prost(bytes = "vec", optional, tag = "2")]
        value: Option<Vec<u8>>,
    }

    /// `Table`'s two maps as raw entries.
    #[derive(Clone, PartialEq, prost::Message)]
    struct RawTable {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(message, repeated, tag = "2")]
        cluster_states: Vec<RawEntry>,
        #[prost(message, repeated, tag = "3")]
        column_families: Vec<RawEntry>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct RawListTables {
        #[prost(message, repeated, tag = "1")]
        tables: Vec<RawTable>,
    }

    /// Calls `method` of the table admin and decodes the reply as `Reply`.
    async fn raw_call<Req, Reply>(channel: Channel, method: &'static str, request: Req) -> Reply
    where
        Req: prost::Message + Send + Sync + 'static,
        Reply: prost::Message + Default + Send + Sync + 'static,
    {
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.unwrap();
        let codec = tonic_prost::ProstCodec::<Req, Reply>::default();
        let path = tonic::codegen::http::uri::PathAndQuery::from_static(method);
        grpc.unary(tonic::Request::new(request), path, codec)
            .await
            .unwrap()
            .into_inner()
    }

    fn assert_every_entry_has_a_value(table: &RawTable) {
        for entry in table.cluster_states.iter().chain(&table.column_families) {
            assert!(
                entry.value.is_some(),
                "entry {:?} of {} sent without a value",
                entry.key,
                table.name
            );
        }
    }

    /// A memory store that answers reads as a network store does: chunks, never whole rows
    /// (the default `execute_local`), so the server must merge them.
    struct ChunksOnly(MemoryStore);

    impl Store for ChunksOnly {
        fn execute(
            &self,
            request: rowkit_statemachines::Request,
            now: Timestamp,
        ) -> Result<rowkit_store::Reply<'_>, rowkit_statemachines::StoreError> {
            self.0.execute(request, now)
        }
        fn create_table(
            &self,
            table: &str,
            families: &[ColumnFamily],
        ) -> Result<(), rowkit_statemachines::StoreError> {
            self.0.create_table(table, families)
        }
        fn delete_table(&self, table: &str) -> Result<(), rowkit_statemachines::StoreError> {
            self.0.delete_table(table)
        }
        fn list_tables(&self) -> Result<Vec<String>, rowkit_statemachines::StoreError> {
            self.0.list_tables()
        }
        fn families(
            &self,
            table: &str,
        ) -> Result<Vec<ColumnFamily>, rowkit_statemachines::StoreError> {
            self.0.families(table)
        }
        fn gc(&self, table: &str, now: Timestamp) -> Result<u64, rowkit_statemachines::StoreError> {
            self.0.gc(table, now)
        }
    }

    /// DropRowRange deletes every row under the prefix, over more than one page of the
    /// server's key-only reads, and nothing else; then all of the table's data. Over a store
    /// that answers with whole rows and over one that answers with chunks.
    #[tokio::test]
    async fn drop_row_range_deletes_the_prefix_across_pages() {
        use admin::drop_row_range_request::Target;
        let stores: [Arc<dyn Store>; 2] = [
            Arc::new(MemoryStore::new()),
            Arc::new(ChunksOnly(MemoryStore::new())),
        ];
        for store in stores {
            let (addr, store) = start_on(store, None).await;
            let rows = |prefix: &str, n: usize| -> Vec<Vec<u8>> {
                (0..n)
                    .map(|i| format!("{prefix}{i:05}").into_bytes())
                    .collect()
            };
            let mut data = client(addr).await;
            // 2 500 rows under "a" take three pages of the server's reads (1 000 rows each).
            for key in rows("a", 2_500).iter().chain(&rows("b", 3)) {
                data.mutate_row(set(key, b"q", b"v".to_vec()))
                    .await
                    .unwrap();
            }
            let mut c = BigtableTableAdminClient::new(channel(addr).await);
            let drop = |target| admin::DropRowRangeRequest {
                name: TABLE.into(),
                target: Some(target),
            };
            c.drop_row_range(drop(Target::RowKeyPrefix(b"a".to_vec())))
                .await
                .unwrap();
            let read = rowkit_statemachines::ReadRowsRequest {
                table: "t".into(),
                ..Default::default()
            };
            let keys = |store: &Arc<dyn Store>| -> Vec<Vec<u8>> {
                rowkit_client::read_rows_blocking(store.as_ref(), read.clone(), Timestamp(0))
                    .unwrap()
                    .into_iter()
                    .map(|row| row.key)
                    .collect()
            };
            assert_eq!(keys(&store), rows("b", 3));
            c.drop_row_range(drop(Target::DeleteAllDataFromTable(true)))
                .await
                .unwrap();
            assert!(keys(&store).is_empty());
        }
    }

    #[tokio::test]
    async fn every_map_entry_carries_its_value() {
        let (addr, store) = start(None).await;
        // "cf" has no GC rule: its value is the empty ColumnFamily, which must still be sent.
        store
            .create_table(
                "u",
                &[
                    ColumnFamily::new("cf"),
                    ColumnFamily {
                        name: "kept".into(),
                        gc_rule: Some(rowkit_codec::model::GcRule::MaxNumVersions(2)),
                    },
                ],
            )
            .unwrap();
        let ch = channel(addr).await;
        let get = |view: admin::table::View| admin::GetTableRequest {
            name: format!("{INSTANCE}/tables/u"),
            view: view as i32,
        };
        let table: RawTable = raw_call(
            ch.clone(),
            "/google.bigtable.admin.v2.BigtableTableAdmin/GetTable",
            get(admin::table::View::Full),
        )
        .await;
        let mut keys: Vec<&str> = table
            .column_families
            .iter()
            .map(|e| e.key.as_str())
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, ["cf", "kept"]);
        assert_eq!(table.cluster_states.len(), 1);
        assert_every_entry_has_a_value(&table);
        // The empty family: a present, empty value.
        let cf = table
            .column_families
            .iter()
            .find(|e| e.key == "cf")
            .unwrap();
        assert_eq!(cf.value.as_deref(), Some(&[][..]));

        let listed: RawListTables = raw_call(
            ch.clone(),
            "/google.bigtable.admin.v2.BigtableTableAdmin/ListTables",
            admin::ListTablesRequest {
                parent: INSTANCE.into(),
                view: admin::table::View::Full as i32,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(listed.tables.len(), 2);
        for table in &listed.tables {
            assert!(!table.column_families.is_empty(), "{}", table.name);
            assert_every_entry_has_a_value(table);
        }

        let created: RawTable = raw_call(
            ch.clone(),
            "/google.bigtable.admin.v2.BigtableTableAdmin/CreateTable",
            admin::CreateTableRequest {
                parent: INSTANCE.into(),
                table_id: "w".into(),
                table: Some(admin::Table {
                    column_families: [("cf".to_string(), admin::ColumnFamily::default())].into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(created.column_families.len(), 1);
        assert_every_entry_has_a_value(&created);
    }

    #[tokio::test]
    async fn tables_are_answered_in_the_view_asked_for() {
        use admin::table::View;
        let (addr, _store) = start(None).await;
        let mut c = BigtableTableAdminClient::new(channel(addr).await);
        let get = |view: View| admin::GetTableRequest {
            name: TABLE.into(),
            view: view as i32,
        };
        let schema = c
            .get_table(get(View::Unspecified))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(schema.name, TABLE);
        assert!(schema.column_families.contains_key("cf"));
        assert!(schema.cluster_states.is_empty());
        assert_eq!(
            schema.granularity,
            admin::table::TimestampGranularity::Millis as i32
        );
        let name_only = c.get_table(get(View::NameOnly)).await.unwrap().into_inner();
        assert_eq!(
            name_only,
            admin::Table {
                name: TABLE.into(),
                ..Default::default()
            }
        );
        let replication = c
            .get_table(get(View::ReplicationView))
            .await
            .unwrap()
            .into_inner();
        assert!(replication.column_families.is_empty());
        let state = &replication.cluster_states["i-c1"];
        assert_eq!(
            state.replication_state,
            admin::table::cluster_state::ReplicationState::Ready as i32
        );
        // ListTables answers names only by default.
        let listed = c
            .list_tables(admin::ListTablesRequest {
                parent: INSTANCE.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(listed.tables.len(), 1);
        assert_eq!(listed.tables[0].name, TABLE);
        assert!(listed.tables[0].column_families.is_empty());
        let missing = c
            .get_table(admin::GetTableRequest {
                name: format!("{INSTANCE}/tables/nope"),
                view: View::NameOnly as i32,
            })
            .await
            .unwrap_err();
        assert_eq!(missing.code(), Code::NotFound);
    }

    #[tokio::test]
    async fn consistency_tokens_are_checked_per_table() {
        let (addr, store) = start(None).await;
        store
            .create_table("other", &[ColumnFamily::new("cf")])
            .unwrap();
        let mut c = BigtableTableAdminClient::new(channel(addr).await);
        let token = |name: &str| admin::GenerateConsistencyTokenRequest { name: name.into() };
        let check = |name: &str, token: &str| admin::CheckConsistencyRequest {
            name: name.into(),
            consistency_token: token.into(),
            ..Default::default()
        };
        let issued = c
            .generate_consistency_token(token(TABLE))
            .await
            .unwrap()
            .into_inner()
            .consistency_token;
        assert!(!issued.is_empty());
        let reply = c.check_consistency(check(TABLE, &issued)).await.unwrap();
        assert!(reply.into_inner().consistent);
        // Another table's token, or no token of this server's: INVALID_ARGUMENT.
        let other = format!("{INSTANCE}/tables/other");
        for bad in ["", "garbage", "AAAAAAAAAAAAAAAAAAAAAA"] {
            let e = c.check_consistency(check(TABLE, bad)).await.unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{bad:?}");
        }
        let e = c
            .check_consistency(check(&other, &issued))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        // A table that does not exist: NOT_FOUND, for both calls.
        let missing = format!("{INSTANCE}/tables/nope");
        let e = c
            .generate_consistency_token(token(&missing))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        let e = c
            .check_consistency(check(&missing, &issued))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        let e = c.generate_consistency_token(token("t")).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
    }

    #[tokio::test]
    async fn the_instance_admin_describes_one_instance_and_changes_nothing() {
        let (addr, _store) = start(None).await;
        let mut c = BigtableInstanceAdminClient::new(channel(addr).await);
        let instance = c
            .get_instance(admin::GetInstanceRequest {
                name: "projects/p/instances/my-inst".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(instance.name, "projects/p/instances/my-inst");
        assert_eq!(instance.display_name, "my-inst");
        assert_eq!(instance.state, admin::instance::State::Ready as i32);
        let listed = c
            .list_instances(admin::ListInstancesRequest {
                parent: "projects/p".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let names: Vec<&str> = listed.instances.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["projects/p/instances/rowkit"]);

        let cluster = c
            .get_cluster(admin::GetClusterRequest {
                name: format!("{INSTANCE}/clusters/i-c1"),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(cluster.state, admin::cluster::State::Ready as i32);
        assert_eq!(cluster.serve_nodes, 1);
        assert_eq!(cluster.default_storage_type, admin::StorageType::Ssd as i32);
        assert_eq!(cluster.location, "projects/p/locations/local");
        let e = c
            .get_cluster(admin::GetClusterRequest {
                name: format!("{INSTANCE}/clusters/elsewhere"),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        let clusters = c
            .list_clusters(admin::ListClustersRequest {
                parent: INSTANCE.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .clusters;
        assert_eq!(clusters, [cluster]);

        let profile = c
            .get_app_profile(admin::GetAppProfileRequest {
                name: format!("{INSTANCE}/appProfiles/default"),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            profile.routing_policy,
            Some(admin::app_profile::RoutingPolicy::SingleClusterRouting(
                admin::app_profile::SingleClusterRouting {
                    cluster_id: "i-c1".into(),
                    allow_transactional_writes: true,
                }
            ))
        );
        let profiles = c
            .list_app_profiles(admin::ListAppProfilesRequest {
                parent: INSTANCE.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .app_profiles;
        assert_eq!(profiles, [profile]);
        let e = c
            .get_app_profile(admin::GetAppProfileRequest {
                name: format!("{INSTANCE}/appProfiles/other"),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::NotFound);

        // Writes: PERMISSION_DENIED naming the missing permission, as production.
        let denied = [
            c.create_app_profile(admin::CreateAppProfileRequest {
                parent: INSTANCE.into(),
                app_profile_id: "new".into(),
                ..Default::default()
            })
            .await
            .map(|_| ())
            .unwrap_err(),
            c.update_cluster(admin::Cluster {
                name: format!("{INSTANCE}/clusters/i-c1"),
                serve_nodes: 4,
                ..Default::default()
            })
            .await
            .map(|_| ())
            .unwrap_err(),
            c.delete_instance(admin::DeleteInstanceRequest {
                name: INSTANCE.into(),
            })
            .await
            .map(|_| ())
            .unwrap_err(),
        ];
        let permissions = [
            "bigtable.appProfiles.create",
            "bigtable.clusters.update",
            "bigtable.instances.delete",
        ];
        for (e, permission) in denied.iter().zip(permissions) {
            assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
            assert_eq!(
                e.message(),
                format!("Access denied. Missing IAM permission: {permission}.")
            );
        }
        // The profile and cluster are unchanged.
        let after = c
            .get_cluster(admin::GetClusterRequest {
                name: format!("{INSTANCE}/clusters/i-c1"),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(after.serve_nodes, 1);

        let e = c
            .get_iam_policy(iam::GetIamPolicyRequest {
                resource: INSTANCE.into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied);
        let granted = c
            .test_iam_permissions(iam::TestIamPermissionsRequest {
                resource: INSTANCE.into(),
                permissions: vec![
                    "bigtable.instances.get".into(),
                    "bigtable.instances.update".into(),
                    "bigtable.tables.readRows".into(),
                ],
            })
            .await
            .unwrap()
            .into_inner()
            .permissions;
        assert_eq!(
            granted,
            ["bigtable.instances.get", "bigtable.tables.readRows"]
        );
    }

    #[tokio::test]
    async fn the_instance_admin_needs_the_token_too() {
        let (addr, _store) = start(Some("s3cret")).await;
        let mut c = BigtableInstanceAdminClient::new(channel(addr).await);
        let e = c
            .get_instance(admin::GetInstanceRequest {
                name: INSTANCE.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated);
    }
}
