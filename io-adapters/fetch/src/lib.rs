//! The browser's transport (`spec/sans-io.md` 4.3): one request to a rowkit gateway (or
//! anything speaking the Bigtable v2 JSON API of `spec/rest-json.md`) with `fetch`, in a
//! browser, a worker or Node. `rowkit_client`'s `FetchDriver` runs machines over it with the
//! one driving loop of the typed API.
//!
//! - [`call`]: every request is one `fetch` with its own `AbortController`, run in its own
//!   task, its answers handed over as a stream; dropping the stream aborts the fetch.
//! - Streamed bodies (`readRows`, `mutateRows`, `sampleRowKeys`) are read chunk by chunk with
//!   `wasm-streams` and cut into elements by `rowkit_rest::ArraySplitter`, so rows reach the
//!   machine (and the caller) before the body ends.
//! - Table admin in Google's JSON shapes (`rowkit_rest::admin`): [`create_table`],
//!   [`families`], [`modify_families`], [`list_tables`].
//! - [`sleep_until`]: a JS `setTimeout`, cleared when dropped.
//! - [`now`] is `Date.now()`; nothing here reads `std::time` (it panics on wasm32).
//! - [`aborted`]: a caller's `AbortSignal` as a future, to cancel an operation with.
//!
//! It makes no decision about bytes or order: retries, resume and deadlines are machine logic.
//! It maps transport failures to statuses: a rejected fetch (network, CORS) is `UNAVAILABLE`,
//! an error response is decoded by `rowkit_rest::decode_error`, a truncated stream is
//! `UNAVAILABLE`. `fetch` needs a JS host: this crate is meant for `wasm32-unknown-unknown`.
#![forbid(unsafe_code)]

use std::cell::RefCell;
use std::rc::Rc;

use futures_channel::mpsc;
use futures_util::{SinkExt, StreamExt};
use js_sys::{Promise, Uint8Array};
use rowkit_codec::model::{ColumnFamily, FamilyChange};
use rowkit_rest::admin::{self, TableSchema};
use rowkit_rest::{ArraySplitter, Method, TableName};
use rowkit_statemachines::readrows::ChunkMerger;
use rowkit_statemachines::{Code, Request, Response, StoreError, Timestamp};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal, RequestCredentials, RequestInit, RequestMode};

#[wasm_bindgen]
extern "C" {
    /// The global `fetch` (window, worker or Node 18+).
    #[wasm_bindgen(js_name = fetch)]
    fn global_fetch(request: &web_sys::Request) -> Promise;
    /// The global `setTimeout`; returns an id (a number in browsers, an object in Node).
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, ms: f64) -> JsValue;
    /// The global `clearTimeout`.
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// Where a gateway is and how to talk to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gateway {
    /// Origin (and optional path prefix) of the gateway, without a trailing `/`.
    pub base_url: String,
    /// Project id in the URL path.
    pub project: String,
    /// Instance id in the URL path.
    pub instance: String,
    /// Sent as `Authorization: Bearer …` when set.
    pub token: Option<String>,
    /// How long one request may take, body included, before it is aborted and fails
    /// `UNAVAILABLE` (a hung request must not outlive its operation's deadline); `None`: no
    /// limit of its own.
    pub timeout_ms: Option<u32>,
}

impl Gateway {
    /// A gateway at `base_url` (e.g. `http://127.0.0.1:8642`), project `p`, instance `i`, no
    /// token. rowkit's gateway serves any project and instance names.
    pub fn new(base_url: &str) -> Gateway {
        Gateway {
            base_url: base_url.trim_end_matches('/').to_string(),
            project: "p".into(),
            instance: "i".into(),
            token: None,
            timeout_ms: None,
        }
    }

    /// The URL of `method` on `table`.
    pub fn url(&self, table: &str, method: Method) -> String {
        format!("{}{}", self.base_url, self.table_name(table).path(method))
    }

    /// `table`'s resource name on this gateway's project and instance.
    pub fn table_name(&self, table: &str) -> TableName {
        TableName::new(self.project.as_str(), self.instance.as_str(), table)
    }
}

/// The current time from `Date.now()` (ms resolution, in µs).
pub fn now() -> Timestamp {
    // Date.now() is a whole number of ms well inside i64 µs range until year 294,000.
    Timestamp((js_sys::Date::now() * 1000.0) as i64)
}

/// One request to the gateway as the stream of its answers: the unary response, or each
/// element of a streamed body followed by [`Response::StreamEnd`] (a point read: its one
/// [`Response::Row`], merged from the one-key ReadRows it is sent as); an `Err` item ends it.
/// The fetch runs in its own task; dropping the stream aborts it (its `AbortController`).
pub fn call(gateway: &Gateway, request: Request) -> GatewayCall {
    let controller = match AbortController::new() {
        Ok(controller) => controller,
        Err(_) => {
            return GatewayCall {
                answers: None,
                controller: None,
                failed: Some(StoreError::new(
                    Code::Internal,
                    "AbortController unavailable",
                )),
            };
        }
    };
    // Bounded: a fast body cannot run ahead of the machine by more than this many elements
    // (the flow control of sans-io.md 2.6).
    let (tx, rx) = mpsc::channel(16);
    wasm_bindgen_futures::spawn_local(exchange(gateway.clone(), request, controller.clone(), tx));
    GatewayCall {
        answers: Some(rx),
        controller: Some(controller),
        failed: None,
    }
}

/// The answers of one [`call`].
#[derive(Debug)]
pub struct GatewayCall {
    answers: Option<mpsc::Receiver<Result<Response, StoreError>>>,
    controller: Option<AbortController>,
    failed: Option<StoreError>,
}

impl futures_util::Stream for GatewayCall {
    type Item = Result<Response, StoreError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        if let Some(e) = self.failed.take() {
            return std::task::Poll::Ready(Some(Err(e)));
        }
        match self.answers.as_mut() {
            Some(rx) => rx.poll_next_unpin(cx),
            None => std::task::Poll::Ready(None),
        }
    }
}

impl Drop for GatewayCall {
    fn drop(&mut self) {
        // Aborting a finished fetch is a no-op.
        if let Some(controller) = self.controller.take() {
            controller.abort();
        }
    }
}

/// Resolves at `at` (a JS `setTimeout`, cleared if the future is dropped first).
pub fn sleep_until(at: Timestamp) -> Sleep {
    Sleep::until(Some(at))
}

/// Resolves when `signal` aborts (at once if it already has): the cancellation a caller's
/// `AbortSignal` gives an operation.
pub fn aborted(signal: &AbortSignal) -> impl std::future::Future<Output = ()> + use<> {
    let wait = abort_future(signal);
    async move {
        let _ = wait.await;
    }
}

/// A future that resolves when `signal` aborts (at once if it already has).
fn abort_future(signal: &AbortSignal) -> JsFuture {
    let signal = signal.clone();
    let promise = Promise::new(&mut |resolve, _reject| {
        if signal.aborted() {
            let _ = resolve.call0(&JsValue::UNDEFINED);
            return;
        }
        // Resolving twice is a no-op, so the listener need not be removed.
        let _ = signal.add_event_listener_with_callback("abort", &resolve);
    });
    JsFuture::from(promise)
}

/// A `setTimeout` wait that is cleared when dropped, so an abandoned wait never keeps a JS
/// host (Node) alive.
#[derive(Debug)]
pub struct Sleep {
    id: Option<JsValue>,
    // Keeps the resolve function alive for the timer.
    wait: Option<JsFuture>,
}

impl Sleep {
    fn until(at: Option<Timestamp>) -> Sleep {
        let Some(at) = at else {
            return Sleep {
                id: None,
                wait: None,
            };
        };
        let ms = ((at.0.saturating_sub(now().0)) as f64 / 1000.0).max(0.0);
        let id = Rc::new(RefCell::new(None));
        let slot = id.clone();
        let promise = Promise::new(&mut |resolve, _reject| {
            *slot.borrow_mut() = Some(set_timeout(&resolve, ms.ceil()));
        });
        let id = id.borrow_mut().take();
        Sleep {
            id,
            wait: Some(JsFuture::from(promise)),
        }
    }
}

impl std::future::Future for Sleep {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        match self.wait.as_mut() {
            None => std::task::Poll::Pending,
            Some(w) => std::pin::Pin::new(w).poll(cx).map(|_| ()),
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            clear_timeout(&id);
        }
    }
}

/// One request: fetch, then deliver the response or each stream element, then the end (or
/// the status that ended the exchange).
async fn exchange(
    gateway: Gateway,
    request: Request,
    controller: AbortController,
    mut tx: mpsc::Sender<Result<Response, StoreError>>,
) {
    let method = Method::of(&request);
    let signal = controller.signal();
    let work = perform(&gateway, &request, method, &signal, &mut tx);
    if let Err(e) = within_timeout(&gateway, &controller, work).await {
        // The caller may have dropped the call: nothing left to tell.
        let _ = tx.send(Err(e)).await;
    }
}

/// `work`, or `UNAVAILABLE` when the gateway's per-request timeout passes first; the fetch
/// is then aborted through `controller`.
async fn within_timeout<T>(
    gateway: &Gateway,
    controller: &AbortController,
    work: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let Some(ms) = gateway.timeout_ms else {
        return work.await;
    };
    let timer = sleep_until(Timestamp(now().0.saturating_add(i64::from(ms) * 1000)));
    let work = std::pin::pin!(work);
    match futures_util::future::select(work, timer).await {
        futures_util::future::Either::Left((result, _)) => result,
        futures_util::future::Either::Right(((), _)) => {
            controller.abort();
            Err(StoreError::new(
                Code::Unavailable,
                format!(
                    "the gateway at {} did not answer within {} s",
                    gateway.base_url,
                    f64::from(ms) / 1000.0
                ),
            ))
        }
    }
}

/// A rejected fetch (or body read) as `UNAVAILABLE`: `what`, the error's message and, where
/// the host gives one (Node: `connect ECONNREFUSED 127.0.0.1:8080`), its cause's.
fn unavailable(what: &str, e: JsValue) -> StoreError {
    let text = |e: &JsValue| {
        e.dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .or_else(|| e.as_string())
    };
    let mut detail = text(&e).unwrap_or_else(|| format!("{e:?}"));
    let cause = js_sys::Reflect::get(&e, &JsValue::from_str("cause")).unwrap_or(JsValue::UNDEFINED);
    if let Some(cause) = text(&cause).filter(|c| !c.is_empty()) {
        detail = format!("{detail} ({cause})");
    }
    StoreError::new(Code::Unavailable, format!("{what}: {detail}"))
}

/// One HTTP exchange with the gateway: `http_method` on `path` (relative to the gateway's
/// base URL) with an optional JSON body and the token, cancelled by `signal`. An error status
/// is decoded into its `StoreError` (`rest-json.md` 6); a rejected fetch is `UNAVAILABLE`.
async fn send(
    gateway: &Gateway,
    http_method: &str,
    path: &str,
    body: Option<&[u8]>,
    signal: &AbortSignal,
) -> Result<web_sys::Response, StoreError> {
    let url = format!("{}{path}", gateway.base_url);
    let init = RequestInit::new();
    init.set_mode(RequestMode::Cors);
    init.set_credentials(RequestCredentials::Omit);
    init.set_signal(Some(signal));
    init.set_method(http_method);
    let headers = web_sys::Headers::new().map_err(|e| unavailable("headers", e))?;
    if let Some(token) = &gateway.token {
        headers
            .set("authorization", &format!("Bearer {token}"))
            .map_err(|e| StoreError::new(Code::InvalidArgument, format!("token: {e:?}")))?;
    }
    if let Some(body) = body {
        headers
            .set("content-type", "application/json")
            .map_err(|e| unavailable("headers", e))?;
        init.set_body(&Uint8Array::from(body).into());
    }
    init.set_headers(&headers);
    let req = web_sys::Request::new_with_str_and_init(&url, &init)
        .map_err(|e| StoreError::new(Code::InvalidArgument, format!("request to {url}: {e:?}")))?;
    let resp: web_sys::Response = JsFuture::from(global_fetch(&req))
        .await
        .map_err(|e| unavailable(&format!("fetch {url}"), e))?
        .dyn_into()
        .map_err(|e| unavailable("fetch answered a non-Response", e))?;
    if !resp.ok() {
        let body = read_all(&resp).await.unwrap_or_default();
        return Err(rowkit_rest::decode_error(resp.status(), &body));
    }
    Ok(resp)
}

/// Sends the request and delivers what comes back; `Err` is the final status when the exchange
/// fails before a final delivery was made.
async fn perform(
    gateway: &Gateway,
    request: &Request,
    method: Method,
    signal: &AbortSignal,
    tx: &mut mpsc::Sender<Result<Response, StoreError>>,
) -> Result<(), StoreError> {
    let name = gateway.table_name(request.table());
    let resp = if method == Method::SampleRowKeys {
        // Google's binding: GET with no body.
        send(gateway, "GET", &name.path(method), None, signal).await?
    } else {
        let body = rowkit_rest::encode_request(request).map_err(|e| e.into_protocol_error())?;
        send(gateway, "POST", &name.path(method), Some(&body), signal).await?
    };
    if !method.is_streaming() {
        let body = read_all(&resp).await?;
        let item = rowkit_rest::decode_response(method, &body).map_err(|e| e.into_protocol_error());
        let _ = tx.send(item).await;
        return Ok(());
    }
    let Some(body) = resp.body() else {
        return Err(StoreError::new(
            Code::Unavailable,
            "streamed response without a body",
        ));
    };
    let mut chunks = wasm_streams::ReadableStream::from_raw(body.unchecked_into()).into_stream();
    let mut splitter = ArraySplitter::new();
    // A point read went out as a one-key ReadRows: its chunks are joined here, by the one
    // merger, into the one row it answers.
    let mut point = matches!(request, Request::ReadRow(_)).then(|| ChunkMerger::new(false, 0));
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| unavailable("response body", e))?;
        let bytes = Uint8Array::new(&chunk).to_vec();
        let elements = splitter
            .push_all(&bytes)
            .map_err(|e| StoreError::new(e.code(), e.to_string()))?;
        for element in elements {
            match rowkit_rest::decode_stream_element(method, &element) {
                Ok(Ok(Response::ReadRowsPart(part))) if let Some(merger) = point.as_mut() => {
                    merger.push_response(part)?;
                }
                Ok(Ok(part)) => {
                    if tx.send(Ok(part)).await.is_err() {
                        return Ok(());
                    }
                }
                // A mid-stream `{"error": …}` element ends the stream with that status.
                Ok(Err(e)) => return Err(e),
                Err(e) => return Err(e.into_protocol_error()),
            }
        }
    }
    splitter
        .finish()
        .map_err(|e| StoreError::new(e.code(), e.to_string()))?;
    let end = match point.as_mut() {
        Some(merger) => {
            merger.end_of_stream()?;
            Response::Row(merger.pop_shared_row())
        }
        None => Response::StreamEnd,
    };
    let _ = tx.send(Ok(end)).await;
    Ok(())
}

/// Aborts its controller when dropped, so an admin call abandoned by its caller (an operation
/// cancelled or out of time) stops its fetch.
struct AbortOnDrop(AbortController);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One table admin call (`rowkit_rest::admin`): `http_method` on `path`, with a JSON body if
/// given; the answer's body.
async fn admin_call(
    gateway: &Gateway,
    http_method: &str,
    path: &str,
    body: Option<Vec<u8>>,
) -> Result<Vec<u8>, StoreError> {
    let controller = AbortOnDrop(
        AbortController::new()
            .map_err(|_| StoreError::new(Code::Internal, "AbortController unavailable"))?,
    );
    let exchange = async {
        let resp = send(
            gateway,
            http_method,
            path,
            body.as_deref(),
            &controller.0.signal(),
        )
        .await?;
        read_all(&resp).await
    };
    within_timeout(gateway, &controller.0, exchange).await
}

/// CreateTable: `table` with `families` (`ALREADY_EXISTS` if it exists).
pub async fn create_table(
    gateway: &Gateway,
    table: &str,
    families: &[ColumnFamily],
) -> Result<(), StoreError> {
    let body = admin::encode_create_table(&admin::CreateTable {
        table_id: table.to_string(),
        families: families.to_vec(),
        initial_splits: Vec::new(),
    })
    .map_err(|e| e.into_protocol_error())?;
    let path = admin::tables_path(&gateway.project, &gateway.instance);
    admin_call(gateway, "POST", &path, Some(body)).await?;
    Ok(())
}

/// GetTable: the families of `table`, ascending by name (`NOT_FOUND` if it is missing).
pub async fn families(gateway: &Gateway, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
    let path = gateway.table_name(table).admin_path();
    let body = admin_call(gateway, "GET", &format!("{path}?view=SCHEMA_VIEW"), None).await?;
    let schema = admin::decode_table(&body).map_err(|e| e.into_protocol_error())?;
    Ok(schema.families)
}

/// ModifyColumnFamilies: applies `changes` to `table` in order; its families after them.
pub async fn modify_families(
    gateway: &Gateway,
    table: &str,
    changes: &[FamilyChange],
) -> Result<Vec<ColumnFamily>, StoreError> {
    let body = admin::encode_modify_families(changes).map_err(|e| e.into_protocol_error())?;
    let path = gateway.table_name(table).modify_families_path();
    let answer = admin_call(gateway, "POST", &path, Some(body)).await?;
    let schema = admin::decode_table(&answer).map_err(|e| e.into_protocol_error())?;
    Ok(schema.families)
}

/// ListTables: every table of the gateway's instance with its families, in the order served
/// (by id).
pub async fn list_tables(gateway: &Gateway) -> Result<Vec<TableSchema>, StoreError> {
    let path = admin::tables_path(&gateway.project, &gateway.instance);
    let body = admin_call(gateway, "GET", &format!("{path}?view=SCHEMA_VIEW"), None).await?;
    admin::decode_list_tables(&body).map_err(|e| e.into_protocol_error())
}

/// The whole body of a unary response (or of an error).
async fn read_all(resp: &web_sys::Response) -> Result<Vec<u8>, StoreError> {
    let promise = resp
        .array_buffer()
        .map_err(|e| unavailable("response body", e))?;
    let buffer = JsFuture::from(promise)
        .await
        .map_err(|e| unavailable("response body", e))?;
    Ok(Uint8Array::new(&buffer).to_vec())
}
