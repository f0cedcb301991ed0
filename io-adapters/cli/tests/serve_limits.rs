//! `rowkit serve --grpc` cannot be wedged by clients that hold connections without finishing
//! requests: with its fd limit at 1 024, 2 000 idle connections on each server (half-sent
//! request heads, bare HTTP/2 prefaces, nothing at all) still leave room for a new client on
//! each; SIGINT with idle connections, a half-sent request and a ReadRows whose client does not
//! read exits 0 within the drain time; SIGTERM lets a call in flight complete, refuses new
//! connections meanwhile, and exits 0.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine as _;
use rowkit_bigtable::BigtableStore;
use rowkit_codec::model::{RowSet, Timestamp};
use rowkit_statemachines::ReadRowsRequest;
use support::{Server, serve_grpc, serve_grpc_with_fd_limit};

/// The HTTP/2 connection preface a gRPC client sends first.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// How long a test waits for an answer that a wedged server would never give.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// A fresh directory for one test's files.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rowkit-serve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An embedded store in `dir` with table `t` (family `cf`).
fn store_with_table(dir: &Path) -> String {
    let store = format!("embedded:{}", dir.join("db.redb").display());
    let created = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .args([
            "--store",
            &store,
            "admin",
            "create-table",
            "t",
            "--family",
            "cf",
        ])
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    store
}

/// Raises this test process's soft fd limit to its hard limit; fails when that is below `need`.
fn raise_own_fd_limit(need: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        },
    )
    .unwrap();
    let soft = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    assert!(
        soft >= need,
        "this test needs {need} fds, the hard limit is {soft}"
    );
}

fn connect(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(ANSWER_WITHIN)).unwrap();
    stream
}

/// A POST of `body` to `path` (JSON), on a fresh connection that the server may keep open.
fn post(addr: &str, path: &str, body: &str) -> TcpStream {
    let mut stream = connect(addr);
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    stream
}

/// The whole response to a POST: its status and raw text.
fn post_and_read(addr: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = post(addr, path, body);
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {text:?}"));
    (status, text)
}

const READ_ROWS: &str = "/v2/projects/p/instances/i/tables/t:readRows";

/// Writes `rows` rows of one `value_bytes`-byte cell each through the JSON API.
fn fill(http: &str, rows: usize, value_bytes: usize) {
    let value = base64::engine::general_purpose::STANDARD.encode(vec![b'v'; value_bytes]);
    for row in 0..rows {
        let key = base64::engine::general_purpose::STANDARD.encode(format!("row{row:04}"));
        let body = format!(
            r#"{{"rowKey":"{key}","mutations":[{{"setCell":{{"familyName":"cf","columnQualifier":"cQ==","timestampMicros":"1000","value":"{value}"}}}}]}}"#
        );
        let (status, text) =
            post_and_read(http, "/v2/projects/p/instances/i/tables/t:mutateRow", &body);
        assert_eq!(status, 200, "{text}");
    }
}

/// Sends `signal` to the server.
fn signal(server: &Server, signal: rustix::process::Signal) {
    rustix::process::kill_process(rustix::process::Pid::from_child(&server.0), signal).unwrap();
}

/// The server's exit status, or `None` when it is still running after `within`.
fn exit_within(server: &mut Server, within: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < within {
        if let Some(status) = server.0.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// A new client's ReadRows over gRPC (rowkit's Bigtable adapter) answers the rows of `t`.
fn grpc_rows(grpc: &str) -> usize {
    let store = BigtableStore::open(&format!("bigtable://p/i?emulator={grpc}")).unwrap();
    let read = ReadRowsRequest {
        table: "t".into(),
        rows: RowSet::default(),
        ..Default::default()
    };
    rowkit_client::read_rows_blocking(&store, read, Timestamp::from_secs(1))
        .unwrap()
        .len()
}

#[test]
fn idle_connections_do_not_lock_out_a_new_client() {
    const IDLE_PER_SERVER: usize = 2_000;
    raise_own_fd_limit(2 * IDLE_PER_SERVER as u64 + 200);
    let dir = temp_dir("idle");
    let store = store_with_table(&dir);
    // The issue's machine: 1 024 fds for the server, fewer than the idle connections; timeouts
    // long enough that only the connection limit (closing the oldest idle) makes room.
    let timeouts = ["--header-timeout", "3600", "--idle-timeout", "3600"];
    let (_server, http, grpc) = serve_grpc_with_fd_limit(&store, &timeouts, 1_024);
    fill(&http, 2, 10);
    let mut held = Vec::new();
    for i in 0..IDLE_PER_SERVER {
        let mut to_http = connect(&http);
        if i % 2 == 0 {
            // A request head that never ends. The server may have closed the socket already.
            let _ = to_http.write_all(b"POST /v2/projects/p/instances/i/tables/t:readRows HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        }
        let mut to_grpc = connect(&grpc);
        if i % 2 == 0 {
            let _ = to_grpc.write_all(H2_PREFACE);
        }
        held.push(to_http);
        held.push(to_grpc);
    }
    // New clients are answered on both servers while all of those are still held.
    let (status, text) = post_and_read(&http, READ_ROWS, "{}");
    assert_eq!(status, 200, "{text}");
    assert_eq!(text.matches("rowKey").count(), 2, "{text}");
    assert_eq!(grpc_rows(&grpc), 2);
    drop(held);
}

/// A connection to the gateway with a request head cut off mid-header, and one to the gRPC
/// server with the HTTP/2 preface and nothing after it.
fn half_sent_and_preface(http: &str, grpc: &str) -> (TcpStream, TcpStream) {
    let mut half_sent = connect(http);
    half_sent
        .write_all(b"POST /v2/projects/p/instances/i/tables/t:mutateRow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")
        .unwrap();
    let mut preface = connect(grpc);
    preface.write_all(H2_PREFACE).unwrap();
    (half_sent, preface)
}

#[test]
fn half_sent_heads_and_bare_prefaces_are_dropped_after_the_header_timeout() {
    let (_server, http, grpc) = serve_grpc("memory:", &["--header-timeout", "1"]);
    let (half_sent, preface) = half_sent_and_preface(&http, &grpc);
    for mut stream in [half_sent, preface] {
        // The server closes it (EOF or reset); a read that times out means it is still open.
        let mut sink = Vec::new();
        if let Err(e) = stream.read_to_end(&mut sink) {
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
        }
    }
}

#[test]
fn sigint_with_idle_half_sent_and_unread_clients_exits_0_within_the_drain() {
    const DRAIN: Duration = Duration::from_secs(3);
    let dir = temp_dir("sigint");
    let store = store_with_table(&dir);
    let (mut server, http, grpc) = serve_grpc(&store, &["--drain", "3"]);
    // 48 MiB of values: far more than socket buffers hold, so an unread ReadRows stays in flight.
    fill(&http, 48, 1 << 20);
    let idle_http = connect(&http);
    let idle_grpc = connect(&grpc);
    let (half_sent, preface) = half_sent_and_preface(&http, &grpc);
    let mut unread = post(&http, READ_ROWS, "{}");
    // The stream has begun (and will stall: this client reads no further).
    let mut head = [0u8; 12];
    unread.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    std::thread::sleep(Duration::from_millis(500));
    signal(&server, rustix::process::Signal::INT);
    let status = exit_within(&mut server, DRAIN + Duration::from_secs(10));
    let status = status.expect("rowkit serve still runs after SIGINT and the drain time");
    assert!(status.success(), "{status:?}");
    drop((idle_http, idle_grpc, half_sent, preface, unread));
}

#[test]
fn sigterm_drains_a_call_in_flight_and_exits_0() {
    let dir = temp_dir("sigterm");
    let store = store_with_table(&dir);
    // A drain long enough that only the call completing can end it early.
    let (mut server, http, _grpc) = serve_grpc(&store, &["--drain", "60"]);
    const ROWS: usize = 24;
    fill(&http, ROWS, 1 << 20);
    let mut reader = post(&http, READ_ROWS, "{}");
    let mut response = vec![0u8; 64 << 10];
    reader.read_exact(&mut response).unwrap();
    // The call is in flight, stalled on this reader, when the signal arrives.
    std::thread::sleep(Duration::from_millis(500));
    signal(&server, rustix::process::Signal::TERM);
    // New connections are refused once the server stopped accepting.
    let start = Instant::now();
    while TcpStream::connect(&http).is_ok() {
        assert!(
            start.elapsed() < ANSWER_WITHIN,
            "still accepting after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response);
    // Every row came, and the array closed (chunked framing ends with the empty chunk).
    assert_eq!(text.matches("rowKey").count(), ROWS);
    assert!(
        text.ends_with("\n]\r\n0\r\n\r\n"),
        "{}",
        &text[text.len().saturating_sub(200)..]
    );
    let status = exit_within(&mut server, Duration::from_secs(30));
    let status = status.expect("rowkit serve still runs after its last call ended");
    assert!(status.success(), "{status:?}");
}
