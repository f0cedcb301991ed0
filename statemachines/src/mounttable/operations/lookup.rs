//! ResolveStep and GetPermissions (§14): a walk, then a read of the node reached.

use alloc::string::String;
use core::mem;

use crate::mounttable::calls::{MtIo, Node, Progress};
use crate::mounttable::nodes::{Reached, Walk, entry_of};
use crate::mounttable::{MountEntry, MountTableSchema, MtError, MtRun, PermsAndVersion};
use crate::operation::Flow;
use crate::ready;

/// The flow of the read-only lookups, [`ResolveStep`](crate::mounttable::ResolveStep) and
/// [`GetPermissions`](crate::mounttable::GetPermissions): a walk to a node that must exist (else
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

/// The flow of [`ResolveStep`](crate::mounttable::ResolveStep): walk to the first node with servers.
pub type ResolveStepFlow = NodeLookupFlow<MountEntry>;
/// The flow of [`GetPermissions`](crate::mounttable::GetPermissions): walk to an existing node.
pub type GetPermissionsFlow = NodeLookupFlow<PermsAndVersion>;

impl ResolveStepFlow {
    pub(in crate::mounttable) fn resolve(suffix: String) -> ResolveStepFlow {
        NodeLookupFlow::new(suffix, true, |node, rest| entry_of(rest, node))
    }
}

impl GetPermissionsFlow {
    pub(in crate::mounttable) fn permissions(suffix: String) -> GetPermissionsFlow {
        NodeLookupFlow::new(suffix, false, |node, _| PermsAndVersion {
            version: node.version_str(),
            perms: node.permissions.permissions().clone(),
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
