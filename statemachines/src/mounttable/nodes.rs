//! Decoded nodes, shared instead of decoded again: the memo behind §9 `getNode` when the
//! hot-row cache (§15) hands a walk the same shared row again.
//!
//! A cache hit answers a node read with the row the cache keeps ([`Response::Rows`] carries it
//! as an `Arc`, no copy). Decoding that row again on every walk would rebuild the same node,
//! with one allocation per child reference: for a directory of 1,000 children, most of a
//! resolve. So the machines look the row up here first, by identity: an entry is found only
//! for the very allocation it was decoded from (the entry holds a [`Weak`] to it, so the
//! address cannot be reused by another row while the entry lives), and a row is never changed
//! in place (a write makes the cache drop it; the next read brings a new allocation). An
//! entry can therefore never answer for other bytes. It is also checked against `now`: a
//! node's decoding depends on time only through which servers have expired, so the entry
//! serves exactly the times at which every server is on the same side of its deadline.
//!
//! The memo is behaviour-neutral (what it answers equals decoding the row again), so a
//! machine's requests and results are the same with or without it. Machines reach it through
//! [`MtCtx::nodes`](super::MtCtx::nodes): the facade owns one per instance, shared by all its
//! calls behind its own lock ([`SharedNodes`]; this crate has no locks).
//!
//! [`Response::Rows`]: crate::Response::Rows

use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};

use rowkit_codec::model::Row;
use rowkit_codec::mounttable::{NodeRow, is_expired};

use crate::Timestamp;

/// A memo of decoded nodes shared by the machines of one facade (see the module doc). The
/// facade implements it over a [`NodeMemo`] behind a lock.
pub trait SharedNodes: Send + Sync {
    /// The node decoded from this very `row`, if kept and decoded the same way at `now`.
    fn get(&self, row: &Arc<Row>, now: Timestamp) -> Option<Arc<NodeRow>>;
    /// Keeps `node`, decoded from `row`.
    fn keep(&self, row: &Arc<Row>, node: &Arc<NodeRow>);
}

/// The [`SharedNodes`] a machine uses, if any: a field of [`MtCtx`](super::MtCtx). Contexts
/// compare equal when they share the same memo (or none).
#[derive(Clone, Default)]
pub struct Nodes(Option<Arc<dyn SharedNodes>>);

impl Nodes {
    /// Machines given this context look nodes up in `memo` and keep what they decode there.
    pub fn shared(memo: Arc<dyn SharedNodes>) -> Nodes {
        Nodes(Some(memo))
    }

    /// No memo: every node read is decoded.
    pub fn none() -> Nodes {
        Nodes(None)
    }

    /// The node of `row` at `now`, from the memo, or decoded with `decode` (and then kept when
    /// `row` is shared, i.e. someone such as the hot-row cache may hand it out again).
    pub(crate) fn node<E>(
        &self,
        row: &Arc<Row>,
        now: Timestamp,
        decode: impl FnOnce(&Row) -> Result<NodeRow, E>,
    ) -> Result<Arc<NodeRow>, E> {
        let Some(memo) = &self.0 else {
            return decode(row).map(Arc::new);
        };
        if let Some(node) = memo.get(row, now) {
            return Ok(node);
        }
        let node = Arc::new(decode(row)?);
        memo.keep(row, &node);
        Ok(node)
    }
}

impl core::fmt::Debug for Nodes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Nodes(shared)"
        } else {
            "Nodes(none)"
        })
    }
}

impl PartialEq for Nodes {
    fn eq(&self, other: &Nodes) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => core::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b)),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

impl Eq for Nodes {}

#[derive(Debug)]
struct Entry {
    /// The row the node was decoded from: its allocation stays reserved while the entry lives.
    row: Weak<Row>,
    node: Arc<NodeRow>,
    /// The entry's place in the LRU order.
    used: u64,
}

/// The pure memo: at most `capacity` nodes, least recently used evicted first, keyed by the
/// identity of the row each was decoded from (see the module doc). No lock, no clock.
#[derive(Debug)]
pub struct NodeMemo {
    capacity: usize,
    /// Row address -> entry.
    entries: BTreeMap<usize, Entry>,
    /// LRU order: use tick -> row address.
    lru: BTreeMap<u64, usize>,
    clock: u64,
}

/// The key of a row: its address, which its entry's [`Weak`] keeps from being reused.
fn address(row: &Arc<Row>) -> usize {
    Arc::as_ptr(row).addr()
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

impl NodeMemo {
    /// A memo of at most `capacity` nodes (at least 1).
    pub fn new(capacity: usize) -> NodeMemo {
        NodeMemo {
            capacity: capacity.max(1),
            entries: BTreeMap::new(),
            lru: BTreeMap::new(),
            clock: 0,
        }
    }

    /// Number of nodes kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no node is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn touch(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The node decoded from this very `row`, if kept and decoded the same way at `now`
    /// (marks it most recently used).
    pub fn get(&mut self, row: &Arc<Row>, now: Timestamp) -> Option<Arc<NodeRow>> {
        let key = address(row);
        let used = self.touch();
        let entry = self.entries.get_mut(&key)?;
        if !core::ptr::eq(entry.row.as_ptr(), Arc::as_ptr(row)) || !same_at(&entry.node, now) {
            return None;
        }
        self.lru.remove(&entry.used);
        entry.used = used;
        self.lru.insert(used, key);
        Some(entry.node.clone())
    }

    /// Keeps `node`, decoded from `row`, unless nobody else holds `row` (then no one can hand
    /// it out again, and the entry would only take a place). Evicts the least recently used
    /// entries beyond the capacity.
    pub fn keep(&mut self, row: &Arc<Row>, node: &Arc<NodeRow>) {
        if Arc::strong_count(row) < 2 {
            return;
        }
        let key = address(row);
        let used = self.touch();
        let entry = Entry {
            row: Arc::downgrade(row),
            node: node.clone(),
            used,
        };
        if let Some(old) = self.entries.insert(key, entry) {
            self.lru.remove(&old.used);
        }
        self.lru.insert(used, key);
        while self.entries.len() > self.capacity {
            let Some((_, victim)) = self.lru.pop_first() else {
                break;
            };
            self.entries.remove(&victim);
        }
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec;
    use alloc::vec::Vec;

    use rowkit_codec::model::{Cell, Timestamp as Ts};
    use rowkit_codec::mounttable::{self as codec, FAMILY_META, FAMILY_SERVERS, QUAL_ID};

    use super::*;

    fn cell(family: &str, qualifier: &[u8], ts: i64, value: &[u8]) -> Cell {
        Cell {
            family: family.into(),
            qualifier: qualifier.to_vec(),
            timestamp: Ts(ts),
            value: value.to_vec(),
            labels: vec![],
        }
    }

    /// A node row with one server whose deadline is `deadline`.
    fn row(deadline: i64) -> Arc<Row> {
        Arc::new(Row {
            key: codec::row_key("a"),
            cells: vec![
                cell(FAMILY_META, QUAL_ID, 1000, b"12345678"),
                cell(
                    FAMILY_SERVERS,
                    b"/s:1",
                    deadline,
                    &codec::encode_flags(codec::MountFlags(0)),
                ),
            ],
        })
    }

    fn decode(row: &Row, now: i64) -> Arc<NodeRow> {
        Arc::new(codec::decode_node(row, now).unwrap())
    }

    #[test]
    fn a_kept_node_answers_only_for_its_own_row() {
        let mut memo = NodeMemo::new(4);
        let a = row(5_000);
        let cache = a.clone(); // someone else holds the row, as the hot-row cache does
        let node = decode(&a, 1_000);
        memo.keep(&a, &node);
        let again = memo.get(&a, Ts(2_000)).unwrap();
        assert!(
            Arc::ptr_eq(&again, &node),
            "the same decoded node, not a copy"
        );
        // Equal bytes in another allocation (the row read again after a write) are not it.
        let b = Arc::new((*a).clone());
        assert!(memo.get(&b, Ts(2_000)).is_none());
        drop(cache);
    }

    #[test]
    fn an_unshared_row_is_not_kept() {
        let mut memo = NodeMemo::new(4);
        let a = row(5_000);
        memo.keep(&a, &decode(&a, 1_000));
        assert!(memo.is_empty());
    }

    #[test]
    fn a_node_is_reused_only_while_its_servers_keep_their_side() {
        let mut memo = NodeMemo::new(4);
        let a = row(5_000);
        let _cache = a.clone();
        memo.keep(&a, &decode(&a, 1_000));
        // Up to the deadline the server is live (`is_expired` is `deadline < now`).
        assert!(memo.get(&a, Ts(5_000)).is_some());
        assert_eq!(*memo.get(&a, Ts(5_000)).unwrap(), *decode(&a, 5_000));
        assert!(
            memo.get(&a, Ts(5_001)).is_none(),
            "expired since: decode again"
        );
        // Decoded after the deadline, it serves later times but not earlier ones.
        memo.keep(&a, &decode(&a, 6_000));
        assert_eq!(*memo.get(&a, Ts(9_000)).unwrap(), *decode(&a, 9_000));
        assert!(memo.get(&a, Ts(4_000)).is_none());
    }

    #[test]
    fn least_recently_used_goes_first() {
        let mut memo = NodeMemo::new(2);
        let rows: Vec<Arc<Row>> = (0..3).map(|_| row(5_000)).collect();
        let _held: Vec<Arc<Row>> = rows.clone();
        memo.keep(&rows[0], &decode(&rows[0], 0));
        memo.keep(&rows[1], &decode(&rows[1], 0));
        assert!(memo.get(&rows[0], Ts(0)).is_some());
        memo.keep(&rows[2], &decode(&rows[2], 0));
        assert_eq!(memo.len(), 2);
        assert!(
            memo.get(&rows[1], Ts(0)).is_none(),
            "the least recently used"
        );
        assert!(memo.get(&rows[0], Ts(0)).is_some());
        assert!(memo.get(&rows[2], Ts(0)).is_some());
    }
}
