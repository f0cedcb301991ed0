//! The mount table protocols of Vanadium's btmtd (`spec/mounttable.md`): one operation per
//! service call (Mount, Unmount, ResolveStep, Glob, Delete, GetPermissions, SetPermissions,
//! Fsck, CreateInitialNodes, ReadCounters) plus [`PrimitiveOp`] for the internal node
//! primitives that tests and repair tools drive directly, and the hot-row [`RowCache`].
//!
//! Every operation is an [`Operation`] of [`MountTableSchema`] running a flow with explicit
//! phases in the crate's dialect: `new(ctx, args.., Start { now, seed, deadline })` takes an
//! [`MtCtx`] (tables, caller, global ACL, limits, gc grace, the least request deadline, where
//! to find [`Nodes`] already decoded) by value, and reaches the store only through the
//! requests it emits. The node protocols they share (the walk that resolves and creates
//! nodes, OCC writes, GC of expired servers, the subtree delete) are steps nested in their
//! parents' phases. OCC conflicts are retried with seeded jitter. `cancel` ends an operation
//! with [`MtError::Aborted`] at once; the operation deadline does so at the points §17 names
//! (before each attempt, walk element, glob step, fsck pass and row), never inside a node
//! protocol, whose requests carry deadlines of their own.
//!
//! ```
//! use rowkit_statemachines::mounttable::{MtCtx, MtError, ResolveStep};
//! use rowkit_statemachines::operation::Start;
//! use rowkit_statemachines::{Machine, Request, Response, Timestamp};
//!
//! let start = Start { now: Timestamp(0), seed: 7, deadline: Timestamp(60_000_000) };
//! let mut m = ResolveStep::new(MtCtx::new(), "a/b", start);
//! // The walk starts with a point read of the root row.
//! let (tag, request) = m.poll_request().unwrap();
//! assert!(matches!(request, Request::ReadRow(_)));
//! m.handle_response(tag, Ok(Response::Row(None)), Timestamp(1));
//! assert_eq!(m.result(), Some(Err(MtError::NoSuchNameRoot)));
//! ```

mod cache;
mod calls;
mod decoded;
mod glob;
// Phase enums hold their nested steps inline (boxed only where rare and large, or
// recursive): one allocation per operation rather than one per step.
#[allow(clippy::large_enum_variant)]
mod nodes;
#[allow(clippy::large_enum_variant)]
mod operations;

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

pub use cache::{Completion, Lookup, ROW_CACHE_CAPACITY, ROW_CACHE_TTL_US, RowCache, WaiterId};
pub use decoded::{Nodes, SharedNodes};
pub use glob::{BadPattern, Glob as GlobPattern, path_match};
pub use operations::{
    CreateInitialNodesFlow, DeleteFlow, FsckFlow, GetPermissionsFlow, GlobFlow, MountFlow,
    NodeLookupFlow, PrimitiveFlow, ReadCountersFlow, ResolveStepFlow, SetPermissionsFlow,
    UnmountFlow,
};
use rowkit_codec::mounttable::{
    self as codec, AccessList, Caller, MountFlags, NodeRow, Permissions,
};

use crate::operation::{
    ABORTED_ID, ABORTED_MESSAGE, Budget, ContextArg, Flow, Operation, OperationError, Schema, Start,
};
use crate::{StoreError, Timestamp};

/// Node and counter table names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tables {
    /// The node table (default `mounttable`).
    pub node: String,
    /// The counter table (`<node>-counters`).
    pub counter: String,
}

impl Tables {
    /// A node table and its counter table.
    pub fn new(node: &str) -> Tables {
        Tables {
            node: String::from(node),
            counter: rowkit_codec::mounttable::counter_table(node),
        }
    }
}

impl Default for Tables {
    fn default() -> Self {
        Tables::new(rowkit_codec::mounttable::DEFAULT_TABLE)
    }
}

/// Per-creator limits (0 = unlimited).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Nodes a creator may own.
    pub max_nodes_per_user: i64,
    /// Servers mounted on nodes a creator owns.
    pub max_servers_per_user: i64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_nodes_per_user: 10_000,
            max_servers_per_user: 10_000,
        }
    }
}

/// The inputs every mounttable machine shares (§20).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MtCtx {
    /// Tables.
    pub tables: Tables,
    /// Who is calling.
    pub caller: Caller,
    /// Extra access list that grants every tag.
    pub global_acl: AccessList,
    /// Per-creator limits.
    pub limits: Limits,
    /// GC grace period in µs (btmtd: 60 s).
    pub gc_grace_us: i64,
    /// How long a request may run at least, whatever the operation deadline (§17: btmtd's
    /// 60 s, so a request in flight is never cut before then; 0: requests end at the operation
    /// deadline, as a caller's own deadline wants). The detached second half of a two-row
    /// write gets 1 h either way.
    pub request_floor_us: i64,
    /// Where node reads find the nodes already decoded from the rows a cache hands out again
    /// (the facade's hot-row cache keeps them beside the rows; behaviour-neutral).
    pub nodes: Nodes,
}

impl MtCtx {
    /// btmtd's defaults and the server itself as caller.
    pub fn new() -> MtCtx {
        MtCtx {
            tables: Tables::default(),
            caller: Caller {
                blessing_names: Vec::new(),
                is_server: true,
            },
            global_acl: AccessList::default(),
            limits: Limits::default(),
            gc_grace_us: 60_000_000,
            request_floor_us: REQUEST_FLOOR_US,
            nodes: Nodes::none(),
        }
    }
}

impl Default for MtCtx {
    fn default() -> Self {
        MtCtx::new()
    }
}

/// btmtd's least request deadline (§17): 60 s after the request is sent.
pub const REQUEST_FLOOR_US: i64 = 60_000_000;

/// What a mount-table operation runs on: the caller's [`MtCtx`] and the operation deadline of
/// its [`Start`], which the flows check at the points §17 names (before each attempt, walk
/// element, glob step, fsck pass and row, then [`MtError::Aborted`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MtRun {
    ctx: MtCtx,
    /// The operation deadline.
    deadline: Timestamp,
}

impl MtRun {
    /// The context an operation started as `start` says runs on: `ctx` and its deadline,
    /// owned by the operation.
    fn of(ctx: MtCtx, start: Start) -> ContextArg<'static, MtRun> {
        ContextArg::owned(MtRun {
            ctx,
            deadline: start.deadline,
        })
    }

    /// The operation deadline.
    pub fn deadline(&self) -> Timestamp {
        self.deadline
    }
}

/// The flows read the caller's context through the run.
impl core::ops::Deref for MtRun {
    type Target = MtCtx;
    fn deref(&self) -> &MtCtx {
        &self.ctx
    }
}

/// One mounted server in a [`MountEntry`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountedServer {
    /// Address (joined with the unresolved rest for Glob's first entry).
    pub server: String,
    /// Deadline in µs.
    pub deadline_us: i64,
}

/// A resolve or glob result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    /// The name (ResolveStep: the unresolved rest; Glob: relative to the glob root).
    pub name: String,
    /// Live servers in qualifier order.
    pub servers: Vec<MountedServer>,
    /// Serves a mount table.
    pub mt: bool,
    /// Is a leaf.
    pub leaf: bool,
}

/// Permissions with their version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PermsAndVersion {
    /// The permissions.
    pub perms: Permissions,
    /// The node version (8 hex digits).
    pub version: String,
}

/// What fsck found (§16).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FsckSummary {
    /// Passes made.
    pub passes: u32,
    /// Inconsistencies found, each once whatever the passes (`fixed` + `left`).
    pub inconsistent: u64,
    /// Row keys of inconsistencies fixed (node rows, and counter rows rebuilt).
    pub fixed: Vec<Vec<u8>>,
    /// Row keys of inconsistencies left: not fixed, or without `fix`.
    pub left: Vec<Vec<u8>>,
    /// Row keys that do not decode (left alone).
    pub undecodable: Vec<Vec<u8>>,
    /// Counter rows that differ from what the nodes imply, each with what differs: not
    /// inconsistencies (a crash leaves stale counters, §17), but said rather than silently
    /// rewritten; with `fix` they were rebuilt.
    pub counters: Vec<(Vec<u8>, String)>,
}

/// Kinds of fsck findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FindingKind {
    /// A node its parent does not reference.
    Orphan,
    /// A child reference to a missing node or another incarnation.
    Dangling,
    /// A row that does not decode.
    Undecodable,
    /// A check that hit a store error (a child or parent that could not be read, e.g. one
    /// that does not decode).
    StoreError,
    /// A node row under a key that is not its name's (`rowKey(name)`): reads never find it.
    WrongKey,
}

impl FindingKind {
    /// The stable name of the kind (the CLI's fsck lines, `--json` and check reports).
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::Orphan => "orphan",
            FindingKind::Dangling => "dangling",
            FindingKind::Undecodable => "undecodable",
            FindingKind::StoreError => "store_error",
            FindingKind::WrongKey => "wrong_key",
        }
    }

    /// What `fsck --fix` does about a finding of this kind; `None` when it is report-only.
    pub fn repair(self) -> Option<&'static str> {
        match self {
            FindingKind::Orphan => Some("delete the orphan node"),
            FindingKind::Dangling => Some("drop the dangling child references"),
            FindingKind::Undecodable | FindingKind::StoreError | FindingKind::WrongKey => None,
        }
    }
}

/// Events of mounttable machines.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum MtEvent {
    /// A failure the original only logged.
    Warning {
        /// Which step.
        step: &'static str,
        /// What failed.
        error: MtError,
    },
    /// One glob result.
    GlobEntry(MountEntry),
    /// One fsck finding.
    FsckFinding {
        /// The row.
        row_key: Vec<u8>,
        /// What is wrong.
        kind: FindingKind,
        /// Whether it was fixed.
        fixed: bool,
        /// What is wrong, for a person (bounded).
        detail: String,
    },
    /// An fsck pass read another page of node rows (for progress: rows read so far).
    FsckPage {
        /// Rows in the page.
        rows: u64,
    },
}

/// Vanadium's id of an aborted call (§18), kept for [`MtError::verror_id`].
pub const VERROR_ABORTED_ID: &str = "v.io/v23/verror.Aborted";

/// Errors of §18.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MtError {
    /// Missing node (without create), or nothing mounted on the path.
    #[error("name {name:?} doesn't exist")]
    NoSuchName {
        /// The name.
        name: String,
    },
    /// The root row is missing.
    #[error("root name doesn't exist")]
    NoSuchNameRoot,
    /// SetPermissions version mismatch.
    #[error("version is out of date")]
    BadVersion,
    /// Delete of the root.
    #[error("no access")]
    NoAccess,
    /// The operation deadline was reached, or the operation was cancelled.
    #[error("{}", ABORTED_MESSAGE)]
    Aborted,
    /// Authorization failed.
    #[error("no permissions: {tag} required")]
    NoPermissions {
        /// The first tag asked for.
        tag: &'static str,
    },
    /// Glob pattern invalid.
    #[error("syntax error in pattern")]
    BadPattern,
    /// Mount address invalid.
    #[error("malformed address {server:?}")]
    MalformedAddress {
        /// The address.
        server: String,
    },
    /// Delete without subtree on a node with children.
    #[error("cannot delete {name:?}: has children")]
    NotEmpty {
        /// The node.
        name: String,
    },
    /// OCC conflict (retried by the operation loop until the deadline).
    #[error("concurrent access")]
    ConcurrentAccess,
    /// Node limit reached.
    #[error("node limit exceeded ({limit})")]
    NodeLimitExceeded {
        /// The limit.
        limit: i64,
    },
    /// Server limit reached.
    #[error("server limit exceeded ({limit})")]
    ServerLimitExceeded {
        /// The limit.
        limit: i64,
    },
    /// Stored version not parseable.
    #[error(transparent)]
    BadVersionString(#[from] rowkit_codec::mounttable::VersionError),
    /// Undecodable node or counter row.
    #[error("internal error: {what}")]
    Internal {
        /// What.
        what: String,
    },
    /// Fsck found problems.
    #[error("fsck: {} inconsistencies ({} fixed, {} left), {} undecodable rows", .0.inconsistent, .0.fixed.len(), .0.left.len(), .0.undecodable.len())]
    FsckInconsistent(FsckSummary),
    /// A store request failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
}

impl MtError {
    /// The Vanadium error id of §18 (what btmtd's callers match on); the same as
    /// [`OperationError::id`] except for [`MtError::Aborted`], whose rowkit id is every
    /// schema's [`ABORTED_ID`].
    pub fn verror_id(&self) -> &'static str {
        match self {
            MtError::Aborted => VERROR_ABORTED_ID,
            other => MtError::id(other),
        }
    }

    /// The stable id (§18's, but aborted spelled [`ABORTED_ID`] as in every schema), used by
    /// the CLI's `--json` errors.
    pub fn id(&self) -> &'static str {
        match self {
            MtError::NoSuchName { .. } => "v.io/v23/naming.nameDoesntExist",
            MtError::NoSuchNameRoot => "v.io/v23/naming.rootNameDoesntExist",
            MtError::BadVersion => "v.io/v23/verror.BadVersion",
            MtError::NoAccess => "v.io/v23/verror.NoAccess",
            MtError::Aborted => ABORTED_ID,
            MtError::NoPermissions { .. } => "v.io/v23/security/access.NoPermissions",
            MtError::BadPattern => "path.ErrBadPattern",
            MtError::MalformedAddress { .. } => {
                "v.io/x/ref/services/mounttable/btmtd/internal.errMalformedAddress"
            }
            MtError::NotEmpty { .. } => "v.io/x/ref/services/mounttable/btmtd/internal.errNotEmpty",
            MtError::ConcurrentAccess => {
                "v.io/x/ref/services/mounttable/btmtd/internal.errConcurrentAccess"
            }
            MtError::NodeLimitExceeded { .. } => {
                "v.io/x/ref/services/mounttable/btmtd/internal.errNodeLimitExceeded"
            }
            MtError::ServerLimitExceeded { .. } => {
                "v.io/x/ref/services/mounttable/btmtd/internal.errServerLimitExceeded"
            }
            MtError::BadVersionString(_) => "rowkit.mounttable.BadVersionString",
            MtError::Internal { .. } => "v.io/v23/verror.Internal",
            MtError::FsckInconsistent(_) => "rowkit.mounttable.FsckInconsistent",
            MtError::Store(_) => "rowkit.store",
        }
    }
}

/// The internal node primitives (§10–§11), for tests and repair tools that must act on a
/// stale snapshot or write rows the service API never writes.
#[derive(Clone, Debug, PartialEq)]
pub enum Primitive {
    /// `getNode(name)`.
    GetNode {
        /// Node name.
        name: String,
    },
    /// `createRow(name, perms, creator, id, limit)`.
    CreateRow {
        /// Node name.
        name: String,
        /// Permissions stored as given.
        perms: Permissions,
        /// Creator (`""` = the server user).
        creator: String,
        /// 8-byte id.
        id: Vec<u8>,
        /// Node limit (0 = none).
        limit: i64,
    },
    /// `createChild(parent, child, perms, creator, limit)` on a snapshot of the parent.
    CreateChild {
        /// Parent snapshot.
        parent: NodeRow,
        /// Child name element.
        child: String,
        /// Child permissions.
        perms: Permissions,
        /// Creator.
        creator: String,
        /// Node limit.
        limit: i64,
    },
    /// `delete(node, subtree)` on a snapshot.
    Delete {
        /// Snapshot.
        node: NodeRow,
        /// Delete children too.
        subtree: bool,
    },
    /// `mount(node, server, deadline, flags, limit)` on a snapshot.
    Mount {
        /// Snapshot.
        node: NodeRow,
        /// Address.
        server: String,
        /// Cell timestamp (µs, ms-aligned).
        deadline_us: i64,
        /// MountFlag bits.
        flags: MountFlags,
        /// Server limit.
        limit: i64,
    },
    /// `setPermissions(node, perms)` on a snapshot.
    SetPermissions {
        /// Snapshot.
        node: NodeRow,
        /// New permissions.
        perms: Permissions,
    },
}

/// Output of [`PrimitiveOp`].
#[derive(Clone, Debug, PartialEq)]
pub enum PrimitiveOutput {
    /// A node (GetNode: `None` = missing; CreateChild: the new child).
    Node(Option<alloc::boxed::Box<NodeRow>>),
    /// Done.
    Done,
}

/// The mount table's operations (see the module doc): their context is an [`MtRun`] (the
/// caller's [`MtCtx`] and the deadline of the operation's [`Start`]), owned by the operation.
#[derive(Debug)]
pub struct MountTableSchema;

impl Schema for MountTableSchema {
    type Context = MtRun;
    type Event = MtEvent;
    type Error = MtError;
}

impl OperationError for MtError {
    fn id(&self) -> &'static str {
        MtError::id(self)
    }

    fn aborted() -> MtError {
        MtError::Aborted
    }

    fn store(error: StoreError) -> MtError {
        MtError::Store(error)
    }

    fn as_store(&self) -> Option<&StoreError> {
        match self {
            MtError::Store(s) => Some(s),
            _ => None,
        }
    }

    fn is_bad_input(&self) -> bool {
        matches!(self, MtError::MalformedAddress { .. } | MtError::BadPattern)
    }
}

/// Starts `flow` on `ctx` as `start` says.
///
/// The flows enforce the operation deadline themselves ([`MtRun::deadline`]), so the
/// operation's own [`Budget`] never cuts them: a deadline there would abort a node protocol
/// halfway (a child referenced but never created, a row deleted but still referenced, a server
/// counted but not mounted), which §17's detached second halves exist to prevent.
fn begin<F: Flow<Schema = MountTableSchema>>(
    ctx: MtCtx,
    start: Start,
    flow: F,
) -> Operation<'static, F> {
    let budget = Budget::until(Timestamp::MAX);
    Operation::start(MtRun::of(ctx, start), start.now, start.seed, budget, flow)
}

/// An operation on `ctx` whose arguments were refused: it ends with `error` and sends nothing.
fn failed<F: Flow<Schema = MountTableSchema>>(
    ctx: MtCtx,
    start: Start,
    error: MtError,
) -> Operation<'static, F> {
    Operation::failed(MtRun::of(ctx, start), error)
}

/// Starts the flow `flow()` on the node `suffix`, or, when that node's row key is over
/// Bigtable's limit, ends the operation before any request with the error the store would give
/// (`INVALID_ARGUMENT`; every node on the way has a shorter key).
fn begin_at_name<F: Flow<Schema = MountTableSchema>>(
    ctx: MtCtx,
    suffix: String,
    start: Start,
    flow: impl FnOnce(String) -> F,
) -> Operation<'static, F> {
    if let Err(e) = rowkit_codec::model::validate_row_key(&codec::row_key(&suffix)) {
        let error = MtError::Store(StoreError::new(
            crate::Code::InvalidArgument,
            alloc::string::ToString::to_string(&e),
        ));
        return failed(ctx, start, error);
    }
    begin(ctx, start, flow(suffix))
}

/// What a Mount wrote: the node's row key and the server's deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mounted {
    /// The row key of the node the server was mounted on.
    pub row_key: Vec<u8>,
    /// The deadline written (µs, the server cell's timestamp).
    pub deadline_us: i64,
}

/// `Mount(name, server, ttl, flags)`: what it wrote ([`Mounted`]).
pub type Mount = Operation<'static, MountFlow>;
/// `Unmount(name, server)` (`""` = every server).
pub type Unmount = Operation<'static, UnmountFlow>;
/// `Delete(name, subtree)`.
pub type Delete = Operation<'static, DeleteFlow>;
/// `ResolveStep(name)`.
pub type ResolveStep = Operation<'static, ResolveStepFlow>;
/// `Glob(name, pattern)`: entries arrive as [`MtEvent::GlobEntry`].
pub type Glob = Operation<'static, GlobFlow>;
/// `GetPermissions(name)`.
pub type GetPermissions = Operation<'static, GetPermissionsFlow>;
/// `SetPermissions(name, perms, version)` (`""` = any version): the permissions and version
/// it wrote.
pub type SetPermissions = Operation<'static, SetPermissionsFlow>;
/// `Fsck(fix)`.
pub type Fsck = Operation<'static, FsckFlow>;
/// `CreateInitialNodes(perms_file)`: the root (and the file's nodes).
pub type CreateInitialNodes = Operation<'static, CreateInitialNodesFlow>;
/// Every counter row: row key → value.
pub type ReadCounters = Operation<'static, ReadCountersFlow>;
/// One internal primitive ([`Primitive`]).
pub type PrimitiveOp = Operation<'static, PrimitiveFlow>;

impl Mount {
    /// Mounts `server` on `name` for `ttl_s` seconds (0 = `u32::MAX`) with `flags`.
    pub fn new(
        ctx: MtCtx,
        name: &str,
        server: &str,
        ttl_s: u32,
        flags: MountFlags,
        start: Start,
    ) -> Mount {
        if !codec::validate_server(server) {
            let error = MtError::MalformedAddress {
                server: server.into(),
            };
            return failed(ctx, start, error);
        }
        let suffix = codec::normalize_suffix(name);
        begin_at_name(ctx, suffix, start, |suffix| {
            MountFlow::new(operations::MountArgs {
                suffix,
                server: String::from(server),
                ttl_s,
                flags,
            })
        })
    }
}

impl Unmount {
    /// Unmounts `server` (`""` = all) from `name`.
    pub fn new(ctx: MtCtx, name: &str, server: &str, start: Start) -> Unmount {
        let suffix = codec::normalize_suffix(name);
        begin_at_name(ctx, suffix, start, |suffix| {
            UnmountFlow::new(operations::UnmountArgs {
                suffix,
                server: String::from(server),
            })
        })
    }
}

impl Delete {
    /// Deletes `name` (and its subtree when `subtree`); the root may not be deleted.
    pub fn new(ctx: MtCtx, name: &str, subtree: bool, start: Start) -> Delete {
        let suffix = codec::normalize_suffix(name);
        if suffix.is_empty() {
            return failed(ctx, start, MtError::NoAccess);
        }
        begin_at_name(ctx, suffix, start, |suffix| {
            DeleteFlow::new(operations::DeleteArgs { suffix, subtree })
        })
    }
}

impl ResolveStep {
    /// Resolves one step of `name`.
    pub fn new(ctx: MtCtx, name: &str, start: Start) -> ResolveStep {
        let suffix = codec::normalize_suffix(name);
        begin_at_name(ctx, suffix, start, ResolveStepFlow::resolve)
    }
}

impl Glob {
    /// Globs `pattern` under `name`; an invalid pattern fails before any request.
    pub fn new(ctx: MtCtx, name: &str, pattern: &str, start: Start) -> Glob {
        let Ok(pattern) = GlobPattern::parse(pattern) else {
            return failed(ctx, start, MtError::BadPattern);
        };
        let suffix = codec::normalize_suffix(name);
        begin_at_name(ctx, suffix, start, |suffix| GlobFlow::new(suffix, pattern))
    }
}

impl GetPermissions {
    /// Reads the permissions of `name`.
    pub fn new(ctx: MtCtx, name: &str, start: Start) -> GetPermissions {
        let suffix = codec::normalize_suffix(name);
        begin_at_name(ctx, suffix, start, GetPermissionsFlow::permissions)
    }
}

impl SetPermissions {
    /// Sets the permissions of `name` (creating it), if its version is `version` (or `""`).
    pub fn new(
        ctx: MtCtx,
        name: &str,
        mut perms: Permissions,
        version: &str,
        start: Start,
    ) -> SetPermissions {
        // The caller keeps admin rights over what it sets.
        if nodes::authorize(&ctx, &perms, &[codec::tags::ADMIN]).is_err() {
            for b in &ctx.caller.blessing_names {
                perms.add(b, codec::tags::ADMIN);
            }
        }
        perms.normalize();
        let suffix = codec::normalize_suffix(name);
        begin_at_name(ctx, suffix, start, |suffix| {
            SetPermissionsFlow::new(operations::SetPermsArgs {
                suffix,
                perms,
                version: String::from(version),
            })
        })
    }
}

impl Fsck {
    /// Checks (and with `fix`, repairs) the whole table.
    pub fn new(ctx: MtCtx, fix: bool, start: Start) -> Fsck {
        begin(ctx, start, FsckFlow::new(fix))
    }
}

impl CreateInitialNodes {
    /// Creates the root, from a permissions file (`{name: perms}`) or with the default.
    pub fn new(
        ctx: MtCtx,
        perms_file: Option<BTreeMap<String, Permissions>>,
        start: Start,
    ) -> CreateInitialNodes {
        begin(ctx, start, CreateInitialNodesFlow::new(perms_file))
    }
}

impl ReadCounters {
    /// Reads the counter table.
    pub fn new(ctx: MtCtx, start: Start) -> ReadCounters {
        begin(ctx, start, ReadCountersFlow::new())
    }
}

impl PrimitiveOp {
    /// Runs one primitive.
    pub fn new(ctx: MtCtx, primitive: Primitive, start: Start) -> PrimitiveOp {
        begin(ctx, start, PrimitiveFlow::new(primitive))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send<T: Send>() {}

    /// Every machine can move to another thread (a multi-threaded async runtime runs them).
    #[test]
    fn every_mounttable_machine_is_send() {
        send::<Mount>();
        send::<Unmount>();
        send::<Delete>();
        send::<ResolveStep>();
        send::<Glob>();
        send::<GetPermissions>();
        send::<SetPermissions>();
        send::<Fsck>();
        send::<CreateInitialNodes>();
        send::<ReadCounters>();
        send::<PrimitiveOp>();
        send::<RowCache>();
    }
}
