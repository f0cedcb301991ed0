//! Decoded nodes, shared instead of decoded again: how §9 `getNode` reuses the node decoded
//! from a row the hot-row cache (§15) hands out again.
//!
//! A cache hit answers a node read with the row the cache keeps ([`Response::Rows`] carries it
//! as an `Arc`, no copy). Decoding that row again on every walk would rebuild the same node,
//! with one allocation per child reference: for a directory of 1,000 children, most of a
//! resolve. So a machine asks the cache first, through [`Nodes`], for the node decoded from
//! that very row, and hands the cache what it decodes ([`RowCache::node`],
//! [`RowCache::keep_node`]): the node lives beside its row, found by the row's identity, and
//! goes with it. It can never answer for other bytes (a row is never changed in place; a write
//! makes the cache drop it) nor for another time (it is checked against its servers'
//! deadlines).
//!
//! A row decoded anyway (a leaf read once keeps no node) still shares its permissions: those
//! decoded before from the same stored text ([`SharedNodes::permissions`]; the leaves of a
//! directory usually store one text), compared byte for byte before any parse.
//!
//! Behaviour-neutral: what comes back equals decoding the row again, so a machine's requests
//! and results are the same with or without it. The facade's cache is shared by all its calls
//! behind its own lock, so machines reach it through the [`SharedNodes`] trait (this crate has
//! no locks).
//!
//! [`Response::Rows`]: crate::Response::Rows
//! [`RowCache::node`]: super::RowCache::node
//! [`RowCache::keep_node`]: super::RowCache::keep_node

use alloc::sync::Arc;

use rowkit_codec::model::Row;
use rowkit_codec::mounttable::{NodePermissions, NodeRow};

use crate::Timestamp;

/// Where machines find the nodes decoded from the rows a cache hands out: the facade
/// implements it over its [`RowCache`](super::RowCache) ([`RowCache::node`] and
/// [`RowCache::keep_node`] behind the cache's lock).
///
/// [`RowCache::node`]: super::RowCache::node
/// [`RowCache::keep_node`]: super::RowCache::keep_node
pub trait SharedNodes: Send + Sync {
    /// The node decoded from this very `row`, if kept and decoded the same way at `now`.
    fn get(&self, row: &Arc<Row>, now: Timestamp) -> Option<Arc<NodeRow>>;
    /// Keeps `node`, decoded from `row`, if `row` is one the cache may hand out again and the
    /// cache finds the node worth keeping ([`RowCache::keep_node`]).
    ///
    /// [`RowCache::keep_node`]: super::RowCache::keep_node
    fn keep(&self, row: &Arc<Row>, node: &Arc<NodeRow>);
    /// Permissions decoded before from this very stored `m:p` text, if remembered
    /// ([`RowCache::permissions`]), so that a node read that is not a kept one still shares
    /// them; the default remembers none.
    ///
    /// [`RowCache::permissions`]: super::RowCache::permissions
    fn permissions(&self, text: &[u8]) -> Option<NodePermissions> {
        let _ = text;
        None
    }
}

/// The [`SharedNodes`] a machine uses, if any: a field of [`MtCtx`](super::MtCtx). Contexts
/// compare equal when they share the same one (or none).
#[derive(Clone, Default)]
pub struct Nodes(Option<Arc<dyn SharedNodes>>);

impl Nodes {
    /// Machines given this context look nodes up in `shared` and keep what they decode there.
    pub fn shared(shared: Arc<dyn SharedNodes>) -> Nodes {
        Nodes(Some(shared))
    }

    /// None: every node read is decoded.
    pub fn none() -> Nodes {
        Nodes(None)
    }

    /// The node of `row` at `now`: the one kept for that row, or decoded with `decode` (and
    /// then kept).
    pub(crate) fn node<E>(
        &self,
        row: &Arc<Row>,
        now: Timestamp,
        decode: impl FnOnce(&Row) -> Result<NodeRow, E>,
    ) -> Result<Arc<NodeRow>, E> {
        if let Some(node) = self.get(row, now) {
            return Ok(node);
        }
        let node = Arc::new(decode(row)?);
        self.keep(row, &node);
        Ok(node)
    }
}

/// A `Nodes` is itself a [`SharedNodes`] (none: nothing found, nothing kept), so a wrapper can
/// observe what a facade's machines are handed.
impl SharedNodes for Nodes {
    fn get(&self, row: &Arc<Row>, now: Timestamp) -> Option<Arc<NodeRow>> {
        self.0.as_ref()?.get(row, now)
    }

    fn keep(&self, row: &Arc<Row>, node: &Arc<NodeRow>) {
        if let Some(shared) = &self.0 {
            shared.keep(row, node);
        }
    }

    fn permissions(&self, text: &[u8]) -> Option<NodePermissions> {
        self.0.as_ref()?.permissions(text)
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
