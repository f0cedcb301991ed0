//! What the gateway tests share: a gateway on its own runtime, and [`HttpStore`], a rowkit
//! `Store` whose data calls go over HTTP to it.
#![allow(clippy::unwrap_used, dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rowkit_codec::model::{ColumnFamily, Timestamp};
use rowkit_store::driver::ManualClock;
use rowkit_store::{Reply, Store};
use rowkit_gateway::{Gateway, GatewayConfig};
use rowkit_rest::{
    ArraySplitter, Method, TableName, decode_error, decode_response, decode_stream_element,
    encode_request,
};
use rowkit_statemachines::{Code, Request, Response, StoreError};
use rowkit_testkit::suite;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// Seed of every memory store, so `row_sample_filter` draws agree.
pub const SEED: u64 = 0x5eed;

pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A gateway running on its own runtime until dropped.
pub struct Running {
    /// The bound address.
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    /// The gateway's clock.
    pub clock: Arc<ManualClock>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub fn start(rt: &Runtime, store: Arc<dyn Store>, config: GatewayConfig) -> Running {
    let clock = Arc::new(ManualClock::new(suite::SUITE_NOW));
    let gateway = rt
        .block_on(Gateway::bind(config, store, clock.clone()))
        .unwrap();
    let addr = gateway.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel();
    rt.spawn(gateway.serve(async {
        let _ = stopped.await;
    }));
    Running {
        addr,
        stop: Some(stop),
        clock,
    }
}

pub fn local() -> GatewayConfig {
    GatewayConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..GatewayConfig::default()
    }
}

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// A whole HTTP answer.
pub struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    /// The `google.rpc.Status` of an error answer.
    pub fn error(&self) -> StoreError {
        decode_error(self.status, &self.body)
    }
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }
}

/// Sends `req` and reads the whole answer.
pub fn send(rt: &Runtime, req: hyper::Request<Full<Bytes>>) -> Answer {
    rt.block_on(async {
        let response = client().request(req).await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec();
        Answer {
            status,
            headers,
            body,
        }
    })
}

/// A rowkit [`Store`] whose data calls go over HTTP to a gateway (the JSON API, as
/// `rowkit-fetch` speaks it); admin calls, which the JSON API does not carry, go straight to
/// the store behind the gateway.
pub struct HttpStore {
    /// Runtime the HTTP calls run on.
    pub rt: Arc<Runtime>,
    /// The HTTP client.
    pub client: HttpClient,
    /// The gateway.
    pub addr: SocketAddr,
    /// The gateway's clock, moved to each request's `now`.
    pub clock: Arc<ManualClock>,
    /// The store behind the gateway, for admin calls.
    pub admin: Arc<dyn Store>,
}

impl HttpStore {
    pub async fn call(
        &self,
        request: Request,
    ) -> Result<Vec<Result<Response, StoreError>>, StoreError> {
        let method = Method::of(&request);
        let table = TableName::new("p", "i", request.table());
        let body = encode_request(&request).map_err(StoreError::from)?;
        let req = hyper::Request::post(format!("http://{}{}", self.addr, table.path(method)))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let response = self
            .client
            .request(req)
            .await
            .map_err(|e| StoreError::new(Code::Unavailable, e.to_string()))?;
        let status = response.status().as_u16();
        let mut body = response.into_body();
        if !(200..300).contains(&status) {
            let bytes = body.collect().await.unwrap().to_bytes();
            return Err(decode_error(status, &bytes));
        }
        if !method.is_streaming() {
            let bytes = body.collect().await.unwrap().to_bytes();
            return Ok(vec![Ok(
                decode_response(method, &bytes).map_err(|e| e.into_protocol_error())?
            )]);
        }
        // Streamed: push every network frame through the splitter as it arrives.
        assert!(response_is_chunked_hint(&body));
        let mut splitter = ArraySplitter::new();
        let mut parts = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| StoreError::new(Code::Unavailable, e.to_string()))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            for element in splitter
                .push_all(&data)
                .map_err(|e| StoreError::new(e.code(), e.to_string()))?
            {
                match decode_stream_element(method, &element)
                    .map_err(|e| e.into_protocol_error())?
                {
                    Ok(part) => parts.push(Ok(part)),
                    Err(e) => parts.push(Err(e)),
                }
            }
        }
        splitter
            .finish()
            .map_err(|e| StoreError::new(e.code(), e.to_string()))?;
        Ok(parts)
    }
}

/// A streamed body never has an exact size: the gateway uses chunked framing.
fn response_is_chunked_hint(body: &Incoming) -> bool {
    use hyper::body::Body as _;
    body.size_hint().exact().is_none()
}

impl Store for HttpStore {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        self.clock.advance_to(now);
        let streaming = request.is_streaming();
        let mut parts = self.rt.block_on(self.call(request))?;
        if streaming {
            Ok(Reply::Stream(Box::new(parts.into_iter())))
        } else {
            Ok(Reply::Unary(parts.remove(0)?))
        }
    }
    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        self.admin.create_table(table, families)
    }
    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        self.admin.delete_table(table)
    }
    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        self.admin.list_tables()
    }
    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        self.admin.families(table)
    }
    fn gc(&self, table: &str, now: Timestamp) -> Result<u64, StoreError> {
        self.admin.gc(table, now)
    }
}
