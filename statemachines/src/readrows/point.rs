//! The point-read machine: one [`ReadRowRequest`], retried like a one-key ReadRows.

use alloc::sync::Arc;

use rowkit_codec::model::Row;

use crate::raw::{RetryRule, Retrying, Run};
use crate::{Code, ReadRowRequest, Request, Response, RetryPolicy, StoreError, Timestamp};

/// Reads one row ([`Request::ReadRow`], answered by [`Response::Row`]), retrying the
/// retryable failures (`UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`) with the same request
/// under a new tag after a seeded back-off: what [`ReadRows`](super::ReadRows) does for a
/// one-key read that has not delivered its row, with the same back-off schedule. Any other
/// error, or a reply of another kind (`INTERNAL`), ends the read; when the deadline leaves no
/// room for another attempt, it fails with the last error.
///
/// ```
/// use rowkit_statemachines::readrows::ReadRow;
/// use rowkit_statemachines::{Machine, ReadRowRequest, Response, RetryPolicy, Timestamp};
///
/// let mut m = ReadRow::new(ReadRowRequest::default(), Timestamp(0), 7, RetryPolicy::default());
/// let (tag, _request) = m.poll_request().unwrap();
/// m.handle_response(tag, Ok(Response::Row(None)), Timestamp(1));
/// assert_eq!(m.result(), Some(Ok(None)));
/// ```
pub type ReadRow = Retrying<ReadRowRule>;

/// The [`RetryRule`] of [`ReadRow`]: the request, kept to send again.
#[derive(Debug)]
pub struct ReadRowRule {
    request: ReadRowRequest,
}

impl ReadRow {
    /// A point read of `request` started at `now`; `seed` drives the retry jitter.
    pub fn new(request: ReadRowRequest, now: Timestamp, seed: u64, policy: RetryPolicy) -> Self {
        let first = Request::ReadRow(request.clone());
        Retrying::start(ReadRowRule { request }, first, now, seed, policy)
    }
}

impl RetryRule for ReadRowRule {
    type Output = Option<Arc<Row>>;
    type Event = ();

    fn on_part(&mut self, part: Response, _now: Timestamp, run: &mut Run<Self::Output>) {
        run.attempt_ended();
        match part {
            Response::Row(row) => run.finish(Ok(row)),
            other => run.finish(Err(StoreError::new(
                Code::Internal,
                alloc::format!("ReadRow got a {other:?} response"),
            ))),
        }
    }

    fn on_failure(&mut self, error: StoreError, now: Timestamp, run: &mut Run<Self::Output>) {
        if !error.code.is_retryable() {
            return run.finish(Err(error));
        }
        let request = Request::ReadRow(self.request.clone());
        if let Err(e) = run.retry(error, request, now) {
            run.finish(self.gave_up(e));
        }
    }

    fn gave_up(&mut self, last_error: StoreError) -> Result<Self::Output, StoreError> {
        Err(last_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Machine;
    use alloc::vec::Vec;

    fn request() -> ReadRowRequest {
        ReadRowRequest {
            table: "t".into(),
            row_key: b"k".to_vec(),
            ..Default::default()
        }
    }

    fn row() -> Arc<Row> {
        Arc::new(Row {
            key: b"k".to_vec(),
            cells: Vec::new(),
        })
    }

    #[test]
    fn a_retryable_error_sends_the_same_request_again_after_the_backoff() {
        let mut m = ReadRow::new(request(), Timestamp(0), 7, RetryPolicy::default());
        let (first, sent) = m.poll_request().unwrap();
        assert_eq!(sent, Request::ReadRow(request()));
        let unavailable = StoreError::new(Code::Unavailable, "down");
        m.handle_response(first, Err(unavailable), Timestamp(1));
        assert!(m.poll_request().is_none(), "it backs off first");
        let at = m.poll_timeout().unwrap();
        m.handle_timeout(at);
        let (second, again) = m.poll_request().unwrap();
        assert_ne!(first, second);
        assert_eq!(again, Request::ReadRow(request()));
        m.handle_response(first, Ok(Response::Row(None)), at);
        assert_eq!(m.result(), None, "the first attempt's late answer is stale");
        m.handle_response(second, Ok(Response::Row(Some(row()))), at);
        assert_eq!(m.result(), Some(Ok(Some(row()))));
    }

    #[test]
    fn a_permanent_error_or_a_wrong_reply_ends_the_read() {
        let mut m = ReadRow::new(request(), Timestamp(0), 7, RetryPolicy::default());
        let (tag, _) = m.poll_request().unwrap();
        let not_found = StoreError::new(Code::NotFound, "no table");
        m.handle_response(tag, Err(not_found.clone()), Timestamp(1));
        assert_eq!(m.result(), Some(Err(not_found)));

        let mut m = ReadRow::new(request(), Timestamp(0), 7, RetryPolicy::default());
        let (tag, _) = m.poll_request().unwrap();
        m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(1));
        assert!(matches!(m.result(), Some(Err(e)) if e.code == Code::Internal));
    }

    /// The back-off a point read waits is the one a one-key ReadRows with the same seed waits:
    /// moving a read onto the point read leaves every seeded schedule where it was.
    #[test]
    fn it_backs_off_as_a_one_key_read_rows_does() {
        let policy = RetryPolicy::default();
        let mut point = ReadRow::new(request(), Timestamp(0), 42, policy);
        let mut rows =
            super::super::ReadRows::new(request().into_read_rows(), Timestamp(0), 42, policy);
        let unavailable = StoreError::new(Code::Unavailable, "down");
        for now in [Timestamp(10), Timestamp(20)] {
            let (p, _) = point.poll_request().unwrap();
            let (r, _) = rows.poll_request().unwrap();
            point.handle_response(p, Err(unavailable.clone()), now);
            rows.handle_response(r, Err(unavailable.clone()), now);
            let at = point.poll_timeout().unwrap();
            assert_eq!(Some(at), rows.poll_timeout());
            point.handle_timeout(at);
            rows.handle_timeout(at);
        }
    }
}
