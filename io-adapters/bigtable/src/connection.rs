//! The async connection: one tonic channel (plus one to the admin endpoint on Cloud
//! Bigtable), rowkit requests in, rowkit responses out. It executes exactly one RPC per call
//! and never retries: retry and resume decisions belong to the machines.

use std::pin::Pin;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2::bigtable_table_admin_client::BigtableTableAdminClient;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2::bigtable_client::BigtableClient;
use rowkit_codec::model::{Code, ColumnFamily};
use rowkit_statemachines::{Request, Response, StoreError};
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, ClientTlsConfig};

use crate::auth::TokenProvider;
use crate::convert;
use crate::target::{CLOUD_ADMIN_ENDPOINT, CLOUD_DATA_ENDPOINT, Endpoint, Target};

/// Largest gRPC message accepted: a response carries a whole row with unsplit values (up to
/// 100 MiB per cell), far above tonic's 4 MiB default.
pub const MAX_DECODING_MESSAGE_SIZE: usize = 256 << 20;
/// Largest gRPC message sent (a MutateRow with a 100 MiB value and its overhead).
pub const MAX_ENCODING_MESSAGE_SIZE: usize = 256 << 20;
/// `bigtable-features` metadata: `FeatureFlags { reverse_scans: true }`, websafe base64
/// (`spec/bigtable.md` 9.2). Without it the server refuses reversed reads.
pub const FEATURE_FLAGS: &str = "CAE=";

/// A stream of response parts. [`BigtableConnection::execute`] yields parts only;
/// [`BigtableConnection::call`] appends [`Response::StreamEnd`] after a clean end.
pub type PartStream = Pin<Box<dyn Stream<Item = Result<Response, StoreError>> + Send>>;

/// The answer to one executed request.
pub enum AsyncReply {
    /// A unary RPC's response.
    Unary(Response),
    /// A streaming RPC's parts (no `StreamEnd`); an `Err` item ends it.
    Stream(PartStream),
}

impl std::fmt::Debug for AsyncReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AsyncReply::Unary(r) => f.debug_tuple("Unary").field(r).finish(),
            AsyncReply::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// The resource fields a call is routed by (`x-goog-request-params`).
enum Routing<'a> {
    /// Data calls: the table and the app profile.
    Table {
        /// Full table name.
        name: &'a str,
        /// App profile (may be empty).
        app_profile_id: &'a str,
    },
    /// Admin calls on an instance (`CreateTable`, `ListTables`).
    Parent(&'a str),
    /// Admin calls on a table (`GetTable`, `DeleteTable`, `ModifyColumnFamilies`).
    Name(&'a str),
}

/// A connection to one Bigtable instance (emulator or cloud). Cheap to clone: clones share the
/// HTTP/2 channels.
#[derive(Clone)]
pub struct BigtableConnection {
    data: BigtableClient<Channel>,
    admin: BigtableTableAdminClient<Channel>,
    target: Arc<Target>,
    tokens: Option<Arc<dyn TokenProvider>>,
}

impl std::fmt::Debug for BigtableConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BigtableConnection")
            .field("target", &self.target)
            .field("authenticated", &self.tokens.is_some())
            .finish()
    }
}

fn transport_error(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::new(Code::Unavailable, format!("{what}: {e}"))
}

async fn channel(uri: String, tls: bool) -> Result<Channel, StoreError> {
    let mut endpoint = Channel::from_shared(uri.clone())
        .map_err(|e| StoreError::new(Code::InvalidArgument, format!("endpoint {uri}: {e}")))?
        .tcp_nodelay(true)
        .http2_keep_alive_interval(std::time::Duration::from_secs(30))
        .keep_alive_while_idle(true);
    if tls {
        endpoint = endpoint
            .tls_config(ClientTlsConfig::new().with_native_roots())
            .map_err(|e| transport_error("TLS configuration", e))?;
    }
    endpoint
        .connect()
        .await
        .map_err(|e| transport_error(&format!("connecting to {uri}"), e))
}

impl BigtableConnection {
    /// Connects to `target`. The emulator needs no `tokens`; Cloud Bigtable requires them
    /// (`INVALID_ARGUMENT` otherwise, before any network traffic).
    pub async fn connect(
        target: Target,
        tokens: Option<Arc<dyn TokenProvider>>,
    ) -> Result<BigtableConnection, StoreError> {
        let (data, admin) = match &target.endpoint {
            Endpoint::Emulator(host) => {
                let ch = channel(format!("http://{host}"), false).await?;
                (ch.clone(), ch)
            }
            Endpoint::Cloud => {
                if tokens.is_none() {
                    return Err(StoreError::new(
                        Code::InvalidArgument,
                        "Cloud Bigtable needs credentials (a TokenProvider); for the emulator use ?emulator=HOST:PORT or BIGTABLE_EMULATOR_HOST",
                    ));
                }
                (
                    channel(CLOUD_DATA_ENDPOINT.to_string(), true).await?,
                    channel(CLOUD_ADMIN_ENDPOINT.to_string(), true).await?,
                )
            }
        };
        Ok(BigtableConnection {
            data: BigtableClient::new(data)
                .max_decoding_message_size(MAX_DECODING_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_ENCODING_MESSAGE_SIZE),
            admin: BigtableTableAdminClient::new(admin)
                .max_decoding_message_size(MAX_DECODING_MESSAGE_SIZE),
            target: Arc::new(target),
            tokens,
        })
    }

    /// The same channels, addressing another project/instance (no new connection).
    pub fn with_instance(&self, project: &str, instance: &str) -> BigtableConnection {
        BigtableConnection {
            target: Arc::new(self.target.with_instance(project, instance)),
            ..self.clone()
        }
    }

    /// Where the connection goes.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Wraps a message with the metadata every call carries: the routing header
    /// (`x-goog-request-params`, the request's resource fields percent-encoded), the feature
    /// flags and, on Cloud Bigtable, the bearer token.
    async fn wrap<T>(
        &self,
        message: T,
        routing: Routing<'_>,
    ) -> Result<tonic::Request<T>, StoreError> {
        let mut request = tonic::Request::new(message);
        let params = match routing {
            Routing::Table {
                name,
                app_profile_id,
            } => format!(
                "table_name={}&app_profile_id={}",
                percent_encode(name),
                percent_encode(app_profile_id)
            ),
            Routing::Parent(parent) => format!("parent={}", percent_encode(parent)),
            Routing::Name(name) => format!("name={}", percent_encode(name)),
        };
        let md = request.metadata_mut();
        md.insert(
            "x-goog-request-params",
            MetadataValue::try_from(params.as_str()).map_err(|e| {
                StoreError::new(Code::InvalidArgument, format!("routing header: {e}"))
            })?,
        );
        md.insert(
            "bigtable-features",
            MetadataValue::from_static(FEATURE_FLAGS),
        );
        if let Some(tokens) = &self.tokens {
            let token = tokens.token().await?;
            let value = MetadataValue::try_from(format!("Bearer {token}")).map_err(|_| {
                StoreError::new(Code::Unauthenticated, "token is not a valid header value")
            })?;
            md.insert("authorization", value);
        }
        Ok(request)
    }

    fn profile<'a>(&'a self, requested: &'a str) -> &'a str {
        if requested.is_empty() {
            &self.target.app_profile_id
        } else {
            requested
        }
    }

    /// Executes one request: one RPC, no retry. Streaming RPCs return their parts as a stream
    /// (lazily: a long scan is never buffered).
    pub async fn execute(&self, request: Request) -> Result<AsyncReply, StoreError> {
        let status = |s: tonic::Status| convert::status_to_error(&s);
        match request {
            Request::ReadRows(r) => {
                let table = self.target.table_name(&r.table);
                let profile = self.profile(&r.app_profile_id).to_string();
                let msg = pb::ReadRowsRequest {
                    table_name: table.clone(),
                    app_profile_id: profile.clone(),
                    rows: Some(convert::row_set_to_pb(r.rows)),
                    filter: r.filter.map(convert::filter_to_pb),
                    rows_limit: r.rows_limit,
                    reversed: r.reversed,
                    ..Default::default()
                };
                let req = self
                    .wrap(
                        msg,
                        Routing::Table {
                            name: &table,
                            app_profile_id: &profile,
                        },
                    )
                    .await?;
                let stream = self.data.clone().read_rows(req).await.map_err(status)?;
                Ok(AsyncReply::Stream(Box::pin(stream.into_inner().map(
                    |part| {
                        part.map(|p| Response::ReadRowsPart(convert::read_rows_response_from_pb(p)))
                            .map_err(|s| convert::status_to_error(&s))
                    },
                ))))
            }
            Request::MutateRow(r) => {
                let table = self.target.table_name(&r.table);
                let profile = self.profile(&r.app_profile_id).to_string();
                let msg = pb::MutateRowRequest {
                    table_name: table.clone(),
                    app_profile_id: profile.clone(),
                    row_key: r.row_key,
                    mutations: convert::mutations_to_pb(r.mutations),
                    ..Default::default()
                };
                let req = self
                    .wrap(
                        msg,
                        Routing::Table {
                            name: &table,
                            app_profile_id: &profile,
                        },
                    )
                    .await?;
                self.data.clone().mutate_row(req).await.map_err(status)?;
                Ok(AsyncReply::Unary(Response::MutateRow))
            }
            Request::MutateRows(r) => {
                let table = self.target.table_name(&r.table);
                let profile = self.profile(&r.app_profile_id).to_string();
                let msg = pb::MutateRowsRequest {
                    table_name: table.clone(),
                    app_profile_id: profile.clone(),
                    entries: r
                        .entries
                        .into_iter()
                        .map(|e| pb::mutate_rows_request::Entry {
                            row_key: e.row_key,
                            mutations: convert::mutations_to_pb(e.mutations),
                            idempotency: None,
                        })
                        .collect(),
                    ..Default::default()
                };
                let req = self
                    .wrap(
                        msg,
                        Routing::Table {
                            name: &table,
                            app_profile_id: &profile,
                        },
                    )
                    .await?;
                let stream = self.data.clone().mutate_rows(req).await.map_err(status)?;
                Ok(AsyncReply::Stream(Box::pin(stream.into_inner().map(
                    |part| {
                        part.map_err(|s| convert::status_to_error(&s))
                            .and_then(convert::mutate_rows_response_from_pb)
                            .map(Response::MutateRowsPart)
                    },
                ))))
            }
            Request::CheckAndMutateRow(r) => {
                let table = self.target.table_name(&r.table);
                let profile = self.profile(&r.app_profile_id).to_string();
                let msg = pb::CheckAndMutateRowRequest {
                    table_name: table.clone(),
                    app_profile_id: profile.clone(),
                    row_key: r.row_key,
                    predicate_filter: r.predicate.map(convert::filter_to_pb),
                    true_mutations: convert::mutations_to_pb(r.true_mutations),
                    false_mutations: convert::mutations_to_pb(r.false_mutations),
                    ..Default::default()
                };
                let req = self
                    .wrap(
                        msg,
                        Routing::Table {
                            name: &table,
                            app_profile_id: &profile,
                        },
                    )
                    .await?;
                let reply = self
                    .data
                    .clone()
                    .check_and_mutate_row(req)
                    .await
                    .map_err(status)?;
                Ok(AsyncReply::Unary(Response::CheckAndMutateRow {
                    predicate_matched: reply.into_inner().predicate_matched,
                }))
            }
            Request::ReadModifyWriteRow(r) => {
                let table = self.target.table_name(&r.table);
                let profile = self.profile(&r.app_profile_id).to_string();
                let msg = pb::ReadModifyWriteRowRequest {
                    table_name: table.clone(),
                    app_profile_id: profile.clone(),
                    row_key: r.row_key,
                    rules: r.rules.into_iter().map(convert::rule_to_pb).collect(),
                    ..Default::default()
                };
                let req = self
                    .wrap(
                        msg,
                        Routing::Table {
                            name: &table,
                            app_profile_id: &profile,
                        },
                    )
                    .await?;
                let reply = self
                    .data
                    .clone()
                    .read_modify_write_row(req)
                    .await
                    .map_err(status)?;
                let row = reply.into_inner().row.unwrap_or_default();
                Ok(AsyncReply::Unary(Response::ReadModifyWriteRow(
                    convert::row_from_pb(row),
                )))
            }
            Request::SampleRowKeys(r) => {
                let table = self.target.table_name(&r.table);
                let profile = self.profile(&r.app_profile_id).to_string();
                let msg = pb::SampleRowKeysRequest {
                    table_name: table.clone(),
                    app_profile_id: profile.clone(),
                    ..Default::default()
                };
                let req = self
                    .wrap(
                        msg,
                        Routing::Table {
                            name: &table,
                            app_profile_id: &profile,
                        },
                    )
                    .await?;
                let stream = self
                    .data
                    .clone()
                    .sample_row_keys(req)
                    .await
                    .map_err(status)?;
                Ok(AsyncReply::Stream(Box::pin(stream.into_inner().map(
                    |part| {
                        part.map(|p| Response::SampleRowKeysPart(convert::sample_from_pb(p)))
                            .map_err(|s| convert::status_to_error(&s))
                    },
                ))))
            }
        }
    }

    /// Executes one request as a single stream of everything the machine must see: the unary
    /// response, or the parts then [`Response::StreamEnd`]; a failure is one `Err` item and
    /// ends the stream. This is what the Tokio driver polls per tag.
    pub fn call(&self, request: Request) -> PartStream {
        enum State {
            Start(Box<(BigtableConnection, Request)>),
            Parts(PartStream),
            Done,
        }
        let state = State::Start(Box::new((self.clone(), request)));
        Box::pin(futures_util::stream::unfold(state, |state| async move {
            match state {
                State::Start(start) => match start.0.execute(start.1).await {
                    Ok(AsyncReply::Unary(r)) => Some((Ok(r), State::Done)),
                    Ok(AsyncReply::Stream(mut parts)) => match parts.next().await {
                        Some(Ok(p)) => Some((Ok(p), State::Parts(parts))),
                        Some(Err(e)) => Some((Err(e), State::Done)),
                        None => Some((Ok(Response::StreamEnd), State::Done)),
                    },
                    Err(e) => Some((Err(e), State::Done)),
                },
                State::Parts(mut parts) => match parts.next().await {
                    Some(Ok(p)) => Some((Ok(p), State::Parts(parts))),
                    Some(Err(e)) => Some((Err(e), State::Done)),
                    None => Some((Ok(Response::StreamEnd), State::Done)),
                },
                State::Done => None,
            }
        }))
    }

    // --- table admin ---------------------------------------------------------------------

    /// Creates a table with its families and their GC rules (`ALREADY_EXISTS` if it exists).
    pub async fn create_table(
        &self,
        table: &str,
        families: &[ColumnFamily],
    ) -> Result<(), StoreError> {
        let parent = self.target.instance_name();
        let msg = admin::CreateTableRequest {
            parent: parent.clone(),
            table_id: table.to_string(),
            table: Some(admin::Table {
                column_families: families
                    .iter()
                    .map(|f| (f.name.clone(), convert::family_to_pb(f)))
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let req = self.wrap(msg, Routing::Parent(&parent)).await?;
        self.admin
            .clone()
            .create_table(req)
            .await
            .map_err(|s| convert::status_to_error(&s))?;
        Ok(())
    }

    /// Deletes a table (`NOT_FOUND` if missing).
    pub async fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        let name = self.target.table_name(table);
        let req = self
            .wrap(
                admin::DeleteTableRequest { name: name.clone() },
                Routing::Name(&name),
            )
            .await?;
        self.admin
            .clone()
            .delete_table(req)
            .await
            .map_err(|s| convert::status_to_error(&s))?;
        Ok(())
    }

    /// Table ids of the instance, ascending (all pages).
    pub async fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        let parent = self.target.instance_name();
        let prefix = format!("{parent}/tables/");
        let mut out = Vec::new();
        let mut page_token = String::new();
        loop {
            let msg = admin::ListTablesRequest {
                parent: parent.clone(),
                view: admin::table::View::NameOnly as i32,
                page_token: page_token.clone(),
                ..Default::default()
            };
            let req = self.wrap(msg, Routing::Parent(&parent)).await?;
            let page = self
                .admin
                .clone()
                .list_tables(req)
                .await
                .map_err(|s| convert::status_to_error(&s))?
                .into_inner();
            out.extend(page.tables.into_iter().map(|t| {
                t.name
                    .strip_prefix(&prefix)
                    .map(str::to_string)
                    .unwrap_or(t.name)
            }));
            if page.next_page_token.is_empty() {
                break;
            }
            page_token = page.next_page_token;
        }
        out.sort();
        Ok(out)
    }

    /// The families of a table with their GC rules, ascending by name (`NOT_FOUND` if the
    /// table is missing).
    pub async fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        let name = self.target.table_name(table);
        let msg = admin::GetTableRequest {
            name: name.clone(),
            view: admin::table::View::SchemaView as i32,
        };
        let req = self.wrap(msg, Routing::Name(&name)).await?;
        let t = self
            .admin
            .clone()
            .get_table(req)
            .await
            .map_err(|s| convert::status_to_error(&s))?
            .into_inner();
        Ok(convert::families_from_pb(&t)?)
    }

    /// Adds a family to a table, or replaces the GC rule of an existing one.
    pub async fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        use admin::modify_column_families_request::{Modification, modification::Mod};
        let exists = self
            .families(table)
            .await?
            .iter()
            .any(|f| f.name == family.name);
        let pb_family = convert::family_to_pb(family);
        let name = self.target.table_name(table);
        let msg = admin::ModifyColumnFamiliesRequest {
            name: name.clone(),
            modifications: vec![Modification {
                id: family.name.clone(),
                update_mask: None,
                r#mod: Some(if exists {
                    Mod::Update(pb_family)
                } else {
                    Mod::Create(pb_family)
                }),
            }],
            ignore_warnings: false,
        };
        let req = self.wrap(msg, Routing::Name(&name)).await?;
        self.admin
            .clone()
            .modify_column_families(req)
            .await
            .map_err(|s| convert::status_to_error(&s))?;
        Ok(())
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters, as the routing header
/// requires (`/` becomes `%2F`).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Every call carries the routing header, the feature flags and the bearer token.
    #[test]
    fn metadata_on_every_call() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let ch = Channel::from_static("http://127.0.0.1:1").connect_lazy();
            let tokens: Arc<dyn TokenProvider> = Arc::new(crate::StaticToken::new("tok"));
            let conn = BigtableConnection {
                data: BigtableClient::new(ch.clone()),
                admin: BigtableTableAdminClient::new(ch),
                target: Arc::new(Target::cloud("p", "i")),
                tokens: Some(tokens),
            };
            let name = conn.target.table_name("t");
            let req = conn
                .wrap(
                    (),
                    Routing::Table {
                        name: &name,
                        app_profile_id: "ap",
                    },
                )
                .await
                .unwrap();
            let md = req.metadata();
            assert_eq!(
                md.get("x-goog-request-params").unwrap(),
                "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft&app_profile_id=ap"
            );
            assert_eq!(md.get("bigtable-features").unwrap(), "CAE=");
            assert_eq!(md.get("authorization").unwrap(), "Bearer tok");
            let parent = conn.target.instance_name();
            let req = conn.wrap((), Routing::Parent(&parent)).await.unwrap();
            assert_eq!(
                req.metadata().get("x-goog-request-params").unwrap(),
                "parent=projects%2Fp%2Finstances%2Fi"
            );
        });
    }

    #[test]
    fn routing_header_encoding() {
        assert_eq!(
            percent_encode("projects/p/instances/i/tables/t-1.x"),
            "projects%2Fp%2Finstances%2Fi%2Ftables%2Ft-1.x"
        );
        assert_eq!(percent_encode("a b&c"), "a%20b%26c");
    }
}
