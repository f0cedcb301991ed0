//! Machines for raw Bigtable requests, used by drivers and tools that speak the store
//! vocabulary directly (`rowkit admin dump`, tests).

use alloc::vec::Vec;

use crate::{Machine, Request, Response, StoreError, Tag, TagAllocator, Timestamp};

/// Sends one unary request once and returns its reply. Never retries: `CheckAndMutateRow` and
/// `ReadModifyWriteRow` must not be retried blindly, and callers that may retry decide so
/// themselves.
#[derive(Debug)]
pub struct Unary {
    request: Option<Request>,
    tag: Tag,
    outcome: Option<Result<Response, StoreError>>,
    done: bool,
}

impl Unary {
    /// A machine that will send `request`.
    pub fn new(request: Request) -> Unary {
        Unary {
            request: Some(request),
            tag: TagAllocator::default().next_tag(),
            outcome: None,
            done: false,
        }
    }
}

impl Machine for Unary {
    type Output = Response;
    type Event = ();
    type Error = StoreError;

    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        _now: Timestamp,
    ) {
        if tag == self.tag && self.outcome.is_none() && !self.done {
            self.outcome = Some(response);
        }
    }

    fn handle_timeout(&mut self, _now: Timestamp) {}

    fn cancel(&mut self, _now: Timestamp) {
        if self.outcome.is_none() && !self.done {
            self.request = None;
            self.outcome = Some(Err(StoreError::new(crate::Code::Cancelled, "cancelled")));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.request.take().map(|r| (self.tag, r))
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        None
    }

    fn poll_event(&mut self) -> Option<()> {
        None
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        None
    }

    fn result(&mut self) -> Option<Result<Response, StoreError>> {
        let outcome = self.outcome.take()?;
        self.done = true;
        Some(outcome)
    }
}

/// Sends one streaming request once and collects every part until the stream ends.
#[derive(Debug)]
pub struct Collect {
    request: Option<Request>,
    tag: Tag,
    parts: Vec<Response>,
    outcome: Option<Result<Vec<Response>, StoreError>>,
    done: bool,
}

impl Collect {
    /// A machine that will send `request` (a streaming one: ReadRows, MutateRows, SampleRowKeys).
    pub fn new(request: Request) -> Collect {
        Collect {
            request: Some(request),
            tag: TagAllocator::default().next_tag(),
            parts: Vec::new(),
            outcome: None,
            done: false,
        }
    }
}

impl Machine for Collect {
    type Output = Vec<Response>;
    type Event = ();
    type Error = StoreError;

    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        _now: Timestamp,
    ) {
        if tag != self.tag || self.outcome.is_some() || self.done {
            return;
        }
        match response {
            Ok(Response::StreamEnd) => self.outcome = Some(Ok(core::mem::take(&mut self.parts))),
            Ok(part) => self.parts.push(part),
            Err(e) => self.outcome = Some(Err(e)),
        }
    }

    fn handle_timeout(&mut self, _now: Timestamp) {}

    fn cancel(&mut self, _now: Timestamp) {
        if self.outcome.is_none() && !self.done {
            self.request = None;
            self.outcome = Some(Err(StoreError::new(crate::Code::Cancelled, "cancelled")));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.request.take().map(|r| (self.tag, r))
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        None
    }

    fn poll_event(&mut self) -> Option<()> {
        None
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        None
    }

    fn result(&mut self) -> Option<Result<Vec<Response>, StoreError>> {
        let outcome = self.outcome.take()?;
        self.done = true;
        Some(outcome)
    }
}
