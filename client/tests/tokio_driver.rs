#![allow(clippy::unwrap_used)]
//! The Tokio driver ([`TokioDriver`] + [`rowkit_client::run`], the one driving loop) against
//! the emulator: requests in flight concurrently, aborts, timeouts, events into a channel with
//! cancellation when its receiver is dropped ([`rowkit_client::run_until`]), statuses, and
//! resume of a ReadRows stream cut by a loopback proxy that drops the TCP connection
//! mid-stream.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rowkit_bigtable::{BigtableConnection, Target};
use rowkit_client::Driver;
use rowkit_client::{RunError, TokioDriver, run, run_until};
use rowkit_codec::model::{ColumnFamily, Mutation, Row, RowRange, RowSet, Timestamp};
use rowkit_store::driver::{Clock, ManualClock, SystemClock};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    Code, Machine, MutateRowRequest, MutateRowsEntry, MutateRowsRequest, ReadRowsRequest, Request,
    Response, RetryPolicy, StoreError, Tag,
};
use rowkit_testkit::emulator::Emulator;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TABLE: &str = "big";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Wall-clock now, the machines' `now`.
fn now() -> Timestamp {
    SystemClock.now()
}

/// A machine run on loan, so its counters (retries, aborted responses) can be read after
/// [`run`], which takes the machine by value.
struct Borrowed<'a, M>(&'a mut M);

impl<M: Machine> Machine for Borrowed<'_, M> {
    type Output = M::Output;
    type Event = M::Event;
    type Error = M::Error;
    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        now: Timestamp,
    ) {
        self.0.handle_response(tag, response, now);
    }
    fn handle_timeout(&mut self, now: Timestamp) {
        self.0.handle_timeout(now);
    }
    fn cancel(&mut self, now: Timestamp) {
        self.0.cancel(now);
    }
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.0.poll_request()
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        self.0.poll_abort()
    }
    fn poll_event(&mut self) -> Option<M::Event> {
        self.0.poll_event()
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.0.poll_timeout()
    }
    fn result(&mut self) -> Option<Result<M::Output, M::Error>> {
        self.0.result()
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("row{i:06}").into_bytes()
}

/// A table of `rows` rows with one `value_len`-byte cell each, written with MutateRows.
async fn fill(conn: &TokioDriver, rows: usize, value_len: usize) {
    conn.connection()
        .create_table(TABLE, &[ColumnFamily::new("cf")])
        .await
        .unwrap();
    for chunk in (0..rows).collect::<Vec<_>>().chunks(500) {
        let entries = chunk
            .iter()
            .map(|&i| MutateRowsEntry {
                row_key: key(i),
                mutations: vec![Mutation::SetCell {
                    family: "cf".into(),
                    qualifier: b"q".to_vec(),
                    timestamp: Timestamp::from_millis(1),
                    value: vec![b'a' + (i % 26) as u8; value_len],
                }],
            })
            .collect();
        let req = Request::MutateRows(MutateRowsRequest {
            table: TABLE.into(),
            entries,
            ..Default::default()
        });
        let parts = run(conn, rowkit_statemachines::raw::Collect::new(req), |_| {})
            .await
            .unwrap();
        for p in parts {
            if let Response::MutateRowsPart(p) = p {
                assert!(p.entries.iter().all(|e| e.result.is_ok()));
            }
        }
    }
}

fn read_all() -> ReadRowsRequest {
    ReadRowsRequest {
        table: TABLE.into(),
        rows: RowSet::all(),
        ..Default::default()
    }
}

/// A loopback TCP proxy to `upstream` that cuts the first `cuts` connections (both directions)
/// once `cut_after` bytes have come back from the server on them.
struct CuttingProxy {
    addr: String,
    cut: Arc<AtomicU64>,
}

async fn cutting_proxy(upstream: String, cut_after: u64, cuts: u64) -> CuttingProxy {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let cut = Arc::new(AtomicU64::new(0));
    let done = cut.clone();
    tokio::spawn(async move {
        let mut n = 0u64;
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let server = tokio::net::TcpStream::connect(&upstream).await.unwrap();
            let cutting = n < cuts;
            n += 1;
            let done = done.clone();
            tokio::spawn(async move {
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut cr, &mut sw).await;
                });
                let mut seen = 0u64;
                let mut buf = vec![0; 16 * 1024];
                while let Ok(k) = sr.read(&mut buf).await {
                    if k == 0 {
                        break;
                    }
                    if cutting && seen + k as u64 > cut_after {
                        // Drop both halves mid-stream: the client sees a reset connection.
                        done.fetch_add(1, Ordering::SeqCst);
                        up.abort();
                        return;
                    }
                    seen += k as u64;
                    if cw.write_all(&buf[..k]).await.is_err() {
                        break;
                    }
                }
                up.abort();
            });
        }
    });
    CuttingProxy { addr, cut }
}

/// The fault test: the connection carrying a large ReadRows stream is dropped twice in the
/// middle; the ReadRows machine, run by the Tokio driver, resumes from the merger's resume key
/// and delivers every row exactly once, in order.
#[test]
fn read_rows_resumes_after_the_connection_drops_mid_stream() {
    let Some(emu) = Emulator::shared_or_skip("read_rows_resumes_after_the_connection_drops") else {
        return;
    };
    const ROWS: usize = 3000;
    let rt = runtime();
    rt.block_on(async {
        let target = emu.fresh_target();
        let direct = TokioDriver::new(
            BigtableConnection::connect(target.clone(), None)
                .await
                .unwrap(),
        );
        fill(&direct, ROWS, 1024).await;
        // ~3 MiB of responses; cut after 1 MiB on the first two connections.
        let proxy = cutting_proxy(emu.host().to_string(), 1 << 20, 2).await;
        let via_proxy = TokioDriver::new(
            BigtableConnection::connect(
                Target::emulator(proxy.addr.clone(), &target.project, &target.instance),
                None,
            )
            .await
            .unwrap(),
        );
        let policy = RetryPolicy {
            initial_backoff: 1_000,
            ..RetryPolicy::default()
        };
        let mut machine = ReadRows::new(read_all(), now(), 42, policy);
        let mut keys = Vec::new();
        let n = run(&via_proxy, Borrowed(&mut machine), |row: Row| {
            keys.push(row.key)
        })
        .await
        .unwrap();
        assert_eq!(
            proxy.cut.load(Ordering::SeqCst),
            2,
            "the proxy cut both connections"
        );
        assert!(machine.retries() >= 2, "retries: {}", machine.retries());
        assert_eq!(n, ROWS as u64);
        let expected: Vec<Vec<u8>> = (0..ROWS).map(key).collect();
        assert_eq!(keys.len(), ROWS, "every row exactly once");
        assert_eq!(keys, expected, "in order, no duplicates");
    });
}

/// A test machine: sends all its requests at once, records the order of responses per tag,
/// aborts `abort_on_first_of` when the first response of `trigger` arrives, and finishes when
/// every non-aborted request has ended.
struct Fanout {
    requests: Vec<(Tag, Request)>,
    pending: BTreeSet<Tag>,
    log: Vec<(Tag, bool)>,
    abort: Option<(Tag, Tag)>,
    aborts: Vec<Tag>,
    aborted: BTreeSet<Tag>,
    late_for_aborted: u64,
    done: bool,
}

impl Fanout {
    fn new(requests: Vec<Request>) -> Fanout {
        let requests: Vec<(Tag, Request)> = requests
            .into_iter()
            .enumerate()
            .map(|(i, r)| (Tag(i as u64), r))
            .collect();
        Fanout {
            pending: requests.iter().map(|(t, _)| *t).collect(),
            requests,
            log: Vec::new(),
            abort: None,
            aborts: Vec::new(),
            aborted: BTreeSet::new(),
            late_for_aborted: 0,
            done: false,
        }
    }
}

impl Machine for Fanout {
    type Output = Vec<(Tag, bool)>;
    type Event = ();
    type Error = StoreError;

    fn handle_response(&mut self, tag: Tag, response: Result<Response, StoreError>, _: Timestamp) {
        if self.aborted.contains(&tag) {
            self.late_for_aborted += 1;
            return;
        }
        let end = !matches!(
            response,
            Ok(Response::ReadRowsPart(_)
                | Response::MutateRowsPart(_)
                | Response::SampleRowKeysPart(_))
        );
        if !end {
            // A deliberately slow consumer of scan parts: a driver that serves requests one at a
            // time could then never answer the concurrent write before the scan ends, while a
            // concurrent one does so with a wide margin even on a loaded 2-core machine.
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
        self.log.push((tag, end));
        if end {
            self.pending.remove(&tag);
        }
        if let Some((trigger, victim)) = self.abort
            && trigger == tag
        {
            self.abort = None;
            self.aborts.push(victim);
            self.aborted.insert(victim);
            self.pending.remove(&victim);
        }
        self.done = self.pending.is_empty();
    }
    fn handle_timeout(&mut self, _: Timestamp) {}
    fn cancel(&mut self, _: Timestamp) {}
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.requests.pop()
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        self.aborts.pop()
    }
    fn poll_event(&mut self) -> Option<()> {
        None
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        None
    }
    fn result(&mut self) -> Option<Result<Self::Output, StoreError>> {
        if self.done {
            self.done = false;
            self.pending.insert(Tag(u64::MAX));
            Some(Ok(std::mem::take(&mut self.log)))
        } else {
            None
        }
    }
}

fn mutate(row: &[u8]) -> Request {
    Request::MutateRow(MutateRowRequest {
        table: TABLE.into(),
        row_key: row.to_vec(),
        mutations: vec![Mutation::SetCell {
            family: "cf".into(),
            qualifier: b"x".to_vec(),
            timestamp: Timestamp::from_millis(2),
            value: b"y".to_vec(),
        }],
        ..Default::default()
    })
}

/// Requests are in flight together: a unary MutateRow issued alongside a large scan is
/// answered while the scan is still streaming (a serial driver would answer it only after the
/// scan's end), and 16 unary requests all complete.
#[test]
fn outstanding_requests_run_concurrently() {
    let Some(emu) = Emulator::shared_or_skip("outstanding_requests_run_concurrently") else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        let conn = TokioDriver::new(
            BigtableConnection::connect(emu.fresh_target(), None)
                .await
                .unwrap(),
        );
        fill(&conn, 2000, 4096).await;
        // Tag 1 = the scan, tag 0 = the write (popped last, so sent after the scan).
        // The write goes to a row the scan does not cover, so the scan's size is fixed.
        let scan = ReadRowsRequest {
            rows: RowSet::range(RowRange::prefix(b"row")),
            ..read_all()
        };
        let m = Fanout::new(vec![mutate(b"zzz"), Request::ReadRows(scan)]);
        let log = run(&conn, m, |_| {}).await.unwrap();
        let write_done = log.iter().position(|(t, _)| *t == Tag(0)).unwrap();
        let scan_end = log
            .iter()
            .position(|(t, end)| *t == Tag(1) && *end)
            .unwrap();
        assert!(
            write_done < scan_end,
            "the write was answered during the scan (at {write_done} of {})",
            log.len()
        );
        let scan_parts = log.iter().filter(|(t, end)| *t == Tag(1) && !*end).count();
        assert_eq!(scan_parts, 2000);

        let writes: Vec<Request> = (0..16)
            .map(|i| mutate(format!("w{i}").as_bytes()))
            .collect();
        let log = run(&conn, Fanout::new(writes), |_| {}).await.unwrap();
        assert_eq!(log.len(), 16);
        assert!(log.iter().all(|(_, end)| *end));
    });
}

/// An abort drops the call: no response for the aborted tag reaches the machine afterwards,
/// and the machine finishes without waiting for the rest of the scan.
#[test]
fn abort_drops_the_call() {
    let Some(emu) = Emulator::shared_or_skip("abort_drops_the_call") else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        let conn = TokioDriver::new(
            BigtableConnection::connect(emu.fresh_target(), None)
                .await
                .unwrap(),
        );
        fill(&conn, 2000, 4096).await;
        let mut m = Fanout::new(vec![Request::ReadRows(read_all())]);
        // Abort the scan (tag 0) on its own first part.
        m.abort = Some((Tag(0), Tag(0)));
        let log = run(&conn, Borrowed(&mut m), |_| {}).await.unwrap();
        assert_eq!(log, vec![(Tag(0), false)], "one part, then nothing");
        assert_eq!(m.late_for_aborted, 0);
    });
}

/// A machine waiting on nothing but a timer gets `handle_timeout` once the time has come.
#[test]
fn timeouts_fire() {
    struct Sleeper {
        at: Timestamp,
        fired: Option<Timestamp>,
    }
    impl Machine for Sleeper {
        type Output = Timestamp;
        type Event = ();
        type Error = StoreError;
        fn handle_response(&mut self, _: Tag, _: Result<Response, StoreError>, _: Timestamp) {}
        fn handle_timeout(&mut self, now: Timestamp) {
            if now >= self.at {
                self.fired = Some(now);
            }
        }
        fn cancel(&mut self, _: Timestamp) {}
        fn poll_request(&mut self) -> Option<(Tag, Request)> {
            None
        }
        fn poll_abort(&mut self) -> Option<Tag> {
            None
        }
        fn poll_event(&mut self) -> Option<()> {
            None
        }
        fn poll_timeout(&self) -> Option<Timestamp> {
            self.fired.is_none().then_some(self.at)
        }
        fn result(&mut self) -> Option<Result<Timestamp, StoreError>> {
            self.fired.take().map(Ok)
        }
    }
    let Some(emu) = Emulator::shared_or_skip("timeouts_fire") else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        let conn = TokioDriver::new(
            BigtableConnection::connect(emu.fresh_target(), None)
                .await
                .unwrap(),
        );
        let at = now().saturating_add_micros(20_000);
        let fired = run(&conn, Sleeper { at, fired: None }, |_| {})
            .await
            .unwrap();
        assert!(fired >= at);
        // With an injected manual clock the driver waits on Tokio's timer, then moves the
        // clock to the deadline: the machine sees exactly its deadline.
        let t0 = now();
        let manual =
            TokioDriver::new(conn.connection().clone()).with_clock(Arc::new(ManualClock::new(t0)));
        let at = t0.saturating_add_micros(20_000);
        let fired = run(&manual, Sleeper { at, fired: None }, |_| {})
            .await
            .unwrap();
        assert_eq!(fired, at);
        assert_eq!(manual.now(), at);
        // A machine with nothing to do and no timer is reported, not awaited forever.
        struct Idle;
        impl Machine for Idle {
            type Output = ();
            type Event = ();
            type Error = StoreError;
            fn handle_response(&mut self, _: Tag, _: Result<Response, StoreError>, _: Timestamp) {}
            fn handle_timeout(&mut self, _: Timestamp) {}
            fn cancel(&mut self, _: Timestamp) {}
            fn poll_request(&mut self) -> Option<(Tag, Request)> {
                None
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
            fn result(&mut self) -> Option<Result<(), StoreError>> {
                None
            }
        }
        assert_eq!(run(&conn, Idle, |_| {}).await, Err(RunError::Stalled));
    });
}

/// Events handed on through a channel, in order; dropping the receiver cancels the machine
/// ([`run_until`] with the channel's `closed()` as the cancel future): its call is dropped and
/// it ends with its own `CANCELLED` status.
#[test]
fn events_through_a_channel_and_a_dropped_receiver_cancels() {
    let Some(emu) = Emulator::shared_or_skip("events_through_a_channel") else {
        return;
    };
    const ROWS: usize = 2000;
    let rt = runtime();
    rt.block_on(async {
        let conn = TokioDriver::new(
            BigtableConnection::connect(emu.fresh_target(), None)
                .await
                .unwrap(),
        );
        // ~8 MiB: a scan far longer than the consumer takes to drop its receiver below.
        fill(&conn, ROWS, 4096).await;
        let run_to_channel = |conn: TokioDriver| {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Row>();
            let m = ReadRows::new(read_all(), now(), 1, RetryPolicy::default());
            let task = tokio::spawn(async move {
                run_until(
                    &conn,
                    m,
                    |row| {
                        // A send fails only once the receiver is gone, which cancels below.
                        let _ = tx.send(row);
                    },
                    tx.closed(),
                )
                .await
            });
            (task, rx)
        };

        let (task, mut rx) = run_to_channel(conn.clone());
        let mut keys = Vec::new();
        while let Some(row) = rx.recv().await {
            keys.push(row.key);
        }
        assert_eq!(task.await.unwrap().unwrap(), ROWS as u64);
        assert_eq!(keys, (0..ROWS).map(key).collect::<Vec<_>>());

        let (task, mut rx) = run_to_channel(conn.clone());
        let first = rx.recv().await.unwrap();
        assert_eq!(first.key, key(0));
        drop(rx);
        let err = task.await.unwrap().unwrap_err();
        assert_eq!(err.into_store_error().code, Code::Cancelled);
    });
}

/// Errors come back as statuses, never retried by the adapter: a read of a missing table.
#[test]
fn statuses_are_passed_through() {
    let Some(emu) = Emulator::shared_or_skip("statuses_are_passed_through") else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        let conn = TokioDriver::new(
            BigtableConnection::connect(emu.fresh_target(), None)
                .await
                .unwrap(),
        );
        let m = ReadRows::new(read_all(), now(), 1, RetryPolicy::default());
        let err = run(&conn, m, |_| {}).await.unwrap_err().into_store_error();
        assert_eq!(err.code, Code::NotFound);
    });
}
