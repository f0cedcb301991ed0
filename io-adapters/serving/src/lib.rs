//! The serving core every rowkit server shares (the JSON gateway, `rowkit-gateway`, and the gRPC
//! server, `rowkit-grpc`): who may listen where ([`check_exposure`], [`listen`]), the
//! bearer-token check ([`check_bearer`]), and how a store call runs off the async runtime —
//! unary calls in a blocking task, streamed ones pumped from a blocking thread through a
//! bounded channel, so a slow client applies back-pressure to the scan (the store reads the
//! next rows only when there is room) and a disconnected one stops it; a read of a few row
//! keys, and a write of a few rows to a store that writes in memory, are answered on the
//! runtime thread, as they cost less than the hop ([`stream`], [`unary`]).
//!
//! - [`connections`]: the accept loop, connection limits, timeouts and drain of both servers.
//! - [`access_log`]: one `tracing` line per request, JSON or gRPC.
//! - [`modify_families`]: ModifyColumnFamilies' checks, for both admin APIs.
//!
//! Nothing here knows a wire format beyond HTTP: each server converts its own messages.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod access_log;
pub mod connections;
mod watched_body;

use std::net::SocketAddr;
use std::sync::Arc;

use rowkit_codec::model::{ColumnFamily, FamilyChange};
use rowkit_codec::validate::is_bearer_token;
use rowkit_statemachines::{Code, Request, Response, StoreError, Timestamp};
use rowkit_store::{Reply, Store};
use tokio::sync::mpsc;

/// Why a server could not start listening.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A non-loopback listen address without `--token`.
    #[error(
        "listening on {addr} exposes the store beyond this machine: pass --token TOKEN \
         (clients then send `Authorization: Bearer TOKEN`), or listen on 127.0.0.1"
    )]
    TokenRequired {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// An empty token.
    #[error("--token must not be empty")]
    EmptyToken,
    /// A token with a byte other than visible ASCII (`!` to `~`), which clients cannot send.
    #[error(
        "--token must be visible ASCII (`!` to `~`, no spaces): clients send it in an \
         `Authorization: Bearer` header"
    )]
    TokenNotVisibleAscii,
    /// The socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Encoded parts buffered between the store's blocking thread and the client.
pub const STREAM_BUFFER: usize = 16;

/// The address/token rule of every rowkit server: loopback may go without a token, any other
/// address requires one, and a token is a valid one ([`check_token`]).
pub fn check_exposure(listen: SocketAddr, token: Option<&str>) -> Result<(), ServeError> {
    if let Some(token) = token {
        check_token(token)?;
    }
    if !listen.ip().is_loopback() && token.is_none() {
        return Err(ServeError::TokenRequired { addr: listen });
    }
    Ok(())
}

/// A server's token is a bearer token ([`rowkit_codec::validate::is_bearer_token`]): not
/// empty, visible ASCII.
pub fn check_token(token: &str) -> Result<(), ServeError> {
    if token.is_empty() {
        Err(ServeError::EmptyToken)
    } else if !is_bearer_token(token) {
        Err(ServeError::TokenNotVisibleAscii)
    } else {
        Ok(())
    }
}

/// ModifyColumnFamilies on the store (blocking): every change is checked against the table's
/// families before any is applied — `ALREADY_EXISTS` for a create of a family it has,
/// `NOT_FOUND` for an update or drop of one it has not, as Bigtable answers — then applied in
/// order. Returns the table's families after the changes.
pub fn modify_families(
    store: &dyn Store,
    table: &str,
    changes: &[FamilyChange],
) -> Result<Vec<ColumnFamily>, StoreError> {
    let mut existing: Vec<String> = store.families(table)?.into_iter().map(|f| f.name).collect();
    for change in changes {
        let name = change.family();
        let exists = existing.iter().any(|f| f == name);
        match change {
            FamilyChange::Create(_) if exists => {
                return Err(StoreError::new(
                    Code::AlreadyExists,
                    format!("column family {name:?} already exists in table {table:?}"),
                ));
            }
            FamilyChange::Update(_) | FamilyChange::Drop(_) if !exists => {
                return Err(StoreError::new(
                    Code::NotFound,
                    format!("column family {name:?} not found in table {table:?}"),
                ));
            }
            FamilyChange::Drop(_) => existing.retain(|f| f != name),
            FamilyChange::Create(_) | FamilyChange::Update(_) => existing.push(name.to_string()),
        }
    }
    for change in changes {
        match change {
            FamilyChange::Create(family) | FamilyChange::Update(family) => {
                store.set_family(table, family)?
            }
            FamilyChange::Drop(name) => store.drop_family(table, name)?,
        }
    }
    store.families(table)
}

/// Binds the server's socket ([`ServeError::Bind`] when the address is taken or not ours).
pub async fn listen(addr: SocketAddr) -> Result<tokio::net::TcpListener, ServeError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Compares without stopping at the first difference, so response timing does not reveal
/// how much of a guessed token is right.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Checks an `authorization` value (`Bearer TOKEN`, scheme in any case) against `token`;
/// `UNAUTHENTICATED` when it is missing or wrong, with a message naming the server as `who`
/// (`gateway`, `gRPC server`).
pub fn check_bearer(authorization: Option<&str>, token: &str, who: &str) -> Result<(), StoreError> {
    let given = authorization.and_then(|v| {
        let (scheme, rest) = v.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
    });
    match given {
        Some(given) if same_secret(given.as_bytes(), token.as_bytes()) => Ok(()),
        Some(_) => Err(StoreError::new(
            Code::Unauthenticated,
            format!("the bearer token is not this {who}'s token"),
        )),
        None => Err(StoreError::new(
            Code::Unauthenticated,
            format!(
                "this {who} requires `Authorization: Bearer <token>` (the token given to rowkit serve --token)"
            ),
        )),
    }
}

fn task_failed(e: tokio::task::JoinError) -> StoreError {
    StoreError::new(Code::Internal, format!("store task failed: {e}"))
}

/// Runs a unary request: a single-row write on a store that writes in memory
/// ([`Store::writes_in_memory`]) on the calling thread, as the hop to a blocking thread and
/// back cost more than the write; anything else on a blocking thread.
pub async fn unary(
    store: Arc<dyn Store>,
    request: Request,
    now: Timestamp,
) -> Result<Response, StoreError> {
    if store.writes_in_memory() && is_single_row_write(&request) {
        return unary_reply(store.as_ref(), request, now);
    }
    tokio::task::spawn_blocking(move || unary_reply(store.as_ref(), request, now))
        .await
        .map_err(task_failed)?
}

fn unary_reply(
    store: &dyn Store,
    request: Request,
    now: Timestamp,
) -> Result<Response, StoreError> {
    match store.execute(request, now)? {
        Reply::Unary(r) => Ok(r),
        Reply::Stream(_) => Err(StoreError::new(
            Code::Internal,
            "the store answered a unary call with a stream",
        )),
    }
}

/// MutateRow, CheckAndMutateRow and ReadModifyWriteRow: one row's transaction.
fn is_single_row_write(request: &Request) -> bool {
    matches!(
        request,
        Request::MutateRow(_) | Request::CheckAndMutateRow(_) | Request::ReadModifyWriteRow(_)
    )
}

/// Runs a blocking store call (an admin call) off the runtime.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f).await.map_err(task_failed)?
}

/// What the blocking thread of [`stream`] hands over.
#[derive(Debug)]
pub enum StreamMsg<T> {
    /// One encoded part.
    Part(T),
    /// The call failed; nothing follows.
    Failed(StoreError),
    /// The stream ended with OK.
    End,
}

/// How [`stream`] turns store parts into wire messages. Any
/// `FnMut(Response) -> Result<Vec<T>, StoreError>` is one (each part on its own); an encoder
/// that packs several parts into one message keeps the unsent rest until [`Encode::finish`].
pub trait Encode<T>: Send + 'static {
    /// The messages to send for one store part (none while it is still packing).
    fn encode(&mut self, part: Response) -> Result<Vec<T>, StoreError>;
    /// The messages still held once the store's stream ended or failed, sent before its end
    /// (whole rows a client can commit before the error). Default: none.
    fn finish(&mut self) -> Vec<T> {
        Vec::new()
    }
}

impl<T, F> Encode<T> for F
where
    F: FnMut(Response) -> Result<Vec<T>, StoreError> + Send + 'static,
{
    fn encode(&mut self, part: Response) -> Result<Vec<T>, StoreError> {
        self(part)
    }
}

/// How [`stream`] asks the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Execution {
    /// [`Store::execute`]: parts exactly as the store cuts them.
    Wire,
    /// [`Store::execute_local`]: a read may come as whole rows ([`Response::Rows`]), for a
    /// server that cuts rows into its own wire messages.
    Rows,
}

/// Row keys a ReadRows may name, with no range, and still be answered on the calling runtime
/// thread ([`stream`]).
pub const INLINE_ROW_KEYS: usize = 16;

/// Whether [`stream`] answers `request` on the calling thread: on an in-process store
/// ([`Store::in_process`]), a ReadRows of at most [`INLINE_ROW_KEYS`] row keys and no range is
/// that many point reads, which cost less than the hop to a blocking thread and back (the hop
/// was most of a `ReadRow`'s time on the server); on a store that writes in memory
/// ([`Store::writes_in_memory`]), a MutateRows of at most as many rows. A scan, a write that
/// may wait for a disk (a durable commit), any call on a network store (it blocks on its own
/// runtime) go to a blocking thread.
fn answered_inline(store: &dyn Store, request: &Request) -> bool {
    store.in_process()
        && match request {
            Request::ReadRows(r) => {
                r.rows.row_ranges.is_empty()
                    && !r.rows.row_keys.is_empty()
                    && r.rows.row_keys.len() <= INLINE_ROW_KEYS
            }
            // As many rows, written in memory ([`unary`]'s rule for one row).
            Request::MutateRows(r) => {
                store.writes_in_memory() && r.entries.len() <= INLINE_ROW_KEYS
            }
            _ => false,
        }
}

/// The messages of a streamed request, from [`stream`]: all at hand, or arriving from a
/// blocking thread.
#[derive(Debug)]
pub enum StoreStream<T> {
    /// Answered on the calling thread; ends with [`StreamMsg::End`] or [`StreamMsg::Failed`].
    Ready(std::vec::IntoIter<StreamMsg<T>>),
    /// Sent by the blocking thread running the request.
    Channel(mpsc::Receiver<StreamMsg<T>>),
}

impl<T> StoreStream<T> {
    /// The next message; `None` once a blocking thread's channel closed (after `End` or
    /// `Failed`, or because the task died).
    pub async fn recv(&mut self) -> Option<StreamMsg<T>> {
        match self {
            StoreStream::Ready(messages) => messages.next(),
            StoreStream::Channel(rx) => rx.recv().await,
        }
    }
}

/// Runs a streamed request and returns its messages: each store part becomes the parts
/// `encode` makes of it, then what [`Encode::finish`] still holds, then [`StreamMsg::End`] or
/// [`StreamMsg::Failed`]. A few point reads are answered on the calling thread; anything else
/// runs on a blocking thread (encoding there too) behind a bounded channel, so the scan waits
/// while the channel is full and stops when the receiver is dropped. A channel that closes
/// without `End` or `Failed` means the task died.
pub fn stream<T: Send + 'static>(
    store: Arc<dyn Store>,
    request: Request,
    now: Timestamp,
    execution: Execution,
    mut encode: impl Encode<T>,
) -> StoreStream<T> {
    if answered_inline(store.as_ref(), &request) {
        let mut messages = Vec::new();
        run_stream(store.as_ref(), request, now, execution, &mut encode, |m| {
            messages.push(m);
            true
        });
        return StoreStream::Ready(messages.into_iter());
    }
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    tokio::task::spawn_blocking(move || {
        run_stream(store.as_ref(), request, now, execution, &mut encode, |m| {
            tx.blocking_send(m).is_ok()
        });
    });
    StoreStream::Channel(rx)
}

/// Hands `send` each message as a part; `false` once the receiver is gone.
fn send_all<T>(messages: Vec<T>, send: &mut impl FnMut(StreamMsg<T>) -> bool) -> bool {
    messages.into_iter().all(|m| send(StreamMsg::Part(m)))
}

/// Executes `request` and hands `send` each encoded part, then `End` or `Failed`; stops as
/// soon as `send` says the receiver is gone.
fn run_stream<T>(
    store: &dyn Store,
    request: Request,
    now: Timestamp,
    execution: Execution,
    encode: &mut impl Encode<T>,
    mut send: impl FnMut(StreamMsg<T>) -> bool,
) {
    let reply = match execution {
        Execution::Wire => store.execute(request, now),
        Execution::Rows => store.execute_local(request, now),
    };
    let parts: Box<dyn Iterator<Item = Result<Response, StoreError>> + '_> = match reply {
        Ok(Reply::Stream(parts)) => parts,
        Ok(Reply::Unary(r)) => Box::new(std::iter::once(Ok(r))),
        Err(e) => {
            send(StreamMsg::Failed(e));
            return;
        }
    };
    for part in parts {
        let encoded = match part {
            Ok(Response::StreamEnd) => break,
            Ok(p) => encode.encode(p),
            Err(e) => {
                // What the encoder holds came before the failure: the client keeps it.
                if !send_all(encode.finish(), &mut send) {
                    return;
                }
                Err(e)
            }
        };
        match encoded {
            Ok(messages) => {
                if !send_all(messages, &mut send) {
                    return;
                }
            }
            Err(e) => {
                send(StreamMsg::Failed(e));
                return;
            }
        }
    }
    if send_all(encode.finish(), &mut send) {
        send(StreamMsg::End);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowkit_codec::model::Mutation;
    use rowkit_statemachines::MutateRowRequest;
    use rowkit_store::{MemoryStore, RedbStore};
    use std::time::Duration;

    fn one_cell_write() -> Request {
        Request::MutateRow(MutateRowRequest {
            table: "t".into(),
            row_key: b"r".to_vec(),
            mutations: vec![Mutation::SetCell {
                family: "f".into(),
                qualifier: b"q".to_vec(),
                timestamp: Timestamp(1000),
                value: b"v".to_vec(),
            }],
            ..Default::default()
        })
    }

    /// With the runtime's only blocking thread held, a single-row write to the memory store
    /// is still answered (it runs on the calling thread), while one to a redb store waits for
    /// the blocking thread (its commit may fsync) and is answered once the thread is free.
    #[test]
    fn memory_writes_skip_the_blocking_pool_and_redb_writes_do_not() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .max_blocking_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let family = [ColumnFamily::new("f")];
        let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
        memory.create_table("t", &family).unwrap();
        let redb: Arc<dyn Store> = Arc::new(RedbStore::in_memory().unwrap());
        redb.create_table("t", &family).unwrap();
        assert!(memory.writes_in_memory() && memory.in_process());
        assert!(!redb.writes_in_memory() && redb.in_process());
        rt.block_on(async {
            let (release, held) = std::sync::mpsc::channel::<()>();
            let holder = tokio::task::spawn_blocking(move || held.recv());
            let now = Timestamp(1_700_000_000_000_000);
            let wrote = tokio::time::timeout(
                Duration::from_secs(5),
                unary(Arc::clone(&memory), one_cell_write(), now),
            )
            .await;
            assert!(matches!(wrote, Ok(Ok(Response::MutateRow))), "{wrote:?}");
            let waiting = tokio::spawn(unary(Arc::clone(&redb), one_cell_write(), now));
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert!(
                !waiting.is_finished(),
                "the redb write ran without the blocking thread"
            );
            release.send(()).unwrap();
            assert!(holder.await.unwrap().is_ok());
            let wrote = waiting.await.unwrap();
            assert!(matches!(wrote, Ok(Response::MutateRow)), "{wrote:?}");
        });
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"ab"));
    }

    #[test]
    fn bearer_values() {
        assert!(check_bearer(Some("Bearer t1"), "t1", "x").is_ok());
        assert!(check_bearer(Some("bearer  t1 "), "t1", "x").is_ok());
        let code = |v| check_bearer(v, "t1", "x").map_err(|e| e.code);
        assert_eq!(code(Some("Bearer t2")), Err(Code::Unauthenticated));
        assert_eq!(code(Some("Basic t1")), Err(Code::Unauthenticated));
        assert_eq!(code(None), Err(Code::Unauthenticated));
    }

    #[test]
    fn exposure_rule() {
        let lo: SocketAddr = ([127, 0, 0, 1], 1).into();
        let any: SocketAddr = ([0, 0, 0, 0], 1).into();
        assert!(check_exposure(lo, None).is_ok());
        assert!(check_exposure(any, Some("t")).is_ok());
        assert!(matches!(
            check_exposure(any, None),
            Err(ServeError::TokenRequired { .. })
        ));
        assert!(matches!(
            check_exposure(lo, Some("")),
            Err(ServeError::EmptyToken)
        ));
        for bad in ["tök", "a b", "tab\there", "nul\0", "\u{7f}"] {
            assert!(
                matches!(
                    check_exposure(any, Some(bad)),
                    Err(ServeError::TokenNotVisibleAscii)
                ),
                "{bad:?}"
            );
        }
        assert!(check_exposure(any, Some("!azAZ09-._~+/=")).is_ok());
    }
}
