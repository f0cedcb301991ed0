//! The wasm driver (`spec/sans-io.md` 4.3): runs any rowkit [`Machine`] in a browser, a worker
//! or Node, doing its I/O with `fetch` against a rowkit gateway (or anything speaking the
//! Bigtable v2 JSON API of `spec/rest-json.md`).
//!
//! - Every request the machine emits becomes one `fetch` with its own `AbortController`; all of
//!   them are in flight at once and their answers are fed back by tag as they arrive.
//! - Streamed bodies (`readRows`, `mutateRows`, `sampleRowKeys`) are read chunk by chunk with
//!   `wasm-streams` and cut into elements by `rowkit_rest::ArraySplitter`, so rows reach the
//!   machine (and the caller's `on_event`) before the body ends.
//! - Timeouts are the machine's (`poll_timeout`), waited for with a JS `setTimeout` that is
//!   cleared when something else happens first; `poll_abort` aborts that request's fetch.
//! - `now` is `Date.now()`; the driver never reads `std::time` (it panics on wasm32).
//! - A caller's `AbortSignal` cancels the whole operation ([`Machine::cancel`]).
//!
//! The driver makes no decision about bytes or order: retries, resume and deadlines are machine
//! logic. It maps transport failures to statuses: a rejected fetch (network, CORS) is
//! `UNAVAILABLE`, an error response is decoded by `rowkit_rest::decode_error`, a truncated
//! stream is `UNAVAILABLE`.
//!
//! Only the driver loop runs on native targets too (it is plain async Rust); `fetch` itself
//! needs a JS host, so [`run`] is meant for `wasm32-unknown-unknown`.
#![forbid(unsafe_code)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use futures_channel::mpsc;
use futures_util::future::{Either, select};
use futures_util::{SinkExt, StreamExt};
use js_sys::{Promise, Uint8Array};
use rowkit_embedded::driver::RunError;
use rowkit_rest::{ArraySplitter, Method, TableName};
use rowkit_statemachines::{Code, Machine, Request, Response, StoreError, Tag, Timestamp};
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
        }
    }

    /// The URL of `method` on `table`.
    pub fn url(&self, table: &str, method: Method) -> String {
        let name = TableName::new(self.project.as_str(), self.instance.as_str(), table);
        format!("{}{}", self.base_url, name.path(method))
    }
}

/// The current time from `Date.now()` (ms resolution, in µs).
pub fn now() -> Timestamp {
    // Date.now() is a whole number of ms well inside i64 µs range until year 294,000.
    Timestamp((js_sys::Date::now() * 1000.0) as i64)
}

/// One delivery from a request task to the loop: a response (or a stream part), and whether
/// it is the last one for its tag.
struct Delivery {
    tag: Tag,
    item: Result<Response, StoreError>,
    last: bool,
}

/// Runs `machine` to completion against `gateway`, handing each event to `on_event` as soon as
/// the machine emits it. `cancel`, when given and aborted, cancels the operation
/// ([`Machine::cancel`]); the machine then ends with its own cancellation result.
pub async fn run<M: Machine>(
    gateway: &Gateway,
    mut machine: M,
    mut on_event: impl FnMut(M::Event),
    cancel: Option<&AbortSignal>,
) -> Result<M::Output, RunError<M::Error>> {
    // Bounded: a fast body cannot run ahead of the machine by more than this many elements
    // per request (the flow control of sans-io.md 2.6).
    let (tx, mut rx) = mpsc::channel::<Delivery>(16);
    let mut inflight: BTreeMap<Tag, AbortController> = BTreeMap::new();
    let cancelled = cancel.map(abort_future);
    let mut cancelled = cancelled.map(Box::pin);
    let result = loop {
        while let Some((tag, request)) = machine.poll_request() {
            match AbortController::new() {
                Ok(controller) => {
                    let signal = controller.signal();
                    inflight.insert(tag, controller);
                    let gw = gateway.clone();
                    let tx = tx.clone();
                    wasm_bindgen_futures::spawn_local(call(gw, tag, request, signal, tx));
                }
                Err(_) => machine.handle_response(
                    tag,
                    Err(StoreError::new(
                        Code::Internal,
                        "AbortController unavailable",
                    )),
                    now(),
                ),
            }
        }
        while let Some(tag) = machine.poll_abort() {
            if let Some(controller) = inflight.remove(&tag) {
                controller.abort();
            }
        }
        while let Some(event) = machine.poll_event() {
            on_event(event);
        }
        if let Some(result) = machine.result() {
            break result.map_err(RunError::Machine);
        }
        let timeout = machine.poll_timeout();
        if inflight.is_empty() && timeout.is_none() {
            break Err(RunError::Stalled);
        }
        let timer = Timer::until(timeout);
        let next = rx.next();
        let woke = match cancelled.as_mut() {
            Some(c) => match select(select(next, timer), c.as_mut()).await {
                Either::Left((inner, _)) => Some(inner),
                Either::Right(_) => None,
            },
            None => Some(select(next, timer).await),
        };
        match woke {
            Some(Either::Left((Some(d), _))) => {
                // Deliveries for an aborted tag are dropped here; the machine would ignore
                // them as stale anyway.
                if inflight.contains_key(&d.tag) {
                    if d.last {
                        inflight.remove(&d.tag);
                    }
                    machine.handle_response(d.tag, d.item, now());
                }
            }
            // The loop holds a sender, so the channel never ends; treat it as a tick.
            Some(Either::Left((None, _))) => {}
            Some(Either::Right(_)) => machine.handle_timeout(now()),
            None => {
                cancelled = None;
                machine.cancel(now());
            }
        }
    };
    for (_, controller) in inflight {
        controller.abort();
    }
    result
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
/// host (Node) alive. `None` never fires.
struct Timer {
    id: Option<JsValue>,
    // Keeps the resolve function alive for the timer.
    wait: Option<JsFuture>,
}

impl Timer {
    fn until(at: Option<Timestamp>) -> Timer {
        let Some(at) = at else {
            return Timer {
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
        Timer {
            id,
            wait: Some(JsFuture::from(promise)),
        }
    }
}

impl std::future::Future for Timer {
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

impl Drop for Timer {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            clear_timeout(&id);
        }
    }
}

/// One request: fetch, then deliver the response or each stream element, then the end.
async fn call(
    gateway: Gateway,
    tag: Tag,
    request: Request,
    signal: AbortSignal,
    mut tx: mpsc::Sender<Delivery>,
) {
    let method = Method::of(&request);
    if let Err(e) = perform(&gateway, tag, &request, method, &signal, &mut tx).await {
        // The loop may have finished (receiver gone): nothing left to tell.
        let _ = tx
            .send(Delivery {
                tag,
                item: Err(e),
                last: true,
            })
            .await;
    }
}

fn unavailable(what: &str, e: JsValue) -> StoreError {
    let detail = e
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"));
    StoreError::new(Code::Unavailable, format!("{what}: {detail}"))
}

/// Sends the request and delivers what comes back; `Err` is the final status when the exchange
/// fails before a final delivery was made.
async fn perform(
    gateway: &Gateway,
    tag: Tag,
    request: &Request,
    method: Method,
    signal: &AbortSignal,
    tx: &mut mpsc::Sender<Delivery>,
) -> Result<(), StoreError> {
    let url = gateway.url(request.table(), method);
    let init = RequestInit::new();
    init.set_mode(RequestMode::Cors);
    init.set_credentials(RequestCredentials::Omit);
    init.set_signal(Some(signal));
    let headers = web_sys::Headers::new().map_err(|e| unavailable("headers", e))?;
    if let Some(token) = &gateway.token {
        headers
            .set("authorization", &format!("Bearer {token}"))
            .map_err(|e| StoreError::new(Code::InvalidArgument, format!("token: {e:?}")))?;
    }
    if method == Method::SampleRowKeys {
        // Google's binding: GET with no body.
        init.set_method("GET");
    } else {
        let body = rowkit_rest::encode_request(request).map_err(|e| e.into_protocol_error())?;
        init.set_method("POST");
        headers
            .set("content-type", "application/json")
            .map_err(|e| unavailable("headers", e))?;
        init.set_body(&Uint8Array::from(body.as_slice()).into());
    }
    init.set_headers(&headers);
    let req = web_sys::Request::new_with_str_and_init(&url, &init)
        .map_err(|e| StoreError::new(Code::InvalidArgument, format!("request to {url}: {e:?}")))?;
    let resp: web_sys::Response = JsFuture::from(global_fetch(&req))
        .await
        .map_err(|e| unavailable(&format!("fetch {url}"), e))?
        .dyn_into()
        .map_err(|e| unavailable("fetch answered a non-Response", e))?;
    let status = resp.status();
    if !resp.ok() {
        let body = read_all(&resp).await.unwrap_or_default();
        return Err(rowkit_rest::decode_error(status, &body));
    }
    if !method.is_streaming() {
        let body = read_all(&resp).await?;
        let item = rowkit_rest::decode_response(method, &body).map_err(|e| e.into_protocol_error());
        let _ = tx
            .send(Delivery {
                tag,
                item,
                last: true,
            })
            .await;
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
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| unavailable("response body", e))?;
        let bytes = Uint8Array::new(&chunk).to_vec();
        let elements = splitter
            .push_all(&bytes)
            .map_err(|e| StoreError::new(e.code(), e.to_string()))?;
        for element in elements {
            match rowkit_rest::decode_stream_element(method, &element) {
                Ok(Ok(part)) => {
                    let delivered = tx
                        .send(Delivery {
                            tag,
                            item: Ok(part),
                            last: false,
                        })
                        .await;
                    if delivered.is_err() {
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
    let _ = tx
        .send(Delivery {
            tag,
            item: Ok(Response::StreamEnd),
            last: true,
        })
        .await;
    Ok(())
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
