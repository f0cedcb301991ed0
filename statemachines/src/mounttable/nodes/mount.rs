//! §11.4 `mount` and §11.5 `unmount` on a node snapshot.

use alloc::string::String;
use alloc::vec::Vec;
use core::mem;

use rowkit_codec::model::{Mutation, Timestamp};
use rowkit_codec::mounttable::{self as codec, CounterKind, FAMILY_SERVERS, MountFlags};

use super::delete::Gc;
use super::increment::Increment;
use crate::mounttable::calls::{
    Half, MtIo, Node, NodeRead, Occ, Progress, delete_column, ended, warn,
};
use crate::mounttable::{MtError, MtRun};
use crate::operation::settled;
use crate::ready;

/// §11.4 on a node snapshot: count the server, then write it (OCC), undoing the count on
/// failure. Gives the deadline written.
#[derive(Debug)]
pub(in crate::mounttable) struct MountNode {
    node: Node,
    server: String,
    /// The deadline to write; `None`: `now + ttl` once counted.
    deadline: Option<i64>,
    ttl_s: u32,
    flags: MountFlags,
    limit: i64,
    phase: MountNodePhase,
}

#[derive(Debug)]
pub(in crate::mounttable) enum MountNodePhase {
    Start,
    /// The count moves by `delta`; `mutations` drop the servers the mount replaces.
    Counting {
        count: Increment,
        delta: i64,
        mutations: Vec<Mutation>,
    },
    Writing {
        occ: Occ,
        delta: i64,
        deadline: i64,
    },
    /// The write failed (`error`): the count is being undone.
    Uncounting {
        undo: Increment,
        error: MtError,
    },
    Done,
}

impl MountNode {
    pub(in crate::mounttable) fn new(
        node: Node,
        server: &str,
        deadline: Option<i64>,
        ttl_s: u32,
        flags: MountFlags,
        limit: i64,
    ) -> MountNode {
        MountNode {
            node,
            server: server.into(),
            deadline,
            ttl_s,
            flags,
            limit,
            phase: MountNodePhase::Start,
        }
    }

    pub(in crate::mounttable) fn advance(
        &mut self,
        io: &mut MtIo,
        ctx: &mut MtRun,
    ) -> Progress<i64> {
        use MountNodePhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    let mut delta = 1;
                    let mut mutations = Vec::new();
                    for s in &self.node.servers {
                        if s.server == self.server || self.flags.has(MountFlags::REPLACE) {
                            mutations.push(delete_column(FAMILY_SERVERS, s.server.as_bytes()));
                            delta -= 1;
                        }
                    }
                    let count = Increment::new(
                        CounterKind::Servers,
                        &self.node.creator,
                        delta,
                        self.limit,
                        Half::First,
                    );
                    self.phase = P::Counting {
                        count,
                        delta,
                        mutations,
                    };
                }
                P::Counting {
                    mut count,
                    delta,
                    mut mutations,
                } => {
                    ready!(count.advance(io, ctx), self.phase => P::Counting {
                        count,
                        delta,
                        mutations
                    });
                    let deadline = self
                        .deadline
                        .unwrap_or_else(|| codec::mount_deadline(io.now().0, self.ttl_s));
                    mutations.push(Mutation::set_cell(
                        FAMILY_SERVERS,
                        self.server.as_bytes(),
                        Timestamp(deadline),
                        codec::encode_flags(self.flags),
                    ));
                    let occ = Occ::start(io, ctx, &self.node, mutations, false);
                    self.phase = P::Writing {
                        occ,
                        delta,
                        deadline,
                    };
                }
                P::Writing {
                    mut occ,
                    delta,
                    deadline,
                } => {
                    match ready!(settled(occ.poll(io)), self.phase => P::Writing {
                        occ,
                        delta,
                        deadline
                    }) {
                        Ok(()) => return Ok(Some(deadline)),
                        Err(error) => {
                            let undo = Increment::new(
                                CounterKind::Servers,
                                &self.node.creator,
                                -delta,
                                0,
                                Half::First,
                            );
                            self.phase = P::Uncounting { undo, error };
                        }
                    }
                }
                P::Uncounting { mut undo, error } => {
                    if let Err(w) = ready!(settled(undo.advance(io, ctx)), self.phase => P::Uncounting { undo, error })
                    {
                        warn(io, "undo server counter", w);
                    }
                    return Err(error);
                }
                P::Done => return Err(ended()),
            }
        }
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
        UnmountNodePhase::Uncounting(Increment::new(
            CounterKind::Servers,
            &self.node.creator,
            delta,
            0,
            Half::First,
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
