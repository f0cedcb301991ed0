//! `rowkit serve` as a real process on an embedded file: it prints its URL once bound, answers
//! the JSON API, and what it wrote is in the file afterwards; a non-loopback address without a
//! token is refused; with `--token` the data API answers only the right bearer token while the
//! browser tool's files and CORS preflights are served without it.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod support;

use support::{Exchange, Server, http_with};

fn rowkit(store: &str, args: &[&str]) -> std::process::Output {
    support::rowkit_with_env(store, args, &[])
}

/// Starts `rowkit --store STORE serve ARGS` and returns it with the address it printed
/// (`HOST:PORT`, the real port).
fn serve(store: &str, args: &[&str]) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .args(["--store", store, "serve"])
        .args(args)
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
    assert!(!addr.ends_with(":0"), "{addr}");
    (server, addr)
}

/// A fresh directory for one test's files.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rowkit-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An embedded store in `dir` with table `t` (family `cf`).
fn store_with_table(dir: &Path) -> String {
    let store = format!("embedded:{}", dir.join("db.redb").display());
    let created = rowkit(&store, &["admin", "create-table", "t", "--family", "cf"]);
    assert!(created.status.success(), "{created:?}");
    store
}

/// One request without extra headers; returns the status and the raw body.
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let e = http_with(addr, method, path, &[], body);
    (e.status, e.body)
}

const MUTATE_PATH: &str = "/v2/projects/p/instances/i/tables/t:mutateRow";
const READ_PATH: &str = "/v2/projects/p/instances/i/tables/t:readRows";
/// `r1` / `cf:q` @1000 = `v1`.
const MUTATE_BODY: &str = r#"{"rowKey":"cjE=","mutations":[{"setCell":{"familyName":"cf","columnQualifier":"cQ==","timestampMicros":"1000","value":"djE="}}]}"#;

#[test]
fn serve_answers_the_json_api_on_an_embedded_file() {
    let dir = temp_dir("serve");
    let store = store_with_table(&dir);
    let (server, addr) = serve(&store, &["--listen", "127.0.0.1:0"]);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");

    let (status, body) = http(&addr, "POST", MUTATE_PATH, MUTATE_BODY);
    assert_eq!((status, body.as_str()), (200, "{}"));
    let (status, body) = http(&addr, "POST", READ_PATH, "{}");
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

/// Asserts that `e` is the gateway's 401: a `google.rpc.Status` JSON body whose message
/// contains `says`, and a `WWW-Authenticate: Bearer` challenge.
fn assert_unauthenticated(e: &Exchange, says: &str) {
    assert_eq!(e.status, 401, "{} {}", e.head, e.body);
    assert_eq!(e.header("www-authenticate"), Some("Bearer"), "{}", e.head);
    assert_eq!(
        e.header("content-type"),
        Some("application/json; charset=UTF-8"),
        "{}",
        e.head
    );
    let status: serde_json::Value = serde_json::from_str(&e.body).unwrap();
    assert_eq!(status["error"]["code"], 401, "{status}");
    assert_eq!(status["error"]["status"], "UNAUTHENTICATED", "{status}");
    let message = status["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{status}");
}

#[test]
fn serve_with_a_token_guards_the_data_api_but_not_the_tool_page() {
    let dir = temp_dir("serve-token");
    let store = store_with_table(&dir);
    let www = dir.join("www");
    std::fs::create_dir_all(www.join("pkg")).unwrap();
    std::fs::write(
        www.join("index.html"),
        "<!doctype html><title>tool page</title>",
    )
    .unwrap();
    std::fs::write(www.join("pkg/tool.js"), "export const tool = 1;").unwrap();
    let www_arg = www.display().to_string();
    // Any address but loopback needs a token; with one, the gateway listens on all interfaces.
    let (server, printed) = serve(
        &store,
        &["--listen", "0.0.0.0:0", "--token", "T", "--www", &www_arg],
    );
    let port = printed
        .strip_prefix("0.0.0.0:")
        .unwrap_or_else(|| panic!("{printed}"));
    let addr = format!("127.0.0.1:{port}");

    // A data call with the `Authorization` header `auth` (none when `None`).
    let call = |method: &str, path: &str, auth: Option<&str>, body: &str| {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("Authorization", a)).into_iter().collect();
        http_with(&addr, method, path, &headers, body)
    };

    // The data API: no header, another scheme, an empty or wrong token -> 401; nothing is
    // written.
    let missing = "requires `Authorization: Bearer <token>`";
    let wrong = "not this gateway's token";
    for (auth, says) in [
        (None, missing),
        (Some("Basic VDpU"), missing),
        (Some("Bearer "), missing),
        (Some("Bearer t"), wrong),
        (Some("Bearer TT"), wrong),
    ] {
        assert_unauthenticated(&call("POST", MUTATE_PATH, auth, MUTATE_BODY), says);
    }
    // The GET form of SampleRowKeys and unknown data paths are guarded too (before routing).
    let sample = "/v2/projects/p/instances/i/tables/t:sampleRowKeys";
    assert_unauthenticated(&call("GET", sample, None, ""), missing);
    assert_unauthenticated(&call("GET", "/v2/no/such/path", None, ""), missing);
    let e = call("POST", READ_PATH, Some("Bearer T"), "{}");
    assert_eq!(
        (e.status, e.body.contains("rowKey")),
        (200, false),
        "{}",
        e.body
    );

    // The right token (the scheme is case-insensitive).
    for auth in ["Bearer T", "bearer T"] {
        let e = call("POST", MUTATE_PATH, Some(auth), MUTATE_BODY);
        assert_eq!(
            (e.status, e.body.as_str()),
            (200, "{}"),
            "{auth}: {}",
            e.head
        );
    }
    let e = call("POST", READ_PATH, Some("Bearer T"), "{}");
    assert_eq!(e.status, 200, "{}", e.body);
    assert!(
        e.body.contains(r#""rowKey":"cjE=""#) && e.body.contains(r#""value":"djE=""#),
        "{}",
        e.body
    );

    // A CORS preflight carries no credentials (Fetch standard), so it is answered without the
    // token, allowing `authorization` for a loopback page.
    let e = http_with(
        &addr,
        "OPTIONS",
        READ_PATH,
        &[
            ("Origin", "http://127.0.0.1:9"),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "authorization,content-type",
            ),
        ],
        "",
    );
    assert!((200..300).contains(&e.status), "{}", e.head);
    assert_eq!(
        e.header("access-control-allow-origin"),
        Some("http://127.0.0.1:9")
    );
    let allowed = e
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    assert!(allowed.contains("authorization"), "{}", e.head);

    // The browser tool's files need no token: a navigation cannot send a bearer header, and
    // they hold no data; the page asks for the token and sends it on its data calls.
    let e = http_with(&addr, "GET", "/", &[], "");
    assert_eq!(
        (e.status, e.body.as_str()),
        (200, "<!doctype html><title>tool page</title>")
    );
    assert_eq!(e.header("content-type"), Some("text/html; charset=utf-8"));
    let e = http_with(&addr, "GET", "/pkg/tool.js", &[], "");
    assert_eq!((e.status, e.body.as_str()), (200, "export const tool = 1;"));
    let e = http_with(&addr, "GET", "/missing.js", &[], "");
    assert_eq!(e.status, 404);
    drop(server);
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

/// `--listen` takes a host name (`localhost:PORT` listens on loopback); an address another
/// process holds is an operation failure (1), a malformed one bad usage (2).
#[test]
fn serve_listens_on_localhost_and_reports_a_taken_port_as_a_failure() {
    let (_server, addr) = serve("memory:", &["--listen", "localhost:0"]);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let (status, _) = http(&addr, "GET", "/", "");
    assert_eq!(status, 200);
    let taken = rowkit("memory:", &["serve", "--listen", &addr]);
    assert_eq!(taken.status.code(), Some(1), "{taken:?}");
    let stderr = String::from_utf8_lossy(&taken.stderr);
    assert!(stderr.contains(&addr), "{stderr}");
    for bad in ["localhost", "nowhere.invalid:80", "1.2.3.4:http"] {
        let out = rowkit("memory:", &["serve", "--listen", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
        assert!(out.stdout.is_empty(), "{bad}");
    }
}

/// `--allow-host` adds a name requests may be addressed to; any other name is refused.
#[test]
fn serve_answers_only_allowed_host_names() {
    let (_server, addr) = serve(
        "memory:",
        &["--listen", "127.0.0.1:0", "--allow-host", "tool.example"],
    );
    let status = |host: &str| http_with(&addr, "GET", "/", &[("Host", host)], "").status;
    assert_eq!(status("tool.example"), 200);
    assert_eq!(status(&addr), 200);
    assert_eq!(status("evil.example"), 403);
}

/// Without `--www` the browser tool built into the binary is served: the page, its view
/// modules and the committed wasm package, wherever rowkit runs from.
#[test]
fn serve_without_www_serves_the_tool_built_into_rowkit() {
    let dir = temp_dir("serve-built-in");
    let store = store_with_table(&dir);
    let (_server, addr) = serve(&store, &["--listen", "127.0.0.1:0"]);
    let page = http_with(&addr, "GET", "/", &[], "");
    assert_eq!(page.status, 200, "{}", page.head);
    assert!(
        page.body.contains(r#"<nav aria-label="Views">"#),
        "{}",
        page.body
    );
    for (path, content_type) in [
        ("/app.js", "text/javascript"),
        ("/views/tracestore.js", "text/javascript"),
        ("/pkg/rowkit.js", "text/javascript"),
        ("/pkg/rowkit_bg.wasm", "application/wasm"),
    ] {
        let file = http_with(&addr, "HEAD", path, &[], "");
        assert_eq!(file.status, 200, "{path}: {}", file.head);
        assert!(
            file.head
                .to_ascii_lowercase()
                .contains(&format!("content-type: {content_type}")),
            "{path}: {}",
            file.head
        );
    }
    assert_eq!(http_with(&addr, "GET", "/pkg/nope.js", &[], "").status, 404);
}
