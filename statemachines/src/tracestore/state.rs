//! `TraceStoreState` (`spec/tracestore.md` 17.1): what one open trace store keeps between
//! operations — the table and its layout, the OPS cache, and in the digest-id layout the
//! digest cache and the id pool; for a migration-aware process (`docs/migration.md` §2.3, §9)
//! also the table's migration marker as last read and the state of the other table of the
//! migration it names.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::migration::MARKER_TTL_US;
use rowkit_codec::model::Timestamp;
use rowkit_codec::tracestore::CodecError;
use rowkit_codec::tracestore::migration::TraceMigrationMarker;
use rowkit_codec::tracestore::{Layout, OrderedParamSet};

use super::TraceStoreError;

/// A tile's OPS as last read or written: the compare-and-swap token and its cell timestamp.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedOps {
    /// The OrderedParamSet (shared: a Put reads it without copying every trace's params).
    pub ops: Arc<OrderedParamSet>,
    /// The `O:H` value.
    pub hash: String,
    /// The timestamp of the `O:H` cell.
    pub ts_hash: Timestamp,
}

/// The digest map as far as this instance knows it: digest <-> id, `"" <-> 0` implicit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DigestCache {
    by_digest: BTreeMap<String, u64>,
    by_id: BTreeMap<u64, String>,
}

impl DigestCache {
    /// The id of a digest (`""` -> 0).
    pub fn id(&self, digest: &str) -> Option<u64> {
        if digest.is_empty() {
            return Some(0);
        }
        self.by_digest.get(digest).copied()
    }

    /// The digest of an id (0 -> `""`).
    pub fn digest(&self, id: u64) -> Option<&str> {
        if id == 0 {
            return Some("");
        }
        self.by_id.get(&id).map(String::as_str)
    }

    /// Number of stored entries (without `"" <-> 0`).
    pub fn len(&self) -> usize {
        self.by_digest.len()
    }

    /// Whether only `"" <-> 0` is known.
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }

    /// Merges entries; a digest mapped to another id or an id mapped to another digest is
    /// `corrupt digest map`, and then nothing is merged.
    pub fn merge(&mut self, entries: &[(String, u64)]) -> Result<(), TraceStoreError> {
        let mut staged: BTreeMap<&str, u64> = BTreeMap::new();
        let mut staged_ids: BTreeMap<u64, &str> = BTreeMap::new();
        for (digest, id) in entries {
            let clash_digest = self
                .by_digest
                .get(digest)
                .or_else(|| staged.get(digest.as_str()))
                .is_some_and(|&known| known != *id);
            let clash_id = self
                .by_id
                .get(id)
                .map(String::as_str)
                .or_else(|| staged_ids.get(id).copied())
                .is_some_and(|known| known != digest);
            if clash_digest || clash_id || *id == 0 || digest.is_empty() {
                return Err(TraceStoreError::Codec(CodecError::CorruptDigestMap));
            }
            staged.insert(digest, *id);
            staged_ids.insert(*id, digest);
        }
        for (digest, id) in entries {
            self.by_digest.insert(digest.clone(), *id);
            self.by_id.insert(*id, digest.clone());
        }
        Ok(())
    }

    /// Every entry, by digest.
    pub fn entries(&self) -> impl Iterator<Item = (&str, u64)> {
        self.by_digest.iter().map(|(d, &i)| (d.as_str(), i))
    }
}

/// How a trace store process treats live layout migrations (`docs/migration.md` §2.3, §6.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceStoreConfig {
    /// Whether this process is *aware* of migrations (§9): its operations read the table's
    /// marker `:rk:m:0000000000:` (kept at most `marker_ttl_us`), its reads go to the truth's
    /// table, its Puts go to the truth's table and are mirrored into the other one, and pause
    /// in a fence ([`Aware`](super::Aware)). Off (Gold's own behaviour: the configured table,
    /// no marker) for a bare state; the client facade turns it on.
    pub migration_aware: bool,
    /// How long an aware process keeps the marker (`marker_ttl`, §2.3; default
    /// [`MARKER_TTL_US`], 5 s).
    pub marker_ttl_us: i64,
}

impl Default for TraceStoreConfig {
    fn default() -> TraceStoreConfig {
        TraceStoreConfig {
            migration_aware: false,
            marker_ttl_us: MARKER_TTL_US,
        }
    }
}

/// One open trace store (`spec/tracestore.md` 17.1). A machine borrows it exclusively while
/// it runs; concurrent work uses several states.
#[derive(Clone, Debug)]
pub struct TraceStoreState {
    /// How the process treats migrations (unaware by default).
    pub config: TraceStoreConfig,
    /// An aware process's marker of this table as read, and when (`None`: to be read; a fence
    /// is never kept, §2.3).
    pub(crate) marker: Option<(Timestamp, Option<TraceMigrationMarker>)>,
    /// The other table of the migration the marker names (its OPS cache, digest map and id
    /// pool are its own, §5.1), once an aware operation needed it.
    pub(crate) other: Option<alloc::boxed::Box<TraceStoreState>>,
    pub(crate) table: String,
    pub(crate) app_profile_id: String,
    pub(crate) layout: Layout,
    pub(crate) ops_cache: BTreeMap<Vec<u8>, CachedOps>,
    pub(crate) digests: DigestCache,
    pub(crate) pool: VecDeque<u64>,
    /// A bug the machines running on this state plant (simulator self-test; only with the
    /// `_planted_bugs` feature).
    #[cfg(feature = "_planted_bugs")]
    pub(crate) planted: Option<crate::planted::PlantedBug>,
}

impl TraceStoreState {
    /// A fresh state for `table` in `layout` (empty caches, empty pool).
    pub fn new(table: impl Into<String>, layout: Layout) -> TraceStoreState {
        TraceStoreState {
            config: TraceStoreConfig::default(),
            marker: None,
            other: None,
            table: table.into(),
            app_profile_id: String::new(),
            layout,
            ops_cache: BTreeMap::new(),
            digests: DigestCache::default(),
            pool: VecDeque::new(),
            #[cfg(feature = "_planted_bugs")]
            planted: None,
        }
    }

    /// Plants `bug` in every machine that runs on this state (the fault simulator's
    /// self-test; not public API, only with the `_planted_bugs` feature).
    #[cfg(feature = "_planted_bugs")]
    #[doc(hidden)]
    pub fn set_planted_bug(&mut self, bug: Option<crate::planted::PlantedBug>) {
        self.planted = bug;
    }

    /// Takes `n` ids from the front of the pool.
    pub(crate) fn take_pooled(&mut self, n: usize) -> Vec<u64> {
        #[cfg(feature = "_planted_bugs")]
        if self.planted == Some(crate::planted::PlantedBug::TracestoreReusesPooledIds) {
            return self.pool.iter().take(n).copied().collect();
        }
        self.pool.drain(..n).collect()
    }

    /// The marker an aware operation starting at `now` acts on without reading it again: the
    /// one read less than `marker_ttl` ago, with when it was read (§2.3).
    pub(crate) fn cached_marker(
        &self,
        now: Timestamp,
    ) -> Option<(Timestamp, Option<&TraceMigrationMarker>)> {
        let (at, marker) = self.marker.as_ref()?;
        (now < at.saturating_add_micros(self.config.marker_ttl_us))
            .then_some((*at, marker.as_ref()))
    }

    /// Keeps the marker read at `read_at`; a fence is not kept, so that every operation reads
    /// it again.
    pub(crate) fn cache_marker(
        &mut self,
        read_at: Timestamp,
        marker: Option<TraceMigrationMarker>,
    ) {
        let fence = marker.as_ref().is_some_and(|m| m.state.is_fence());
        self.marker = (!fence).then_some((read_at, marker));
    }

    /// The state of `table` in `layout`, the other table of a migration: the one kept, or a
    /// fresh one (same app profile, unaware: the aware operation routes its flows itself).
    pub(crate) fn other_table(&mut self, table: &str, layout: Layout) -> &mut TraceStoreState {
        let kept = self
            .other
            .as_ref()
            .is_some_and(|o| o.table == table && o.layout == layout);
        if !kept {
            let mut other = TraceStoreState::new(table, layout);
            other.app_profile_id = self.app_profile_id.clone();
            self.other = Some(alloc::boxed::Box::new(other));
        }
        self.other
            .get_or_insert_with(|| alloc::boxed::Box::new(TraceStoreState::new(table, layout)))
    }

    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The OPS cache entry of an OPS row.
    pub fn cached_ops(&self, ops_row: &[u8]) -> Option<&CachedOps> {
        self.ops_cache.get(ops_row)
    }

    /// The digest cache (digest-id layout).
    pub fn digest_cache(&self) -> &DigestCache {
        &self.digests
    }

    /// The digest cache, to prime it with entries known to be stored.
    pub fn digest_cache_mut(&mut self) -> &mut DigestCache {
        &mut self.digests
    }

    /// Resets the digest cache to `{"" <-> 0}` (bounds memory between operations).
    pub fn clear_digest_cache(&mut self) {
        self.digests = DigestCache::default();
    }

    /// The reserved, unused ids, front first.
    pub fn pool(&self) -> impl Iterator<Item = u64> + '_ {
        self.pool.iter().copied()
    }

    /// `ReturnDigestIds`: appends never-written ids to the back of the pool.
    pub fn return_digest_ids(&mut self, ids: &[u64]) {
        self.pool.extend(ids.iter().copied());
    }
}
