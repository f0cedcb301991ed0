//! Glob (§14): a breadth-first walk of the pattern.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::mem;

use rowkit_codec::mounttable::{self as codec};

use crate::mounttable::calls::{MtIo, Progress, check_deadline, ended};
use crate::mounttable::glob::Glob as Pattern;
use crate::mounttable::nodes::{Reached, Walk, entry_of};
use crate::mounttable::{MountEntry, MountTableSchema, MtError, MtEvent, MtRun};
use crate::operation::Flow;
use crate::operation::settled;
use crate::ready;

/// The flow of [`Glob`](crate::mounttable::Glob): if the walk reaches a mounted node, that is the one
/// answer; otherwise a breadth-first walk of the matching children, skipping nodes that
/// vanish or deny access. Entries go out as [`MtEvent::GlobEntry`].
#[derive(Debug)]
pub struct GlobFlow {
    suffix: String,
    /// Names (relative to `suffix`) still to visit, with the pattern left for each.
    queue: VecDeque<(String, Pattern)>,
    phase: GlobPhase,
}

#[derive(Debug)]
pub(in crate::mounttable) enum GlobPhase {
    /// The walk to `suffix`, stopping at a mounted node.
    Root(Walk),
    /// The walk to one queued name.
    Visiting {
        walk: Walk,
        name: String,
        pattern: Pattern,
    },
    Done,
}

impl GlobFlow {
    pub(in crate::mounttable) fn new(suffix: String, pattern: Pattern) -> GlobFlow {
        let mut queue = VecDeque::new();
        queue.push_back((String::new(), pattern));
        GlobFlow {
            phase: GlobPhase::Root(Walk::new(&suffix, false, true)),
            suffix,
            queue,
        }
    }

    /// Visits the next queued name; `true` once none is left.
    fn next(&mut self, io: &MtIo, ctx: &MtRun) -> Result<bool, MtError> {
        let Some((name, pattern)) = self.queue.pop_front() else {
            return Ok(true);
        };
        check_deadline(io, ctx)?;
        let walk = Walk::new(&codec::join(&[&self.suffix, &name]), false, false);
        self.phase = GlobPhase::Visiting {
            walk,
            name,
            pattern,
        };
        Ok(false)
    }
}

impl Flow for GlobFlow {
    type Schema = MountTableSchema;
    type Output = ();

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use GlobPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Root(mut walk) => {
                    let reached = ready!(walk.advance(io, ctx), self.phase => P::Root(walk));
                    if let Some(n) = reached.node {
                        let mut entry = entry_of(String::new(), &n);
                        for s in &mut entry.servers {
                            s.server = codec::join(&[&s.server, &reached.rest]);
                        }
                        io.emit(MtEvent::GlobEntry(entry));
                        return Ok(Some(()));
                    }
                }
                P::Visiting {
                    mut walk,
                    name,
                    pattern,
                } => {
                    let reached = ready!(settled(walk.advance(io, ctx)), self.phase => P::Visiting {
                        walk,
                        name,
                        pattern
                    });
                    let Ok(Reached {
                        node: Some(node), ..
                    }) = reached
                    else {
                        if self.next(io, ctx)? {
                            return Ok(Some(()));
                        }
                        continue;
                    };
                    if !node.servers.is_empty() {
                        io.emit(MtEvent::GlobEntry(entry_of(name, &node)));
                    } else {
                        if pattern.elements() == 0 {
                            io.emit(MtEvent::GlobEntry(MountEntry {
                                name: name.clone(),
                                servers: Vec::new(),
                                mt: false,
                                leaf: false,
                            }));
                        }
                        if !pattern.is_empty() {
                            for c in &node.children {
                                if pattern.head_matches(&c.name) {
                                    self.queue.push_back((
                                        codec::join(&[&name, &c.name]),
                                        pattern.tail(),
                                    ));
                                }
                            }
                        }
                    }
                }
                P::Done => return Err(ended()),
            }
            if self.next(io, ctx)? {
                return Ok(Some(()));
            }
        }
    }
}
