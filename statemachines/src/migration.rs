//! The live layout migration's marker machines, shared by both schemas (`docs/migration.md`
//! §2, §7.1): reading a marker row, changing the marker and writing the checkpoint, each one
//! `CheckAndMutateRow` on the row a [`MarkerPlace`] names, that recognises its own lost
//! response. Objmeta's `ReadMigration`/`WriteMarker`/`WriteCheckpoint` and the trace store's
//! migrator run these steps inside their own flows; a schema says how it reads its row
//! ([`MarkerRead`]) and how its errors name the outcomes ([`MigrationFailure`]).
//!
//! A write that is not applied, or whose reply is an error (the outcome is unknown), re-reads
//! the row once and decides from what is there, writing nothing more:
//!
//! | Re-read finds | Outcome |
//! | --- | --- |
//! | a row that is no longer the migration's (objmeta: no bucket, another `uid`) | [`MigrationFailure::gone`] |
//! | exactly what this write wrote (a lost response) | success |
//! | the row as last read, after a retryable store error | the same write again after a back-off |
//! | the row as last read, after another store error, or when no retry fits the deadline | that store error |
//! | anything else, marker write | [`MigrationFailure::marker_changed`] |
//! | anything else, checkpoint write | [`MigrationFailure::taken_over`] |
//!
//! The retry waits the operation's back-off ([`Io::backoff`]: the [`Backoff`] schedule the
//! retry shell [`Retrying`](crate::raw::Retrying) waits between attempts) within the operation's deadline
//! (`docs/migration.md` §12.62).
//!
//! Aware writers of both schemas (§2.3, §3) decide by the marker's state alike
//! ([`AwareWrite::in_state`]) and bound their requests alike ([`AwareDeadline`]: the
//! `max_write` clamp after the marker read a write acts on, and the pause in a fence).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::migration::{
    Gates, LEASE_US, MarkerCas, MarkerCells, MarkerChange, MarkerPlace, MarkerTransitionError,
    MigrationCheckpoint, MigrationLayout, MigrationMarker, MigrationRecordError, MigrationState,
    Truth, check_marker_change,
};
use rowkit_codec::model::{Row, RowFilter};

use crate::children::ChildId;
use crate::operation::{Io, OperationError, settled};
use crate::{Backoff, CheckAndMutateRowRequest, ReadRowRequest, Request, Timestamp, ready};

/// The table a marker row is in (a migration of the trace store has two).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkerTable {
    /// The table.
    pub table: String,
    /// Its app profile (empty: the default).
    pub app_profile_id: String,
}

/// How a schema's errors name the marker machines' outcomes.
pub trait MigrationFailure: OperationError {
    /// The marker changed under this migrator (`marker_changed`).
    fn marker_changed() -> Self;
    /// Another migrator wrote the checkpoint (`migration_taken_over`); `owner` is its owner now
    /// (empty when there is no checkpoint).
    fn taken_over(owner: String) -> Self;
    /// Another migrator holds the run's lease (`migration_in_progress`).
    fn in_progress(detail: String) -> Self;
    /// A marker change refused before anything is sent.
    fn change_refused(error: MarkerTransitionError) -> Self;
    /// A stored marker (`column` = `marker`) or checkpoint (`checkpoint`) that does not decode.
    fn record_invalid(column: &'static str, error: MigrationRecordError) -> Self;
    /// The row is no longer the migration's (objmeta: the bucket was deleted or recreated).
    fn gone() -> Self;
    /// A record of ours that cannot be written (cannot happen for values the machines build).
    fn unwritable(detail: String) -> Self;
}

/// A schema's migration state of one marker row, decoded from its [`MarkerCells`].
pub trait MarkerRead: Clone + core::fmt::Debug + Send + Sized {
    /// The schema's layouts.
    type Layout: MigrationLayout;
    /// The schema's error.
    type Error: MigrationFailure;

    /// The raw cells of the schema's marker row read with `LatestN(1)` (`None`: no row).
    fn cells_of(&self, row: Option<&Row>) -> MarkerCells;
    /// Decodes the cells: a marker or checkpoint that does not decode is
    /// [`MigrationFailure::record_invalid`].
    fn decode(&self, cells: MarkerCells) -> Result<Self, Self::Error>;
    /// The raw cells this was decoded from.
    fn cells(&self) -> MarkerCells;
    /// The marker, if any.
    fn marker(&self) -> Option<&MigrationMarker<Self::Layout>>;
    /// The checkpoint, if any.
    fn checkpoint(&self) -> Option<&MigrationCheckpoint>;
    /// The layout the row names (objmeta: `d:vFormat` as Arsenal reads it; `None` where the
    /// row names none).
    fn layout(&self) -> Option<Self::Layout>;
    /// Whether re-read cells still belong to the migration read here.
    fn still_ours(&self, now: &MarkerCells) -> Result<bool, Self::Error>;
    /// A change this row refuses beyond §3's rules (objmeta: a start whose `bucket_uid` is not
    /// the bucket's).
    fn refuse_change(
        &self,
        _change: &MarkerChange<Self::Layout>,
    ) -> Result<(), MarkerTransitionError> {
        Ok(())
    }
}

/// The one point read of a marker row.
pub fn start_read_marker_row<E>(io: &mut Io<E>, table: &MarkerTable, row: &[u8]) -> ChildId {
    io.read_row(ReadRowRequest {
        table: table.table.clone(),
        app_profile_id: table.app_profile_id.clone(),
        row_key: row.to_vec(),
        filter: Some(RowFilter::CellsPerColumnLimit(1)),
    })
}

/// What a conditional write of a marker row came to.
#[derive(Debug)]
enum CasOutcome<Err> {
    /// The predicate matched the way the write needed: it applied.
    Applied,
    /// Not applied, or the reply was an error: the row's cells as re-read (still the
    /// migration's row: [`MarkerRead::still_ours`]), and the error with whether it is
    /// retryable.
    Reread {
        now: MarkerCells,
        cas_error: Option<(Err, bool)>,
    },
}

/// What a step does with a write that did not apply and whose row is as last read.
enum Unapplied<Err> {
    /// A retryable error: the write is sent again after a back-off.
    Retry,
    /// Not retried: this error ends the step.
    Fail(Err),
}

/// One `CheckAndMutateRow` of a marker row, then (unless it applied) one re-read.
#[derive(Debug)]
struct MarkerRowWrite<Err> {
    row: Vec<u8>,
    /// Whether the write applies when the predicate matches (`true_mutations`) or when it
    /// does not (`false_mutations`, the trace store's first marker).
    applies_on_match: bool,
    /// The write, kept to send it again after a retryable error (boxed with the back-off:
    /// the step sits in the migrators' phase enums).
    cas: Box<MarkerCas>,
    /// The back-off between sends, drawn at the first retry.
    backoff: Option<Box<Backoff>>,
    phase: CasPhase<Err>,
}

#[derive(Debug)]
enum CasPhase<Err> {
    Send,
    Writing(ChildId),
    Rereading {
        read: ChildId,
        cas_error: Option<Err>,
        retryable: bool,
    },
    /// Waiting out the back-off before the write is sent again.
    BackingOff,
    Done,
}

impl<Err: OperationError> MarkerRowWrite<Err> {
    fn new(row: Vec<u8>, cas: MarkerCas) -> MarkerRowWrite<Err> {
        MarkerRowWrite {
            row,
            applies_on_match: !cas.true_mutations.is_empty(),
            cas: Box::new(cas),
            backoff: None,
            phase: CasPhase::Send,
        }
    }

    /// After a re-read found the row as last read: a retryable `cas_error` sends the write
    /// again once the back-off has passed (the next [`MarkerRowWrite::poll`] waits for it);
    /// any other error, or no retry before the deadline, is the step's outcome.
    fn unapplied<E>(&mut self, io: &mut Io<E>, cas_error: Err, retryable: bool) -> Unapplied<Err> {
        if !retryable {
            return Unapplied::Fail(cas_error);
        }
        let now = io.now();
        let backoff = self.backoff.get_or_insert_with(|| Box::new(io.backoff()));
        match backoff.next_retry_at(now) {
            Some(at) => {
                io.sleep_until(at);
                self.phase = CasPhase::BackingOff;
                Unapplied::Retry
            }
            None => Unapplied::Fail(cas_error),
        }
    }

    /// Runs the write; a re-read row that is no longer `as_read`'s is
    /// [`MigrationFailure::gone`].
    fn poll<E, R: MarkerRead<Error = Err>>(
        &mut self,
        io: &mut Io<E>,
        table: &MarkerTable,
        as_read: &R,
    ) -> Result<Option<CasOutcome<Err>>, Err>
    where
        Err: MigrationFailure,
    {
        loop {
            match core::mem::replace(&mut self.phase, CasPhase::Done) {
                CasPhase::Send => {
                    let cas = MarkerCas::clone(&self.cas);
                    // Every schema's unary request draws a seed (and drops it), so the seeds
                    // of the requests after it stay where they always were.
                    let _ = io.next_seed();
                    let id = io.unary(Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                        table: table.table.clone(),
                        app_profile_id: table.app_profile_id.clone(),
                        row_key: self.row.clone(),
                        predicate: Some(cas.predicate),
                        true_mutations: cas.true_mutations,
                        false_mutations: cas.false_mutations,
                    }));
                    self.phase = CasPhase::Writing(id);
                }
                CasPhase::Writing(id) => {
                    // A unary child that ended with a retryable error (its outcome unknown).
                    let retryable = io.gave_up(id);
                    let outcome = ready!(settled(io.matched::<Err>(id)),
                        self.phase => CasPhase::Writing(id));
                    let cas_error = match outcome {
                        Ok(matched) if matched == self.applies_on_match => {
                            return Ok(Some(CasOutcome::Applied));
                        }
                        Ok(_) => None,
                        Err(e) => Some(e),
                    };
                    let read = start_read_marker_row(io, table, &self.row);
                    self.phase = CasPhase::Rereading {
                        read,
                        cas_error,
                        retryable,
                    };
                }
                CasPhase::Rereading {
                    read,
                    cas_error,
                    retryable,
                } => {
                    let row = ready!(io.row_or_wait::<Err>(read),
                        self.phase => CasPhase::Rereading { read, cas_error, retryable });
                    let now = as_read.cells_of(row.as_ref());
                    if !as_read.still_ours(&now)? {
                        return Err(Err::gone());
                    }
                    let cas_error = cas_error.map(|e| (e, retryable));
                    return Ok(Some(CasOutcome::Reread { now, cas_error }));
                }
                CasPhase::BackingOff => {
                    if io.sleeping() {
                        self.phase = CasPhase::BackingOff;
                        return Ok(None);
                    }
                    self.phase = CasPhase::Send;
                }
                CasPhase::Done => return Ok(None),
            }
        }
    }
}

/// The step that reads a marker row once (the schema decodes it: objmeta's place depends on
/// the bucket, so the decoding needs the schema's arguments).
#[derive(Debug)]
pub struct ReadMarkerStep {
    row: Vec<u8>,
    read: Option<ChildId>,
}

impl ReadMarkerStep {
    /// A read of `place`'s row.
    pub fn new(place: &MarkerPlace) -> ReadMarkerStep {
        ReadMarkerStep {
            row: place.row.clone(),
            read: None,
        }
    }

    /// Runs the step: the row as read (`None`: no row).
    pub fn poll<E, Err: OperationError>(
        &mut self,
        io: &mut Io<E>,
        table: &MarkerTable,
    ) -> Result<Option<Option<Row>>, Err> {
        let read = *self
            .read
            .get_or_insert_with(|| start_read_marker_row(io, table, &self.row));
        io.row_or_wait::<Err>(read)
    }
}

/// The step that changes a marker (the start, a state change, objmeta's switch, the removal).
#[derive(Debug)]
pub struct WriteMarkerStep<R: MarkerRead> {
    as_read: R,
    /// The row's cells once the write applied.
    written: MarkerCells,
    write: MarkerRowWrite<R::Error>,
}

impl<R: MarkerRead> WriteMarkerStep<R> {
    /// Changes `place`'s marker from `as_read` (the row as last read) as `change` says; the
    /// predicate is the marker (and layout column) as read (§2.2). `layout_cell` is the layout
    /// column's value objmeta's switch writes (unused elsewhere). A change §3 does not allow,
    /// whose gate `gates` does not open, that changes what a run keeps, or that the row
    /// refuses ([`MarkerRead::refuse_change`]) is refused before anything is sent.
    pub fn new(
        place: &MarkerPlace,
        as_read: &R,
        change: MarkerChange<R::Layout>,
        gates: Gates,
        layout_cell: impl FnOnce(R::Layout) -> Vec<u8>,
    ) -> Result<WriteMarkerStep<R>, R::Error> {
        let refused = <R::Error as MigrationFailure>::change_refused;
        check_marker_change(as_read.marker(), as_read.layout(), &change, gates).map_err(refused)?;
        as_read.refuse_change(&change).map_err(refused)?;
        let marker_text = match change.marker() {
            Some(m) => Some(m.to_json_text().map_err(|e| {
                R::Error::unwritable(alloc::format!("cannot write the migration marker: {e}"))
            })?),
            None => None,
        };
        let cells = as_read.cells();
        let (old_marker, old_layout) = (cells.marker.as_deref(), cells.layout.as_deref());
        let mut written = cells.clone();
        written.marker = marker_text.clone().map(String::into_bytes);
        let cas = match (&change, marker_text.as_deref()) {
            (MarkerChange::Write(_), Some(text)) => {
                place.write_marker(old_marker, old_layout, text)
            }
            (MarkerChange::Switch(m), Some(text)) => {
                let cell = layout_cell(m.to);
                if place.layout_column.is_some() {
                    written.layout = Some(cell.clone());
                }
                place.switch(old_marker, old_layout, cell, text)
            }
            _ => {
                written.checkpoint = None;
                place.remove(old_marker, old_layout)
            }
        };
        Ok(WriteMarkerStep {
            as_read: as_read.clone(),
            written,
            write: MarkerRowWrite::new(place.row.clone(), cas),
        })
    }

    /// Runs the step: the row's migration state after the write.
    pub fn poll<E>(&mut self, io: &mut Io<E>, table: &MarkerTable) -> Result<Option<R>, R::Error> {
        loop {
            let (now, cas_error) = match ready!(self.write.poll(io, table, &self.as_read)) {
                CasOutcome::Applied => return self.as_read.decode(self.written.clone()).map(Some),
                CasOutcome::Reread { now, cas_error } => (now, cas_error),
            };
            if now.marker == self.written.marker && now.layout == self.written.layout {
                // Our own write, whose reply was lost (or replayed): done.
                return self.as_read.decode(now).map(Some);
            }
            let old = self.as_read.cells();
            return match cas_error {
                Some((e, retryable)) if now.marker == old.marker && now.layout == old.layout => {
                    match self.write.unapplied(io, e, retryable) {
                        Unapplied::Retry => continue,
                        Unapplied::Fail(e) => Err(e),
                    }
                }
                _ => Err(R::Error::marker_changed()),
            };
        }
    }
}

/// The step that writes a checkpoint (§7.1).
#[derive(Debug)]
pub struct WriteCheckpointStep<R: MarkerRead> {
    as_read: R,
    text: Vec<u8>,
    write: MarkerRowWrite<R::Error>,
}

impl<R: MarkerRead> WriteCheckpointStep<R> {
    /// Writes `checkpoint` with `updated` = `now` and the lease renewed (`lease_until` =
    /// `now` plus [`LEASE_US`]), conditional on the checkpoint as last read (`as_read`). A
    /// checkpoint as read of another owner whose lease has not run out is refused before
    /// anything is sent ([`MigrationFailure::in_progress`]) unless `take_over`.
    pub fn new(
        place: &MarkerPlace,
        as_read: &R,
        mut checkpoint: MigrationCheckpoint,
        take_over: bool,
        now: Timestamp,
    ) -> Result<WriteCheckpointStep<R>, R::Error> {
        if let Some(held) = as_read.checkpoint()
            && held.owner != checkpoint.owner
            && held.lease_until > now
            && !take_over
        {
            return Err(R::Error::in_progress(alloc::format!(
                "run {} is held by {} until {} µs",
                held.run,
                held.owner,
                held.lease_until.0
            )));
        }
        checkpoint.updated = now;
        checkpoint.lease_until = now.saturating_add_micros(LEASE_US);
        WriteCheckpointStep::write(place, as_read, checkpoint)
    }

    /// The release of this migrator's lease at `now` (`lease_until` = `now`): written when a
    /// run stops at a gate, so that the operator's next run (another process, so another
    /// owner) continues at once (§12.24). `None` when there is nothing to release: no
    /// checkpoint, another owner's, or a lease already run out.
    pub fn release(
        place: &MarkerPlace,
        as_read: &R,
        owner: &str,
        now: Timestamp,
    ) -> Result<Option<WriteCheckpointStep<R>>, R::Error> {
        let Some(held) = as_read
            .checkpoint()
            .filter(|c| c.owner == owner && c.lease_until > now)
        else {
            return Ok(None);
        };
        let mut checkpoint = held.clone();
        checkpoint.updated = now;
        checkpoint.lease_until = now;
        WriteCheckpointStep::write(place, as_read, checkpoint).map(Some)
    }

    /// The conditional write of `checkpoint` as it is (§7.1).
    fn write(
        place: &MarkerPlace,
        as_read: &R,
        checkpoint: MigrationCheckpoint,
    ) -> Result<WriteCheckpointStep<R>, R::Error> {
        let text = checkpoint.to_json_text().map_err(|e| {
            R::Error::unwritable(alloc::format!("cannot write the migration checkpoint: {e}"))
        })?;
        let cas = place.write_checkpoint(as_read.cells().checkpoint.as_deref(), &text);
        Ok(WriteCheckpointStep {
            as_read: as_read.clone(),
            text: text.into_bytes(),
            write: MarkerRowWrite::new(place.row.clone(), cas),
        })
    }

    /// Runs the step: the row's migration state after the write.
    pub fn poll<E>(&mut self, io: &mut Io<E>, table: &MarkerTable) -> Result<Option<R>, R::Error> {
        let now = loop {
            let (now, cas_error) = match ready!(self.write.poll(io, table, &self.as_read)) {
                CasOutcome::Applied => {
                    let mut cells = self.as_read.cells();
                    cells.checkpoint = Some(self.text.clone());
                    return self.as_read.decode(cells).map(Some);
                }
                CasOutcome::Reread { now, cas_error } => (now, cas_error),
            };
            if now.checkpoint.as_deref() == Some(self.text.as_slice()) {
                // Our own write, whose reply was lost (or replayed): done.
                return self.as_read.decode(now).map(Some);
            }
            match cas_error {
                Some((e, retryable)) if now.checkpoint == self.as_read.cells().checkpoint => {
                    match self.write.unapplied(io, e, retryable) {
                        Unapplied::Retry => continue,
                        Unapplied::Fail(e) => return Err(e),
                    }
                }
                _ => break now,
            }
        };
        if now.marker.is_none() {
            // The migration ended (or never began) under this migrator.
            return Err(R::Error::marker_changed());
        }
        let owner = match now.checkpoint.as_deref() {
            Some(bytes) => {
                MigrationCheckpoint::from_json_bytes(bytes)
                    .map_err(|error| R::Error::record_invalid("checkpoint", error))?
                    .owner
            }
            None => String::new(),
        };
        Err(R::Error::taken_over(owner))
    }
}

/// The progress of a pass after a page or tile (§7.3, §12.14): `rate_rows_per_s` is the rows
/// this run read per second of the machine's clock since it `began` (`None` before the clock
/// moved); `eta_s` comes from the previous pass's row count and that rate (`None` in a first
/// pass).
pub fn pass_progress(
    checkpoint: &MigrationCheckpoint,
    rows_this_run: u64,
    began: Option<Timestamp>,
    now: Timestamp,
) -> crate::objmeta::migrate::pass::PassProgress {
    let elapsed_us = began.map_or(0, |b| now.0.saturating_sub(b.0));
    let rate = (elapsed_us > 0).then(|| {
        let per_s = u128::from(rows_this_run) * 1_000_000 / elapsed_us.unsigned_abs() as u128;
        u64::try_from(per_s).unwrap_or(u64::MAX)
    });
    let eta_s = match (checkpoint.pass_rows_previous, rate) {
        (Some(previous), Some(rate)) if rate > 0 => {
            Some(previous.saturating_sub(checkpoint.counters.rows_scanned) / rate)
        }
        _ => None,
    };
    crate::objmeta::migrate::pass::PassProgress {
        state: checkpoint.state,
        pass: checkpoint.pass,
        counters: checkpoint.counters,
        rate_rows_per_s: rate,
        eta_s,
    }
}

/// The first wait of an aware write paused in a fence before it reads the marker again; each
/// further wait doubles, up to [`PAUSE_MAX_US`].
pub const PAUSE_FIRST_US: i64 = 100_000;
/// The longest wait between two marker reads of a paused write (a fence ends within a
/// second of the switch for a paused writer).
pub const PAUSE_MAX_US: i64 = 1_000_000;

/// What an aware write does under a marker (§3's "Aware writers" column), in both schemas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AwareWrite {
    /// The protocol on the truth's layout alone (`cleaning`: on `to`, no mirror).
    Alone(Truth),
    /// The protocol on the truth's layout, then mirrored into the other one before it is
    /// acknowledged (`copying`, `verifying`: into `to`; `switched`: into `from`).
    Mirrored(Truth),
    /// A fence (`switching`, `aborting`): nothing is written; the marker is read again (never
    /// from a cache) after a back-off, until the state changes or the deadline passes.
    Paused,
}

impl AwareWrite {
    /// What an aware write does under a marker in `state` (no marker: the protocol alone, as
    /// an unaware process runs it).
    pub fn in_state(state: MigrationState) -> AwareWrite {
        if state.is_fence() {
            return AwareWrite::Paused;
        }
        match state {
            MigrationState::Cleaning => AwareWrite::Alone(state.truth()),
            _ => AwareWrite::Mirrored(state.truth()),
        }
    }
}

/// The deadline of an aware write (§2.3): no request of it is sent more than `max_write`
/// after the marker read it acts on, so the settle time `Δ` the migrator waits after a marker
/// change covers every write begun under the previous state; a write paused in a fence waits
/// with a doubling back-off ([`PAUSE_FIRST_US`] to [`PAUSE_MAX_US`]) bounded by the deadline
/// the operation was given, not by a marker read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AwareDeadline {
    /// The deadline the operation started with (taken at its first step).
    given: Option<Timestamp>,
    /// Waits in a fence so far.
    pauses: u32,
}

impl AwareDeadline {
    /// Takes the operation's deadline as given, at its first step (later calls keep it).
    pub fn begin<E>(&mut self, io: &Io<E>) {
        self.given.get_or_insert(io.deadline());
    }

    /// The write acts on the marker read at `read_at`: its deadline becomes the earlier of the
    /// given one and `read_at + max_write_us`.
    pub fn act_on<E>(&mut self, io: &mut Io<E>, read_at: Timestamp, max_write_us: i64) {
        let given = *self.given.get_or_insert(io.deadline());
        io.set_deadline(given.min(read_at.saturating_add_micros(max_write_us)));
    }

    /// The write is in a fence: the given deadline restored, the next wait armed; returns when
    /// to read the marker again.
    pub fn pause<E>(&mut self, io: &mut Io<E>) -> Timestamp {
        let given = *self.given.get_or_insert(io.deadline());
        io.set_deadline(given);
        let wait = PAUSE_FIRST_US
            .saturating_mul(1 << self.pauses.min(20))
            .min(PAUSE_MAX_US);
        self.pauses = self.pauses.saturating_add(1);
        let wake = io.now().saturating_add_micros(wait);
        io.sleep_until(wake);
        wake
    }
}
