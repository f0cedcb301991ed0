//! The pure parts of `SyncKey`, the one sync step of the object-metadata migration
//! (`docs/migration.md` §4.1–§4.3):
//!
//! - **Key mapping** (§4.1): [`map_key`] gives the Arsenal key of a row in the `to` layout from
//!   its key in the `from` layout, or the [`KeyFinding`] that blocks the migration of that key;
//!   [`sync_pair`] gives both row keys of a key. Keys are read with
//!   [`decode_object_key`] and built with [`master_key`] / [`version_key`]: no layout is
//!   encoded here.
//! - **The sync stamp** (§4.2): column `f:`[`SYNC_QUALIFIER`], timestamp 0, value = the row's
//!   own `f:hash` ‖ the [`StampKind`] ‖ the nonce of the sync that wrote it ([`stamp_value`];
//!   the hash alone from before §12.73 still reads as a stamp). Every object write removes it
//!   (`REPLACE` starts with `DeleteFromFamily("f")`), so a stamped row has not been written by
//!   the application since the migration last synced its key — unless the stamp is a late
//!   confirmation, which the pair shows ([`classify`]). The named predicates and mutations: [`stamped`]
//!   (`STAMPED`), [`same`] / [`if_same`] (`SAME(r)`, `SAME(absent)`), [`copy`] (`COPY(r)`),
//!   [`stamp`] (`STAMP(r)`).
//! - **Classification** (§4.3 step 2): [`classify`] maps the pair as read ([`Side`] of the
//!   source and of the target) and the [`Truth`] to a [`SyncAction`]; [`sync_writes`] lists the
//!   conditional writes of steps 3 and 4 that carry it out.
//!
//! ```
//! use rowkit_codec::objmeta::keys::VFormat;
//! use rowkit_codec::objmeta::migration::Truth;
//! use rowkit_codec::objmeta::migration::sync::{
//!     KeyFinding, PresentRow, Side, Stamp, SyncAction, classify, map_key,
//! };
//!
//! assert_eq!(map_key("b", "k\0v1", VFormat::V0, VFormat::V1), Ok("\x7fVk\0v1".to_string()));
//! assert!(matches!(
//!     map_key("b", "\x7fMk", VFormat::V0, VFormat::V1),
//!     Err(KeyFinding::KeyCollision { .. })
//! ));
//!
//! let row = |h, stamp| Side::Present(PresentRow { hash: vec![h; 32], stamp, cells: vec![] });
//! // The application wrote the source since the last sync (unstamped, another hash): before
//! // the switch it is copied; after it, it is a straggler's write, adopted.
//! let (s, t) = (row(1, Stamp::Unstamped), row(2, Stamp::Stamped(None)));
//! assert_eq!(classify(&s, &t, Truth::From), SyncAction::CopyToTarget);
//! assert_eq!(classify(&s, &t, Truth::To), SyncAction::StragglerCopyToTarget);
//! ```

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::model::{Cell, KeyBound, Mutation, Row, RowFilter, Timestamp, limits};
use crate::objmeta::cells::{DOC_FAMILY, FLAG_FAMILY, filters};
use crate::objmeta::keys::{
    KeyKind, SEPARATOR, VFormat, decode_object_key, master_key, row_key, version_key,
};
use crate::objmeta::migration::Truth;

/// The qualifier of the sync stamp `f:rowkitSync` (§4.2): the one cell the migration adds to
/// object rows.
pub const SYNC_QUALIFIER: &str = "rowkitSync";

// ---------------------------------------------------------------------------------------------
// §4.1 Key mapping
// ---------------------------------------------------------------------------------------------

/// Why a key cannot be migrated (§4.1, "Found during a pass"): the run stops in its state and
/// resumes after the operator's fix. [`KeyFinding::NotInFromLayout`] is not a finding of the
/// doc but a caller's mistake: the key given is not a row of the `from` layout at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyFinding {
    /// An object key that starts with `\x7fM`, `\x7fV` or `\x7fR`: v0 → v1, its v0 row is
    /// read as another key's v1 row (§4.1). Also v1 → v0, which §4.1 calls impossible: the
    /// layouts share the collection, so the v0 row of object key `\x7fMk` (from the v1 row
    /// `\x7fM\x7fMk`) **is** the v1 master row of `k`, another key's `from` row.
    #[error(
        "key_collision: object key of {key:?} starts with a v1 prefix (\\x7fM, \\x7fV or \\x7fR)"
    )]
    KeyCollision {
        /// The `from` key.
        key: String,
    },
    /// v0 → v1: the `to` row key is 2 bytes longer than the `from` one and over Bigtable's
    /// 4096-byte limit.
    #[error(
        "key_too_long: key {key:?} would have a {row_key_bytes}-byte row key in the new \
         layout, over the 4096-byte limit"
    )]
    KeyTooLong {
        /// The `from` key.
        key: String,
        /// The length of the `to` row key it would have.
        row_key_bytes: usize,
    },
    /// An object key containing `\0` cannot be told from a version key in v0: a v1 master
    /// whose object key holds a NUL, or a key (either layout) with a NUL after its version
    /// separator (version ids never hold one, so the object key does).
    #[error("nul_in_object_key: key {key:?} has an object key containing \\0")]
    NulInObjectKey {
        /// The `from` key.
        key: String,
    },
    /// The key is not an object row of the `from` layout: a v1 `from` key without the
    /// `\x7fM` / `\x7fV` prefix, or a v1 replay key (never written).
    #[error("not_in_from_layout: key {key:?} is not an object row of the {} layout", from.as_str())]
    NotInFromLayout {
        /// The key given.
        key: String,
        /// The `from` layout.
        from: VFormat,
    },
}

impl KeyFinding {
    /// The finding's stable id (the doc's name: `key_collision`, `key_too_long`,
    /// `nul_in_object_key`; `not_in_from_layout` for a key that is no `from` row).
    pub fn id(&self) -> &'static str {
        match self {
            KeyFinding::KeyCollision { .. } => "key_collision",
            KeyFinding::KeyTooLong { .. } => "key_too_long",
            KeyFinding::NulInObjectKey { .. } => "nul_in_object_key",
            KeyFinding::NotInFromLayout { .. } => "not_in_from_layout",
        }
    }
}

/// The Arsenal key in the `to` layout of the row whose key in the `from` layout is `key`
/// (§4.1), in collection `collection` (for the row-key length limit). A master maps to a
/// master, a version to the version of the same object key and id. With `from == to` the key
/// is checked the same way and comes back unchanged.
///
/// Which finding applies in which direction:
/// - `key_collision`: v0 → v1, a key starting with a v1 prefix; v1 → v0, an object key starting
///   with one (its v0 row would be a v1 row of another key; §4.1 overlooks this direction).
/// - `nul_in_object_key`: both directions. v1 → v0: a master whose object key holds `\0`, or
///   a version with a second `\0`. v0 → v1: a key with two or more `\0` (a v0 key with one is a
///   version by the layout's definition; a master whose object key holds one `\0` looks exactly
///   like a version and cannot be found from its key).
/// - `key_too_long`: `to` row key over 4096 bytes (only v0 → v1 grows a key).
pub fn map_key(
    collection: &str,
    key: &str,
    from: VFormat,
    to: VFormat,
) -> Result<String, KeyFinding> {
    let parts = decode_object_key(key);
    match (from, parts.format, parts.kind) {
        (VFormat::V0, VFormat::V1, _) => {
            return Err(KeyFinding::KeyCollision { key: key.into() });
        }
        (VFormat::V1, VFormat::V0, _) | (VFormat::V1, _, KeyKind::Replay) => {
            return Err(KeyFinding::NotInFromLayout {
                key: key.into(),
                from,
            });
        }
        _ => {}
    }
    // v1 → v0: an object key that itself starts with a prefix has a v0 row that is a v1 row of
    // the same collection (`\x7fM\x7fMk` → `\x7fMk`, the v1 master of `k`): the same
    // collision seen from the other side (the doc calls it impossible; it is not, see
    // `KeyFinding::KeyCollision`).
    if to == VFormat::V0 && decode_object_key(parts.object_key).format == VFormat::V1 {
        return Err(KeyFinding::KeyCollision { key: key.into() });
    }
    let nul_in = |s: &str| s.contains(SEPARATOR);
    if nul_in(parts.object_key) || parts.version_id.is_some_and(nul_in) {
        return Err(KeyFinding::NulInObjectKey { key: key.into() });
    }
    let mapped = match parts.version_id {
        Some(version_id) => version_key(to, parts.object_key, version_id),
        None => master_key(to, parts.object_key),
    };
    let row_key_bytes = collection.len() + 1 + mapped.len();
    if row_key_bytes > limits::MAX_ROW_KEY_BYTES {
        return Err(KeyFinding::KeyTooLong {
            key: key.into(),
            row_key_bytes,
        });
    }
    Ok(mapped)
}

/// The two rows of one Arsenal key: `S(a)` in the `from` layout, `T(a)` in the `to` layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncPair {
    /// The key in the `from` layout.
    pub source_key: String,
    /// The key in the `to` layout.
    pub target_key: String,
    /// `S(a)`: the row key of [`SyncPair::source_key`].
    pub source_row: Vec<u8>,
    /// `T(a)`: the row key of [`SyncPair::target_key`].
    pub target_row: Vec<u8>,
}

impl SyncPair {
    /// The row key of one row of the pair.
    pub fn row_key(&self, row: PairRow) -> &[u8] {
        match row {
            PairRow::Source => &self.source_row,
            PairRow::Target => &self.target_row,
        }
    }
}

/// Both row keys of the `from` key `key` in `collection` ([`map_key`], then
/// [`row_key`]).
pub fn sync_pair(
    collection: &str,
    key: &str,
    from: VFormat,
    to: VFormat,
) -> Result<SyncPair, KeyFinding> {
    let target_key = map_key(collection, key, from, to)?;
    Ok(SyncPair {
        source_row: row_key(collection, key),
        target_row: row_key(collection, &target_key),
        source_key: key.into(),
        target_key,
    })
}

// ---------------------------------------------------------------------------------------------
// §4.2 The stamp, the rows as read, the named predicates and mutations
// ---------------------------------------------------------------------------------------------

/// How the sync that wrote a stamp wrote it (§4.2): the stamp's role in that sync's pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StampKind {
    /// Written by `COPY(x)` onto the row the sync copied to (§4.3 step 3): the row holds the
    /// bytes the sync read from the other row, and has not been written since.
    Copy,
    /// Written by `STAMP(x)` on a row the sync confirmed as it read it (§4.3 step 4, or the
    /// stamp of an equal pair's unstamped side). Step 4 is conditional on its own row only,
    /// so a confirmation can land late, after the row changed and changed back (§12.9): it
    /// vouches for the row's bytes, not for the pair.
    Confirm,
}

impl StampKind {
    /// The byte that stands for the kind in the stamp's value.
    fn byte(self) -> u8 {
        match self {
            StampKind::Copy => b'c',
            StampKind::Confirm => b'k',
        }
    }

    fn from_byte(byte: u8) -> Option<StampKind> {
        match byte {
            b'c' => Some(StampKind::Copy),
            b'k' => Some(StampKind::Confirm),
            _ => None,
        }
    }
}

/// The sync a stamp names (§4.2): the round of `SyncKey` that wrote it and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SyncMark {
    /// The round's nonce, drawn from the operation's seed stream: both rows a round writes
    /// carry the same one.
    pub nonce: u64,
    /// Which of the round's writes this stamp is.
    pub kind: StampKind,
}

/// The length of what a stamp adds after the row's `f:hash`: the kind byte and the 8-byte
/// big-endian nonce.
const MARK_BYTES: usize = 9;

/// The value of a stamp on a row whose `f:hash` is `hash`: `hash` alone (`mark` `None`: the
/// stamps written before §12.73, still read) or `hash ‖ kind ‖ nonce` (§4.2).
pub fn stamp_value(hash: &[u8], mark: Option<SyncMark>) -> Vec<u8> {
    let mut value = hash.to_vec();
    if let Some(mark) = mark {
        value.push(mark.kind.byte());
        value.extend_from_slice(&mark.nonce.to_be_bytes());
    }
    value
}

/// The stamp state of a present row as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// No `f:rowkitSync`: the application wrote the row since the last sync (or none ran).
    Unstamped,
    /// `f:rowkitSync` whose value starts with the row's `f:hash`: unchanged since the
    /// migration wrote or confirmed it. `Some`: the sync that did, and how; `None`: a stamp
    /// of the row's hash alone, as written before stamps named their sync (§12.73).
    Stamped(Option<SyncMark>),
    /// `f:rowkitSync` of any other value. No writer of the protocol leaves one (every write
    /// removes the stamp, every stamp starts with the row's hash), so it is damage; it proves
    /// nothing and [`classify`] counts it as **unstamped**. [`same`] still names it exactly
    /// (the value read), so the sync's conditional writes apply to the row as read and
    /// replace it with a valid stamp.
    Invalid(Vec<u8>),
}

impl Stamp {
    /// The stamp state of a row whose `f:hash` is `hash` and whose stamp cell holds `value`
    /// (`None`: no stamp cell): valid iff `value` is `hash`, or `hash ‖ kind ‖ nonce` with a
    /// known kind byte ([`stamp_value`]). `check` accepts exactly the valid ones (§9).
    pub fn read(hash: &[u8], value: Option<&[u8]>) -> Stamp {
        let Some(value) = value else {
            return Stamp::Unstamped;
        };
        let mark = value.strip_prefix(hash).and_then(|rest| match rest {
            [] => Some(None),
            [kind, nonce @ ..] if nonce.len() == MARK_BYTES - 1 => {
                let kind = StampKind::from_byte(*kind)?;
                let nonce = u64::from_be_bytes(nonce.try_into().ok()?);
                Some(Some(SyncMark { nonce, kind }))
            }
            _ => None,
        });
        match mark {
            Some(mark) => Stamp::Stamped(mark),
            None => Stamp::Invalid(value.to_vec()),
        }
    }
}

/// One row of the pair as read with `LatestN(1)`, what §4.3 step 2 classifies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Side {
    /// No `d:value` (no row, or a row with derived cells only: `EXISTS` does not match it).
    Absent,
    /// A document.
    Present(PresentRow),
}

/// A present row as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PresentRow {
    /// Its `f:hash` as stored (32 bytes for rows the protocol wrote).
    pub hash: Vec<u8>,
    /// Its stamp state.
    pub stamp: Stamp,
    /// Its cells as read, the newest of each column, without the stamp: what [`copy`] writes.
    pub cells: Vec<Cell>,
}

/// Why a row as read cannot be synced.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SideError {
    /// A row with `d:value` and no `f:hash`: its `f` cells are not those of its document (a
    /// `derived_stale` row for `check`, which `check --fix` rewrites); `SAME` cannot name it.
    #[error("row has d:value but no f:hash (run check --fix: derived_stale)")]
    NoHash,
}

impl Side {
    /// The side a read gave: `row` as read (`None`: no row). Only the newest cell of each
    /// column counts (the read uses `LatestN(1)`; older ones are ignored if any came).
    pub fn from_row(row: Option<&Row>) -> Result<Side, SideError> {
        let Some(row) = row else {
            return Ok(Side::Absent);
        };
        // Canonical order puts a column's newest cell first: keep the first of each column.
        let mut cells: Vec<&Cell> = Vec::new();
        for cell in &row.cells {
            if !cells
                .last()
                .is_some_and(|c| c.family == cell.family && c.qualifier == cell.qualifier)
            {
                cells.push(cell);
            }
        }
        let find = |family: &str, qualifier: &str| {
            cells
                .iter()
                .find(|c| c.family == family && c.qualifier == qualifier.as_bytes())
        };
        if find(DOC_FAMILY, "value").is_none() {
            return Ok(Side::Absent);
        }
        let hash = find(FLAG_FAMILY, "hash")
            .map(|c| c.value.clone())
            .ok_or(SideError::NoHash)?;
        let stamp = Stamp::read(
            &hash,
            find(FLAG_FAMILY, SYNC_QUALIFIER).map(|c| c.value.as_slice()),
        );
        let is_stamp =
            |c: &&&Cell| c.family == FLAG_FAMILY && c.qualifier == SYNC_QUALIFIER.as_bytes();
        let cells = cells
            .iter()
            .filter(|c| !is_stamp(c))
            .map(|c| Cell {
                labels: Vec::new(),
                ..(**c).clone()
            })
            .collect();
        Ok(Side::Present(PresentRow { hash, stamp, cells }))
    }

    /// The side a **light** read gave (`row` read with [`light_filter`]: `f:hash` and
    /// `f:rowkitSync` only, §4.5 step 2): present iff it has an `f:hash`, with its stamp state
    /// and no cells (a light side classifies a pair; it is never copied). A row with `d:value`
    /// and no `f:hash` (damage) reads absent here; a pair it makes is "not in sync" only if the
    /// other side is present, and the whole read of the sync then sees it.
    pub fn from_light_row(row: Option<&Row>) -> Side {
        let Some(row) = row else {
            return Side::Absent;
        };
        // Canonical order puts a column's newest cell first.
        let find = |qualifier: &str| {
            row.cells
                .iter()
                .find(|c| c.family == FLAG_FAMILY && c.qualifier == qualifier.as_bytes())
        };
        let Some(hash) = find("hash").map(|c| c.value.clone()) else {
            return Side::Absent;
        };
        let stamp = Stamp::read(&hash, find(SYNC_QUALIFIER).map(|c| c.value.as_slice()));
        Side::Present(PresentRow {
            hash,
            stamp,
            cells: Vec::new(),
        })
    }

    /// The row as read, when present.
    pub fn present(&self) -> Option<&PresentRow> {
        match self {
            Side::Absent => None,
            Side::Present(row) => Some(row),
        }
    }

    /// Its `f:hash`, when present.
    pub fn hash(&self) -> Option<&[u8]> {
        self.present().map(|r| r.hash.as_slice())
    }

    /// Whether it carries a valid stamp (an absent row carries none: it proves nothing by
    /// itself).
    pub fn is_stamped(&self) -> bool {
        self.present()
            .is_some_and(|r| matches!(r.stamp, Stamp::Stamped(_)))
    }

    /// The sync its valid stamp names (`None`: absent, unstamped, an invalid stamp, or a
    /// stamp written before stamps named their sync).
    pub fn sync_mark(&self) -> Option<SyncMark> {
        match self.present()?.stamp {
            Stamp::Stamped(mark) => mark,
            _ => None,
        }
    }
}

/// The light read of the final pass and the sweeps (§4.5 step 2):
/// `Chain(Family("f"), ColumnQualifierRegex("hash|rowkitSync"), LatestN(1))` — only keys,
/// hashes and stamps, about 100 bytes a row, enough for [`Side::from_light_row`] to classify a
/// pair.
pub fn light_filter() -> RowFilter {
    RowFilter::Chain(vec![
        RowFilter::FamilyNameRegex(FLAG_FAMILY.into()),
        RowFilter::ColumnQualifierRegex(alloc::format!("hash|{SYNC_QUALIFIER}").into_bytes()),
        filters::latest(),
    ])
}

/// `STAMPED` = `FLAG("rowkitSync")`: the row carries a stamp (of any value).
pub fn stamped() -> RowFilter {
    filters::flag(SYNC_QUALIFIER)
}

/// The stamp cell holds exactly `value`.
fn stamp_eq(value: &[u8]) -> RowFilter {
    RowFilter::Chain(vec![
        stamped(),
        RowFilter::ValueRange {
            start: KeyBound::Closed(value.to_vec()),
            end: KeyBound::Closed(value.to_vec()),
        },
    ])
}

/// `SAME(r)`: matches iff the row still has the value and the stamp read. Stamped (validly or
/// not): `AND(HASH_EQ(r.hash), stamp = the value read)` — the exact stamp, so a row another
/// sync stamped since it was read is no longer "as read"; unstamped:
/// `Condition(STAMPED, BlockAll, HASH_EQ(r.hash))`. `SAME(absent)` is
/// `EXISTS`, which matches iff the row is **no longer** absent: its write goes in
/// `false_mutations` — use [`if_same`], which places it.
pub fn same(side: &Side) -> RowFilter {
    match side {
        Side::Absent => filters::exists(),
        Side::Present(row) => match &row.stamp {
            Stamp::Stamped(mark) => filters::and(
                filters::hash_eq(&row.hash),
                stamp_eq(&stamp_value(&row.hash, *mark)),
            ),
            Stamp::Unstamped => RowFilter::Condition {
                predicate: Some(Box::new(stamped())),
                true_filter: Some(Box::new(RowFilter::BlockAll)),
                false_filter: Some(Box::new(filters::hash_eq(&row.hash))),
            },
            Stamp::Invalid(value) => filters::and(filters::hash_eq(&row.hash), stamp_eq(value)),
        },
    }
}

/// `STAMP(r)` = `[Set(f, rowkitSync, 0, r.hash ‖ kind ‖ nonce)]`: the stamp naming the sync
/// `mark` ([`stamp_value`]).
pub fn stamp(row: &PresentRow, mark: SyncMark) -> Vec<Mutation> {
    vec![Mutation::set_cell(
        FLAG_FAMILY,
        SYNC_QUALIFIER.as_bytes(),
        Timestamp(0),
        stamp_value(&row.hash, Some(mark)),
    )]
}

/// `COPY(r)` = `REPLACE(r.value)` + `STAMP(r)` of kind [`StampKind::Copy`] by the sync whose
/// nonce is `nonce`, made from the row's **cells as read**:
/// `DeleteFromFamily("f")`, then a `SetCell` of every cell read (`d:value` and the `f` cells,
/// stamp excepted) with its column, timestamp and value as read, then the stamp. The copy's
/// `d:value` and `f:` cells are the source's byte for byte — even where the source's `f` cells
/// are stale or its `d:value` is not valid UTF-8 (a `REPLACE` rebuilt from the parsed text
/// would differ there) — and for a row the protocol wrote it is exactly
/// `REPLACE(r.value)` + `STAMP(r)` (the same cells; only the order of the `SetCell`s on
/// different columns differs, which changes nothing).
pub fn copy(row: &PresentRow, nonce: u64) -> Vec<Mutation> {
    let mut mutations = vec![Mutation::DeleteFromFamily {
        family: FLAG_FAMILY.into(),
    }];
    mutations.extend(row.cells.iter().map(Cell::to_set_cell));
    mutations.extend(stamp(
        row,
        SyncMark {
            nonce,
            kind: StampKind::Copy,
        },
    ));
    mutations
}

/// One `CheckAndMutateRow` of a sync: its predicate and both branches.
#[derive(Clone, Debug, PartialEq)]
pub struct ConditionalWrite {
    /// `SAME(row as read)`.
    pub predicate: RowFilter,
    /// Applied when the predicate matched.
    pub true_mutations: Vec<Mutation>,
    /// Applied when it did not.
    pub false_mutations: Vec<Mutation>,
}

impl ConditionalWrite {
    /// Whether the write was applied, given the reply's `predicate_matched`: the mutations sit
    /// in exactly one branch.
    pub fn applied(&self, predicate_matched: bool) -> bool {
        if predicate_matched {
            !self.true_mutations.is_empty()
        } else {
            !self.false_mutations.is_empty()
        }
    }
}

/// `mutations` applied iff the row is still as read: `SAME(side)` with the mutations in
/// `true_mutations`, or for an absent side in `false_mutations` (§4.3 step 3).
pub fn if_same(side: &Side, mutations: Vec<Mutation>) -> ConditionalWrite {
    let predicate = same(side);
    match side {
        Side::Absent => ConditionalWrite {
            predicate,
            true_mutations: Vec::new(),
            false_mutations: mutations,
        },
        Side::Present(_) => ConditionalWrite {
            predicate,
            true_mutations: mutations,
            false_mutations: Vec::new(),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// §4.3 step 2: classification, and the writes of steps 3 and 4
// ---------------------------------------------------------------------------------------------

/// Which row of the pair: `S(a)` in `from` or `T(a)` in `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PairRow {
    /// `S(a)`, the row in the `from` layout.
    Source,
    /// `T(a)`, the row in the `to` layout.
    Target,
}

/// What §4.3's table says to do with a pair as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncAction {
    /// Both absent, or both stamped with the same hash: nothing to write.
    InSync,
    /// Both present with the same hash, a side unstamped: stamp the unstamped side(s)
    /// (`source` / `target`: which ones).
    StampUnstamped {
        /// `S(a)` is unstamped.
        source: bool,
        /// `T(a)` is unstamped.
        target: bool,
    },
    /// Copy `s` → `T(a)`, then confirm the source with its stamp.
    CopyToTarget,
    /// Delete `T(a)` (the source is absent: no stamp).
    DeleteTarget,
    /// After the switch: copy `t` → `S(a)` (the reverse mirror, or a new key in `to`), then
    /// stamp `T(a)`.
    CopyToSource,
    /// After the switch: delete `S(a)` (a `to` delete not yet mirrored).
    DeleteSource,
    /// After the switch, an unstamped `s` over a stamped `t`: a straggler's write, adopted by
    /// copying `s` → `T(a)` (event `Straggler`).
    StragglerCopyToTarget,
    /// After the switch, an absent `s` over a stamped `t`: a straggler's delete, adopted by
    /// deleting `T(a)` (event `Straggler`).
    StragglerDeleteTarget,
    /// After the switch, both sides changed (or a straggler's new key): undecidable, nothing
    /// is written (event `Conflict`).
    Conflict,
}

/// Whether each side of a pair as read counts as **unchanged since the last sync** ("stamped"
/// in §4.3's table): it carries a valid stamp, unless that stamp is a late confirmation
/// (§12.9, §12.73). A [`StampKind::Confirm`] stamp vouches for its row's bytes only — step 4
/// can land after the row changed and changed back — so where the pair shows that the other
/// row moved on after that sync, it proves nothing:
///
/// - both rows present with different hashes and both stamped: no one sync left them so (a
///   sync leaves both rows with one hash), and a confirmed row holds bytes written at least
///   as late as those the copy beside it was made from, so a confirmation counts as changed
///   and a copy as unchanged (two confirmations are both changed, two copies both unchanged:
///   a conflict after the switch). The kinds decide, not the nonces: processes seeded alike
///   (the CLI's `--seed` defaults to 0) draw equal nonces, so equal nonces prove nothing;
/// - `S(a)` absent beside a confirmed `T(a)`: the confirmation counts as changed, so the pair
///   is never taken for a straggler's delete of a row an application rewrote (§6.1's limit 2:
///   `to` wins).
///
/// Stamps of the hash alone (written before stamps named their sync) name no kind and count
/// as they did. Pairs with equal hashes are not judged here: their content agrees.
fn unchanged_sides(source: &Side, target: &Side) -> (bool, bool) {
    let (s, t) = (source.is_stamped(), target.is_stamped());
    let confirmed = |side: &Side| {
        side.sync_mark()
            .is_some_and(|m| m.kind == StampKind::Confirm)
    };
    match (source.present(), target.present()) {
        (None, Some(_)) => (false, t && !confirmed(target)),
        (Some(sr), Some(tr)) if sr.hash != tr.hash && s && t => {
            match (source.sync_mark(), target.sync_mark()) {
                (Some(_), Some(_)) => (!confirmed(source), !confirmed(target)),
                _ => (s, t),
            }
        }
        _ => (s, t),
    }
}

/// §4.3 step 2: the action for `source` (`s`, the pair's `from` row) and `target` (`t`, its
/// `to` row) as read, before (`Truth::From`) or after (`Truth::To`) the switch. "Changed" is
/// present without a valid stamp ([`Stamp::Invalid`] counts as unstamped), or with a
/// confirmation the other row shows to be late (§12.73); "same hash" compares the stored
/// `f:hash` of both rows.
pub fn classify(source: &Side, target: &Side, truth: Truth) -> SyncAction {
    use SyncAction::*;
    let after = truth == Truth::To;
    let (source_unchanged, target_unchanged) = unchanged_sides(source, target);
    match (source.present(), target.present()) {
        (None, None) => InSync,
        (None, Some(_)) if target_unchanged => {
            if after {
                StragglerDeleteTarget
            } else {
                DeleteTarget
            }
        }
        (None, Some(_)) => {
            if after {
                CopyToSource
            } else {
                DeleteTarget
            }
        }
        (Some(_), None) if source_unchanged => {
            if after {
                DeleteSource
            } else {
                CopyToTarget
            }
        }
        (Some(_), None) => {
            if after {
                Conflict
            } else {
                CopyToTarget
            }
        }
        (Some(s), Some(t)) if s.hash == t.hash => {
            let (source, target) = (!source.is_stamped(), !target.is_stamped());
            if source || target {
                StampUnstamped { source, target }
            } else {
                InSync
            }
        }
        (Some(_), Some(_)) if !after => CopyToTarget,
        (Some(_), Some(_)) => match (source_unchanged, target_unchanged) {
            (false, true) => StragglerCopyToTarget,
            (true, false) => CopyToSource,
            // Both changed, or an interrupted sync after the switch: undecidable.
            (false, false) | (true, true) => Conflict,
        },
    }
}

/// `--resolve keep-to|keep-from` (§4.6): which side of a conflict the operator keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Keep {
    /// `keep-to`: `T(a)` is copied over `S(a)` (or, `T(a)` absent, `S(a)` is deleted).
    To,
    /// `keep-from`: `S(a)` is copied over `T(a)`.
    From,
}

impl Keep {
    /// The CLI spelling (`keep-to`, `keep-from`).
    pub fn as_str(self) -> &'static str {
        match self {
            Keep::To => "keep-to",
            Keep::From => "keep-from",
        }
    }

    /// The side of `--resolve TEXT`, `None` for any other text.
    pub fn parse(text: &str) -> Option<Keep> {
        match text {
            "keep-to" => Some(Keep::To),
            "keep-from" => Some(Keep::From),
            _ => None,
        }
    }
}

/// The action that settles a [`SyncAction::Conflict`] for the side the operator keeps (§4.6:
/// "the chosen side is copied over the other with §4.3 step 3"): the ordinary copy or delete
/// of that direction, whose writes ([`sync_writes`]) are conditional on both rows as read like
/// every sync's. Any other action is returned as it is.
pub fn resolve(action: SyncAction, target: &Side, keep: Keep) -> SyncAction {
    match (action, keep) {
        (SyncAction::Conflict, Keep::From) => SyncAction::CopyToTarget,
        (SyncAction::Conflict, Keep::To) if target.present().is_some() => SyncAction::CopyToSource,
        (SyncAction::Conflict, Keep::To) => SyncAction::DeleteSource,
        (other, _) => other,
    }
}

/// What a conditional write of a sync does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteKind {
    /// `COPY(x)` onto the other row (step 3).
    Copy,
    /// `DeleteFromRow()` (step 3).
    Delete,
    /// `STAMP(x)`: the confirmation of a copy's source (step 4) or the stamp of an unstamped
    /// side of an equal pair.
    Stamp,
    /// `DeleteFromColumn(f, rowkitSync)`: the stamp stripped once the migration no longer
    /// needs it (§4.7 on `to` rows, §4.9 on `from` rows).
    Unstamp,
}

/// One conditional write of a sync, on one row of the pair.
#[derive(Clone, Debug, PartialEq)]
pub struct SyncWrite {
    /// The row it writes.
    pub row: PairRow,
    /// What it does.
    pub kind: WriteKind,
    /// The request's predicate and branches.
    pub write: ConditionalWrite,
}

/// The writes of §4.3 steps 3 and 4 for `action` on the pair as read, in the order they are
/// sent (each after the previous one applied; one not applied sends the sync back to step 1):
/// a copy `x` → `y` is `COPY(x)` on `y` if `SAME(y)`, then `STAMP(x)` on `x` if `SAME(x)`; a
/// delete is `DeleteFromRow()` if `SAME(y)` (a deleted source needs no stamp); a stamp of
/// equal rows is `STAMP` on each unstamped side if `SAME`, source first. None for `InSync` and
/// `Conflict`, and none when `action` does not fit the pair (e.g. a copy from an absent row).
/// Every stamp written names this round of the sync by `nonce` (§4.2): the copy's as
/// [`StampKind::Copy`], the others as [`StampKind::Confirm`].
pub fn sync_writes(action: SyncAction, source: &Side, target: &Side, nonce: u64) -> Vec<SyncWrite> {
    let confirm = SyncMark {
        nonce,
        kind: StampKind::Confirm,
    };
    let side = |row: PairRow| match row {
        PairRow::Source => source,
        PairRow::Target => target,
    };
    let copy_onto = |onto: PairRow, from: PairRow| -> Vec<SyncWrite> {
        let Some(x) = side(from).present() else {
            return Vec::new();
        };
        vec![
            SyncWrite {
                row: onto,
                kind: WriteKind::Copy,
                write: if_same(side(onto), copy(x, nonce)),
            },
            SyncWrite {
                row: from,
                kind: WriteKind::Stamp,
                write: if_same(side(from), stamp(x, confirm)),
            },
        ]
    };
    let delete = |row: PairRow| -> Vec<SyncWrite> {
        if side(row).present().is_none() {
            return Vec::new();
        }
        vec![SyncWrite {
            row,
            kind: WriteKind::Delete,
            write: if_same(side(row), vec![Mutation::DeleteFromRow]),
        }]
    };
    match action {
        SyncAction::InSync | SyncAction::Conflict => Vec::new(),
        SyncAction::CopyToTarget | SyncAction::StragglerCopyToTarget => {
            copy_onto(PairRow::Target, PairRow::Source)
        }
        SyncAction::CopyToSource => copy_onto(PairRow::Source, PairRow::Target),
        SyncAction::DeleteTarget | SyncAction::StragglerDeleteTarget => delete(PairRow::Target),
        SyncAction::DeleteSource => delete(PairRow::Source),
        SyncAction::StampUnstamped {
            source: stamp_source,
            target: stamp_target,
        } => [
            (PairRow::Source, stamp_source),
            (PairRow::Target, stamp_target),
        ]
        .into_iter()
        .filter(|(_, wanted)| *wanted)
        .filter_map(|(row, _)| {
            let present = side(row).present()?;
            Some(SyncWrite {
                row,
                kind: WriteKind::Stamp,
                write: if_same(side(row), stamp(present, confirm)),
            })
        })
        .collect(),
    }
}

// ---------------------------------------------------------------------------------------------
// §4.7 and §4.9: the writes of the deletion passes
// ---------------------------------------------------------------------------------------------

/// `[DeleteFromColumn(f, rowkitSync)]`: strips the stamp (every cell of the column), what the
/// clean-up does to `to` rows (§4.7) and a rollback to `from` rows (§4.9).
pub fn unstamp() -> Vec<Mutation> {
    vec![Mutation::DeleteFromColumn {
        family: FLAG_FAMILY.into(),
        qualifier: SYNC_QUALIFIER.as_bytes().to_vec(),
        range: None,
    }]
}

/// Whether a side carries a stamp cell of any value (valid or not): a row the deletion
/// passes strip.
fn carries_stamp(side: &Side) -> bool {
    side.present().is_some_and(|r| r.stamp != Stamp::Unstamped)
}

/// What the clean-up (§4.7, truth `to`) does with a pair as read.
#[derive(Clone, Debug, PartialEq)]
pub enum CleanPlan {
    /// `S(a)` is present without a valid stamp: a straggler's row. Run `SyncKey` with truth
    /// `to` first (adopted, or a conflict left in place), then read the pair again.
    SyncFirst,
    /// These writes, in order (each after the previous one applied; one not applied sends the
    /// pair back to its read). Empty: nothing left to clean.
    Writes(Vec<SyncWrite>),
}

/// §4.7 for `source` (`s`) and `target` (`t`) as read: a stamped `s` is deleted
/// (`DeleteFromRow()` if `SAME(s)`) whatever `t` holds; then a `t` carrying a stamp loses it
/// (`DeleteFromColumn(f, rowkitSync)` if `SAME(t)`). An `s` that counts as changed — no valid
/// stamp, or a late confirmation ([`classify`]'s rule, §12.73) — is a straggler:
/// [`CleanPlan::SyncFirst`], and nothing is stripped from `t` before the pair is synced (the
/// sync's predicates need its stamp).
pub fn clean_writes(source: &Side, target: &Side) -> CleanPlan {
    let mut writes = Vec::new();
    if source.present().is_some() {
        if !unchanged_sides(source, target).0 {
            return CleanPlan::SyncFirst;
        }
        writes.push(SyncWrite {
            row: PairRow::Source,
            kind: WriteKind::Delete,
            write: if_same(source, vec![Mutation::DeleteFromRow]),
        });
    }
    if carries_stamp(target) {
        writes.push(SyncWrite {
            row: PairRow::Target,
            kind: WriteKind::Unstamp,
            write: if_same(target, unstamp()),
        });
    }
    CleanPlan::Writes(writes)
}

/// §4.9's first row (a rollback before the switch, truth `from`) for `source` (`s`) and
/// `target` (`t`) as read: a present `t` is deleted (`DeleteFromRow()` if `SAME(t)`), then an
/// `s` carrying a stamp loses it (`DeleteFromColumn(f, rowkitSync)` if `SAME(s)`), in that
/// order (each after the previous one applied; one not applied sends the pair back to its
/// read). Empty: nothing left to undo.
pub fn abort_writes(source: &Side, target: &Side) -> Vec<SyncWrite> {
    let mut writes = Vec::new();
    if target.present().is_some() {
        writes.push(SyncWrite {
            row: PairRow::Target,
            kind: WriteKind::Delete,
            write: if_same(target, vec![Mutation::DeleteFromRow]),
        });
    }
    if carries_stamp(source) {
        writes.push(SyncWrite {
            row: PairRow::Source,
            kind: WriteKind::Unstamp,
            write: if_same(source, unstamp()),
        });
    }
    writes
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use super::*;
    use crate::objmeta::cells::replace;
    use crate::objmeta::json::Json;

    // ---- §4.3 table, written out from the doc (never computed by `classify`) ----

    /// A side as the table names it: absent, stamped with hash `h` (a stamp of the hash
    /// alone, as written before stamps named their sync), stamped by a sync's copy or
    /// confirmation (§12.73), unstamped with hash `h`, or carrying a stamp of another value
    /// than its hash `h` (counts as unstamped).
    #[derive(Clone, Copy, Debug)]
    enum S {
        A,
        St(u8),
        Cp(u8),
        Cf(u8),
        Un(u8),
        Bad(u8),
    }

    /// The mark of a [`S::Cp`] stamp (nonce 11) or a [`S::Cf`] one (nonce 12).
    fn mark(kind: StampKind) -> SyncMark {
        let nonce = match kind {
            StampKind::Copy => 11,
            StampKind::Confirm => 12,
        };
        SyncMark { nonce, kind }
    }

    fn side(s: S) -> Side {
        let present = |h: u8, stamp| {
            Side::Present(PresentRow {
                hash: vec![h; 32],
                stamp,
                cells: Vec::new(),
            })
        };
        match s {
            S::A => Side::Absent,
            S::St(h) => present(h, Stamp::Stamped(None)),
            S::Cp(h) => present(h, Stamp::Stamped(Some(mark(StampKind::Copy)))),
            S::Cf(h) => present(h, Stamp::Stamped(Some(mark(StampKind::Confirm)))),
            S::Un(h) => present(h, Stamp::Unstamped),
            S::Bad(h) => present(h, Stamp::Invalid(vec![0xee; 32])),
        }
    }

    use SyncAction::*;

    /// `(s, t, before the switch, after the switch)`, row by row of §4.3's table.
    const TABLE: &[(S, S, SyncAction, SyncAction)] = &[
        // absent | absent
        (S::A, S::A, InSync, InSync),
        // stamped | stamped, same hash
        (S::St(1), S::St(1), InSync, InSync),
        // present | present, same hash, a side unstamped: stamp the unstamped side(s); same
        (
            S::St(1),
            S::Un(1),
            StampUnstamped {
                source: false,
                target: true,
            },
            StampUnstamped {
                source: false,
                target: true,
            },
        ),
        (
            S::Un(1),
            S::St(1),
            StampUnstamped {
                source: true,
                target: false,
            },
            StampUnstamped {
                source: true,
                target: false,
            },
        ),
        (
            S::Un(1),
            S::Un(1),
            StampUnstamped {
                source: true,
                target: true,
            },
            StampUnstamped {
                source: true,
                target: true,
            },
        ),
        // unstamped | stamped: copy s → T | straggler: copy s → T
        (S::Un(1), S::St(2), CopyToTarget, StragglerCopyToTarget),
        // absent | stamped: delete T | straggler delete
        (S::A, S::St(1), DeleteTarget, StragglerDeleteTarget),
        // stamped | unstamped: copy s → T | copy t → S
        (S::St(1), S::Un(2), CopyToTarget, CopyToSource),
        // stamped | absent: copy s → T | delete S
        (S::St(1), S::A, CopyToTarget, DeleteSource),
        // absent | unstamped: delete T | copy t → S
        (S::A, S::Un(1), DeleteTarget, CopyToSource),
        // unstamped | absent: copy s → T | conflict
        (S::Un(1), S::A, CopyToTarget, Conflict),
        // unstamped | unstamped, other hash: copy s → T | conflict
        (S::Un(1), S::Un(2), CopyToTarget, Conflict),
        // stamped | stamped, other hash: copy s → T | conflict
        (S::St(1), S::St(2), CopyToTarget, Conflict),
        // A stamp whose value is not the row's hash counts as unstamped (project decision).
        (
            S::Bad(1),
            S::St(1),
            StampUnstamped {
                source: true,
                target: false,
            },
            StampUnstamped {
                source: true,
                target: false,
            },
        ),
        (S::Bad(1), S::St(2), CopyToTarget, StragglerCopyToTarget),
        (S::St(1), S::Bad(2), CopyToTarget, CopyToSource),
        (S::A, S::Bad(1), DeleteTarget, CopyToSource),
        (S::Bad(1), S::A, CopyToTarget, Conflict),
        // Stamps naming their sync (§12.73). Equal hashes: in sync whatever the kinds.
        (S::Cp(1), S::Cf(1), InSync, InSync),
        (S::St(1), S::Cf(1), InSync, InSync),
        // §12.9's pair: a late confirmation of T beside the copy of a later sync on S; T
        // holds the newer bytes.
        (S::Cp(1), S::Cf(2), CopyToTarget, CopyToSource),
        // … and of S beside a later copy on T: S holds a straggler's newer bytes.
        (S::Cf(1), S::Cp(2), CopyToTarget, StragglerCopyToTarget),
        // Two confirmations, or two copies: undecidable, as before.
        (S::Cf(1), S::Cf(2), CopyToTarget, Conflict),
        (S::Cp(1), S::Cp(2), CopyToTarget, Conflict),
        // A stamp of the hash alone beside a marked one: no kind to judge by, as before.
        (S::St(1), S::Cf(2), CopyToTarget, Conflict),
        (S::Cf(1), S::St(2), CopyToTarget, Conflict),
        // A confirmed T beside an absent S: never a straggler's delete (§6.1's limit 2).
        (S::A, S::Cf(1), DeleteTarget, CopyToSource),
        (S::A, S::Cp(1), DeleteTarget, StragglerDeleteTarget),
        // One side changed: the kinds change nothing.
        (S::Cf(1), S::A, CopyToTarget, DeleteSource),
        (S::Cp(1), S::A, CopyToTarget, DeleteSource),
        (S::Un(1), S::Cf(2), CopyToTarget, StragglerCopyToTarget),
        (S::Cf(1), S::Un(2), CopyToTarget, CopyToSource),
    ];

    #[test]
    fn classify_follows_the_whole_table_in_both_columns() {
        for &(s, t, before, after) in TABLE {
            assert_eq!(
                classify(&side(s), &side(t), Truth::From),
                before,
                "{s:?} / {t:?} before the switch"
            );
            assert_eq!(
                classify(&side(s), &side(t), Truth::To),
                after,
                "{s:?} / {t:?} after the switch"
            );
        }
    }

    #[test]
    fn resolve_settles_each_conflict_toward_the_kept_side_and_leaves_the_rest() {
        // §4.6: the kept side is copied over the other (an absent kept `to` side: `S` deleted).
        let conflicts = [
            (S::Un(1), S::A, DeleteSource),
            (S::Un(1), S::Un(2), CopyToSource),
            (S::St(1), S::St(2), CopyToSource),
        ];
        for (s, t, keep_to) in conflicts {
            let action = classify(&side(s), &side(t), Truth::To);
            assert_eq!(action, Conflict, "{s:?} / {t:?}");
            assert_eq!(
                resolve(action, &side(t), Keep::To),
                keep_to,
                "{s:?} / {t:?}"
            );
            assert_eq!(
                resolve(action, &side(t), Keep::From),
                CopyToTarget,
                "{s:?} / {t:?}"
            );
        }
        for &(_, t, before, after) in TABLE {
            for action in [before, after].into_iter().filter(|a| *a != Conflict) {
                for keep in [Keep::To, Keep::From] {
                    assert_eq!(resolve(action, &side(t), keep), action);
                }
            }
        }
        assert_eq!(Keep::parse("keep-to"), Some(Keep::To));
        assert_eq!(Keep::parse(Keep::From.as_str()), Some(Keep::From));
        assert_eq!(Keep::parse("keep"), None);
    }

    #[test]
    fn the_table_covers_every_kind_of_pair() {
        // Every (s, t) shape: absent / stamped / unstamped on each side, and for two present
        // rows same and other hash. 13 shapes.
        let shape = |s: S| match s {
            S::A => 0,
            S::St(_) | S::Cp(_) | S::Cf(_) => 1,
            S::Un(_) | S::Bad(_) => 2,
        };
        let hash = |s: S| match s {
            S::A => None,
            S::St(h) | S::Cp(h) | S::Cf(h) | S::Un(h) | S::Bad(h) => Some(h),
        };
        let mut seen = alloc::collections::BTreeSet::new();
        for &(s, t, _, _) in TABLE {
            let same = match (hash(s), hash(t)) {
                (Some(a), Some(b)) => Some(a == b),
                _ => None,
            };
            seen.insert((shape(s), shape(t), same));
        }
        assert_eq!(seen.len(), 13, "{seen:?}");
    }

    // ---- §4.3 steps 3–4: the writes ----

    fn row_with(value: &str, stamp_value: Option<&[u8]>) -> Row {
        let json = Json::parse(value).unwrap();
        let mut cells: Vec<Cell> = replace(&json, None)
            .into_iter()
            .filter_map(Cell::from_set_cell)
            .collect();
        if let Some(v) = stamp_value {
            cells.push(Cell {
                family: "f".into(),
                qualifier: b"rowkitSync".to_vec(),
                timestamp: Timestamp(0),
                value: v.to_vec(),
                labels: Vec::new(),
            });
        }
        cells.sort_by(crate::model::compare_canonical);
        Row {
            key: b"b\x00k".to_vec(),
            cells,
        }
    }

    const DOC: &str = r#"{"key":"k","versionId":"v1","isPHD":true,"deleted":true}"#;

    fn sha(text: &str) -> Vec<u8> {
        use sha2::Digest;
        sha2::Sha256::digest(text.as_bytes()).to_vec()
    }

    #[test]
    fn sides_from_rows() {
        let h = sha(DOC);
        assert_eq!(Side::from_row(None), Ok(Side::Absent));
        let s = Side::from_row(Some(&row_with(DOC, None))).unwrap();
        assert_eq!(s.present().unwrap().stamp, Stamp::Unstamped);
        assert_eq!(s.hash(), Some(h.as_slice()));
        let s = Side::from_row(Some(&row_with(DOC, Some(&h)))).unwrap();
        assert!(s.is_stamped());
        assert!(
            s.present()
                .unwrap()
                .cells
                .iter()
                .all(|c| c.qualifier != b"rowkitSync"),
            "the stamp is not one of the cells a copy writes"
        );
        let s = Side::from_row(Some(&row_with(DOC, Some(b"other")))).unwrap();
        assert_eq!(
            s.present().unwrap().stamp,
            Stamp::Invalid(b"other".to_vec())
        );
        assert!(!s.is_stamped());
        // f cells only (no d:value): absent, as EXISTS sees it.
        let mut only_f = row_with(DOC, Some(&h));
        only_f.cells.retain(|c| c.family == "f");
        assert_eq!(Side::from_row(Some(&only_f)), Ok(Side::Absent));
        // d:value without f:hash: refused.
        let mut no_hash = row_with(DOC, None);
        no_hash.cells.retain(|c| c.qualifier != b"hash");
        assert_eq!(Side::from_row(Some(&no_hash)), Err(SideError::NoHash));
    }

    #[test]
    fn sides_from_light_rows() {
        let h = sha(DOC);
        let light = |row: Row| {
            let mut row = row;
            row.cells.retain(|c| {
                c.family == "f" && (c.qualifier == b"hash" || c.qualifier == b"rowkitSync")
            });
            Side::from_light_row(Some(&row))
        };
        assert_eq!(Side::from_light_row(None), Side::Absent);
        let s = light(row_with(DOC, Some(&h)));
        assert!(s.is_stamped());
        assert_eq!(s.hash(), Some(h.as_slice()));
        assert!(s.present().unwrap().cells.is_empty());
        assert_eq!(
            light(row_with(DOC, None)).present().unwrap().stamp,
            Stamp::Unstamped
        );
        assert_eq!(
            light(row_with(DOC, Some(b"x"))).present().unwrap().stamp,
            Stamp::Invalid(b"x".to_vec())
        );
        // No f:hash: absent, as the light read sees it.
        let mut no_hash = row_with(DOC, None);
        no_hash.cells.retain(|c| c.qualifier != b"hash");
        assert_eq!(light(no_hash), Side::Absent);
        assert_eq!(
            light_filter(),
            RowFilter::Chain(vec![
                RowFilter::FamilyNameRegex("f".into()),
                RowFilter::ColumnQualifierRegex(b"hash|rowkitSync".to_vec()),
                RowFilter::CellsPerColumnLimit(1),
            ])
        );
    }

    fn set_cells(
        mutations: &[Mutation],
    ) -> alloc::collections::BTreeSet<(String, Vec<u8>, Vec<u8>)> {
        mutations
            .iter()
            .filter_map(|m| match m {
                Mutation::SetCell {
                    family,
                    qualifier,
                    timestamp,
                    value,
                } => {
                    assert_eq!(*timestamp, Timestamp(0));
                    Some((family.clone(), qualifier.clone(), value.clone()))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn copy_of_a_protocol_row_is_replace_plus_stamp() {
        let source = Side::from_row(Some(&row_with(DOC, Some(&sha(DOC))))).unwrap();
        let row = source.present().unwrap();
        let copied = copy(row, 7);
        assert_eq!(copied[0], Mutation::DeleteFromFamily { family: "f".into() });
        assert!(
            copied[1..]
                .iter()
                .all(|m| matches!(m, Mutation::SetCell { .. }))
        );
        let mut want = replace(&Json::parse(DOC).unwrap(), None);
        want.push(Mutation::SetCell {
            family: "f".into(),
            qualifier: b"rowkitSync".to_vec(),
            timestamp: Timestamp(0),
            value: [sha(DOC), b"c".to_vec(), 7u64.to_be_bytes().to_vec()].concat(),
        });
        assert_eq!(set_cells(&copied), set_cells(&want));
    }

    #[test]
    fn copy_keeps_bytes_replace_would_change() {
        // Stale f cells and a d:value that is not UTF-8: the copy writes them as read.
        let row = Row {
            key: b"b\x00k".to_vec(),
            cells: vec![
                Cell {
                    family: "d".into(),
                    qualifier: b"value".to_vec(),
                    timestamp: Timestamp(0),
                    value: b"{\"k\":\"\xff\"}".to_vec(),
                    labels: Vec::new(),
                },
                Cell {
                    family: "f".into(),
                    qualifier: b"hash".to_vec(),
                    timestamp: Timestamp(0),
                    value: vec![9; 32],
                    labels: Vec::new(),
                },
                Cell {
                    family: "f".into(),
                    qualifier: b"versionId".to_vec(),
                    timestamp: Timestamp(0),
                    value: b"stale".to_vec(),
                    labels: Vec::new(),
                },
            ],
        };
        let side = Side::from_row(Some(&row)).unwrap();
        let got = set_cells(&copy(side.present().unwrap(), 0x0102));
        let stamp = [&[9; 32][..], b"c", &[0, 0, 0, 0, 0, 0, 1, 2]].concat();
        let want: alloc::collections::BTreeSet<_> = [
            ("d", &b"value"[..], &b"{\"k\":\"\xff\"}"[..]),
            ("f", b"hash", &[9; 32]),
            ("f", b"versionId", b"stale"),
            ("f", b"rowkitSync", &stamp),
        ]
        .into_iter()
        .map(|(f, q, v)| (f.to_string(), q.to_vec(), v.to_vec()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn same_names_value_and_stamp_state() {
        let h = vec![3; 32];
        let present = |stamp| {
            Side::Present(PresentRow {
                hash: h.clone(),
                stamp,
                cells: Vec::new(),
            })
        };
        let flag_sync = RowFilter::Chain(vec![
            RowFilter::FamilyNameRegex("f".into()),
            RowFilter::ColumnQualifierRegex(b"rowkitSync".to_vec()),
        ]);
        assert_eq!(stamped(), flag_sync);
        let stamp_is = |value: &[u8]| {
            RowFilter::Chain(vec![
                flag_sync.clone(),
                RowFilter::ValueRange {
                    start: KeyBound::Closed(value.to_vec()),
                    end: KeyBound::Closed(value.to_vec()),
                },
            ])
        };
        // A stamp is named exactly: the hash alone, or the hash, the kind and the nonce.
        assert_eq!(
            same(&present(Stamp::Stamped(None))),
            filters::and(filters::hash_eq(&h), stamp_is(&h))
        );
        let marked = [&h[..], b"k", &[0, 0, 0, 0, 0, 0, 0, 9]].concat();
        assert_eq!(
            same(&present(Stamp::Stamped(Some(SyncMark {
                nonce: 9,
                kind: StampKind::Confirm
            })))),
            filters::and(filters::hash_eq(&h), stamp_is(&marked))
        );
        assert_eq!(
            same(&present(Stamp::Unstamped)),
            RowFilter::Condition {
                predicate: Some(Box::new(flag_sync.clone())),
                true_filter: Some(Box::new(RowFilter::BlockAll)),
                false_filter: Some(Box::new(filters::hash_eq(&h))),
            }
        );
        assert_eq!(
            same(&present(Stamp::Invalid(b"x".to_vec()))),
            filters::and(
                filters::hash_eq(&h),
                RowFilter::Chain(vec![
                    flag_sync,
                    RowFilter::ValueRange {
                        start: KeyBound::Closed(b"x".to_vec()),
                        end: KeyBound::Closed(b"x".to_vec()),
                    },
                ])
            )
        );
        assert_eq!(same(&Side::Absent), filters::exists());
        let w = if_same(&Side::Absent, vec![Mutation::DeleteFromRow]);
        assert!(w.true_mutations.is_empty() && w.false_mutations.len() == 1);
        assert!(w.applied(false) && !w.applied(true));
        let w = if_same(
            &present(Stamp::Stamped(None)),
            vec![Mutation::DeleteFromRow],
        );
        assert!(w.applied(true) && !w.applied(false));
    }

    #[test]
    fn stamp_values_read_back_and_anything_else_is_invalid() {
        let h = [4u8; 32];
        let mark = |nonce, kind| Some(SyncMark { nonce, kind });
        assert_eq!(Stamp::read(&h, None), Stamp::Unstamped);
        assert_eq!(Stamp::read(&h, Some(&h)), Stamp::Stamped(None));
        let copy = [&h[..], b"c", &[1, 2, 3, 4, 5, 6, 7, 8]].concat();
        assert_eq!(
            Stamp::read(&h, Some(&copy)),
            Stamp::Stamped(mark(0x0102_0304_0506_0708, StampKind::Copy))
        );
        let confirm = [&h[..], b"k", &[0; 8]].concat();
        assert_eq!(
            Stamp::read(&h, Some(&confirm)),
            Stamp::Stamped(mark(0, StampKind::Confirm))
        );
        // Written the other way round by `stamp_value`.
        assert_eq!(stamp_value(&h, mark(0, StampKind::Confirm)), confirm);
        assert_eq!(stamp_value(&h, None), h.to_vec());
        for bad in [
            [&h[..], b"x", &[0; 8]].concat(),       // unknown kind
            [&h[..], b"c", &[0; 7]].concat(),       // short nonce
            [&h[..], b"c", &[0; 9]].concat(),       // long nonce
            [&[5; 32][..], b"c", &[0; 8]].concat(), // another hash
            h[..31].to_vec(),
        ] {
            assert_eq!(Stamp::read(&h, Some(&bad)), Stamp::Invalid(bad.clone()));
        }
    }

    #[test]
    fn writes_of_each_action() {
        let s = side(S::St(1));
        let t = side(S::Un(2));
        let kinds = |w: &[SyncWrite]| w.iter().map(|w| (w.row, w.kind)).collect::<Vec<_>>();
        let w = sync_writes(CopyToTarget, &s, &t, 5);
        assert_eq!(
            kinds(&w),
            [
                (PairRow::Target, WriteKind::Copy),
                (PairRow::Source, WriteKind::Stamp)
            ]
        );
        assert_eq!(w[0].write.predicate, same(&t));
        assert_eq!(w[1].write.predicate, same(&s));
        // Both stamps name the round (nonce 5): the copy's kind `c`, the confirmation's `k`.
        let stamp_cell = |h: u8, kind: &[u8]| Mutation::SetCell {
            family: "f".into(),
            qualifier: b"rowkitSync".to_vec(),
            timestamp: Timestamp(0),
            value: [&[h; 32][..], kind, &[0, 0, 0, 0, 0, 0, 0, 5]].concat(),
        };
        assert_eq!(w[0].write.true_mutations.last(), Some(&stamp_cell(1, b"c")));
        assert_eq!(w[1].write.true_mutations, vec![stamp_cell(1, b"k")]);
        let w = sync_writes(CopyToSource, &s, &t, 5);
        assert_eq!(
            kinds(&w),
            [
                (PairRow::Source, WriteKind::Copy),
                (PairRow::Target, WriteKind::Stamp)
            ]
        );
        // A copy onto an absent row writes in false_mutations.
        let w = sync_writes(CopyToTarget, &s, &Side::Absent, 5);
        assert!(w[0].write.true_mutations.is_empty());
        assert_eq!(w[0].write.false_mutations, copy(s.present().unwrap(), 5));
        let w = sync_writes(DeleteTarget, &Side::Absent, &t, 5);
        assert_eq!(kinds(&w), [(PairRow::Target, WriteKind::Delete)]);
        assert_eq!(w[0].write.true_mutations, vec![Mutation::DeleteFromRow]);
        assert_eq!(
            kinds(&sync_writes(DeleteSource, &s, &Side::Absent, 5)),
            [(PairRow::Source, WriteKind::Delete)]
        );
        assert_eq!(
            kinds(&sync_writes(
                StampUnstamped {
                    source: true,
                    target: true
                },
                &side(S::Un(1)),
                &side(S::Un(1)),
                5
            )),
            [
                (PairRow::Source, WriteKind::Stamp),
                (PairRow::Target, WriteKind::Stamp)
            ]
        );
        assert!(sync_writes(InSync, &s, &t, 5).is_empty());
        assert!(sync_writes(Conflict, &s, &t, 5).is_empty());
        // An action that does not fit the pair writes nothing.
        assert!(sync_writes(CopyToTarget, &Side::Absent, &t, 5).is_empty());
    }

    // ---- §4.7 and §4.9: the deletion passes' writes, written out ----

    fn strip() -> Vec<Mutation> {
        vec![Mutation::DeleteFromColumn {
            family: "f".into(),
            qualifier: b"rowkitSync".to_vec(),
            range: None,
        }]
    }

    fn delete_if(predicate: RowFilter) -> ConditionalWrite {
        ConditionalWrite {
            predicate,
            true_mutations: vec![Mutation::DeleteFromRow],
            false_mutations: vec![],
        }
    }

    fn strip_if(predicate: RowFilter) -> ConditionalWrite {
        ConditionalWrite {
            predicate,
            true_mutations: strip(),
            false_mutations: vec![],
        }
    }

    /// `AND(HASH_EQ(h), stamp = h)` (a stamp of the hash alone), spelled out.
    fn same_stamped(h: u8) -> RowFilter {
        filters::and(
            filters::hash_eq(&[h; 32]),
            RowFilter::Chain(vec![
                filters::flag("rowkitSync"),
                RowFilter::ValueRange {
                    start: KeyBound::Closed(vec![h; 32]),
                    end: KeyBound::Closed(vec![h; 32]),
                },
            ]),
        )
    }

    /// `Condition(STAMPED, BlockAll, HASH_EQ(h))`, spelled out.
    fn same_unstamped(h: u8) -> RowFilter {
        RowFilter::Condition {
            predicate: Some(Box::new(filters::flag("rowkitSync"))),
            true_filter: Some(Box::new(RowFilter::BlockAll)),
            false_filter: Some(Box::new(filters::hash_eq(&[h; 32]))),
        }
    }

    #[test]
    fn clean_deletes_stamped_from_rows_and_strips_to_stamps() {
        let delete_s = |h| SyncWrite {
            row: PairRow::Source,
            kind: WriteKind::Delete,
            write: delete_if(same_stamped(h)),
        };
        let strip_t = |h| SyncWrite {
            row: PairRow::Target,
            kind: WriteKind::Unstamp,
            write: strip_if(same_stamped(h)),
        };
        let plan = |s, t| clean_writes(&side(s), &side(t));
        // A stamped `s` goes whatever `t` holds; a stamped `t` loses its stamp after it.
        assert_eq!(
            plan(S::St(1), S::St(1)),
            CleanPlan::Writes(vec![delete_s(1), strip_t(1)])
        );
        assert_eq!(
            plan(S::St(1), S::St(2)),
            CleanPlan::Writes(vec![delete_s(1), strip_t(2)])
        );
        assert_eq!(
            plan(S::St(1), S::Un(2)),
            CleanPlan::Writes(vec![delete_s(1)])
        );
        assert_eq!(plan(S::St(1), S::A), CleanPlan::Writes(vec![delete_s(1)]));
        // No `s`: only the stamp of `t`, of any value.
        assert_eq!(plan(S::A, S::St(3)), CleanPlan::Writes(vec![strip_t(3)]));
        assert_eq!(
            plan(S::A, S::Bad(3)),
            CleanPlan::Writes(vec![SyncWrite {
                row: PairRow::Target,
                kind: WriteKind::Unstamp,
                write: strip_if(filters::and(
                    filters::hash_eq(&[3; 32]),
                    RowFilter::Chain(vec![
                        filters::flag("rowkitSync"),
                        RowFilter::ValueRange {
                            start: KeyBound::Closed(vec![0xee; 32]),
                            end: KeyBound::Closed(vec![0xee; 32]),
                        },
                    ]),
                )),
            }])
        );
        assert_eq!(plan(S::A, S::Un(3)), CleanPlan::Writes(vec![]));
        assert_eq!(plan(S::A, S::A), CleanPlan::Writes(vec![]));
        // A straggler in `from` (no stamp, or an invalid one): sync first, `t` untouched.
        for t in [S::A, S::St(1), S::Un(1), S::Un(2), S::St(2)] {
            assert_eq!(plan(S::Un(1), t), CleanPlan::SyncFirst);
            assert_eq!(plan(S::Bad(1), t), CleanPlan::SyncFirst);
        }
        // A late confirmation of `s` beside a later copy on `t` (§12.73): the straggler's
        // newer bytes are synced first, not deleted; a copy on `s` is deleted as any stamp.
        assert_eq!(plan(S::Cf(1), S::Cp(2)), CleanPlan::SyncFirst);
        assert!(matches!(plan(S::Cp(1), S::Cf(2)), CleanPlan::Writes(w) if w.len() == 2));
        assert!(matches!(plan(S::Cf(1), S::Cp(1)), CleanPlan::Writes(w) if w.len() == 2));
    }

    #[test]
    fn abort_deletes_to_rows_and_strips_from_stamps() {
        let delete_t = |p| SyncWrite {
            row: PairRow::Target,
            kind: WriteKind::Delete,
            write: delete_if(p),
        };
        let strip_s = |h| SyncWrite {
            row: PairRow::Source,
            kind: WriteKind::Unstamp,
            write: strip_if(same_stamped(h)),
        };
        let plan = |s, t| abort_writes(&side(s), &side(t));
        assert_eq!(
            plan(S::St(1), S::St(1)),
            vec![delete_t(same_stamped(1)), strip_s(1)]
        );
        // A `to` row changed by a mirror: deleted as read (unstamped).
        assert_eq!(
            plan(S::St(1), S::Un(2)),
            vec![delete_t(same_unstamped(2)), strip_s(1)]
        );
        assert_eq!(plan(S::Un(1), S::St(1)), vec![delete_t(same_stamped(1))]);
        assert_eq!(plan(S::A, S::Un(4)), vec![delete_t(same_unstamped(4))]);
        assert_eq!(plan(S::St(5), S::A), vec![strip_s(5)]);
        assert_eq!(plan(S::Un(5), S::A), vec![]);
        assert_eq!(plan(S::A, S::A), vec![]);
    }

    // ---- §4.1 key mapping ----

    #[test]
    fn maps_masters_and_versions_both_ways() {
        let cases: &[(&str, VFormat, VFormat, &str)] = &[
            ("k", VFormat::V0, VFormat::V1, "\x7fMk"),
            ("", VFormat::V0, VFormat::V1, "\x7fM"),
            ("k\0v1", VFormat::V0, VFormat::V1, "\x7fVk\0v1"),
            ("dir/k", VFormat::V0, VFormat::V1, "\x7fMdir/k"),
            ("\x7fMk", VFormat::V1, VFormat::V0, "k"),
            ("\x7fM", VFormat::V1, VFormat::V0, ""),
            ("\x7fVk\0v1", VFormat::V1, VFormat::V0, "k\0v1"),
            // Same layout: unchanged.
            ("k\0v1", VFormat::V0, VFormat::V0, "k\0v1"),
        ];
        for &(key, from, to, want) in cases {
            assert_eq!(
                map_key("b", key, from, to),
                Ok(want.to_string()),
                "{key:?} {from:?} → {to:?}"
            );
        }
        assert_eq!(
            sync_pair("b", "k\0v1", VFormat::V0, VFormat::V1),
            Ok(SyncPair {
                source_key: "k\0v1".into(),
                target_key: "\x7fVk\0v1".into(),
                source_row: b"b\x00k\x00v1".to_vec(),
                target_row: b"b\x00\x7fVk\x00v1".to_vec(),
            })
        );
    }

    #[test]
    fn every_finding_in_its_direction() {
        let finding = |key: &str, from, to| map_key("b", key, from, to).unwrap_err().id();
        // key_collision: v0 → v1 only, the three prefixes, masters and versions.
        for key in ["\x7fMk", "\x7fVk\0v", "\x7fRk", "\x7fM"] {
            assert_eq!(
                finding(key, VFormat::V0, VFormat::V1),
                "key_collision",
                "{key:?}"
            );
        }
        // … and v1 → v0: an object key starting with a prefix, whose v0 row would be another
        // key's v1 row (§4.1 says this direction cannot collide; it can).
        for key in [
            "\x7fM\x7fMk",
            "\x7fV\x7fVk\0v",
            "\x7fM\x7fRk",
            "\x7fV\x7fM\0v",
        ] {
            assert_eq!(
                finding(key, VFormat::V1, VFormat::V0),
                "key_collision",
                "{key:?}"
            );
        }
        // A prefix byte that is not a whole prefix is no collision.
        assert!(map_key("b", "\x7fM\x7fk", VFormat::V1, VFormat::V0).is_ok());
        // nul_in_object_key: v1 → v0, a master with a NUL, a version with a second NUL.
        assert_eq!(
            finding("\x7fMa\0b", VFormat::V1, VFormat::V0),
            "nul_in_object_key"
        );
        assert_eq!(
            finding("\x7fVa\0b\0v", VFormat::V1, VFormat::V0),
            "nul_in_object_key"
        );
        // … and v0 → v1, a key with two NULs.
        assert_eq!(
            finding("a\0b\0v", VFormat::V0, VFormat::V1),
            "nul_in_object_key"
        );
        // not a from row: a v1 key without prefix, a replay key.
        assert_eq!(finding("k", VFormat::V1, VFormat::V0), "not_in_from_layout");
        assert_eq!(
            finding("\x7fRk", VFormat::V1, VFormat::V0),
            "not_in_from_layout"
        );
    }

    #[test]
    fn key_length_limit_both_ways() {
        // Collection "b": row key = 2 bytes + key. The v0 row key of 4094 bytes has a v1 row
        // of 4096 (the limit); 4095 and 4096 have none.
        let master = |len: usize| "k".repeat(len);
        let ok = master(4092);
        assert_eq!(
            map_key("b", &ok, VFormat::V0, VFormat::V1).map(|k| k.len() + 2),
            Ok(4096)
        );
        for len in [4093, 4094] {
            assert_eq!(
                map_key("b", &master(len), VFormat::V0, VFormat::V1),
                Err(KeyFinding::KeyTooLong {
                    key: master(len),
                    row_key_bytes: len + 4,
                })
            );
        }
        // Versions: "k…k\0v" of 4092 bytes maps; of 4093 it does not.
        let version = |len: usize| alloc::format!("{}\0v", "k".repeat(len - 2));
        assert!(map_key("b", &version(4092), VFormat::V0, VFormat::V1).is_ok());
        assert_eq!(
            map_key("b", &version(4093), VFormat::V0, VFormat::V1)
                .unwrap_err()
                .id(),
            "key_too_long"
        );
        // v1 → v0 shortens: a v1 row key at the limit maps.
        let v1 = alloc::format!("\x7fM{}", "k".repeat(4092));
        assert_eq!(
            map_key("b", &v1, VFormat::V1, VFormat::V0).map(|k| k.len() + 2),
            Ok(4094)
        );
        let v1 = alloc::format!("\x7fV{}\0v", "k".repeat(4090));
        assert_eq!(
            map_key("b", &v1, VFormat::V1, VFormat::V0).map(|k| k.len() + 2),
            Ok(4094)
        );
    }
}
