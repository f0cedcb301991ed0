//! Aware operations (`docs/migration.md` §2.3, §3, §5.4, §5.6, §9): an operation of a process
//! whose config says [`migration_aware`](super::TraceStoreConfig::migration_aware) reads the
//! table's migration marker `:rk:m:0000000000:` (kept at most `marker_ttl`) and runs on the
//! table the marker names the truth.
//!
//! | Marker state | A read | A Put |
//! | --- | --- | --- |
//! | none | this table | this table |
//! | `copying`, `verifying` | the source `T1` | on `T1`, then the same Put (same commit, entries, `ts`) on `T2` — the mirror — before it is acknowledged (§5.4) |
//! | `switching`, `aborting` (fences) | `T1` | **paused**: the marker is read again (never from the cache) with a back-off from 100 ms to 1 s until the state changes; the deadline ends it aborted |
//! | `switched` | the target `T2` | on `T2`, mirrored on `T1` (§5.6) |
//! | `cleaning` (also the finished migration: a source marker `cleaning` with no target marker, §12.52) | `T2` | on `T2` alone |
//!
//! The tables come from the marker itself (`source_table`, `target_table`, and the layouts
//! `from`, `to`), so a process opened on either table finds the truth. The other table's
//! [`TraceStoreState`] (its OPS cache, digest map and id pool, §5.1) is kept in this one's; a
//! digest-id mirror assigns its ids in `T2` with `AssignDigestIds` inside Put, as `CopyTile`
//! does, and a mirror into a digest-id table leaves options out (§5.7: that layout has none).
//! A Put's requests are sent at most `max_write` after the marker read it acts on; the
//! decision by state, this clamp and the pause are the ones objmeta's aware writers use
//! ([`crate::migration::AwareWrite`], [`crate::migration::AwareDeadline`]). A mirror that fails
//! after the truth's write applied does not fail the Put: the point is in the truth, and the
//! migrator's passes copy what the mirror missed (§12.32's argument).

use alloc::string::String;

use rowkit_codec::migration::{MAX_WRITE_US, MigrationRecordError, Truth};
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::migration::{TraceMigrationMarker, marker_place};

use super::migrate::marker::{TraceMigrationRead, marker_table};
use super::{Progress, TraceStoreError, TraceStoreEvent, TraceStoreSchema, TraceStoreState};
use crate::Timestamp;
use crate::migration::{AwareDeadline, AwareWrite, ReadMarkerStep};
use crate::operation::{Flow, Io};
use crate::ready;

/// A trace store flow that an aware process runs on the truth's table.
pub trait TableFlow: Flow<Schema = TraceStoreSchema> + Sized {
    /// Whether the flow writes (a Put): it then pauses in a fence, has its deadline clamped
    /// and is mirrored; a read does none of these.
    const WRITES: bool;

    /// The same write, not started, for the mirror table of `layout` (`None`: a read, or a
    /// flow that has started).
    fn mirror(&self, layout: Layout) -> Option<Self>;
}

/// Where a flow of an aware operation runs.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Place {
    /// The state's own table.
    This,
    /// The other table of the migration (kept in the state, [`TraceStoreState::other_table`]).
    Other { table: String, layout: Layout },
}

impl Place {
    /// The state a flow at this place runs on.
    fn state<'s>(&self, state: &'s mut TraceStoreState) -> &'s mut TraceStoreState {
        match self {
            Place::This => state,
            Place::Other { table, layout } => state.other_table(table, *layout),
        }
    }

    /// The layout of the table at this place.
    fn layout(&self, state: &TraceStoreState) -> Layout {
        match self {
            Place::This => state.layout,
            Place::Other { layout, .. } => *layout,
        }
    }
}

/// The table of `marker`'s migration that holds the `side` layout (`from`: the source).
fn place_of(
    state: &TraceStoreState,
    marker: &TraceMigrationMarker,
    side: Truth,
) -> Result<Place, TraceStoreError> {
    let (table, layout, member) = match side {
        Truth::From => (&marker.source_table, marker.from, "source_table"),
        Truth::To => (&marker.target_table, marker.to, "target_table"),
    };
    let Some(table) = table else {
        let error = MigrationRecordError::MissingMember(member);
        return Err(TraceStoreError::MigrationRecordInvalid {
            column: "marker",
            error,
        });
    };
    if *table != state.table {
        return Ok(Place::Other {
            table: table.clone(),
            layout,
        });
    }
    if layout != state.layout {
        return Err(TraceStoreError::MigrationUsage(alloc::format!(
            "table {table} is {} but its migration marker says {}",
            state.layout.name(),
            layout.name()
        )));
    }
    Ok(Place::This)
}

/// The other side of the migration.
fn other_side(truth: Truth) -> Truth {
    match truth {
        Truth::From => Truth::To,
        Truth::To => Truth::From,
    }
}

/// An operation run as an aware process runs it (module doc); for an unaware process (the
/// config's flag off) exactly the flow, on the state's table, as Gold runs it.
#[derive(Debug)]
pub struct Aware<F: TableFlow> {
    flow: F,
    /// The operation's deadline, clamped after the marker read a write acts on (§2.3).
    deadline: AwareDeadline,
    phase: AwarePhase<F, F::Output>,
}

#[derive(Debug)]
enum AwarePhase<F, T> {
    /// Nothing done yet.
    Start,
    /// The marker row being read (asked at `asked`).
    Lookup {
        read: ReadMarkerStep,
        asked: Timestamp,
    },
    /// A write in a fence: waiting until then to read the marker again.
    Paused(Timestamp),
    /// The flow running on the truth's table; then `mirror`, the same write on the other.
    Truth {
        on: Place,
        mirror: Option<(Place, F)>,
    },
    /// The truth's write ended with `output`; its mirror running.
    Mirror {
        output: T,
        on: Place,
        flow: F,
    },
    Done,
}

impl<F: TableFlow> Aware<F> {
    /// `flow` run aware (or not, as the state's config says); nothing is sent before the
    /// first advance.
    pub(crate) fn new(flow: F) -> Aware<F> {
        Aware {
            flow,
            deadline: AwareDeadline::default(),
            phase: AwarePhase::Start,
        }
    }

    /// After the marker read at `read_at`: the flow's place (and its mirror's) — or, for a
    /// write in a fence, the next wait armed.
    fn act_on(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &TraceStoreState,
        read_at: Timestamp,
        marker: Option<&TraceMigrationMarker>,
    ) -> Result<(), TraceStoreError> {
        let Some(marker) = marker else {
            if F::WRITES {
                self.deadline.act_on(io, read_at, MAX_WRITE_US);
            }
            self.phase = AwarePhase::Truth {
                on: Place::This,
                mirror: None,
            };
            return Ok(());
        };
        if !F::WRITES {
            // Reads never pause: in a fence the truth is still `from` (§3).
            let on = place_of(state, marker, marker.state.truth())?;
            self.phase = AwarePhase::Truth { on, mirror: None };
            return Ok(());
        }
        let (truth, mirrored) = match AwareWrite::in_state(marker.state) {
            AwareWrite::Paused => {
                self.phase = AwarePhase::Paused(self.deadline.pause(io));
                return Ok(());
            }
            AwareWrite::Alone(truth) => (truth, false),
            AwareWrite::Mirrored(truth) => (truth, true),
        };
        self.deadline.act_on(io, read_at, MAX_WRITE_US);
        let on = place_of(state, marker, truth)?;
        let mirror = match mirrored {
            true => {
                let place = place_of(state, marker, other_side(truth))?;
                let layout = place.layout(state);
                self.flow.mirror(layout).map(|flow| (place, flow))
            }
            false => None,
        };
        self.phase = AwarePhase::Truth { on, mirror };
        Ok(())
    }
}

impl<F: TableFlow> Flow for Aware<F>
where
    F::Output: Send,
{
    type Schema = TraceStoreSchema;
    type Output = F::Output;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<F::Output> {
        loop {
            match core::mem::replace(&mut self.phase, AwarePhase::Done) {
                AwarePhase::Start if !state.config.migration_aware => {
                    self.phase = AwarePhase::Truth {
                        on: Place::This,
                        mirror: None,
                    };
                }
                AwarePhase::Start => {
                    self.deadline.begin(io);
                    let cached = state
                        .cached_marker(io.now())
                        .map(|(at, marker)| (at, marker.cloned()));
                    match cached {
                        Some((read_at, marker)) => {
                            self.act_on(io, state, read_at, marker.as_ref())?;
                        }
                        None => {
                            self.phase = AwarePhase::Lookup {
                                read: ReadMarkerStep::new(&marker_place()),
                                asked: io.now(),
                            };
                        }
                    }
                }
                AwarePhase::Lookup { mut read, asked } => {
                    let row = ready!(read.poll::<_, TraceStoreError>(io, &marker_table(state)),
                        self.phase => AwarePhase::Lookup { read, asked });
                    let marker = TraceMigrationRead::from_row(row.as_ref())?.marker;
                    // Kept from when it was asked: the clamp counts from the earliest instant
                    // the marker could have been read.
                    state.cache_marker(asked, marker.clone());
                    self.act_on(io, state, asked, marker.as_ref())?;
                }
                AwarePhase::Paused(wake) => {
                    if io.now() < wake {
                        io.sleep_until(wake);
                        self.phase = AwarePhase::Paused(wake);
                        return Ok(None);
                    }
                    self.phase = AwarePhase::Lookup {
                        read: ReadMarkerStep::new(&marker_place()),
                        asked: io.now(),
                    };
                }
                AwarePhase::Truth { on, mirror } => {
                    let output = ready!(self.flow.advance(io, on.state(state)),
                        self.phase => AwarePhase::Truth { on, mirror });
                    let Some((on, flow)) = mirror else {
                        return Ok(Some(output));
                    };
                    self.phase = AwarePhase::Mirror { output, on, flow };
                }
                AwarePhase::Mirror {
                    output,
                    on,
                    mut flow,
                } => match flow.advance(io, on.state(state)) {
                    Ok(None) => {
                        self.phase = AwarePhase::Mirror { output, on, flow };
                        return Ok(None);
                    }
                    // Mirrored, or not: the truth holds the write either way (module doc).
                    Ok(Some(_)) | Err(_) => return Ok(Some(output)),
                },
                AwarePhase::Done => return Ok(None),
            }
        }
    }

    fn release(&mut self, state: &mut TraceStoreState) {
        match &mut self.phase {
            AwarePhase::Truth { on, .. } => self.flow.release(on.state(state)),
            AwarePhase::Mirror { on, flow, .. } => flow.release(on.state(state)),
            _ => {}
        }
    }
}
