#![allow(clippy::unwrap_used)]
//! The mount-table facade hands every operation's warnings (failures btmtd only logs) to its
//! warning sink as well as to `on_event` (issue 17, point 6: the facade used to drop them).

use std::sync::{Arc, Mutex};

use rowkit_client::mounttable::{MountTable, MtConfig};
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::Timestamp;
use rowkit_store::MemoryStore;
use rowkit_store::driver::ManualClock;
use rowkit_statemachines::mounttable::{MtError, MtEvent};
use rowkit_statemachines::{Machine, Request, Response, StoreError, Tag};

/// A machine that only reports two warnings and a glob entry, then succeeds: what a real
/// operation emits when a second half fails, without the fault that takes.
struct Warns(Vec<MtEvent>);

impl Machine for Warns {
    type Output = ();
    type Event = MtEvent;
    type Error = MtError;

    fn handle_response(&mut self, _: Tag, _: Result<Response, StoreError>, _: Timestamp) {}
    fn handle_timeout(&mut self, _: Timestamp) {}
    fn cancel(&mut self, _: Timestamp) {}
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        None
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        None
    }
    fn poll_event(&mut self) -> Option<MtEvent> {
        self.0.pop()
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        None
    }
    fn result(&mut self) -> Option<Result<(), MtError>> {
        self.0.is_empty().then_some(Ok(()))
    }
}

#[test]
fn warnings_reach_the_sink_and_on_event() {
    let store = MemoryStore::new();
    let clock = ManualClock::new(Timestamp::from_secs(1_700_000_000));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let table = MountTable::new(SyncDriver::new(&store, &clock), MtConfig::default())
        .with_warning_sink(move |step, error| {
            sink.lock().unwrap().push((step, error.clone()));
        });
    let events = vec![
        MtEvent::Warning {
            step: "undo node counter",
            error: MtError::ConcurrentAccess,
        },
        MtEvent::Warning {
            step: "roll back child reference",
            error: MtError::NoAccess,
        },
    ];
    let mut on_event = Vec::new();
    block_on(table.run(Warns(events.clone()), |e| on_event.push(e))).unwrap();
    // Events are popped from the end: the machine emits them in reverse.
    let mut expected = events.clone();
    expected.reverse();
    assert_eq!(on_event, expected);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            ("roll back child reference", MtError::NoAccess),
            ("undo node counter", MtError::ConcurrentAccess),
        ]
    );
}
