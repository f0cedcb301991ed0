//! `rowkit serve --grpc` as a child process of a test, shared by the test files that start it,
//! and the other helpers several test files need.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

/// A fresh directory for one test's files: absolute (a server may be given paths in it), and
/// named after the test file's `group` and the test's `name`.
pub fn temp_dir(group: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rowkit-{group}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `rowkit --store STORE ARGS…` with `env` set, and none of the store and token variables of
/// the environment the tests run in.
pub fn rowkit_with_env(store: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ROWKIT_STORE")
        .env_remove("ROWKIT_GATEWAY_TOKEN")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// Runs `command` with `input` on its stdin, and its output captured.
pub fn output_with_stdin(mut command: Command, input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A child that exits without reading all of it closes the pipe: not this helper's failure.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

use rowkit_testkit::emulator::CBT_BIN;

/// Kills the server when the test ends, pass or fail.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `rowkit --store STORE serve --listen 127.0.0.1:0 --grpc 127.0.0.1:0 EXTRA…` and
/// returns it with the two addresses it printed: the JSON API's (`127.0.0.1:PORT`, from the
/// URL on its first line) and the gRPC one (its second line).
pub fn serve_grpc(store: &str, extra: &[&str]) -> (Server, String, String) {
    let (server, http, grpc, _) = spawn_serve(
        Command::new(env!("CARGO_BIN_EXE_rowkit")),
        store,
        extra,
        &[],
        false,
    );
    (server, http, grpc)
}

/// [`serve_grpc`] with `env` set (e.g. `RUST_LOG`), and its stderr (the startup lines, then the
/// request log) to read.
pub fn serve_grpc_logged(
    store: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Server, String, String, Log) {
    let (server, http, grpc, log) = spawn_serve(
        Command::new(env!("CARGO_BIN_EXE_rowkit")),
        store,
        extra,
        env,
        true,
    );
    (server, http, grpc, log.unwrap())
}

/// A server's stderr, read line by line on a thread of its own (so the server never blocks on
/// a full pipe).
pub struct Log {
    lines: std::sync::mpsc::Receiver<String>,
    /// Every line received so far, for the failure message.
    seen: Vec<String>,
}

impl Log {
    fn new(stderr: std::process::ChildStderr) -> Log {
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Log {
            lines,
            seen: Vec::new(),
        }
    }

    /// The first line that contains every one of `parts`, waiting up to 10 s for it; fails
    /// the test with every line seen otherwise.
    pub fn line_with(&mut self, parts: &[&str]) -> String {
        let has_all = |line: &String| parts.iter().all(|part| line.contains(part));
        if let Some(line) = self.seen.iter().find(|line| has_all(line)) {
            return line.clone();
        }
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if has_all(&line) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no line with {parts:?} on the server's stderr; it wrote:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Every line received so far.
    pub fn seen(&self) -> &[String] {
        &self.seen
    }
}

/// [`serve_grpc`] with the server's file-descriptor limit (soft and hard) set to `nofile`
/// (through `sh -c 'ulimit -n …; exec …'`), as on a machine with that limit.
pub fn serve_grpc_with_fd_limit(
    store: &str,
    extra: &[&str],
    nofile: u32,
) -> (Server, String, String) {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!("ulimit -n {nofile} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_rowkit"));
    let (server, http, grpc, _) = spawn_serve(sh, store, extra, &[], false);
    (server, http, grpc)
}

/// Runs `command` (rowkit, or what execs it) with the serve arguments and `env`, its stderr
/// read into a [`Log`] if `logged` (else discarded); see [`serve_grpc`].
fn spawn_serve(
    mut command: Command,
    store: &str,
    extra: &[&str],
    env: &[(&str, &str)],
    logged: bool,
) -> (Server, String, String, Option<Log>) {
    let mut child = command
        .args(["--store", store, "serve", "--listen", "127.0.0.1:0"])
        .args(["--grpc", "127.0.0.1:0"])
        .args(extra)
        .env_remove("ROWKIT_GATEWAY_TOKEN")
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(if logged {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .spawn()
        .unwrap();
    let log = child.stderr.take().map(Log::new);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let server = Server(child);
    let url = lines.next().unwrap().unwrap();
    let http = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix('/'))
        .filter(|u| u.starts_with("127.0.0.1:"))
        .unwrap_or_else(|| panic!("not a loopback URL: {url:?}"))
        .to_string();
    let grpc = lines.next().unwrap().unwrap();
    assert!(
        grpc.starts_with("127.0.0.1:") && !grpc.ends_with(":0"),
        "{grpc}"
    );
    (server, http, grpc, log)
}

/// Whether `cbt` can run; a loud skip when it is missing, a failure under `CI=true`.
pub fn cbt_or_skip(test: &str) -> bool {
    if std::path::Path::new(CBT_BIN).is_file() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test}: {CBT_BIN} is missing (Debian package google-cloud-cli-cbt)"
    );
    eprintln!("\n!!!!! SKIPPED {test}: {CBT_BIN} is missing (fails instead when CI=true)\n");
    false
}

/// Runs `cbt ARGS` against the server at `host` (project `p`, instance `i`).
pub fn cbt(host: &str, args: &[&str]) -> Output {
    Command::new(CBT_BIN)
        .env("BIGTABLE_EMULATOR_HOST", host)
        .args(["-creds", "/dev/null", "-project", "p", "-instance", "i"])
        .args(args)
        .output()
        .unwrap()
}

/// Runs `cbt ARGS` and returns its stdout; fails on a non-zero exit.
pub fn cbt_ok(host: &str, args: &[&str]) -> String {
    let out = cbt(host, args);
    assert!(
        out.status.success(),
        "cbt {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One HTTP/1.1 exchange on a fresh connection.
pub struct Exchange {
    pub status: u16,
    /// The response head (status line and headers).
    pub head: String,
    /// The raw body (chunked framing left in place).
    pub body: String,
}

impl Exchange {
    /// The value of response header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// One request on a fresh connection (`Connection: close`, JSON content type), with
/// `headers`; `Host` is the address unless `headers` name one.
pub fn http_with(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Exchange {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    // The address as Host unless the caller names one.
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    write!(stream, "{request}\r\n{body}").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    Exchange {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}
