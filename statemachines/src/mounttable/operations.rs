//! The service operations of `spec/mounttable.md` §13–§16 as frames over the node protocols
//! of `frames`: the OCC retry loop with seeded back-off, Mount/Unmount/Delete/SetPermissions
//! attempts, ResolveStep, Glob, GetPermissions, the initial nodes, fsck, the counters and the
//! internal primitives.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{KeyBound, Mutation, Row, RowFilter, RowRange, RowSet};
use rowkit_codec::mounttable::{self as codec, CounterKind, FAMILY_CHILDREN, tags};

use super::frames::{
    AccessNode, CreateChild, CreateRow, Delete, DeleteAndGc, Frame, Increment, MountNode,
    UnmountNode, authorize, back_off, delete_column, entry_of, set_perms_call, tri,
};
use super::glob::Glob;
use super::machine::{Call, Env, Half, Input, Node, Step, Value, mismatch};
use super::{
    FindingKind, FsckSummary, MountEntry, MtError, MtEvent, PermsAndVersion, Primitive,
    PrimitiveOutput,
};

const FSCK_PAGE: i64 = 1000;

// ---- the OCC retry loop -------------------------------------------------------------------------

/// The operation loop of Mount, Unmount, Delete and SetPermissions: run a fresh copy of the
/// attempt; on `ConcurrentAccess` wait `(next_u64 % 50)` ms (bounded by the operation
/// deadline) and try again; past the deadline, `Aborted`.
#[derive(Clone, Debug)]
pub(crate) struct Retry {
    attempt: Box<Frame>,
    state: RetryState,
}

#[derive(Clone, Copy, Debug)]
enum RetryState {
    Start,
    Attempted,
    BackedOff,
}

impl Retry {
    pub(crate) fn frame(attempt: Frame) -> Frame {
        Frame::Retry(Retry {
            attempt: Box::new(attempt),
            state: RetryState::Start,
        })
    }

    pub(crate) fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            RetryState::Start => self.attempt(env),
            RetryState::Attempted => match input {
                Err(MtError::ConcurrentAccess) => {
                    self.state = RetryState::BackedOff;
                    Step::Await(back_off(env))
                }
                other => Step::Return(other),
            },
            RetryState::BackedOff => {
                tri!(input);
                self.attempt(env)
            }
        }
    }

    fn attempt(&mut self, env: &mut Env) -> Step {
        tri!(env.check_deadline());
        self.state = RetryState::Attempted;
        Step::Push((*self.attempt).clone())
    }
}

/// Fails at once (an argument rejected before any request).
pub(crate) fn fail(error: MtError) -> Frame {
    Frame::Primitive(PrimitiveFrame {
        primitive: None,
        failure: Some(error),
        state: PrimitiveState::Start,
    })
}

// ---- §13 attempts -------------------------------------------------------------------------------

/// Where a one-walk attempt (Mount, Unmount, SetPermissions, ResolveStep, GetPermissions)
/// is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WalkState {
    /// Not started.
    Start,
    /// The path walk returned.
    Walked,
    /// The node operation returned.
    Done,
}

/// One Mount attempt: walk (creating), authorize, mount on the snapshot.
#[derive(Clone, Debug)]
pub(crate) struct MountAttempt {
    pub(crate) suffix: String,
    pub(crate) server: String,
    pub(crate) ttl_s: u32,
    pub(crate) flags: u32,
    pub(crate) state: WalkState,
}

impl MountAttempt {
    pub(crate) fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            WalkState::Start => {
                self.state = WalkState::Walked;
                Step::Push(AccessNode::frame(&self.suffix, true, false))
            }
            WalkState::Walked => {
                let Some(node) = tri!(Value::access(input)).0 else {
                    return Step::Return(Err(MtError::NoSuchNameRoot));
                };
                tri!(authorize(
                    &env.ctx,
                    &node.permissions,
                    &[tags::MOUNT, tags::ADMIN]
                ));
                self.state = WalkState::Done;
                Step::Push(MountNode::frame(
                    &node,
                    &self.server,
                    None,
                    self.ttl_s,
                    self.flags,
                    env.ctx.limits.max_servers_per_user,
                ))
            }
            WalkState::Done => Step::Return(input),
        }
    }
}

/// One Unmount attempt: walk, authorize, unmount on the snapshot.
#[derive(Clone, Debug)]
pub(crate) struct UnmountAttempt {
    pub(crate) suffix: String,
    pub(crate) server: String,
    pub(crate) state: WalkState,
}

impl UnmountAttempt {
    pub(crate) fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            WalkState::Start => {
                self.state = WalkState::Walked;
                Step::Push(AccessNode::frame(&self.suffix, false, false))
            }
            WalkState::Walked => {
                let Some(node) = tri!(Value::access(input)).0 else {
                    return Step::Return(Err(MtError::NoSuchName {
                        name: self.suffix.clone(),
                    }));
                };
                tri!(authorize(
                    &env.ctx,
                    &node.permissions,
                    &[tags::MOUNT, tags::ADMIN]
                ));
                self.state = WalkState::Done;
                Step::Push(UnmountNode::frame(&node, &self.server))
            }
            WalkState::Done => Step::Return(input),
        }
    }
}

/// One Delete attempt: walk (a missing node is already deleted), authorize on the node or
/// its parent, delete and collect.
#[derive(Clone, Debug)]
pub(crate) struct DeleteAttempt {
    pub(crate) suffix: String,
    pub(crate) subtree: bool,
    pub(crate) node: Option<Node>,
    pub(crate) denied: Option<MtError>,
    pub(crate) state: DeleteAttemptState,
}

/// Where a [`DeleteAttempt`] is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum DeleteAttemptState {
    Start,
    Walked,
    ParentWalked,
    Deleted,
}

impl DeleteAttempt {
    pub(crate) fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            DeleteAttemptState::Start => {
                self.state = DeleteAttemptState::Walked;
                Step::Push(AccessNode::frame(&self.suffix, false, false))
            }
            DeleteAttemptState::Walked => {
                let node = match Value::access(input) {
                    Err(MtError::NoSuchName { .. }) | Ok((None, _)) => {
                        return Step::Return(Ok(Value::Unit));
                    }
                    Err(e) => return Step::Return(Err(e)),
                    Ok((Some(n), _)) => n,
                };
                if let Err(first) = authorize(&env.ctx, &node.permissions, &[tags::ADMIN]) {
                    // The parent's admins may delete a child they cannot administer.
                    self.denied = Some(first);
                    self.node = Some(node);
                    self.state = DeleteAttemptState::ParentWalked;
                    let parent = codec::clean(codec::split(&self.suffix).0);
                    return Step::Push(AccessNode::frame(&parent, false, false));
                }
                self.state = DeleteAttemptState::Deleted;
                Step::Push(DeleteAndGc::frame(node, self.subtree))
            }
            DeleteAttemptState::ParentWalked => {
                let allowed = matches!(
                    Value::access(input),
                    Ok((Some(p), _)) if authorize(&env.ctx, &p.permissions, &[tags::ADMIN]).is_ok()
                );
                match (allowed, self.node.take()) {
                    (true, Some(node)) => {
                        self.state = DeleteAttemptState::Deleted;
                        Step::Push(DeleteAndGc::frame(node, self.subtree))
                    }
                    _ => Step::Return(Err(self
                        .denied
                        .take()
                        .unwrap_or(MtError::NoPermissions { tag: tags::ADMIN }))),
                }
            }
            DeleteAttemptState::Deleted => Step::Return(input),
        }
    }
}

/// One SetPermissions attempt: walk (creating), authorize, check the version, write.
#[derive(Clone, Debug)]
pub(crate) struct SetPermsAttempt {
    pub(crate) suffix: String,
    pub(crate) perms: codec::Permissions,
    pub(crate) version: String,
    pub(crate) next_version: String,
    pub(crate) state: WalkState,
}

impl SetPermsAttempt {
    pub(crate) fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            WalkState::Start => {
                self.state = WalkState::Walked;
                Step::Push(AccessNode::frame(&self.suffix, true, false))
            }
            WalkState::Walked => {
                let Some(node) = tri!(Value::access(input)).0 else {
                    return Step::Return(Err(MtError::NoSuchNameRoot));
                };
                tri!(authorize(&env.ctx, &node.permissions, &[tags::ADMIN]));
                if !self.version.is_empty() && self.version.as_bytes() != node.version.as_slice() {
                    return Step::Return(Err(MtError::BadVersion));
                }
                // The OCC write fails on the same bad stored version before sending anything.
                self.next_version = tri!(codec::next_version(&node.version).map_err(MtError::from));
                self.state = WalkState::Done;
                Step::Await(set_perms_call(&node, &self.perms))
            }
            WalkState::Done => {
                tri!(input);
                Step::Return(Ok(Value::Perms(PermsAndVersion {
                    perms: self.perms.clone(),
                    version: core::mem::take(&mut self.next_version),
                })))
            }
        }
    }
}

// ---- §14 ResolveStep, Glob, GetPermissions ------------------------------------------------------

/// ResolveStep: walk to the first node with servers.
#[derive(Clone, Debug)]
pub(crate) struct ResolveStep {
    pub(crate) suffix: String,
    pub(crate) state: WalkState,
}

impl ResolveStep {
    pub(crate) fn step(&mut self, _env: &mut Env, input: Input) -> Step {
        if self.state == WalkState::Start {
            self.state = WalkState::Walked;
            return Step::Push(AccessNode::frame(&self.suffix, false, true));
        }
        match tri!(Value::access(input)) {
            (Some(n), rest) => Step::Return(Ok(Value::Entry(entry_of(rest, &n)))),
            (None, _) => Step::Return(Err(MtError::NoSuchName {
                name: self.suffix.clone(),
            })),
        }
    }
}

/// GetPermissions: walk to an existing node.
#[derive(Clone, Debug)]
pub(crate) struct GetPermissions {
    pub(crate) suffix: String,
    pub(crate) state: WalkState,
}

impl GetPermissions {
    pub(crate) fn step(&mut self, _env: &mut Env, input: Input) -> Step {
        if self.state == WalkState::Start {
            self.state = WalkState::Walked;
            return Step::Push(AccessNode::frame(&self.suffix, false, false));
        }
        match tri!(Value::access(input)) {
            (Some(node), _) => Step::Return(Ok(Value::Perms(PermsAndVersion {
                perms: node.permissions.clone(),
                version: node.version_str(),
            }))),
            (None, _) => Step::Return(Err(MtError::NoSuchName {
                name: self.suffix.clone(),
            })),
        }
    }
}

/// Glob: if the walk reaches a mounted node, that is the one answer; otherwise a breadth-first
/// walk of the matching children, skipping nodes that vanish or deny access.
#[derive(Clone, Debug)]
pub(crate) struct GlobOp {
    pub(crate) suffix: String,
    pub(crate) pattern: String,
    pub(crate) queue: VecDeque<(String, Glob)>,
    pub(crate) current: Option<(String, Glob)>,
    pub(crate) state: GlobState,
}

/// Where a [`GlobOp`] is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum GlobState {
    Start,
    RootWalked,
    Visited,
}

impl GlobOp {
    pub(crate) fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            GlobState::Start => {
                let Ok(g) = Glob::parse(&self.pattern) else {
                    return Step::Return(Err(MtError::BadPattern));
                };
                self.queue.push_back((String::new(), g));
                self.state = GlobState::RootWalked;
                Step::Push(AccessNode::frame(&self.suffix, false, true))
            }
            GlobState::RootWalked => {
                if let (Some(n), rest) = tri!(Value::access(input)) {
                    let mut entry = entry_of(String::new(), &n);
                    for s in &mut entry.servers {
                        s.server = codec::join(&[&s.server, &rest]);
                    }
                    env.emit(MtEvent::GlobEntry(entry));
                    return Step::Return(Ok(Value::Unit));
                }
                self.next(env)
            }
            GlobState::Visited => {
                let Some((name, g)) = self.current.take() else {
                    return self.next(env);
                };
                let node = match Value::access(input) {
                    Ok((Some(n), _)) => n,
                    _ => return self.next(env),
                };
                if !node.servers.is_empty() {
                    env.emit(MtEvent::GlobEntry(entry_of(name, &node)));
                    return self.next(env);
                }
                if g.elements() == 0 {
                    env.emit(MtEvent::GlobEntry(MountEntry {
                        name: name.clone(),
                        servers: Vec::new(),
                        mt: false,
                        leaf: false,
                    }));
                }
                if !g.is_empty() {
                    for c in &node.children {
                        if g.head_matches(&c.name) {
                            self.queue
                                .push_back((codec::join(&[&name, &c.name]), g.tail()));
                        }
                    }
                }
                self.next(env)
            }
        }
    }

    /// Visits the next queued name, or ends.
    fn next(&mut self, env: &mut Env) -> Step {
        let Some((name, g)) = self.queue.pop_front() else {
            return Step::Return(Ok(Value::Unit));
        };
        tri!(env.check_deadline());
        let walk = AccessNode::frame(&codec::join(&[&self.suffix, &name]), false, false);
        self.current = Some((name, g));
        self.state = GlobState::Visited;
        Step::Push(walk)
    }
}

// ---- §16 initial nodes, counters, fsck ----------------------------------------------------------

/// CreateInitialNodes: the root with default permissions, or every node of a permissions file
/// in name order (creating intermediate nodes with their parent's permissions), each then
/// given its permissions.
#[derive(Clone, Debug)]
pub(crate) struct CreateInitialNodes {
    /// `None`: no file, only the default root.
    nodes: Option<Vec<(String, codec::Permissions)>>,
    at: usize,
    elems: Vec<String>,
    elem_at: usize,
    parent_name: String,
    node: Option<Node>,
    state: InitialState,
}

#[derive(Clone, Copy, Debug)]
enum InitialState {
    Start,
    Created,
    ElemRead,
    ParentRead,
    ElemCreated,
    PermsSet,
}

impl CreateInitialNodes {
    pub(crate) fn frame(perms_file: Option<BTreeMap<String, codec::Permissions>>) -> Frame {
        let nodes = perms_file.map(|file| {
            // Fold legacy `x/%%` entries into `x` as `%%/<tag>` tags.
            let mut nodes: BTreeMap<String, codec::Permissions> = BTreeMap::new();
            let mut templates: Vec<(String, codec::Permissions)> = Vec::new();
            for (name, perms) in file {
                match name.strip_suffix("/%%") {
                    Some(x) => templates.push((x.into(), perms)),
                    None => {
                        nodes.insert(name, perms);
                    }
                }
            }
            for (x, perms) in templates {
                let target = nodes.entry(x).or_default();
                for (tag, acl) in perms.0 {
                    target.0.insert(alloc::format!("%%/{tag}"), acl);
                }
            }
            nodes.into_iter().collect()
        });
        Frame::CreateInitialNodes(CreateInitialNodes {
            nodes,
            at: 0,
            elems: Vec::new(),
            elem_at: 0,
            parent_name: String::new(),
            node: None,
            state: InitialState::Start,
        })
    }

    pub(crate) fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            InitialState::Start => {
                if self.nodes.is_none() {
                    self.state = InitialState::Created;
                    return Step::Push(CreateRow::frame(
                        "",
                        &codec::default_root_permissions(),
                        "",
                        codec::ROOT_ID,
                        0,
                        Half::First,
                    ));
                }
                self.next_node(env)
            }
            InitialState::Created => {
                tri!(input);
                if self.nodes.is_none() {
                    return Step::Return(Ok(Value::Unit));
                }
                self.at += 1;
                self.next_node(env)
            }
            InitialState::ElemRead => match tri!(Value::node(input)) {
                Some(n) => self.got(env, n),
                None => {
                    self.state = InitialState::ParentRead;
                    Step::Await(Call::GetNode {
                        name: self.parent_name.clone(),
                    })
                }
            },
            InitialState::ParentRead => {
                let parent = tri!(tri!(Value::node(input)).ok_or(MtError::NoSuchNameRoot));
                let elem = self.elems.get(self.elem_at).cloned().unwrap_or_default();
                self.state = InitialState::ElemCreated;
                Step::Push(CreateChild::frame(
                    &parent,
                    &elem,
                    &parent.permissions,
                    "",
                    0,
                ))
            }
            InitialState::ElemCreated => {
                let n = tri!(tri!(Value::node(input)).ok_or(MtError::ConcurrentAccess));
                self.got(env, n)
            }
            InitialState::PermsSet => {
                tri!(input);
                self.at += 1;
                self.next_node(env)
            }
        }
    }

    fn perms(&self) -> Option<&(String, codec::Permissions)> {
        self.nodes.as_ref().and_then(|n| n.get(self.at))
    }

    /// Starts the next node of the file, or ends.
    fn next_node(&mut self, env: &mut Env) -> Step {
        let Some((name, perms)) = self.perms().cloned() else {
            return Step::Return(Ok(Value::Unit));
        };
        tri!(env.check_deadline());
        if name.is_empty() {
            self.state = InitialState::Created;
            return Step::Push(CreateRow::frame(
                "",
                &perms,
                "",
                codec::ROOT_ID,
                0,
                Half::First,
            ));
        }
        self.elems = name.split('/').map(String::from).collect();
        self.elem_at = 0;
        self.parent_name = String::new();
        self.node = None;
        self.next_elem()
    }

    /// Reads the next element of the current node's path, or sets its permissions.
    fn next_elem(&mut self) -> Step {
        match self.elems.get(self.elem_at) {
            Some(e) => {
                let current = codec::join(&[&self.parent_name, e]);
                self.state = InitialState::ElemRead;
                Step::Await(Call::GetNode { name: current })
            }
            None => {
                let (Some(node), Some((_, perms))) = (self.node.as_ref(), self.perms()) else {
                    return Step::Return(Ok(Value::Unit));
                };
                let call = set_perms_call(node, perms);
                self.state = InitialState::PermsSet;
                Step::Await(call)
            }
        }
    }

    fn got(&mut self, _env: &mut Env, node: Node) -> Step {
        let elem = self.elems.get(self.elem_at).cloned().unwrap_or_default();
        self.parent_name = codec::join(&[&self.parent_name, &elem]);
        self.node = Some(node);
        self.elem_at += 1;
        self.next_elem()
    }
}

/// Every counter row: row key → value.
#[derive(Clone, Debug)]
pub(crate) struct ReadCounters {
    pub(crate) scanned: bool,
}

impl ReadCounters {
    pub(crate) fn step(&mut self, env: &mut Env, input: Input) -> Step {
        if !self.scanned {
            self.scanned = true;
            return Step::Await(Call::Scan {
                table: env.ctx.tables.counter.clone(),
                rows: RowSet::all(),
                filter: Some(RowFilter::CellsPerColumnLimit(1)),
                limit: 0,
            });
        }
        let rows = tri!(Value::rows(input));
        let counters: Result<BTreeMap<Vec<u8>, i64>, MtError> = rows
            .iter()
            .map(|r| {
                codec::decode_counter_row(r)
                    .map(|v| (r.key.clone(), v))
                    .map_err(|e| MtError::Internal {
                        what: e.to_string(),
                    })
            })
            .collect();
        Step::Return(counters.map(Value::Counters))
    }
}

/// §16 fsck: passes until clean (with `fix`), then with `fix` the counters rebuilt from the
/// nodes.
#[derive(Clone, Debug)]
pub(crate) struct Fsck {
    fix: bool,
    summary: FsckSummary,
    rows: Vec<Row>,
    at: usize,
    /// Servers of the node being counted.
    servers: i64,
    creator: String,
    state: FsckState,
}

#[derive(Clone, Copy, Debug)]
enum FsckState {
    Start,
    Passed,
    CountersRead,
    CounterDeleted,
    NodesRead,
    NodeCounted,
    ServersCounted,
}

impl Fsck {
    pub(crate) fn frame(fix: bool) -> Frame {
        Frame::Fsck(Fsck {
            fix,
            summary: FsckSummary::default(),
            rows: Vec::new(),
            at: 0,
            servers: 0,
            creator: String::new(),
            state: FsckState::Start,
        })
    }

    pub(crate) fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            FsckState::Start => self.pass(env),
            FsckState::Passed => {
                let (count, summary) = match tri!(input) {
                    Value::Pass(count, summary) => (count, summary),
                    v => return Step::Return(Err(mismatch("an fsck pass", &v))),
                };
                self.summary = summary;
                self.summary.inconsistent += count;
                if self.fix && count > 0 {
                    return self.pass(env);
                }
                if !self.fix {
                    return self.finish();
                }
                self.state = FsckState::CountersRead;
                Step::Await(Call::Scan {
                    table: env.ctx.tables.counter.clone(),
                    rows: RowSet::all(),
                    filter: None,
                    limit: 0,
                })
            }
            FsckState::CountersRead => {
                self.rows = tri!(Value::rows(input));
                self.at = 0;
                self.delete_counter(env)
            }
            FsckState::CounterDeleted => {
                tri!(input);
                self.at += 1;
                self.delete_counter(env)
            }
            FsckState::NodesRead => {
                self.rows = tri!(Value::rows(input));
                self.at = 0;
                self.count_node(env)
            }
            FsckState::NodeCounted => {
                tri!(input);
                self.state = FsckState::ServersCounted;
                Step::Push(Increment::frame(
                    CounterKind::Servers,
                    &self.creator,
                    self.servers,
                    0,
                    Half::First,
                ))
            }
            FsckState::ServersCounted => {
                tri!(input);
                self.at += 1;
                self.count_node(env)
            }
        }
    }

    fn pass(&mut self, env: &mut Env) -> Step {
        tri!(env.check_deadline());
        self.summary.passes += 1;
        self.state = FsckState::Passed;
        Step::Push(FsckPass::frame(
            self.fix,
            core::mem::take(&mut self.summary),
        ))
    }

    /// Deletes the next counter row, or scans the nodes once all are gone.
    fn delete_counter(&mut self, env: &mut Env) -> Step {
        match self.rows.get(self.at) {
            Some(row) => {
                self.state = FsckState::CounterDeleted;
                Step::Await(Call::MutateRow {
                    table: env.ctx.tables.counter.clone(),
                    key: row.key.clone(),
                    mutations: vec![Mutation::DeleteFromRow],
                    half: Half::First,
                })
            }
            None => {
                self.state = FsckState::NodesRead;
                Step::Await(Call::Scan {
                    table: env.ctx.tables.node.clone(),
                    rows: RowSet::all(),
                    filter: Some(RowFilter::CellsPerColumnLimit(1)),
                    limit: 0,
                })
            }
        }
    }

    /// Counts the next decodable node (and its servers), or ends.
    fn count_node(&mut self, env: &mut Env) -> Step {
        while let Some(row) = self.rows.get(self.at) {
            let Ok(node) = codec::decode_node(row, env.now.0) else {
                self.at += 1;
                continue;
            };
            self.servers = (node.servers.len() + node.expired_servers.len()) as i64;
            self.creator = node.creator;
            self.state = FsckState::NodeCounted;
            return Step::Push(Increment::frame(
                CounterKind::Nodes,
                &self.creator,
                1,
                0,
                Half::First,
            ));
        }
        self.finish()
    }

    fn finish(&mut self) -> Step {
        let summary = core::mem::take(&mut self.summary);
        if (!self.fix && summary.inconsistent > 0) || !summary.undecodable.is_empty() {
            return Step::Return(Err(MtError::FsckInconsistent(summary)));
        }
        Step::Return(Ok(Value::Summary(summary)))
    }
}

/// One fsck pass over the node table, page by page: orphans (deleted with `fix`), dangling
/// child references (dropped with `fix`), undecodable rows. Returns [`Value::Pass`].
#[derive(Clone, Debug)]
pub(crate) struct FsckPass {
    fix: bool,
    summary: FsckSummary,
    count: u64,
    start: Option<Vec<u8>>,
    page: Vec<Row>,
    full: bool,
    at: usize,
    node: Option<Node>,
    child_at: usize,
    dangling: Vec<Vec<u8>>,
    store_error: bool,
    state: PassState,
}

#[derive(Clone, Copy, Debug)]
enum PassState {
    Start,
    Paged,
    ParentRead,
    OrphanDeleted,
    ChildRead,
    DanglingFixed,
}

impl FsckPass {
    fn frame(fix: bool, summary: FsckSummary) -> Frame {
        Frame::FsckPass(FsckPass {
            fix,
            summary,
            count: 0,
            start: None,
            page: Vec::new(),
            full: false,
            at: 0,
            node: None,
            child_at: 0,
            dangling: Vec::new(),
            store_error: false,
            state: PassState::Start,
        })
    }

    fn finding(env: &mut Env, row_key: &[u8], kind: FindingKind, fixed: bool) {
        env.emit(MtEvent::FsckFinding {
            row_key: row_key.to_vec(),
            kind,
            fixed,
        });
    }

    pub(crate) fn step(&mut self, env: &mut Env, input: Input) -> Step {
        match self.state {
            PassState::Start => self.scan_page(env),
            PassState::Paged => {
                self.page = tri!(Value::rows(input));
                self.full = self.page.len() as i64 >= FSCK_PAGE;
                self.start = self.page.last().map(|r| r.key.clone());
                self.at = 0;
                self.next_row(env)
            }
            PassState::ParentRead => {
                let Some(node) = self.node.clone() else {
                    return self.row_done(env);
                };
                let base = codec::split(&node.name).1;
                let orphan = match Value::node(input) {
                    Err(_) => {
                        self.count += 1;
                        Self::finding(env, &node.row_key, FindingKind::StoreError, false);
                        return self.row_done(env);
                    }
                    Ok(None) => true,
                    Ok(Some(p)) => !p.children.iter().any(|c| c.name == base && c.id == node.id),
                };
                if !orphan {
                    return self.check_children(env);
                }
                self.count += 1;
                if self.fix {
                    self.state = PassState::OrphanDeleted;
                    return Step::Push(Delete::frame(&node, true));
                }
                Self::finding(env, &node.row_key, FindingKind::Orphan, false);
                self.row_done(env)
            }
            PassState::OrphanDeleted => {
                let key = self.row_key();
                let fixed = input.is_ok();
                if fixed {
                    self.summary.fixed.push(key.clone());
                }
                Self::finding(env, &key, FindingKind::Orphan, fixed);
                self.row_done(env)
            }
            PassState::ChildRead => {
                let expected = self
                    .node
                    .as_ref()
                    .and_then(|n| n.children.get(self.child_at))
                    .map(|c| (c.id.clone(), codec::child_qualifier(&c.id, &c.name)));
                if let Some((id, qualifier)) = expected {
                    match Value::node(input) {
                        Err(_) => self.store_error = true,
                        Ok(None) => self.dangling.push(qualifier),
                        Ok(Some(ch)) if ch.id != id => self.dangling.push(qualifier),
                        Ok(Some(_)) => {}
                    }
                }
                self.child_at += 1;
                self.next_child(env)
            }
            PassState::DanglingFixed => {
                let key = self.row_key();
                let fixed = input.is_ok();
                if fixed {
                    self.summary.fixed.push(key.clone());
                }
                Self::finding(env, &key, FindingKind::Dangling, fixed);
                self.row_done(env)
            }
        }
    }

    fn row_key(&self) -> Vec<u8> {
        self.node
            .as_ref()
            .map(|n| n.row_key.clone())
            .unwrap_or_default()
    }

    fn scan_page(&mut self, env: &mut Env) -> Step {
        let rows = match &self.start {
            None => RowSet::all(),
            Some(k) => RowSet::range(RowRange {
                start: KeyBound::Open(k.clone()),
                end: KeyBound::Unbounded,
            }),
        };
        self.state = PassState::Paged;
        Step::Await(Call::Scan {
            table: env.ctx.tables.node.clone(),
            rows,
            filter: Some(RowFilter::CellsPerColumnLimit(1)),
            limit: FSCK_PAGE,
        })
    }

    fn row_done(&mut self, env: &mut Env) -> Step {
        self.at += 1;
        self.next_row(env)
    }

    /// Checks the next row of the page; past the last, the next page or the end of the pass.
    fn next_row(&mut self, env: &mut Env) -> Step {
        loop {
            let Some(row) = self.page.get(self.at) else {
                if !self.full {
                    let summary = core::mem::take(&mut self.summary);
                    return Step::Return(Ok(Value::Pass(self.count, summary)));
                }
                return self.scan_page(env);
            };
            tri!(env.check_deadline());
            let node = match codec::decode_node(row, env.now.0) {
                Ok(n) => n,
                Err(_) => {
                    let key = row.key.clone();
                    if !self.summary.undecodable.contains(&key) {
                        self.summary.undecodable.push(key.clone());
                    }
                    Self::finding(env, &key, FindingKind::Undecodable, false);
                    self.at += 1;
                    continue;
                }
            };
            let root = node.name.is_empty();
            let parent = String::from(codec::split(&node.name).0);
            self.node = Some(Node::new(node));
            if root {
                return self.check_children(env);
            }
            self.state = PassState::ParentRead;
            return Step::Await(Call::GetNode { name: parent });
        }
    }

    /// Starts reading the node's children.
    fn check_children(&mut self, env: &mut Env) -> Step {
        self.child_at = 0;
        self.dangling.clear();
        self.store_error = false;
        self.next_child(env)
    }

    /// Reads the next child of the node, or judges the node once all are read.
    fn next_child(&mut self, env: &mut Env) -> Step {
        let Some(node) = self.node.as_ref() else {
            return self.row_done(env);
        };
        if let Some(c) = node.children.get(self.child_at) {
            self.state = PassState::ChildRead;
            return Step::Await(Call::GetNode {
                name: codec::join(&[&node.name, &c.name]),
            });
        }
        let key = node.row_key.clone();
        if self.store_error {
            self.count += 1;
            Self::finding(env, &key, FindingKind::StoreError, false);
            return self.row_done(env);
        }
        if self.dangling.is_empty() {
            return self.row_done(env);
        }
        self.count += 1;
        if !self.fix {
            Self::finding(env, &key, FindingKind::Dangling, false);
            return self.row_done(env);
        }
        let mutations = self
            .dangling
            .iter()
            .map(|q| delete_column(FAMILY_CHILDREN, q))
            .collect();
        self.state = PassState::DanglingFixed;
        Step::Await(Call::Mutate {
            node: node.clone(),
            mutations,
            delete: false,
        })
    }
}

/// One internal primitive (§10–§11), or an immediate failure.
#[derive(Clone, Debug)]
pub(crate) struct PrimitiveFrame {
    primitive: Option<Primitive>,
    failure: Option<MtError>,
    state: PrimitiveState,
}

#[derive(Clone, Copy, Debug)]
enum PrimitiveState {
    Start,
    Node,
    Done,
}

impl PrimitiveFrame {
    pub(crate) fn frame(primitive: Primitive) -> Frame {
        Frame::Primitive(PrimitiveFrame {
            primitive: Some(primitive),
            failure: None,
            state: PrimitiveState::Start,
        })
    }

    pub(crate) fn step(&mut self, _env: &mut Env, input: Input) -> Step {
        match self.state {
            PrimitiveState::Start => {
                if let Some(e) = self.failure.take() {
                    return Step::Return(Err(e));
                }
                let Some(p) = self.primitive.take() else {
                    return Step::Return(Ok(Value::Primitive(PrimitiveOutput::Done)));
                };
                self.state = PrimitiveState::Done;
                match p {
                    Primitive::GetNode { name } => {
                        self.state = PrimitiveState::Node;
                        Step::Await(Call::GetNode { name })
                    }
                    Primitive::CreateRow {
                        name,
                        perms,
                        creator,
                        id,
                        limit,
                    } => Step::Push(CreateRow::frame(
                        &name,
                        &perms,
                        &creator,
                        &id,
                        limit,
                        Half::First,
                    )),
                    Primitive::CreateChild {
                        parent,
                        child,
                        perms,
                        creator,
                        limit,
                    } => {
                        self.state = PrimitiveState::Node;
                        Step::Push(CreateChild::frame(
                            &Node::new(parent),
                            &child,
                            &perms,
                            &creator,
                            limit,
                        ))
                    }
                    Primitive::Delete { node, subtree } => {
                        Step::Push(Delete::frame(&Node::new(node), subtree))
                    }
                    Primitive::Mount {
                        node,
                        server,
                        deadline_us,
                        flags,
                        limit,
                    } => Step::Push(MountNode::frame(
                        &Node::new(node),
                        &server,
                        Some(deadline_us),
                        0,
                        flags,
                        limit,
                    )),
                    Primitive::SetPermissions { node, perms } => {
                        Step::Await(set_perms_call(&Node::new(node), &perms))
                    }
                }
            }
            PrimitiveState::Node => {
                let node = tri!(Value::node(input));
                Step::Return(Ok(Value::Primitive(PrimitiveOutput::Node(
                    node.map(|n| Box::new(Arc::unwrap_or_clone(n))),
                ))))
            }
            PrimitiveState::Done => {
                tri!(input);
                Step::Return(Ok(Value::Primitive(PrimitiveOutput::Done)))
            }
        }
    }
}
