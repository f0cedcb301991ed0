//! `rowkit serve --grpc` as a child process of a test, shared by the test files that start it,
//! and the other helpers several test files need.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
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

use rowkit_bigtable::emulator::CBT_BIN;

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
    spawn_serve(Command::new(env!("CARGO_BIN_EXE_rowkit")), store, extra)
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
    spawn_serve(sh, store, extra)
}

/// Runs `command` (rowkit, or what execs it) with the serve arguments; see [`serve_grpc`].
fn spawn_serve(mut command: Command, store: &str, extra: &[&str]) -> (Server, String, String) {
    let mut child = command
        .args(["--store", store, "serve", "--listen", "127.0.0.1:0"])
        .args(["--grpc", "127.0.0.1:0"])
        .args(extra)
        .env_remove("ROWKIT_GATEWAY_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
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
    (server, http, grpc)
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
