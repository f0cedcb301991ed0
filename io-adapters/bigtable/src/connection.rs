//! The async connection: one HTTP/2 connection to the emulator, or two TLS tonic channels
//! (data and admin endpoints) to Cloud Bigtable, or one to an endpoint override
//! (`crate::transport`), rowkit requests in, rowkit responses out. It executes exactly one RPC
//! per call and never retries: retry and resume decisions belong to the machines.
//!
//! Every RPC, data or admin, unary or streaming, takes one path, `BigtableConnection::send`
//! (metadata, the call, status mapping). What differs per RPC is data: the `rpcs!` table
//! names its client, its generated method, the request fields it is routed by and its reply
//! (a message, or a `Streaming` of them), and [`BigtableConnection::execute`] and the admin
//! methods only move rowkit values into and out of the prost messages.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2::bigtable_table_admin_client::BigtableTableAdminClient;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2::bigtable_client::BigtableClient;
use prost::bytes::Bytes;
use rowkit_codec::model::{Code, ColumnFamily, RowSet};
use rowkit_statemachines::readrows::ChunkMerger;
use rowkit_statemachines::{Request, Response, StoreError};
use tonic::Streaming;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Certificate, Channel, ClientTlsConfig};

use crate::transport::{Direct, Transport};

use crate::auth::TokenProvider;
use crate::status::status_to_error;
use crate::target::{CLOUD_ADMIN_ENDPOINT, CLOUD_DATA_ENDPOINT, Endpoint, Target};
use rowkit_proto::{self as convert, MAX_ENCODING_MESSAGE_SIZE};

/// Largest gRPC message accepted: a response carries a whole row with unsplit values (up to
/// 100 MiB per cell), far above tonic's 4 MiB default.
pub const MAX_DECODING_MESSAGE_SIZE: usize = 256 << 20;
/// `bigtable-features` metadata: `FeatureFlags { reverse_scans: true,
/// last_scanned_row_responses: true }`, websafe base64 (`spec/bigtable.md` 9.2). Without
/// `reverse_scans` the server refuses reversed reads; with `last_scanned_row_responses` it may
/// tell how far a filtered scan got, which the merger keeps for a retry.
pub const FEATURE_FLAGS: &str = "CAEgAQ==";

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

/// One RPC, implemented on its prost request message by `rpcs!`.
trait Rpc: Sized + Send + 'static {
    /// What the generated method returns: the response message of a unary RPC, or a
    /// `Streaming` of them for a server-streaming one.
    type Reply;
    /// The `x-goog-request-params` routing header: the request's resource fields.
    fn routing(&self) -> Result<MetadataValue<Ascii>, StoreError>;
    /// Calls the generated method on a clone of the connection's client (tonic clients take
    /// `&mut self`; a clone shares the channel).
    fn invoke(
        conn: &Shared,
        request: tonic::Request<Self>,
    ) -> impl Future<Output = Result<tonic::Response<Self::Reply>, tonic::Status>> + Send;
}

/// Implements [`Rpc`] for each `client.method(Request; routing fields) -> Reply;` row.
macro_rules! rpcs {
    ($($client:ident.$method:ident($request:ty; $($field:ident),+) -> $reply:ty;)*) => {$(
        impl Rpc for $request {
            type Reply = $reply;
            fn routing(&self) -> Result<MetadataValue<Ascii>, StoreError> {
                routing_header(&[$((stringify!($field), self.$field.as_str())),+])
            }
            fn invoke(
                conn: &Shared,
                request: tonic::Request<Self>,
            ) -> impl Future<Output = Result<tonic::Response<$reply>, tonic::Status>> + Send {
                let mut client = conn.$client.clone();
                async move { client.$method(request).await }
            }
        }
    )*};
}

rpcs! {
    data.read_rows(pb::ReadRowsRequest; table_name, app_profile_id)
        -> Streaming<pb::ReadRowsResponse>;
    data.sample_row_keys(pb::SampleRowKeysRequest; table_name, app_profile_id)
        -> Streaming<pb::SampleRowKeysResponse>;
    data.mutate_row(pb::MutateRowRequest; table_name, app_profile_id) -> pb::MutateRowResponse;
    data.mutate_rows(pb::MutateRowsRequest; table_name, app_profile_id)
        -> Streaming<pb::MutateRowsResponse>;
    data.check_and_mutate_row(pb::CheckAndMutateRowRequest; table_name, app_profile_id)
        -> pb::CheckAndMutateRowResponse;
    data.read_modify_write_row(pb::ReadModifyWriteRowRequest; table_name, app_profile_id)
        -> pb::ReadModifyWriteRowResponse;
    admin.create_table(admin::CreateTableRequest; parent) -> admin::Table;
    admin.delete_table(admin::DeleteTableRequest; name) -> ();
    admin.list_tables(admin::ListTablesRequest; parent) -> admin::ListTablesResponse;
    admin.get_table(admin::GetTableRequest; name) -> admin::Table;
    admin.modify_column_families(admin::ModifyColumnFamiliesRequest; name) -> admin::Table;
}

/// `k1=v1&k2=v2` with the values percent-encoded, in one buffer of the exact size, which the
/// header value then takes without copying.
fn routing_header(params: &[(&str, &str)]) -> Result<MetadataValue<Ascii>, StoreError> {
    let len = params
        .iter()
        .map(|(k, v)| k.len() + 2 + encoded_len(v))
        .sum::<usize>();
    let mut out = String::with_capacity(len.saturating_sub(1));
    for (i, (key, value)) in params.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(key);
        out.push('=');
        percent_encode_into(&mut out, value);
    }
    debug_assert_eq!(out.len(), out.capacity());
    MetadataValue::try_from(Bytes::from(out)).map_err(|_| {
        StoreError::new(
            Code::InvalidArgument,
            "routing header: failed to parse metadata value",
        )
    })
}

/// A server stream as [`AsyncReply::Stream`]: each message converted by `part`, a status
/// mapped. The stream owns the tonic call, so dropping it cancels the RPC.
fn parts<M: Send + 'static>(
    stream: Streaming<M>,
    part: impl Fn(M) -> Result<Response, StoreError> + Send + 'static,
) -> AsyncReply {
    AsyncReply::Stream(Box::pin(
        stream.map(move |m| m.map_err(|s| status_to_error(&s)).and_then(&part)),
    ))
}

/// What the clones of a connection share.
struct Shared {
    data: BigtableClient<Transport>,
    admin: BigtableTableAdminClient<Transport>,
    target: Target,
    /// `projects/P/instances/I`, built once per connection.
    instance: String,
    /// `projects/P/instances/I/tables/`: a table id appended makes the table's name.
    tables: String,
    tokens: Option<Arc<dyn TokenProvider>>,
}

/// A connection to one Bigtable instance (emulator or cloud). Cheap to clone: clones share the
/// HTTP/2 channels.
#[derive(Clone)]
pub struct BigtableConnection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for BigtableConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BigtableConnection")
            .field("target", &self.shared.target)
            .field("authenticated", &self.shared.tokens.is_some())
            .finish()
    }
}

fn transport_error(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::new(Code::Unavailable, format!("{what}: {e}"))
}

/// How long connecting to a Cloud Bigtable endpoint (TCP and TLS) may take: an unreachable
/// network fails within it instead of hanging for the system's TCP timeout (minutes).
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// A TLS channel to a Cloud Bigtable endpoint, trusting the system's roots and `extra_roots`
/// (PEM) if given.
async fn cloud_channel(uri: String, extra_roots: Option<&[u8]>) -> Result<Channel, StoreError> {
    let mut tls = ClientTlsConfig::new();
    match extra_roots {
        Some(pem) => {
            tls = tls.ca_certificate(Certificate::from_pem(pem));
            // The system's roots too, where there are any (tonic refuses an empty set).
            if !rustls_native_certs::load_native_certs().certs.is_empty() {
                tls = tls.with_native_roots();
            }
        }
        None => tls = tls.with_native_roots(),
    }
    Channel::from_shared(uri.clone())
        .map_err(|e| StoreError::new(Code::InvalidArgument, format!("endpoint {uri}: {e}")))?
        .tcp_nodelay(true)
        .connect_timeout(CONNECT_TIMEOUT)
        .http2_keep_alive_interval(std::time::Duration::from_secs(30))
        .keep_alive_while_idle(true)
        .tls_config(tls)
        .map_err(|e| transport_error("TLS configuration", error_chain(&e)))?
        .connect()
        .await
        .map_err(|e| transport_error(&format!("connecting to {uri}"), error_chain(&e)))
}

/// An error and its sources on one line, each text said once: tonic's transport errors say only
/// "transport error" and keep the cause (DNS, refused, certificate) in their sources, and many
/// errors repeat their source's text in their own.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut said: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(e) = next {
        let text = e.to_string();
        if !said.iter().any(|s| s.contains(&text)) {
            // A deeper error that extends a shallower one ("dns error" then "dns error: …")
            // replaces it.
            said.retain(|s| !text.contains(s.as_str()));
            said.push(text);
        }
        next = e.source();
    }
    said.join(": ")
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
                let origin = format!("http://{host}");
                let origin = tonic::codegen::http::Uri::try_from(origin.as_str()).map_err(|e| {
                    StoreError::new(Code::InvalidArgument, format!("endpoint {origin}: {e}"))
                })?;
                let direct = Direct::connect(host)
                    .await
                    .map_err(|s| StoreError::new(Code::Unavailable, s.message()))?;
                let t = Transport::Direct(direct);
                (
                    BigtableClient::with_origin(t.clone(), origin.clone()),
                    BigtableTableAdminClient::with_origin(t, origin),
                )
            }
            Endpoint::Cloud | Endpoint::Custom { .. } => {
                if tokens.is_none() {
                    return Err(StoreError::new(
                        Code::InvalidArgument,
                        "Cloud Bigtable needs credentials (a TokenProvider); for the emulator use ?emulator=HOST:PORT or BIGTABLE_EMULATOR_HOST",
                    ));
                }
                let (data, admin) = match &target.endpoint {
                    Endpoint::Custom { url, ca_file } => {
                        let roots = match ca_file {
                            Some(file) => Some(std::fs::read(file).map_err(|e| {
                                StoreError::new(
                                    Code::InvalidArgument,
                                    format!("ca={}: {e}", file.display()),
                                )
                            })?),
                            None => None,
                        };
                        // One channel: the override serves data and admin calls alike.
                        let channel = cloud_channel(url.clone(), roots.as_deref()).await?;
                        (channel.clone(), channel)
                    }
                    // Both at once: an unreachable network costs one connect timeout.
                    _ => tokio::try_join!(
                        cloud_channel(CLOUD_DATA_ENDPOINT.to_string(), None),
                        cloud_channel(CLOUD_ADMIN_ENDPOINT.to_string(), None),
                    )?,
                };
                (
                    BigtableClient::new(Transport::Channel(data)),
                    BigtableTableAdminClient::new(Transport::Channel(admin)),
                )
            }
        };
        Ok(BigtableConnection::new(
            data.max_decoding_message_size(MAX_DECODING_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_ENCODING_MESSAGE_SIZE),
            admin.max_decoding_message_size(MAX_DECODING_MESSAGE_SIZE),
            target,
            tokens,
        ))
    }

    fn new(
        data: BigtableClient<Transport>,
        admin: BigtableTableAdminClient<Transport>,
        target: Target,
        tokens: Option<Arc<dyn TokenProvider>>,
    ) -> BigtableConnection {
        let instance = target.instance_name();
        BigtableConnection {
            shared: Arc::new(Shared {
                data,
                admin,
                tables: format!("{instance}/tables/"),
                instance,
                target,
                tokens,
            }),
        }
    }

    /// The same channels, addressing another project/instance (no new connection).
    pub fn with_instance(&self, project: &str, instance: &str) -> BigtableConnection {
        let s = &self.shared;
        let target = s.target.with_instance(project, instance);
        BigtableConnection::new(s.data.clone(), s.admin.clone(), target, s.tokens.clone())
    }

    /// Where the connection goes.
    pub fn target(&self) -> &Target {
        &self.shared.target
    }

    /// A message with the metadata every call carries: the routing header
    /// (`x-goog-request-params`, the request's resource fields percent-encoded), the feature
    /// flags and, on Cloud Bigtable, the credentials' headers (the bearer token, and the quota
    /// project if one is configured).
    async fn request<R: Rpc>(&self, message: R) -> Result<tonic::Request<R>, StoreError> {
        let routing = message.routing()?;
        let mut request = tonic::Request::new(message);
        let md = request.metadata_mut();
        md.insert("x-goog-request-params", routing);
        md.insert(
            "bigtable-features",
            MetadataValue::from_static(FEATURE_FLAGS),
        );
        if let Some(tokens) = &self.shared.tokens {
            let mut headers = std::mem::take(md).into_headers();
            headers.extend(tokens.headers().await?);
            *md = tonic::metadata::MetadataMap::from_headers(headers);
        }
        Ok(request)
    }

    /// The one call path: `message` with its metadata, one RPC (no retry), the status mapped
    /// to a [`StoreError`].
    async fn send<R: Rpc>(&self, message: R) -> Result<R::Reply, StoreError> {
        let request = self.request(message).await?;
        R::invoke(&self.shared, request)
            .await
            .map(tonic::Response::into_inner)
            .map_err(|s| status_to_error(&s))
    }

    /// `projects/P/instances/I/tables/T`.
    fn table_name(&self, table: &str) -> String {
        [self.shared.tables.as_str(), table].concat()
    }

    /// The app profile a data call sends: the request's, else the connection's.
    fn profile(&self, requested: String) -> String {
        if requested.is_empty() {
            self.shared.target.app_profile_id.clone()
        } else {
            requested
        }
    }

    /// Executes one request: one RPC, no retry. Streaming RPCs return their parts as a stream
    /// (lazily: a long scan is never buffered). Request bodies move into the messages.
    pub async fn execute(&self, request: Request) -> Result<AsyncReply, StoreError> {
        match request {
            Request::ReadRows(r) => {
                let msg = pb::ReadRowsRequest {
                    table_name: self.table_name(&r.table),
                    app_profile_id: self.profile(r.app_profile_id),
                    rows: Some(convert::row_set_to_pb(r.rows)),
                    filter: r.filter.map(convert::filter_to_pb),
                    rows_limit: r.rows_limit,
                    reversed: r.reversed,
                    ..Default::default()
                };
                Ok(parts(self.send(msg).await?, |p| {
                    Ok(Response::ReadRowsPart(convert::read_rows_response_from_pb(
                        p,
                    )))
                }))
            }
            Request::ReadRow(r) => {
                // No point-read RPC: a one-key ReadRows, its chunks joined by the one merger.
                let msg = pb::ReadRowsRequest {
                    table_name: self.table_name(&r.table),
                    app_profile_id: self.profile(r.app_profile_id),
                    rows: Some(convert::row_set_to_pb(RowSet::key(r.row_key))),
                    filter: r.filter.map(convert::filter_to_pb),
                    ..Default::default()
                };
                let mut stream = self.send(msg).await?;
                let mut merger = ChunkMerger::new(false, 0);
                while let Some(part) = stream.next().await {
                    let part = part.map_err(|s| status_to_error(&s))?;
                    merger.push_response(convert::read_rows_response_from_pb(part))?;
                }
                merger.end_of_stream()?;
                Ok(AsyncReply::Unary(Response::Row(merger.pop_shared_row())))
            }
            Request::MutateRow(r) => {
                let msg = pb::MutateRowRequest {
                    table_name: self.table_name(&r.table),
                    app_profile_id: self.profile(r.app_profile_id),
                    row_key: r.row_key,
                    mutations: convert::mutations_to_pb(r.mutations),
                    ..Default::default()
                };
                self.send(msg).await?;
                Ok(AsyncReply::Unary(Response::MutateRow))
            }
            Request::MutateRows(r) => {
                let msg = pb::MutateRowsRequest {
                    table_name: self.table_name(&r.table),
                    app_profile_id: self.profile(r.app_profile_id),
                    // The entries are shared with the retrying machine, which keeps them
                    // for a retry: copied here, once, as its own copy was before.
                    entries: r
                        .entries
                        .iter()
                        .map(|e| pb::mutate_rows_request::Entry {
                            row_key: e.row_key.clone(),
                            mutations: convert::mutations_to_pb(e.mutations.clone()),
                            idempotency: None,
                        })
                        .collect(),
                    ..Default::default()
                };
                Ok(parts(self.send(msg).await?, |p| {
                    convert::mutate_rows_response_from_pb(p).map(Response::MutateRowsPart)
                }))
            }
            Request::CheckAndMutateRow(r) => {
                let msg = pb::CheckAndMutateRowRequest {
                    table_name: self.table_name(&r.table),
                    app_profile_id: self.profile(r.app_profile_id),
                    row_key: r.row_key,
                    predicate_filter: r.predicate.map(convert::filter_to_pb),
                    true_mutations: convert::mutations_to_pb(r.true_mutations),
                    false_mutations: convert::mutations_to_pb(r.false_mutations),
                    ..Default::default()
                };
                let predicate_matched = self.send(msg).await?.predicate_matched;
                Ok(AsyncReply::Unary(Response::CheckAndMutateRow {
                    predicate_matched,
                }))
            }
            Request::ReadModifyWriteRow(r) => {
                let msg = pb::ReadModifyWriteRowRequest {
                    table_name: self.table_name(&r.table),
                    app_profile_id: self.profile(r.app_profile_id),
                    row_key: r.row_key,
                    rules: r.rules.into_iter().map(convert::rule_to_pb).collect(),
                    ..Default::default()
                };
                let row = self.send(msg).await?.row.unwrap_or_default();
                Ok(AsyncReply::Unary(Response::ReadModifyWriteRow(
                    convert::row_from_pb(row),
                )))
            }
            Request::SampleRowKeys(r) => {
                let msg = pb::SampleRowKeysRequest {
                    table_name: self.table_name(&r.table),
                    app_profile_id: self.profile(r.app_profile_id),
                    ..Default::default()
                };
                Ok(parts(self.send(msg).await?, |p| {
                    Ok(Response::SampleRowKeysPart(convert::sample_from_pb(p)))
                }))
            }
        }
    }

    /// Executes one request as a single stream of everything the machine must see: the unary
    /// response, or the parts then [`Response::StreamEnd`]; a failure is one `Err` item and
    /// ends the stream. This is what `rowkit-client`'s `TokioDriver` polls per tag.
    pub fn call(&self, request: Request) -> PartStream {
        enum State {
            Start(BigtableConnection, Request),
            Parts(PartStream),
            Done,
        }
        let state = State::Start(self.clone(), request);
        Box::pin(futures_util::stream::unfold(state, |state| async move {
            let mut parts = match state {
                State::Start(conn, request) => match conn.execute(request).await {
                    Ok(AsyncReply::Stream(parts)) => parts,
                    Ok(AsyncReply::Unary(r)) => return Some((Ok(r), State::Done)),
                    Err(e) => return Some((Err(e), State::Done)),
                },
                State::Parts(parts) => parts,
                State::Done => return None,
            };
            match parts.next().await {
                Some(Ok(p)) => Some((Ok(p), State::Parts(parts))),
                Some(Err(e)) => Some((Err(e), State::Done)),
                None => Some((Ok(Response::StreamEnd), State::Done)),
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
        self.create_table_with_splits(table, families, &[]).await
    }

    /// [`BigtableConnection::create_table`], pre-split at `splits` (CreateTable's
    /// `initial_splits`).
    pub async fn create_table_with_splits(
        &self,
        table: &str,
        families: &[ColumnFamily],
        splits: &[Vec<u8>],
    ) -> Result<(), StoreError> {
        let msg = admin::CreateTableRequest {
            parent: self.shared.instance.clone(),
            table_id: table.to_string(),
            table: Some(admin::Table {
                column_families: families
                    .iter()
                    .map(|f| (f.name.clone(), convert::family_to_pb(f)))
                    .collect(),
                ..Default::default()
            }),
            initial_splits: splits
                .iter()
                .map(|key| admin::create_table_request::Split { key: key.clone() })
                .collect(),
        };
        self.send(msg).await?;
        Ok(())
    }

    /// Deletes a table (`NOT_FOUND` if missing).
    pub async fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        let name = self.table_name(table);
        self.send(admin::DeleteTableRequest { name }).await
    }

    /// Table ids of the instance, ascending (all pages).
    pub async fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        let mut page_token = String::new();
        loop {
            let msg = admin::ListTablesRequest {
                parent: self.shared.instance.clone(),
                view: admin::table::View::NameOnly as i32,
                page_token,
                ..Default::default()
            };
            let page = self.send(msg).await?;
            out.extend(page.tables.into_iter().map(|t| {
                t.name
                    .strip_prefix(&self.shared.tables)
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
        let name = self.table_name(table);
        let view = admin::table::View::SchemaView as i32;
        let t = self.send(admin::GetTableRequest { name, view }).await?;
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
        let msg = admin::ModifyColumnFamiliesRequest {
            name: self.table_name(table),
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
        self.send(msg).await?;
        Ok(())
    }

    /// Drops a family and all its cells from a table (`NOT_FOUND` if the table or the family is
    /// missing: checked here first, as the emulator answers a missing family with `UNKNOWN`).
    pub async fn drop_family(&self, table: &str, family: &str) -> Result<(), StoreError> {
        use admin::modify_column_families_request::{Modification, modification::Mod};
        if !self.families(table).await?.iter().any(|f| f.name == family) {
            return Err(StoreError::new(
                Code::NotFound,
                format!("column family {family:?} not found in table {table:?}"),
            ));
        }
        let msg = admin::ModifyColumnFamiliesRequest {
            name: self.table_name(table),
            modifications: vec![Modification {
                id: family.to_string(),
                update_mask: None,
                r#mod: Some(Mod::Drop(true)),
            }],
            ignore_warnings: false,
        };
        self.send(msg).await?;
        Ok(())
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters, as the routing header
/// requires (`/` becomes `%2F`).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(encoded_len(s));
    percent_encode_into(&mut out, s);
    out
}

/// RFC 3986 unreserved characters: the only ones sent unescaped.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~')
}

/// The length of `s` percent-encoded, to size a buffer exactly.
fn encoded_len(s: &str) -> usize {
    s.bytes().map(|b| if unreserved(b) { 1 } else { 3 }).sum()
}

/// [`percent_encode`] appending to `out`, so a header is built in one buffer.
fn percent_encode_into(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for b in s.bytes() {
        if unreserved(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
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
            let conn = BigtableConnection::new(
                BigtableClient::new(Transport::Channel(ch.clone())),
                BigtableTableAdminClient::new(Transport::Channel(ch)),
                Target::cloud("p", "i"),
                Some(tokens),
            );
            let msg = pb::ReadRowsRequest {
                table_name: conn.table_name("t"),
                app_profile_id: "ap".into(),
                ..Default::default()
            };
            let req = conn.request(msg).await.unwrap();
            let md = req.metadata();
            assert_eq!(
                md.get("x-goog-request-params").unwrap(),
                "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft&app_profile_id=ap"
            );
            assert_eq!(md.get("bigtable-features").unwrap(), "CAEgAQ==");
            assert_eq!(md.get("authorization").unwrap(), "Bearer tok");
            let parent = admin::ListTablesRequest {
                parent: conn.shared.instance.clone(),
                ..Default::default()
            };
            assert_eq!(
                parent.routing().unwrap(),
                "parent=projects%2Fp%2Finstances%2Fi"
            );
            let name = admin::GetTableRequest {
                name: conn.table_name("t"),
                view: 0,
            };
            assert_eq!(
                name.routing().unwrap(),
                "name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft"
            );
        });
    }

    /// A request without an app profile sends the connection's (empty = instance default).
    #[test]
    fn default_app_profile() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = rt.enter();
        let ch = Channel::from_static("http://127.0.0.1:1").connect_lazy();
        let mut target = Target::emulator("127.0.0.1:1", "p", "i");
        let conn = BigtableConnection::new(
            BigtableClient::new(Transport::Channel(ch.clone())),
            BigtableTableAdminClient::new(Transport::Channel(ch)),
            target.clone(),
            None,
        );
        let msg = pb::SampleRowKeysRequest {
            table_name: conn.table_name("t"),
            app_profile_id: conn.profile(String::new()),
            ..Default::default()
        };
        assert_eq!(
            msg.routing().unwrap(),
            "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft&app_profile_id="
        );
        target.app_profile_id = "batch".into();
        let (data, admin) = (conn.shared.data.clone(), conn.shared.admin.clone());
        let conn = BigtableConnection::new(data, admin, target, None);
        assert_eq!(conn.profile(String::new()), "batch");
        assert_eq!(conn.profile("own".into()), "own");
    }

    /// An error chain as one line: each text once, a deeper error that extends a shallower
    /// one in its place.
    #[test]
    fn error_chains_say_each_cause_once() {
        #[derive(Debug)]
        struct Layer(&'static str, Option<Box<Layer>>);
        impl std::fmt::Display for Layer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for Layer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.1.as_deref().map(|l| l as _)
            }
        }
        let chain = |texts: &[&'static str]| {
            texts
                .iter()
                .rev()
                .fold(None, |inner, text| Some(Box::new(Layer(text, inner))))
                .unwrap()
        };
        let dns = chain(&["transport error", "dns error", "dns error: no such host"]);
        assert_eq!(
            error_chain(&*dns),
            "transport error: dns error: no such host"
        );
        let repeated = chain(&["bad certificate: UnknownIssuer", "UnknownIssuer"]);
        assert_eq!(error_chain(&*repeated), "bad certificate: UnknownIssuer");
    }

    #[test]
    fn routing_header_encoding() {
        assert_eq!(
            percent_encode("projects/p/instances/i/tables/t-1.x"),
            "projects%2Fp%2Finstances%2Fi%2Ftables%2Ft-1.x"
        );
        assert_eq!(percent_encode("a b&c"), "a%20b%26c");
        assert_eq!(percent_encode("é\u{7f}"), "%C3%A9%7F");
    }
}
