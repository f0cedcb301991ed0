//! The mount table protocols of Vanadium's btmtd (`spec/mounttable.md`): one machine per
//! operation (Mount, Unmount, ResolveStep, Glob, Delete, GetPermissions, SetPermissions, Fsck,
//! CreateInitialNodes, ReadCounters) plus [`PrimitiveOp`] for the internal node primitives that
//! tests and repair tools drive directly, and the hot-row [`RowCache`].
//!
//! Every machine takes an [`MtCtx`] (tables, caller, global ACL, limits, gc grace, operation
//! deadline, the facade's shared memo of decoded [`Nodes`]), `now` and a `seed`, and reaches the
//! store only through the requests it emits.
//! OCC conflicts are retried with seeded jitter until the operation deadline, then the machine
//! ends with [`MtError::Aborted`].

mod cache;
mod frames;
mod glob;
mod machine;
mod nodes;
mod operations;

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

pub use cache::{Completion, Lookup, ROW_CACHE_CAPACITY, ROW_CACHE_TTL_US, RowCache, WaiterId};
pub use glob::{BadPattern, Glob as GlobPattern, path_match};
pub use nodes::{Nodes, SharedNodes};
use rowkit_codec::mounttable::{AccessList, Caller, NodeRow, Permissions};

use crate::{Machine, Request, Response, StoreError, Tag, Timestamp};
use frames::Frame;
use machine::OpMachine;
use operations::{
    CreateInitialNodes as InitialFrame, DeleteAttempt, DeleteAttemptState, Fsck as FsckFrame,
    GetPermissions as GetPermsFrame, GlobOp, GlobState, MountAttempt, PrimitiveFrame,
    ReadCounters as CountersFrame, ResolveStep as ResolveFrame, Retry, SetPermsAttempt,
    UnmountAttempt, WalkState, fail,
};

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
    /// Operation deadline.
    pub deadline: Timestamp,
    /// Where node reads find the nodes already decoded from the rows a cache hands out again
    /// (the facade's memo; behaviour-neutral).
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
    /// Inconsistencies counted over all passes.
    pub inconsistent: u64,
    /// Row keys fixed.
    pub fixed: Vec<Vec<u8>>,
    /// Row keys that do not decode (left alone).
    pub undecodable: Vec<Vec<u8>>,
}

/// Kinds of fsck findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindingKind {
    /// A node its parent does not reference.
    Orphan,
    /// A child reference to a missing node or another incarnation.
    Dangling,
    /// A row that does not decode.
    Undecodable,
    /// A check that hit a store error.
    StoreError,
}

/// Events of mounttable machines.
#[derive(Clone, Debug, PartialEq)]
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
    },
}

/// Errors of §18.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
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
    /// The operation deadline was reached.
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
    #[error("fsck: {} inconsistencies, {} undecodable rows", .0.inconsistent, .0.undecodable.len())]
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

macro_rules! machine {
    ($(#[$meta:meta])* $name:ident, $out:ty) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $name(OpMachine<$out>);

        impl Machine for $name {
            type Output = $out;
            type Event = MtEvent;
            type Error = MtError;

            fn handle_response(
                &mut self,
                tag: Tag,
                response: Result<Response, StoreError>,
                now: Timestamp,
            ) {
                self.0.handle_response(tag, response, now)
            }
            fn handle_timeout(&mut self, now: Timestamp) {
                self.0.handle_timeout(now)
            }
            fn cancel(&mut self, now: Timestamp) {
                self.0.cancel(now)
            }
            fn poll_request(&mut self) -> Option<(Tag, Request)> {
                self.0.poll_request()
            }
            fn poll_abort(&mut self) -> Option<Tag> {
                self.0.poll_abort()
            }
            fn poll_event(&mut self) -> Option<MtEvent> {
                self.0.poll_event()
            }
            fn poll_timeout(&self) -> Option<Timestamp> {
                self.0.poll_timeout()
            }
            fn result(&mut self) -> Option<Result<$out, MtError>> {
                self.0.result()
            }
        }
    };
}

machine!(
    /// `Mount(name, server, ttl, flags)`: output is the deadline written (µs).
    Mount, i64
);
machine!(
    /// `Unmount(name, server)` (`""` = every server).
    Unmount, ()
);
machine!(
    /// `Delete(name, subtree)`.
    Delete, ()
);
machine!(
    /// `ResolveStep(name)`.
    ResolveStep, MountEntry
);
machine!(
    /// `Glob(name, pattern)`: entries arrive as [`MtEvent::GlobEntry`].
    Glob, ()
);
machine!(
    /// `GetPermissions(name)`.
    GetPermissions, PermsAndVersion
);
machine!(
    /// `SetPermissions(name, perms, version)` (`""` = any version).
    SetPermissions, PermsAndVersion
);
machine!(
    /// `Fsck(fix)`.
    Fsck, FsckSummary
);
machine!(
    /// `CreateInitialNodes(perms_file)`: the root (and the file's nodes).
    CreateInitialNodes, ()
);
machine!(
    /// Every counter row: row key → value.
    ReadCounters, BTreeMap<Vec<u8>, i64>
);
machine!(
    /// One internal primitive ([`Primitive`]).
    PrimitiveOp, PrimitiveOutput
);

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
        let frame = if rowkit_codec::mounttable::validate_server(server) {
            Retry::frame(Frame::MountAttempt(MountAttempt {
                suffix: rowkit_codec::mounttable::normalize_suffix(name),
                server: String::from(server),
                ttl_s,
                flags,
                state: WalkState::Start,
            }))
        } else {
            fail(MtError::MalformedAddress {
                server: server.into(),
            })
        };
        Mount(OpMachine::start(ctx, now, seed, frame))
    }
}

impl Unmount {
    /// Unmounts `server` (`""` = all) from `name`.
    pub fn new(ctx: MtCtx, name: &str, server: &str, now: Timestamp, seed: u64) -> Unmount {
        let frame = Retry::frame(Frame::UnmountAttempt(UnmountAttempt {
            suffix: rowkit_codec::mounttable::normalize_suffix(name),
            server: String::from(server),
            state: WalkState::Start,
        }));
        Unmount(OpMachine::start(ctx, now, seed, frame))
    }
}

impl Delete {
    /// Deletes `name` (and its subtree when `subtree`).
    pub fn new(ctx: MtCtx, name: &str, subtree: bool, now: Timestamp, seed: u64) -> Delete {
        let suffix = rowkit_codec::mounttable::normalize_suffix(name);
        let frame = if suffix.is_empty() {
            fail(MtError::NoAccess)
        } else {
            Retry::frame(Frame::DeleteAttempt(DeleteAttempt {
                suffix,
                subtree,
                node: None,
                denied: None,
                state: DeleteAttemptState::Start,
            }))
        };
        Delete(OpMachine::start(ctx, now, seed, frame))
    }
}

impl ResolveStep {
    /// Resolves one step of `name`.
    pub fn new(ctx: MtCtx, name: &str, now: Timestamp, seed: u64) -> ResolveStep {
        let frame = Frame::ResolveStep(ResolveFrame {
            suffix: rowkit_codec::mounttable::normalize_suffix(name),
            state: WalkState::Start,
        });
        ResolveStep(OpMachine::start(ctx, now, seed, frame))
    }
}

impl Glob {
    /// Globs `pattern` under `name`.
    pub fn new(ctx: MtCtx, name: &str, pattern: &str, now: Timestamp, seed: u64) -> Glob {
        let frame = Frame::Glob(GlobOp {
            suffix: rowkit_codec::mounttable::normalize_suffix(name),
            pattern: String::from(pattern),
            queue: alloc::collections::VecDeque::new(),
            current: None,
            state: GlobState::Start,
        });
        Glob(OpMachine::start(ctx, now, seed, frame))
    }
}

impl GetPermissions {
    /// Reads the permissions of `name`.
    pub fn new(ctx: MtCtx, name: &str, now: Timestamp, seed: u64) -> GetPermissions {
        let frame = Frame::GetPermissions(GetPermsFrame {
            suffix: rowkit_codec::mounttable::normalize_suffix(name),
            state: WalkState::Start,
        });
        GetPermissions(OpMachine::start(ctx, now, seed, frame))
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
        if frames::authorize(&ctx, &perms, &[rowkit_codec::mounttable::tags::ADMIN]).is_err() {
            for b in &ctx.caller.blessing_names {
                perms.add(b, rowkit_codec::mounttable::tags::ADMIN);
            }
        }
        perms.normalize();
        let frame = Retry::frame(Frame::SetPermsAttempt(SetPermsAttempt {
            suffix: rowkit_codec::mounttable::normalize_suffix(name),
            perms,
            version: String::from(version),
            next_version: String::new(),
            state: WalkState::Start,
        }));
        SetPermissions(OpMachine::start(ctx, now, seed, frame))
    }
}

impl Fsck {
    /// Checks (and with `fix`, repairs) the whole table.
    pub fn new(ctx: MtCtx, fix: bool, now: Timestamp, seed: u64) -> Fsck {
        Fsck(OpMachine::start(ctx, now, seed, FsckFrame::frame(fix)))
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
        let frame = InitialFrame::frame(perms_file);
        CreateInitialNodes(OpMachine::start(ctx, now, seed, frame))
    }
}

impl ReadCounters {
    /// Reads the counter table.
    pub fn new(ctx: MtCtx, now: Timestamp, seed: u64) -> ReadCounters {
        let frame = Frame::ReadCounters(CountersFrame { scanned: false });
        ReadCounters(OpMachine::start(ctx, now, seed, frame))
    }
}

impl PrimitiveOp {
    /// Runs one primitive.
    pub fn new(ctx: MtCtx, primitive: Primitive, now: Timestamp, seed: u64) -> PrimitiveOp {
        let frame = PrimitiveFrame::frame(primitive);
        PrimitiveOp(OpMachine::start(ctx, now, seed, frame))
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
