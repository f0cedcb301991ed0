//! §12.1 `accessNode`: the path walk that resolves (and with `create`, creates) nodes.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::mem;

use rowkit_codec::model::{Mutation, Timestamp};
use rowkit_codec::mounttable::{self as codec, FAMILY_CHILDREN, MARKER_VALUE, tags};

use super::authorize;
use super::create::CreateChild;
use super::delete::Gc;
use super::references;
use crate::children::ChildId;
use crate::mounttable::calls::{
    BackOff, Half, MtIo, Node, NodeRead, Occ, Progress, check_deadline, delete_column, ended,
    put_node, warn,
};
use crate::mounttable::{MtError, MtRun};
use crate::operation::settled;
use crate::ready;

/// Where a [`Walk`] ended: the node found (see [`Walk::new`]) and the unresolved rest.
#[derive(Debug)]
pub(in crate::mounttable) struct Reached {
    pub(in crate::mounttable) node: Option<Node>,
    pub(in crate::mounttable) rest: String,
}

/// §12.1 `accessNode`: walk the path from the root, authorizing each node, creating missing
/// ones when `create`, collecting garbage on the way (and restarting the walk when GC changed
/// something or hit a conflict).
#[derive(Debug)]
pub(in crate::mounttable) struct Walk {
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
pub(in crate::mounttable) enum WalkPhase {
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
    UndoingAdoption(ChildId),
    BackingOff(BackOff),
    Done,
}

impl Walk {
    /// A walk to `name`. It ends at the node of `name` or, `with_servers`, at the first node
    /// with live servers (`None` if there is none).
    pub(in crate::mounttable) fn new(name: &str, create: bool, with_servers: bool) -> Walk {
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

    pub(in crate::mounttable) fn advance(
        &mut self,
        io: &mut MtIo,
        ctx: &mut MtRun,
    ) -> Progress<Reached> {
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
                            P::UndoingAdoption(put_node(io, ctx, parent, undo, Half::First));
                        None
                    }
                }
                P::UndoingAdoption(put) => {
                    if let Err(e) =
                        ready!(settled(io.written(put)), self.phase => P::UndoingAdoption(put))
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
                let mut c = p.permissions.permissions().clone();
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
