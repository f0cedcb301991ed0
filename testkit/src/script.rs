//! A scripted test driver: feed a machine exact responses, errors and clock jumps, and check the
//! requests it sends (`spec/sans-io.md` 5.1).
//!
//! [`Script`] owns a machine and a manual clock. After every input it drains the machine's
//! outputs in protocol order (requests, aborts, events, result), so a test only states what it
//! expects: the next request and the tag it was sent under (compared exactly), the timeout, the
//! events, the result. Expectation failures panic with both sides shown, like `assert_eq!`:
//! this module is for tests (the machines' own and any other crate's).
//!
//! ```
//! use rowkit_statemachines::readrows::ReadRows;
//! use rowkit_testkit::script::Script;
//! use rowkit_statemachines::{Code, ReadRowsRequest, Request, RetryPolicy, StoreError, Tag, Timestamp};
//!
//! let request = ReadRowsRequest { table: "t".into(), ..ReadRowsRequest::default() };
//! let mut s = Script::new(ReadRows::new(request.clone(), Timestamp(0), 1, RetryPolicy::default()), Timestamp(0));
//! s.expect_request(Tag(0), &Request::ReadRows(request.clone()));
//! s.fail(Tag(0), StoreError::new(Code::Unavailable, "down"));
//! s.fire_timeout();
//! s.expect_request(Tag(1), &Request::ReadRows(request));
//! s.end_stream(Tag(1));
//! assert_eq!(s.take_result(), Some(Ok(0)));
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::sync::Arc;

use rowkit_codec::model::{Row, RowSet};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::{
    Code, Machine, ReadRowsRequest, Request, Response, StoreError, Tag, Timestamp,
};
use rowkit_store::{MemoryStore, Reply, Store};

/// One step of a script, for table-driven tests (see [`Script::run`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The next request sent must be this one, under this tag.
    ExpectRequest(Tag, Request),
    /// No request may be waiting.
    ExpectNoRequest,
    /// `poll_timeout` must return this.
    ExpectTimeout(Option<Timestamp>),
    /// Feed `Ok(response)` for `tag`.
    Respond(Tag, Response),
    /// Feed `Err(error)` for `tag`.
    Fail(Tag, StoreError),
    /// Feed `Ok(Response::StreamEnd)` for `tag`.
    EndStream(Tag),
    /// Move the clock by this many microseconds (negative moves it back).
    Advance(i64),
    /// Set the clock (may go backwards, to test clamping).
    SetClock(Timestamp),
    /// Call `handle_timeout` at the current time.
    Timeout,
    /// Move the clock to `poll_timeout` (if later) and call `handle_timeout`.
    FireTimeout,
    /// Call `cancel` at the current time.
    Cancel,
}

/// A machine under test with a manual clock (see the module doc).
#[derive(Debug)]
pub struct Script<M: Machine> {
    machine: M,
    now: Timestamp,
    sent: VecDeque<(Tag, Request)>,
    aborted: Vec<Tag>,
    events: Vec<M::Event>,
    result: Option<Result<M::Output, M::Error>>,
}

impl<M: Machine> Script<M> {
    /// Starts driving `machine` (created at `now`) and drains its first outputs.
    pub fn new(machine: M, now: Timestamp) -> Self {
        let mut script = Script {
            machine,
            now,
            sent: VecDeque::new(),
            aborted: Vec::new(),
            events: Vec::new(),
            result: None,
        };
        script.drain();
        script
    }

    /// The clock.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The machine, for its getters.
    pub fn machine(&self) -> &M {
        &self.machine
    }

    /// The machine, to feed it directly (call [`drain`](Self::drain) afterwards).
    pub fn machine_mut(&mut self) -> &mut M {
        &mut self.machine
    }

    /// Collects the machine's outputs in protocol order: requests, aborts, events, result.
    pub fn drain(&mut self) {
        while let Some(sent) = self.machine.poll_request() {
            self.sent.push_back(sent);
        }
        while let Some(tag) = self.machine.poll_abort() {
            self.aborted.push(tag);
        }
        while let Some(event) = self.machine.poll_event() {
            self.events.push(event);
        }
        if let Some(result) = self.machine.result() {
            assert!(
                self.result.is_none(),
                "the machine produced a second result"
            );
            self.result = Some(result);
        }
    }

    /// The next request sent (oldest first), if any.
    pub fn next_request(&mut self) -> Option<(Tag, Request)> {
        self.sent.pop_front()
    }

    /// Takes the next request sent and checks it and its tag exactly.
    ///
    /// # Panics
    /// If no request is waiting or it differs.
    pub fn expect_request(&mut self, tag: Tag, request: &Request) {
        match self.sent.pop_front() {
            Some((t, r)) => {
                assert_eq!((t, &r), (tag, request), "unexpected request");
            }
            None => panic!("expected request {tag:?} {request:?}, none was sent"),
        }
    }

    /// Checks that no request is waiting.
    ///
    /// # Panics
    /// If one is.
    pub fn expect_no_request(&self) {
        assert!(self.sent.is_empty(), "unexpected requests: {:?}", self.sent);
    }

    /// Checks `poll_timeout`.
    ///
    /// # Panics
    /// If it differs.
    pub fn expect_timeout(&self, expected: Option<Timestamp>) {
        assert_eq!(self.machine.poll_timeout(), expected, "poll_timeout");
    }

    /// Feeds `Ok(response)` for `tag` at the current time.
    pub fn respond(&mut self, tag: Tag, response: Response) {
        self.machine.handle_response(tag, Ok(response), self.now);
        self.drain();
    }

    /// Feeds `Err(error)` for `tag` at the current time.
    pub fn fail(&mut self, tag: Tag, error: StoreError) {
        self.machine.handle_response(tag, Err(error), self.now);
        self.drain();
    }

    /// Ends the stream of `tag` with OK at the current time.
    pub fn end_stream(&mut self, tag: Tag) {
        self.respond(tag, Response::StreamEnd);
    }

    /// Moves the clock by `micros` (negative moves it back). Feeds nothing.
    pub fn advance(&mut self, micros: i64) {
        self.now = self.now.saturating_add_micros(micros);
    }

    /// Sets the clock (it may go backwards). Feeds nothing.
    pub fn set_clock(&mut self, now: Timestamp) {
        self.now = now;
    }

    /// Calls `handle_timeout` at the current time.
    pub fn timeout(&mut self) {
        self.machine.handle_timeout(self.now);
        self.drain();
    }

    /// Moves the clock to the machine's `poll_timeout` (if later) and calls `handle_timeout`;
    /// returns the new time.
    ///
    /// # Panics
    /// If the machine wants no timeout.
    pub fn fire_timeout(&mut self) -> Timestamp {
        let Some(at) = self.machine.poll_timeout() else {
            panic!("fire_timeout: the machine has no timeout");
        };
        self.now = self.now.max(at);
        self.timeout();
        self.now
    }

    /// Calls `cancel` at the current time.
    pub fn cancel(&mut self) {
        self.machine.cancel(self.now);
        self.drain();
    }

    /// Takes the events collected so far.
    pub fn take_events(&mut self) -> Vec<M::Event> {
        std::mem::take(&mut self.events)
    }

    /// The tags the machine aborted, in order.
    pub fn aborted(&self) -> &[Tag] {
        &self.aborted
    }

    /// The result, if the machine finished.
    pub fn result(&self) -> Option<&Result<M::Output, M::Error>> {
        self.result.as_ref()
    }

    /// Takes the result, if the machine finished.
    pub fn take_result(&mut self) -> Option<Result<M::Output, M::Error>> {
        self.result.take()
    }

    /// Checks that the machine has not finished.
    ///
    /// # Panics
    /// If it has.
    pub fn expect_running(&self)
    where
        M::Output: Debug,
        M::Error: Debug,
    {
        assert!(
            self.result.is_none(),
            "expected the machine to be running, it finished with {:?}",
            self.result
        );
    }

    /// Runs `steps` in order.
    ///
    /// # Panics
    /// On the first expectation that fails.
    pub fn run(&mut self, steps: impl IntoIterator<Item = Step>) {
        for step in steps {
            match step {
                Step::ExpectRequest(tag, request) => self.expect_request(tag, &request),
                Step::ExpectNoRequest => self.expect_no_request(),
                Step::ExpectTimeout(t) => self.expect_timeout(t),
                Step::Respond(tag, response) => self.respond(tag, response),
                Step::Fail(tag, error) => self.fail(tag, error),
                Step::EndStream(tag) => self.end_stream(tag),
                Step::Advance(micros) => self.advance(micros),
                Step::SetClock(now) => self.set_clock(now),
                Step::Timeout => self.timeout(),
                Step::FireTimeout => {
                    self.fire_timeout();
                }
                Step::Cancel => self.cancel(),
            }
        }
    }
}

/// Every response `store` gives `request` at `now`, as a machine receives them: a unary reply,
/// or a stream's parts ended by `StreamEnd` (an error part ends it instead), or the request's
/// error. For tests that drive machines against a real store by hand (fault injection between
/// requests, crashes after the k-th response).
pub fn store_responses(
    store: &(impl Store + ?Sized),
    request: Request,
    now: Timestamp,
) -> Vec<Result<Response, StoreError>> {
    match store.execute_local(request, now) {
        Ok(Reply::Unary(r)) => vec![Ok(r)],
        Ok(Reply::Stream(parts)) => {
            let mut out: Vec<_> = parts.collect();
            if out.iter().all(Result::is_ok) {
                out.push(Ok(Response::StreamEnd));
            }
            out
        }
        Err(e) => vec![Err(e)],
    }
}

/// A [`MemoryStore`] and a manual clock, for tests that drive machines against real Bigtable
/// semantics by hand (a migrator beside writers, crashes after the k-th response): each request
/// is executed as it leaves, the clock moving [`StoreWorld::TICK_US`] per request, and a
/// machine's timer fires by moving the clock to it when the machine waits on nothing else.
#[derive(Debug)]
pub struct StoreWorld {
    /// The store.
    pub store: MemoryStore,
    /// The clock.
    pub now: Timestamp,
    /// The seed of the last operation started ([`StoreWorld::start`] counts up from it).
    pub seed: u64,
}

impl StoreWorld {
    /// How far the clock moves per request executed: requests apply at distinct instants.
    pub const TICK_US: i64 = 10_000;
    /// An operation's deadline from its start ([`StoreWorld::start`]): a day, beyond any test.
    pub const DEADLINE_US: i64 = 86_400_000_000;

    /// `store` with the clock at `now`.
    pub fn new(store: MemoryStore, now: Timestamp) -> StoreWorld {
        StoreWorld {
            store,
            now,
            seed: 0,
        }
    }

    /// The start of a new operation: now, the next seed, a day's deadline.
    pub fn start(&mut self) -> Start {
        self.seed += 1;
        Start::within(self.now, self.seed, Self::DEADLINE_US)
    }

    /// Moves the clock by one request's [`StoreWorld::TICK_US`].
    pub fn tick(&mut self) {
        self.now = self.now.saturating_add_micros(Self::TICK_US);
    }

    /// Executes `request` (sent by `m` under `tag`) at the next tick and feeds `m` every
    /// response part; returns how many parts it fed.
    pub fn execute<M: Machine>(&mut self, m: &mut M, tag: Tag, request: Request) -> usize {
        self.tick();
        let parts = store_responses(&self.store, request, self.now);
        let fed = parts.len();
        for part in parts {
            m.handle_response(tag, part, self.now);
        }
        fed
    }

    /// Moves the clock to `m`'s timer (if later) and fires it.
    ///
    /// # Panics
    /// If `m` waits on nothing (neither a request nor a timer: it would never end).
    pub fn fire_timer<M: Machine>(&mut self, m: &mut M) {
        let at = m.poll_timeout().expect("the machine waits on nothing");
        self.now = self.now.max(at);
        m.handle_timeout(self.now);
    }

    /// One step of `m`: its next request executed ([`StoreWorld::execute`]), or, with none
    /// waiting, its timer fired. Returns the response parts fed (0 for the timer).
    pub fn step<M: Machine>(&mut self, m: &mut M) -> usize {
        match m.poll_request() {
            Some((tag, request)) => self.execute(m, tag, request),
            None => {
                self.fire_timer(m);
                0
            }
        }
    }

    /// Runs `m` to its end, its events dropped.
    pub fn run<M: Machine>(&mut self, mut m: M) -> Result<M::Output, M::Error> {
        loop {
            while m.poll_event().is_some() {}
            if let Some(result) = m.result() {
                return result;
            }
            self.step(&mut m);
        }
    }

    /// Runs `m` to its end, failing the first send of each request `faulted` picks (a
    /// marker CAS, say), alternately not applied (`Unavailable`) and applied with its response
    /// lost (`DeadlineExceeded`); the resend of the same request goes through. Returns the
    /// result, the sends failed and the resends seen.
    pub fn run_failing_first_sends<M: Machine>(
        &mut self,
        mut m: M,
        faulted: impl Fn(&Request) -> bool,
    ) -> (Result<M::Output, M::Error>, u32, u32) {
        let (mut failed, mut resent) = (0u32, 0u32);
        let mut last_failed: Option<Request> = None;
        loop {
            while m.poll_event().is_some() {}
            if let Some(result) = m.result() {
                return (result, failed, resent);
            }
            let Some((tag, request)) = m.poll_request() else {
                self.fire_timer(&mut m);
                continue;
            };
            if !faulted(&request) {
                self.execute(&mut m, tag, request);
            } else if last_failed.as_ref() == Some(&request) {
                resent += 1;
                self.execute(&mut m, tag, request);
            } else {
                failed += 1;
                last_failed = Some(request.clone());
                self.tick();
                let error = if failed % 2 == 1 {
                    StoreError::new(Code::Unavailable, "connection reset")
                } else {
                    let _applied = store_responses(&self.store, request, self.now);
                    StoreError::new(Code::DeadlineExceeded, "reply lost")
                };
                m.handle_response(tag, Err(error), self.now);
            }
        }
    }

    /// Every row of `table` at the current time, by row key.
    pub fn snapshot(&self, table: &str) -> BTreeMap<Vec<u8>, Row> {
        let request = Request::ReadRows(ReadRowsRequest {
            table: table.into(),
            rows: RowSet::all(),
            ..Default::default()
        });
        let mut rows = BTreeMap::new();
        for part in store_responses(&self.store, request, self.now) {
            if let Ok(Response::Rows(chunk)) = part {
                for r in chunk {
                    let r = Arc::unwrap_or_clone(r);
                    rows.insert(r.key.clone(), r);
                }
            }
        }
        rows
    }
}
