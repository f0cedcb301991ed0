//! Aware writers (`docs/migration.md` §2.3, §3 "Aware writers", §4.3): an object write of a
//! process whose config says [`migration_aware`](crate::objmeta::ObjmetaConfig::migration_aware)
//! runs its protocol under the bucket's migration marker.
//!
//! | Marker state | The write |
//! | --- | --- |
//! | none, `cleaning` | the protocol alone, on `d:vFormat` (in `cleaning`: `to`) |
//! | `copying`, `verifying` | the protocol on `from` (the truth), then every object key it wrote mirrored into `to` by [`SyncKey`](super::sync::SyncKey) before it is acknowledged |
//! | `switched` | the protocol on `to` (the flipped `d:vFormat`), then mirrored into `from` (the reverse mirror, §4.6) |
//! | `switching`, `aborting` (fences) | **paused**: the marker is read again (never from the cache) after a back-off on the operation's timer until the state changes; the deadline ends it aborted |
//!
//! The marker comes with the vFormat in the lookup's one `ReadRow` ([`BucketVFormat`]), kept
//! at most `marker_ttl`. The deadline is clamped to [`MAX_WRITE_US`] after the marker read the
//! write acts on (a cached read counts from when it was read), so no write request of it is
//! sent later than that: the settle time `Δ` the migrator waits covers it. The decision by
//! state, the clamp and the pause are the ones the trace store's aware writers share
//! ([`AwareWrite`], [`AwareDeadline`]).
//!
//! The keys a protocol wrote are the ones its change events name (`Put`, `Delete` of the
//! bucket's collection: exactly the writes that applied). Each is mirrored by the one sync
//! step, run as a sub-flow of the write's own operation (as the passes run it), one key after
//! the other. A mirror that fails (a store error, a key the migration cannot move) leaves the
//! write applied and acknowledged: the pair is one the migrator's passes find not in sync and
//! sync (§12.32).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::objmeta::keys::{VFormat, collection_for_bucket};
use rowkit_codec::objmeta::migration::Truth;
use rowkit_codec::objmeta::migration::marker::MAX_WRITE_US;
use rowkit_codec::objmeta::migration::sync::map_key;

use super::super::documents::BucketVFormat;
use super::super::requests::{OmIo, P};
use super::super::{BucketLayout, ObjmetaEvent, ObjmetaSchema, ObjmetaState};
use super::sync::SyncKeyFlow;
use crate::Timestamp;
use crate::migration::{AwareDeadline, AwareWrite};
use crate::operation::Flow;

/// An objmeta write protocol that an aware process runs under the marker: the wrapper looks
/// the bucket up, then hands the protocol its key format.
pub(in crate::objmeta) trait Protocol: Flow<Schema = ObjmetaSchema> {
    /// The bucket written.
    fn bucket(&self) -> &str;
    /// The protocol runs on `layout`'s key format (no lookup of its own); `layout` holds the
    /// marker the write acts on (a delete hands it to the repair it schedules).
    fn use_layout(&mut self, layout: &BucketLayout);
}

/// The layouts an aware write mirrors between (§4.3), from the marker it acts on.
#[derive(Clone, Copy, Debug)]
struct Mirror {
    from: VFormat,
    to: VFormat,
    truth: Truth,
}

/// What an aware write does under `layout`'s marker (§3's "Aware writers" column): `None`
/// pauses (a fence), `Some(None)` runs the protocol alone, `Some(Some(m))` mirrors with `m`.
fn decide(layout: &BucketLayout) -> Option<Option<Mirror>> {
    let Some(marker) = &layout.marker else {
        return Some(None);
    };
    match AwareWrite::in_state(marker.state) {
        AwareWrite::Paused => None,
        // The protocol's own lookup gave it `d:vFormat`, the truth's format.
        AwareWrite::Alone(_) => Some(None),
        AwareWrite::Mirrored(truth) => Some(Some(Mirror {
            from: marker.from,
            to: marker.to,
            truth,
        })),
    }
}

/// An objmeta write run as an aware process runs it (module doc); for an unaware process
/// (the config's flag off) exactly the protocol, as Arsenal runs it.
#[derive(Debug)]
pub(in crate::objmeta) struct Aware<F: Flow> {
    protocol: F,
    /// The deadline the operation started with, clamped after each marker read (§2.3).
    deadline: AwareDeadline,
    /// How long after the marker read it acts on the write may send (§2.3).
    max_write_us: i64,
    phase: AwarePhase<F::Output>,
}

#[derive(Debug)]
enum AwarePhase<T> {
    /// Nothing done yet.
    Start,
    /// Nothing done yet; the write acts on this layout, read before it began (a repair's
    /// scheduling delete's, §2.3).
    Given(BucketLayout),
    /// The bucket's vFormat and marker being looked up.
    Lookup(BucketVFormat),
    /// In a fence: waiting until `wake` to read the marker again.
    Paused(Timestamp),
    /// The protocol running; `keys` it wrote so far (only collected when mirroring).
    Protocol {
        mirror: Option<Mirror>,
        keys: Vec<String>,
    },
    /// The protocol ended with `output`; the keys it wrote being mirrored one at a time
    /// (`keys` still to do, last first).
    Mirroring {
        output: T,
        mirror: Mirror,
        keys: Vec<String>,
        sync: Option<Box<SyncKeyFlow>>,
    },
    Done,
}

impl<F: Protocol> Aware<F> {
    /// `protocol` run aware (or not, as the context's config says).
    pub(in crate::objmeta) fn new(protocol: F) -> Aware<F> {
        Aware {
            protocol,
            deadline: AwareDeadline::default(),
            max_write_us: MAX_WRITE_US,
            phase: AwarePhase::Start,
        }
    }

    /// `protocol` run aware under `layout`, read by the operation that scheduled it: its
    /// writes are sent at most `max_write_us` after that read (an `AsyncRepair`: 15 s + 60 s,
    /// §2.3). A fence (which no scheduling write acts on: it pauses) reads the marker again.
    pub(in crate::objmeta) fn under(
        protocol: F,
        layout: BucketLayout,
        max_write_us: i64,
    ) -> Aware<F> {
        Aware {
            protocol,
            deadline: AwareDeadline::default(),
            max_write_us,
            phase: AwarePhase::Given(layout),
        }
    }

    /// The Arsenal keys of the bucket's collection named by the events since `mark`.
    fn written_since(&self, io: &OmIo, mark: usize, keys: &mut Vec<String>) {
        let collection = collection_for_bucket(self.protocol.bucket());
        for event in io.emitted_since(mark) {
            let (ObjmetaEvent::Put {
                collection: c, key, ..
            }
            | ObjmetaEvent::Delete {
                collection: c, key, ..
            }) = event
            else {
                continue;
            };
            if c == collection && !keys.contains(key) {
                keys.push(key.clone());
            }
        }
    }

    /// The sync of the next key still to mirror, or `None` when none is left. A key the
    /// sync step refuses (§4.1's findings) is skipped: the passes report it.
    fn next_sync(&self, mirror: Mirror, keys: &mut Vec<String>) -> Option<Box<SyncKeyFlow>> {
        let collection = collection_for_bucket(self.protocol.bucket());
        while let Some(key) = keys.pop() {
            // The protocol wrote the truth's layout; the sync names a pair by its `from` key.
            let from_key = match mirror.truth {
                Truth::From => Ok(key),
                Truth::To => map_key(collection, &key, mirror.to, mirror.from),
            };
            let Ok(from_key) = from_key else { continue };
            let bucket = self.protocol.bucket();
            if let Ok(flow) = SyncKeyFlow::start(
                bucket,
                &from_key,
                mirror.from,
                mirror.to,
                mirror.truth,
                None,
            ) {
                return Some(Box::new(flow));
            }
        }
        None
    }
}

impl<F: Protocol> Flow for Aware<F>
where
    F::Output: Send,
{
    type Schema = ObjmetaSchema;
    type Output = F::Output;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<F::Output> {
        loop {
            match core::mem::replace(&mut self.phase, AwarePhase::Done) {
                AwarePhase::Start if !st.config.migration_aware => {
                    self.phase = AwarePhase::Protocol {
                        mirror: None,
                        keys: Vec::new(),
                    };
                }
                AwarePhase::Start => {
                    self.deadline.begin(io);
                    self.phase = AwarePhase::Lookup(BucketVFormat::Start);
                }
                AwarePhase::Given(layout) => {
                    self.deadline.begin(io);
                    self.act_on(io, layout);
                    if let AwarePhase::Paused(_) = self.phase {
                        return Ok(None);
                    }
                }
                AwarePhase::Lookup(mut lookup) => {
                    let bucket = self.protocol.bucket();
                    let Some(layout) = lookup.poll_layout(io, st, bucket)? else {
                        self.phase = AwarePhase::Lookup(lookup);
                        return Ok(None);
                    };
                    self.act_on(io, layout);
                    if let AwarePhase::Paused(_) = self.phase {
                        return Ok(None);
                    }
                }
                AwarePhase::Paused(wake) => {
                    if io.now() < wake {
                        io.sleep_until(wake);
                        self.phase = AwarePhase::Paused(wake);
                        return Ok(None);
                    }
                    self.phase = AwarePhase::Lookup(BucketVFormat::Fresh);
                }
                AwarePhase::Protocol { mirror, mut keys } => {
                    let mark = io.emitted();
                    let step = self.protocol.advance(io, st);
                    if mirror.is_some() {
                        self.written_since(io, mark, &mut keys);
                    }
                    let Some(output) = step? else {
                        self.phase = AwarePhase::Protocol { mirror, keys };
                        return Ok(None);
                    };
                    let Some(mirror) = mirror else {
                        return Ok(Some(output));
                    };
                    keys.reverse();
                    self.phase = AwarePhase::Mirroring {
                        output,
                        mirror,
                        keys,
                        sync: None,
                    };
                }
                AwarePhase::Mirroring {
                    output,
                    mirror,
                    mut keys,
                    sync,
                } => {
                    let Some(mut sync) = sync.or_else(|| self.next_sync(mirror, &mut keys)) else {
                        return Ok(Some(output));
                    };
                    match sync.advance(io, st) {
                        Ok(None) => {
                            self.phase = AwarePhase::Mirroring {
                                output,
                                mirror,
                                keys,
                                sync: Some(sync),
                            };
                            return Ok(None);
                        }
                        // Synced, or failed: the write is applied either way (§12.32).
                        Ok(Some(_)) | Err(_) => {
                            self.phase = AwarePhase::Mirroring {
                                output,
                                mirror,
                                keys,
                                sync: None,
                            };
                        }
                    }
                }
                AwarePhase::Done => return Ok(None),
            }
        }
    }

    fn release(&mut self, st: &mut ObjmetaState) {
        self.protocol.release(st);
    }
}

impl<F: Protocol> Aware<F> {
    /// After a marker read (`layout`): the deadline clamped to `max_write` after it, then the
    /// protocol started on the truth — or, in a fence, the next wait armed.
    fn act_on(&mut self, io: &mut OmIo, layout: BucketLayout) {
        match decide(&layout) {
            Some(mirror) => {
                self.deadline.act_on(io, layout.read_at, self.max_write_us);
                self.protocol.use_layout(&layout);
                self.phase = AwarePhase::Protocol {
                    mirror,
                    keys: Vec::new(),
                };
            }
            None => self.phase = AwarePhase::Paused(self.deadline.pause(io)),
        }
    }
}
