//! What the crash tests share: a child process that is this test executable re-run as one of
//! its own tests, acknowledging each durable write on stdout as `@@ack …`, and killed by the
//! parent; a fresh temporary directory; the seed from `ROWKIT_CRASH_SEED`.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `ROWKIT_CRASH_SEED` if set (a failure prints the seed it ran with), else `default`.
pub fn crash_seed(default: u64) -> u64 {
    std::env::var("ROWKIT_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A new directory under the system's temporary directory, unique to this process and moment.
pub fn temp_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("rowkit-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A child writer: its acknowledgements as they arrive, its stderr once it ended. Dropping it
/// kills the child, so a failing parent never leaves one running.
pub struct ChildWriter {
    child: Child,
    acks: Receiver<String>,
    reader: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<String>>,
}

impl ChildWriter {
    /// Re-runs this test executable as its test `test` with `envs` set; the text after each
    /// `@@ack ` line prefix of its stdout becomes an acknowledgement.
    pub fn spawn(test: &str, envs: &[(&str, String)]) -> ChildWriter {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                test,
                "--nocapture",
                "--quiet",
                "--test-threads=1",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, value) in envs {
            command.env(name, value);
        }
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let (tx, acks) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("@@ack ")
                    && tx.send(rest.to_string()).is_err()
                {
                    break;
                }
            }
        });
        ChildWriter {
            child,
            acks,
            reader: Some(reader),
            stderr: Some(stderr),
        }
    }

    /// The next acknowledgement, waiting until `deadline`; a child that ends or hangs first
    /// fails the test with `what` so far and the child's stderr.
    pub fn next_ack(&mut self, deadline: Instant, what: impl FnOnce() -> String) -> String {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.acks.recv_timeout(left) {
            Ok(ack) => ack,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = self.stderr.take().map(|h| h.join().unwrap());
                panic!(
                    "child stopped after {}; stderr:\n{}",
                    what(),
                    stderr.unwrap_or_default()
                );
            }
        }
    }

    /// Sleeps `delay`, then SIGKILLs the child (it must not have exited normally); returns the
    /// acknowledgements still in the pipe, which were sent before the kill and so count.
    pub fn kill_after(mut self, delay: Duration) -> Vec<String> {
        std::thread::sleep(delay);
        self.child.kill().unwrap(); // SIGKILL
        let status = self.child.wait().unwrap();
        assert!(!status.success(), "child exited normally: {status}");
        self.rest()
    }

    /// Waits for the child to exit by itself (it must succeed); returns the acknowledgements
    /// not taken yet.
    pub fn wait(mut self) -> Vec<String> {
        let status = self.child.wait().unwrap();
        if !status.success() {
            let stderr = self.stderr.take().map(|h| h.join().unwrap());
            panic!(
                "child failed: {status}; stderr:\n{}",
                stderr.unwrap_or_default()
            );
        }
        self.rest()
    }

    fn rest(&mut self) -> Vec<String> {
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        self.acks.try_iter().collect()
    }
}

impl Drop for ChildWriter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
