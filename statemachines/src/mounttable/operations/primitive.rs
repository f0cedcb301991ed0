//! The internal node primitives (§10–§11) as one operation.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::mem;

use crate::mounttable::calls::{Half, MtIo, Node, NodeRead, Occ, Progress, ended};
use crate::mounttable::nodes::{CreateChild, CreateRow, Delete, MountNode, set_perms};
use crate::mounttable::{MountTableSchema, MtRun, Primitive, PrimitiveOutput};
use crate::operation::Flow;
use crate::ready;

/// The flow of [`PrimitiveOp`](crate::mounttable::PrimitiveOp): one internal primitive (§10–§11).
#[derive(Debug)]
pub struct PrimitiveFlow(PrimitivePhase);

#[derive(Debug)]
pub(in crate::mounttable) enum PrimitivePhase {
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
    pub(in crate::mounttable) fn new(primitive: Primitive) -> PrimitiveFlow {
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
