//! SetPermissions (§13): its round in the OCC loop.

use alloc::string::String;
use core::mem;

use rowkit_codec::mounttable::{self as codec, tags};

use super::retry::{Attempt, Next};
use crate::mounttable::calls::{MtIo, Occ, Progress};
use crate::mounttable::nodes::{Reached, Walk, authorize, set_perms};
use crate::mounttable::{MountTableSchema, MtError, MtRun, PermsAndVersion};
use crate::operation::Flow;

/// SetPermissions' arguments.
#[derive(Debug)]
pub(in crate::mounttable) struct SetPermsArgs {
    pub(in crate::mounttable) suffix: String,
    pub(in crate::mounttable) perms: codec::Permissions,
    pub(in crate::mounttable) version: String,
}

/// The write of a SetPermissions round, which moves the version to `next_version`.
#[derive(Debug)]
pub(in crate::mounttable) struct PermsWrite {
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
    /// The flow of [`SetPermissions`](crate::mounttable::SetPermissions): walk (creating), authorize, check
    /// the version, write; retried on conflicts.
    SetPermissionsFlow(SetPermsArgs) -> PermsAndVersion
}
