//! Delete (§13): its round in the OCC loop.

use alloc::string::String;
use core::mem;

use rowkit_codec::mounttable::{self as codec, tags};

use super::retry::{Attempt, Next};
use crate::mounttable::calls::{MtIo, Node, Progress, ended};
use crate::mounttable::nodes::{DeleteAndGc, Reached, Walk, authorize};
use crate::mounttable::{MountTableSchema, MtError, MtRun};
use crate::operation::Flow;
use crate::operation::settled;
use crate::ready;

/// Delete's arguments.
#[derive(Debug)]
pub(in crate::mounttable) struct DeleteArgs {
    pub(in crate::mounttable) suffix: String,
    pub(in crate::mounttable) subtree: bool,
}

/// What a Delete round does once its walk found the node.
#[derive(Debug)]
pub(in crate::mounttable) enum DeleteStep {
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
    /// The flow of [`Delete`](crate::mounttable::Delete): walk, authorize, delete and collect; retried on
    /// conflicts.
    DeleteFlow(DeleteArgs) -> ()
}
