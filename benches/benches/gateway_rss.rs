//! Peak memory of `rowkit serve` (the JSON gateway) while four clients at once each upload a
//! 300 MB body of zeros (invalid JSON at its first byte) with a `Content-Length` under the body
//! limit: the server's VmHWM (`/proc/PID/status`) after the uploads, less its VmHWM once idle.
//!
//! It runs the release `rowkit` binary next to this bench's executable (`target/release/rowkit`;
//! build it first) or the one given with `--rowkit PATH`, over `memory:`.
//!
//! ```sh
//! cargo build --release -p rowkit && cargo bench -p rowkit-benches --bench gateway_rss
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CLIENTS: usize = 4;
const BODY_BYTES: u64 = 300_000_000;
const WRITE_CHUNK: usize = 64 << 10;

/// `VmHWM` (peak resident set) of process `pid`, in KiB.
fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

fn rowkit_binary() -> PathBuf {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--rowkit") {
        return PathBuf::from(&args[i + 1]);
    }
    // target/release/deps/gateway_rss-HASH → target/release/rowkit
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .and_then(|d| d.parent())
        .unwrap()
        .join("rowkit")
}

/// One upload: the status line's code (or how it ended) and the bytes the server took first.
fn upload(addr: &str) -> (String, u64) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    write!(
        stream,
        "POST /v2/projects/p/instances/i/tables/t:mutateRow HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {BODY_BYTES}\r\n\r\n"
    )
    .unwrap();
    let zeros = vec![0u8; WRITE_CHUNK];
    let mut sent = 0u64;
    while sent < BODY_BYTES {
        let n = (BODY_BYTES - sent).min(WRITE_CHUNK as u64) as usize;
        if stream.write_all(&zeros[..n]).is_err() {
            break;
        }
        sent += n as u64;
    }
    let mut response = Vec::new();
    let ended = match stream.read_to_end(&mut response) {
        Ok(_) | Err(_) if !response.is_empty() => String::from_utf8_lossy(&response)
            .split(' ')
            .nth(1)
            .unwrap_or("?")
            .to_string(),
        Ok(_) => "closed".to_string(),
        Err(e) => format!("{:?}", e.kind()),
    };
    (ended, sent)
}

fn main() {
    let binary = rowkit_binary();
    let mut child = Command::new(&binary)
        .args(["--store", "memory:", "serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (cargo build --release -p rowkit)",
                binary.display()
            )
        });
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let addr = url
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let pid = child.id();
    // Settle: one ordinary call, then the idle peak.
    let (status, _) = {
        let mut s = TcpStream::connect(&addr).unwrap();
        write!(
            s,
            "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut r = Vec::new();
        s.read_to_end(&mut r).unwrap();
        (String::from_utf8_lossy(&r[..12]).into_owned(), ())
    };
    assert!(status.ends_with("200"), "{status}");
    std::thread::sleep(Duration::from_millis(500));
    let idle = vm_hwm_kib(pid);
    let start = Instant::now();
    let uploads: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || upload(&addr))
        })
        .collect();
    let results: Vec<(String, u64)> = uploads.into_iter().map(|u| u.join().unwrap()).collect();
    let elapsed = start.elapsed();
    let peak = vm_hwm_kib(pid);
    let _ = child.kill();
    let _ = child.wait();
    for (i, (ended, sent)) in results.iter().enumerate() {
        println!(
            "client {i}: {ended} after {:.1} MiB sent",
            *sent as f64 / 1048576.0
        );
    }
    println!(
        "{CLIENTS} × {} MB zeros in {:.2} s: VmHWM idle {:.1} MiB, after {:.1} MiB, peak above idle {:.1} MiB",
        BODY_BYTES / 1_000_000,
        elapsed.as_secs_f64(),
        idle as f64 / 1024.0,
        peak as f64 / 1024.0,
        (peak - idle) as f64 / 1024.0
    );
}
