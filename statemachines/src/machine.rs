use crate::{Request, Response, StoreError, Timestamp};

/// Identifies one outstanding request of a machine. Tags are unique within a machine for its
/// whole life, so a response to an abandoned request can be recognised and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(pub u64);

/// Hands out fresh [`Tag`]s in increasing order.
#[derive(Clone, Debug, Default)]
pub struct TagAllocator {
    next: u64,
}

impl TagAllocator {
    /// The next unused tag.
    pub fn next_tag(&mut self) -> Tag {
        let tag = Tag(self.next);
        self.next += 1;
        tag
    }
}

/// The protocol every rowkit operation follows (`spec/sans-io.md` 3).
///
/// After every input (`handle_response`, `handle_timeout`, `cancel`), a driver drains the
/// outputs in this order: `poll_request`, `poll_abort`, `poll_event`, `poll_timeout`, `result`.
/// A machine with no request to send, no timeout and no result is stalled; drivers report that
/// as an internal error rather than waiting forever.
pub trait Machine {
    /// What the operation produces.
    type Output;
    /// Events emitted along the way (rows, progress, change events).
    type Event;
    /// Why the operation failed.
    type Error;

    /// Feeds the reply to (or one part of the stream answering) the request sent under `tag`.
    fn handle_response(&mut self, tag: Tag, response: Result<Response, StoreError>, now: Timestamp);
    /// Tells the machine that time has reached `now` (at or after its `poll_timeout`).
    fn handle_timeout(&mut self, now: Timestamp);
    /// Asks the machine to stop: it abandons outstanding requests and finishes with an error.
    fn cancel(&mut self, now: Timestamp);
    /// The next request to send.
    fn poll_request(&mut self) -> Option<(Tag, Request)>;
    /// A request whose responses the driver should stop delivering (and cancel if it can).
    fn poll_abort(&mut self) -> Option<Tag>;
    /// The next event.
    fn poll_event(&mut self) -> Option<Self::Event>;
    /// The earliest instant at which the machine wants `handle_timeout`.
    fn poll_timeout(&self) -> Option<Timestamp>;
    /// The outcome, once; `None` before the machine is done and after it was taken.
    fn result(&mut self) -> Option<Result<Self::Output, Self::Error>>;
}

/// A boxed machine is a machine (a driver or wrapper that takes `impl Machine` also takes a
/// `Box<dyn Machine<…>>`, e.g. the fault simulator's type-erased operations).
impl<M: Machine + ?Sized> Machine for alloc::boxed::Box<M> {
    type Output = M::Output;
    type Event = M::Event;
    type Error = M::Error;

    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        now: Timestamp,
    ) {
        (**self).handle_response(tag, response, now);
    }
    fn handle_timeout(&mut self, now: Timestamp) {
        (**self).handle_timeout(now);
    }
    fn cancel(&mut self, now: Timestamp) {
        (**self).cancel(now);
    }
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        (**self).poll_request()
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        (**self).poll_abort()
    }
    fn poll_event(&mut self) -> Option<M::Event> {
        (**self).poll_event()
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        (**self).poll_timeout()
    }
    fn result(&mut self) -> Option<Result<M::Output, M::Error>> {
        (**self).result()
    }
}
