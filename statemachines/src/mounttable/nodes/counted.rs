//! The shape §10.2 `createRow` and §11.4 `mount` share: count (§10.4, checked against a
//! limit), then write the node, and undo the count when the write fails.

use core::mem;

use super::increment::Increment;
use crate::mounttable::calls::{MtIo, Progress, ended, warn};
use crate::mounttable::{MtError, MtRun};
use crate::operation::settled;
use crate::ready;

/// The node write of a [`CountedWrite`], sent once its count is in.
pub(in crate::mounttable) trait NodeWrite: core::fmt::Debug {
    /// What the write gives once it succeeded.
    type Output;
    /// The write in flight.
    type Call: core::fmt::Debug;

    /// Sends the write (the count is in).
    fn send(&mut self, io: &mut MtIo, ctx: &MtRun) -> Self::Call;

    /// The write's outcome once it settled; an error undoes the count unless
    /// [`NodeWrite::keeps_count`].
    fn poll(&mut self, call: &mut Self::Call, io: &mut MtIo) -> Progress<Self::Output>;

    /// Whether the count stays although the write failed with `error` (the write may have
    /// been applied).
    fn keeps_count(&self, _error: &MtError) -> bool {
        false
    }
}

/// Count, then write `W`; a failed write undoes the count (a failed undo is only warned
/// about) and ends with the write's error.
#[derive(Debug)]
pub(in crate::mounttable) struct CountedWrite<W: NodeWrite> {
    write: W,
    phase: CountedPhase<W>,
}

#[derive(Debug)]
pub(in crate::mounttable) enum CountedPhase<W: NodeWrite> {
    Counting(Increment),
    /// The write is in flight; `count` is what a failure undoes.
    Writing {
        call: W::Call,
        count: Increment,
    },
    /// The write failed (`error`): the count is being undone.
    Uncounting {
        undo: Increment,
        error: MtError,
    },
    Done,
}

impl<W: NodeWrite> CountedWrite<W> {
    /// Counts with `count`, then writes with `write`.
    pub(in crate::mounttable) fn start(count: Increment, write: W) -> CountedWrite<W> {
        CountedWrite {
            write,
            phase: CountedPhase::Counting(count),
        }
    }

    pub(in crate::mounttable) fn advance(
        &mut self,
        io: &mut MtIo,
        ctx: &mut MtRun,
    ) -> Progress<W::Output> {
        use CountedPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Counting(mut count) => {
                    ready!(count.advance(io, ctx), self.phase => P::Counting(count));
                    let call = self.write.send(io, ctx);
                    self.phase = P::Writing { call, count };
                }
                P::Writing { mut call, count } => {
                    let outcome = self.write.poll(&mut call, io);
                    match ready!(settled(outcome), self.phase => P::Writing { call, count }) {
                        Ok(output) => return Ok(Some(output)),
                        Err(error) if self.write.keeps_count(&error) => return Err(error),
                        Err(error) => {
                            let undo = count.undo();
                            self.phase = P::Uncounting { undo, error };
                        }
                    }
                }
                P::Uncounting { mut undo, error } => {
                    let undone = undo.advance(io, ctx);
                    if let Err(w) =
                        ready!(settled(undone), self.phase => P::Uncounting { undo, error })
                    {
                        warn(io, undo.undo_step(), w);
                    }
                    return Err(error);
                }
                P::Done => return Err(ended()),
            }
        }
    }
}
