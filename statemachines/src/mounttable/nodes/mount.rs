//! §11.4 `mount` and §11.5 `unmount` on a node snapshot.

use alloc::string::String;
use alloc::vec::Vec;
use core::mem;

use rowkit_codec::model::{Mutation, Timestamp};
use rowkit_codec::mounttable::{self as codec, CounterKind, FAMILY_SERVERS, MountFlags};

use super::counted::{CountedWrite, NodeWrite};
use super::delete::Gc;
use super::increment::Increment;
use crate::mounttable::MtRun;
use crate::mounttable::calls::{Half, MtIo, Node, NodeRead, Occ, Progress, delete_column, ended};
use crate::operation::settled;
use crate::ready;

/// §11.4 on a node snapshot: count the server, then write it (OCC), undoing the count on
/// failure. Gives the deadline written.
pub(in crate::mounttable) type MountNode = CountedWrite<ServerWrite>;

impl MountNode {
    /// Mounts `server` on `node`; `deadline` is the one to write (`None`: `now + ttl` once
    /// counted).
    pub(in crate::mounttable) fn new(
        node: Node,
        server: &str,
        deadline: Option<i64>,
        ttl_s: u32,
        flags: MountFlags,
        limit: i64,
    ) -> MountNode {
        // The count moves by `delta`; `replaced` drops the servers the mount replaces.
        let mut delta = 1;
        let mut replaced = Vec::new();
        for s in &node.servers {
            if s.server == server || flags.has(MountFlags::REPLACE) {
                replaced.push(delete_column(FAMILY_SERVERS, s.server.as_bytes()));
                delta -= 1;
            }
        }
        let count = Increment::new(
            CounterKind::Servers,
            &node.creator,
            delta,
            limit,
            Half::First,
        );
        let write = ServerWrite {
            node,
            server: server.into(),
            deadline,
            ttl_s,
            flags,
            replaced,
        };
        CountedWrite::start(count, write)
    }
}

/// The write of §11.4: the server on the node (OCC), replacing the servers in `replaced`.
#[derive(Debug)]
pub(in crate::mounttable) struct ServerWrite {
    node: Node,
    server: String,
    deadline: Option<i64>,
    ttl_s: u32,
    flags: MountFlags,
    replaced: Vec<Mutation>,
}

impl NodeWrite for ServerWrite {
    /// The deadline written.
    type Output = i64;
    /// The write and the deadline it writes.
    type Call = (Occ, i64);

    fn send(&mut self, io: &mut MtIo, ctx: &MtRun) -> (Occ, i64) {
        let deadline = self
            .deadline
            .unwrap_or_else(|| codec::mount_deadline(io.now().0, self.ttl_s));
        let mut mutations = mem::take(&mut self.replaced);
        mutations.push(Mutation::set_cell(
            FAMILY_SERVERS,
            self.server.as_bytes(),
            Timestamp(deadline),
            codec::encode_flags(self.flags),
        ));
        (Occ::start(io, ctx, &self.node, mutations, false), deadline)
    }

    fn poll(&mut self, (occ, deadline): &mut (Occ, i64), io: &mut MtIo) -> Progress<i64> {
        ready!(occ.poll(io));
        Ok(Some(*deadline))
    }
}

/// §11.5 on a node snapshot: remove the server(s) (OCC), collect the node, uncount.
#[derive(Debug)]
pub(in crate::mounttable) struct UnmountNode {
    node: Node,
    server: String,
    phase: UnmountNodePhase,
}

/// Every phase after the write carries `delta`, the count of servers removed (negative).
#[derive(Debug)]
pub(in crate::mounttable) enum UnmountNodePhase {
    Start,
    Writing { occ: Occ, delta: i64 },
    Reread { read: NodeRead, delta: i64 },
    Collecting { gc: Gc, delta: i64 },
    Uncounting(Increment),
    Done,
}

impl UnmountNode {
    pub(in crate::mounttable) fn new(node: Node, server: &str) -> UnmountNode {
        UnmountNode {
            node,
            server: server.into(),
            phase: UnmountNodePhase::Start,
        }
    }

    fn uncount(&self, delta: i64) -> UnmountNodePhase {
        UnmountNodePhase::Uncounting(Increment::unlimited(
            CounterKind::Servers,
            &self.node.creator,
            delta,
        ))
    }

    pub(in crate::mounttable) fn advance(
        &mut self,
        io: &mut MtIo,
        ctx: &mut MtRun,
    ) -> Progress<()> {
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
