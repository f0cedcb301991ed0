//! [`RowCached`]: the mount table's hot-row cache (`spec/mounttable.md` 15) as a decorator any
//! [`Driver`] gets.
//!
//! It sits between the machines and the driver; machines never see it, so their request
//! scripts are the same with or without it. Only node reads
//! (`ReadRow(node table, key, LatestN(1))`) go through it: a fresh row is answered from the
//! cache, and concurrent reads of one row cost one store request (the others wait for its
//! answer). From the moment a `MutateRow`/`CheckAndMutateRow` on a node row is sent until it
//! is answered, reads of that row go to the store and nothing is kept
//! ([`RowCache::begin_write`]). Answers are whole, shared rows ([`Response::Row`], or
//! [`Response::Rows`] to a one-key ReadRows): a hit
//! hands the machine the row the cache keeps, with no chunks to cut and merge again and no
//! copy, whatever driver is underneath (a miss is merged once, by the read the cache sends).
//! Beside each row the cache keeps the node a machine decoded from it: machines reach it
//! through [`RowCached::nodes`] (the [`SharedNodes`] of their context), so a walk through a
//! hot directory does not decode it again. The pure cache ([`RowCache`]) decides; this module
//! only adds the lock and the wake-ups, runtime-free (plain [`Waker`]s), so the same code
//! serves threads blocked in [`crate::block_on`], Tokio tasks and a browser page.
//!
//! Hand-written on purpose: what it keeps is tied to the machines' protocol (which reads may be
//! answered, the in-flight write window that bypasses it, the decoded nodes beside the rows);
//! a general cache crate (`moka`, `lru`) would supply only the map, not these rules, and pull
//! a runtime or threads the browser build cannot have.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_core::Stream;
use futures_util::StreamExt;
use futures_util::future::Either;
use rowkit_codec::model::{Row, RowFilter};
use rowkit_codec::mounttable::{NodePermissions, NodeRow};
use rowkit_statemachines::mounttable::{
    Lookup, Nodes, ROW_CACHE_TTL_US, RowCache, SharedNodes, WaiterId,
};
use rowkit_statemachines::readrows::{ReadRow, ReadRows};
use rowkit_statemachines::{Code, Request, Response, RetryPolicy, StoreError, Timestamp};

use crate::driver::forward_admin;
use crate::{Driver, run};

/// What a waiter of a coalesced read is told by the read it waited for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    /// The fetched row (`None`: no such row).
    Row(Option<Arc<Row>>),
    /// The fetch failed or found nothing cacheable: send your own read.
    Fetch,
}

/// The cache and what is owed to its waiters.
#[derive(Debug, Default)]
struct CacheState {
    cache: RowCache,
    answers: BTreeMap<WaiterId, Answer>,
    /// Waiters that left before their answer (a cancelled read): never answered, and a fetch
    /// handed to one of them is passed on at once.
    abandoned: BTreeSet<WaiterId>,
    /// Waiters parked until an answer arrives.
    wakers: BTreeMap<WaiterId, Waker>,
}

impl CacheState {
    /// Records the end of fetch `id` of `key` and leaves an answer for every waiter it serves.
    fn complete(&mut self, key: &[u8], id: WaiterId, row: Option<Arc<Row>>, now: Timestamp) {
        let done = self.cache.complete(key, id, row.clone(), now);
        for w in done.answered.iter().filter(|w| **w != id) {
            if !self.abandoned.remove(w) {
                self.answers.insert(*w, Answer::Row(row.clone()));
            }
        }
        if let Some(next) = done.next_fetcher {
            if self.abandoned.remove(&next) {
                self.complete(key, next, None, now);
            } else {
                self.answers.insert(next, Answer::Fetch);
            }
        }
        self.wake_answered();
    }

    /// Waiter `id` leaves without its answer: a fetch handed to it passes to the next waiter.
    fn abandon(&mut self, key: &[u8], id: WaiterId, now: Timestamp) {
        self.wakers.remove(&id);
        match self.answers.remove(&id) {
            Some(Answer::Fetch) => self.complete(key, id, None, now),
            Some(Answer::Row(_)) => {}
            None => {
                self.abandoned.insert(id);
            }
        }
    }

    fn wake_answered(&mut self) {
        let answered: Vec<WaiterId> = self
            .wakers
            .keys()
            .filter(|w| self.answers.contains_key(w))
            .copied()
            .collect();
        for w in answered {
            if let Some(waker) = self.wakers.remove(&w) {
                waker.wake();
            }
        }
    }
}

/// The cache of one facade, shared by all its calls.
#[derive(Debug, Default)]
struct SharedCache {
    state: Mutex<CacheState>,
    /// Node reads sent to the store (misses after coalescing).
    fetches: AtomicU64,
}

impl SharedCache {
    fn lock(&self) -> MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The decoded nodes kept beside the cached rows ([`RowCache::node`], [`RowCache::keep_node`])
/// and the permissions they share ([`RowCache::permissions`]).
impl SharedNodes for SharedCache {
    fn get(&self, row: &Arc<Row>, now: Timestamp) -> Option<Arc<NodeRow>> {
        self.lock().cache.node(row, now)
    }

    fn keep(&self, row: &Arc<Row>, node: &Arc<NodeRow>) {
        self.lock().cache.keep_node(row, node.clone());
    }

    fn permissions(&self, text: &[u8]) -> Option<NodePermissions> {
        self.lock().cache.permissions(text)
    }
}

/// A driver whose node reads go through the hot-row cache (see the module doc).
#[derive(Debug)]
pub struct RowCached<D> {
    inner: D,
    node_table: String,
    /// `None`: the cache is off and every request goes straight to `inner`. Shared with the
    /// machines' [`Nodes`].
    cache: Option<Arc<SharedCache>>,
}

impl<D> RowCached<D> {
    /// `inner` with a cache of at most `capacity` rows of `node_table` (`0`: no cache, every
    /// request goes straight to `inner`).
    pub fn new(inner: D, node_table: &str, capacity: usize) -> RowCached<D> {
        RowCached {
            inner,
            node_table: node_table.to_string(),
            cache: (capacity > 0).then(|| {
                Arc::new(SharedCache {
                    state: Mutex::new(CacheState {
                        cache: RowCache::new(capacity, ROW_CACHE_TTL_US),
                        ..CacheState::default()
                    }),
                    fetches: AtomicU64::new(0),
                })
            }),
        }
    }

    /// Where machines find the nodes decoded from the rows this cache hands out, and leave the
    /// ones they decode (none without a cache: nothing is handed out twice).
    pub fn nodes(&self) -> Nodes {
        match &self.cache {
            Some(cache) => Nodes::shared(cache.clone()),
            None => Nodes::none(),
        }
    }

    /// The driver underneath.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// Node reads the cache sent to the store so far (its misses after coalescing).
    pub fn fetches(&self) -> u64 {
        self.cache
            .as_ref()
            .map_or(0, |c| c.fetches.load(Ordering::Relaxed))
    }

    /// The node row `request` reads, if it is a read the cache may answer: a point read, or
    /// the one-key ReadRows it stands for.
    fn cacheable_read(&self, request: &Request) -> Option<Vec<u8>> {
        match request {
            Request::ReadRow(r)
                if r.table == self.node_table
                    && r.filter == Some(RowFilter::CellsPerColumnLimit(1)) =>
            {
                Some(r.row_key.clone())
            }
            Request::ReadRows(r)
                if r.table == self.node_table
                    && r.rows.row_keys.len() == 1
                    && r.rows.row_ranges.is_empty()
                    && r.filter == Some(RowFilter::CellsPerColumnLimit(1))
                    && r.rows_limit == 0
                    && !r.reversed =>
            {
                r.rows.row_keys.first().cloned()
            }
            _ => None,
        }
    }

    /// The node row `request` writes, if any.
    fn node_write<'r>(&self, request: &'r Request) -> Option<&'r [u8]> {
        match request {
            Request::MutateRow(r) if r.table == self.node_table => Some(&r.row_key),
            Request::CheckAndMutateRow(r) if r.table == self.node_table => Some(&r.row_key),
            _ => None,
        }
    }
}

/// A cached row as a one-key ReadRows' reply: the row whole and shared (nothing if missing),
/// then the end of the stream (a point read's reply is the one [`Response::Row`]).
fn row_parts(row: Option<Arc<Row>>) -> Vec<Result<Response, StoreError>> {
    let mut parts = Vec::with_capacity(2);
    if let Some(row) = row {
        parts.push(Ok(Response::Rows(vec![row])));
    }
    parts.push(Ok(Response::StreamEnd));
    parts
}

/// Waits for the answer owed to waiter `id`; leaving early abandons it.
struct WaitAnswer<'a> {
    cache: &'a SharedCache,
    key: &'a [u8],
    id: WaiterId,
    now: Timestamp,
    done: bool,
}

impl Future for WaitAnswer<'_> {
    type Output = Answer;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer> {
        let cache = self.cache;
        let mut state = cache.lock();
        match state.answers.remove(&self.id) {
            Some(answer) => {
                drop(state);
                self.done = true;
                Poll::Ready(answer)
            }
            None => {
                state.wakers.insert(self.id, cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Drop for WaitAnswer<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.cache.lock().abandon(self.key, self.id, self.now);
        }
    }
}

/// A fetch in progress: completes as failed if dropped first (the machine aborted the read),
/// so its waiters are never left parked.
struct FetchTurn<'a> {
    cache: &'a SharedCache,
    key: &'a [u8],
    id: WaiterId,
    now: Timestamp,
    done: bool,
}

impl FetchTurn<'_> {
    fn complete(mut self, row: Option<Arc<Row>>) {
        self.done = true;
        self.cache.lock().complete(self.key, self.id, row, self.now);
    }
}

impl Drop for FetchTurn<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.cache
                .lock()
                .complete(self.key, self.id, None, self.now);
        }
    }
}

/// Ends a node-row write's bracket ([`RowCache::end_write`]) when the write is answered or
/// abandoned.
struct WriteBracket<'a> {
    cache: &'a SharedCache,
    key: Vec<u8>,
}

impl Drop for WriteBracket<'_> {
    fn drop(&mut self) {
        self.cache.lock().cache.end_write(&self.key);
    }
}

impl<D: Driver> RowCached<D> {
    /// One node read through the cache.
    async fn cached_read(
        &self,
        cache: &SharedCache,
        key: Vec<u8>,
        request: Request,
    ) -> Result<Option<Arc<Row>>, StoreError> {
        let now = self.inner.now();
        let looked_up = cache.lock().cache.lookup(&key, now);
        let id = match looked_up {
            Lookup::Hit(row) => return Ok(Some(row)),
            Lookup::Fetch(id) => id,
            Lookup::Wait(id) => {
                let wait = WaitAnswer {
                    cache,
                    key: &key,
                    id,
                    now,
                    done: false,
                };
                match wait.await {
                    Answer::Row(row) => return Ok(row),
                    Answer::Fetch => id,
                }
            }
        };
        let turn = FetchTurn {
            cache,
            key: &key,
            id,
            now,
            done: false,
        };
        cache.fetches.fetch_add(1, Ordering::Relaxed);
        let result = match request {
            Request::ReadRow(read) => {
                let machine = ReadRow::new(read, now, 0, RetryPolicy::default());
                run(&self.inner, machine, |()| {}).await
            }
            Request::ReadRows(read) => {
                let mut rows = Vec::new();
                let machine = ReadRows::new(read, now, 0, RetryPolicy::default());
                run(&self.inner, machine, |row| rows.push(row))
                    .await
                    .map(|_| rows.into_iter().next().map(Arc::new))
            }
            _ => return Err(StoreError::new(Code::Internal, "not a read")),
        }
        .map_err(|e| e.into_store_error());
        turn.complete(result.as_ref().ok().cloned().flatten());
        result
    }
}

impl<D: Driver> Driver for RowCached<D> {
    fn now(&self) -> Timestamp {
        self.inner.now()
    }

    fn call(&self, request: Request) -> impl Stream<Item = Result<Response, StoreError>> {
        let Some(cache) = self.cache.as_deref() else {
            return Either::Left(self.inner.call(request));
        };
        if let Some(key) = self.cacheable_read(&request) {
            let point = matches!(request, Request::ReadRow(_));
            let read = self.cached_read(cache, key, request);
            return Either::Right(Either::Left(futures_util::stream::once(read).flat_map(
                move |result| {
                    futures_util::stream::iter(match result {
                        Ok(row) if point => vec![Ok(Response::Row(row))],
                        Ok(row) => row_parts(row),
                        Err(e) => vec![Err(e)],
                    })
                },
            )));
        }
        let Some(key) = self.node_write(&request).map(<[u8]>::to_vec) else {
            return Either::Left(self.inner.call(request));
        };
        cache.lock().cache.begin_write(&key);
        let mut bracket = Some(WriteBracket { cache, key });
        let answers = self.inner.call(request);
        // A write is unary: its first item is its answer, which ends the bracket.
        Either::Right(Either::Right(
            answers.inspect(move |_| drop(bracket.take())),
        ))
    }

    fn sleep_until(&self, at: Timestamp) -> impl Future<Output = ()> {
        self.inner.sleep_until(at)
    }

    fn blocking_waits(&self) -> bool {
        self.inner.blocking_waits()
    }

    forward_admin!(self => self.inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(c: &mut CacheState, key: &[u8], now: Timestamp) -> WaiterId {
        match c.cache.lookup(key, now) {
            Lookup::Wait(id) => id,
            other => panic!("{other:?}"),
        }
    }

    /// A cancelled waiter never strands the others: a fetch handed to it (before or after it
    /// left) passes to the next waiter, and a row answer is not kept for it.
    #[test]
    fn abandoned_waiters_pass_the_fetch_on() {
        let now = Timestamp(1);
        let k = b"k".as_slice();
        for abandon_first in [false, true] {
            let mut c = CacheState::default();
            let Lookup::Fetch(a) = c.cache.lookup(k, now) else {
                panic!()
            };
            let b = waiting(&mut c, k, now);
            let w = waiting(&mut c, k, now);
            if abandon_first {
                c.abandon(k, b, now);
                c.complete(k, a, None, now);
            } else {
                c.complete(k, a, None, now);
                c.abandon(k, b, now);
            }
            assert_eq!(c.answers.remove(&b), None);
            assert_eq!(c.answers.remove(&w), Some(Answer::Fetch));
        }
        let mut c = CacheState::default();
        let Lookup::Fetch(a) = c.cache.lookup(k, now) else {
            panic!()
        };
        let b = waiting(&mut c, k, now);
        let w = waiting(&mut c, k, now);
        c.abandon(k, b, now);
        let row = Arc::new(Row {
            key: k.to_vec(),
            cells: Vec::new(),
        });
        c.complete(k, a, Some(row.clone()), now);
        assert_eq!(c.answers.remove(&b), None);
        assert_eq!(c.answers.remove(&w), Some(Answer::Row(Some(row))));
        assert!(c.abandoned.is_empty() && c.answers.is_empty());
    }
}
