//! What the gRPC clients send through: tonic's [`Channel`] for Cloud Bigtable (TLS), or a
//! plain HTTP/2 connection of our own for the emulator ([`Direct`]).
//!
//! Why the emulator gets its own: a call through tonic's `Channel` hops through a tower
//! `Buffer` worker task, hyper's dispatch task and a task spawned per request, and hyper
//! reserves flow-control capacity before it sends a body, so the request's HEADERS and DATA
//! leave in two writes (three with the PING ack the server asks for after each request). On
//! loopback every write wakes the server once more. [`Direct`] calls `h2` from the caller's
//! task and hands it the whole (always single-message) request body at once, so HEADERS and
//! DATA leave in one write; the response is polled by the caller directly. Semantics are
//! hyper's: same window sizes, a stream reset when the call is dropped, a `RST_STREAM
//! NO_ERROR` ending the body cleanly, `h2` errors mapped by tonic as before.
//!
//! Hand-driven on purpose: no crate offers a tonic transport that writes a unary request in
//! one write; the measurement behind it (client CPU per request about halved at 16 in
//! flight) is in benches/HISTORY.md, "Bigtable adapter against the emulator".

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http_body::{Body as _, Frame};
use prost::bytes::{Bytes, BytesMut};
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::{Service, StdError, http};
use tonic::transport::Channel;

/// hyper's defaults, which tonic's `Channel` uses: the emulator path keeps them.
const STREAM_WINDOW: u32 = 2 << 20;
const CONNECTION_WINDOW: u32 = 5 << 20;
const MAX_SEND_BUFFER: usize = 1 << 20;
const MAX_HEADER_LIST: u32 = 16 << 10;

/// The service under the generated clients (see the module doc). Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) enum Transport {
    /// tonic's channel (Cloud Bigtable, TLS).
    Channel(Channel),
    /// One plaintext HTTP/2 connection (the emulator).
    Direct(Direct),
}

impl Service<http::Request<Body>> for Transport {
    type Response = http::Response<Body>;
    type Error = StdError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, StdError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StdError>> {
        match self {
            Transport::Channel(c) => {
                Service::<http::Request<Body>>::poll_ready(c, cx).map_err(Into::into)
            }
            // Readiness is awaited inside the call, on the connection it uses.
            Transport::Direct(_) => Poll::Ready(Ok(())),
        }
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        match self {
            Transport::Channel(c) => {
                let call = c.call(request);
                Box::pin(async move { call.await.map_err(Into::into) })
            }
            Transport::Direct(d) => Box::pin(d.clone().send(request)),
        }
    }
}

/// The connection of [`Direct`] and its generation (a failed connection is forgotten only
/// if it is still the current one).
type Sender = (u64, h2::client::SendRequest<Bytes>);

/// One plaintext HTTP/2 connection to `host`, re-established on the first call after it
/// failed (as tonic's `Channel` does; the failed call itself fails, the machine decides).
#[derive(Clone, Debug)]
pub(crate) struct Direct {
    shared: Arc<DirectShared>,
}

#[derive(Debug)]
struct DirectShared {
    host: String,
    current: Mutex<Option<Sender>>,
    /// Held while connecting, so concurrent callers wait for one connection.
    connecting: tokio::sync::Mutex<u64>,
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> Status {
    Status::unavailable(format!("transport error: {what}: {e}"))
}

impl Direct {
    /// Connects to `host` (`HOST:PORT`); the connection task runs on the current runtime.
    pub(crate) async fn connect(host: &str) -> Result<Direct, Status> {
        let direct = Direct {
            shared: Arc::new(DirectShared {
                host: host.to_string(),
                current: Mutex::new(None),
                connecting: tokio::sync::Mutex::new(0),
            }),
        };
        direct.sender().await?;
        Ok(direct)
    }

    fn current(&self) -> Option<Sender> {
        self.shared.current.lock().ok()?.clone()
    }

    /// The live connection, or a new one.
    async fn sender(&self) -> Result<Sender, Status> {
        if let Some(s) = self.current() {
            return Ok(s);
        }
        let mut generation = self.shared.connecting.lock().await;
        if let Some(s) = self.current() {
            return Ok(s);
        }
        let host = &self.shared.host;
        let tcp = tokio::net::TcpStream::connect(host)
            .await
            .map_err(|e| unavailable(&format!("connecting to {host}"), e))?;
        tcp.set_nodelay(true)
            .map_err(|e| unavailable("setting TCP_NODELAY", e))?;
        let (send, connection) = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .max_send_buffer_size(MAX_SEND_BUFFER)
            .max_header_list_size(MAX_HEADER_LIST)
            .enable_push(false)
            .handshake::<_, Bytes>(tcp)
            .await
            .map_err(|e| unavailable(&format!("HTTP/2 handshake with {host}"), e))?;
        // Ends when the connection fails or every handle is gone; calls then see the error.
        drop(tokio::spawn(async move {
            let _ = connection.await;
        }));
        *generation += 1;
        let sender = (*generation, send);
        if let Ok(mut current) = self.shared.current.lock() {
            *current = Some(sender.clone());
        }
        Ok(sender)
    }

    /// Forgets connection `generation` after it failed, so the next call reconnects.
    fn forget(&self, generation: u64) {
        if let Ok(mut current) = self.shared.current.lock()
            && current.as_ref().is_some_and(|(g, _)| *g == generation)
        {
            *current = None;
        }
    }

    /// One call: HEADERS and the whole body handed to `h2` together, then the response.
    async fn send(self, request: http::Request<Body>) -> Result<http::Response<Body>, StdError> {
        let (generation, send) = self.sender().await?;
        let mut send = send
            .ready()
            .await
            .inspect_err(|_| self.forget(generation))?;
        let (parts, body) = request.into_parts();
        let data = collect(body).await?;
        let (response, mut stream) = send
            .send_request(http::Request::from_parts(parts, ()), data.is_empty())
            .inspect_err(|_| self.forget(generation))?;
        if !data.is_empty() {
            stream.send_data(data, true)?;
        }
        let response = response.await.inspect_err(|e| {
            // The connection failed (not just this stream): the next call reconnects.
            if e.is_io() || e.is_go_away() || e.reason().is_none() {
                self.forget(generation);
            }
        })?;
        Ok(response.map(|recv| {
            Body::new(Incoming {
                recv,
                data_done: false,
            })
        }))
    }
}

/// A request body in one buffer: gRPC requests of the Bigtable API are one message, which
/// tonic yields as one frame (taken without a copy).
async fn collect(body: Body) -> Result<Bytes, StdError> {
    let mut body = std::pin::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut rest: Option<BytesMut> = None;
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let Ok(data) = frame.map_err(StdError::from)?.into_data() else {
            continue;
        };
        match (&first, &mut rest) {
            (None, _) => first = Some(data),
            (Some(f), None) => {
                let mut joined = BytesMut::with_capacity(f.len() + data.len());
                joined.extend_from_slice(f);
                joined.extend_from_slice(&data);
                rest = Some(joined);
            }
            (Some(_), Some(joined)) => joined.extend_from_slice(&data),
        }
    }
    Ok(match rest {
        Some(joined) => joined.freeze(),
        None => first.unwrap_or_default(),
    })
}

/// A response body over an `h2` stream, as hyper's: capacity released as data is read,
/// then the trailers; a reset with `NO_ERROR` ends the body (RFC 9113 8.1).
struct Incoming {
    recv: h2::RecvStream,
    data_done: bool,
}

impl http_body::Body for Incoming {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, h2::Error>>> {
        let this = &mut *self;
        if !this.data_done {
            match std::task::ready!(this.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    let _ = this.recv.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) if e.reason() == Some(h2::Reason::NO_ERROR) => {
                    return Poll::Ready(None);
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => this.data_done = true,
            }
        }
        match std::task::ready!(this.recv.poll_trailers(cx)) {
            Ok(trailers) => Poll::Ready(trailers.map(|t| Ok(Frame::trailers(t)))),
            Err(e) if e.reason() == Some(h2::Reason::NO_ERROR) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    /// A server that answers one request per connection (an OK gRPC status in the headers)
    /// and then closes that connection.
    async fn serve_one_per_connection(
        listener: tokio::net::TcpListener,
        accepted: Arc<AtomicUsize>,
    ) {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            accepted.fetch_add(1, Ordering::SeqCst);
            let mut conn = h2::server::handshake(tcp).await.unwrap();
            if let Some(Ok((_request, mut respond))) = conn.accept().await {
                let response = http::Response::builder()
                    .status(200)
                    .header("grpc-status", "0")
                    .body(())
                    .unwrap();
                respond.send_response(response, true).unwrap();
            }
            // Flush the answer, then drop the connection.
            let closed = std::future::poll_fn(|cx| conn.poll_closed(cx));
            let _ = tokio::time::timeout(Duration::from_millis(50), closed).await;
        }
    }

    fn request() -> http::Request<Body> {
        http::Request::builder()
            .method("POST")
            .uri("http://localhost/x.Y/Z")
            .body(Body::empty())
            .unwrap()
    }

    /// After the server closed the connection, a call fails or goes through, and the next
    /// one runs on a new connection.
    #[test]
    fn reconnects_after_the_connection_closed() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let host = listener.local_addr().unwrap().to_string();
            let accepted = Arc::new(AtomicUsize::new(0));
            tokio::spawn(serve_one_per_connection(listener, accepted.clone()));
            let direct = Direct::connect(&host).await.unwrap();
            let first = direct.clone().send(request()).await.unwrap();
            assert_eq!(first.status(), 200);
            assert_eq!(first.headers()["grpc-status"], "0");
            tokio::time::sleep(Duration::from_millis(100)).await;
            // The connection is gone: this call may fail, and it makes the next reconnect.
            if direct.clone().send(request()).await.is_err() {
                direct.clone().send(request()).await.unwrap();
            }
            assert_eq!(accepted.load(Ordering::SeqCst), 2);
        });
    }

    /// A refused connection is `UNAVAILABLE`, as tonic's channel reports it.
    #[test]
    fn refused_connection_is_unavailable() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let host = listener.local_addr().unwrap().to_string();
            drop(listener);
            let status = Direct::connect(&host).await.unwrap_err();
            assert_eq!(status.code(), tonic::Code::Unavailable);
        });
    }
}
