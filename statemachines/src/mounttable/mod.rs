//! The mount table protocols of Vanadium's btmtd (`spec/mounttable.md`): one operation per
//! service call (Mount, Unmount, ResolveStep, Glob, Delete, GetPermissions, SetPermissions,
//! Fsck, CreateInitialNodes, ReadCounters) plus [`PrimitiveOp`] for the internal node
//! primitives that tests and repair tools drive directly, and the hot-row [`RowCache`].
//!
//! Every operation is an [`Operation`] of [`MountTableSchema`] running a flow with explicit
//! phases: `new(ctx, args.., now, seed)` takes an [`MtCtx`] (tables, caller, global ACL,
//! limits, gc grace, operation deadline, where to find [`Nodes`] already decoded) by value,
//! and reaches the store only through the requests it emits. The node protocols they share (the walk that resolves and creates
//! nodes, OCC writes, GC of expired servers, the subtree delete) are steps nested in their
//! parents' phases. OCC conflicts are retried with seeded jitter. `cancel` ends an operation
//! with [`MtError::Aborted`] at once; the operation deadline does so at the points §17 names
//! (before each attempt, walk element, glob step, fsck pass and row), never inside a node
//! protocol, whose requests carry deadlines of their own.
//!
//! ```
//! use rowkit_statemachines::mounttable::{MtCtx, MtError, ResolveStep};
//! use rowkit_statemachines::{Machine, Request, Response, Timestamp};
//!
//! let mut m = ResolveStep::new(MtCtx::new(Timestamp(60_000_000)), "a/b", Timestamp(0), 7);
//! // The walk starts at the root row.
//! let (tag, request) = m.poll_request().unwrap();
//! assert!(matches!(request, Request::ReadRows(_)));
//! m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(1));
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
use rowkit_codec::mounttable::{self as codec, AccessList, Caller, NodeRow, Permissions};

use crate::operation::{Budget, ContextArg, Flow, Operation, OperationError, Schema};
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
    /// Operation deadline (§17): checked before each attempt, walk element, glob step and
    /// fsck pass and row (then [`MtError::Aborted`]); a request gets at least 60 s beyond it,
    /// the detached second half of a two-row write 1 h.
    pub deadline: Timestamp,
    /// Where node reads find the nodes already decoded from the rows a cache hands out again
    /// (the facade's hot-row cache keeps them beside the rows; behaviour-neutral).
    pub nodes: Nodes,
}

impl MtCtx {
    /// btmtd's defaults, the server itself as caller, and the given deadline.
    pub fn new(deadline: Timestamp) -> MtCtx {
        MtCtx {
            tables: Tables::default(),
            caller: Caller {
                blessing_names: Vec::new(),
                is_server: true,
            },
            global_acl: AccessList::default(),
            limits: Limits::default(),
            gc_grace_us: 60_000_000,
            deadline,
            nodes: Nodes::none(),
        }
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
    #[error("aborted: operation deadline reached")]
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
    /// The stable id (§18), used by the CLI's `--json` errors.
    pub fn id(&self) -> &'static str {
        match self {
            MtError::NoSuchName { .. } => "v.io/v23/naming.nameDoesntExist",
            MtError::NoSuchNameRoot => "v.io/v23/naming.rootNameDoesntExist",
            MtError::BadVersion => "v.io/v23/verror.BadVersion",
            MtError::NoAccess => "v.io/v23/verror.NoAccess",
            MtError::Aborted => "v.io/v23/verror.Aborted",
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
        flags: u32,
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

/// The mount table's operations (see the module doc): their context is an [`MtCtx`], owned
/// by the operation.
#[derive(Debug)]
pub struct MountTableSchema;

impl Schema for MountTableSchema {
    type Context = MtCtx;
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

/// Starts `flow` on `ctx`.
///
/// The flows enforce `ctx.deadline` themselves (see [`MtCtx::deadline`]), so the operation's
/// own [`Budget`] never cuts them: a deadline there would abort a node protocol halfway (a
/// child referenced but never created, a row deleted but still referenced, a server counted
/// but not mounted), which §17's detached second halves exist to prevent.
fn start<F: Flow<Schema = MountTableSchema>>(
    ctx: MtCtx,
    now: Timestamp,
    seed: u64,
    flow: F,
) -> Operation<'static, F> {
    let budget = Budget::until(Timestamp::MAX);
    Operation::start(ContextArg::owned(ctx), now, seed, budget, flow)
}

/// Starts the flow `flow()` on the node `suffix`, or, when that node's row key is over
/// Bigtable's limit, ends the operation before any request with the error the store would give
/// (`INVALID_ARGUMENT`; every node on the way has a shorter key).
fn start_at_name<F: Flow<Schema = MountTableSchema>>(
    ctx: MtCtx,
    suffix: String,
    now: Timestamp,
    seed: u64,
    flow: impl FnOnce(String) -> F,
) -> Operation<'static, F> {
    if let Err(e) = rowkit_codec::model::validate_row_key(&codec::row_key(&suffix)) {
        let error = MtError::Store(StoreError::new(
            crate::Code::InvalidArgument,
            alloc::string::ToString::to_string(&e),
        ));
        return Operation::failed(ContextArg::owned(ctx), error);
    }
    start(ctx, now, seed, flow(suffix))
}

/// `Mount(name, server, ttl, flags)`: output is the deadline written (µs).
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
/// `SetPermissions(name, perms, version)` (`""` = any version).
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
    /// Mounts `server` on `name` for `ttl_s` seconds (0 = `u32::MAX`) with MountFlag bits.
    pub fn new(
        ctx: MtCtx,
        name: &str,
        server: &str,
        ttl_s: u32,
        flags: u32,
        now: Timestamp,
        seed: u64,
    ) -> Mount {
        if !codec::validate_server(server) {
            let error = MtError::MalformedAddress {
                server: server.into(),
            };
            return Operation::failed(ContextArg::owned(ctx), error);
        }
        let suffix = codec::normalize_suffix(name);
        start_at_name(ctx, suffix, now, seed, |suffix| {
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
    pub fn new(ctx: MtCtx, name: &str, server: &str, now: Timestamp, seed: u64) -> Unmount {
        let suffix = codec::normalize_suffix(name);
        start_at_name(ctx, suffix, now, seed, |suffix| {
            UnmountFlow::new(operations::UnmountArgs {
                suffix,
                server: String::from(server),
            })
        })
    }
}

impl Delete {
    /// Deletes `name` (and its subtree when `subtree`); the root may not be deleted.
    pub fn new(ctx: MtCtx, name: &str, subtree: bool, now: Timestamp, seed: u64) -> Delete {
        let suffix = codec::normalize_suffix(name);
        if suffix.is_empty() {
            return Operation::failed(ContextArg::owned(ctx), MtError::NoAccess);
        }
        start_at_name(ctx, suffix, now, seed, |suffix| {
            DeleteFlow::new(operations::DeleteArgs { suffix, subtree })
        })
    }
}

impl ResolveStep {
    /// Resolves one step of `name`.
    pub fn new(ctx: MtCtx, name: &str, now: Timestamp, seed: u64) -> ResolveStep {
        start_at_name(
            ctx,
            codec::normalize_suffix(name),
            now,
            seed,
            ResolveStepFlow::resolve,
        )
    }
}

impl Glob {
    /// Globs `pattern` under `name`; an invalid pattern fails before any request.
    pub fn new(ctx: MtCtx, name: &str, pattern: &str, now: Timestamp, seed: u64) -> Glob {
        let Ok(pattern) = GlobPattern::parse(pattern) else {
            return Operation::failed(ContextArg::owned(ctx), MtError::BadPattern);
        };
        let suffix = codec::normalize_suffix(name);
        start_at_name(ctx, suffix, now, seed, |suffix| {
            GlobFlow::new(suffix, pattern)
        })
    }
}

impl GetPermissions {
    /// Reads the permissions of `name`.
    pub fn new(ctx: MtCtx, name: &str, now: Timestamp, seed: u64) -> GetPermissions {
        start_at_name(
            ctx,
            codec::normalize_suffix(name),
            now,
            seed,
            GetPermissionsFlow::permissions,
        )
    }
}

impl SetPermissions {
    /// Sets the permissions of `name` (creating it), if its version is `version` (or `""`).
    pub fn new(
        ctx: MtCtx,
        name: &str,
        mut perms: Permissions,
        version: &str,
        now: Timestamp,
        seed: u64,
    ) -> SetPermissions {
        // The caller keeps admin rights over what it sets.
        if nodes::authorize(&ctx, &perms, &[codec::tags::ADMIN]).is_err() {
            for b in &ctx.caller.blessing_names {
                perms.add(b, codec::tags::ADMIN);
            }
        }
        perms.normalize();
        let suffix = codec::normalize_suffix(name);
        start_at_name(ctx, suffix, now, seed, |suffix| {
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
    pub fn new(ctx: MtCtx, fix: bool, now: Timestamp, seed: u64) -> Fsck {
        start(ctx, now, seed, FsckFlow::new(fix))
    }
}

impl CreateInitialNodes {
    /// Creates the root, from a permissions file (`{name: perms}`) or with the default.
    pub fn new(
        ctx: MtCtx,
        perms_file: Option<BTreeMap<String, Permissions>>,
        now: Timestamp,
        seed: u64,
    ) -> CreateInitialNodes {
        start(ctx, now, seed, CreateInitialNodesFlow::new(perms_file))
    }
}

impl ReadCounters {
    /// Reads the counter table.
    pub fn new(ctx: MtCtx, now: Timestamp, seed: u64) -> ReadCounters {
        start(ctx, now, seed, ReadCountersFlow::new())
    }
}

impl PrimitiveOp {
    /// Runs one primitive.
    pub fn new(ctx: MtCtx, primitive: Primitive, now: Timestamp, seed: u64) -> PrimitiveOp {
        start(ctx, now, seed, PrimitiveFlow::new(primitive))
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
