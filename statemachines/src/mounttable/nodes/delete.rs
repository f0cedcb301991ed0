//! §11.2 `delete` (a node, or its subtree) and §11.3 opportunistic GC of expired servers.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec;
use core::mem;

use rowkit_codec::model::Mutation;
use rowkit_codec::mounttable::{self as codec, CounterKind, FAMILY_CHILDREN, FAMILY_SERVERS};

use super::create::CreateChild;
use super::increment::Increment;
use crate::children::ChildId;
use crate::mounttable::calls::{
    Half, MtIo, Node, NodeRead, Occ, Progress, delete_column, ended, put_node,
};
use crate::mounttable::{MtError, MtRun};
use crate::operation::settled;
use crate::ready;

/// §11.2: delete the children first, depth first (re-creating a dangling one so that it is
/// deleted like any other), then the row (OCC), the parent's reference, and the counts.
#[derive(Debug)]
pub(in crate::mounttable) struct Delete {
    node: Node,
    subtree: bool,
    phase: DeletePhase,
}

#[derive(Debug)]
pub(in crate::mounttable) enum DeletePhase {
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
    Unreferenced(ChildId),
    ServersUncounted(Increment),
    NodeUncounted(Increment),
    Done,
}

impl Delete {
    pub(in crate::mounttable) fn new(node: Node, subtree: bool) -> Delete {
        Delete {
            node,
            subtree,
            phase: DeletePhase::Start,
        }
    }

    pub(in crate::mounttable) fn advance(
        &mut self,
        io: &mut MtIo,
        ctx: &mut MtRun,
    ) -> Progress<()> {
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
                    self.phase = P::Unreferenced(put_node(io, ctx, parent, unref, Half::Second));
                }
                P::Unreferenced(put) => {
                    ready!(io.written(put), self.phase => P::Unreferenced(put));
                    let servers =
                        (self.node.servers.len() + self.node.expired_servers.len()) as i64;
                    self.phase = P::ServersUncounted(Increment::unlimited(
                        CounterKind::Servers,
                        &self.node.creator,
                        -servers,
                    ));
                }
                P::ServersUncounted(mut undo) => {
                    ready!(undo.advance(io, ctx), self.phase => P::ServersUncounted(undo));
                    self.phase = P::NodeUncounted(Increment::unlimited(
                        CounterKind::Nodes,
                        &self.node.creator,
                        -1,
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
pub(in crate::mounttable) struct DeleteAndGc {
    parent: String,
    phase: DeleteAndGcPhase,
}

#[derive(Debug)]
pub(in crate::mounttable) enum DeleteAndGcPhase {
    Deleting(Delete),
    ParentRead(NodeRead),
    Collecting(Gc),
    Done,
}

impl DeleteAndGc {
    pub(in crate::mounttable) fn new(node: Node, subtree: bool) -> DeleteAndGc {
        DeleteAndGc {
            parent: codec::split(&node.name).0.into(),
            phase: DeleteAndGcPhase::Deleting(Delete::new(node, subtree)),
        }
    }

    pub(in crate::mounttable) fn advance(
        &mut self,
        io: &mut MtIo,
        ctx: &mut MtRun,
    ) -> Progress<()> {
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

/// What a [`Gc`] did: whether it deleted or changed something, and how it ended (its errors
/// are for the caller to weigh, not to propagate).
#[derive(Debug)]
pub(in crate::mounttable) struct Collected {
    pub(in crate::mounttable) changed: bool,
    pub(in crate::mounttable) outcome: Result<(), MtError>,
}

/// §11.3: drop expired servers of a node, or delete it (and walk up) when it is an unused,
/// non-sticky, childless node past the grace period. Never fails itself: see [`Collected`].
#[derive(Debug)]
pub(in crate::mounttable) struct Gc {
    /// The node being looked at (its parent once it was deleted).
    node: Node,
    changed: bool,
    phase: GcPhase,
}

#[derive(Debug)]
pub(in crate::mounttable) enum GcPhase {
    Check,
    DroppingExpired(Occ),
    UncountingExpired(Increment),
    Deleting(Box<Delete>),
    ParentRead(NodeRead),
    Done,
}

impl Gc {
    pub(in crate::mounttable) fn new(node: Node) -> Gc {
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

    pub(in crate::mounttable) fn advance(
        &mut self,
        io: &mut MtIo,
        ctx: &mut MtRun,
    ) -> Progress<Collected> {
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
                    self.phase = P::UncountingExpired(Increment::unlimited(
                        CounterKind::Servers,
                        &self.node.creator,
                        -n,
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
