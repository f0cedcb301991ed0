//! The service operations of `spec/mounttable.md` §13–§16 as flows over the node protocols of
//! `nodes`: the OCC retry loop with seeded back-off, Mount/Unmount/Delete/SetPermissions
//! attempts, ResolveStep, Glob, GetPermissions, the initial nodes, fsck, the counters and the
//! internal primitives.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::mem;

use rowkit_codec::model::{KeyBound, Mutation, Row, RowFilter, RowRange, RowSet};
use rowkit_codec::mounttable::{self as codec, CounterKind, FAMILY_CHILDREN, MountFlags, tags};

use super::calls::{
    BackOff, Half, MtIo, Node, NodeRead, Occ, Progress, Put, Scan, check_deadline, ended,
};
use super::glob::Glob as Pattern;
use super::nodes::{
    CreateChild, CreateRow, Delete, DeleteAndGc, Increment, MountNode, Reached, UnmountNode, Walk,
    authorize, entry_of, set_perms,
};
use super::{
    FindingKind, FsckSummary, MountEntry, MountTableSchema, Mounted, MtError, MtEvent, MtRun,
    PermsAndVersion, Primitive, PrimitiveOutput,
};
use crate::operation::Flow;
use crate::operation::settled;
use crate::ready;

const FSCK_PAGE: i64 = 1000;

// ---- the OCC retry loop -------------------------------------------------------------------------

/// What one round of an operation that [`Retry`] runs does, implemented by the operation's
/// arguments (the same in every round): a walk to the operation's node, then the step the node
/// allows.
trait Attempt {
    /// What runs once the walk has reached the node (a node protocol or a write).
    type Step: core::fmt::Debug;
    /// What a successful round gives.
    type Output;

    /// The walk that starts a round.
    fn walk(&self) -> Walk;

    /// What the walk's outcome leads to: the step, or the round's output at once.
    fn reached(
        &self,
        io: &mut MtIo,
        ctx: &mut MtRun,
        reached: Result<Reached, MtError>,
    ) -> Result<Next<Self::Step, Self::Output>, MtError>;

    /// Runs the step as far as it can.
    fn step(&self, step: &mut Self::Step, io: &mut MtIo, ctx: &mut MtRun)
    -> Progress<Self::Output>;
}

/// Where a round goes once its walk has ended.
enum Next<S, O> {
    /// On to the step.
    Step(S),
    /// The round is over: nothing (more) to do.
    Done(O),
}

/// §13 `op`, the loop of Mount, Unmount, Delete and SetPermissions: run a fresh round (walk,
/// then step); on `ConcurrentAccess` wait `(next_u64 % 50)` ms (bounded by the operation
/// deadline, reaching which ends the operation `Aborted`) and try again.
#[derive(Debug)]
struct Retry<A: Attempt> {
    args: A,
    phase: RetryPhase<A::Step>,
}

#[derive(Debug)]
enum RetryPhase<S> {
    /// A round is to start (if the deadline allows).
    Start,
    Walking(Walk),
    Stepping(S),
    BackingOff(BackOff),
    Done,
}

impl<A: Attempt> Retry<A> {
    fn new(args: A) -> Retry<A> {
        Retry {
            args,
            phase: RetryPhase::Start,
        }
    }

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<A::Output> {
        use RetryPhase as P;
        loop {
            let failed = match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    check_deadline(io, ctx)?;
                    self.phase = P::Walking(self.args.walk());
                    continue;
                }
                P::Walking(mut walk) => {
                    let reached =
                        ready!(settled(walk.advance(io, ctx)), self.phase => P::Walking(walk));
                    match self.args.reached(io, ctx, reached) {
                        Ok(Next::Step(step)) => {
                            self.phase = P::Stepping(step);
                            continue;
                        }
                        Ok(Next::Done(output)) => return Ok(Some(output)),
                        Err(e) => e,
                    }
                }
                P::Stepping(mut step) => {
                    match ready!(settled(self.args.step(&mut step, io, ctx)), self.phase => P::Stepping(step))
                    {
                        Ok(output) => return Ok(Some(output)),
                        Err(e) => e,
                    }
                }
                P::BackingOff(mut wait) => {
                    ready!(wait.poll(io, ctx), self.phase => P::BackingOff(wait));
                    self.phase = P::Start;
                    continue;
                }
                P::Done => return Err(ended()),
            };
            if !matches!(failed, MtError::ConcurrentAccess) {
                return Err(failed);
            }
            self.phase = P::BackingOff(BackOff::start(io, ctx));
        }
    }
}

/// Declares the public flow of a §13 operation: `$flow` runs the rounds of `$args` (its
/// [`Attempt`]) in a [`Retry`] loop, is built from those arguments and gives `$out`.
macro_rules! retry_flow {
    ($(#[$doc:meta])* $flow:ident($args:ident) -> $out:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $flow(Retry<$args>);

        impl $flow {
            pub(super) fn new(args: $args) -> $flow {
                $flow(Retry::new(args))
            }
        }

        impl Flow for $flow {
            type Schema = MountTableSchema;
            type Output = $out;

            fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<$out> {
                self.0.advance(io, ctx)
            }
        }
    };
}

// ---- §13 attempts -------------------------------------------------------------------------------

/// Mount's arguments.
#[derive(Debug)]
pub(super) struct MountArgs {
    pub(super) suffix: String,
    pub(super) server: String,
    pub(super) ttl_s: u32,
    pub(super) flags: MountFlags,
}

/// One Mount round: walk (creating), authorize, mount on the snapshot.
impl Attempt for MountArgs {
    type Step = MountNode;
    type Output = Mounted;

    fn walk(&self) -> Walk {
        Walk::new(&self.suffix, true, false)
    }

    fn reached(
        &self,
        _: &mut MtIo,
        ctx: &mut MtRun,
        reached: Result<Reached, MtError>,
    ) -> Result<Next<MountNode, Mounted>, MtError> {
        let node = reached?.node.ok_or(MtError::NoSuchNameRoot)?;
        authorize(ctx, &node.permissions, &[tags::MOUNT, tags::ADMIN])?;
        let limit = ctx.limits.max_servers_per_user;
        let mount = MountNode::new(node, &self.server, None, self.ttl_s, self.flags, limit);
        Ok(Next::Step(mount))
    }

    fn step(&self, mount: &mut MountNode, io: &mut MtIo, ctx: &mut MtRun) -> Progress<Mounted> {
        let deadline_us = ready!(mount.advance(io, ctx));
        Ok(Some(Mounted {
            row_key: codec::row_key(&self.suffix),
            deadline_us,
        }))
    }
}

retry_flow! {
    /// The flow of [`Mount`](super::Mount): walk (creating), authorize, mount; retried on
    /// conflicts. Gives what it wrote.
    MountFlow(MountArgs) -> Mounted
}

/// Unmount's arguments.
#[derive(Debug)]
pub(super) struct UnmountArgs {
    pub(super) suffix: String,
    pub(super) server: String,
}

/// One Unmount round: walk, authorize, unmount on the snapshot.
impl Attempt for UnmountArgs {
    type Step = UnmountNode;
    type Output = ();

    fn walk(&self) -> Walk {
        Walk::new(&self.suffix, false, false)
    }

    fn reached(
        &self,
        _: &mut MtIo,
        ctx: &mut MtRun,
        reached: Result<Reached, MtError>,
    ) -> Result<Next<UnmountNode, ()>, MtError> {
        let node = reached?.node.ok_or_else(|| MtError::NoSuchName {
            name: self.suffix.clone(),
        })?;
        authorize(ctx, &node.permissions, &[tags::MOUNT, tags::ADMIN])?;
        Ok(Next::Step(UnmountNode::new(node, &self.server)))
    }

    fn step(&self, unmount: &mut UnmountNode, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        unmount.advance(io, ctx)
    }
}

retry_flow! {
    /// The flow of [`Unmount`](super::Unmount): walk, authorize, unmount; retried on conflicts.
    UnmountFlow(UnmountArgs) -> ()
}

/// Delete's arguments.
#[derive(Debug)]
pub(super) struct DeleteArgs {
    pub(super) suffix: String,
    pub(super) subtree: bool,
}

/// What a Delete round does once its walk found the node.
#[derive(Debug)]
enum DeleteStep {
    /// The caller may not administer `node` (`denied`): may it administer the parent?
    WalkingToParent {
        walk: Walk,
        node: Node,
        denied: MtError,
    },
    Deleting(DeleteAndGc),
    Done,
}

/// One Delete round: walk (a missing node is already deleted), authorize on the node or its
/// parent, delete and collect.
impl Attempt for DeleteArgs {
    type Step = DeleteStep;
    type Output = ();

    fn walk(&self) -> Walk {
        Walk::new(&self.suffix, false, false)
    }

    fn reached(
        &self,
        _: &mut MtIo,
        ctx: &mut MtRun,
        reached: Result<Reached, MtError>,
    ) -> Result<Next<DeleteStep, ()>, MtError> {
        let node = match reached {
            Err(MtError::NoSuchName { .. }) | Ok(Reached { node: None, .. }) => {
                return Ok(Next::Done(()));
            }
            Err(e) => return Err(e),
            Ok(Reached { node: Some(n), .. }) => n,
        };
        Ok(Next::Step(
            match authorize(ctx, &node.permissions, &[tags::ADMIN]) {
                // The parent's admins may delete a child they cannot administer.
                Err(denied) => DeleteStep::WalkingToParent {
                    walk: Walk::new(&codec::clean(codec::split(&self.suffix).0), false, false),
                    node,
                    denied,
                },
                Ok(()) => DeleteStep::Deleting(DeleteAndGc::new(node, self.subtree)),
            },
        ))
    }

    fn step(&self, step: &mut DeleteStep, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use DeleteStep as P;
        loop {
            match mem::replace(step, P::Done) {
                P::WalkingToParent {
                    mut walk,
                    node,
                    denied,
                } => {
                    let parent = ready!(settled(walk.advance(io, ctx)), *step => P::WalkingToParent { walk, node, denied });
                    let allowed = matches!(
                        parent,
                        Ok(Reached { node: Some(p), .. })
                            if authorize(ctx, &p.permissions, &[tags::ADMIN]).is_ok()
                    );
                    if !allowed {
                        return Err(denied);
                    }
                    *step = P::Deleting(DeleteAndGc::new(node, self.subtree));
                }
                P::Deleting(mut delete) => {
                    return ready!(settled(delete.advance(io, ctx)), *step => P::Deleting(delete))
                        .map(Some);
                }
                P::Done => return Err(ended()),
            }
        }
    }
}

retry_flow! {
    /// The flow of [`Delete`](super::Delete): walk, authorize, delete and collect; retried on
    /// conflicts.
    DeleteFlow(DeleteArgs) -> ()
}

/// SetPermissions' arguments.
#[derive(Debug)]
pub(super) struct SetPermsArgs {
    pub(super) suffix: String,
    pub(super) perms: codec::Permissions,
    pub(super) version: String,
}

/// The write of a SetPermissions round, which moves the version to `next_version`.
#[derive(Debug)]
struct PermsWrite {
    occ: Occ,
    next_version: String,
}

/// One SetPermissions round: walk (creating), authorize, check the version, write.
impl Attempt for SetPermsArgs {
    type Step = PermsWrite;
    type Output = PermsAndVersion;

    fn walk(&self) -> Walk {
        Walk::new(&self.suffix, true, false)
    }

    fn reached(
        &self,
        io: &mut MtIo,
        ctx: &mut MtRun,
        reached: Result<Reached, MtError>,
    ) -> Result<Next<PermsWrite, PermsAndVersion>, MtError> {
        let node = reached?.node.ok_or(MtError::NoSuchNameRoot)?;
        authorize(ctx, &node.permissions, &[tags::ADMIN])?;
        if !self.version.is_empty() && self.version.as_bytes() != node.version.as_slice() {
            return Err(MtError::BadVersion);
        }
        // The OCC write fails on the same bad stored version before sending anything.
        let next_version = codec::next_version(&node.version)?;
        let occ = set_perms(io, ctx, &node, &self.perms);
        Ok(Next::Step(PermsWrite { occ, next_version }))
    }

    fn step(
        &self,
        write: &mut PermsWrite,
        io: &mut MtIo,
        _: &mut MtRun,
    ) -> Progress<PermsAndVersion> {
        Ok(write.occ.poll(io)?.map(|()| PermsAndVersion {
            perms: self.perms.clone(),
            version: mem::take(&mut write.next_version),
        }))
    }
}

retry_flow! {
    /// The flow of [`SetPermissions`](super::SetPermissions): walk (creating), authorize, check
    /// the version, write; retried on conflicts.
    SetPermissionsFlow(SetPermsArgs) -> PermsAndVersion
}

// ---- §14 ResolveStep, Glob, GetPermissions ------------------------------------------------------

/// The flow of the read-only lookups, [`ResolveStep`](super::ResolveStep) and
/// [`GetPermissions`](super::GetPermissions): a walk to a node that must exist (else
/// `NoSuchName`, the name asked for), then what the lookup reads from it.
pub struct NodeLookupFlow<O> {
    suffix: String,
    walk: Walk,
    /// What the lookup gives for the node reached and the unresolved rest of the name.
    read: fn(&Node, String) -> O,
}

impl<O> core::fmt::Debug for NodeLookupFlow<O> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NodeLookupFlow")
            .field("suffix", &self.suffix)
            .field("walk", &self.walk)
            .finish_non_exhaustive()
    }
}

/// The flow of [`ResolveStep`](super::ResolveStep): walk to the first node with servers.
pub type ResolveStepFlow = NodeLookupFlow<MountEntry>;
/// The flow of [`GetPermissions`](super::GetPermissions): walk to an existing node.
pub type GetPermissionsFlow = NodeLookupFlow<PermsAndVersion>;

impl ResolveStepFlow {
    pub(super) fn resolve(suffix: String) -> ResolveStepFlow {
        NodeLookupFlow::new(suffix, true, |node, rest| entry_of(rest, node))
    }
}

impl GetPermissionsFlow {
    pub(super) fn permissions(suffix: String) -> GetPermissionsFlow {
        NodeLookupFlow::new(suffix, false, |node, _| PermsAndVersion {
            version: node.version_str(),
            perms: node.permissions.clone(),
        })
    }
}

impl<O> NodeLookupFlow<O> {
    /// A walk to `suffix` or, `with_servers`, to the first node on the way with live servers.
    fn new(suffix: String, with_servers: bool, read: fn(&Node, String) -> O) -> Self {
        NodeLookupFlow {
            walk: Walk::new(&suffix, false, with_servers),
            suffix,
            read,
        }
    }
}

impl<O> Flow for NodeLookupFlow<O> {
    type Schema = MountTableSchema;
    type Output = O;

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<O> {
        let Reached { node, rest } = ready!(self.walk.advance(io, ctx));
        match node {
            Some(n) => Ok(Some((self.read)(&n, rest))),
            None => Err(MtError::NoSuchName {
                name: mem::take(&mut self.suffix),
            }),
        }
    }
}

/// The flow of [`Glob`](super::Glob): if the walk reaches a mounted node, that is the one
/// answer; otherwise a breadth-first walk of the matching children, skipping nodes that
/// vanish or deny access. Entries go out as [`MtEvent::GlobEntry`].
#[derive(Debug)]
pub struct GlobFlow {
    suffix: String,
    /// Names (relative to `suffix`) still to visit, with the pattern left for each.
    queue: VecDeque<(String, Pattern)>,
    phase: GlobPhase,
}

#[derive(Debug)]
enum GlobPhase {
    /// The walk to `suffix`, stopping at a mounted node.
    Root(Walk),
    /// The walk to one queued name.
    Visiting {
        walk: Walk,
        name: String,
        pattern: Pattern,
    },
    Done,
}

impl GlobFlow {
    pub(super) fn new(suffix: String, pattern: Pattern) -> GlobFlow {
        let mut queue = VecDeque::new();
        queue.push_back((String::new(), pattern));
        GlobFlow {
            phase: GlobPhase::Root(Walk::new(&suffix, false, true)),
            suffix,
            queue,
        }
    }

    /// Visits the next queued name; `true` once none is left.
    fn next(&mut self, io: &MtIo, ctx: &MtRun) -> Result<bool, MtError> {
        let Some((name, pattern)) = self.queue.pop_front() else {
            return Ok(true);
        };
        check_deadline(io, ctx)?;
        let walk = Walk::new(&codec::join(&[&self.suffix, &name]), false, false);
        self.phase = GlobPhase::Visiting {
            walk,
            name,
            pattern,
        };
        Ok(false)
    }
}

impl Flow for GlobFlow {
    type Schema = MountTableSchema;
    type Output = ();

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use GlobPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Root(mut walk) => {
                    let reached = ready!(walk.advance(io, ctx), self.phase => P::Root(walk));
                    if let Some(n) = reached.node {
                        let mut entry = entry_of(String::new(), &n);
                        for s in &mut entry.servers {
                            s.server = codec::join(&[&s.server, &reached.rest]);
                        }
                        io.emit(MtEvent::GlobEntry(entry));
                        return Ok(Some(()));
                    }
                }
                P::Visiting {
                    mut walk,
                    name,
                    pattern,
                } => {
                    let reached = ready!(settled(walk.advance(io, ctx)), self.phase => P::Visiting {
                        walk,
                        name,
                        pattern
                    });
                    let Ok(Reached {
                        node: Some(node), ..
                    }) = reached
                    else {
                        if self.next(io, ctx)? {
                            return Ok(Some(()));
                        }
                        continue;
                    };
                    if !node.servers.is_empty() {
                        io.emit(MtEvent::GlobEntry(entry_of(name, &node)));
                    } else {
                        if pattern.elements() == 0 {
                            io.emit(MtEvent::GlobEntry(MountEntry {
                                name: name.clone(),
                                servers: Vec::new(),
                                mt: false,
                                leaf: false,
                            }));
                        }
                        if !pattern.is_empty() {
                            for c in &node.children {
                                if pattern.head_matches(&c.name) {
                                    self.queue.push_back((
                                        codec::join(&[&name, &c.name]),
                                        pattern.tail(),
                                    ));
                                }
                            }
                        }
                    }
                }
                P::Done => return Err(ended()),
            }
            if self.next(io, ctx)? {
                return Ok(Some(()));
            }
        }
    }
}

// ---- §16 initial nodes, counters, fsck ----------------------------------------------------------

/// The flow of [`CreateInitialNodes`](super::CreateInitialNodes): the root with default
/// permissions, or every node of a permissions file in name order (creating intermediate
/// nodes with their parent's permissions), each then given its permissions.
#[derive(Debug)]
pub struct CreateInitialNodesFlow {
    /// The file's nodes in name order.
    nodes: Vec<(String, codec::Permissions)>,
    /// Index of the node being created.
    at: usize,
    phase: InitialPhase,
}

#[derive(Debug)]
enum InitialPhase {
    /// No file: the default root.
    DefaultRoot(CreateRow),
    /// The file's next node is to be created.
    NextNode,
    /// The file names the root.
    Root(CreateRow),
    /// Walking the current node's path.
    Path {
        path: PathStep,
        wait: PathWait,
    },
    /// The current node is given its permissions.
    SettingPerms(Occ),
    Done,
}

/// Where the walk down one file node's path is.
#[derive(Debug)]
struct PathStep {
    elems: Vec<String>,
    /// Index of the element being read or created.
    at: usize,
    /// The name of the element's parent.
    parent_name: String,
    /// The node of the last element passed.
    node: Option<Node>,
}

#[derive(Debug)]
enum PathWait {
    Element(NodeRead),
    /// The element is missing: its parent is read to create it.
    Parent(NodeRead),
    Creating(CreateChild),
}

impl CreateInitialNodesFlow {
    pub(super) fn new(perms_file: Option<BTreeMap<String, codec::Permissions>>) -> Self {
        let Some(file) = perms_file else {
            let root = CreateRow::new(
                "",
                &codec::default_root_permissions(),
                "",
                codec::ROOT_ID,
                0,
                Half::First,
            );
            return CreateInitialNodesFlow {
                nodes: Vec::new(),
                at: 0,
                phase: InitialPhase::DefaultRoot(root),
            };
        };
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
        CreateInitialNodesFlow {
            nodes: nodes.into_iter().collect(),
            at: 0,
            phase: InitialPhase::NextNode,
        }
    }

    /// Starts reading element `at` of the path, or sets the node's permissions past the last.
    fn next_elem(&mut self, io: &mut MtIo, ctx: &MtRun, path: PathStep) -> bool {
        if let Some(e) = path.elems.get(path.at) {
            let current = codec::join(&[&path.parent_name, e]);
            let wait = PathWait::Element(NodeRead::start(io, ctx, &current));
            self.phase = InitialPhase::Path { path, wait };
            return false;
        }
        let (Some(node), Some((_, perms))) = (path.node.as_ref(), self.nodes.get(self.at)) else {
            return true;
        };
        self.phase = InitialPhase::SettingPerms(set_perms(io, ctx, node, perms));
        false
    }
}

impl Flow for CreateInitialNodesFlow {
    type Schema = MountTableSchema;
    type Output = ();

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use InitialPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::DefaultRoot(mut root) => {
                    return ready!(settled(root.advance(io, ctx)), self.phase => P::DefaultRoot(root))
                        .map(Some);
                }
                P::NextNode => {
                    let Some((name, perms)) = self.nodes.get(self.at) else {
                        return Ok(Some(()));
                    };
                    check_deadline(io, ctx)?;
                    if name.is_empty() {
                        let root = CreateRow::new("", perms, "", codec::ROOT_ID, 0, Half::First);
                        self.phase = P::Root(root);
                        continue;
                    }
                    let elems: Vec<String> = name.split('/').map(String::from).collect();
                    let path = PathStep {
                        elems,
                        at: 0,
                        parent_name: String::new(),
                        node: None,
                    };
                    if self.next_elem(io, ctx, path) {
                        return Ok(Some(()));
                    }
                }
                P::Root(mut root) => {
                    ready!(root.advance(io, ctx), self.phase => P::Root(root));
                    self.at += 1;
                    self.phase = P::NextNode;
                }
                P::Path { mut path, wait } => {
                    let node = match wait {
                        PathWait::Element(mut read) => {
                            match ready!(read.poll(io), self.phase => P::Path {
                                path,
                                wait: PathWait::Element(read)
                            }) {
                                Some(n) => n,
                                None => {
                                    let read = NodeRead::start(io, ctx, &path.parent_name);
                                    let wait = PathWait::Parent(read);
                                    self.phase = P::Path { path, wait };
                                    continue;
                                }
                            }
                        }
                        PathWait::Parent(mut read) => {
                            let parent = ready!(read.poll(io), self.phase => P::Path {
                                path,
                                wait: PathWait::Parent(read)
                            })
                            .ok_or(MtError::NoSuchNameRoot)?;
                            let elem = path.elems.get(path.at).cloned().unwrap_or_default();
                            let perms = parent.permissions.clone();
                            let wait =
                                PathWait::Creating(CreateChild::new(parent, &elem, &perms, "", 0));
                            self.phase = P::Path { path, wait };
                            continue;
                        }
                        PathWait::Creating(mut create) => {
                            ready!(create.advance(io, ctx), self.phase => P::Path {
                                path,
                                wait: PathWait::Creating(create)
                            })
                        }
                    };
                    let elem = path.elems.get(path.at).cloned().unwrap_or_default();
                    path.parent_name = codec::join(&[&path.parent_name, &elem]);
                    path.node = Some(node);
                    path.at += 1;
                    if self.next_elem(io, ctx, path) {
                        return Ok(Some(()));
                    }
                }
                P::SettingPerms(mut occ) => {
                    ready!(occ.poll(io), self.phase => P::SettingPerms(occ));
                    self.at += 1;
                    self.phase = P::NextNode;
                }
                P::Done => return Err(ended()),
            }
        }
    }
}

/// The flow of [`ReadCounters`](super::ReadCounters): one scan of the counter table.
#[derive(Debug)]
pub struct ReadCountersFlow(Option<Scan>);

impl ReadCountersFlow {
    pub(super) fn new() -> ReadCountersFlow {
        ReadCountersFlow(None)
    }
}

impl Flow for ReadCountersFlow {
    type Schema = MountTableSchema;
    type Output = BTreeMap<Vec<u8>, i64>;

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<BTreeMap<Vec<u8>, i64>> {
        let scan = self.0.get_or_insert_with(|| {
            Scan::start(
                io,
                ctx,
                ctx.tables.counter.clone(),
                RowSet::all(),
                Some(RowFilter::CellsPerColumnLimit(1)),
                0,
            )
        });
        let rows = ready!(scan.poll(io));
        rows.iter()
            .map(|r| {
                codec::decode_counter_row(r)
                    .map(|v| (r.key.clone(), v))
                    .map_err(|e| MtError::Internal {
                        what: e.to_string(),
                    })
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }
}

/// Most passes of `fsck --fix`: a backstop only, since passes already stop as soon as one fixes
/// nothing it had not fixed before.
const MAX_FSCK_PASSES: u32 = 16;

/// Names a finding's detail lists at most (a node may have many dangling children).
const DETAIL_NAMES: usize = 8;

/// What fsck has reported, so that each finding is reported once whatever the passes, and the
/// counters the node rows imply.
#[derive(Debug, Default)]
struct Tally {
    summary: FsckSummary,
    /// Each finding reported, by row and kind, and what became of it.
    reported: BTreeMap<(Vec<u8>, FindingKind), Outcome>,
    /// Findings the current pass fixed that no pass had fixed before.
    fixed_in_pass: u64,
    /// Per creator: the decodable nodes of the current pass and their servers (live and
    /// expired), what the counters must hold (§16's rebuild).
    counts: BTreeMap<String, (i64, i64)>,
}

/// What became of a reported finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Fixed,
    Left,
    /// Fixed, then found again by a later pass: the repair does not take; left, and reported
    /// no more.
    Recurring,
}

impl Tally {
    /// Reports a finding unless it was reported before; a finding left before and fixed now,
    /// or fixed before and found again, is reported once more with what changed.
    fn report(
        &mut self,
        io: &mut MtIo,
        row_key: &[u8],
        kind: FindingKind,
        fixed: bool,
        detail: String,
    ) {
        let key = (row_key.to_vec(), kind);
        let (outcome, detail) = match self.reported.get(&key) {
            None => {
                if kind == FindingKind::Undecodable {
                    self.summary.undecodable.push(row_key.to_vec());
                } else {
                    self.summary.inconsistent += 1;
                    if fixed {
                        self.fixed_in_pass += 1;
                        self.summary.fixed.push(row_key.to_vec());
                    } else {
                        self.summary.left.push(row_key.to_vec());
                    }
                }
                (if fixed { Outcome::Fixed } else { Outcome::Left }, detail)
            }
            Some(Outcome::Left) if fixed => {
                self.fixed_in_pass += 1;
                self.summary.left.retain(|k| k.as_slice() != row_key);
                self.summary.fixed.push(row_key.to_vec());
                (Outcome::Fixed, detail)
            }
            Some(Outcome::Fixed) => {
                self.summary.fixed.retain(|k| k.as_slice() != row_key);
                self.summary.left.push(row_key.to_vec());
                let detail = alloc::format!(
                    "{detail}; found again after an earlier pass fixed it: left as it is"
                );
                (Outcome::Recurring, detail)
            }
            Some(_) => return,
        };
        let fixed = outcome == Outcome::Fixed;
        self.reported.insert(key, outcome);
        io.emit(MtEvent::FsckFinding {
            row_key: row_key.to_vec(),
            kind,
            fixed,
            detail: crate::check::bounded_detail(detail),
        });
    }

    /// Counts a decodable node for its creator's counters.
    fn count(&mut self, node: &codec::NodeRow) {
        let servers = (node.servers.len() + node.expired_servers.len()) as i64;
        let entry = self.counts.entry(node.creator.clone()).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += servers;
    }

    /// The counter rows the nodes counted imply, by row key.
    fn expected_counters(&self) -> BTreeMap<Vec<u8>, i64> {
        let mut out = BTreeMap::new();
        for (creator, (nodes, servers)) in &self.counts {
            out.insert(codec::counter_row_key(CounterKind::Nodes, creator), *nodes);
            out.insert(
                codec::counter_row_key(CounterKind::Servers, creator),
                *servers,
            );
        }
        out
    }
}

/// The flow of [`Fsck`](super::Fsck): one pass, or with `fix` passes until one fixes nothing new
/// (a finding no pass can fix is reported once and left); then the counters are compared with
/// the nodes of the last pass, the wrong ones listed in the summary, and with `fix` rebuilt
/// (§16).
#[derive(Debug)]
pub struct FsckFlow {
    fix: bool,
    tally: Tally,
    /// Wrong counter rows found (row key, detail), for the summary.
    wrong_counters: Vec<(Vec<u8>, String)>,
    phase: FsckPhase,
}

#[derive(Debug)]
enum FsckPhase {
    Start,
    Passing(FsckPass),
    CountersRead(Scan),
    /// Counter row `at` of `rows` is being deleted.
    CounterDeleted {
        put: Put,
        rows: Vec<Row>,
        at: usize,
    },
    /// Counter `at` of `counters` (row key, value) is being written by an increment.
    Counted {
        count: Increment,
        counters: Vec<(Vec<u8>, i64)>,
        at: usize,
    },
    Done,
}

impl FsckFlow {
    pub(super) fn new(fix: bool) -> FsckFlow {
        FsckFlow {
            fix,
            tally: Tally::default(),
            wrong_counters: Vec::new(),
            phase: FsckPhase::Start,
        }
    }

    fn pass(&mut self, io: &MtIo, ctx: &MtRun) -> Result<(), MtError> {
        check_deadline(io, ctx)?;
        self.tally.summary.passes += 1;
        self.tally.fixed_in_pass = 0;
        self.tally.counts.clear();
        let tally = mem::take(&mut self.tally);
        self.phase = FsckPhase::Passing(FsckPass::new(self.fix, tally));
        Ok(())
    }

    /// The counter rows that differ from what the nodes imply, each with its detail.
    fn compare_counters(&mut self, rows: &[Row]) {
        let mut expected = self.tally.expected_counters();
        for row in rows {
            let want = expected.remove(&row.key).unwrap_or(0);
            // The scan keeps every version (the rebuild deletes whole rows); a counter is its
            // newest cell, the first of its column.
            let mut latest = Row {
                key: row.key.clone(),
                cells: Vec::new(),
            };
            for cell in &row.cells {
                if !latest
                    .cells
                    .last()
                    .is_some_and(|c| c.family == cell.family && c.qualifier == cell.qualifier)
                {
                    latest.cells.push(cell.clone());
                }
            }
            let detail = match codec::decode_counter_row(&latest) {
                Ok(have) if have == want => continue,
                Ok(have) => alloc::format!("counter is {have}, the nodes imply {want}"),
                Err(e) => alloc::format!("counter does not decode ({e}); the nodes imply {want}"),
            };
            self.wrong_counters.push((row.key.clone(), detail));
        }
        for (key, want) in expected {
            if want != 0 {
                let detail = alloc::format!("no counter row; the nodes imply {want}");
                self.wrong_counters.push((key, detail));
            }
        }
        self.wrong_counters.sort();
    }

    /// Deletes counter row `at`, or writes the counters once all are gone.
    fn delete_counter(&mut self, io: &mut MtIo, ctx: &MtRun, rows: Vec<Row>, at: usize) {
        self.phase = match rows.get(at) {
            Some(row) => {
                let table = ctx.tables.counter.clone();
                let put = Put::start(
                    io,
                    ctx,
                    table,
                    row.key.clone(),
                    vec![Mutation::DeleteFromRow],
                    Half::First,
                );
                FsckPhase::CounterDeleted { put, rows, at }
            }
            None => {
                let counters = self.tally.expected_counters().into_iter().collect();
                match self.count(counters, 0) {
                    Some(phase) => phase,
                    None => FsckPhase::Done,
                }
            }
        };
    }

    /// The increment writing counter `at`, or `None` past the last.
    fn count(&self, counters: Vec<(Vec<u8>, i64)>, at: usize) -> Option<FsckPhase> {
        let (key, value) = counters.get(at)?;
        let (kind, creator) = codec::decode_counter_row_key(key)?;
        let creator = String::from_utf8_lossy(creator).into_owned();
        let count = Increment::new(kind, &creator, *value, 0, Half::First);
        Some(FsckPhase::Counted {
            count,
            counters,
            at,
        })
    }

    /// Ends, with the wrong counters in the summary (rebuilt when `fix`): with the summary, or
    /// `FsckInconsistent` when something is left (or, without `fix`, found).
    fn finish(&mut self) -> Progress<FsckSummary> {
        let mut summary = mem::take(&mut self.tally.summary);
        summary.counters = mem::take(&mut self.wrong_counters);
        if !summary.left.is_empty() || !summary.undecodable.is_empty() {
            return Err(MtError::FsckInconsistent(summary));
        }
        Ok(Some(summary))
    }
}

impl Flow for FsckFlow {
    type Schema = MountTableSchema;
    type Output = FsckSummary;

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<FsckSummary> {
        use FsckPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Start => self.pass(io, ctx)?,
                P::Passing(mut pass) => {
                    self.tally = ready!(pass.advance(io, ctx), self.phase => P::Passing(pass));
                    if self.fix
                        && self.tally.fixed_in_pass > 0
                        && self.tally.summary.passes < MAX_FSCK_PASSES
                    {
                        self.pass(io, ctx)?;
                        continue;
                    }
                    self.phase = P::CountersRead(Scan::start(
                        io,
                        ctx,
                        ctx.tables.counter.clone(),
                        RowSet::all(),
                        None,
                        0,
                    ));
                }
                P::CountersRead(mut scan) => {
                    let rows = ready!(scan.poll(io), self.phase => P::CountersRead(scan));
                    self.compare_counters(&rows);
                    if !self.fix {
                        return self.finish();
                    }
                    self.delete_counter(io, ctx, rows, 0);
                    if matches!(self.phase, P::Done) {
                        return self.finish();
                    }
                }
                P::CounterDeleted { mut put, rows, at } => {
                    ready!(put.poll(io), self.phase => P::CounterDeleted { put, rows, at });
                    self.delete_counter(io, ctx, rows, at + 1);
                    if matches!(self.phase, P::Done) {
                        return self.finish();
                    }
                }
                P::Counted {
                    mut count,
                    counters,
                    at,
                } => {
                    ready!(count.advance(io, ctx), self.phase => P::Counted {
                        count,
                        counters,
                        at
                    });
                    match self.count(counters, at + 1) {
                        Some(next) => self.phase = next,
                        None => return self.finish(),
                    }
                }
                P::Done => return Err(ended()),
            }
        }
    }
}

/// One fsck pass over the node table, page by page: orphans (deleted with `fix`), dangling
/// child references (dropped with `fix`), undecodable rows and rows under a key that is not
/// their name's. Gives the tally back.
#[derive(Debug)]
struct FsckPass {
    fix: bool,
    tally: Tally,
    /// The last row key of the page before (`None`: the first page).
    start: Option<Vec<u8>>,
    page: Vec<Row>,
    /// Whether the page was full (another may follow).
    full: bool,
    /// Index of the page's row being checked.
    at: usize,
    phase: PassPhase,
}

#[derive(Debug)]
enum PassPhase {
    Start,
    Paging(Scan),
    /// Does the parent of `node` reference it?
    ParentRead {
        read: NodeRead,
        node: Node,
    },
    OrphanDeleted {
        delete: Box<Delete>,
        node: Node,
        detail: String,
    },
    /// The delete of an orphan failed: is the node still there (or was it deleted with an
    /// orphan subtree before it in this pass)?
    OrphanReread {
        read: NodeRead,
        node: Node,
        detail: String,
    },
    /// The node's children are being read one by one.
    ChildRead {
        read: NodeRead,
        check: ChildCheck,
    },
    DanglingFixed {
        occ: Occ,
        key: Vec<u8>,
        detail: String,
    },
    Done,
}

/// The children check of one node: which child is read, what was found so far.
#[derive(Debug)]
struct ChildCheck {
    node: Node,
    at: usize,
    /// Qualifiers of references to missing nodes or other incarnations.
    dangling: Vec<Vec<u8>>,
    /// Names of those children (the first few, for the detail).
    dangling_names: Vec<String>,
    /// The first child read that failed, and why.
    store_error: Option<String>,
}

/// `a, b, c (and 5 more)`: the first [`DETAIL_NAMES`] of `names`.
fn some_names(names: &[String], all: usize) -> String {
    let mut text = names.join(", ");
    if all > names.len() {
        text.push_str(&alloc::format!(" (and {} more)", all - names.len()));
    }
    text
}

impl FsckPass {
    fn new(fix: bool, tally: Tally) -> FsckPass {
        FsckPass {
            fix,
            tally,
            start: None,
            page: Vec::new(),
            full: false,
            at: 0,
            phase: PassPhase::Start,
        }
    }

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<Tally> {
        use PassPhase as P;
        loop {
            let ended_pass = match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    self.scan_page(io, ctx);
                    false
                }
                P::Paging(mut scan) => {
                    self.page = ready!(scan.poll(io), self.phase => P::Paging(scan));
                    io.emit(MtEvent::FsckPage {
                        rows: self.page.len() as u64,
                    });
                    self.full = self.page.len() as i64 >= FSCK_PAGE;
                    self.start = self.page.last().map(|r| r.key.clone());
                    self.at = 0;
                    self.next_row(io, ctx)?
                }
                P::ParentRead { mut read, node } => {
                    let dir = codec::split(&node.name).0;
                    match ready!(settled(read.poll(io)), self.phase => P::ParentRead { read, node })
                    {
                        Err(e) => {
                            let detail = alloc::format!("reading its parent {dir:?} failed: {e}");
                            self.tally.report(
                                io,
                                &node.row_key,
                                FindingKind::StoreError,
                                false,
                                detail,
                            );
                            self.row_done(io, ctx)?
                        }
                        Ok(parent) => {
                            let base = codec::split(&node.name).1;
                            let detail = match &parent {
                                None => Some(alloc::format!(
                                    "node {:?}: its parent {dir:?} does not exist",
                                    node.name
                                )),
                                Some(p)
                                    if !p
                                        .children
                                        .iter()
                                        .any(|c| c.name == base && c.id == node.id) =>
                                {
                                    Some(alloc::format!(
                                        "node {:?} (id {:?}): its parent {dir:?} does not reference it",
                                        node.name,
                                        String::from_utf8_lossy(&node.id)
                                    ))
                                }
                                Some(_) => None,
                            };
                            match detail {
                                None => self.check_children(io, ctx, node)?,
                                Some(detail) if self.fix => {
                                    let delete = Box::new(Delete::new(node.clone(), true));
                                    self.phase = P::OrphanDeleted {
                                        delete,
                                        node,
                                        detail,
                                    };
                                    false
                                }
                                Some(detail) => {
                                    self.tally.report(
                                        io,
                                        &node.row_key,
                                        FindingKind::Orphan,
                                        false,
                                        detail,
                                    );
                                    self.row_done(io, ctx)?
                                }
                            }
                        }
                    }
                }
                P::OrphanDeleted {
                    mut delete,
                    node,
                    detail,
                } => {
                    match ready!(settled(delete.advance(io, ctx)), self.phase => P::OrphanDeleted {
                        delete,
                        node,
                        detail
                    }) {
                        Ok(()) => {
                            self.tally
                                .report(io, &node.row_key, FindingKind::Orphan, true, detail);
                            self.row_done(io, ctx)?
                        }
                        Err(e) => {
                            let detail = alloc::format!("{detail}; its delete failed: {e}");
                            let read = NodeRead::start(io, ctx, &node.name);
                            self.phase = P::OrphanReread { read, node, detail };
                            false
                        }
                    }
                }
                P::OrphanReread {
                    mut read,
                    node,
                    detail,
                } => {
                    let now = ready!(settled(read.poll(io)), self.phase => P::OrphanReread { read, node, detail });
                    // Gone (or another incarnation): deleted with an orphan subtree earlier in
                    // this pass, or by a writer; nothing to report.
                    if matches!(&now, Ok(Some(n)) if n.id == node.id) || now.is_err() {
                        self.tally
                            .report(io, &node.row_key, FindingKind::Orphan, false, detail);
                    }
                    self.row_done(io, ctx)?
                }
                P::ChildRead {
                    mut read,
                    mut check,
                } => {
                    let found =
                        ready!(settled(read.poll(io)), self.phase => P::ChildRead { read, check });
                    if let Some(c) = check.node.children.get(check.at) {
                        match found {
                            Err(e) => {
                                if check.store_error.is_none() {
                                    check.store_error = Some(alloc::format!(
                                        "reading child {:?} failed: {e}",
                                        c.name
                                    ));
                                }
                            }
                            Ok(Some(child)) if child.id == c.id => {}
                            Ok(_) => {
                                check.dangling.push(codec::child_qualifier(&c.id, &c.name));
                                if check.dangling_names.len() < DETAIL_NAMES {
                                    check.dangling_names.push(c.name.clone());
                                }
                            }
                        }
                    }
                    check.at += 1;
                    self.next_child(io, ctx, check)?
                }
                P::DanglingFixed {
                    mut occ,
                    key,
                    detail,
                } => {
                    let (fixed, detail) = match ready!(settled(occ.poll(io)), self.phase => P::DanglingFixed { occ, key, detail })
                    {
                        Ok(_) => (true, detail),
                        Err(e) => (false, alloc::format!("{detail}; the repair failed: {e}")),
                    };
                    self.tally
                        .report(io, &key, FindingKind::Dangling, fixed, detail);
                    self.row_done(io, ctx)?
                }
                P::Done => return Err(ended()),
            };
            if ended_pass {
                return Ok(Some(mem::take(&mut self.tally)));
            }
        }
    }

    fn scan_page(&mut self, io: &mut MtIo, ctx: &MtRun) {
        let rows = match &self.start {
            None => RowSet::all(),
            Some(k) => RowSet::range(RowRange {
                start: KeyBound::Open(k.clone()),
                end: KeyBound::Unbounded,
            }),
        };
        self.phase = PassPhase::Paging(Scan::start(
            io,
            ctx,
            ctx.tables.node.clone(),
            rows,
            Some(RowFilter::CellsPerColumnLimit(1)),
            FSCK_PAGE,
        ));
    }

    fn row_done(&mut self, io: &mut MtIo, ctx: &MtRun) -> Result<bool, MtError> {
        self.at += 1;
        self.next_row(io, ctx)
    }

    /// Checks the next row of the page (if the deadline allows); past the last, the next page.
    /// `true` once the pass has ended.
    fn next_row(&mut self, io: &mut MtIo, ctx: &MtRun) -> Result<bool, MtError> {
        loop {
            let Some(row) = self.page.get(self.at) else {
                if !self.full {
                    return Ok(true);
                }
                self.scan_page(io, ctx);
                return Ok(false);
            };
            check_deadline(io, ctx)?;
            let node = match codec::decode_node(row, io.now().0) {
                Ok(n) => n,
                Err(e) => {
                    let key = row.key.clone();
                    let detail = alloc::format!("the row does not decode: {e}");
                    self.tally
                        .report(io, &key, FindingKind::Undecodable, false, detail);
                    self.at += 1;
                    continue;
                }
            };
            self.tally.count(&node);
            // getNode reads a name at its hash: a row under another key is never found.
            let canonical = codec::row_key(&node.name);
            if canonical != row.key {
                let key = row.key.clone();
                let detail = alloc::format!(
                    "node {:?} is stored under this key, but reads look for it at {}",
                    node.name,
                    rowkit_codec::escape::escape(&canonical)
                );
                self.tally
                    .report(io, &key, FindingKind::WrongKey, false, detail);
                self.at += 1;
                continue;
            }
            let node = Node::new(node);
            if node.name.is_empty() {
                return self.check_children(io, ctx, node);
            }
            let read = NodeRead::start(io, ctx, codec::split(&node.name).0);
            self.phase = PassPhase::ParentRead { read, node };
            return Ok(false);
        }
    }

    /// Starts reading the node's children.
    fn check_children(&mut self, io: &mut MtIo, ctx: &MtRun, node: Node) -> Result<bool, MtError> {
        let check = ChildCheck {
            node,
            at: 0,
            dangling: Vec::new(),
            dangling_names: Vec::new(),
            store_error: None,
        };
        self.next_child(io, ctx, check)
    }

    /// Reads the next child of the node, or judges the node once all are read.
    fn next_child(
        &mut self,
        io: &mut MtIo,
        ctx: &MtRun,
        check: ChildCheck,
    ) -> Result<bool, MtError> {
        let node = &check.node;
        if let Some(c) = node.children.get(check.at) {
            let read = NodeRead::start(io, ctx, &codec::join(&[&node.name, &c.name]));
            self.phase = PassPhase::ChildRead { read, check };
            return Ok(false);
        }
        let key = node.row_key.clone();
        if let Some(error) = check.store_error {
            self.tally
                .report(io, &key, FindingKind::StoreError, false, error);
            return self.row_done(io, ctx);
        }
        if check.dangling.is_empty() {
            return self.row_done(io, ctx);
        }
        let detail = alloc::format!(
            "node {:?} references children that are missing or another incarnation: {}",
            node.name,
            some_names(&check.dangling_names, check.dangling.len())
        );
        if !self.fix {
            self.tally
                .report(io, &key, FindingKind::Dangling, false, detail);
            return self.row_done(io, ctx);
        }
        let mutations = check
            .dangling
            .iter()
            .map(|q| super::calls::delete_column(FAMILY_CHILDREN, q))
            .collect();
        let occ = Occ::start(io, ctx, node, mutations, false);
        self.phase = PassPhase::DanglingFixed { occ, key, detail };
        Ok(false)
    }
}

/// The flow of [`PrimitiveOp`](super::PrimitiveOp): one internal primitive (§10–§11).
#[derive(Debug)]
pub struct PrimitiveFlow(PrimitivePhase);

#[derive(Debug)]
enum PrimitivePhase {
    Start(Primitive),
    GettingNode(NodeRead),
    CreatingRow(CreateRow),
    CreatingChild(CreateChild),
    Deleting(Delete),
    Mounting(MountNode),
    SettingPerms(Occ),
    Done,
}

impl PrimitiveFlow {
    pub(super) fn new(primitive: Primitive) -> PrimitiveFlow {
        PrimitiveFlow(PrimitivePhase::Start(primitive))
    }
}

impl Flow for PrimitiveFlow {
    type Schema = MountTableSchema;
    type Output = PrimitiveOutput;

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<PrimitiveOutput> {
        use PrimitivePhase as P;
        let phase = &mut self.0;
        loop {
            match mem::replace(phase, P::Done) {
                P::Start(p) => {
                    *phase = match p {
                        Primitive::GetNode { name } => {
                            P::GettingNode(NodeRead::start(io, ctx, &name))
                        }
                        Primitive::CreateRow {
                            name,
                            perms,
                            creator,
                            id,
                            limit,
                        } => P::CreatingRow(CreateRow::new(
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
                        } => P::CreatingChild(CreateChild::new(
                            Node::new(parent),
                            &child,
                            &perms,
                            &creator,
                            limit,
                        )),
                        Primitive::Delete { node, subtree } => {
                            P::Deleting(Delete::new(Node::new(node), subtree))
                        }
                        Primitive::Mount {
                            node,
                            server,
                            deadline_us,
                            flags,
                            limit,
                        } => P::Mounting(MountNode::new(
                            Node::new(node),
                            &server,
                            Some(deadline_us),
                            0,
                            flags,
                            limit,
                        )),
                        Primitive::SetPermissions { node, perms } => {
                            P::SettingPerms(set_perms(io, ctx, &node, &perms))
                        }
                    };
                }
                P::GettingNode(mut read) => {
                    let node = ready!(read.poll(io), *phase => P::GettingNode(read));
                    let node = node.map(|n| Box::new(Arc::unwrap_or_clone(n)));
                    return Ok(Some(PrimitiveOutput::Node(node)));
                }
                P::CreatingRow(mut create) => {
                    ready!(create.advance(io, ctx), *phase => P::CreatingRow(create));
                    return Ok(Some(PrimitiveOutput::Done));
                }
                P::CreatingChild(mut create) => {
                    let node = ready!(create.advance(io, ctx), *phase => P::CreatingChild(create));
                    let node = Box::new(Arc::unwrap_or_clone(node));
                    return Ok(Some(PrimitiveOutput::Node(Some(node))));
                }
                P::Deleting(mut delete) => {
                    ready!(delete.advance(io, ctx), *phase => P::Deleting(delete));
                    return Ok(Some(PrimitiveOutput::Done));
                }
                P::Mounting(mut mount) => {
                    ready!(mount.advance(io, ctx), *phase => P::Mounting(mount));
                    return Ok(Some(PrimitiveOutput::Done));
                }
                P::SettingPerms(mut occ) => {
                    ready!(occ.poll(io), *phase => P::SettingPerms(occ));
                    return Ok(Some(PrimitiveOutput::Done));
                }
                P::Done => return Err(ended()),
            }
        }
    }
}
