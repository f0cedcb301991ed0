//! The node protocols of `spec/mounttable.md` §10–§12 as nested steps: counters, row and
//! child creation, subtree deletion, opportunistic GC, mount and unmount on a snapshot, and
//! the path walk. The service operations built on them live in `operations`.
//!
//! Each step is a struct whose `phase` names what it waits for and holds what that phase
//! needs; `advance` consumes the phase (moving to the next one) as far as its call or nested
//! step allows, and gives `Ok(None)` while it waits. Moves that need no request loop inside
//! `advance`.

mod counted;
mod create;
mod delete;
mod increment;
mod mount;
mod walk;

pub(super) use create::{CreateChild, CreateRow};
pub(super) use delete::{Delete, DeleteAndGc};
pub(super) use increment::Increment;
pub(super) use mount::{MountNode, UnmountNode};
pub(super) use walk::{Reached, Walk};

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{Code, Mutation, Timestamp};
use rowkit_codec::mounttable::{
    self as codec, FAMILY_CHILDREN, FAMILY_META, MARKER_VALUE, NodeRow, Permissions, tags,
};

use crate::mounttable::calls::{MtIo, Occ, delete_column};
use crate::mounttable::{MountEntry, MountedServer, MtCtx, MtError, MtRun};

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
