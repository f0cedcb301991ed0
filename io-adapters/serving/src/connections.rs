//! The connection layer of every rowkit server (the JSON gateway and the gRPC server): one
//! accept loop with a per-process connection limit below the fd limit, header and idle
//! timeouts, HTTP/2 stream limits and keepalive, and shutdown that stops accepting, drains calls
//! in flight for a bounded time, then closes whatever is left.
//!
//! A connection is *idle* while no request is in flight on it (a half-sent request head counts
//! as idle: hyper has not handed it over yet). An idle connection is closed after
//! [`ConnectionLimits::header_timeout`] if it never started a request (a bare HTTP/2 preface, a
//! slow request head) and after [`ConnectionLimits::idle_timeout`] otherwise. At the limit, a
//! new connection makes the oldest idle one close, so a flood of idle connections cannot lock
//! out a client that sends requests; when every connection is busy, new ones wait in the
//! kernel's backlog. None of this depends on the bearer token: idle connections are shed before
//! any request, authenticated or not, is read.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower_service::Service as _;

/// Default [`ConnectionLimits::header_timeout`].
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`ConnectionLimits::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Default [`ConnectionLimits::max_streams`].
pub const DEFAULT_MAX_STREAMS: u32 = 256;
/// Default [`ConnectionLimits::drain`].
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(10);
/// Interval of HTTP/2 keepalive PINGs; a peer that does not answer one within the header
/// timeout is dropped.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// How long a connection with nothing in flight may stay open once draining started (time to
/// flush a response that just finished).
const DRAIN_IDLE_GRACE: Duration = Duration::from_secs(1);
/// How long an accept at the limit waits for the slot of the connection it evicted before it
/// evicts the next one.
const EVICTION_RETRY: Duration = Duration::from_millis(100);
/// File descriptors kept free for everything but connections: the store's files, listeners,
/// the runtime's own, stdio (plus an eighth of the limit, see [`fd_connection_limit`]).
const FD_HEADROOM: u64 = 64;
/// Connections allowed at most, whatever the fd limit: each idle one costs buffers.
const MAX_CONNECTIONS_CAP: u64 = 16_384;

/// The knobs of [`serve`]; [`Default`] gives the defaults above and [`fd_connection_limit`].
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// Connections open at once, over every server sharing a [`Connections`].
    pub max_connections: usize,
    /// Time a new connection has to complete its first request head (and the TLS handshake),
    /// and an HTTP/1 connection to complete any request head.
    pub header_timeout: Duration,
    /// Time a connection may stay open with no request in flight after its last one.
    pub idle_timeout: Duration,
    /// Concurrent HTTP/2 streams per connection.
    pub max_streams: u32,
    /// Time calls in flight get to finish once shutdown starts.
    pub drain: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: fd_connection_limit(),
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_streams: DEFAULT_MAX_STREAMS,
            drain: DEFAULT_DRAIN,
        }
    }
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit (as Go's runtime does), so the
/// connection limit derived from it is as high as the operator allows; returns the soft limit
/// in force afterwards (`None` where it cannot be read).
pub fn raise_fd_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            limit = raised;
        }
    }
    limit.current
}

/// Connections a process may hold open: its soft `RLIMIT_NOFILE` less headroom for the store's
/// files and the rest (64 and an eighth), at most 16 384 (unlimited counts as that cap).
pub fn fd_connection_limit() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(MAX_CONNECTIONS_CAP * 2);
    let usable = soft.saturating_sub(FD_HEADROOM + soft / 8).max(1);
    usize::try_from(usable.min(MAX_CONNECTIONS_CAP)).unwrap_or(1)
}

/// What the server knows of one open connection.
#[derive(Debug)]
struct Connection {
    /// Requests started on it, and how many are in flight (response body not yet finished).
    started: AtomicU64,
    in_flight: AtomicUsize,
    /// When the last request ended (or the connection opened), in ms since the registry began.
    idle_since_ms: AtomicU64,
    /// Told to close at once (evicted to make room), and whether it was.
    evict: Notify,
    evicted: AtomicBool,
    /// A request ended: the idle deadline moved.
    activity: Notify,
}

/// The connections of a process, shared by all its servers so that one limit (derived from the
/// fd limit, which is per process) covers them all.
#[derive(Debug)]
pub struct Connections {
    limits: ConnectionLimits,
    permits: Arc<Semaphore>,
    open: Mutex<BTreeMap<u64, Arc<Connection>>>,
    next_id: AtomicU64,
    epoch: Instant,
}

impl Connections {
    /// An empty registry enforcing `limits`.
    pub fn new(limits: ConnectionLimits) -> Arc<Connections> {
        Arc::new(Connections {
            permits: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            limits,
            open: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(0),
            epoch: Instant::now(),
        })
    }

    /// The limits in force.
    pub fn limits(&self) -> &ConnectionLimits {
        &self.limits
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn instant_of(&self, ms: u64) -> Instant {
        self.epoch + Duration::from_millis(ms)
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Connection>>> {
        // The map stays consistent even if a holder panicked: every update is one call.
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a new connection: at once if under the limit; else the oldest idle
    /// connection is told to close and its slot is awaited (or any slot, when all are busy).
    /// A freed slot may go to another server's accept first: then the next oldest idle one
    /// is told to close, and so on, so a flood of idle connections never stalls accepting.
    async fn admit(&self) -> OwnedSemaphorePermit {
        loop {
            if let Ok(permit) = self.permits.clone().try_acquire_owned() {
                return permit;
            }
            if let Some(victim) = self.mark_oldest_idle() {
                victim.evict.notify_one();
            }
            let freed =
                tokio::time::timeout(EVICTION_RETRY, self.permits.clone().acquire_owned()).await;
            // The semaphore is never closed, so the inner result is always a permit.
            if let Ok(Ok(permit)) = freed {
                return permit;
            }
        }
    }

    /// The idle connection idle the longest, marked as evicted (under the registry's lock, so
    /// two servers admitting at once never count on the same victim's slot).
    fn mark_oldest_idle(&self) -> Option<Arc<Connection>> {
        let open = self.registry();
        let victim = open
            .values()
            .filter(|c| {
                c.in_flight.load(Ordering::Acquire) == 0 && !c.evicted.load(Ordering::Acquire)
            })
            .min_by_key(|c| c.idle_since_ms.load(Ordering::Acquire))
            .cloned();
        if let Some(victim) = &victim {
            victim.evicted.store(true, Ordering::Release);
        }
        victim
    }

    fn register(&self) -> (u64, Arc<Connection>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection {
            started: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(self.now_ms()),
            evict: Notify::new(),
            evicted: AtomicBool::new(false),
            activity: Notify::new(),
        });
        self.registry().insert(id, connection.clone());
        (id, connection)
    }

    /// When `connection` is due to close for idleness (`None` while a request is in flight).
    fn idle_deadline(
        &self,
        connection: &Connection,
        drain_started: Option<Instant>,
    ) -> Option<Instant> {
        if connection.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = self.instant_of(connection.idle_since_ms.load(Ordering::Acquire));
        Some(match drain_started {
            Some(start) => since.max(start) + DRAIN_IDLE_GRACE,
            None if connection.started.load(Ordering::Acquire) == 0 => {
                since + self.limits.header_timeout
            }
            None => since + self.limits.idle_timeout,
        })
    }
}

/// Marks a request in flight on its connection until dropped (with the response body).
struct InFlight {
    connections: Arc<Connections>,
    connection: Arc<Connection>,
}

impl InFlight {
    fn start(connections: &Arc<Connections>, connection: &Arc<Connection>) -> InFlight {
        connection.started.fetch_add(1, Ordering::AcqRel);
        connection.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight {
            connections: connections.clone(),
            connection: connection.clone(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.connection
            .idle_since_ms
            .store(self.connections.now_ms(), Ordering::Release);
        self.connection.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.connection.activity.notify_one();
    }
}

/// The request stays in flight until its response body ends or is dropped.
impl super::watched_body::BodyWatcher for InFlight {}

/// Which HTTP versions a server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocols {
    /// HTTP/1.1 and HTTP/2 (prior knowledge), told apart by the first bytes.
    Http1And2,
    /// HTTP/2 only (gRPC).
    Http2Only,
}

/// The shutdown phases connections follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Serving,
    /// Stop taking requests; close once what is in flight ended.
    Draining(Instant),
    /// Close now.
    Closing,
}

fn http_builder(limits: &ConnectionLimits, protocols: Protocols) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    if protocols == Protocols::Http2Only {
        builder = builder.http2_only();
    }
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.max_streams)
        .keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(limits.header_timeout);
    builder
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting, lets calls in
/// flight finish for [`ConnectionLimits::drain`], closes every connection left and returns.
/// `handshake` turns each accepted socket into the stream HTTP runs on (TLS, or the socket
/// itself); it must finish within the header timeout.
pub async fn serve<H, F, S>(
    listener: TcpListener,
    app: axum::Router,
    connections: Arc<Connections>,
    protocols: Protocols,
    handshake: H,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()>
where
    H: Fn(TcpStream) -> F + Send + Sync + 'static,
    F: Future<Output = io::Result<S>> + Send + 'static,
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let builder = http_builder(&connections.limits, protocols);
    let handshake = Arc::new(handshake);
    let (phase_tx, phase_rx) = watch::channel(Phase::Serving);
    let mut tasks = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => {
                let tcp = match accepted {
                    Ok((tcp, _)) => tcp,
                    Err(_) => {
                        // Out of fds or a connection reset before accept: pause, so the loop
                        // does not spin while the condition lasts.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let permit = tokio::select! {
                    permit = connections.admit() => permit,
                    () = &mut shutdown => break,
                };
                // Without TCP_NODELAY a small reply waits for the client's delayed ACK.
                let _ = tcp.set_nodelay(true);
                tasks.spawn(serve_connection(
                    tcp,
                    permit,
                    connections.clone(),
                    builder.clone(),
                    app.clone(),
                    handshake.clone(),
                    phase_rx.clone(),
                ));
            }
        }
    }
    // Stop accepting: new clients are refused instead of queueing behind a closing server.
    drop(listener);
    let _ = phase_tx.send(Phase::Draining(Instant::now()));
    let drained = tokio::time::timeout(connections.limits.drain, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        let _ = phase_tx.send(Phase::Closing);
        tasks.shutdown().await;
    }
    Ok(())
}

/// Runs one connection until it ends, is evicted, idles out or the server closes.
async fn serve_connection<H, F, S>(
    tcp: TcpStream,
    _permit: OwnedSemaphorePermit,
    connections: Arc<Connections>,
    builder: auto::Builder<TokioExecutor>,
    app: axum::Router,
    handshake: Arc<H>,
    mut phase: watch::Receiver<Phase>,
) where
    H: Fn(TcpStream) -> F + Send + Sync + 'static,
    F: Future<Output = io::Result<S>> + Send + 'static,
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (id, connection) = connections.register();
    let _unregister = Unregister(connections.clone(), id);
    let header_timeout = connections.limits.header_timeout;
    let stream = tokio::select! {
        shaken = tokio::time::timeout(header_timeout, handshake(tcp)) => match shaken {
            Ok(Ok(stream)) => stream,
            _ => return,
        },
        () = connection.evict.notified() => return,
        _ = phase.wait_for(|p| *p != Phase::Serving) => return,
    };
    let service = {
        let connections = connections.clone();
        let connection = connection.clone();
        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let in_flight = InFlight::start(&connections, &connection);
            let mut app = app.clone();
            async move {
                let response = app.call(request.map(Body::new)).await?;
                Ok::<_, std::convert::Infallible>(
                    response.map(|inner| super::watched_body::watched(inner, in_flight)),
                )
            }
        })
    };
    let mut conn = pin!(builder.serve_connection(TokioIo::new(stream), service));
    let mut drain_started = None;
    loop {
        if let Phase::Draining(start) = *phase.borrow_and_update()
            && drain_started.is_none()
        {
            drain_started = Some(start);
            conn.as_mut().graceful_shutdown();
        }
        let deadline = connections.idle_deadline(&connection, drain_started);
        tokio::select! {
            _ = conn.as_mut() => return,
            () = connection.evict.notified() => return,
            () = connection.activity.notified() => {}
            changed = phase.changed() => {
                if changed.is_err() || *phase.borrow() == Phase::Closing {
                    return;
                }
            }
            () = sleep_until(deadline) => {
                let still_idle = connections
                    .idle_deadline(&connection, drain_started)
                    .is_some_and(|d| d <= Instant::now());
                if still_idle {
                    return;
                }
            }
        }
    }
}

/// Sleeps until `deadline`, forever when there is none.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Removes a connection from the registry when its task ends, however it ends.
struct Unregister(Arc<Connections>, u64);

impl Drop for Unregister {
    fn drop(&mut self) {
        self.0.registry().remove(&self.1);
    }
}

/// The identity handshake: HTTP runs on the socket itself.
pub async fn plaintext(tcp: TcpStream) -> io::Result<TcpStream> {
    Ok(tcp)
}
