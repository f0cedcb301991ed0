//! The hot-row cache of §15: a pure LRU of node rows with a TTL that coalesces concurrent reads
//! of one row into a single fetch. No locks, no clock: the owner passes `now` and serialises
//! calls (the facade keeps it behind a mutex).
//!
//! rowkit refinement of §15, so that the cache stays behaviour-neutral: a write to a row is
//! bracketed by [`RowCache::begin_write`] (before it is sent) and [`RowCache::end_write`]
//! (after its answer). In between, every lookup of the row reads the store itself and nothing
//! is cached. With §15's `invalidate` after the answer alone, a read made after the store had
//! applied the write but before its writer invalidated still got the old row, even a read by
//! a thread whose own later write depended on it (a creator checking that its parent still
//! exists, seeing a parent a subtree delete had just removed: an orphaned branch).
//!
//! Rows are kept shared ([`Arc`]): a hit hands out the kept row itself, never a copy, so a
//! walk that reads a directory of a thousand children costs a reference count. Beside each row
//! the cache keeps the node a machine decoded from it ([`RowCache::node`],
//! [`RowCache::keep_node`]; machines reach them through [`Nodes`](super::Nodes)), so the next
//! walk gets that node instead of decoding the row again. The node lives exactly as long as its
//! row in the cache: a write, a refresh or an eviction drops both.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::model::Row;
use rowkit_codec::mounttable::{NodeRow, is_expired};

use crate::Timestamp;

/// Default capacity: rowkit keeps 10,000 rows where §15 says 1,000, so that the hot set of a
/// walk fits with room to spare: every directory on the walked paths plus the leaves read
/// between two visits of a directory. With 1,000 directories of 1,000 leaves (1 M nodes), a
/// 1,000-entry LRU saw 1,002 hot rows cycle through it and the directories miss; at 10,000
/// a directory is evicted only after about 9,000 resolves elsewhere. The facade's setting
/// (`row_cache_capacity`) overrides it.
pub const ROW_CACHE_CAPACITY: usize = 10_000;
/// Default TTL in µs (§3).
pub const ROW_CACHE_TTL_US: i64 = 1_000_000;

/// Identifies one caller of [`RowCache::lookup`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WaiterId(pub u64);

/// What a lookup tells its caller to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A fresh row: use it (the kept row itself, shared).
    Hit(Arc<Row>),
    /// Someone is fetching this row: wait for [`Completion`] to name this id.
    Wait(WaiterId),
    /// Send the read, then call [`RowCache::complete`] with this id.
    Fetch(WaiterId),
}

/// Who a completed fetch answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Callers to answer with the fetched result (the fetcher first).
    pub answered: Vec<WaiterId>,
    /// After a missing row or a failed read, the waiter that must now send its own read.
    pub next_fetcher: Option<WaiterId>,
}

#[derive(Debug, Default)]
struct Fetch {
    fetcher: Option<WaiterId>,
    waiters: VecDeque<WaiterId>,
}

#[derive(Debug)]
struct Entry {
    row: Option<Arc<Row>>,
    /// The node decoded from `row` (that very allocation), once a machine has.
    node: Option<Arc<NodeRow>>,
    updated: Option<Timestamp>,
    fetch: Option<Fetch>,
    used: u64,
    /// Writes to the row sent and not yet answered: while any, nothing is served or kept.
    writes: u32,
}

/// The cache (see the module doc).
#[derive(Debug)]
pub struct RowCache {
    capacity: usize,
    ttl_us: i64,
    entries: BTreeMap<Vec<u8>, Entry>,
    lru: BTreeMap<u64, Vec<u8>>,
    /// Fetches whose entry was invalidated or evicted: answered, never stored.
    orphans: BTreeMap<WaiterId, Fetch>,
    clock: u64,
    next_id: u64,
}

impl Default for RowCache {
    fn default() -> Self {
        RowCache::new(ROW_CACHE_CAPACITY, ROW_CACHE_TTL_US)
    }
}

impl RowCache {
    /// A cache of `capacity` rows, each fresh for `ttl_us`.
    pub fn new(capacity: usize, ttl_us: i64) -> RowCache {
        RowCache {
            capacity: capacity.max(1),
            ttl_us,
            entries: BTreeMap::new(),
            lru: BTreeMap::new(),
            orphans: BTreeMap::new(),
            clock: 0,
            next_id: 0,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn fresh_id(&mut self) -> WaiterId {
        self.next_id += 1;
        WaiterId(self.next_id)
    }

    /// Looks `key` up at `now` (marks it most recently used).
    pub fn lookup(&mut self, key: &[u8], now: Timestamp) -> Lookup {
        self.clock += 1;
        let used = self.clock;
        let id = self.fresh_id();
        if let Some(entry) = self.entries.get_mut(key) {
            // Move the entry's LRU key to its new place (no new copy on a hit).
            let lru_key = self.lru.remove(&entry.used).unwrap_or_else(|| key.to_vec());
            entry.used = used;
            self.lru.insert(used, lru_key);
            if entry.writes > 0 {
                // A read of its own, neither joined nor kept: the store may or may not have
                // applied the write yet, and only the store knows.
                self.orphans.insert(
                    id,
                    Fetch {
                        fetcher: Some(id),
                        waiters: VecDeque::new(),
                    },
                );
                return Lookup::Fetch(id);
            }
            if let (Some(row), Some(updated)) = (&entry.row, entry.updated)
                && now.0.saturating_sub(updated.0) < self.ttl_us
            {
                return Lookup::Hit(row.clone());
            }
            return match entry.fetch.as_mut() {
                Some(f) => {
                    f.waiters.push_back(id);
                    Lookup::Wait(id)
                }
                None => {
                    entry.fetch = Some(Fetch {
                        fetcher: Some(id),
                        waiters: VecDeque::new(),
                    });
                    Lookup::Fetch(id)
                }
            };
        }
        self.entries.insert(
            key.to_vec(),
            Entry {
                row: None,
                node: None,
                updated: None,
                fetch: Some(Fetch {
                    fetcher: Some(id),
                    waiters: VecDeque::new(),
                }),
                used,
                writes: 0,
            },
        );
        self.lru.insert(used, key.to_vec());
        self.evict();
        Lookup::Fetch(id)
    }

    /// Evicts least recently used entries beyond the capacity, except those with a write in
    /// flight (their marker must outlive the write; they are few: one per concurrent write).
    fn evict(&mut self) {
        let mut kept = Vec::new();
        while self.entries.len() > self.capacity {
            let Some((used, victim)) = self.lru.pop_first() else {
                break;
            };
            match self.entries.get(&victim) {
                Some(e) if e.writes > 0 => kept.push((used, victim)),
                Some(_) => {
                    if let Some(e) = self.entries.remove(&victim) {
                        self.orphan(e.fetch);
                    }
                }
                None => {}
            }
        }
        self.lru.extend(kept);
    }

    fn orphan(&mut self, fetch: Option<Fetch>) {
        if let Some(f) = fetch
            && let Some(fetcher) = f.fetcher
        {
            self.orphans.insert(fetcher, f);
        }
    }

    /// Drops `key` (§15: after any write to it). A fetch in flight still answers its callers
    /// but is not kept. A write in flight ([`RowCache::begin_write`]) keeps its marker.
    pub fn invalidate(&mut self, key: &[u8]) {
        let Some(e) = self.entries.get_mut(key) else {
            return;
        };
        if e.writes > 0 {
            e.row = None;
            e.node = None;
            e.updated = None;
            let fetch = e.fetch.take();
            self.orphan(fetch);
            return;
        }
        if let Some(e) = self.entries.remove(key) {
            self.lru.remove(&e.used);
            self.orphan(e.fetch);
        }
    }

    /// A write to `key` is about to be sent: drop what is cached and serve no read of `key`
    /// from the cache until [`RowCache::end_write`] (see the module doc).
    pub fn begin_write(&mut self, key: &[u8]) {
        self.invalidate(key);
        self.clock += 1;
        let used = self.clock;
        let entry = self.entries.entry(key.to_vec()).or_insert(Entry {
            row: None,
            node: None,
            updated: None,
            fetch: None,
            used,
            writes: 0,
        });
        entry.writes += 1;
        self.lru.remove(&entry.used);
        entry.used = used;
        self.lru.insert(used, key.to_vec());
        self.evict();
    }

    /// The write [`RowCache::begin_write`] announced was answered (or failed): reads of `key`
    /// that start from now on see it, so the cache may fill again once no write is left.
    pub fn end_write(&mut self, key: &[u8]) {
        if let Some(e) = self.entries.get_mut(key) {
            e.writes = e.writes.saturating_sub(1);
            if e.writes == 0 {
                self.invalidate(key);
            }
        }
    }

    /// The node decoded from this very `row` if the cache holds it (the row handed out by a
    /// hit or kept by a fetch) and a machine kept its node ([`RowCache::keep_node`]), provided
    /// it decodes the same at `now`: a node depends on time only through which servers have
    /// expired, so it serves while every server stays on the same side of its deadline. Never
    /// for another allocation with the same key: a row is never changed in place, a write or
    /// refresh brings a new one.
    pub fn node(&self, row: &Arc<Row>, now: Timestamp) -> Option<Arc<NodeRow>> {
        let entry = self.entries.get(&row.key)?;
        let kept = entry.row.as_ref()?;
        let node = entry.node.as_ref()?;
        (Arc::ptr_eq(kept, row) && same_at(node, now)).then(|| node.clone())
    }

    /// Keeps `node`, decoded from `row`, beside it, if `row` is what the cache holds for its key
    /// (a row read around the cache, or replaced since, is not kept).
    pub fn keep_node(&mut self, row: &Arc<Row>, node: Arc<NodeRow>) {
        if let Some(entry) = self.entries.get_mut(&row.key)
            && entry
                .row
                .as_ref()
                .is_some_and(|kept| Arc::ptr_eq(kept, row))
        {
            entry.node = Some(node);
        }
    }

    /// The fetch started by `fetcher` for `key` ended at `now` with `row` (`None`: missing or
    /// failed).
    pub fn complete(
        &mut self,
        key: &[u8],
        fetcher: WaiterId,
        row: Option<Arc<Row>>,
        now: Timestamp,
    ) -> Completion {
        let (fetch, store) = match self.entries.get_mut(key) {
            Some(e) if e.fetch.as_ref().is_some_and(|f| f.fetcher == Some(fetcher)) => {
                (e.fetch.take(), true)
            }
            _ => (self.orphans.remove(&fetcher), false),
        };
        let Some(mut fetch) = fetch else {
            return Completion {
                answered: alloc::vec![fetcher],
                next_fetcher: None,
            };
        };
        match row {
            Some(row) => {
                if store && let Some(e) = self.entries.get_mut(key) {
                    e.row = Some(row);
                    e.node = None;
                    e.updated = Some(now);
                }
                let mut answered = alloc::vec![fetcher];
                answered.extend(fetch.waiters);
                Completion {
                    answered,
                    next_fetcher: None,
                }
            }
            None => {
                let next = fetch.waiters.pop_front();
                if let Some(n) = next {
                    fetch.fetcher = Some(n);
                    if store && let Some(e) = self.entries.get_mut(key) {
                        e.fetch = Some(fetch);
                    } else {
                        self.orphans.insert(n, fetch);
                    }
                }
                Completion {
                    answered: alloc::vec![fetcher],
                    next_fetcher: next,
                }
            }
        }
    }
}

/// Whether `node`, decoded at some time, decodes the same at `now`: every server still on the
/// same side of its deadline.
fn same_at(node: &NodeRow, now: Timestamp) -> bool {
    node.servers
        .iter()
        .all(|s| !is_expired(s.deadline_us, now.0))
        && node
            .expired_servers
            .iter()
            .all(|s| is_expired(s.deadline_us, now.0))
}
