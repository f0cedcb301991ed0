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
//! walk gets that node instead of decoding the row again: a directory's from its fetch on, a
//! childless node once its row is read again (a hit). The node lives exactly as long as its
//! row in the cache: a write, a refresh or an eviction drops both.
//!
//! Entries sit in slots linked in recency order (the LRU list) and are found by key in an
//! ordered index: a hit moves its slot to the front, an eviction takes the back one, and the
//! slot of the row last handed out is remembered so that the node lookup that follows a read
//! finds it without a search.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::borrow::Borrow;
use core::cmp::Ordering;

use rowkit_codec::model::Row;
use rowkit_codec::mounttable::{NodePermissions, NodeRow, is_expired};

use crate::Timestamp;

/// Default capacity: rowkit keeps 10,000 rows where §15 says 1,000, so that the hot set of a
/// walk fits with room to spare: every directory on the walked paths plus the leaves read
/// between two visits of a directory. With 1,000 directories of 1,000 leaves (1 M nodes), a
/// 1,000-entry LRU saw 1,002 hot rows cycle through it and the directories miss; at 10,000
/// a directory is evicted only after about 9,000 resolves elsewhere. The facade's setting
/// (`row_cache_capacity`) overrides it.
pub const ROW_CACHE_CAPACITY: usize = 10_000;
/// How many permission texts the cache remembers decoded ([`RowCache::permissions`]): the
/// few a table's nodes share (its directories', its leaves').
const PERMISSIONS_KEPT: usize = 8;
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
    /// The node decoded from `row` (that very allocation), once a machine has and it is worth
    /// keeping ([`RowCache::keep_node`]).
    node: Option<Arc<NodeRow>>,
    /// `row` was handed out by a hit since it was stored.
    served: bool,
    updated: Option<Timestamp>,
    fetch: Option<Fetch>,
    /// Writes to the row sent and not yet answered: while any, nothing is served or kept.
    writes: u32,
}

impl Entry {
    fn new(fetch: Option<Fetch>) -> Entry {
        Entry {
            row: None,
            node: None,
            served: false,
            updated: None,
            fetch,
            writes: 0,
        }
    }
}

/// A key of the index: the row key, with its first 8 bytes also inline as a number, so that
/// the comparisons of a search are mostly integer ones on the index's own nodes rather than
/// reads of each key's allocation (mount-table keys begin with a hash of the name, §4.2). The
/// order is by `(prefix, key)`: a total order, not the keys' byte order, which nothing here
/// needs.
#[derive(Clone, Debug)]
struct IndexKey {
    prefix: u64,
    key: Arc<[u8]>,
}

/// The first 8 bytes of `key` as a big-endian number (zero-padded).
fn prefix(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    for (b, k) in bytes.iter_mut().zip(key) {
        *b = *k;
    }
    u64::from_be_bytes(bytes)
}

/// What the index compares: an [`IndexKey`] or a probe `(prefix, key)` borrowed from a lookup's
/// key, so that a lookup builds no `IndexKey` (no allocation).
trait KeyView {
    fn view(&self) -> (u64, &[u8]);
}

impl KeyView for IndexKey {
    fn view(&self) -> (u64, &[u8]) {
        (self.prefix, &self.key)
    }
}

impl KeyView for (u64, &[u8]) {
    fn view(&self) -> (u64, &[u8]) {
        (self.0, self.1)
    }
}

impl PartialEq for dyn KeyView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.view() == other.view()
    }
}

impl Eq for dyn KeyView + '_ {}

impl PartialOrd for dyn KeyView + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn KeyView + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        self.view().cmp(&other.view())
    }
}

impl PartialEq for IndexKey {
    fn eq(&self, other: &Self) -> bool {
        self.view() == other.view()
    }
}

impl Eq for IndexKey {}

impl PartialOrd for IndexKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for IndexKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.view().cmp(&other.view())
    }
}

impl<'a> Borrow<dyn KeyView + 'a> for IndexKey {
    fn borrow(&self) -> &(dyn KeyView + 'a) {
        self
    }
}

/// No slot: the end of the LRU list.
const NIL: u32 = u32::MAX;

/// An entry in its place in the recency list (a doubly linked list through the slots, most
/// recently used first), found by key through [`RowCache::index`].
#[derive(Debug)]
struct Slot {
    /// The row key, shared with the index (one allocation).
    key: IndexKey,
    entry: Entry,
    /// The next more recently used slot (`NIL`: this is the most recent).
    newer: u32,
    /// The next less recently used slot (`NIL`: this is the least recent).
    older: u32,
}

/// The cache (see the module doc).
///
/// Entries live in slots (a free list reuses those of evicted entries) linked in recency
/// order, so marking one most recently used and finding the least recently used are a few
/// index writes; the key is searched once per call.
#[derive(Debug)]
pub struct RowCache {
    capacity: usize,
    ttl_us: i64,
    /// Key → slot.
    index: BTreeMap<IndexKey, u32>,
    slots: Vec<Option<Slot>>,
    /// Slots free for reuse.
    free: Vec<u32>,
    /// Most and least recently used slots (`NIL` when empty).
    newest: u32,
    oldest: u32,
    /// The slot of the row last handed out (a hit or a completed fetch), so that the machine
    /// asking for its node right after ([`RowCache::node`], [`RowCache::keep_node`]) finds it
    /// without a search (checked by the row's identity; a search otherwise).
    last: u32,
    /// Fetches whose entry was invalidated or evicted: answered, never stored.
    orphans: BTreeMap<WaiterId, Fetch>,
    next_id: u64,
    /// The permissions of the nodes machines decoded lately, distinct texts, replaced in turn
    /// (`next_permissions` is the next to go).
    known_permissions: [Option<NodePermissions>; PERMISSIONS_KEPT],
    next_permissions: usize,
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
            index: BTreeMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            newest: NIL,
            oldest: NIL,
            last: NIL,
            orphans: BTreeMap::new(),
            next_id: 0,
            known_permissions: Default::default(),
            next_permissions: 0,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    fn fresh_id(&mut self) -> WaiterId {
        self.next_id += 1;
        WaiterId(self.next_id)
    }

    /// The slot of `key`.
    fn find(&self, key: &[u8]) -> Option<u32> {
        let probe = (prefix(key), key);
        self.index.get(&probe as &dyn KeyView).copied()
    }

    fn slot(&self, s: u32) -> Option<&Slot> {
        self.slots.get(s as usize)?.as_ref()
    }

    fn slot_mut(&mut self, s: u32) -> Option<&mut Slot> {
        self.slots.get_mut(s as usize)?.as_mut()
    }

    fn entry_mut(&mut self, s: u32) -> Option<&mut Entry> {
        self.slot_mut(s).map(|slot| &mut slot.entry)
    }

    /// Takes slot `s` out of the recency list.
    fn unlink(&mut self, s: u32) {
        let Some((newer, older)) = self.slot(s).map(|x| (x.newer, x.older)) else {
            return;
        };
        match self.slot_mut(newer) {
            Some(n) => n.older = older,
            None => self.newest = older,
        }
        match self.slot_mut(older) {
            Some(o) => o.newer = newer,
            None => self.oldest = newer,
        }
        if let Some(x) = self.slot_mut(s) {
            x.newer = NIL;
            x.older = NIL;
        }
    }

    /// Puts slot `s` (out of the list) at its most recently used end.
    fn link_newest(&mut self, s: u32) {
        let older = self.newest;
        if let Some(x) = self.slot_mut(s) {
            x.newer = NIL;
            x.older = older;
        }
        match self.slot_mut(older) {
            Some(o) => o.newer = s,
            None => self.oldest = s,
        }
        self.newest = s;
    }

    /// Marks slot `s` most recently used.
    fn touch(&mut self, s: u32) {
        if self.newest != s {
            self.unlink(s);
            self.link_newest(s);
        }
    }

    /// A new entry for `key`, most recently used.
    fn insert(&mut self, key: &[u8], entry: Entry) -> u32 {
        let key = IndexKey {
            prefix: prefix(key),
            key: Arc::from(key),
        };
        let slot = Slot {
            key: key.clone(),
            entry,
            newer: NIL,
            older: NIL,
        };
        let s = match self.free.pop() {
            Some(s) => {
                if let Some(place) = self.slots.get_mut(s as usize) {
                    *place = Some(slot);
                }
                s
            }
            None => {
                self.slots.push(Some(slot));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(key, s);
        self.link_newest(s);
        s
    }

    /// Removes slot `s` and its entry.
    fn remove(&mut self, s: u32) -> Option<Entry> {
        self.unlink(s);
        let slot = self.slots.get_mut(s as usize)?.take()?;
        self.index.remove(&slot.key);
        self.free.push(s);
        if self.last == s {
            self.last = NIL;
        }
        Some(slot.entry)
    }

    /// Looks `key` up at `now` (marks it most recently used).
    pub fn lookup(&mut self, key: &[u8], now: Timestamp) -> Lookup {
        let id = self.fresh_id();
        if let Some(s) = self.find(key) {
            self.touch(s);
            let ttl_us = self.ttl_us;
            let Some(entry) = self.entry_mut(s) else {
                return Lookup::Fetch(id);
            };
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
                && now.0.saturating_sub(updated.0) < ttl_us
            {
                let row = row.clone();
                entry.served = true;
                self.last = s;
                return Lookup::Hit(row);
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
        self.insert(
            key,
            Entry::new(Some(Fetch {
                fetcher: Some(id),
                waiters: VecDeque::new(),
            })),
        );
        self.evict();
        Lookup::Fetch(id)
    }

    /// Evicts least recently used entries beyond the capacity, except those with a write in
    /// flight (their marker must outlive the write; they are few: one per concurrent write).
    fn evict(&mut self) {
        let mut at = self.oldest;
        while self.index.len() > self.capacity {
            let Some(slot) = self.slot(at) else {
                break;
            };
            let (victim, writes) = (at, slot.entry.writes);
            at = slot.newer;
            if writes == 0
                && let Some(e) = self.remove(victim)
            {
                self.orphan(e.fetch);
            }
        }
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
        let Some(s) = self.find(key) else {
            return;
        };
        self.invalidate_slot(s);
    }

    fn invalidate_slot(&mut self, s: u32) {
        let Some(e) = self.entry_mut(s) else {
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
        if let Some(e) = self.remove(s) {
            self.orphan(e.fetch);
        }
    }

    /// A write to `key` is about to be sent: drop what is cached and serve no read of `key`
    /// from the cache until [`RowCache::end_write`] (see the module doc).
    pub fn begin_write(&mut self, key: &[u8]) {
        let s = match self.find(key) {
            Some(s) => {
                self.invalidate_slot(s);
                self.find(key)
            }
            None => None,
        };
        let s = match s {
            Some(s) => {
                self.touch(s);
                s
            }
            None => self.insert(key, Entry::new(None)),
        };
        if let Some(e) = self.entry_mut(s) {
            e.writes += 1;
        }
        self.evict();
    }

    /// The write [`RowCache::begin_write`] announced was answered (or failed): reads of `key`
    /// that start from now on see it, so the cache may fill again once no write is left.
    pub fn end_write(&mut self, key: &[u8]) {
        let Some(s) = self.find(key) else {
            return;
        };
        if let Some(e) = self.entry_mut(s) {
            e.writes = e.writes.saturating_sub(1);
            if e.writes == 0 {
                self.invalidate_slot(s);
            }
        }
    }

    /// The slot holding this very `row`: the last one handed out, or the one of its key.
    fn slot_of(&self, row: &Arc<Row>) -> Option<u32> {
        let holds = |s: u32| {
            self.slot(s).is_some_and(|x| {
                x.entry
                    .row
                    .as_ref()
                    .is_some_and(|kept| Arc::ptr_eq(kept, row))
                    && *x.key.key == row.key[..]
            })
        };
        if holds(self.last) {
            return Some(self.last);
        }
        let s = self.find(&row.key)?;
        holds(s).then_some(s)
    }

    /// The node decoded from this very `row` if the cache holds it (the row handed out by a
    /// hit or kept by a fetch) and a machine kept its node ([`RowCache::keep_node`]), provided
    /// it decodes the same at `now`: a node depends on time only through which servers have
    /// expired, so it serves while every server stays on the same side of its deadline. Never
    /// for another allocation with the same key: a row is never changed in place, a write or
    /// refresh brings a new one.
    pub fn node(&self, row: &Arc<Row>, now: Timestamp) -> Option<Arc<NodeRow>> {
        let node = self.slot(self.slot_of(row)?)?.entry.node.as_ref()?;
        same_at(node, now).then(|| node.clone())
    }

    /// Keeps `node`, decoded from `row`, beside it, if `row` is what the cache holds for its key
    /// (a row read around the cache, or replaced since, is not kept) and the node is worth
    /// keeping: it has child references (decoding those is most of what a node costs), or
    /// its row has been handed out by a hit since it was stored (it is read again). A row
    /// read once, like most leaves of a large table, keeps no node: it would only be freed,
    /// long after, when the row is evicted (freeing memory that has left the CPU's caches
    /// costs more than decoding a leaf).
    ///
    /// Its permissions are remembered in any case ([`RowCache::permissions`]).
    pub fn keep_node(&mut self, row: &Arc<Row>, node: Arc<NodeRow>) {
        self.remember_permissions(&node.permissions);
        if let Some(s) = self.slot_of(row)
            && let Some(entry) = self.entry_mut(s)
            && (entry.served || !node.children.is_empty())
        {
            entry.node = Some(node);
        }
    }

    /// Permissions decoded before from this very stored text (one of the last few distinct
    /// texts of nodes handed to [`RowCache::keep_node`]), shared: the leaves of a directory
    /// usually store one text, and a leaf read once keeps no node, so without this each read
    /// of a leaf would parse the text again. Unlike a node, permissions depend on nothing but
    /// their text, so they stay valid whatever happens to the rows.
    pub fn permissions(&self, text: &[u8]) -> Option<NodePermissions> {
        self.known_permissions
            .iter()
            .flatten()
            .find(|p| p.text() == text)
            .cloned()
    }

    fn remember_permissions(&mut self, permissions: &NodePermissions) {
        if permissions.text().is_empty() || self.permissions(permissions.text()).is_some() {
            return;
        }
        if let Some(place) = self.known_permissions.get_mut(self.next_permissions) {
            *place = Some(permissions.clone());
        }
        self.next_permissions = (self.next_permissions + 1) % PERMISSIONS_KEPT;
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
        let at = self.find(key);
        let mine = at.and_then(|s| {
            let e = self.entry_mut(s)?;
            e.fetch
                .as_ref()
                .is_some_and(|f| f.fetcher == Some(fetcher))
                .then(|| (s, e.fetch.take()))
        });
        let (fetch, store) = match mine {
            Some((s, fetch)) => (fetch, Some(s)),
            None => (self.orphans.remove(&fetcher), None),
        };
        let Some(mut fetch) = fetch else {
            return Completion {
                answered: alloc::vec![fetcher],
                next_fetcher: None,
            };
        };
        match row {
            Some(row) => {
                if let Some(s) = store
                    && let Some(e) = self.entry_mut(s)
                {
                    e.row = Some(row);
                    e.node = None;
                    e.served = false;
                    e.updated = Some(now);
                    self.last = s;
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
                    match store.and_then(|s| self.entry_mut(s)) {
                        Some(e) => e.fetch = Some(fetch),
                        None => {
                            self.orphans.insert(n, fetch);
                        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    impl RowCache {
        /// The keys from the most to the least recently used, walking the list both ways.
        fn order(&self) -> Vec<Vec<u8>> {
            let mut keys = Vec::new();
            let mut at = self.newest;
            while let Some(slot) = self.slot(at) {
                keys.push(slot.key.key.to_vec());
                at = slot.older;
            }
            let mut back = Vec::new();
            let mut at = self.oldest;
            while let Some(slot) = self.slot(at) {
                back.push(slot.key.key.to_vec());
                at = slot.newer;
            }
            back.reverse();
            assert_eq!(keys, back, "the list reads the same both ways");
            assert_eq!(keys.len(), self.index.len());
            keys
        }
    }

    fn row(key: &[u8]) -> Arc<Row> {
        Arc::new(Row {
            key: key.to_vec(),
            cells: Vec::new(),
        })
    }

    /// The recency list against a plain model (a list of keys, most recent first, with their
    /// writes in flight): every call moves or inserts the key at the front, evicts from the
    /// back skipping keys with a write in flight, and drops invalidated keys, for a pseudo-random
    /// sequence of calls on a small cache.
    #[test]
    fn the_recency_list_is_an_lru() {
        let mut cache = RowCache::new(4, 1_000_000);
        let mut model: Vec<(Vec<u8>, u32)> = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let now = Timestamp(0);
        for step in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = vec![b'a' + (x % 7) as u8];
            let front = |model: &mut Vec<(Vec<u8>, u32)>, key: &[u8]| {
                let writes = match model.iter().position(|(k, _)| k == key) {
                    Some(i) => model.remove(i).1,
                    None => 0,
                };
                model.insert(0, (key.to_vec(), writes));
            };
            let evict = |model: &mut Vec<(Vec<u8>, u32)>| {
                let mut i = model.len();
                while model.len() > 4 && i > 0 {
                    i -= 1;
                    if model[i].1 == 0 {
                        model.remove(i);
                    }
                }
            };
            match (x >> 8) % 4 {
                0 | 1 => {
                    let fresh = !model.iter().any(|(k, _)| *k == key);
                    if let Lookup::Fetch(id) = cache.lookup(&key, now) {
                        cache.complete(&key, id, Some(row(&key)), now);
                    }
                    front(&mut model, &key);
                    if fresh {
                        evict(&mut model);
                    }
                }
                2 => {
                    cache.begin_write(&key);
                    if let Some(i) = model.iter().position(|(k, w)| *k == key && *w == 0) {
                        model.remove(i);
                    }
                    front(&mut model, &key);
                    model[0].1 += 1;
                    evict(&mut model);
                }
                _ => {
                    cache.end_write(&key);
                    if let Some(i) = model.iter().position(|(k, _)| *k == key) {
                        model[i].1 = model[i].1.saturating_sub(1);
                        if model[i].1 == 0 {
                            model.remove(i);
                        }
                    }
                }
            }
            let want: Vec<Vec<u8>> = model.iter().map(|(k, _)| k.clone()).collect();
            assert_eq!(cache.order(), want, "step {step}");
        }
        assert!(cache.slots.len() <= 7, "evicted slots are reused");
    }
    fn leaf(name: &str, perms: &str) -> (Arc<Row>, Arc<NodeRow>) {
        let row = Arc::new(Row {
            key: rowkit_codec::mounttable::row_key(name),
            cells: vec![rowkit_codec::model::Cell {
                family: "m".into(),
                qualifier: b"p".to_vec(),
                timestamp: Timestamp(1),
                value: perms.as_bytes().to_vec(),
                labels: Vec::new(),
            }],
        });
        let node = Arc::new(rowkit_codec::mounttable::decode_node(&row, 0).unwrap());
        (row, node)
    }

    /// The permissions of nodes handed to `keep_node` are found by their text, kept or not,
    /// the last `PERMISSIONS_KEPT` distinct texts.
    #[test]
    fn remembers_the_last_permission_texts() {
        let mut cache = RowCache::new(4, 1_000_000);
        let text =
            |i: usize| alloc::format!("{{\"Admin\":{{\"In\":[\"user{i}\"],\"NotIn\":null}}}}");
        // A leaf read around the cache: its node is not kept, its permissions are.
        let (row, node) = leaf("a", &text(0));
        cache.keep_node(&row, node.clone());
        assert_eq!(cache.node(&row, Timestamp(0)), None);
        let found = cache.permissions(text(0).as_bytes()).unwrap();
        assert_eq!(found, node.permissions);
        assert_eq!(found.text(), text(0).as_bytes());
        assert_eq!(cache.permissions(text(1).as_bytes()), None);
        for i in 1..PERMISSIONS_KEPT {
            let (row, node) = leaf("a", &text(i));
            cache.keep_node(&row, node);
            // The same text again takes no second place.
            let (row, node) = leaf("b", &text(i));
            cache.keep_node(&row, node);
        }
        for i in 0..PERMISSIONS_KEPT {
            assert!(cache.permissions(text(i).as_bytes()).is_some(), "{i}");
        }
        let (row, node) = leaf("a", &text(PERMISSIONS_KEPT));
        cache.keep_node(&row, node);
        assert_eq!(cache.permissions(text(0).as_bytes()), None);
        assert!(cache.permissions(text(1).as_bytes()).is_some());
    }
}
