//! Bigtable v2 gRPC server over any rowkit [`Store`]: `google.bigtable.v2.Bigtable` (ReadRows,
//! SampleRowKeys, MutateRow, MutateRows, CheckAndMutateRow, ReadModifyWriteRow, PingAndWarm),
//! the table-admin calls clients and `cbt` use (`google.bigtable.admin.v2.BigtableTableAdmin`:
//! CreateTable, ListTables, GetTable, DeleteTable, ModifyColumnFamilies, DropRowRange,
//! GenerateConsistencyToken, CheckConsistency) and the instance admin's reads of the one
//! instance the server is (`BigtableInstanceAdmin`: instance, cluster, app profiles; its
//! writes answer `PERMISSION_DENIED`) and `grpc.health.v1.Health` (SERVING; no token needed).
//! Every other RPC answers `UNIMPLEMENTED`; every call is logged
//! (`rowkit_serving::access_log`). Clients reach it as any emulator:
//! `BIGTABLE_EMULATOR_HOST=ADDR`.
//!
//! - Semantics: every data call runs through the store's one evaluator
//!   (`rowkit_store::semantics`), so the server is as production-faithful as the stores
//!   (`spec/bigtable.md` 14: production's limits, codes and filters, not the emulator's).
//! - Wire: the service traits are generated at build time from Google's protos (vendored in
//!   `proto/`, compiled by protox, no `protoc`); the messages are the `googleapis-tonic-*` types
//!   the client side uses, converted by `rowkit-proto` (the conversion the Cloud Bigtable
//!   adapter uses too; the server builds without that adapter's channels and credentials).
//! - ReadRows streams from the store row by row through a bounded channel (no whole-table
//!   buffering; a slow reader holds no lock and blocks no writer), cuts values into
//!   [`VALUE_CHUNK_BYTES`] chunks and packs whole rows into responses of about
//!   [`RESPONSE_BYTES`], never splitting a row (but one over gRPC's default 4 MiB receive
//!   limit, for clients other than Go's, which merge a row across responses), and sends `last_scanned_row_key` after a long
//!   filtered-out stretch, as production does. Messages of up to [`MAX_MESSAGE_BYTES`] are
//!   accepted and sent; a larger one is answered `RESOURCE_EXHAUSTED` and one that does not
//!   decode `INVALID_ARGUMENT`, as production (`codes`).
//! - Serving: what the JSON gateway does too, from `rowkit-serving`: store calls off the
//!   runtime, the connection layer, the access log, and the exposure rule: loopback without a
//!   token, any other address only with one, checked as `authorization: Bearer TOKEN` metadata.
//!   [`GrpcServer::with_tls`] serves TLS instead of plaintext (rustls, ring), for clients that
//!   connect as to Cloud Bigtable (an endpoint override and a trusted certificate).
//! - Project and instance in resource names are not checked: the store is one instance.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod admin;
pub mod background;
mod codes;
mod consistency;
mod data;
mod deadline;
mod instance;
mod names;
pub mod wire;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use rowkit_serving::ServeError;
use rowkit_serving::connections::{Connections, Protocols, plaintext, serve};
use rowkit_store::Store;
use rowkit_store::driver::Clock;
use tokio::net::TcpListener;

pub use names::table_id;

/// Service traits generated from Google's protos (server side only; messages come from the
/// `googleapis-tonic-*` crates).
pub mod generated {
    /// `google.bigtable.v2.Bigtable`.
    #[allow(missing_docs, clippy::all)]
    pub mod bigtable {
        include!(concat!(env!("OUT_DIR"), "/google.bigtable.v2.rs"));
    }
    /// `google.bigtable.admin.v2.BigtableTableAdmin` and `BigtableInstanceAdmin`.
    #[allow(missing_docs, clippy::all)]
    pub mod admin {
        include!(concat!(env!("OUT_DIR"), "/google.bigtable.admin.v2.rs"));
    }
}

/// Largest message accepted or sent, instead of gRPC's 4 MiB default: what rowkit's client
/// sends at most (a MutateRow writing a whole 256 MiB row, `spec/bigtable.md` 4, with its
/// framing).
pub const MAX_MESSAGE_BYTES: usize = rowkit_proto::MAX_ENCODING_MESSAGE_SIZE;

/// Values longer than this are split over several chunks (`value_size` on all but the last).
pub const VALUE_CHUNK_BYTES: usize = 1 << 20;

/// A ReadRows response takes no further row once its chunks carry this many value bytes;
/// a row is not split over responses, so a larger row is a response of its own (but one over
/// gRPC's default 4 MiB receive limit is cut into responses of this size for clients that
/// merge a row across responses).
pub const RESPONSE_BYTES: usize = 1 << 20;

/// The default address of `rowkit serve --grpc`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8086";

/// How the server is exposed.
#[derive(Clone, Debug)]
pub struct GrpcConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Bearer token every call must carry; required unless `listen` is loopback.
    pub token: Option<String>,
}

/// What every call shares.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clock: Arc<dyn Clock + Send + Sync>,
}

/// A bound gRPC server, ready to serve.
pub struct GrpcServer {
    listener: TcpListener,
    shared: Shared,
    token: Option<Arc<str>>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    observer: Option<MetadataObserver>,
}

/// Sees the metadata of every call, before the token check (see
/// [`GrpcServer::with_metadata_observer`]).
pub type MetadataObserver = Arc<dyn Fn(&tonic::metadata::MetadataMap) + Send + Sync>;

impl GrpcServer {
    /// Checks the exposure rule and binds the socket.
    pub async fn bind(
        config: GrpcConfig,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock + Send + Sync>,
    ) -> Result<GrpcServer, ServeError> {
        rowkit_serving::check_exposure(config.listen, config.token.as_deref())?;
        let listener = rowkit_serving::listen(config.listen).await?;
        Ok(GrpcServer {
            listener,
            shared: Shared { store, clock },
            token: config.token.map(Arc::from),
            tls: None,
            observer: None,
        })
    }

    /// Shows `observer` the metadata of every call before the token check: for auditing, or a
    /// test asserting what a client sent (its credentials' headers).
    pub fn with_metadata_observer(mut self, observer: MetadataObserver) -> GrpcServer {
        self.observer = Some(observer);
        self
    }

    /// Serves TLS (HTTP/2 by ALPN) with `cert_chain_pem` (the server's certificate first) and
    /// its `private_key_pem`, instead of plaintext. Both are checked now, so a bad pair fails
    /// before anything is served.
    pub fn with_tls(
        mut self,
        cert_chain_pem: &[u8],
        private_key_pem: &[u8],
    ) -> Result<GrpcServer, TlsError> {
        use tokio_rustls::rustls::pki_types::pem::PemObject as _;
        use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain = CertificateDer::pem_slice_iter(cert_chain_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError(format!("certificate chain: {e}")))?;
        if chain.is_empty() {
            return Err(TlsError(
                "certificate chain: no certificate in the PEM".into(),
            ));
        }
        let key = PrivateKeyDer::from_pem_slice(private_key_pem)
            .map_err(|e| TlsError(format!("private key: {e}")))?;
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let mut config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| TlsError(e.to_string()))?;
        // gRPC is HTTP/2: clients pick it by ALPN.
        config.alpn_protocols = vec![b"h2".to_vec()];
        self.tls = Some(tokio_rustls::TlsAcceptor::from(Arc::new(config)));
        Ok(self)
    }

    /// The address actually bound (the real port when asked for port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` resolves, with the default connection limits of a server alone
    /// in its process (see [`GrpcServer::serve_with`]).
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let connections = Connections::new(Default::default());
        self.serve_with(connections, shutdown).await
    }

    /// Serves until `shutdown` resolves, then drains and closes, on the connection layer the
    /// JSON gateway uses too (`rowkit_serving::connections`: limits, timeouts, drain);
    /// `connections` may be shared with the process's other servers.
    pub async fn serve_with(
        self,
        connections: Arc<Connections>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        use codes::ProductionCodes;
        use generated::admin::bigtable_instance_admin_server::BigtableInstanceAdminServer;
        use generated::admin::bigtable_table_admin_server::BigtableTableAdminServer;
        use generated::bigtable::bigtable_server::BigtableServer;
        use tonic::service::interceptor::InterceptedService;
        let (token, observer) = (self.token, self.observer);
        let auth = move |request: tonic::Request<()>| -> Result<tonic::Request<()>, tonic::Status> {
            if let Some(observe) = &observer {
                observe(request.metadata());
            }
            if let Some(token) = &token {
                let given = request
                    .metadata()
                    .get("authorization")
                    .and_then(|v| v.to_str().ok());
                rowkit_serving::check_bearer(given, token, "gRPC server")
                    .map_err(|e| rowkit_proto::error_to_status(&e))?;
            }
            Ok(request)
        };
        let data = BigtableServer::new(data::DataService(self.shared.clone()))
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let admin = BigtableTableAdminServer::new(admin::AdminService::new(self.shared))
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let instance_admin = BigtableInstanceAdminServer::new(instance::InstanceAdminService);
        // `grpc.health.v1.Health`, open like the gateway's `/healthz` (probes carry no token,
        // and it says only that the server is up): SERVING for the server ("") and each service.
        let (health, health_service) = tonic_health::server::health_reporter();
        health
            .set_serving::<BigtableServer<data::DataService>>()
            .await;
        health
            .set_serving::<BigtableTableAdminServer<admin::AdminService>>()
            .await;
        health
            .set_serving::<BigtableInstanceAdminServer<instance::InstanceAdminService>>()
            .await;
        // Each service answers undecodable and oversized requests with production's codes.
        let app = tonic::service::Routes::new(ProductionCodes(InterceptedService::new(
            data,
            auth.clone(),
        )))
        .add_service(ProductionCodes(InterceptedService::new(
            admin,
            auth.clone(),
        )))
        .add_service(ProductionCodes(InterceptedService::new(
            instance_admin,
            auth,
        )))
        .add_service(health_service)
        .prepare()
        .into_axum_router()
        .layer(axum::middleware::from_fn(deadline::client_deadline))
        // Outermost: the line has the status the client got, deadline answers included.
        .layer(axum::middleware::from_fn(rowkit_serving::access_log::grpc));
        let protocols = Protocols::Http2Only;
        match self.tls {
            Some(tls) => {
                let handshake = move |tcp| {
                    let tls = tls.clone();
                    async move { tls.accept(tcp).await }
                };
                serve(
                    self.listener,
                    app,
                    connections,
                    protocols,
                    handshake,
                    shutdown,
                )
                .await
            }
            None => {
                serve(
                    self.listener,
                    app,
                    connections,
                    protocols,
                    plaintext,
                    shutdown,
                )
                .await
            }
        }
    }
}

/// A certificate or key [`GrpcServer::with_tls`] cannot use.
#[derive(Debug)]
pub struct TlsError(String);

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}
