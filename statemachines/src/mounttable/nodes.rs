//! The node protocols of `spec/mounttable.md` §10–§12 as nested steps: counters, row and
//! child creation, subtree deletion, opportunistic GC, mount and unmount on a snapshot, and
//! the path walk. The service operations built on them live in `operations`.
//!
//! Each step is a struct whose `phase` names what it waits for and holds what that phase
//! needs; `advance` consumes the phase (moving to the next one) as far as its call or nested
//! step allows, and gives `Ok(None)` while it waits. Moves that need no request loop inside
//! `advance`.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::mem;

use rowkit_codec::model::{Code, Mutation, RowFilter, Timestamp};
use rowkit_codec::mounttable::{
    self as codec, CounterKind, FAMILY_CHILDREN, FAMILY_META, FAMILY_SERVERS, MARKER_VALUE,
    MountFlags, NodeRow, Permissions, tags,
};

use super::calls::{
    BackOff, Cam, Half, Incr, MtIo, Node, NodeRead, Occ, Progress, Put, check_deadline,
    delete_column, ended, warn,
};
use super::{MountEntry, MountedServer, MtCtx, MtError, MtRun};
use crate::operation::settled;
use crate::ready;

// ---- shared helpers ---------------------------------------------------------------------------

pub(super) fn entry_of(name: String, node: &NodeRow) -> MountEntry {
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
pub(super) fn authorize(
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
pub(super) fn set_perms(io: &mut MtIo, ctx: &MtRun, node: &NodeRow, perms: &Permissions) -> Occ {
    let ts = Timestamp::SERVER_TIME;
    let mutations = vec![
        Mutation::set_cell(
            FAMILY_META,
            codec::QUAL_PERMS,
            ts,
            codec::encode_permissions(perms),
        ),
        Mutation::set_cell(FAMILY_META, codec::QUAL_STICKY, ts, MARKER_VALUE),
    ];
    Occ::start(io, ctx, node, mutations, false)
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

/// Whether a child reference is a leftover that a creator of the same name may remove.
///
/// rowkit fix (btmtd removes every same-name reference of its parent snapshot, §11.1 step
/// 4): a reference younger than the 1 h detached deadline of a two-row operation's second
/// half (§17) may belong to a creator whose row is still to come, or to a deleted incarnation
/// whose deleter removes it next; both clean up after themselves. Removing such a reference
/// can orphan a live row: its creator's row lands after the removal, walks still find the row
/// by key, a caller mounts on it, and the parent, now without references, is collected under
/// it (the NoSuchName of the concurrency scenarios). Only crash leftovers grow older than that.
fn is_stale(child: &codec::ChildRef, now: Timestamp) -> bool {
    now.0.saturating_sub(child.written_us) >= STALE_CHILD_US
}

/// Whether a write that failed with `e` may still have been applied: the request reached the
/// store but its answer did not come back (lost, timed out, cut). Only a definite answer proves
/// the write did not happen.
fn outcome_unknown(e: &MtError) -> bool {
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

/// Removes every reference named `child` of `parent` that is stale (or all of them with
/// `all`).
fn stale_refs(parent: &NodeRow, child: &str, all: bool, now: Timestamp) -> Vec<Mutation> {
    parent
        .children
        .iter()
        .filter(|c| c.name == child && (all || is_stale(c, now)))
        .map(|c| delete_column(FAMILY_CHILDREN, &codec::child_qualifier(&c.id, &c.name)))
        .collect()
}

// ---- §10.4 incrementWithLimit -----------------------------------------------------------------

/// §10.4: add `delta` to a creator's counter; past `limit`, undo and fail.
#[derive(Debug)]
pub(super) struct Increment {
    key: Vec<u8>,
    kind: CounterKind,
    delta: i64,
    limit: i64,
    half: Half,
    phase: IncrementPhase,
}

#[derive(Debug)]
enum IncrementPhase {
    Start,
    /// The increment is in flight.
    Adding(Incr),
    /// Over the limit: the undo is in flight.
    Undoing(Incr),
    Done,
}

impl Increment {
    pub(super) fn new(
        kind: CounterKind,
        creator: &str,
        delta: i64,
        limit: i64,
        half: Half,
    ) -> Increment {
        Increment {
            key: codec::counter_row_key(kind, creator),
            kind,
            delta,
            limit,
            half,
            phase: IncrementPhase::Start,
        }
    }

    pub(super) fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use IncrementPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    if self.delta == 0 {
                        return Ok(Some(()));
                    }
                    let call = Incr::start(io, ctx, self.key.clone(), self.delta, self.half);
                    self.phase = P::Adding(call);
                }
                P::Adding(mut call) => {
                    let n = ready!(call.poll(io), self.phase => P::Adding(call));
                    if self.delta > 0 && self.limit > 0 && n > self.limit {
                        let undo = Incr::start(io, ctx, self.key.clone(), -self.delta, self.half);
                        self.phase = P::Undoing(undo);
                        continue;
                    }
                    return Ok(Some(()));
                }
                P::Undoing(mut call) => {
                    if let Err(e) = ready!(settled(call.poll(io)), self.phase => P::Undoing(call)) {
                        warn(io, "undo counter increment", e);
                    }
                    let limit = self.limit;
                    return Err(match self.kind {
                        CounterKind::Nodes => MtError::NodeLimitExceeded { limit },
                        CounterKind::Servers => MtError::ServerLimitExceeded { limit },
                    });
                }
                P::Done => return Err(ended()),
            }
        }
    }
}

// ---- §10.2 createRow ----------------------------------------------------------------------------

/// §10.2: count the node, then write the row only if it has no creator yet; undo the count if
/// the row exists or the write fails.
#[derive(Debug)]
pub(super) struct CreateRow {
    name: String,
    perms: Permissions,
    creator: String,
    id: Vec<u8>,
    half: Half,
    phase: CreateRowPhase,
}

#[derive(Debug)]
enum CreateRowPhase {
    Counting(Increment),
    Writing(Cam),
    /// The row was not written (`error`): the count is being undone.
    Uncounting {
        undo: Increment,
        error: MtError,
    },
    Done,
}

impl CreateRow {
    pub(super) fn new(
        name: &str,
        perms: &Permissions,
        creator: &str,
        id: &[u8],
        limit: i64,
        half: Half,
    ) -> CreateRow {
        let creator = if creator.is_empty() {
            codec::SERVER_USER
        } else {
            creator
        };
        CreateRow {
            name: name.into(),
            perms: perms.clone(),
            creator: creator.into(),
            id: id.to_vec(),
            half,
            phase: CreateRowPhase::Counting(Increment::new(
                CounterKind::Nodes,
                creator,
                1,
                limit,
                half,
            )),
        }
    }

    pub(super) fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use CreateRowPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Counting(mut inc) => {
                    ready!(inc.advance(io, ctx), self.phase => P::Counting(inc));
                    let version = codec::format_version((io.next_seed() >> 32) as u32);
                    let predicate = RowFilter::Chain(vec![
                        RowFilter::FamilyNameRegex(FAMILY_META.into()),
                        RowFilter::ColumnQualifierRegex(codec::QUAL_CREATOR.to_vec()),
                    ]);
                    let ts = Timestamp::SERVER_TIME;
                    let json = codec::encode_permissions(&self.perms);
                    let mutations = vec![
                        Mutation::set_cell(FAMILY_META, codec::QUAL_ID, ts, self.id.as_slice()),
                        Mutation::set_cell(
                            FAMILY_META,
                            codec::QUAL_CREATOR,
                            ts,
                            self.creator.as_bytes(),
                        ),
                        Mutation::set_cell(FAMILY_META, codec::QUAL_PERMS, ts, json.as_slice()),
                        Mutation::set_cell(
                            FAMILY_META,
                            codec::QUAL_VERSION,
                            ts,
                            version.as_bytes(),
                        ),
                    ];
                    let key = codec::row_key(&self.name);
                    self.phase =
                        P::Writing(Cam::start(io, ctx, key, predicate, mutations, self.half));
                }
                P::Writing(mut cam) => {
                    let error = match ready!(settled(cam.poll(io)), self.phase => P::Writing(cam)) {
                        Ok(false) => return Ok(Some(())),
                        Ok(true) => MtError::ConcurrentAccess,
                        // rowkit fix: the row may exist (its answer was lost). Keep the count,
                        // as for a row that does: a stale counter is tolerated and fsck
                        // recounts.
                        Err(e) if outcome_unknown(&e) => return Err(e),
                        Err(e) => e,
                    };
                    let undo = Increment::new(CounterKind::Nodes, &self.creator, -1, 0, self.half);
                    self.phase = P::Uncounting { undo, error };
                }
                P::Uncounting { mut undo, error } => {
                    let r = ready!(settled(undo.advance(io, ctx)), self.phase => P::Uncounting { undo, error });
                    if let Err(w) = r {
                        warn(io, "undo node counter", w);
                    }
                    return Err(error);
                }
                P::Done => return Err(ended()),
            }
        }
    }
}

// ---- §11.1 createChild ------------------------------------------------------------------------

/// §11.1: reference the child in the parent (OCC), create its row (rolling the reference back
/// on failure), drop stale references of the same name, read the new node back and make sure
/// it is still linked. Gives the new node.
#[derive(Debug)]
pub(super) struct CreateChild {
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
    phase: CreateChildPhase,
}

#[derive(Debug)]
enum CreateChildPhase {
    Start,
    Referencing(Occ),
    CreatingRow(CreateRow),
    /// The row was not created (`error`): the reference is being taken back.
    RollingBack {
        put: Put,
        error: MtError,
    },
    DroppingStale(Put),
    ReadingBack(NodeRead),
    /// The new node is read back; is it still linked?
    Linking {
        link: EnsureLinked,
        node: Node,
    },
    Done,
}

impl CreateChild {
    pub(super) fn new(
        parent: Node,
        child: &str,
        perms: &Permissions,
        creator: &str,
        limit: i64,
    ) -> CreateChild {
        CreateChild {
            qualifier: codec::child_qualifier(&parent.version, child),
            child_name: codec::join(&[&parent.name, child]),
            parent,
            child: child.into(),
            perms: perms.clone(),
            creator: creator.into(),
            limit,
            repair: false,
            phase: CreateChildPhase::Start,
        }
    }

    /// [`CreateChild::new`] re-creating a dangling child of a node being deleted.
    pub(super) fn repair(parent: Node, child: &str) -> CreateChild {
        let perms = parent.permissions.clone();
        CreateChild {
            repair: true,
            ..CreateChild::new(parent, child, &perms, "", 0)
        }
    }

    pub(super) fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<Node> {
        use CreateChildPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    if self.parent.version.len() != 8 {
                        return Err(codec::VersionError {
                            value: self.parent.version_str(),
                            reason: "a parent version used as a child id must be 8 bytes",
                        }
                        .into());
                    }
                    let reference = vec![Mutation::set_cell(
                        FAMILY_CHILDREN,
                        &self.qualifier,
                        Timestamp::SERVER_TIME,
                        MARKER_VALUE,
                    )];
                    self.phase =
                        P::Referencing(Occ::start(io, ctx, &self.parent, reference, false));
                }
                P::Referencing(mut occ) => {
                    ready!(occ.poll(io), self.phase => P::Referencing(occ));
                    // The parent's version is the child's id (§11.1).
                    self.phase = P::CreatingRow(CreateRow::new(
                        &self.child_name,
                        &self.perms,
                        &self.creator,
                        &self.parent.version,
                        self.limit,
                        Half::Second,
                    ));
                }
                P::CreatingRow(mut row) => {
                    if let Err(error) =
                        ready!(settled(row.advance(io, ctx)), self.phase => P::CreatingRow(row))
                    {
                        if outcome_unknown(&error) {
                            // rowkit fix: the child row may exist (the createRow answer was
                            // lost). Rolling the reference back would orphan it, and a later
                            // walk would use that orphan until fsck deletes it with whatever
                            // was mounted on it. Keeping the reference leaves at worst a
                            // dangling one, which §17 tolerates and re-creation or fsck
                            // repairs.
                            return Err(error);
                        }
                        let undo = vec![delete_column(FAMILY_CHILDREN, &self.qualifier)];
                        let put = Put::node(io, ctx, &self.parent.name, undo, Half::First);
                        self.phase = P::RollingBack { put, error };
                        continue;
                    }
                    let stale = stale_refs(&self.parent, &self.child, self.repair, io.now());
                    self.phase = if stale.is_empty() {
                        P::ReadingBack(NodeRead::start(io, ctx, &self.child_name))
                    } else {
                        P::DroppingStale(Put::node(io, ctx, &self.parent.name, stale, Half::First))
                    };
                }
                P::RollingBack { mut put, error } => {
                    if let Err(w) =
                        ready!(settled(put.poll(io)), self.phase => P::RollingBack { put, error })
                    {
                        warn(io, "roll back child reference", w);
                    }
                    return Err(error);
                }
                P::DroppingStale(mut put) => {
                    if let Err(w) =
                        ready!(settled(put.poll(io)), self.phase => P::DroppingStale(put))
                    {
                        warn(io, "delete stale child references", w);
                    }
                    self.phase = P::ReadingBack(NodeRead::start(io, ctx, &self.child_name));
                }
                P::ReadingBack(mut read) => {
                    let node = ready!(read.poll(io), self.phase => P::ReadingBack(read))
                        .ok_or(MtError::ConcurrentAccess)?;
                    // rowkit fix: the row read back must be the incarnation we created. If
                    // ours was collected and another caller created its own in between, that
                    // one is not ours to return (its link is its creator's to check, and ours
                    // is dangling).
                    if node.id != self.parent.version {
                        return Err(MtError::ConcurrentAccess);
                    }
                    let link = EnsureLinked::new(
                        &self.parent.name,
                        &self.child,
                        &self.parent.version,
                        node.clone(),
                    );
                    self.phase = P::Linking { link, node };
                }
                P::Linking { mut link, node } => {
                    ready!(link.advance(io, ctx), self.phase => P::Linking { link, node });
                    return Ok(Some(node));
                }
                P::Done => return Err(ended()),
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
#[derive(Debug)]
struct EnsureLinked {
    parent_name: String,
    child: String,
    id: Vec<u8>,
    node: Node,
    phase: LinkPhase,
}

#[derive(Debug)]
enum LinkPhase {
    /// A round starts: read the parent again.
    Check,
    ParentRead(NodeRead),
    /// Unlinked: is our incarnation still there (relinking based on `parent`)?
    ChildReread {
        read: NodeRead,
        parent: Node,
    },
    Relinking(Occ),
    /// The parent is gone: our row goes, then its reference, then its count.
    RemovingOrphan(Occ),
    UnreferencingOrphan(Put),
    UncountingOrphan(Increment),
    Done,
}

impl EnsureLinked {
    fn new(parent_name: &str, child: &str, id: &[u8], node: Node) -> EnsureLinked {
        EnsureLinked {
            parent_name: parent_name.into(),
            child: child.into(),
            id: id.to_vec(),
            node,
            phase: LinkPhase::Check,
        }
    }

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use LinkPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Check => {
                    check_deadline(io, ctx)?;
                    self.phase = P::ParentRead(NodeRead::start(io, ctx, &self.parent_name));
                }
                P::ParentRead(mut read) => {
                    let Some(parent) = ready!(read.poll(io), self.phase => P::ParentRead(read))
                    else {
                        let remove = vec![Mutation::DeleteFromRow];
                        self.phase =
                            P::RemovingOrphan(Occ::start(io, ctx, &self.node, remove, true));
                        continue;
                    };
                    if parent
                        .children
                        .iter()
                        .any(|c| c.id == self.id && c.name == self.child)
                    {
                        return Ok(Some(()));
                    }
                    // Unlinked. Relink only the incarnation that still exists: a collector
                    // may have deleted our row (its reference removal is a plain write, so the
                    // parent version does not tell), and relinking a deleted incarnation would
                    // drop the reference of the live one and orphan it.
                    let read = NodeRead::start(io, ctx, &self.node.name);
                    self.phase = P::ChildReread { read, parent };
                }
                P::ChildReread { mut read, parent } => {
                    let now = ready!(read.poll(io), self.phase => P::ChildReread { read, parent });
                    if !matches!(now, Some(n) if n.id == self.id) {
                        // Our incarnation is gone: the operation retries the walk.
                        return Err(MtError::ConcurrentAccess);
                    }
                    let mut mutations = stale_refs(&parent, &self.child, false, io.now());
                    mutations.push(Mutation::set_cell(
                        FAMILY_CHILDREN,
                        &codec::child_qualifier(&self.id, &self.child),
                        Timestamp::SERVER_TIME,
                        MARKER_VALUE,
                    ));
                    self.phase = P::Relinking(Occ::start(io, ctx, &parent, mutations, false));
                }
                P::Relinking(mut occ) => {
                    match ready!(settled(occ.poll(io)), self.phase => P::Relinking(occ)) {
                        Ok(()) => return Ok(Some(())),
                        Err(MtError::ConcurrentAccess) => self.phase = P::Check,
                        Err(e) => return Err(e),
                    }
                }
                P::RemovingOrphan(mut occ) => {
                    if let Err(e) =
                        ready!(settled(occ.poll(io)), self.phase => P::RemovingOrphan(occ))
                    {
                        warn(io, "remove orphaned new child", e);
                        return Err(MtError::ConcurrentAccess);
                    }
                    // A walker may have adopted the row into a parent created again meanwhile
                    // (`Walk`): its reference goes with the row.
                    let qualifier = codec::child_qualifier(&self.id, &self.child);
                    let unref = vec![delete_column(FAMILY_CHILDREN, &qualifier)];
                    let put = Put::node(io, ctx, &self.parent_name, unref, Half::First);
                    self.phase = P::UnreferencingOrphan(put);
                }
                P::UnreferencingOrphan(mut put) => {
                    if let Err(e) =
                        ready!(settled(put.poll(io)), self.phase => P::UnreferencingOrphan(put))
                    {
                        warn(io, "remove the reference of an orphaned new child", e);
                    }
                    let undo =
                        Increment::new(CounterKind::Nodes, &self.node.creator, -1, 0, Half::First);
                    self.phase = P::UncountingOrphan(undo);
                }
                P::UncountingOrphan(mut undo) => {
                    if let Err(e) = ready!(settled(undo.advance(io, ctx)), self.phase => P::UncountingOrphan(undo))
                    {
                        warn(io, "undo node counter", e);
                    }
                    return Err(MtError::ConcurrentAccess);
                }
                P::Done => return Err(ended()),
            }
        }
    }
}

// ---- §11.2 delete -------------------------------------------------------------------------------

/// §11.2: delete the children first, depth first (re-creating a dangling one so that it is
/// deleted like any other), then the row (OCC), the parent's reference, and the counts.
#[derive(Debug)]
pub(super) struct Delete {
    node: Node,
    subtree: bool,
    phase: DeletePhase,
}

#[derive(Debug)]
enum DeletePhase {
    Start,
    /// Child `at` of the node is being read.
    ChildRead {
        at: usize,
        read: NodeRead,
    },
    /// Child `at` was dangling: it is being created again.
    ChildCreated {
        at: usize,
        create: Box<CreateChild>,
    },
    /// Child `at` is being deleted, with its subtree.
    ChildDeleted {
        at: usize,
        delete: Box<Delete>,
    },
    RowDeleted(Occ),
    Unreferenced(Put),
    ServersUncounted(Increment),
    NodeUncounted(Increment),
    Done,
}

impl Delete {
    pub(super) fn new(node: Node, subtree: bool) -> Delete {
        Delete {
            node,
            subtree,
            phase: DeletePhase::Start,
        }
    }

    pub(super) fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use DeletePhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    if !self.subtree && !self.node.children.is_empty() {
                        return Err(MtError::NotEmpty {
                            name: self.node.name.clone(),
                        });
                    }
                    self.next_child(io, ctx, 0);
                }
                P::ChildRead { at, mut read } => {
                    match ready!(read.poll(io), self.phase => P::ChildRead { at, read }) {
                        Some(child) => {
                            let delete = Box::new(Delete::new(child, true));
                            self.phase = P::ChildDeleted { at, delete };
                        }
                        None => match self.node.children.get(at) {
                            Some(c) => {
                                let create =
                                    Box::new(CreateChild::repair(self.node.clone(), &c.name));
                                self.phase = P::ChildCreated { at, create };
                            }
                            None => self.next_child(io, ctx, at),
                        },
                    }
                }
                P::ChildCreated { at, mut create } => {
                    let child = ready!(create.advance(io, ctx), self.phase => P::ChildCreated { at, create });
                    let delete = Box::new(Delete::new(child, true));
                    self.phase = P::ChildDeleted { at, delete };
                }
                P::ChildDeleted { at, mut delete } => {
                    ready!(delete.advance(io, ctx), self.phase => P::ChildDeleted { at, delete });
                    self.next_child(io, ctx, at + 1);
                }
                P::RowDeleted(mut occ) => {
                    ready!(occ.poll(io), self.phase => P::RowDeleted(occ));
                    let (parent, base) = codec::split(&self.node.name);
                    let unref = vec![delete_column(
                        FAMILY_CHILDREN,
                        &codec::child_qualifier(&self.node.id, base),
                    )];
                    self.phase = P::Unreferenced(Put::node(io, ctx, parent, unref, Half::Second));
                }
                P::Unreferenced(mut put) => {
                    ready!(put.poll(io), self.phase => P::Unreferenced(put));
                    let servers =
                        (self.node.servers.len() + self.node.expired_servers.len()) as i64;
                    self.phase = P::ServersUncounted(Increment::new(
                        CounterKind::Servers,
                        &self.node.creator,
                        -servers,
                        0,
                        Half::First,
                    ));
                }
                P::ServersUncounted(mut undo) => {
                    ready!(undo.advance(io, ctx), self.phase => P::ServersUncounted(undo));
                    self.phase = P::NodeUncounted(Increment::new(
                        CounterKind::Nodes,
                        &self.node.creator,
                        -1,
                        0,
                        Half::First,
                    ));
                }
                P::NodeUncounted(mut undo) => {
                    return ready!(settled(undo.advance(io, ctx)), self.phase => P::NodeUncounted(undo))
                        .map(Some);
                }
                P::Done => return Err(ended()),
            }
        }
    }

    /// Reads child `at`, or deletes the row once every child is gone.
    fn next_child(&mut self, io: &mut MtIo, ctx: &MtRun, at: usize) {
        self.phase = match self.node.children.get(at) {
            Some(c) => {
                let name = codec::join(&[&self.node.name, &c.name]);
                DeletePhase::ChildRead {
                    at,
                    read: NodeRead::start(io, ctx, &name),
                }
            }
            None => {
                let remove = vec![Mutation::DeleteFromRow];
                DeletePhase::RowDeleted(Occ::start(io, ctx, &self.node, remove, true))
            }
        };
    }
}

/// `deleteAndGC`: delete, then collect the parent if it became garbage.
#[derive(Debug)]
pub(super) struct DeleteAndGc {
    parent: String,
    phase: DeleteAndGcPhase,
}

#[derive(Debug)]
enum DeleteAndGcPhase {
    Deleting(Delete),
    ParentRead(NodeRead),
    Collecting(Gc),
    Done,
}

impl DeleteAndGc {
    pub(super) fn new(node: Node, subtree: bool) -> DeleteAndGc {
        DeleteAndGc {
            parent: codec::split(&node.name).0.into(),
            phase: DeleteAndGcPhase::Deleting(Delete::new(node, subtree)),
        }
    }

    pub(super) fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use DeleteAndGcPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Deleting(mut delete) => {
                    ready!(delete.advance(io, ctx), self.phase => P::Deleting(delete));
                    self.phase = P::ParentRead(NodeRead::start(io, ctx, &self.parent));
                }
                P::ParentRead(mut read) => {
                    match ready!(settled(read.poll(io)), self.phase => P::ParentRead(read)) {
                        Ok(Some(parent)) => self.phase = P::Collecting(Gc::new(parent)),
                        _ => return Ok(Some(())),
                    }
                }
                P::Collecting(mut gc) => {
                    // GC is opportunistic: its outcome does not change the delete's.
                    ready!(gc.advance(io, ctx), self.phase => P::Collecting(gc));
                    return Ok(Some(()));
                }
                P::Done => return Err(ended()),
            }
        }
    }
}

// ---- §11.3 opportunistic GC ---------------------------------------------------------------------

/// What a [`Gc`] did: whether it deleted or changed something, and how it ended (its errors
/// are for the caller to weigh, not to propagate).
#[derive(Debug)]
pub(super) struct Collected {
    pub(super) changed: bool,
    pub(super) outcome: Result<(), MtError>,
}

/// §11.3: drop expired servers of a node, or delete it (and walk up) when it is an unused,
/// non-sticky, childless node past the grace period. Never fails itself: see [`Collected`].
#[derive(Debug)]
pub(super) struct Gc {
    /// The node being looked at (its parent once it was deleted).
    node: Node,
    changed: bool,
    phase: GcPhase,
}

#[derive(Debug)]
enum GcPhase {
    Check,
    DroppingExpired(Occ),
    UncountingExpired(Increment),
    Deleting(Box<Delete>),
    ParentRead(NodeRead),
    Done,
}

impl Gc {
    pub(super) fn new(node: Node) -> Gc {
        Gc {
            node,
            changed: false,
            phase: GcPhase::Check,
        }
    }

    fn done(&self, outcome: Result<(), MtError>) -> Progress<Collected> {
        Ok(Some(Collected {
            changed: self.changed,
            outcome,
        }))
    }

    pub(super) fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<Collected> {
        use GcPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Check => {
                    if let Some(end) = self.check(io, ctx) {
                        return self.done(end);
                    }
                }
                P::DroppingExpired(mut occ) => {
                    if let Err(e) =
                        ready!(settled(occ.poll(io)), self.phase => P::DroppingExpired(occ))
                    {
                        return self.done(Err(e));
                    }
                    let n = self.node.expired_servers.len() as i64;
                    self.phase = P::UncountingExpired(Increment::new(
                        CounterKind::Servers,
                        &self.node.creator,
                        -n,
                        0,
                        Half::First,
                    ));
                }
                P::UncountingExpired(mut undo) => {
                    let outcome = ready!(settled(undo.advance(io, ctx)), self.phase => P::UncountingExpired(undo));
                    if outcome.is_err() {
                        return self.done(outcome);
                    }
                    return Ok(Some(Collected {
                        changed: true,
                        outcome,
                    }));
                }
                P::Deleting(mut delete) => {
                    if let Err(e) =
                        ready!(settled(delete.advance(io, ctx)), self.phase => P::Deleting(delete))
                    {
                        return self.done(Err(e));
                    }
                    self.changed = true;
                    let parent = codec::dir(&self.node.name);
                    if parent == "." {
                        return self.done(Ok(()));
                    }
                    self.phase = P::ParentRead(NodeRead::start(io, ctx, &parent));
                }
                P::ParentRead(mut read) => {
                    match ready!(settled(read.poll(io)), self.phase => P::ParentRead(read)) {
                        Err(e) => return self.done(Err(e)),
                        Ok(None) => return self.done(Ok(())),
                        Ok(Some(parent)) => {
                            self.node = parent;
                            self.phase = P::Check;
                        }
                    }
                }
                P::Done => return Err(ended()),
            }
        }
    }

    /// Decides what to do with the current node: a new phase, or the end of the collection.
    fn check(&mut self, io: &mut MtIo, ctx: &MtRun) -> Option<Result<(), MtError>> {
        let node = &self.node;
        if node.name.is_empty() {
            return Some(Ok(()));
        }
        if !node.expired_servers.is_empty() {
            let mutations = node
                .expired_servers
                .iter()
                .map(|s| delete_column(FAMILY_SERVERS, s.server.as_bytes()))
                .collect();
            self.phase = GcPhase::DroppingExpired(Occ::start(io, ctx, node, mutations, false));
            return None;
        }
        if node.sticky || !node.children.is_empty() || !node.servers.is_empty() {
            return Some(Ok(()));
        }
        if io.now().0.saturating_sub(node.creation_time_us) < ctx.gc_grace_us {
            return Some(Ok(()));
        }
        self.phase = GcPhase::Deleting(Box::new(Delete::new(node.clone(), false)));
        None
    }
}

// ---- §11.4 mount, §11.5 unmount -------------------------------------------------------------------

/// §11.4 on a node snapshot: count the server, then write it (OCC), undoing the count on
/// failure. Gives the deadline written.
#[derive(Debug)]
pub(super) struct MountNode {
    node: Node,
    server: String,
    /// The deadline to write; `None`: `now + ttl` once counted.
    deadline: Option<i64>,
    ttl_s: u32,
    flags: MountFlags,
    limit: i64,
    phase: MountNodePhase,
}

#[derive(Debug)]
enum MountNodePhase {
    Start,
    /// The count moves by `delta`; `mutations` drop the servers the mount replaces.
    Counting {
        count: Increment,
        delta: i64,
        mutations: Vec<Mutation>,
    },
    Writing {
        occ: Occ,
        delta: i64,
        deadline: i64,
    },
    /// The write failed (`error`): the count is being undone.
    Uncounting {
        undo: Increment,
        error: MtError,
    },
    Done,
}

impl MountNode {
    pub(super) fn new(
        node: Node,
        server: &str,
        deadline: Option<i64>,
        ttl_s: u32,
        flags: MountFlags,
        limit: i64,
    ) -> MountNode {
        MountNode {
            node,
            server: server.into(),
            deadline,
            ttl_s,
            flags,
            limit,
            phase: MountNodePhase::Start,
        }
    }

    pub(super) fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<i64> {
        use MountNodePhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    let mut delta = 1;
                    let mut mutations = Vec::new();
                    for s in &self.node.servers {
                        if s.server == self.server || self.flags.has(MountFlags::REPLACE) {
                            mutations.push(delete_column(FAMILY_SERVERS, s.server.as_bytes()));
                            delta -= 1;
                        }
                    }
                    let count = Increment::new(
                        CounterKind::Servers,
                        &self.node.creator,
                        delta,
                        self.limit,
                        Half::First,
                    );
                    self.phase = P::Counting {
                        count,
                        delta,
                        mutations,
                    };
                }
                P::Counting {
                    mut count,
                    delta,
                    mut mutations,
                } => {
                    ready!(count.advance(io, ctx), self.phase => P::Counting {
                        count,
                        delta,
                        mutations
                    });
                    let deadline = self
                        .deadline
                        .unwrap_or_else(|| codec::mount_deadline(io.now().0, self.ttl_s));
                    mutations.push(Mutation::set_cell(
                        FAMILY_SERVERS,
                        self.server.as_bytes(),
                        Timestamp(deadline),
                        codec::encode_flags(self.flags),
                    ));
                    let occ = Occ::start(io, ctx, &self.node, mutations, false);
                    self.phase = P::Writing {
                        occ,
                        delta,
                        deadline,
                    };
                }
                P::Writing {
                    mut occ,
                    delta,
                    deadline,
                } => {
                    match ready!(settled(occ.poll(io)), self.phase => P::Writing {
                        occ,
                        delta,
                        deadline
                    }) {
                        Ok(()) => return Ok(Some(deadline)),
                        Err(error) => {
                            let undo = Increment::new(
                                CounterKind::Servers,
                                &self.node.creator,
                                -delta,
                                0,
                                Half::First,
                            );
                            self.phase = P::Uncounting { undo, error };
                        }
                    }
                }
                P::Uncounting { mut undo, error } => {
                    if let Err(w) = ready!(settled(undo.advance(io, ctx)), self.phase => P::Uncounting { undo, error })
                    {
                        warn(io, "undo server counter", w);
                    }
                    return Err(error);
                }
                P::Done => return Err(ended()),
            }
        }
    }
}

/// §11.5 on a node snapshot: remove the server(s) (OCC), collect the node, uncount.
#[derive(Debug)]
pub(super) struct UnmountNode {
    node: Node,
    server: String,
    phase: UnmountNodePhase,
}

/// Every phase after the write carries `delta`, the count of servers removed (negative).
#[derive(Debug)]
enum UnmountNodePhase {
    Start,
    Writing { occ: Occ, delta: i64 },
    Reread { read: NodeRead, delta: i64 },
    Collecting { gc: Gc, delta: i64 },
    Uncounting(Increment),
    Done,
}

impl UnmountNode {
    pub(super) fn new(node: Node, server: &str) -> UnmountNode {
        UnmountNode {
            node,
            server: server.into(),
            phase: UnmountNodePhase::Start,
        }
    }

    fn uncount(&self, delta: i64) -> UnmountNodePhase {
        UnmountNodePhase::Uncounting(Increment::new(
            CounterKind::Servers,
            &self.node.creator,
            delta,
            0,
            Half::First,
        ))
    }

    pub(super) fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use UnmountNodePhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    let mut delta = 0;
                    let mut mutations = Vec::new();
                    for s in &self.node.servers {
                        if self.server.is_empty() || s.server == self.server {
                            mutations.push(delete_column(FAMILY_SERVERS, s.server.as_bytes()));
                            delta -= 1;
                        }
                    }
                    if mutations.is_empty() {
                        return Ok(Some(()));
                    }
                    let occ = Occ::start(io, ctx, &self.node, mutations, false);
                    self.phase = P::Writing { occ, delta };
                }
                P::Writing { mut occ, delta } => {
                    ready!(occ.poll(io), self.phase => P::Writing { occ, delta });
                    let read = NodeRead::start(io, ctx, &self.node.name);
                    self.phase = P::Reread { read, delta };
                }
                P::Reread { mut read, delta } => {
                    self.phase = match ready!(settled(read.poll(io)), self.phase => P::Reread { read, delta })
                    {
                        Ok(Some(n)) => P::Collecting {
                            gc: Gc::new(n),
                            delta,
                        },
                        _ => self.uncount(delta),
                    };
                }
                P::Collecting { mut gc, delta } => {
                    ready!(gc.advance(io, ctx), self.phase => P::Collecting { gc, delta });
                    self.phase = self.uncount(delta);
                }
                P::Uncounting(mut undo) => {
                    return ready!(settled(undo.advance(io, ctx)), self.phase => P::Uncounting(undo))
                        .map(Some);
                }
                P::Done => return Err(ended()),
            }
        }
    }
}

// ---- §12.1 accessNode -----------------------------------------------------------------------------

/// Where a [`Walk`] ended: the node found (see [`Walk::new`]) and the unresolved rest.
#[derive(Debug)]
pub(super) struct Reached {
    pub(super) node: Option<Node>,
    pub(super) rest: String,
}

/// §12.1 `accessNode`: walk the path from the root, authorizing each node, creating missing
/// ones when `create`, collecting garbage on the way (and restarting the walk when GC changed
/// something or hit a conflict).
#[derive(Debug)]
pub(super) struct Walk {
    name: String,
    create: bool,
    with_servers: bool,
    /// `""` (the root) then the name's elements.
    elems: Vec<String>,
    /// Index of the element being visited.
    at: usize,
    /// The name walked so far (up to the element at `at`).
    current: String,
    /// The node of the previous element.
    parent: Option<Node>,
    phase: WalkPhase,
}

#[derive(Debug)]
enum WalkPhase {
    Start,
    Reading(NodeRead),
    /// GC looks at `node` before the walk goes on from it.
    Collecting {
        gc: Gc,
        node: Node,
    },
    /// The element is missing: it is being created (boxed: the walk's rare, large phase).
    Creating(Box<CreateChild>),
    /// The parent is being made to reference `adopted` (the reference's `qualifier`).
    Adopting {
        occ: Occ,
        adopted: Node,
        qualifier: Vec<u8>,
    },
    /// Does `adopted` still exist?
    CheckingAdoption {
        read: NodeRead,
        adopted: Node,
        qualifier: Vec<u8>,
    },
    UndoingAdoption(Put),
    BackingOff(BackOff),
    Done,
}

impl Walk {
    /// A walk to `name`. It ends at the node of `name` or, `with_servers`, at the first node
    /// with live servers (`None` if there is none).
    pub(super) fn new(name: &str, create: bool, with_servers: bool) -> Walk {
        let mut elems = vec![String::new()];
        elems.extend(name.split('/').map(String::from));
        Walk {
            name: name.into(),
            create,
            with_servers,
            elems,
            at: 0,
            current: String::new(),
            parent: None,
            phase: WalkPhase::Start,
        }
    }

    pub(super) fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<Reached> {
        use WalkPhase as P;
        loop {
            let reached = match mem::replace(&mut self.phase, P::Done) {
                P::Start => self.restart(io, ctx)?,
                P::Reading(mut read) => {
                    match ready!(read.poll(io), self.phase => P::Reading(read)) {
                        Some(node) => self.found(io, ctx, node),
                        None => self.create_missing(ctx)?,
                    }
                    None
                }
                P::Collecting { mut gc, node } => {
                    let collected =
                        ready!(gc.advance(io, ctx), self.phase => P::Collecting { gc, node });
                    match collected.outcome {
                        Err(MtError::ConcurrentAccess) => self.restart(io, ctx)?,
                        Ok(()) if collected.changed => self.restart(io, ctx)?,
                        Err(e) => return Err(e),
                        Ok(()) => self.visited(io, ctx, node)?,
                    }
                }
                P::Creating(mut create) => {
                    let node = ready!(create.advance(io, ctx), self.phase => P::Creating(create));
                    self.visited(io, ctx, node)?
                }
                P::Adopting {
                    mut occ,
                    adopted,
                    qualifier,
                } => {
                    match ready!(settled(occ.poll(io)), self.phase => P::Adopting {
                        occ,
                        adopted,
                        qualifier
                    }) {
                        Ok(()) => {
                            let read = NodeRead::start(io, ctx, &adopted.name);
                            self.phase = P::CheckingAdoption {
                                read,
                                adopted,
                                qualifier,
                            };
                        }
                        Err(MtError::ConcurrentAccess) => {
                            check_deadline(io, ctx)?;
                            self.phase = P::BackingOff(BackOff::start(io, ctx));
                        }
                        Err(e) => return Err(e),
                    }
                    None
                }
                P::CheckingAdoption {
                    mut read,
                    adopted,
                    qualifier,
                } => {
                    let now = ready!(read.poll(io), self.phase => P::CheckingAdoption {
                        read,
                        adopted,
                        qualifier
                    });
                    if now.is_some_and(|n| n.id == adopted.id) {
                        self.restart(io, ctx)?
                    } else {
                        // Deleted meanwhile (its deleter may have removed our reference
                        // already).
                        let parent = codec::split(&adopted.name).0;
                        let undo = vec![delete_column(FAMILY_CHILDREN, &qualifier)];
                        self.phase =
                            P::UndoingAdoption(Put::node(io, ctx, parent, undo, Half::First));
                        None
                    }
                }
                P::UndoingAdoption(mut put) => {
                    if let Err(e) =
                        ready!(settled(put.poll(io)), self.phase => P::UndoingAdoption(put))
                    {
                        warn(io, "take back the reference of a deleted node", e);
                    }
                    self.restart(io, ctx)?
                }
                P::BackingOff(mut wait) => {
                    ready!(wait.poll(io, ctx), self.phase => P::BackingOff(wait));
                    self.restart(io, ctx)?
                }
                P::Done => return Err(ended()),
            };
            if let Some(reached) = reached {
                return Ok(Some(reached));
            }
        }
    }

    /// Starts the walk again from the root.
    fn restart(&mut self, io: &mut MtIo, ctx: &MtRun) -> Result<Option<Reached>, MtError> {
        self.current = String::new();
        self.parent = None;
        self.at = 0;
        self.visit(io, ctx)
    }

    /// Reads the element at `at`, or ends the walk past the last one.
    fn visit(&mut self, io: &mut MtIo, ctx: &MtRun) -> Result<Option<Reached>, MtError> {
        let Some(elem) = self.elems.get(self.at) else {
            let node = if self.with_servers {
                None
            } else {
                self.parent.take()
            };
            return Ok(Some(Reached {
                node,
                rest: String::new(),
            }));
        };
        check_deadline(io, ctx)?;
        self.current = codec::join(&[&self.current, elem]);
        self.phase = WalkPhase::Reading(NodeRead::start(io, ctx, &self.current));
        Ok(None)
    }

    /// The element's node exists: adopt it, or let GC look at it first.
    fn found(&mut self, io: &mut MtIo, ctx: &MtRun, node: Node) {
        // rowkit fix: rows are found by key, so a walk could build on a node its parent does
        // not reference (a creator's row that landed after a subtree delete took its parent):
        // what is then mounted or created under it is out of reach of the parent's deletes,
        // an orphaned branch. A walk that creates adopts such a node (OCC on the parent),
        // checks that the node still exists (else takes the reference back) and walks again.
        // The root is its own "parent" on the second visit of `name == ""` (§12.1): nothing to
        // adopt there (adopting it looped until the deadline).
        match &self.parent {
            Some(parent)
                if self.create && parent.row_key != node.row_key && !references(parent, &node) =>
            {
                let qualifier = codec::child_qualifier(&node.id, codec::split(&node.name).1);
                let reference = vec![Mutation::set_cell(
                    FAMILY_CHILDREN,
                    &qualifier,
                    Timestamp::SERVER_TIME,
                    MARKER_VALUE,
                )];
                let occ = Occ::start(io, ctx, parent, reference, false);
                self.phase = WalkPhase::Adopting {
                    occ,
                    adopted: node,
                    qualifier,
                };
            }
            _ => {
                self.phase = WalkPhase::Collecting {
                    gc: Gc::new(node.clone()),
                    node,
                }
            }
        }
    }

    /// The element is missing: fail, or create it under the parent.
    fn create_missing(&mut self, ctx: &MtRun) -> Result<(), MtError> {
        let Some(p) = self.parent.take() else {
            return Err(MtError::NoSuchNameRoot);
        };
        if !self.create {
            return Err(MtError::NoSuchName {
                name: self.current.clone(),
            });
        }
        authorize(ctx, &p.permissions, &[tags::CREATE, tags::ADMIN])?;
        let elem = self.elems.get(self.at).map(String::as_str).unwrap_or("");
        let mut perms = match p.permissions.template(elem) {
            Some(t) => t,
            None => {
                let mut c = p.permissions.clone();
                if self.current == self.name {
                    for b in &ctx.caller.blessing_names {
                        c.add(b, tags::ADMIN);
                    }
                }
                c
            }
        };
        perms.normalize();
        let creator = codec::creator_of(&ctx.caller);
        let limit = ctx.limits.max_nodes_per_user;
        let create = CreateChild::new(p, elem, &perms, &creator, limit);
        self.phase = WalkPhase::Creating(Box::new(create));
        Ok(())
    }

    /// The element exists (or was created): authorize and go on.
    fn visited(
        &mut self,
        io: &mut MtIo,
        ctx: &MtRun,
        node: Node,
    ) -> Result<Option<Reached>, MtError> {
        authorize(
            ctx,
            &node.permissions,
            &[tags::RESOLVE, tags::READ, tags::ADMIN],
        )?;
        if self.with_servers && !node.servers.is_empty() {
            let rest: Vec<&str> = self
                .elems
                .get(self.at + 1..)
                .unwrap_or(&[])
                .iter()
                .map(String::as_str)
                .collect();
            return Ok(Some(Reached {
                rest: codec::join(&rest),
                node: Some(node),
            }));
        }
        self.parent = Some(node);
        self.at += 1;
        self.visit(io, ctx)
    }
}
