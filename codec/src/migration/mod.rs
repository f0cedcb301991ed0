//! The live layout migration's records, shared by both schemas (`docs/migration.md` §2, §3,
//! §7): the marker and the checkpoint, their JSON texts with strict decoding, the states and
//! the transitions between them, the settle constants, and the `CheckAndMutateRow`s that change
//! them on the row where a schema keeps them ([`MarkerPlace`]: objmeta's bucket metastore row,
//! the trace store's `:rk:m:0000000000:` row).
//!
//! The marker is the one fact every aware process and the migrator agree on: which layout is
//! the truth and what writers must do (§3). It is changed only by conditional writes whose
//! predicate is the marker as last read (and objmeta's `d:vFormat`, §2.2), so two migrators or
//! an overwrite never go unnoticed. Decoding is strict (every member checked, unknown members
//! refused): a damaged or hostile marker is a typed error, not a guess.
//!
//! The schema-specific parts are in `objmeta::migration::marker` (the metastore row, its
//! `d:vFormat` and `d:value`) and `tracestore::migration` (the marker row of both tables).
//!
//! ```
//! use rowkit_codec::migration::{MigrationMarker, MigrationState, RunId};
//! use rowkit_codec::model::Timestamp;
//! use rowkit_codec::objmeta::keys::VFormat;
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
use crate::objmeta::cells::filters;
use crate::objmeta::json::{Json, JsonObject};

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
    /// A layout name the schema does not have (`v0`/`v1`, `md5`/`digest-id`).
    #[error("member {member}: unknown layout {value:?}")]
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

/// Which layout decides every operation's outcome (§1 "truth"): `from` until the switch, `to`
/// after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Truth {
    /// Before the switch (`copying`, `verifying`, `switching`, `aborting`).
    From,
    /// After the switch (`switched`, `cleaning`).
    To,
}

/// Which schema a marker belongs to: the members its marker requires (§2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerSchema {
    /// Object metadata: `bucket_uid` required, no trace-store member required.
    Objmeta,
    /// Trace store: `source_table`, `target_table` and `role` required, no `bucket_uid`.
    TraceStore,
}

impl MarkerSchema {
    /// Checks the members this schema requires are present and not empty.
    fn check_members<L>(self, m: &MigrationMarker<L>) -> RecordResult<()> {
        match self {
            MarkerSchema::Objmeta => {
                if m.bucket_uid.is_empty() {
                    return Err(MigrationRecordError::Empty("bucket_uid"));
                }
            }
            MarkerSchema::TraceStore => {
                for (member, value) in [
                    ("source_table", &m.source_table),
                    ("target_table", &m.target_table),
                ] {
                    match value.as_deref() {
                        None => return Err(MigrationRecordError::MissingMember(member)),
                        Some("") => return Err(MigrationRecordError::Empty(member)),
                        Some(_) => {}
                    }
                }
                if m.role.is_none() {
                    return Err(MigrationRecordError::MissingMember("role"));
                }
            }
        }
        Ok(())
    }
}

/// A layout a migration moves between: objmeta's key formats (`v0`, `v1`) or the trace
/// store's table layouts (`md5`, `digest-id`).
pub trait MigrationLayout: Copy + Eq + fmt::Debug + Send + Sync + 'static {
    /// The schema whose layouts these are.
    const SCHEMA: MarkerSchema;
    /// The marker's text of the layout.
    fn layout_name(self) -> &'static str;
    /// The layout named `name` exactly as [`MigrationLayout::layout_name`] writes it.
    fn from_layout_name(name: &str) -> Option<Self>;
}

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
    /// The trace store has no layout column to flip: its switch is a marker write (§5.5).
    #[error("the trace store's switch is a marker write, not a switch CAS")]
    NoSwitchCas,
    /// A member that stays fixed for a run differs from the marker as read.
    #[error("member {0} of the marker changes within a run")]
    Changed(&'static str),
    /// `from` equals `to`.
    #[error("from and to are both {0}")]
    SameLayout(&'static str),
    /// The row's layout (objmeta: the bucket's `d:vFormat`) is not the one the state requires
    /// (`from` while the truth is `from`, `to` once switched).
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
    /// `source` or `target`.
    pub fn as_str(self) -> &'static str {
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
    /// `refuse` or `drop`.
    pub fn as_str(self) -> &'static str {
        match self {
            OptionsPolicy::Refuse => "refuse",
            OptionsPolicy::Drop => "drop",
        }
    }
}

/// The marker (§2.2) of a migration between two layouts `L` of one schema. The members of one
/// schema only are optional so that one type serves both ([`MarkerSchema`] says which a schema
/// requires): objmeta markers have a `bucket_uid` and no trace-store member, trace-store
/// markers have `source_table`, `target_table` and `role` and an empty `bucket_uid`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrationMarker<L> {
    /// The run.
    pub run: RunId,
    /// The layout being left.
    pub from: L,
    /// The layout being reached.
    pub to: L,
    /// The state.
    pub state: MigrationState,
    /// The migrator's `now` when this state was written (µs).
    pub since: Timestamp,
    /// `Δ` (§2.3) in µs, fixed for the run.
    pub settle_us: i64,
    /// Objmeta: the bucket's `value.uid` when the run began: a metastore row with another uid
    /// is another bucket (§4.8). Empty (and not written) in trace-store markers.
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

impl<L: MigrationLayout> MigrationMarker<L> {
    /// A marker without the trace-store members (an objmeta marker).
    pub fn new(
        run: RunId,
        from: L,
        to: L,
        state: MigrationState,
        since: Timestamp,
        settle_us: i64,
        bucket_uid: &str,
    ) -> MigrationMarker<L> {
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
    pub fn with_state(&self, state: MigrationState, since: Timestamp) -> MigrationMarker<L> {
        MigrationMarker {
            state,
            since,
            ..self.clone()
        }
    }

    /// The layout that is the truth while this marker's state lasts (objmeta: what `d:vFormat`
    /// holds): `from` until the switch, `to` after.
    pub fn truth_vformat(&self) -> L {
        match self.state.truth() {
            Truth::From => self.from,
            Truth::To => self.to,
        }
    }

    /// The JSON text (objmeta JSON rules, `objmeta.md` 5.3): members in the order of §2.2,
    /// absent optional members omitted. An error when a time or `Δ` is outside
    /// `0..=2^53−1` (it would not read back), `from == to`, or a member the schema requires
    /// is missing or empty ([`MarkerSchema`]).
    pub fn to_json_text(&self) -> RecordResult<String> {
        if self.from == self.to {
            return Err(MigrationRecordError::SameLayout(self.from.layout_name()));
        }
        L::SCHEMA.check_members(self)?;
        let mut o = JsonObject::new();
        o.set("run", Json::str(self.run.to_string()));
        o.set("from", Json::str(self.from.layout_name()));
        o.set("to", Json::str(self.to.layout_name()));
        o.set("state", Json::str(self.state.as_str()));
        o.set("since", integer_json("since", self.since.0)?);
        o.set("settle_us", integer_json("settle_us", self.settle_us)?);
        if !self.bucket_uid.is_empty() {
            o.set("bucket_uid", Json::str(self.bucket_uid.as_str()));
        }
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
    pub fn from_json_bytes(bytes: &[u8]) -> RecordResult<MigrationMarker<L>> {
        let doc = parse_object(bytes)?;
        let o = Members::new(&doc, MARKER_MEMBERS)?;
        let from: L = layout(&o, "from")?;
        let to = layout(&o, "to")?;
        if from == to {
            return Err(MigrationRecordError::SameLayout(from.layout_name()));
        }
        let bucket_uid = match L::SCHEMA {
            MarkerSchema::Objmeta => o.string("bucket_uid")?,
            MarkerSchema::TraceStore => o.opt_string("bucket_uid")?.unwrap_or_default(),
        };
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
        let marker = MigrationMarker {
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
        };
        L::SCHEMA.check_members(&marker)?;
        Ok(marker)
    }
}

/// A marker change the migrator asks for (§2.2, §4.5, §4.7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarkerChange<L> {
    /// Writes this marker (the start, or a state change other than objmeta's switch; the
    /// trace store's switch is this write of `switched`, §5.5).
    Write(MigrationMarker<L>),
    /// Objmeta's switch (§4.5 step 3): this marker (state `switched`) and `d:vFormat` = its
    /// `to`, in one `CheckAndMutateRow`.
    Switch(MigrationMarker<L>),
    /// The end (§4.7, §4.9): the marker and the checkpoint removed.
    Remove,
}

impl<L> MarkerChange<L> {
    /// The marker written (`None` for the removal).
    pub fn marker(&self) -> Option<&MigrationMarker<L>> {
        match self {
            MarkerChange::Write(m) | MarkerChange::Switch(m) => Some(m),
            MarkerChange::Remove => None,
        }
    }
}

/// Checks a marker change before it is sent: the state transition and its gate
/// ([`check_transition`]); objmeta's `switched` entered by the switch CAS only (the trace
/// store has no switch CAS: its switch is a marker write, §5.5); within a run `run`, `from`,
/// `to`, `settle_us`, `bucket_uid` and the trace-store members stay (except for §4.9's
/// rollback of `switched`, `switched` → `switching` with `from` and `to` swapped, a new run of
/// the same bucket); and the layout `layout_as_read` the row names (objmeta's `d:vFormat`;
/// `None` where the row names none) is the one the state as read (or, for the start, the new
/// marker's `from`) requires.
pub fn check_marker_change<L: MigrationLayout>(
    previous: Option<&MigrationMarker<L>>,
    layout_as_read: Option<L>,
    change: &MarkerChange<L>,
    gates: Gates,
) -> Result<(), MarkerTransitionError> {
    let next = change.marker();
    if let Some(n) = next
        && n.from == n.to
    {
        return Err(MarkerTransitionError::SameLayout(n.from.layout_name()));
    }
    match (L::SCHEMA, change) {
        (MarkerSchema::Objmeta, MarkerChange::Write(m)) if m.state == MigrationState::Switched => {
            return Err(MarkerTransitionError::SwitchOnlyBySwitchCas);
        }
        (MarkerSchema::Objmeta, MarkerChange::Switch(m)) if m.state != MigrationState::Switched => {
            return Err(MarkerTransitionError::SwitchOnlyBySwitchCas);
        }
        (MarkerSchema::TraceStore, MarkerChange::Switch(_)) => {
            return Err(MarkerTransitionError::NoSwitchCas);
        }
        _ => {}
    }
    check_transition(previous.map(|p| p.state), next.map(|n| n.state), gates)?;
    if let Some(actual) = layout_as_read {
        let expected = match (previous, next) {
            (Some(p), _) => p.truth_vformat(),
            (None, Some(n)) => n.from,
            (None, None) => actual,
        };
        if actual != expected {
            return Err(MarkerTransitionError::WrongVFormat {
                expected: expected.layout_name(),
                actual: actual.layout_name(),
            });
        }
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
                ("source_table", n.source_table == p.source_table),
                ("target_table", n.target_table == p.target_table),
                ("role", n.role == p.role),
                ("options", n.options == p.options),
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
    /// The last Arsenal key (objmeta) or tile key (trace store) whose page or tile is completely
    /// synced; `None` before the first. Written as `hex:` and lowercase hex.
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
    /// The checkpoint a new pass of `run` in `state` starts from at `now`, run by `owner`
    /// (§7.1, §7.3): no cursor, zero counters, the pass number after `previous`'s and its row
    /// count as `pass_rows_previous` (the ETA's total), and the run's `started` kept —
    /// `previous` being the stored checkpoint when it names this run.
    pub fn next_pass(
        previous: Option<&MigrationCheckpoint>,
        run: RunId,
        state: MigrationState,
        owner: &str,
        now: Timestamp,
    ) -> MigrationCheckpoint {
        let previous = previous.filter(|c| c.run == run);
        MigrationCheckpoint {
            run,
            state,
            pass: previous.map_or(1, |c| c.pass.saturating_add(1)),
            cursor: None,
            owner: owner.to_string(),
            lease_until: now,
            counters: PassCounters::default(),
            pass_rows_previous: previous.map(|c| c.counters.rows_scanned),
            started: previous.map_or(now, |c| c.started),
            updated: now,
        }
    }

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

fn layout<L: MigrationLayout>(o: &Members<'_>, member: &'static str) -> RecordResult<L> {
    let value = o.string(member)?;
    L::from_layout_name(value).ok_or_else(|| MigrationRecordError::UnknownLayout {
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

/// Where a schema keeps its marker and checkpoint (§2.1), as data, so that one set of
/// conditional writes serves both schemas.
#[derive(Clone, Debug, PartialEq)]
pub struct MarkerPlace {
    /// The row (objmeta: the bucket's metastore row; trace store: `:rk:m:0000000000:`).
    pub row: Vec<u8>,
    /// The family of the marker, checkpoint and layout columns (`d`, `O`).
    pub family: &'static str,
    /// The marker's column.
    pub marker_column: &'static str,
    /// The checkpoint's column.
    pub checkpoint_column: &'static str,
    /// A column that names the row's layout and is part of every marker predicate (objmeta's
    /// `d:vFormat`, which the switch CAS flips); `None` for the trace store.
    pub layout_column: Option<&'static str>,
    /// The column (same family) that makes the row the one the migration belongs to, required
    /// by a predicate naming a column read absent (objmeta: `d:value`, so a deleted bucket
    /// does not match); `None` where the row may not exist before the start (the trace store's
    /// marker row).
    pub anchor_column: Option<&'static str>,
}

/// The raw cells of a marker row as read: the bytes a predicate must name (never re-encoded:
/// another writer's text may differ from ours byte for byte).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MarkerCells {
    /// The [`MarkerPlace::anchor_column`] (objmeta: `d:value`).
    pub anchor: Option<Vec<u8>>,
    /// The [`MarkerPlace::layout_column`] (objmeta: `d:vFormat`).
    pub layout: Option<Vec<u8>>,
    /// The marker.
    pub marker: Option<Vec<u8>>,
    /// The checkpoint.
    pub checkpoint: Option<Vec<u8>>,
}

/// One conditional write of a marker row (a `CheckAndMutateRow` without its row key and
/// table). `true_mutations` apply when the predicate matches, `false_mutations` when not.
#[derive(Clone, Debug, PartialEq)]
pub struct MarkerCas {
    /// The predicate.
    pub predicate: RowFilter,
    /// Applied when it matches.
    pub true_mutations: Vec<Mutation>,
    /// Applied when it does not.
    pub false_mutations: Vec<Mutation>,
}

impl MarkerPlace {
    /// The place's cells in a row read with `LatestN(1)` (`None`: no row).
    pub fn cells_of(&self, row: Option<&Row>) -> MarkerCells {
        let Some(row) = row else {
            return MarkerCells::default();
        };
        let cell = |q: Option<&str>| {
            let q = q?;
            row.cells
                .iter()
                .find(|c| c.family == self.family && c.qualifier == q.as_bytes())
                .map(|c| c.value.clone())
        };
        MarkerCells {
            anchor: cell(self.anchor_column),
            layout: cell(self.layout_column),
            marker: cell(Some(self.marker_column)),
            checkpoint: cell(Some(self.checkpoint_column)),
        }
    }

    fn set_cell(&self, qualifier: &str, value: Vec<u8>) -> Mutation {
        Mutation::set_cell(self.family, qualifier.as_bytes(), MARKER_TIMESTAMP, value)
    }

    fn delete_column(&self, qualifier: &str) -> Mutation {
        Mutation::DeleteFromColumn {
            family: self.family.to_string(),
            qualifier: qualifier.as_bytes().to_vec(),
            range: None,
        }
    }

    /// A column "as last read": [`value_eq`] of the bytes read, or for a column read absent
    /// `Condition(column present, BlockAll, anchor present)` — still absent, on a row that is
    /// still the migration's. `None` when the place has no anchor and the column was absent:
    /// "still absent" is then only expressible as a predicate that does **not** match.
    pub fn column_as_read(&self, qualifier: &str, value: Option<&[u8]>) -> Option<RowFilter> {
        match (value, self.anchor_column) {
            (Some(v), _) => Some(value_eq(self.family, qualifier, v)),
            (None, Some(anchor)) => Some(RowFilter::Condition {
                predicate: Some(Box::new(column_present(self.family, qualifier))),
                true_filter: Some(Box::new(RowFilter::BlockAll)),
                false_filter: Some(Box::new(column_present(self.family, anchor))),
            }),
            (None, None) => None,
        }
    }

    /// The CAS applying `mutations` when the marker (and the layout column, if the place has
    /// one) still hold what was read (§2.2).
    fn marker_cas(
        &self,
        marker_as_read: Option<&[u8]>,
        layout_as_read: Option<&[u8]>,
        mutations: Vec<Mutation>,
    ) -> MarkerCas {
        let Some(marker) = self.column_as_read(self.marker_column, marker_as_read) else {
            // No marker and no row to anchor to: write unless a marker appeared.
            return MarkerCas {
                predicate: column_present(self.family, self.marker_column),
                true_mutations: vec![],
                false_mutations: mutations,
            };
        };
        let predicate = match self
            .layout_column
            .and_then(|q| self.column_as_read(q, layout_as_read))
        {
            Some(layout) => filters::and(marker, layout),
            None => marker,
        };
        MarkerCas {
            predicate,
            true_mutations: mutations,
            false_mutations: vec![],
        }
    }

    /// A state change (or the start): `Set(marker, 0, marker_text)` under the marker (and
    /// layout column) as last read.
    pub fn write_marker(
        &self,
        marker_as_read: Option<&[u8]>,
        layout_as_read: Option<&[u8]>,
        marker_text: &str,
    ) -> MarkerCas {
        let set = self.set_cell(self.marker_column, marker_text.as_bytes().to_vec());
        self.marker_cas(marker_as_read, layout_as_read, vec![set])
    }

    /// Objmeta's switch (§4.5 step 3): `Set(layout column, 0, layout_cell)` and `Set(marker,
    /// 0, switched_text)` in one request, under the marker and layout column as last read. On
    /// a place without a layout column it is [`MarkerPlace::write_marker`].
    pub fn switch(
        &self,
        marker_as_read: Option<&[u8]>,
        layout_as_read: Option<&[u8]>,
        layout_cell: Vec<u8>,
        switched_text: &str,
    ) -> MarkerCas {
        let mut mutations = Vec::new();
        if let Some(q) = self.layout_column {
            mutations.push(self.set_cell(q, layout_cell));
        }
        mutations.push(self.set_cell(self.marker_column, switched_text.as_bytes().to_vec()));
        self.marker_cas(marker_as_read, layout_as_read, mutations)
    }

    /// The end (§4.7's last step, §4.9, §5.8's target marker): `DeleteFromColumn` of the marker
    /// and the checkpoint, under the marker (and layout column) as last read.
    pub fn remove(
        &self,
        marker_as_read: Option<&[u8]>,
        layout_as_read: Option<&[u8]>,
    ) -> MarkerCas {
        self.marker_cas(marker_as_read, layout_as_read, self.removal())
    }

    /// `[DeleteFromColumn(marker), DeleteFromColumn(checkpoint)]`: what removes a run's
    /// records from the row — the end of a run ([`MarkerPlace::remove`]), and a write that
    /// replaces the migrating instance itself (objmeta's replacing `createBucket`, §12.74).
    pub fn removal(&self) -> Vec<Mutation> {
        vec![
            self.delete_column(self.marker_column),
            self.delete_column(self.checkpoint_column),
        ]
    }

    /// A checkpoint write (§7.1): `Set(checkpoint, 0, text)` in `true_mutations` when the
    /// checkpoint column still holds `previous` (`VALUE_EQ`). With no previous checkpoint the
    /// predicate is `Condition(checkpoint present, BlockAll, marker present)`: still no
    /// checkpoint **and** a marker — rather than §7.1's "EXISTS-on-that-column, write in
    /// `false_mutations`", which would also write on a deleted bucket's absent row (creating a
    /// metastore row without `d:value`) or on a row whose marker was removed (§12.2).
    pub fn write_checkpoint(&self, previous: Option<&[u8]>, text: &str) -> MarkerCas {
        let predicate = match previous {
            Some(v) => value_eq(self.family, self.checkpoint_column, v),
            None => RowFilter::Condition {
                predicate: Some(Box::new(column_present(
                    self.family,
                    self.checkpoint_column,
                ))),
                true_filter: Some(Box::new(RowFilter::BlockAll)),
                false_filter: Some(Box::new(column_present(self.family, self.marker_column))),
            },
        };
        MarkerCas {
            predicate,
            true_mutations: vec![self.set_cell(self.checkpoint_column, text.as_bytes().to_vec())],
            false_mutations: vec![],
        }
    }
}
