//! Mount and Unmount (§13): their rounds in the OCC loop.

use alloc::string::String;

use rowkit_codec::mounttable::{self as codec, MountFlags, tags};

use super::retry::{Attempt, Next};
use crate::mounttable::calls::{MtIo, Progress};
use crate::mounttable::nodes::{MountNode, Reached, UnmountNode, Walk, authorize};
use crate::mounttable::{MountTableSchema, Mounted, MtError, MtRun};
use crate::operation::Flow;
use crate::ready;

/// Mount's arguments.
#[derive(Debug)]
pub(in crate::mounttable) struct MountArgs {
    pub(in crate::mounttable) suffix: String,
    pub(in crate::mounttable) server: String,
    pub(in crate::mounttable) ttl_s: u32,
    pub(in crate::mounttable) flags: MountFlags,
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
    /// The flow of [`Mount`](crate::mounttable::Mount): walk (creating), authorize, mount; retried on
    /// conflicts. Gives what it wrote.
    MountFlow(MountArgs) -> Mounted
}

/// Unmount's arguments.
#[derive(Debug)]
pub(in crate::mounttable) struct UnmountArgs {
    pub(in crate::mounttable) suffix: String,
    pub(in crate::mounttable) server: String,
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
    /// The flow of [`Unmount`](crate::mounttable::Unmount): walk, authorize, unmount; retried on conflicts.
    UnmountFlow(UnmountArgs) -> ()
}
