//! The node protocols of `spec/mounttable.md` §10–§12 as frames of the coroutine stack (see
//! `machine`): counters, row and child creation, subtree deletion, opportunistic GC, mount and
//! unmount on a snapshot, and the path walk. The service operations built on them live in
//! `operations`.
//!
//! Each frame is a struct holding its locals and a `state` naming what it waits for; `step`
//! is resumed with the outcome of that wait and answers the next [`Step`]. Internal moves that
//! need no store request loop inside `step`.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{Code, Mutation, Timestamp};
use rowkit_codec::mounttable::{
    self as codec, CounterKind, FAMILY_CHILDREN, FAMILY_META, FAMILY_SERVERS, MARKER_VALUE,
    MountFlags, NodeRow, Permissions, tags,
};

use super::machine::{Call, Env, Half, Input, Node, Step, Value};
use super::operations::{
    CreateInitialNodes, DeleteAttempt, Fsck, FsckPass, GetPermissions, GlobOp, MountAttempt,
    PrimitiveFrame, ReadCounters, ResolveStep, Retry, SetPermsAttempt, UnmountAttempt,
};
use super::{MountEntry, MountedServer, MtCtx, MtError};

/// Returns `Step::Return(Err(e))` from a frame's `step` on error.
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return Step::Return(Err(e)),
        }
    };
}
pub(crate) use tri;

/// One sub-protocol in progress.
#[derive(Clone, Debug)]
pub(crate) enum Frame {
    Increment(Increment),
    CreateRow(CreateRow),
    CreateChild(CreateChild),
    EnsureLinked(EnsureLinked),
    Delete(Delete),
    DeleteAndGc(DeleteAndGc),
    Gc(Gc),
    MountNode(MountNode),
    UnmountNode(UnmountNode),
    AccessNode(AccessNode),
    Retry(Retry),
    MountAttempt(MountAttempt),
    UnmountAttempt(UnmountAttempt),
    DeleteAttempt(DeleteAttempt),
    SetPermsAttempt(SetPermsAttempt),
    ResolveStep(ResolveStep),
    Glob(GlobOp),
    GetPermissions(GetPermissions),
    CreateInitialNodes(CreateInitialNodes),
    ReadCounters(ReadCounters),
    Fsck(Fsck),
    FsckPass(FsckPass),
    Primitive(PrimitiveFrame),
}

impl Frame {
    /// Resumes this frame with the outcome of its last wait.
    pub(crate) fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self {
            Frame::Increment(f) => f.step(env, input),
            Frame::CreateRow(f) => f.step(env, input),
            Frame::CreateChild(f) => f.step(env, input),
            Frame::EnsureLinked(f) => f.step(env, input),
            Frame::Delete(f) => f.step(env, input),
            Frame::DeleteAndGc(f) => f.step(env, input),
            Frame::Gc(f) => f.step(env, input),
            Frame::MountNode(f) => f.step(env, input),
            Frame::UnmountNode(f) => f.step(env, input),
            Frame::AccessNode(f) => f.step(env, input),
            Frame::Retry(f) => f.step(env, input),
            Frame::MountAttempt(f) => f.step(env, input),
            Frame::UnmountAttempt(f) => f.step(env, input),
            Frame::DeleteAttempt(f) => f.step(env, input),
            Frame::SetPermsAttempt(f) => f.step(env, input),
            Frame::ResolveStep(f) => f.step(env, input),
            Frame::Glob(f) => f.step(env, input),
            Frame::GetPermissions(f) => f.step(env, input),
            Frame::CreateInitialNodes(f) => f.step(env, input),
            Frame::ReadCounters(f) => f.step(env, input),
            Frame::Fsck(f) => f.step(env, input),
            Frame::FsckPass(f) => f.step(env, input),
            Frame::Primitive(f) => f.step(env, input),
        }
    }
}

// ---- shared helpers ---------------------------------------------------------------------------

pub(crate) fn set(family: &str, qualifier: &[u8], timestamp: Timestamp, value: &[u8]) -> Mutation {
    Mutation::SetCell {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        timestamp,
        value: value.to_vec(),
    }
}

pub(crate) fn delete_column(family: &str, qualifier: &[u8]) -> Mutation {
    Mutation::DeleteFromColumn {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        range: None,
    }
}

pub(crate) fn entry_of(name: String, node: &NodeRow) -> MountEntry {
    MountEntry {
        name,
        servers: node
            .servers
            .iter()
            .map(|s| MountedServer {
                server: s.server.clone(),
                deadline_us: s.deadline_us,
            })
            .collect(),
        mt: node.mt,
        leaf: node.leaf,
    }
}

/// §12.2.
pub(crate) fn authorize(
    ctx: &MtCtx,
    perms: &Permissions,
    wanted: &[&'static str],
) -> Result<(), MtError> {
    let caller = &ctx.caller;
    if caller.is_server
        || wanted
            .iter()
            .any(|t| perms.includes(t, &caller.blessing_names))
        || ctx.global_acl.includes(&caller.blessing_names)
    {
        return Ok(());
    }
    Err(MtError::NoPermissions {
        tag: wanted.first().copied().unwrap_or(tags::ADMIN),
    })
}

/// §11.6 `setPermissions` on a node snapshot (also makes it sticky): one OCC mutation.
pub(crate) fn set_perms_call(node: &Node, perms: &Permissions) -> Call {
    let ts = Timestamp::SERVER_TIME;
    Call::Mutate {
        node: node.clone(),
        mutations: vec![
            set(
                FAMILY_META,
                codec::QUAL_PERMS,
                ts,
                &codec::encode_permissions(perms),
            ),
            set(FAMILY_META, codec::QUAL_STICKY, ts, MARKER_VALUE),
        ],
        delete: false,
    }
}

/// Whether `parent` references this incarnation of `child`.
fn references(parent: &NodeRow, child: &NodeRow) -> bool {
    let name = codec::split(&child.name).1;
    let wanted = (child.id.as_slice(), name);
    // References come in qualifier order, i.e. by (8-byte id, name): a binary search finds one
    // at once in a directory of thousands. A miss is confirmed by a scan, so that a row out of
    // order can never look unreferenced.
    parent
        .children
        .binary_search_by(|c| (c.id.as_slice(), c.name.as_str()).cmp(&wanted))
        .is_ok()
        || parent
            .children
            .iter()
            .any(|c| c.id == child.id && c.name == name)
}

/// The wait after a conflict: `(next_u64 % 50)` ms, bounded by the operation deadline.
pub(crate) fn back_off(env: &mut Env) -> Call {
    let jitter = (env.next_u64() % 50) as i64 * 1000;
    Call::Sleep {
        until: env.now.saturating_add_micros(jitter).min(env.ctx.deadline),
    }
}

/// Whether a child reference is a leftover that a creator of the same name may remove.
///
/// rowkit fix (btmtd removes every same-name reference of its parent snapshot, §11.1 step
/// 4): a reference younger than the 1 h detached deadline of a two-row operation's second
/// half (§17) may belong to a creator whose row is still to come, or to a deleted incarnation
/// whose deleter removes it next; both clean up after themselves. Removing such a reference
/// can orphan a live row: its creator's row lands after the removal, walks still find the row
/// by key, a caller mounts on it, and the parent, now without references, is collected under
/// it (the NoSuchName of the concurrency scenarios). Only crash leftovers grow older than that.
pub(crate) fn is_stale(child: &codec::ChildRef, now: Timestamp) -> bool {
    now.0.saturating_sub(child.written_us) >= STALE_CHILD_US
}

/// Whether a write that failed with `e` may still have been applied: the request reached the
/// store but its answer did not come back (lost, timed out, cut). Only a definite answer proves
/// the write did not happen.
pub(crate) fn outcome_unknown(e: &MtError) -> bool {
    matches!(
        e,
        MtError::Store(s) if matches!(
            s.code,
            Code::Unavailable
                | Code::DeadlineExceeded
                | Code::Aborted
                | Code::Cancelled
                | Code::Unknown
                | Code::Internal
        )
    )
}

/// The age past which a child reference is a crash leftover: the second half's deadline.
const STALE_CHILD_US: i64 = 3600 * 1_000_000;

fn get_node(name: &str) -> Step {
    Step::Await(Call::GetNode { name: name.into() })
}

fn mutate_parent(env: &Env, parent: &str, mutations: Vec<Mutation>, half: Half) -> Step {
    Step::Await(Call::MutateRow {
        table: env.ctx.tables.node.clone(),
        key: codec::row_key(parent),
        mutations,
        half,
    })
}

// ---- §10.4 incrementWithLimit -----------------------------------------------------------------

/// §10.4: add `delta` to a creator's counter; past `limit`, undo and fail.
#[derive(Clone, Debug)]
pub(crate) struct Increment {
    key: Vec<u8>,
    kind: CounterKind,
    delta: i64,
    limit: i64,
    half: Half,
    state: IncrementState,
}

#[derive(Clone, Copy, Debug)]
enum IncrementState {
    Start,
    Added,
    Undone,
}

impl Increment {
    pub(crate) fn frame(
        kind: CounterKind,
        creator: &str,
        delta: i64,
        limit: i64,
        half: Half,
    ) -> Frame {
        Frame::Increment(Increment {
            key: codec::counter_row_key(kind, creator),
            kind,
            delta,
            limit,
            half,
            state: IncrementState::Start,
        })
    }

    fn call(&self, delta: i64) -> Step {
        Step::Await(Call::Increment {
            key: self.key.clone(),
            delta,
            half: self.half,
        })
    }

    fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            IncrementState::Start => {
                if self.delta == 0 {
                    return Step::Return(Ok(Value::Unit));
                }
                self.state = IncrementState::Added;
                self.call(self.delta)
            }
            IncrementState::Added => {
                let n = tri!(Value::int(input));
                if self.delta > 0 && self.limit > 0 && n > self.limit {
                    self.state = IncrementState::Undone;
                    return self.call(-self.delta);
                }
                Step::Return(Ok(Value::Unit))
            }
            IncrementState::Undone => {
                if let Err(e) = input {
                    env.warn("undo counter increment", e);
                }
                let limit = self.limit;
                Step::Return(Err(match self.kind {
                    CounterKind::Nodes => MtError::NodeLimitExceeded { limit },
                    CounterKind::Servers => MtError::ServerLimitExceeded { limit },
                }))
            }
        }
    }
}

// ---- §10.2 createRow ----------------------------------------------------------------------------

/// §10.2: count the node, then write the row only if it has no creator yet; undo the count if
/// the row exists or the write fails.
#[derive(Clone, Debug)]
pub(crate) struct CreateRow {
    name: String,
    perms: Permissions,
    creator: String,
    id: Vec<u8>,
    limit: i64,
    half: Half,
    error: Option<MtError>,
    state: CreateRowState,
}

#[derive(Clone, Copy, Debug)]
enum CreateRowState {
    Start,
    Counted,
    Written,
    Uncounted,
}

impl CreateRow {
    pub(crate) fn frame(
        name: &str,
        perms: &Permissions,
        creator: &str,
        id: &[u8],
        limit: i64,
        half: Half,
    ) -> Frame {
        let creator = if creator.is_empty() {
            codec::SERVER_USER
        } else {
            creator
        };
        Frame::CreateRow(CreateRow {
            name: name.into(),
            perms: perms.clone(),
            creator: creator.into(),
            id: id.to_vec(),
            limit,
            half,
            error: None,
            state: CreateRowState::Start,
        })
    }

    fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            CreateRowState::Start => {
                self.state = CreateRowState::Counted;
                Step::Push(Increment::frame(
                    CounterKind::Nodes,
                    &self.creator,
                    1,
                    self.limit,
                    self.half,
                ))
            }
            CreateRowState::Counted => {
                tri!(input);
                let version = codec::format_version((env.next_u64() >> 32) as u32);
                let predicate = rowkit_codec::model::RowFilter::Chain(vec![
                    rowkit_codec::model::RowFilter::FamilyNameRegex(FAMILY_META.into()),
                    rowkit_codec::model::RowFilter::ColumnQualifierRegex(
                        codec::QUAL_CREATOR.to_vec(),
                    ),
                ]);
                let ts = Timestamp::SERVER_TIME;
                let json = codec::encode_permissions(&self.perms);
                let mutations = vec![
                    set(FAMILY_META, codec::QUAL_ID, ts, &self.id),
                    set(
                        FAMILY_META,
                        codec::QUAL_CREATOR,
                        ts,
                        self.creator.as_bytes(),
                    ),
                    set(FAMILY_META, codec::QUAL_PERMS, ts, &json),
                    set(FAMILY_META, codec::QUAL_VERSION, ts, version.as_bytes()),
                ];
                self.state = CreateRowState::Written;
                Step::Await(Call::CheckAndMutate {
                    key: codec::row_key(&self.name),
                    predicate,
                    true_mutations: Vec::new(),
                    false_mutations: mutations,
                    half: self.half,
                })
            }
            CreateRowState::Written => {
                self.error = Some(match Value::matched(input) {
                    Ok(false) => return Step::Return(Ok(Value::Unit)),
                    Ok(true) => MtError::ConcurrentAccess,
                    // rowkit fix: the row may exist (its answer was lost). Keep the count, as
                    // for a row that does: a stale counter is tolerated and fsck recounts.
                    Err(e) if outcome_unknown(&e) => return Step::Return(Err(e)),
                    Err(e) => e,
                });
                self.state = CreateRowState::Uncounted;
                Step::Push(Increment::frame(
                    CounterKind::Nodes,
                    &self.creator,
                    -1,
                    0,
                    self.half,
                ))
            }
            CreateRowState::Uncounted => {
                if let Err(e) = input {
                    env.warn("undo node counter", e);
                }
                Step::Return(Err(self.error.take().unwrap_or(MtError::ConcurrentAccess)))
            }
        }
    }
}

// ---- §11.1 createChild ------------------------------------------------------------------------

/// §11.1: reference the child in the parent (OCC), create its row (rolling the reference back
/// on failure), drop stale references of the same name, read the new node back and make sure
/// it is still linked.
#[derive(Clone, Debug)]
pub(crate) struct CreateChild {
    parent: Node,
    child: String,
    perms: Permissions,
    creator: String,
    limit: i64,
    qualifier: Vec<u8>,
    child_name: String,
    /// Re-creating a dangling child of a node being deleted (§11.2 step 2): every same-name
    /// reference goes, as in btmtd (the parent row and all its references go next anyway).
    repair: bool,
    error: Option<MtError>,
    node: Option<Node>,
    state: CreateChildState,
}

#[derive(Clone, Copy, Debug)]
enum CreateChildState {
    Start,
    Referenced,
    RowCreated,
    RolledBack,
    StaleDropped,
    ReadBack,
    Linked,
}

impl CreateChild {
    pub(crate) fn frame(
        parent: &Node,
        child: &str,
        perms: &Permissions,
        creator: &str,
        limit: i64,
    ) -> Frame {
        Frame::CreateChild(CreateChild {
            parent: parent.clone(),
            child: child.into(),
            perms: perms.clone(),
            creator: creator.into(),
            limit,
            qualifier: codec::child_qualifier(&parent.version, child),
            child_name: codec::join(&[&parent.name, child]),
            repair: false,
            error: None,
            node: None,
            state: CreateChildState::Start,
        })
    }

    fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            CreateChildState::Start => {
                if self.parent.version.len() != 8 {
                    return Step::Return(Err(codec::VersionError {
                        value: self.parent.version_str(),
                        reason: "a parent version used as a child id must be 8 bytes",
                    }
                    .into()));
                }
                self.state = CreateChildState::Referenced;
                Step::Await(Call::Mutate {
                    node: self.parent.clone(),
                    mutations: vec![set(
                        FAMILY_CHILDREN,
                        &self.qualifier,
                        Timestamp::SERVER_TIME,
                        MARKER_VALUE,
                    )],
                    delete: false,
                })
            }
            CreateChildState::Referenced => {
                tri!(input);
                self.state = CreateChildState::RowCreated;
                // The parent's version is the child's id (§11.1).
                Step::Push(CreateRow::frame(
                    &self.child_name,
                    &self.perms,
                    &self.creator,
                    &self.parent.version,
                    self.limit,
                    Half::Second,
                ))
            }
            CreateChildState::RowCreated => {
                if let Err(e) = input {
                    if outcome_unknown(&e) {
                        // rowkit fix: the child row may exist (the createRow answer was lost).
                        // Rolling the reference back would orphan it, and a later walk would
                        // use that orphan until fsck deletes it with whatever was mounted on
                        // it. Keeping the reference leaves at worst a dangling one, which
                        // §17 tolerates and re-creation or fsck repairs.
                        return Step::Return(Err(e));
                    }
                    self.error = Some(e);
                    self.state = CreateChildState::RolledBack;
                    return mutate_parent(
                        env,
                        &self.parent.name,
                        vec![delete_column(FAMILY_CHILDREN, &self.qualifier)],
                        Half::First,
                    );
                }
                let stale: Vec<Mutation> = self
                    .parent
                    .children
                    .iter()
                    .filter(|c| c.name == self.child && (self.repair || is_stale(c, env.now)))
                    .map(|c| {
                        delete_column(FAMILY_CHILDREN, &codec::child_qualifier(&c.id, &c.name))
                    })
                    .collect();
                if stale.is_empty() {
                    self.state = CreateChildState::ReadBack;
                    return get_node(&self.child_name);
                }
                self.state = CreateChildState::StaleDropped;
                mutate_parent(env, &self.parent.name, stale, Half::First)
            }
            CreateChildState::RolledBack => {
                if let Err(w) = input {
                    env.warn("roll back child reference", w);
                }
                Step::Return(Err(self.error.take().unwrap_or(MtError::ConcurrentAccess)))
            }
            CreateChildState::StaleDropped => {
                if let Err(w) = input {
                    env.warn("delete stale child references", w);
                }
                self.state = CreateChildState::ReadBack;
                get_node(&self.child_name)
            }
            CreateChildState::ReadBack => {
                let node = tri!(tri!(Value::node(input)).ok_or(MtError::ConcurrentAccess));
                // rowkit fix: the row read back must be the incarnation we created. If ours
                // was collected and another caller created its own in between, that one is not
                // ours to return (its link is its creator's to check, and ours is dangling).
                if node.id != self.parent.version {
                    return Step::Return(Err(MtError::ConcurrentAccess));
                }
                self.node = Some(node.clone());
                self.state = CreateChildState::Linked;
                Step::Push(Frame::EnsureLinked(EnsureLinked {
                    parent_name: self.parent.name.clone(),
                    child: self.child.clone(),
                    id: self.parent.version.clone(),
                    node,
                    parent: None,
                    state: EnsureLinkedState::Start,
                }))
            }
            CreateChildState::Linked => {
                tri!(input);
                Step::Return(Ok(Value::Node(self.node.take())))
            }
        }
    }
}

/// rowkit fix (not in btmtd): after creating a child row, make sure the parent still
/// references it. Between our reference and our row, another caller may have taken our
/// reference for a dangling one, created, used and deleted its own incarnation and removed
/// our reference with it; our row would then be an orphan that walks still find by key while
/// the parent may be collected under it. Re-link it (OCC on the parent, dropping other
/// references of the same name), or remove it if the parent is gone.
#[derive(Clone, Debug)]
pub(crate) struct EnsureLinked {
    parent_name: String,
    child: String,
    id: Vec<u8>,
    node: Node,
    /// The parent snapshot a relink is based on.
    parent: Option<Node>,
    state: EnsureLinkedState,
}

#[derive(Clone, Copy, Debug)]
enum EnsureLinkedState {
    Start,
    ParentRead,
    ChildReread,
    OrphanRemoved,
    OrphanUnreferenced,
    OrphanUncounted,
    Relinked,
}

impl EnsureLinked {
    fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            EnsureLinkedState::Start => self.check(env),
            EnsureLinkedState::ParentRead => {
                let Some(parent) = tri!(Value::node(input)) else {
                    self.state = EnsureLinkedState::OrphanRemoved;
                    return Step::Await(Call::Mutate {
                        node: self.node.clone(),
                        mutations: vec![Mutation::DeleteFromRow],
                        delete: true,
                    });
                };
                if parent
                    .children
                    .iter()
                    .any(|c| c.id == self.id && c.name == self.child)
                {
                    return Step::Return(Ok(Value::Unit));
                }
                // Unlinked. Relink only the incarnation that still exists: a collector may
                // have deleted our row (its reference removal is a plain write, so the parent
                // version does not tell), and relinking a deleted incarnation would drop the
                // reference of the live one and orphan it.
                self.parent = Some(parent);
                self.state = EnsureLinkedState::ChildReread;
                get_node(&self.node.name)
            }
            EnsureLinkedState::ChildReread => {
                let ours = matches!(tri!(Value::node(input)), Some(n) if n.id == self.id);
                let Some(parent) = self.parent.take().filter(|_| ours) else {
                    // Our incarnation is gone: the operation retries the walk.
                    return Step::Return(Err(MtError::ConcurrentAccess));
                };
                let mut mutations: Vec<Mutation> = parent
                    .children
                    .iter()
                    .filter(|c| c.name == self.child && is_stale(c, env.now))
                    .map(|c| {
                        delete_column(FAMILY_CHILDREN, &codec::child_qualifier(&c.id, &c.name))
                    })
                    .collect();
                mutations.push(set(
                    FAMILY_CHILDREN,
                    &codec::child_qualifier(&self.id, &self.child),
                    Timestamp::SERVER_TIME,
                    MARKER_VALUE,
                ));
                self.state = EnsureLinkedState::Relinked;
                Step::Await(Call::Mutate {
                    node: parent,
                    mutations,
                    delete: false,
                })
            }
            EnsureLinkedState::OrphanRemoved => {
                if let Err(e) = input {
                    env.warn("remove orphaned new child", e);
                    return Step::Return(Err(MtError::ConcurrentAccess));
                }
                // A walker may have adopted the row into a parent created again meanwhile
                // (`AccessNode`): its reference goes with the row.
                self.state = EnsureLinkedState::OrphanUnreferenced;
                mutate_parent(
                    env,
                    &self.parent_name,
                    vec![delete_column(
                        FAMILY_CHILDREN,
                        &codec::child_qualifier(&self.id, &self.child),
                    )],
                    Half::First,
                )
            }
            EnsureLinkedState::OrphanUnreferenced => {
                if let Err(e) = input {
                    env.warn("remove the reference of an orphaned new child", e);
                }
                self.state = EnsureLinkedState::OrphanUncounted;
                Step::Push(Increment::frame(
                    CounterKind::Nodes,
                    &self.node.creator,
                    -1,
                    0,
                    Half::First,
                ))
            }
            EnsureLinkedState::OrphanUncounted => {
                if let Err(e) = input {
                    env.warn("undo node counter", e);
                }
                Step::Return(Err(MtError::ConcurrentAccess))
            }
            EnsureLinkedState::Relinked => match input {
                Ok(_) => Step::Return(Ok(Value::Unit)),
                Err(MtError::ConcurrentAccess) => self.check(env),
                Err(e) => Step::Return(Err(e)),
            },
        }
    }

    /// One round: read the parent again.
    fn check(&mut self, env: &mut Env) -> Step {
        tri!(env.check_deadline());
        self.state = EnsureLinkedState::ParentRead;
        get_node(&self.parent_name)
    }
}

// ---- §11.2 delete -------------------------------------------------------------------------------

/// §11.2: delete the children first, depth first (re-creating a dangling one so that it is
/// deleted like any other), then the row (OCC), the parent's reference, and the counts.
#[derive(Clone, Debug)]
pub(crate) struct Delete {
    node: Node,
    subtree: bool,
    /// Index of the child being deleted.
    next: usize,
    state: DeleteState,
}

#[derive(Clone, Copy, Debug)]
enum DeleteState {
    Start,
    ChildRead,
    ChildCreated,
    ChildDeleted,
    RowDeleted,
    Unreferenced,
    ServersUncounted,
    NodeUncounted,
}

impl Delete {
    pub(crate) fn frame(node: &Node, subtree: bool) -> Frame {
        Frame::Delete(Delete {
            node: node.clone(),
            subtree,
            next: 0,
            state: DeleteState::Start,
        })
    }

    fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            DeleteState::Start => {
                if !self.subtree && !self.node.children.is_empty() {
                    return Step::Return(Err(MtError::NotEmpty {
                        name: self.node.name.clone(),
                    }));
                }
                self.next_child()
            }
            DeleteState::ChildRead => match tri!(Value::node(input)) {
                Some(child) => {
                    self.state = DeleteState::ChildDeleted;
                    Step::Push(Delete::frame(&child, true))
                }
                None => {
                    let Some(c) = self.node.children.get(self.next) else {
                        return self.next_child();
                    };
                    self.state = DeleteState::ChildCreated;
                    let mut frame =
                        CreateChild::frame(&self.node, &c.name, &self.node.permissions, "", 0);
                    if let Frame::CreateChild(f) = &mut frame {
                        f.repair = true;
                    }
                    Step::Push(frame)
                }
            },
            DeleteState::ChildCreated => {
                let Some(child) = tri!(Value::node(input)) else {
                    return Step::Return(Err(MtError::ConcurrentAccess));
                };
                self.state = DeleteState::ChildDeleted;
                Step::Push(Delete::frame(&child, true))
            }
            DeleteState::ChildDeleted => {
                tri!(input);
                self.next += 1;
                self.next_child()
            }
            DeleteState::RowDeleted => {
                tri!(input);
                let (parent, base) = codec::split(&self.node.name);
                let mutations = vec![delete_column(
                    FAMILY_CHILDREN,
                    &codec::child_qualifier(&self.node.id, base),
                )];
                self.state = DeleteState::Unreferenced;
                mutate_parent(env, parent, mutations, Half::Second)
            }
            DeleteState::Unreferenced => {
                tri!(input);
                let servers = (self.node.servers.len() + self.node.expired_servers.len()) as i64;
                self.state = DeleteState::ServersUncounted;
                Step::Push(Increment::frame(
                    CounterKind::Servers,
                    &self.node.creator,
                    -servers,
                    0,
                    Half::First,
                ))
            }
            DeleteState::ServersUncounted => {
                tri!(input);
                self.state = DeleteState::NodeUncounted;
                Step::Push(Increment::frame(
                    CounterKind::Nodes,
                    &self.node.creator,
                    -1,
                    0,
                    Half::First,
                ))
            }
            DeleteState::NodeUncounted => Step::Return(input),
        }
    }

    /// Reads the next child, or deletes the row once every child is gone.
    fn next_child(&mut self) -> Step {
        match self.node.children.get(self.next) {
            Some(c) => {
                self.state = DeleteState::ChildRead;
                get_node(&codec::join(&[&self.node.name, &c.name]))
            }
            None => {
                self.state = DeleteState::RowDeleted;
                Step::Await(Call::Mutate {
                    node: self.node.clone(),
                    mutations: vec![Mutation::DeleteFromRow],
                    delete: true,
                })
            }
        }
    }
}

/// `deleteAndGC`: delete, then collect the parent if it became garbage.
#[derive(Clone, Debug)]
pub(crate) struct DeleteAndGc {
    node: Node,
    subtree: bool,
    state: DeleteAndGcState,
}

#[derive(Clone, Copy, Debug)]
enum DeleteAndGcState {
    Start,
    Deleted,
    ParentRead,
    Collected,
}

impl DeleteAndGc {
    pub(crate) fn frame(node: Node, subtree: bool) -> Frame {
        Frame::DeleteAndGc(DeleteAndGc {
            node,
            subtree,
            state: DeleteAndGcState::Start,
        })
    }

    fn step(&mut self, _env: &mut Env, input: Input) -> Step {
        match self.state {
            DeleteAndGcState::Start => {
                self.state = DeleteAndGcState::Deleted;
                Step::Push(Delete::frame(&self.node, self.subtree))
            }
            DeleteAndGcState::Deleted => {
                tri!(input);
                self.state = DeleteAndGcState::ParentRead;
                get_node(codec::split(&self.node.name).0)
            }
            DeleteAndGcState::ParentRead => match Value::node(input) {
                Ok(Some(parent)) => {
                    self.state = DeleteAndGcState::Collected;
                    Step::Push(Gc::frame(parent))
                }
                _ => Step::Return(Ok(Value::Unit)),
            },
            // GC is opportunistic: its outcome does not change the delete's.
            DeleteAndGcState::Collected => Step::Return(Ok(Value::Unit)),
        }
    }
}

// ---- §11.3 opportunistic GC ---------------------------------------------------------------------

/// §11.3: drop expired servers of a node, or delete it (and walk up) when it is an unused,
/// non-sticky, childless node past the grace period. Returns [`Value::Gc`]: whether it changed
/// something, and how it ended (its errors are for the caller to weigh, not to propagate).
#[derive(Clone, Debug)]
pub(crate) struct Gc {
    node: Node,
    changed: bool,
    state: GcState,
}

#[derive(Clone, Copy, Debug)]
enum GcState {
    Check,
    ExpiredDropped,
    ExpiredUncounted,
    Deleted,
    ParentRead,
}

impl Gc {
    pub(crate) fn frame(node: Node) -> Frame {
        Frame::Gc(Gc {
            node,
            changed: false,
            state: GcState::Check,
        })
    }

    fn done(&self, outcome: Result<(), MtError>) -> Step {
        Step::Return(Ok(Value::Gc(self.changed, outcome)))
    }

    fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            GcState::Check => self.check(env),
            GcState::ExpiredDropped => {
                if let Err(e) = input {
                    return self.done(Err(e));
                }
                let n = self.node.expired_servers.len() as i64;
                self.state = GcState::ExpiredUncounted;
                Step::Push(Increment::frame(
                    CounterKind::Servers,
                    &self.node.creator,
                    -n,
                    0,
                    Half::First,
                ))
            }
            GcState::ExpiredUncounted => match input {
                Err(e) => self.done(Err(e)),
                Ok(_) => Step::Return(Ok(Value::Gc(true, Ok(())))),
            },
            GcState::Deleted => {
                if let Err(e) = input {
                    return self.done(Err(e));
                }
                self.changed = true;
                let parent = codec::dir(&self.node.name);
                if parent == "." {
                    return self.done(Ok(()));
                }
                self.state = GcState::ParentRead;
                get_node(&parent)
            }
            GcState::ParentRead => match Value::node(input) {
                Err(e) => self.done(Err(e)),
                Ok(None) => self.done(Ok(())),
                Ok(Some(parent)) => {
                    self.node = parent;
                    self.check(env)
                }
            },
        }
    }

    /// Decides what to do with the current node.
    fn check(&mut self, env: &mut Env) -> Step {
        let node = &self.node;
        if node.name.is_empty() {
            return self.done(Ok(()));
        }
        if !node.expired_servers.is_empty() {
            let mutations = node
                .expired_servers
                .iter()
                .map(|s| delete_column(FAMILY_SERVERS, s.server.as_bytes()))
                .collect();
            self.state = GcState::ExpiredDropped;
            return Step::Await(Call::Mutate {
                node: node.clone(),
                mutations,
                delete: false,
            });
        }
        if node.sticky || !node.children.is_empty() || !node.servers.is_empty() {
            return self.done(Ok(()));
        }
        if env.now.0.saturating_sub(node.creation_time_us) < env.ctx.gc_grace_us {
            return self.done(Ok(()));
        }
        self.state = GcState::Deleted;
        Step::Push(Delete::frame(node, false))
    }
}

// ---- §11.4 mount, §11.5 unmount -------------------------------------------------------------------

/// §11.4 on a node snapshot: count the server, then write it (OCC), undoing the count on
/// failure. Returns the deadline written ([`Value::Int`]).
#[derive(Clone, Debug)]
pub(crate) struct MountNode {
    node: Node,
    server: String,
    deadline: Option<i64>,
    ttl_s: u32,
    flags: MountFlags,
    limit: i64,
    delta: i64,
    mutations: Vec<Mutation>,
    error: Option<MtError>,
    state: MountNodeState,
}

#[derive(Clone, Copy, Debug)]
enum MountNodeState {
    Start,
    Counted,
    Written,
    Uncounted,
}

impl MountNode {
    pub(crate) fn frame(
        node: &Node,
        server: &str,
        deadline: Option<i64>,
        ttl_s: u32,
        flags: u32,
        limit: i64,
    ) -> Frame {
        Frame::MountNode(MountNode {
            node: node.clone(),
            server: server.into(),
            deadline,
            ttl_s,
            flags: MountFlags(flags),
            limit,
            delta: 1,
            mutations: Vec::new(),
            error: None,
            state: MountNodeState::Start,
        })
    }

    fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            MountNodeState::Start => {
                for s in &self.node.servers {
                    if s.server == self.server || self.flags.has(MountFlags::REPLACE) {
                        self.mutations
                            .push(delete_column(FAMILY_SERVERS, s.server.as_bytes()));
                        self.delta -= 1;
                    }
                }
                self.state = MountNodeState::Counted;
                Step::Push(Increment::frame(
                    CounterKind::Servers,
                    &self.node.creator,
                    self.delta,
                    self.limit,
                    Half::First,
                ))
            }
            MountNodeState::Counted => {
                tri!(input);
                let deadline = self
                    .deadline
                    .unwrap_or_else(|| codec::mount_deadline(env.now.0, self.ttl_s));
                self.deadline = Some(deadline);
                let mut mutations = core::mem::take(&mut self.mutations);
                mutations.push(set(
                    FAMILY_SERVERS,
                    self.server.as_bytes(),
                    Timestamp(deadline),
                    &codec::encode_flags(self.flags),
                ));
                self.state = MountNodeState::Written;
                Step::Await(Call::Mutate {
                    node: self.node.clone(),
                    mutations,
                    delete: false,
                })
            }
            MountNodeState::Written => match input {
                Ok(_) => Step::Return(Ok(Value::Int(self.deadline.unwrap_or_default()))),
                Err(e) => {
                    self.error = Some(e);
                    self.state = MountNodeState::Uncounted;
                    Step::Push(Increment::frame(
                        CounterKind::Servers,
                        &self.node.creator,
                        -self.delta,
                        0,
                        Half::First,
                    ))
                }
            },
            MountNodeState::Uncounted => {
                if let Err(w) = input {
                    env.warn("undo server counter", w);
                }
                Step::Return(Err(self.error.take().unwrap_or(MtError::ConcurrentAccess)))
            }
        }
    }
}

/// §11.5 on a node snapshot: remove the server(s) (OCC), collect the node, uncount.
#[derive(Clone, Debug)]
pub(crate) struct UnmountNode {
    node: Node,
    server: String,
    delta: i64,
    state: UnmountNodeState,
}

#[derive(Clone, Copy, Debug)]
enum UnmountNodeState {
    Start,
    Written,
    Reread,
    Collected,
    Uncounted,
}

impl UnmountNode {
    pub(crate) fn frame(node: &Node, server: &str) -> Frame {
        Frame::UnmountNode(UnmountNode {
            node: node.clone(),
            server: server.into(),
            delta: 0,
            state: UnmountNodeState::Start,
        })
    }

    fn uncount(&mut self) -> Step {
        self.state = UnmountNodeState::Uncounted;
        Step::Push(Increment::frame(
            CounterKind::Servers,
            &self.node.creator,
            self.delta,
            0,
            Half::First,
        ))
    }

    fn step(&mut self, _env: &mut Env, input: Input) -> Step {
        match self.state {
            UnmountNodeState::Start => {
                let mut mutations = Vec::new();
                for s in &self.node.servers {
                    if self.server.is_empty() || s.server == self.server {
                        mutations.push(delete_column(FAMILY_SERVERS, s.server.as_bytes()));
                        self.delta -= 1;
                    }
                }
                if mutations.is_empty() {
                    return Step::Return(Ok(Value::Unit));
                }
                self.state = UnmountNodeState::Written;
                Step::Await(Call::Mutate {
                    node: self.node.clone(),
                    mutations,
                    delete: false,
                })
            }
            UnmountNodeState::Written => {
                tri!(input);
                self.state = UnmountNodeState::Reread;
                get_node(&self.node.name)
            }
            UnmountNodeState::Reread => match Value::node(input) {
                Ok(Some(n)) => {
                    self.state = UnmountNodeState::Collected;
                    Step::Push(Gc::frame(n))
                }
                _ => self.uncount(),
            },
            UnmountNodeState::Collected => self.uncount(),
            UnmountNodeState::Uncounted => Step::Return(input),
        }
    }
}

// ---- §12.1 accessNode -----------------------------------------------------------------------------

/// §12.1: walk the path from the root, authorizing each node, creating missing ones when
/// `create`, collecting garbage on the way (and restarting the walk when GC changed something
/// or hit a conflict). Returns [`Value::Access`].
#[derive(Clone, Debug)]
pub(crate) struct AccessNode {
    name: String,
    create: bool,
    with_servers: bool,
    /// `""` (the root) then the name's elements.
    elems: Vec<String>,
    /// Index of the element being visited.
    at: usize,
    current: String,
    parent: Option<Node>,
    /// The node GC is looking at.
    found: Option<Node>,
    /// The unreferenced node being adopted, and its reference's qualifier.
    adopting: Option<(Node, Vec<u8>)>,
    state: AccessState,
}

#[derive(Clone, Copy, Debug)]
enum AccessState {
    Start,
    Read,
    Adopted,
    AdoptionChecked,
    AdoptionUndone,
    BackedOff,
    Created,
    Collected,
}

impl AccessNode {
    pub(crate) fn frame(name: &str, create: bool, with_servers: bool) -> Frame {
        let mut elems = vec![String::new()];
        elems.extend(name.split('/').map(String::from));
        Frame::AccessNode(AccessNode {
            name: name.into(),
            create,
            with_servers,
            elems,
            at: 0,
            current: String::new(),
            parent: None,
            found: None,
            adopting: None,
            state: AccessState::Start,
        })
    }

    fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            AccessState::Start => self.restart(env),
            AccessState::Read => match tri!(Value::node(input)) {
                Some(node) => {
                    // rowkit fix: rows are found by key, so a walk could build on a node its
                    // parent does not reference (a creator's row that landed after a subtree
                    // delete took its parent): what is then mounted or created under it is out
                    // of reach of the parent's deletes, an orphaned branch. A walk that
                    // creates adopts such a node (OCC on the parent), checks that the node
                    // still exists (else takes the reference back) and walks again.
                    let adopt = match &self.parent {
                        Some(p) if self.create && !references(p, &node) => Some(p.clone()),
                        _ => None,
                    };
                    if let Some(parent) = adopt {
                        let qualifier =
                            codec::child_qualifier(&node.id, codec::split(&node.name).1);
                        self.adopting = Some((node, qualifier.clone()));
                        self.state = AccessState::Adopted;
                        return Step::Await(Call::Mutate {
                            node: parent,
                            mutations: vec![set(
                                FAMILY_CHILDREN,
                                &qualifier,
                                Timestamp::SERVER_TIME,
                                MARKER_VALUE,
                            )],
                            delete: false,
                        });
                    }
                    self.found = Some(node.clone());
                    self.state = AccessState::Collected;
                    Step::Push(Gc::frame(node))
                }
                None => self.create_missing(env),
            },
            AccessState::Adopted => match input {
                Ok(_) => {
                    let name = self.adopting.as_ref().map(|(n, _)| n.name.clone());
                    self.state = AccessState::AdoptionChecked;
                    get_node(&name.unwrap_or_default())
                }
                Err(MtError::ConcurrentAccess) => {
                    tri!(env.check_deadline());
                    self.adopting = None;
                    self.state = AccessState::BackedOff;
                    Step::Await(back_off(env))
                }
                Err(e) => Step::Return(Err(e)),
            },
            AccessState::AdoptionChecked => {
                let now = tri!(Value::node(input));
                let Some((adopted, qualifier)) = self.adopting.take() else {
                    return self.restart(env);
                };
                if now.is_some_and(|n| n.id == adopted.id) {
                    return self.restart(env);
                }
                // Deleted meanwhile (its deleter may have removed our reference already).
                self.state = AccessState::AdoptionUndone;
                mutate_parent(
                    env,
                    codec::split(&adopted.name).0,
                    vec![delete_column(FAMILY_CHILDREN, &qualifier)],
                    Half::First,
                )
            }
            AccessState::AdoptionUndone => {
                if let Err(e) = input {
                    env.warn("take back the reference of a deleted node", e);
                }
                self.restart(env)
            }
            AccessState::BackedOff => {
                tri!(input);
                self.restart(env)
            }
            AccessState::Created => {
                let Some(node) = tri!(Value::node(input)) else {
                    return Step::Return(Err(MtError::ConcurrentAccess));
                };
                self.visited(env, node)
            }
            AccessState::Collected => match tri!(input) {
                Value::Gc(_, Err(MtError::ConcurrentAccess)) | Value::Gc(true, Ok(())) => {
                    self.restart(env)
                }
                Value::Gc(_, Err(e)) => Step::Return(Err(e)),
                _ => match self.found.take() {
                    Some(node) => self.visited(env, node),
                    None => self.restart(env),
                },
            },
        }
    }

    /// Starts the walk again from the root.
    fn restart(&mut self, env: &mut Env) -> Step {
        self.current = String::new();
        self.parent = None;
        self.at = 0;
        self.visit(env)
    }

    /// Reads the element at `at`, or ends the walk past the last one.
    fn visit(&mut self, env: &mut Env) -> Step {
        let Some(elem) = self.elems.get(self.at) else {
            let found = if self.with_servers {
                None
            } else {
                self.parent.take()
            };
            return Step::Return(Ok(Value::Access(found, String::new())));
        };
        tri!(env.check_deadline());
        self.current = codec::join(&[&self.current, elem]);
        self.state = AccessState::Read;
        get_node(&self.current)
    }

    /// The element is missing: fail, or create it under the parent.
    fn create_missing(&mut self, env: &mut Env) -> Step {
        let Some(p) = self.parent.as_ref() else {
            return Step::Return(Err(MtError::NoSuchNameRoot));
        };
        if !self.create {
            return Step::Return(Err(MtError::NoSuchName {
                name: self.current.clone(),
            }));
        }
        tri!(authorize(
            &env.ctx,
            &p.permissions,
            &[tags::CREATE, tags::ADMIN]
        ));
        let elem = self.elems.get(self.at).map(String::as_str).unwrap_or("");
        let mut perms = match p.permissions.template(elem) {
            Some(t) => t,
            None => {
                let mut c = p.permissions.clone();
                if self.current == self.name {
                    for b in &env.ctx.caller.blessing_names {
                        c.add(b, tags::ADMIN);
                    }
                }
                c
            }
        };
        perms.normalize();
        let creator = codec::creator_of(&env.ctx.caller);
        let frame =
            CreateChild::frame(p, elem, &perms, &creator, env.ctx.limits.max_nodes_per_user);
        self.state = AccessState::Created;
        Step::Push(frame)
    }

    /// The element exists (or was created): authorize and go on.
    fn visited(&mut self, env: &mut Env, node: Node) -> Step {
        tri!(authorize(
            &env.ctx,
            &node.permissions,
            &[tags::RESOLVE, tags::READ, tags::ADMIN]
        ));
        if self.with_servers && !node.servers.is_empty() {
            let rest: Vec<&str> = self
                .elems
                .get(self.at + 1..)
                .unwrap_or(&[])
                .iter()
                .map(String::as_str)
                .collect();
            return Step::Return(Ok(Value::Access(Some(node), codec::join(&rest))));
        }
        self.parent = Some(node);
        self.at += 1;
        self.visit(env)
    }
}
