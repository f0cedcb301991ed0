//! The service operations of `spec/mounttable.md` §13–§16 as flows over the node protocols of
//! `nodes`: the OCC retry loop with seeded back-off, Mount/Unmount/Delete/SetPermissions
//! attempts, ResolveStep, Glob, GetPermissions, the initial nodes, fsck, the counters and the
//! internal primitives.

#[macro_use]
mod retry;
mod counters;
mod delete;
mod fsck;
mod glob;
mod initial;
mod lookup;
mod mount;
mod primitive;
mod set_permissions;

pub use counters::ReadCountersFlow;
pub(super) use delete::DeleteArgs;
pub use delete::DeleteFlow;
pub use fsck::FsckFlow;
pub use glob::GlobFlow;
pub use initial::CreateInitialNodesFlow;
pub use lookup::{GetPermissionsFlow, NodeLookupFlow, ResolveStepFlow};
pub(super) use mount::{MountArgs, UnmountArgs};
pub use mount::{MountFlow, UnmountFlow};
pub use primitive::PrimitiveFlow;
pub use set_permissions::SetPermissionsFlow;
pub(super) use set_permissions::SetPermsArgs;
