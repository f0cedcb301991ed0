//! The migration marker and checkpoint of a bucket (`docs/migration.md` §2, §3, §7): the two
//! columns of the bucket's metastore row, their JSON texts with strict decoding, the states
//! and the transitions between them, and the `CheckAndMutateRow`s that change them.
//!
//! The marker is the one fact every aware process and the migrator agree on: which layout is
//! the truth and what writers must do (§3). It is changed only by conditional writes whose
//! predicate is the marker **and** `d:vFormat` as last read (§2.2), so two migrators, a
//! `createBucket` overwrite or a `deleteBucket` never go unnoticed. Decoding is strict (every
//! member checked, unknown members refused): a damaged or hostile marker is a typed error, not
//! a guess.
//!
//! ```
//! use rowkit_codec::objmeta::keys::VFormat;
//! use rowkit_codec::objmeta::migration::marker::{MigrationMarker, MigrationState, RunId};
//! use rowkit_codec::model::Timestamp;
//!
//! let marker = MigrationMarker::new(
//!     RunId(0x3f1c),
//!     VFormat::V0,
//!     VFormat::V1,
//!     MigrationState::Copying,
//!     Timestamp(1_764_428_400_000_000),
//!     90_000_000,
//!     "b-uid",
//! );
//! let text = marker.to_json_text().unwrap();
//! assert_eq!(
//!     text,
//!     r#"{"run":"00000000000000000000000000003f1c","from":"v0","to":"v1","state":"copying","since":1764428400000000,"settle_us":90000000,"bucket_uid":"b-uid"}"#
//! );
//! assert_eq!(MigrationMarker::from_json_bytes(text.as_bytes()), Ok(marker));
//! ```

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use crate::model::{KeyBound, Mutation, Row, RowFilter, Timestamp};
use crate::objmeta::cells::{DOC_FAMILY, filters};
use crate::objmeta::json::{Json, JsonObject};
use crate::objmeta::keys::{METASTORE, VFormat, row_key};
use crate::objmeta::migration::Truth;

/// The column (family [`DOC_FAMILY`]) of the marker on the bucket's metastore row (§2.1).
pub const MARKER_COLUMN: &str = "rowkitMigration";
/// The column (family [`DOC_FAMILY`]) of the checkpoint on the same row (§2.1, §7.1).
pub const CHECKPOINT_COLUMN: &str = "rowkitCheckpoint";
/// The column of the bucket's key format (`objmeta.md` 5.4), part of every marker predicate.
pub const VFORMAT_COLUMN: &str = "vFormat";
/// The column of the bucket's attributes (`objmeta.md` 5.4), whose `uid` names the bucket.
pub const VALUE_COLUMN: &str = "value";
/// The timestamp of the marker and checkpoint cells: a write replaces the column's one cell,
/// so a predicate can name its whole value (§2.1).
pub const MARKER_TIMESTAMP: Timestamp = Timestamp(0);
/// `Δ` when the operator gives none (§2.3, §11 decision 4): 90 s.
pub const DEFAULT_SETTLE_US: i64 = 90_000_000;
/// How long an aware process may cache the marker (§2.3, `marker_ttl`): 5 s.
pub const MARKER_TTL_US: i64 = 5_000_000;
/// The longest an aware write sends writes after the marker read it acts on (§2.3,
/// `max_write`, the default operation deadline): 60 s.
pub const MAX_WRITE_US: i64 = 60_000_000;
/// The longest an aware `AsyncRepair` writes after its scheduling read (§2.3: 15 s + 60 s).
pub const MAX_REPAIR_WRITE_US: i64 = 75_000_000;
/// The clock skew allowed between processes (§2.3): 5 s.
pub const CLOCK_SKEW_US: i64 = 5_000_000;
/// The smallest `Δ` a run accepts (§2.3, §11 decision 4): `marker_ttl + max(max_write, 75 s)
/// + skew` = 85 s; a smaller `--settle` is a usage error.
pub const MIN_SETTLE_US: i64 = MARKER_TTL_US
    + if MAX_WRITE_US > MAX_REPAIR_WRITE_US {
        MAX_WRITE_US
    } else {
        MAX_REPAIR_WRITE_US
    }
    + CLOCK_SKEW_US;
/// How long a checkpoint write holds the run for its owner (§7.1): 10 min.
pub const LEASE_US: i64 = 600_000_000;
/// The largest integer a JSON number holds exactly (`Number.MAX_SAFE_INTEGER`): counters and
/// µs times above it would not read back as written.
pub const MAX_JSON_INTEGER: u64 = (1 << 53) - 1;
/// The prefix of the checkpoint's cursor text (DESIGN.md's key text convention).
const HEX_PREFIX: &str = "hex:";

/// The bucket's metastore row `__metastore‖00‖B`, where the marker lives (§2.1).
pub fn metastore_row(bucket: &str) -> Vec<u8> {
    row_key(METASTORE, bucket)
}

/// The `d:vFormat` cell value a bucket of key format `vf` holds (`"v1"` with its quotes), as
/// `createBucket` writes it and the switch CAS writes it (§4.5).
pub fn vformat_cell(vf: VFormat) -> Vec<u8> {
    Json::str(vf.as_str()).stringify().into_bytes()
}

/// Why a stored marker or checkpoint text is refused, or a typed one cannot be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MigrationRecordError {
    /// The cell is not UTF-8.
    #[error("not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// The text is not JSON.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// The JSON value is not an object.
    #[error("not a JSON object")]
    NotAnObject,
    /// A required member is absent.
    #[error("member {0} is missing")]
    MissingMember(&'static str),
    /// A member this version does not know (refused: an older migrator must not act on a
    /// record it does not fully understand).
    #[error("unknown member {0:?}")]
    UnknownMember(String),
    /// A member of the wrong JSON type.
    #[error("member {member} is not {expected}")]
    WrongType {
        /// The member.
        member: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A number that is not an integer in `0..=2^53−1`.
    #[error("member {member} is not an integer in 0..=2^53-1")]
    BadInteger {
        /// The member.
        member: &'static str,
    },
    /// A run id that is not 32 lowercase hex digits.
    #[error("run id {0:?} is not 32 lowercase hex digits")]
    BadRunId(String),
    /// A state name not in §3.
    #[error("unknown migration state {0:?}")]
    UnknownState(String),
    /// A layout name other than `v0` / `v1`.
    #[error("member {member}: unknown key format {value:?}")]
    UnknownLayout {
        /// `from` or `to`.
        member: &'static str,
        /// The value read.
        value: String,
    },
    /// `from` equals `to`.
    #[error("from and to are both {0}")]
    SameLayout(&'static str),
    /// A string member that must not be empty.
    #[error("member {0} is empty")]
    Empty(&'static str),
    /// A value outside the set a member allows (`role`, `options`).
    #[error("member {member}: unknown value {value:?}")]
    UnknownValue {
        /// The member.
        member: &'static str,
        /// The value read.
        value: String,
    },
    /// A cursor that is not `hex:` followed by lowercase hex digits (an even count).
    #[error("cursor {0:?} is not hex: followed by lowercase hex")]
    BadCursor(String),
    /// A pass number of 0 (passes count from 1).
    #[error("pass is 0; passes count from 1")]
    ZeroPass,
}

type RecordResult<T> = Result<T, MigrationRecordError>;

/// A migration's id: 128 bits from the migrator's seed, written as 32 lowercase hex digits
/// (§2.2). A resumed run keeps it; a different id is another run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(pub u128);

impl RunId {
    /// Parses the marker's text form: exactly 32 lowercase hex digits.
    pub fn parse(text: &str) -> RecordResult<RunId> {
        let bad = || MigrationRecordError::BadRunId(text.to_string());
        if text.len() != 32 || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(bad());
        }
        u128::from_str_radix(text, 16).map(RunId).map_err(|_| bad())
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// An operator's gate (§3): a state that only a command-line promise may enter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// `--switch`: no unaware writer will write during the fence.
    Switch,
    /// `--finish`: no unaware process of the old configuration is left.
    Finish,
}

impl Gate {
    /// The command-line flag that opens it.
    pub fn flag(self) -> &'static str {
        match self {
            Gate::Switch => "--switch",
            Gate::Finish => "--finish",
        }
    }
}

/// The gates a migrator run was given (its `--switch` / `--finish` flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gates {
    /// `--switch` was given.
    pub switch: bool,
    /// `--finish` was given.
    pub finish: bool,
}

impl Gates {
    /// Both gates open (`--switch --finish`: every state in one go).
    pub const ALL: Gates = Gates {
        switch: true,
        finish: true,
    };

    /// Whether `gate` is open.
    pub fn permits(self, gate: Gate) -> bool {
        match gate {
            Gate::Switch => self.switch,
            Gate::Finish => self.finish,
        }
    }
}

/// A migration's state (§3). "No marker" is `None` wherever a state is optional.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MigrationState {
    /// The copy pass: `from` is the truth, writers mirror into `to`.
    Copying,
    /// Verification passes; then waits for the `--switch` gate.
    Verifying,
    /// The fence before the switch: writers pause; the final pass; then the switch CAS.
    Switching,
    /// `to` is the truth; writers mirror back into `from`; sweeps for stragglers.
    Switched,
    /// The `from` layout is being deleted.
    Cleaning,
    /// The rollback fence: the `to` rows are being deleted.
    Aborting,
}

impl MigrationState {
    /// Every state, in §3's order.
    pub const ALL: [MigrationState; 6] = [
        MigrationState::Copying,
        MigrationState::Verifying,
        MigrationState::Switching,
        MigrationState::Switched,
        MigrationState::Cleaning,
        MigrationState::Aborting,
    ];

    /// The marker's text of the state.
    pub fn as_str(self) -> &'static str {
        match self {
            MigrationState::Copying => "copying",
            MigrationState::Verifying => "verifying",
            MigrationState::Switching => "switching",
            MigrationState::Switched => "switched",
            MigrationState::Cleaning => "cleaning",
            MigrationState::Aborting => "aborting",
        }
    }

    /// The state named `text` (exactly as [`MigrationState::as_str`] writes it).
    pub fn parse(text: &str) -> RecordResult<MigrationState> {
        MigrationState::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| MigrationRecordError::UnknownState(text.to_string()))
    }

    /// The layout that is the truth in this state (§3's table).
    pub fn truth(self) -> Truth {
        match self {
            MigrationState::Switched | MigrationState::Cleaning => Truth::To,
            _ => Truth::From,
        }
    }

    /// Whether aware writers pause in this state, and the marker is never cached (§2.3).
    pub fn is_fence(self) -> bool {
        matches!(self, MigrationState::Switching | MigrationState::Aborting)
    }

    /// The gate that must be open to enter this state.
    pub fn gate(self) -> Option<Gate> {
        match self {
            MigrationState::Switching => Some(Gate::Switch),
            MigrationState::Cleaning => Some(Gate::Finish),
            _ => None,
        }
    }

    /// Whether this state may directly follow `previous` (`None`: no marker) — §3's diagram:
    /// start → `copying`; `copying` → `verifying` (pass done); `verifying` → `copying` (a
    /// difference found); `verifying` → `switching` (gate); `switching` → `switched` (the
    /// switch CAS); `switched` → `cleaning` (gate); `copying`, `verifying`, `switching` →
    /// `aborting`; and `switched` → `switching` for the rollback of §4.9 (a run with `from`
    /// and `to` swapped, checked by [`check_marker_change`]).
    ///
    /// `switched` → `aborting` is refused although §3's diagram says "any state before
    /// cleaning": in `switched` the truth is `to` (§3's table) and `aborting` deletes the `to`
    /// rows (§4.9), so it would delete the truth; §4.9 rolls `switched` back by the swapped
    /// run instead.
    pub fn may_follow(self, previous: Option<MigrationState>) -> bool {
        use MigrationState::*;
        matches!(
            (previous, self),
            (None, Copying)
                | (Some(Copying), Verifying)
                | (Some(Verifying), Copying)
                | (Some(Verifying), Switching)
                | (Some(Switching), Switched)
                | (Some(Switched), Cleaning)
                | (Some(Switched), Switching)
                | (Some(Copying | Verifying | Switching), Aborting)
        )
    }

    /// Whether the marker may be removed in this state: at the end of `cleaning` (§4.7) or
    /// of `aborting` (§4.9).
    pub fn may_end(self) -> bool {
        matches!(self, MigrationState::Cleaning | MigrationState::Aborting)
    }
}

impl fmt::Display for MigrationState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state or "no marker", for messages.
struct StateName(Option<MigrationState>);

impl fmt::Display for StateName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(s) => f.write_str(s.as_str()),
            None => f.write_str("(none)"),
        }
    }
}

/// Why a marker change is refused before anything is sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MarkerTransitionError {
    /// §3 has no arrow from `from` to `to`.
    #[error("migration state {} cannot follow {}", StateName(*.to), StateName(*.from))]
    Refused {
        /// The state as read (`None`: no marker).
        from: Option<MigrationState>,
        /// The state asked for (`None`: marker removed).
        to: Option<MigrationState>,
    },
    /// The state asked for needs a gate the run was not given.
    #[error("entering {state} needs {}", .gate.flag())]
    GateClosed {
        /// The state asked for.
        state: MigrationState,
        /// Its gate.
        gate: Gate,
    },
    /// `switched` is entered only by the switch CAS, which also flips `d:vFormat`, and the
    /// switch CAS only enters `switched` (§4.5, invariant 6 of §10.3).
    #[error("the switch CAS is the only way into switched, and it only enters switched")]
    SwitchOnlyBySwitchCas,
    /// A member that stays fixed for a run differs from the marker as read.
    #[error("member {0} of the marker changes within a run")]
    Changed(&'static str),
    /// `from` equals `to`.
    #[error("from and to are both {0}")]
    SameLayout(&'static str),
    /// The bucket's `d:vFormat` is not the one the state requires (`from` while the truth is
    /// `from`, `to` once switched).
    #[error("the bucket's key format is {actual}, the migration needs {expected}")]
    WrongVFormat {
        /// What the state requires.
        expected: &'static str,
        /// What the row holds.
        actual: &'static str,
    },
}

/// Checks a move from state `previous` to `next` (`None`: no marker) against §3 and the gates.
pub fn check_transition(
    previous: Option<MigrationState>,
    next: Option<MigrationState>,
    gates: Gates,
) -> Result<(), MarkerTransitionError> {
    let allowed = match next {
        Some(state) => state.may_follow(previous),
        None => previous.is_some_and(MigrationState::may_end),
    };
    if !allowed {
        return Err(MarkerTransitionError::Refused {
            from: previous,
            to: next,
        });
    }
    if let Some(state) = next
        && let Some(gate) = state.gate()
        && !gates.permits(gate)
    {
        return Err(MarkerTransitionError::GateClosed { state, gate });
    }
    Ok(())
}

/// The trace store's marker role (§2.1); `None` on objmeta markers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerRole {
    /// The marker of the source table.
    Source,
    /// The marker of the target table.
    Target,
}

impl MarkerRole {
    fn as_str(self) -> &'static str {
        match self {
            MarkerRole::Source => "source",
            MarkerRole::Target => "target",
        }
    }
}

/// The trace store's options policy (§5.7); `None` on objmeta markers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionsPolicy {
    /// Stop at the first options row.
    Refuse,
    /// Do not copy options; count them.
    Drop,
}

impl OptionsPolicy {
    fn as_str(self) -> &'static str {
        match self {
            OptionsPolicy::Refuse => "refuse",
            OptionsPolicy::Drop => "drop",
        }
    }
}

/// The marker (§2.2). The trace-store members are optional so that one type can serve both
/// schemas; objmeta markers have none of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrationMarker {
    /// The run.
    pub run: RunId,
    /// The layout being left.
    pub from: VFormat,
    /// The layout being reached.
    pub to: VFormat,
    /// The state.
    pub state: MigrationState,
    /// The migrator's `now` when this state was written (µs).
    pub since: Timestamp,
    /// `Δ` (§2.3) in µs, fixed for the run.
    pub settle_us: i64,
    /// The bucket's `value.uid` when the run began: a metastore row with another uid is
    /// another bucket (§4.8).
    pub bucket_uid: String,
    /// Trace store: the target table.
    pub target_table: Option<String>,
    /// Trace store: the source table.
    pub source_table: Option<String>,
    /// Trace store: which table's marker this is.
    pub role: Option<MarkerRole>,
    /// Trace store md5 → digest-id: the options policy.
    pub options: Option<OptionsPolicy>,
}

/// The marker's members, in the order they are written.
const MARKER_MEMBERS: &[&str] = &[
    "run",
    "from",
    "to",
    "state",
    "since",
    "settle_us",
    "bucket_uid",
    "target_table",
    "source_table",
    "role",
    "options",
];

impl MigrationMarker {
    /// An objmeta marker (no trace-store member).
    pub fn new(
        run: RunId,
        from: VFormat,
        to: VFormat,
        state: MigrationState,
        since: Timestamp,
        settle_us: i64,
        bucket_uid: &str,
    ) -> MigrationMarker {
        MigrationMarker {
            run,
            from,
            to,
            state,
            since,
            settle_us,
            bucket_uid: bucket_uid.to_string(),
            target_table: None,
            source_table: None,
            role: None,
            options: None,
        }
    }

    /// The same run in `state` since `since` (a state change).
    pub fn with_state(&self, state: MigrationState, since: Timestamp) -> MigrationMarker {
        MigrationMarker {
            state,
            since,
            ..self.clone()
        }
    }

    /// The key format `d:vFormat` holds while this marker's state lasts: `from` until the
    /// switch, `to` after.
    pub fn truth_vformat(&self) -> VFormat {
        match self.state.truth() {
            Truth::From => self.from,
            Truth::To => self.to,
        }
    }

    /// The JSON text (objmeta JSON rules, `objmeta.md` 5.3): members in the order of §2.2,
    /// absent optional members omitted. An error when a time or `Δ` is outside
    /// `0..=2^53−1` (it would not read back), or `from == to`, or `bucket_uid` is empty.
    pub fn to_json_text(&self) -> RecordResult<String> {
        if self.from == self.to {
            return Err(MigrationRecordError::SameLayout(self.from.as_str()));
        }
        if self.bucket_uid.is_empty() {
            return Err(MigrationRecordError::Empty("bucket_uid"));
        }
        let mut o = JsonObject::new();
        o.set("run", Json::str(self.run.to_string()));
        o.set("from", Json::str(self.from.as_str()));
        o.set("to", Json::str(self.to.as_str()));
        o.set("state", Json::str(self.state.as_str()));
        o.set("since", integer_json("since", self.since.0)?);
        o.set("settle_us", integer_json("settle_us", self.settle_us)?);
        o.set("bucket_uid", Json::str(self.bucket_uid.as_str()));
        if let Some(t) = &self.target_table {
            o.set("target_table", Json::str(t.as_str()));
        }
        if let Some(t) = &self.source_table {
            o.set("source_table", Json::str(t.as_str()));
        }
        if let Some(r) = self.role {
            o.set("role", Json::str(r.as_str()));
        }
        if let Some(p) = self.options {
            o.set("options", Json::str(p.as_str()));
        }
        Ok(Json::Object(o).stringify())
    }

    /// Decodes a stored marker cell, checking every member: an error names what is wrong.
    /// Optional members may be absent or `null`; unknown members are refused.
    pub fn from_json_bytes(bytes: &[u8]) -> RecordResult<MigrationMarker> {
        let doc = parse_object(bytes)?;
        let o = Members::new(&doc, MARKER_MEMBERS)?;
        let from = layout(&o, "from")?;
        let to = layout(&o, "to")?;
        if from == to {
            return Err(MigrationRecordError::SameLayout(from.as_str()));
        }
        let bucket_uid = o.string("bucket_uid")?;
        if bucket_uid.is_empty() {
            return Err(MigrationRecordError::Empty("bucket_uid"));
        }
        let role = match o.opt_string("role")? {
            None => None,
            Some("source") => Some(MarkerRole::Source),
            Some("target") => Some(MarkerRole::Target),
            Some(other) => {
                return Err(MigrationRecordError::UnknownValue {
                    member: "role",
                    value: other.to_string(),
                });
            }
        };
        let options = match o.opt_string("options")? {
            None => None,
            Some("refuse") => Some(OptionsPolicy::Refuse),
            Some("drop") => Some(OptionsPolicy::Drop),
            Some(other) => {
                return Err(MigrationRecordError::UnknownValue {
                    member: "options",
                    value: other.to_string(),
                });
            }
        };
        Ok(MigrationMarker {
            run: RunId::parse(o.string("run")?)?,
            from,
            to,
            state: MigrationState::parse(o.string("state")?)?,
            since: Timestamp(o.integer_i64("since")?),
            settle_us: o.integer_i64("settle_us")?,
            bucket_uid: bucket_uid.to_string(),
            target_table: o.opt_string("target_table")?.map(String::from),
            source_table: o.opt_string("source_table")?.map(String::from),
            role,
            options,
        })
    }
}

/// A marker change the migrator asks for (§2.2, §4.5, §4.7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarkerChange {
    /// Writes this marker (the start, or a state change other than the switch).
    Write(MigrationMarker),
    /// The switch (§4.5 step 3): this marker (state `switched`) and `d:vFormat` = its `to`,
    /// in one `CheckAndMutateRow`.
    Switch(MigrationMarker),
    /// The end (§4.7, §4.9): the marker and the checkpoint removed.
    Remove,
}

impl MarkerChange {
    /// The marker written (`None` for the removal).
    pub fn marker(&self) -> Option<&MigrationMarker> {
        match self {
            MarkerChange::Write(m) | MarkerChange::Switch(m) => Some(m),
            MarkerChange::Remove => None,
        }
    }
}

/// Checks a marker change before it is sent: the state transition and its gate
/// ([`check_transition`]); `switched` entered by the switch CAS only; within a run `run`,
/// `from`, `to`, `settle_us` and `bucket_uid` stay (except for §4.9's rollback of `switched`,
/// `switched` → `switching` with `from` and `to` swapped, a new run of the same bucket); and
/// the bucket's key format `vformat` (as read) is the one the state as read (or, for the start,
/// the new marker's `from`) requires.
pub fn check_marker_change(
    previous: Option<&MigrationMarker>,
    vformat: VFormat,
    change: &MarkerChange,
    gates: Gates,
) -> Result<(), MarkerTransitionError> {
    let next = change.marker();
    if let Some(n) = next
        && n.from == n.to
    {
        return Err(MarkerTransitionError::SameLayout(n.from.as_str()));
    }
    match change {
        MarkerChange::Write(m) if m.state == MigrationState::Switched => {
            return Err(MarkerTransitionError::SwitchOnlyBySwitchCas);
        }
        MarkerChange::Switch(m) if m.state != MigrationState::Switched => {
            return Err(MarkerTransitionError::SwitchOnlyBySwitchCas);
        }
        _ => {}
    }
    check_transition(previous.map(|p| p.state), next.map(|n| n.state), gates)?;
    let expected = match (previous, next) {
        (Some(p), _) => p.truth_vformat(),
        (None, Some(n)) => n.from,
        (None, None) => vformat,
    };
    if vformat != expected {
        return Err(MarkerTransitionError::WrongVFormat {
            expected: expected.as_str(),
            actual: vformat.as_str(),
        });
    }
    if let (Some(p), Some(n)) = (previous, next) {
        let rollback = p.state == MigrationState::Switched
            && n.state == MigrationState::Switching
            && n.from == p.to
            && n.to == p.from;
        if n.bucket_uid != p.bucket_uid {
            return Err(MarkerTransitionError::Changed("bucket_uid"));
        }
        if !rollback {
            for (member, same) in [
                ("run", n.run == p.run),
                ("from", n.from == p.from),
                ("to", n.to == p.to),
                ("settle_us", n.settle_us == p.settle_us),
            ] {
                if !same {
                    return Err(MarkerTransitionError::Changed(member));
                }
            }
        }
    }
    Ok(())
}

/// The counters of a pass (§7.1, §7.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassCounters {
    /// Rows read by the pass so far.
    pub rows_scanned: u64,
    /// Rows copied.
    pub copied: u64,
    /// Rows deleted.
    pub deleted: u64,
    /// Rows stamped.
    pub stamped: u64,
    /// Pairs found in sync.
    pub unchanged: u64,
    /// Straggler writes adopted.
    pub stragglers: u64,
    /// Conflicts reported.
    pub conflicts: u64,
}

/// The checkpoint (§7.1): where the current pass is and who runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrationCheckpoint {
    /// The run.
    pub run: RunId,
    /// The state the pass belongs to.
    pub state: MigrationState,
    /// The pass number, from 1.
    pub pass: u64,
    /// The last Arsenal key (bytes) whose page is completely synced; `None` before the first
    /// page. Written as `hex:` and lowercase hex.
    pub cursor: Option<Vec<u8>>,
    /// The migrator holding the run (`host:pid`).
    pub owner: String,
    /// Until when `owner` holds the run (µs); renewed by every checkpoint write.
    pub lease_until: Timestamp,
    /// The pass's counters.
    pub counters: PassCounters,
    /// Rows the previous pass scanned (the ETA's total), `None` in the first pass.
    pub pass_rows_previous: Option<u64>,
    /// When the run began (µs).
    pub started: Timestamp,
    /// When this checkpoint was written (µs).
    pub updated: Timestamp,
}

/// The checkpoint's members, in the order they are written.
const CHECKPOINT_MEMBERS: &[&str] = &[
    "run",
    "state",
    "pass",
    "cursor",
    "owner",
    "lease_until",
    "rows_scanned",
    "copied",
    "deleted",
    "stamped",
    "unchanged",
    "stragglers",
    "conflicts",
    "pass_rows_previous",
    "started",
    "updated",
];

impl MigrationCheckpoint {
    /// The JSON text, members in the order of §7.1; `cursor` and `pass_rows_previous` are
    /// `null` when absent. An error for a count or time outside `0..=2^53−1`, pass 0 or an
    /// empty owner.
    pub fn to_json_text(&self) -> RecordResult<String> {
        if self.pass == 0 {
            return Err(MigrationRecordError::ZeroPass);
        }
        if self.owner.is_empty() {
            return Err(MigrationRecordError::Empty("owner"));
        }
        let c = &self.counters;
        let mut o = JsonObject::new();
        o.set("run", Json::str(self.run.to_string()));
        o.set("state", Json::str(self.state.as_str()));
        o.set("pass", count_json("pass", self.pass)?);
        o.set(
            "cursor",
            self.cursor.as_ref().map_or(Json::Null, |k| {
                Json::str(alloc::format!("{HEX_PREFIX}{}", hex::encode(k)))
            }),
        );
        o.set("owner", Json::str(self.owner.as_str()));
        o.set(
            "lease_until",
            integer_json("lease_until", self.lease_until.0)?,
        );
        for (name, value) in [
            ("rows_scanned", c.rows_scanned),
            ("copied", c.copied),
            ("deleted", c.deleted),
            ("stamped", c.stamped),
            ("unchanged", c.unchanged),
            ("stragglers", c.stragglers),
            ("conflicts", c.conflicts),
        ] {
            o.set(name, count_json(name, value)?);
        }
        o.set(
            "pass_rows_previous",
            match self.pass_rows_previous {
                Some(n) => count_json("pass_rows_previous", n)?,
                None => Json::Null,
            },
        );
        o.set("started", integer_json("started", self.started.0)?);
        o.set("updated", integer_json("updated", self.updated.0)?);
        Ok(Json::Object(o).stringify())
    }

    /// Decodes a stored checkpoint cell, checking every member (unknown members refused;
    /// `cursor` and `pass_rows_previous` may be `null` or absent).
    pub fn from_json_bytes(bytes: &[u8]) -> RecordResult<MigrationCheckpoint> {
        let doc = parse_object(bytes)?;
        let o = Members::new(&doc, CHECKPOINT_MEMBERS)?;
        let pass = o.integer("pass")?;
        if pass == 0 {
            return Err(MigrationRecordError::ZeroPass);
        }
        let owner = o.string("owner")?;
        if owner.is_empty() {
            return Err(MigrationRecordError::Empty("owner"));
        }
        let cursor = match o.opt_string("cursor")? {
            None => None,
            Some(text) => Some(parse_cursor(text)?),
        };
        Ok(MigrationCheckpoint {
            run: RunId::parse(o.string("run")?)?,
            state: MigrationState::parse(o.string("state")?)?,
            pass,
            cursor,
            owner: owner.to_string(),
            lease_until: Timestamp(o.integer_i64("lease_until")?),
            counters: PassCounters {
                rows_scanned: o.integer("rows_scanned")?,
                copied: o.integer("copied")?,
                deleted: o.integer("deleted")?,
                stamped: o.integer("stamped")?,
                unchanged: o.integer("unchanged")?,
                stragglers: o.integer("stragglers")?,
                conflicts: o.integer("conflicts")?,
            },
            pass_rows_previous: o.opt_integer("pass_rows_previous")?,
            started: Timestamp(o.integer_i64("started")?),
            updated: Timestamp(o.integer_i64("updated")?),
        })
    }
}

/// `hex:` + lowercase hex → bytes.
fn parse_cursor(text: &str) -> RecordResult<Vec<u8>> {
    let bad = || MigrationRecordError::BadCursor(text.to_string());
    let digits = text.strip_prefix(HEX_PREFIX).ok_or_else(bad)?;
    if digits.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(bad());
    }
    hex::decode(digits).map_err(|_| bad())
}

fn integer_json(member: &'static str, value: i64) -> RecordResult<Json> {
    u64::try_from(value)
        .map_err(|_| MigrationRecordError::BadInteger { member })
        .and_then(|v| count_json(member, v))
}

fn count_json(member: &'static str, value: u64) -> RecordResult<Json> {
    if value > MAX_JSON_INTEGER {
        return Err(MigrationRecordError::BadInteger { member });
    }
    // Exact: the value fits the double's 53-bit mantissa.
    Ok(Json::Number(value as f64))
}

fn parse_object(bytes: &[u8]) -> RecordResult<JsonObject> {
    let text = core::str::from_utf8(bytes).map_err(|e| MigrationRecordError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    match Json::parse(text) {
        Ok(Json::Object(o)) => Ok(o),
        Ok(_) => Err(MigrationRecordError::NotAnObject),
        Err(e) => Err(MigrationRecordError::Json(e.to_string())),
    }
}

fn layout(o: &Members<'_>, member: &'static str) -> RecordResult<VFormat> {
    let value = o.string(member)?;
    VFormat::parse(value).map_err(|_| MigrationRecordError::UnknownLayout {
        member,
        value: value.to_string(),
    })
}

/// An object's members read by name, every member known (strict decoding).
struct Members<'a>(&'a JsonObject);

impl<'a> Members<'a> {
    fn new(o: &'a JsonObject, known: &[&str]) -> RecordResult<Members<'a>> {
        if let Some((name, _)) = o.iter().find(|(n, _)| !known.contains(n)) {
            return Err(MigrationRecordError::UnknownMember(name.to_string()));
        }
        Ok(Members(o))
    }

    /// A member that may be absent or `null`.
    fn optional(&self, member: &'static str) -> Option<&'a Json> {
        self.0.get(member).filter(|v| **v != Json::Null)
    }

    fn required(&self, member: &'static str) -> RecordResult<&'a Json> {
        self.0
            .get(member)
            .ok_or(MigrationRecordError::MissingMember(member))
    }

    fn string(&self, member: &'static str) -> RecordResult<&'a str> {
        as_string(member, self.required(member)?)
    }

    fn opt_string(&self, member: &'static str) -> RecordResult<Option<&'a str>> {
        self.optional(member)
            .map(|v| as_string(member, v))
            .transpose()
    }

    fn integer(&self, member: &'static str) -> RecordResult<u64> {
        as_integer(member, self.required(member)?)
    }

    fn integer_i64(&self, member: &'static str) -> RecordResult<i64> {
        // At most 2^53 − 1: always an i64.
        self.integer(member)
            .and_then(|v| i64::try_from(v).map_err(|_| MigrationRecordError::BadInteger { member }))
    }

    fn opt_integer(&self, member: &'static str) -> RecordResult<Option<u64>> {
        self.optional(member)
            .map(|v| as_integer(member, v))
            .transpose()
    }
}

fn as_string<'a>(member: &'static str, v: &'a Json) -> RecordResult<&'a str> {
    v.as_str().ok_or(MigrationRecordError::WrongType {
        member,
        expected: "a string",
    })
}

fn as_integer(member: &'static str, v: &Json) -> RecordResult<u64> {
    let Json::Number(n) = v else {
        return Err(MigrationRecordError::WrongType {
            member,
            expected: "a number",
        });
    };
    let n = *n;
    // `n as u64` truncates (and maps NaN to 0), so an integer in range is one it keeps
    // (`f64::fract` needs std).
    if !(0.0..=MAX_JSON_INTEGER as f64).contains(&n) || (n as u64) as f64 != n {
        return Err(MigrationRecordError::BadInteger { member });
    }
    Ok(n as u64)
}

/// The migration's columns of the metastore row as read, raw: the bytes a predicate must name
/// (never re-encoded: another writer's text may differ from ours byte for byte).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MigrationColumns {
    /// `d:value` (the bucket's attributes); `None`: the row is not a bucket.
    pub value: Option<Vec<u8>>,
    /// `d:vFormat`.
    pub vformat: Option<Vec<u8>>,
    /// `d:rowkitMigration`.
    pub marker: Option<Vec<u8>>,
    /// `d:rowkitCheckpoint`.
    pub checkpoint: Option<Vec<u8>>,
}

impl MigrationColumns {
    /// The newest cell of each column in `row` (read with `LatestN(1)`).
    pub fn from_row(row: &Row) -> MigrationColumns {
        let cell = |q: &str| {
            row.cells
                .iter()
                .find(|c| c.family == DOC_FAMILY && c.qualifier == q.as_bytes())
                .map(|c| c.value.clone())
        };
        MigrationColumns {
            value: cell(VALUE_COLUMN),
            vformat: cell(VFORMAT_COLUMN),
            marker: cell(MARKER_COLUMN),
            checkpoint: cell(CHECKPOINT_COLUMN),
        }
    }

    /// The bucket's key format as Arsenal reads it (`objmeta.md` 4.3): `v1` only for the
    /// cell `"v1"`; absent or anything else is v0.
    pub fn vformat(&self) -> VFormat {
        let text = self.vformat.as_deref().map(String::from_utf8_lossy);
        match text.as_deref().map(Json::parse) {
            Some(Ok(Json::String(s))) => VFormat::from_stored(&s),
            _ => VFormat::V0,
        }
    }
}

/// `Chain(Family(family), Column(qualifier))`: the column has a cell.
pub fn column_present(family: &str, qualifier: &str) -> RowFilter {
    RowFilter::Chain(vec![
        RowFilter::FamilyNameRegex(family.to_string()),
        RowFilter::ColumnQualifierRegex(qualifier.as_bytes().to_vec()),
    ])
}

/// `VALUE_EQ(col, v) = Chain(Family, Column(col), ValueRange([v, v]))` (§2.2): the column's
/// cell holds exactly `v`. (Family and qualifier are regexes; the ones used here have no
/// metacharacter.)
pub fn value_eq(family: &str, qualifier: &str, value: &[u8]) -> RowFilter {
    RowFilter::Chain(vec![
        RowFilter::FamilyNameRegex(family.to_string()),
        RowFilter::ColumnQualifierRegex(qualifier.as_bytes().to_vec()),
        RowFilter::ValueRange {
            start: KeyBound::Closed(value.to_vec()),
            end: KeyBound::Closed(value.to_vec()),
        },
    ])
}

/// A `d:` column "as last read": [`value_eq`] of the bytes read, or for a column read absent
/// `Condition(column present, BlockAll, EXISTS)` — still absent, on a row that still has its
/// `d:value` (a deleted bucket does not match).
pub fn column_as_read(qualifier: &str, value: Option<&[u8]>) -> RowFilter {
    match value {
        Some(v) => value_eq(DOC_FAMILY, qualifier, v),
        None => RowFilter::Condition {
            predicate: Some(Box::new(column_present(DOC_FAMILY, qualifier))),
            true_filter: Some(Box::new(RowFilter::BlockAll)),
            false_filter: Some(Box::new(filters::exists())),
        },
    }
}

/// The predicate of every marker change (§2.2): `AND(marker as last read, d:vFormat as last
/// read)`, each [`column_as_read`].
pub fn marker_predicate(marker: Option<&[u8]>, vformat: Option<&[u8]>) -> RowFilter {
    filters::and(
        column_as_read(MARKER_COLUMN, marker),
        column_as_read(VFORMAT_COLUMN, vformat),
    )
}

/// One conditional write of the metastore row (a `CheckAndMutateRow` without its row key and
/// table). `true_mutations` apply when the predicate matches.
#[derive(Clone, Debug, PartialEq)]
pub struct MetastoreCas {
    /// The predicate.
    pub predicate: RowFilter,
    /// Applied when it matches.
    pub true_mutations: Vec<Mutation>,
    /// Applied when it does not.
    pub false_mutations: Vec<Mutation>,
}

fn set_doc_cell(qualifier: &str, value: Vec<u8>) -> Mutation {
    Mutation::set_cell(DOC_FAMILY, qualifier.as_bytes(), MARKER_TIMESTAMP, value)
}

fn delete_doc_column(qualifier: &str) -> Mutation {
    Mutation::DeleteFromColumn {
        family: DOC_FAMILY.to_string(),
        qualifier: qualifier.as_bytes().to_vec(),
        range: None,
    }
}

impl MetastoreCas {
    /// A state change (or the start): `Set(d, rowkitMigration, 0, marker_text)` under
    /// [`marker_predicate`].
    pub fn write_marker(
        marker_as_read: Option<&[u8]>,
        vformat_as_read: Option<&[u8]>,
        marker_text: &str,
    ) -> MetastoreCas {
        MetastoreCas {
            predicate: marker_predicate(marker_as_read, vformat_as_read),
            true_mutations: vec![set_doc_cell(MARKER_COLUMN, marker_text.as_bytes().to_vec())],
            false_mutations: vec![],
        }
    }

    /// The switch (§4.5 step 3): `Set(d, vFormat, 0, "to")` and `Set(d, rowkitMigration, 0,
    /// switched_text)` in one request, under [`marker_predicate`].
    pub fn switch(
        marker_as_read: Option<&[u8]>,
        vformat_as_read: Option<&[u8]>,
        to: VFormat,
        switched_text: &str,
    ) -> MetastoreCas {
        MetastoreCas {
            predicate: marker_predicate(marker_as_read, vformat_as_read),
            true_mutations: vec![
                set_doc_cell(VFORMAT_COLUMN, vformat_cell(to)),
                set_doc_cell(MARKER_COLUMN, switched_text.as_bytes().to_vec()),
            ],
            false_mutations: vec![],
        }
    }

    /// The end (§4.7's last step, §4.9): `DeleteFromColumn` of the marker and the checkpoint,
    /// under [`marker_predicate`] (§4.7 names the marker; §2.2 adds `d:vFormat` to every
    /// marker change).
    pub fn remove(marker_as_read: Option<&[u8]>, vformat_as_read: Option<&[u8]>) -> MetastoreCas {
        MetastoreCas {
            predicate: marker_predicate(marker_as_read, vformat_as_read),
            true_mutations: vec![
                delete_doc_column(MARKER_COLUMN),
                delete_doc_column(CHECKPOINT_COLUMN),
            ],
            false_mutations: vec![],
        }
    }

    /// A checkpoint write (§7.1): `Set(d, rowkitCheckpoint, 0, text)` in `true_mutations` when
    /// the checkpoint column still holds `previous` (`VALUE_EQ`). With no previous checkpoint the
    /// predicate is `Condition(checkpoint present, BlockAll, marker present)`: still no
    /// checkpoint **and** a marker — rather than §7.1's "EXISTS-on-that-column, write in
    /// `false_mutations`", which would also write on a deleted bucket's absent row (creating a
    /// metastore row without `d:value`) or on a row whose marker was removed.
    pub fn write_checkpoint(previous: Option<&[u8]>, text: &str) -> MetastoreCas {
        let predicate = match previous {
            Some(v) => value_eq(DOC_FAMILY, CHECKPOINT_COLUMN, v),
            None => RowFilter::Condition {
                predicate: Some(Box::new(column_present(DOC_FAMILY, CHECKPOINT_COLUMN))),
                true_filter: Some(Box::new(RowFilter::BlockAll)),
                false_filter: Some(Box::new(column_present(DOC_FAMILY, MARKER_COLUMN))),
            },
        };
        MetastoreCas {
            predicate,
            true_mutations: vec![set_doc_cell(CHECKPOINT_COLUMN, text.as_bytes().to_vec())],
            false_mutations: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use MigrationState::*;

    const RUN_HEX: &str = "3f1c0000000000000000000000000abc";
    const RUN: RunId = RunId(0x3f1c_0000_0000_0000_0000_0000_0000_0abc);

    fn marker() -> MigrationMarker {
        MigrationMarker::new(
            RUN,
            VFormat::V0,
            VFormat::V1,
            Copying,
            Timestamp(1_764_428_400_000_000),
            90_000_000,
            "8a3f-uid",
        )
    }

    const MARKER_TEXT: &str = r#"{"run":"3f1c0000000000000000000000000abc","from":"v0","to":"v1","state":"copying","since":1764428400000000,"settle_us":90000000,"bucket_uid":"8a3f-uid"}"#;

    fn checkpoint() -> MigrationCheckpoint {
        MigrationCheckpoint {
            run: RUN,
            state: Copying,
            pass: 1,
            cursor: Some(b"photos/2024\x00x".to_vec()),
            owner: "host:42".into(),
            lease_until: Timestamp(1_764_429_000_000_000),
            counters: PassCounters {
                rows_scanned: 1000,
                copied: 990,
                deleted: 1,
                stamped: 2,
                unchanged: 3,
                stragglers: 0,
                conflicts: 4,
            },
            pass_rows_previous: None,
            started: Timestamp(1_764_428_400_000_000),
            updated: Timestamp(1_764_428_460_000_000),
        }
    }

    const CHECKPOINT_TEXT: &str = r#"{"run":"3f1c0000000000000000000000000abc","state":"copying","pass":1,"cursor":"hex:70686f746f732f323032340078","owner":"host:42","lease_until":1764429000000000,"rows_scanned":1000,"copied":990,"deleted":1,"stamped":2,"unchanged":3,"stragglers":0,"conflicts":4,"pass_rows_previous":null,"started":1764428400000000,"updated":1764428460000000}"#;

    #[test]
    fn marker_json_round_trip() {
        assert_eq!(marker().to_json_text().unwrap(), MARKER_TEXT);
        assert_eq!(
            MigrationMarker::from_json_bytes(MARKER_TEXT.as_bytes()),
            Ok(marker())
        );
        assert_eq!(RUN.to_string(), RUN_HEX);
        assert_eq!(RunId(1).to_string(), "00000000000000000000000000000001");
    }

    #[test]
    fn marker_with_trace_store_members_round_trips() {
        let m = MigrationMarker {
            target_table: Some("T2".into()),
            source_table: Some("T1".into()),
            role: Some(MarkerRole::Source),
            options: Some(OptionsPolicy::Drop),
            ..marker()
        };
        let text = m.to_json_text().unwrap();
        assert_eq!(
            text,
            r#"{"run":"3f1c0000000000000000000000000abc","from":"v0","to":"v1","state":"copying","since":1764428400000000,"settle_us":90000000,"bucket_uid":"8a3f-uid","target_table":"T2","source_table":"T1","role":"source","options":"drop"}"#
        );
        assert_eq!(MigrationMarker::from_json_bytes(text.as_bytes()), Ok(m));
        // null optional members read as absent (§2.2's example writes `"target_table":null`).
        let with_nulls = r#"{"run":"3f1c0000000000000000000000000abc","from":"v0","to":"v1","state":"copying","since":1764428400000000,"settle_us":90000000,"bucket_uid":"8a3f-uid","target_table":null,"role":null}"#;
        assert_eq!(
            MigrationMarker::from_json_bytes(with_nulls.as_bytes()),
            Ok(marker())
        );
    }

    /// `MARKER_TEXT` with `old` replaced by `new` (each test names the one change it makes).
    fn damaged(old: &str, new: &str) -> Result<MigrationMarker, MigrationRecordError> {
        assert!(MARKER_TEXT.contains(old), "{old}");
        MigrationMarker::from_json_bytes(MARKER_TEXT.replacen(old, new, 1).as_bytes())
    }

    #[test]
    fn marker_decoding_errors() {
        use MigrationRecordError as E;
        assert_eq!(
            MigrationMarker::from_json_bytes(b"\xff{}"),
            Err(E::NotUtf8 { offset: 0 })
        );
        assert!(matches!(
            MigrationMarker::from_json_bytes(b"{\"run\":"),
            Err(E::Json(_))
        ));
        assert_eq!(
            MigrationMarker::from_json_bytes(b"[1]"),
            Err(E::NotAnObject)
        );
        assert_eq!(
            MigrationMarker::from_json_bytes(b"{}"),
            Err(E::MissingMember("from"))
        );
        assert_eq!(
            damaged(r#","bucket_uid":"8a3f-uid""#, ""),
            Err(E::MissingMember("bucket_uid"))
        );
        assert_eq!(
            damaged(r#""state":"copying""#, r#""state":"copying","extra":1"#),
            Err(E::UnknownMember("extra".into()))
        );
        assert_eq!(
            damaged(r#""state":"copying""#, r#""state":"paused""#),
            Err(E::UnknownState("paused".into()))
        );
        assert_eq!(
            damaged(r#""state":"copying""#, r#""state":"Copying""#),
            Err(E::UnknownState("Copying".into()))
        );
        assert_eq!(
            damaged(r#""state":"copying""#, r#""state":3"#),
            Err(E::WrongType {
                member: "state",
                expected: "a string"
            })
        );
        assert_eq!(
            damaged(RUN_HEX, "3F1C0000000000000000000000000ABC"),
            Err(E::BadRunId("3F1C0000000000000000000000000ABC".into()))
        );
        assert_eq!(damaged(RUN_HEX, "3f1c"), Err(E::BadRunId("3f1c".into())));
        assert_eq!(
            damaged(RUN_HEX, "3f1c000000000000000000000000zabc"),
            Err(E::BadRunId("3f1c000000000000000000000000zabc".into()))
        );
        assert_eq!(
            damaged(r#""to":"v1""#, r#""to":"v0""#),
            Err(E::SameLayout("v0"))
        );
        assert_eq!(
            damaged(r#""to":"v1""#, r#""to":"v2""#),
            Err(E::UnknownLayout {
                member: "to",
                value: "v2".into()
            })
        );
        assert_eq!(
            damaged(r#""since":1764428400000000"#, r#""since":-1"#),
            Err(E::BadInteger { member: "since" })
        );
        assert_eq!(
            damaged(r#""since":1764428400000000"#, r#""since":1.5"#),
            Err(E::BadInteger { member: "since" })
        );
        assert_eq!(
            damaged(r#""since":1764428400000000"#, r#""since":9007199254740992"#),
            Err(E::BadInteger { member: "since" })
        );
        assert_eq!(
            damaged(r#""settle_us":90000000"#, r#""settle_us":"90s""#),
            Err(E::WrongType {
                member: "settle_us",
                expected: "a number"
            })
        );
        assert_eq!(
            damaged(r#""since":1764428400000000"#, r#""since":null"#),
            Err(E::WrongType {
                member: "since",
                expected: "a number"
            })
        );
        assert_eq!(
            damaged(r#""bucket_uid":"8a3f-uid""#, r#""bucket_uid":"""#),
            Err(E::Empty("bucket_uid"))
        );
        assert_eq!(
            damaged(
                r#""bucket_uid":"8a3f-uid""#,
                r#""bucket_uid":"u","role":"middle""#
            ),
            Err(E::UnknownValue {
                member: "role",
                value: "middle".into()
            })
        );
        assert_eq!(
            damaged(
                r#""bucket_uid":"8a3f-uid""#,
                r#""bucket_uid":"u","options":"keep""#
            ),
            Err(E::UnknownValue {
                member: "options",
                value: "keep".into()
            })
        );
    }

    #[test]
    fn marker_encoding_refuses_what_would_not_read_back() {
        use MigrationRecordError as E;
        let m = MigrationMarker {
            since: Timestamp(-1),
            ..marker()
        };
        assert_eq!(m.to_json_text(), Err(E::BadInteger { member: "since" }));
        let m = MigrationMarker {
            settle_us: 1 << 53,
            ..marker()
        };
        assert_eq!(
            m.to_json_text(),
            Err(E::BadInteger {
                member: "settle_us"
            })
        );
        let m = MigrationMarker {
            to: VFormat::V0,
            ..marker()
        };
        assert_eq!(m.to_json_text(), Err(E::SameLayout("v0")));
        let m = MigrationMarker {
            bucket_uid: String::new(),
            ..marker()
        };
        assert_eq!(m.to_json_text(), Err(E::Empty("bucket_uid")));
    }

    #[test]
    fn checkpoint_json_round_trip() {
        assert_eq!(checkpoint().to_json_text().unwrap(), CHECKPOINT_TEXT);
        assert_eq!(
            MigrationCheckpoint::from_json_bytes(CHECKPOINT_TEXT.as_bytes()),
            Ok(checkpoint())
        );
        let first = MigrationCheckpoint {
            cursor: None,
            pass_rows_previous: Some(7),
            pass: 2,
            ..checkpoint()
        };
        let text = first.to_json_text().unwrap();
        assert!(text.contains(r#""pass":2,"cursor":null,"#), "{text}");
        assert!(text.contains(r#""pass_rows_previous":7,"#), "{text}");
        assert_eq!(
            MigrationCheckpoint::from_json_bytes(text.as_bytes()),
            Ok(first)
        );
        // An empty key (the first Arsenal key of a bucket can be "") is `hex:`.
        let empty = MigrationCheckpoint {
            cursor: Some(vec![]),
            ..checkpoint()
        };
        let text = empty.to_json_text().unwrap();
        assert!(text.contains(r#""cursor":"hex:","#), "{text}");
        assert_eq!(
            MigrationCheckpoint::from_json_bytes(text.as_bytes()),
            Ok(empty)
        );
    }

    fn damaged_checkpoint(
        old: &str,
        new: &str,
    ) -> Result<MigrationCheckpoint, MigrationRecordError> {
        assert!(CHECKPOINT_TEXT.contains(old), "{old}");
        MigrationCheckpoint::from_json_bytes(CHECKPOINT_TEXT.replacen(old, new, 1).as_bytes())
    }

    #[test]
    fn checkpoint_decoding_errors() {
        use MigrationRecordError as E;
        let cursor = r#""cursor":"hex:70686f746f732f323032340078""#;
        for bad in [
            r#""cursor":"70686f746f""#,
            r#""cursor":"hex:7""#,
            r#""cursor":"hex:7G""#,
            r#""cursor":"hex:7A""#,
        ] {
            let text = bad
                .trim_start_matches(r#""cursor":""#)
                .trim_end_matches('"');
            assert_eq!(
                damaged_checkpoint(cursor, bad),
                Err(E::BadCursor(text.into())),
                "{bad}"
            );
        }
        assert_eq!(
            damaged_checkpoint(r#""pass":1"#, r#""pass":0"#),
            Err(E::ZeroPass)
        );
        assert_eq!(
            damaged_checkpoint(r#""owner":"host:42""#, r#""owner":"""#),
            Err(E::Empty("owner"))
        );
        assert_eq!(
            damaged_checkpoint(r#""copied":990,"#, ""),
            Err(E::MissingMember("copied"))
        );
        assert_eq!(
            damaged_checkpoint(r#""conflicts":4"#, r#""conflicts":-4"#),
            Err(E::BadInteger {
                member: "conflicts"
            })
        );
        assert_eq!(
            damaged_checkpoint(r#""state":"copying""#, r#""state":"done""#),
            Err(E::UnknownState("done".into()))
        );
        assert_eq!(
            damaged_checkpoint(r#""updated":1764428460000000"#, r#""updated":1,"lease":2"#),
            Err(E::UnknownMember("lease".into()))
        );
        assert_eq!(
            damaged_checkpoint(
                r#""pass_rows_previous":null"#,
                r#""pass_rows_previous":"x""#
            ),
            Err(E::WrongType {
                member: "pass_rows_previous",
                expected: "a number"
            })
        );
    }

    /// §3's diagram, written out: every (previous, next) pair that is allowed.
    const ALLOWED: &[(Option<MigrationState>, Option<MigrationState>)] = &[
        (None, Some(Copying)),
        (Some(Copying), Some(Verifying)),
        (Some(Verifying), Some(Copying)),
        (Some(Verifying), Some(Switching)),
        (Some(Switching), Some(Switched)),
        (Some(Switched), Some(Cleaning)),
        (Some(Switched), Some(Switching)),
        (Some(Copying), Some(Aborting)),
        (Some(Verifying), Some(Aborting)),
        (Some(Switching), Some(Aborting)),
        (Some(Cleaning), None),
        (Some(Aborting), None),
    ];

    #[test]
    fn every_transition_allowed_or_refused() {
        let mut all = vec![None];
        all.extend(MigrationState::ALL.into_iter().map(Some));
        let mut allowed = 0;
        for &from in &all {
            for &to in &all {
                let expected = ALLOWED.contains(&(from, to));
                let got = check_transition(from, to, Gates::ALL);
                if expected {
                    allowed += 1;
                    assert_eq!(got, Ok(()), "{from:?} -> {to:?}");
                } else {
                    assert_eq!(
                        got,
                        Err(MarkerTransitionError::Refused { from, to }),
                        "{from:?} -> {to:?}"
                    );
                }
            }
        }
        assert_eq!(allowed, ALLOWED.len());
        // Refused on purpose although §3 says "any state before cleaning": it deletes the truth.
        assert!(!Aborting.may_follow(Some(Switched)));
        assert_eq!(
            check_transition(Some(Switched), Some(Aborting), Gates::ALL)
                .unwrap_err()
                .to_string(),
            "migration state aborting cannot follow switched"
        );
        assert_eq!(
            check_transition(None, None, Gates::ALL)
                .unwrap_err()
                .to_string(),
            "migration state (none) cannot follow (none)"
        );
    }

    #[test]
    fn gates() {
        let none = Gates::default();
        assert_eq!(
            check_transition(Some(Verifying), Some(Switching), none),
            Err(MarkerTransitionError::GateClosed {
                state: Switching,
                gate: Gate::Switch
            })
        );
        assert_eq!(
            check_transition(
                Some(Switched),
                Some(Cleaning),
                Gates {
                    switch: true,
                    finish: false
                }
            ),
            Err(MarkerTransitionError::GateClosed {
                state: Cleaning,
                gate: Gate::Finish
            })
        );
        assert_eq!(
            check_transition(Some(Switched), Some(Switching), none),
            Err(MarkerTransitionError::GateClosed {
                state: Switching,
                gate: Gate::Switch
            })
        );
        let switch_only = Gates {
            switch: true,
            finish: false,
        };
        assert_eq!(
            check_transition(Some(Verifying), Some(Switching), switch_only),
            Ok(())
        );
        for (from, to) in [
            (None, Some(Copying)),
            (Some(Copying), Some(Verifying)),
            (Some(Switching), Some(Switched)),
            (Some(Copying), Some(Aborting)),
            (Some(Aborting), None),
        ] {
            assert_eq!(
                check_transition(from, to, none),
                Ok(()),
                "{from:?} -> {to:?}"
            );
        }
        assert_eq!(
            check_transition(Some(Switched), Some(Cleaning), none)
                .unwrap_err()
                .to_string(),
            "entering cleaning needs --finish"
        );
    }

    #[test]
    fn state_properties() {
        assert_eq!(
            MigrationState::ALL.map(MigrationState::as_str),
            [
                "copying",
                "verifying",
                "switching",
                "switched",
                "cleaning",
                "aborting"
            ]
        );
        assert_eq!(
            MigrationState::ALL.map(MigrationState::truth),
            [
                Truth::From,
                Truth::From,
                Truth::From,
                Truth::To,
                Truth::To,
                Truth::From
            ]
        );
        assert_eq!(
            MigrationState::ALL.map(MigrationState::is_fence),
            [false, false, true, false, false, true]
        );
        for s in MigrationState::ALL {
            assert_eq!(MigrationState::parse(s.as_str()), Ok(s));
        }
    }

    #[test]
    fn marker_changes() {
        use MarkerTransitionError as E;
        let copying = marker();
        let verifying = copying.with_state(Verifying, Timestamp(2));
        let switching = copying.with_state(Switching, Timestamp(3));
        let switched = copying.with_state(Switched, Timestamp(4));
        let all = Gates::ALL;
        let w = |m: &MigrationMarker| MarkerChange::Write(m.clone());
        assert_eq!(
            check_marker_change(None, VFormat::V0, &w(&copying), all),
            Ok(())
        );
        assert_eq!(
            check_marker_change(None, VFormat::V1, &w(&copying), all),
            Err(E::WrongVFormat {
                expected: "v0",
                actual: "v1"
            })
        );
        assert_eq!(
            check_marker_change(Some(&copying), VFormat::V0, &w(&verifying), all),
            Ok(())
        );
        let other_run = MigrationMarker {
            run: RunId(9),
            ..verifying.clone()
        };
        assert_eq!(
            check_marker_change(Some(&copying), VFormat::V0, &w(&other_run), all),
            Err(E::Changed("run"))
        );
        let other_settle = MigrationMarker {
            settle_us: 1,
            ..verifying.clone()
        };
        assert_eq!(
            check_marker_change(Some(&copying), VFormat::V0, &w(&other_settle), all),
            Err(E::Changed("settle_us"))
        );
        let other_uid = MigrationMarker {
            bucket_uid: "x".into(),
            ..verifying.clone()
        };
        assert_eq!(
            check_marker_change(Some(&copying), VFormat::V0, &w(&other_uid), all),
            Err(E::Changed("bucket_uid"))
        );
        // Switched only through the switch CAS, and the switch CAS only into switched.
        assert_eq!(
            check_marker_change(Some(&switching), VFormat::V0, &w(&switched), all),
            Err(E::SwitchOnlyBySwitchCas)
        );
        assert_eq!(
            check_marker_change(
                Some(&verifying),
                VFormat::V0,
                &MarkerChange::Switch(switching.clone()),
                all
            ),
            Err(E::SwitchOnlyBySwitchCas)
        );
        assert_eq!(
            check_marker_change(
                Some(&switching),
                VFormat::V0,
                &MarkerChange::Switch(switched.clone()),
                all
            ),
            Ok(())
        );
        // After the switch the bucket is `to`.
        let cleaning = copying.with_state(Cleaning, Timestamp(5));
        assert_eq!(
            check_marker_change(Some(&switched), VFormat::V1, &w(&cleaning), all),
            Ok(())
        );
        assert_eq!(
            check_marker_change(Some(&switched), VFormat::V0, &w(&cleaning), all),
            Err(E::WrongVFormat {
                expected: "v1",
                actual: "v0"
            })
        );
        assert_eq!(
            check_marker_change(Some(&cleaning), VFormat::V1, &MarkerChange::Remove, all),
            Ok(())
        );
        assert_eq!(
            check_marker_change(Some(&copying), VFormat::V0, &MarkerChange::Remove, all),
            Err(E::Refused {
                from: Some(Copying),
                to: None
            })
        );
        // §4.9: switched rolls back by a swapped run entering switching.
        let rollback = MigrationMarker {
            run: RunId(77),
            from: VFormat::V1,
            to: VFormat::V0,
            state: Switching,
            ..copying.clone()
        };
        assert_eq!(
            check_marker_change(Some(&switched), VFormat::V1, &w(&rollback), all),
            Ok(())
        );
        let not_swapped = MigrationMarker {
            run: RunId(77),
            ..switching.clone()
        };
        assert_eq!(
            check_marker_change(Some(&switched), VFormat::V1, &w(&not_swapped), all),
            Err(E::Changed("run"))
        );
        let same = MigrationMarker {
            to: VFormat::V0,
            ..copying.clone()
        };
        assert_eq!(
            check_marker_change(None, VFormat::V0, &w(&same), all),
            Err(E::SameLayout("v0"))
        );
    }

    #[test]
    fn predicates_and_mutations() {
        let d = || RowFilter::FamilyNameRegex("d".into());
        let col = |q: &[u8]| RowFilter::ColumnQualifierRegex(q.to_vec());
        let eq = |v: &[u8]| RowFilter::ValueRange {
            start: KeyBound::Closed(v.to_vec()),
            end: KeyBound::Closed(v.to_vec()),
        };
        let exists = RowFilter::Chain(vec![d(), col(b"value")]);
        assert_eq!(metastore_row("b"), b"__metastore\x00b");
        assert_eq!(vformat_cell(VFormat::V1), b"\"v1\"");
        assert_eq!(
            value_eq("d", "rowkitMigration", b"m"),
            RowFilter::Chain(vec![d(), col(b"rowkitMigration"), eq(b"m")])
        );
        let absent_marker = RowFilter::Condition {
            predicate: Some(Box::new(RowFilter::Chain(vec![
                d(),
                col(b"rowkitMigration"),
            ]))),
            true_filter: Some(Box::new(RowFilter::BlockAll)),
            false_filter: Some(Box::new(exists.clone())),
        };
        let vformat_eq = RowFilter::Chain(vec![d(), col(b"vFormat"), eq(b"\"v0\"")]);
        let start = MetastoreCas::write_marker(None, Some(b"\"v0\""), "M");
        assert_eq!(
            start.predicate,
            RowFilter::Condition {
                predicate: Some(Box::new(absent_marker)),
                true_filter: Some(Box::new(vformat_eq.clone())),
                false_filter: Some(Box::new(RowFilter::BlockAll)),
            }
        );
        assert_eq!(
            start.true_mutations,
            vec![Mutation::SetCell {
                family: "d".into(),
                qualifier: b"rowkitMigration".to_vec(),
                timestamp: Timestamp(0),
                value: b"M".to_vec(),
            }]
        );
        assert!(start.false_mutations.is_empty());
        let switch = MetastoreCas::switch(Some(b"OLD"), Some(b"\"v0\""), VFormat::V1, "NEW");
        assert_eq!(
            switch.predicate,
            RowFilter::Condition {
                predicate: Some(Box::new(RowFilter::Chain(vec![
                    d(),
                    col(b"rowkitMigration"),
                    eq(b"OLD")
                ]))),
                true_filter: Some(Box::new(vformat_eq)),
                false_filter: Some(Box::new(RowFilter::BlockAll)),
            }
        );
        assert_eq!(
            switch.true_mutations,
            vec![
                Mutation::SetCell {
                    family: "d".into(),
                    qualifier: b"vFormat".to_vec(),
                    timestamp: Timestamp(0),
                    value: b"\"v1\"".to_vec(),
                },
                Mutation::SetCell {
                    family: "d".into(),
                    qualifier: b"rowkitMigration".to_vec(),
                    timestamp: Timestamp(0),
                    value: b"NEW".to_vec(),
                },
            ]
        );
        let remove = MetastoreCas::remove(Some(b"OLD"), Some(b"\"v1\""));
        assert_eq!(
            remove.true_mutations,
            vec![
                Mutation::DeleteFromColumn {
                    family: "d".into(),
                    qualifier: b"rowkitMigration".to_vec(),
                    range: None,
                },
                Mutation::DeleteFromColumn {
                    family: "d".into(),
                    qualifier: b"rowkitCheckpoint".to_vec(),
                    range: None,
                },
            ]
        );
        let next = MetastoreCas::write_checkpoint(Some(b"C1"), "C2");
        assert_eq!(
            next.predicate,
            RowFilter::Chain(vec![d(), col(b"rowkitCheckpoint"), eq(b"C1")])
        );
        let first = MetastoreCas::write_checkpoint(None, "C1");
        assert_eq!(
            first.predicate,
            RowFilter::Condition {
                predicate: Some(Box::new(RowFilter::Chain(vec![
                    d(),
                    col(b"rowkitCheckpoint")
                ]))),
                true_filter: Some(Box::new(RowFilter::BlockAll)),
                false_filter: Some(Box::new(RowFilter::Chain(vec![
                    d(),
                    col(b"rowkitMigration")
                ]))),
            }
        );
        assert_eq!(
            first.true_mutations,
            vec![Mutation::SetCell {
                family: "d".into(),
                qualifier: b"rowkitCheckpoint".to_vec(),
                timestamp: Timestamp(0),
                value: b"C1".to_vec(),
            }]
        );
    }

    #[test]
    fn columns_of_a_row() {
        use crate::model::Cell;
        let cell = |f: &str, q: &str, v: &[u8]| Cell {
            family: f.into(),
            qualifier: q.as_bytes().to_vec(),
            timestamp: Timestamp(0),
            value: v.to_vec(),
            labels: vec![],
        };
        let row = Row {
            key: b"__metastore\x00b".to_vec(),
            cells: vec![
                cell("d", "rowkitCheckpoint", b"C"),
                cell("d", "rowkitMigration", b"M"),
                cell("d", "vFormat", b"\"v1\""),
                cell("d", "value", b"{}"),
                cell("f", "rowkitMigration", b"not this one"),
            ],
        };
        let c = MigrationColumns::from_row(&row);
        assert_eq!(
            c,
            MigrationColumns {
                value: Some(b"{}".to_vec()),
                vformat: Some(b"\"v1\"".to_vec()),
                marker: Some(b"M".to_vec()),
                checkpoint: Some(b"C".to_vec()),
            }
        );
        assert_eq!(c.vformat(), VFormat::V1);
        let v0 = MigrationColumns {
            vformat: Some(b"\"v2\"".to_vec()),
            ..MigrationColumns::default()
        };
        assert_eq!(v0.vformat(), VFormat::V0);
        assert_eq!(MigrationColumns::default().vformat(), VFormat::V0);
    }
}
