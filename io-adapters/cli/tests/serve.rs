//! `rowkit serve` as a real process on an embedded file: it prints its URL once bound, answers
//! the JSON API, and what it wrote is in the file afterwards; a non-loopback address without a
//! token is refused.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

fn rowkit(store: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ROWKIT_STORE")
        .env_remove("ROWKIT_GATEWAY_TOKEN")
        .output()
        .unwrap()
}

/// Kills the server when the test ends, pass or fail.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 request on a fresh connection; returns the status and the raw body (chunked
/// framing left in place).
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn serve_answers_the_json_api_on_an_embedded_file() {
    let dir = std::env::temp_dir().join(format!("rowkit-cli-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = format!("embedded:{}", dir.join("db.redb").display());
    let created = rowkit(&store, &["admin", "create-table", "t", "--family", "cf"]);
    assert!(created.status.success(), "{created:?}");

    let mut child = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .args(["--store", &store, "serve", "--listen", "127.0.0.1:0"])
        .env_remove("ROWKIT_GATEWAY_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut url = String::new();
    BufReader::new(stdout).read_line(&mut url).unwrap();
    let addr = url
        .trim()
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix('/'))
        .unwrap_or_else(|| panic!("not a URL: {url:?}"))
        .to_string();
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );

    let (status, body) = http(
        &addr,
        "POST",
        "/v2/projects/p/instances/i/tables/t:mutateRow",
        r#"{"rowKey":"cjE=","mutations":[{"setCell":{"familyName":"cf","columnQualifier":"cQ==","timestampMicros":"1000","value":"djE="}}]}"#,
    );
    assert_eq!((status, body.as_str()), (200, "{}"));
    let (status, body) = http(
        &addr,
        "POST",
        "/v2/projects/p/instances/i/tables/t:readRows",
        "{}",
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(r#""rowKey":"cjE=""#) && body.contains(r#""value":"djE=""#),
        "{body}"
    );
    let (status, body) = http(&addr, "GET", "/", "");
    assert_eq!(status, 200, "{body}");
    drop(server);

    // The row is in the file.
    let dump = rowkit(&store, &["admin", "dump", "t"]);
    assert!(dump.status.success(), "{dump:?}");
    assert!(
        String::from_utf8_lossy(&dump.stdout).contains("r1"),
        "{dump:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn serve_refuses_a_public_address_without_a_token() {
    let out = rowkit("memory:", &["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--token"), "{stderr}");
    assert!(out.stdout.is_empty());
}
