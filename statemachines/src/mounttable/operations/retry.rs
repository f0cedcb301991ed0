//! The OCC retry loop of §13 `op`: rounds of a walk and a step, retried with seeded back-off.

use core::mem;

use crate::mounttable::calls::{BackOff, MtIo, Progress, check_deadline, ended};
use crate::mounttable::nodes::{Reached, Walk};
use crate::mounttable::{MtError, MtRun};
use crate::operation::settled;
use crate::ready;

/// What one round of an operation that [`Retry`] runs does, implemented by the operation's
/// arguments (the same in every round): a walk to the operation's node, then the step the node
/// allows.
pub(in crate::mounttable) trait Attempt {
    /// What runs once the walk has reached the node (a node protocol or a write).
    type Step: core::fmt::Debug;
    /// What a successful round gives.
    type Output;

    /// The walk that starts a round.
    fn walk(&self) -> Walk;

    /// What the walk's outcome leads to: the step, or the round's output at once.
    fn reached(
        &self,
        io: &mut MtIo,
        ctx: &mut MtRun,
        reached: Result<Reached, MtError>,
    ) -> Result<Next<Self::Step, Self::Output>, MtError>;

    /// Runs the step as far as it can.
    fn step(&self, step: &mut Self::Step, io: &mut MtIo, ctx: &mut MtRun)
    -> Progress<Self::Output>;
}

/// Where a round goes once its walk has ended.
pub(in crate::mounttable) enum Next<S, O> {
    /// On to the step.
    Step(S),
    /// The round is over: nothing (more) to do.
    Done(O),
}

/// §13 `op`, the loop of Mount, Unmount, Delete and SetPermissions: run a fresh round (walk,
/// then step); on `ConcurrentAccess` wait `(next_u64 % 50)` ms (bounded by the operation
/// deadline, reaching which ends the operation `Aborted`) and try again.
#[derive(Debug)]
pub(in crate::mounttable) struct Retry<A: Attempt> {
    args: A,
    phase: RetryPhase<A::Step>,
}

#[derive(Debug)]
pub(in crate::mounttable) enum RetryPhase<S> {
    /// A round is to start (if the deadline allows).
    Start,
    Walking(Walk),
    Stepping(S),
    BackingOff(BackOff),
    Done,
}

impl<A: Attempt> Retry<A> {
    pub(super) fn new(args: A) -> Retry<A> {
        Retry {
            args,
            phase: RetryPhase::Start,
        }
    }

    pub(super) fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<A::Output> {
        use RetryPhase as P;
        loop {
            let failed = match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    check_deadline(io, ctx)?;
                    self.phase = P::Walking(self.args.walk());
                    continue;
                }
                P::Walking(mut walk) => {
                    let reached =
                        ready!(settled(walk.advance(io, ctx)), self.phase => P::Walking(walk));
                    match self.args.reached(io, ctx, reached) {
                        Ok(Next::Step(step)) => {
                            self.phase = P::Stepping(step);
                            continue;
                        }
                        Ok(Next::Done(output)) => return Ok(Some(output)),
                        Err(e) => e,
                    }
                }
                P::Stepping(mut step) => {
                    match ready!(settled(self.args.step(&mut step, io, ctx)), self.phase => P::Stepping(step))
                    {
                        Ok(output) => return Ok(Some(output)),
                        Err(e) => e,
                    }
                }
                P::BackingOff(mut wait) => {
                    ready!(wait.poll(io, ctx), self.phase => P::BackingOff(wait));
                    self.phase = P::Start;
                    continue;
                }
                P::Done => return Err(ended()),
            };
            if !matches!(failed, MtError::ConcurrentAccess) {
                return Err(failed);
            }
            self.phase = P::BackingOff(BackOff::start(io, ctx));
        }
    }
}

/// Declares the public flow of a §13 operation: `$flow` runs the rounds of `$args` (its
/// [`Attempt`]) in a [`Retry`] loop, is built from those arguments and gives `$out`.
macro_rules! retry_flow {
    ($(#[$doc:meta])* $flow:ident($args:ident) -> $out:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $flow(super::retry::Retry<$args>);

        impl $flow {
            pub(in crate::mounttable) fn new(args: $args) -> $flow {
                $flow(super::retry::Retry::new(args))
            }
        }

        impl Flow for $flow {
            type Schema = MountTableSchema;
            type Output = $out;

            fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<$out> {
                self.0.advance(io, ctx)
            }
        }
    };
}
