#![allow(clippy::unwrap_used)]
//! The pool driver (`rowkit_client::PoolDriver`): a machine's outstanding requests run on the
//! store at the same time — proven by a store that answers only once K requests are inside it
//! at once —, and each request's items (parts, `StreamEnd`, errors) reach the machine complete
//! and in order, whatever the interleaving; an abandoned stream frees its worker, and a store
//! that panics answers INTERNAL.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use rowkit_client::{PoolDriver, block_on, run};
use rowkit_codec::model::{ColumnFamily, Timestamp};
use rowkit_statemachines::{
    Code, Machine, MutateRowRequest, Request, Response, SampleRowKeysRequest,
    SampleRowKeysResponse, StoreError, Tag,
};
use rowkit_store::driver::ManualClock;
use rowkit_store::{Reply, Store};

type Item = Result<Response, StoreError>;

/// How long the meeting point waits for the others before it gives up: only so that a driver
/// without concurrency fails the test instead of hanging it.
const GIVE_UP: Duration = Duration::from_secs(60);

/// The scripted answers, by the request's table:
/// - SampleRowKeys on `parts:N`: N parts ([`part`]), then the end; on `fail:N`: N parts, then
///   [`scripted_failure`]; on `panic`: the store panics;
/// - MutateRow on `meet`: answered once `meet` requests are inside the store at once; on
///   `refused`: `PERMISSION_DENIED`.
struct Scripted {
    /// Requests on `meet` inside the store now, and the most seen at once.
    inside: Mutex<(usize, usize)>,
    arrived: Condvar,
    meet: usize,
}

impl Scripted {
    fn new(meet: usize) -> Scripted {
        Scripted {
            inside: Mutex::new((0, 0)),
            arrived: Condvar::new(),
            meet,
        }
    }

    fn most_inside(&self) -> usize {
        self.inside.lock().unwrap().1
    }

    /// Waits until `meet` requests are inside at once.
    fn meeting(&self) -> Result<Reply<'_>, StoreError> {
        let mut inside = self.inside.lock().unwrap();
        inside.0 += 1;
        inside.1 = inside.1.max(inside.0);
        self.arrived.notify_all();
        let (mut inside, _) = self
            .arrived
            .wait_timeout_while(inside, GIVE_UP, |(_, most)| *most < self.meet)
            .unwrap();
        inside.0 -= 1;
        if inside.1 < self.meet {
            return Err(StoreError::new(
                Code::DeadlineExceeded,
                format!(
                    "only {} of {} requests were inside at once",
                    inside.1, self.meet
                ),
            ));
        }
        Ok(Reply::Unary(Response::MutateRow))
    }
}

/// Part `i` of a scripted stream.
fn part(i: usize) -> Response {
    Response::SampleRowKeysPart(SampleRowKeysResponse {
        row_key: vec![u8::try_from(i % 256).unwrap()],
        offset_bytes: i64::try_from(i).unwrap(),
    })
}

fn scripted_failure() -> StoreError {
    StoreError::new(Code::Unavailable, "scripted failure")
}

fn count(table: &str, prefix: &str) -> Option<usize> {
    table.strip_prefix(prefix).map(|n| n.parse().unwrap())
}

impl Store for Scripted {
    fn execute(&self, request: Request, _now: Timestamp) -> Result<Reply<'_>, StoreError> {
        match request {
            Request::SampleRowKeys(r) if r.table == "panic" => panic!("scripted panic"),
            Request::SampleRowKeys(r) => {
                if let Some(n) = count(&r.table, "parts:") {
                    return Ok(Reply::Stream(Box::new((0..n).map(|i| Ok(part(i))))));
                }
                let n = count(&r.table, "fail:").unwrap();
                let parts = (0..n).map(|i| Ok(part(i)));
                Ok(Reply::Stream(Box::new(
                    parts.chain(std::iter::once(Err(scripted_failure()))),
                )))
            }
            Request::MutateRow(r) if r.table == "meet" => self.meeting(),
            Request::MutateRow(r) if r.table == "refused" => {
                Err(StoreError::new(Code::PermissionDenied, "scripted refusal"))
            }
            other => panic!("not scripted: {other:?}"),
        }
    }
    fn create_table(&self, _: &str, _: &[ColumnFamily]) -> Result<(), StoreError> {
        Err(StoreError::new(Code::Unimplemented, "not scripted"))
    }
    fn delete_table(&self, _: &str) -> Result<(), StoreError> {
        Err(StoreError::new(Code::Unimplemented, "not scripted"))
    }
    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    fn families(&self, _: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        Err(StoreError::new(Code::Unimplemented, "not scripted"))
    }
    fn gc(&self, _: &str, _: Timestamp) -> Result<u64, StoreError> {
        Ok(0)
    }
}

fn stream(table: &str) -> Request {
    Request::SampleRowKeys(SampleRowKeysRequest {
        table: table.into(),
        app_profile_id: String::new(),
    })
}

fn write(table: &str) -> Request {
    Request::MutateRow(MutateRowRequest {
        table: table.into(),
        ..MutateRowRequest::default()
    })
}

/// A machine that sends all its requests at once and ends when each has had its last item
/// (a unary request's one item, a stream's `StreamEnd` or error): every request's items, in
/// the order the machine was given them.
struct Fan {
    unsent: VecDeque<(Tag, Request)>,
    unary: Vec<bool>,
    items: Vec<Vec<Item>>,
    open: usize,
}

impl Fan {
    fn new(requests: Vec<Request>) -> Fan {
        Fan {
            unary: requests
                .iter()
                .map(|r| matches!(r, Request::MutateRow(_)))
                .collect(),
            items: requests.iter().map(|_| Vec::new()).collect(),
            open: requests.len(),
            unsent: (0u64..).map(Tag).zip(requests).collect(),
        }
    }
}

impl Machine for Fan {
    type Output = Vec<Vec<Item>>;
    type Event = ();
    type Error = StoreError;

    fn handle_response(&mut self, tag: Tag, item: Item, _now: Timestamp) {
        let i = usize::try_from(tag.0).unwrap();
        let last = self.unary[i] || matches!(item, Err(_) | Ok(Response::StreamEnd));
        self.items[i].push(item);
        if last {
            self.open -= 1;
        }
    }
    fn handle_timeout(&mut self, _: Timestamp) {}
    fn cancel(&mut self, _: Timestamp) {}
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.unsent.pop_front()
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
    fn result(&mut self) -> Option<Result<Self::Output, StoreError>> {
        (self.open == 0).then(|| Ok(std::mem::take(&mut self.items)))
    }
}

/// Runs `requests` as one machine on a pool of `workers` over `store`.
fn fan_out(store: &Scripted, workers: usize, requests: Vec<Request>) -> Vec<Vec<Item>> {
    let clock = ManualClock::new(Timestamp::from_secs(1_700_000_000));
    PoolDriver::scope(store, &clock, workers, |driver| {
        block_on(run(driver, Fan::new(requests), |()| {})).unwrap()
    })
}

/// The items a `parts:N` stream must give.
fn parts_then_end(n: usize) -> Vec<Item> {
    (0..n)
        .map(|i| Ok(part(i)))
        .chain([Ok(Response::StreamEnd)])
        .collect()
}

#[test]
fn a_machines_requests_are_inside_the_store_at_once() {
    const K: usize = 8;
    let store = Scripted::new(K);
    let items = fan_out(&store, K, (0..K).map(|_| write("meet")).collect());
    assert_eq!(store.most_inside(), K);
    assert_eq!(items, vec![vec![Ok(Response::MutateRow)]; K]);
}

#[test]
fn requests_beyond_the_workers_wait_for_a_free_one() {
    // Four workers meet; the four writes queued behind them then run as well.
    let store = Scripted::new(4);
    let items = fan_out(&store, 4, (0..8).map(|_| write("meet")).collect());
    assert_eq!(items, vec![vec![Ok(Response::MutateRow)]; 8]);
}

#[test]
fn every_requests_items_arrive_complete_and_in_order() {
    let store = Scripted::new(1);
    // Longer streams than the channel holds, so workers wait for the machine while the others'
    // answers interleave with theirs.
    let requests = vec![
        stream("parts:100"),
        write("refused"),
        stream("fail:30"),
        stream("parts:0"),
        stream("parts:57"),
        stream("fail:0"),
        write("meet"),
    ];
    let items = fan_out(&store, 3, requests);
    let failed = |n: usize| -> Vec<Item> {
        (0..n)
            .map(|i| Ok(part(i)))
            .chain([Err(scripted_failure())])
            .collect()
    };
    let refused = StoreError::new(Code::PermissionDenied, "scripted refusal");
    let expected = vec![
        parts_then_end(100),
        vec![Err(refused)],
        failed(30),
        parts_then_end(0),
        parts_then_end(57),
        failed(0),
        vec![Ok(Response::MutateRow)],
    ];
    assert_eq!(items, expected);
}

#[test]
fn a_dropped_stream_frees_its_worker() {
    let store = Scripted::new(1);
    let clock = ManualClock::new(Timestamp::from_secs(1_700_000_000));
    let items = PoolDriver::scope(&store, &clock, 1, |driver| {
        use futures_util::StreamExt;
        use rowkit_client::Driver;
        // The only worker fills the channel and waits for room; the stream is dropped after
        // its first part.
        let mut long = Box::pin(driver.call(stream("parts:100000")));
        assert_eq!(block_on(long.next()), Some(Ok(part(0))));
        drop(long);
        block_on(run(driver, Fan::new(vec![stream("parts:3")]), |()| {})).unwrap()
    });
    assert_eq!(items, vec![parts_then_end(3)]);
}

#[test]
fn a_store_that_panics_answers_internal_and_the_worker_stays() {
    let store = Scripted::new(1);
    let items = fan_out(&store, 1, vec![stream("panic"), stream("parts:2")]);
    assert_eq!(items.len(), 2);
    let Err(e) = &items[0][0] else {
        panic!("the panic was answered {:?}", items[0]);
    };
    assert_eq!(e.code, Code::Internal);
    assert_eq!(items[1], parts_then_end(2));
}
