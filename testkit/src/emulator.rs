//! The Cloud Bigtable emulator as a test fixture, for the tests of every crate (the schema
//! suites run their `&dyn Store` scenarios on [`Emulator::fresh_store`]). Feature `emulator`:
//! it needs rowkit-bigtable (tonic), which the simulator's build does without.
//!
//! The same fixture also fronts rowkit's own gRPC server ([`Emulator::rowkit`]), so the suites
//! written for the emulator run unchanged against `rowkit-grpc` over a memory or redb store:
//! there every fresh instance is a fresh server over a fresh store (rowkit serves one store as
//! one instance), and [`Emulator::is_rowkit`] tells a suite to hold it to production's
//! behaviour, without the emulator's deviation lists.
//!
//! ```no_run
//! use rowkit_testkit::emulator::Emulator;
//! # fn scenario(_: &dyn rowkit_store::Store) {}
//! // In a test: `None` (with a loud message) when the emulator is not installed, a panic when
//! // CI=true; one emulator per test binary, a fresh instance (namespace) per call.
//! let Some(emulator) = Emulator::shared_or_skip("my_test") else { return };
//! scenario(&emulator.fresh_store());
//! ```
//!
//! No leaked process even when the test binary exits without running destructors (statics are
//! never dropped): the emulator is started by a `sh` wrapper that waits for end-of-file on its
//! stdin, a pipe whose only writer is this process, and then kills the emulator. The kernel
//! closes the pipe when the test process exits, however it exits. [`Drop`] does the same
//! earlier for an owned [`Emulator`].

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rowkit_bigtable::{BigtableStore, Target};

/// Where the Debian package `google-cloud-cli-bigtable-emulator` installs the emulator.
pub const EMULATOR_BIN: &str = "/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator";
/// Where the Debian package `google-cloud-cli-cbt` installs `cbt`.
pub const CBT_BIN: &str = "/usr/bin/cbt";
/// The project every emulator target uses (the emulator accepts any).
pub const PROJECT: &str = "rowkit";

/// Why the emulator could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmulatorError {
    /// The binary does not exist.
    #[error(
        "the Bigtable emulator is not installed at {0} (Debian package google-cloud-cli-bigtable-emulator; or set ROWKIT_CBTEMULATOR)"
    )]
    Missing(PathBuf),
    /// Spawning or talking to the process failed.
    #[error("starting the Bigtable emulator: {0}")]
    Io(#[from] std::io::Error),
    /// It never printed its address.
    #[error("the Bigtable emulator did not report its address: {0}")]
    NoAddress(String),
}

/// Starts a rowkit gRPC server over a fresh, empty store and returns its `HOST:PORT`.
pub type StartServer = Box<dyn Fn() -> Result<String, String> + Send + Sync>;

/// A rowkit server fixture: one server per instance.
struct RowkitServers {
    /// Names the backend in messages (`rowkit-grpc over memory:`).
    name: String,
    start: StartServer,
    /// `HOST:PORT` of each instance handed out.
    hosts: Mutex<HashMap<String, String>>,
}

/// A running emulator on 127.0.0.1 and a free port (or rowkit servers standing in for it).
pub struct Emulator {
    host: String,
    child: Mutex<Option<Child>>,
    stdin: Mutex<Option<ChildStdin>>,
    base: OnceLock<Result<BigtableStore, String>>,
    instances: AtomicU64,
    rowkit: Option<RowkitServers>,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

impl Emulator {
    /// The emulator binary: `$ROWKIT_CBTEMULATOR`, else [`EMULATOR_BIN`].
    pub fn binary() -> PathBuf {
        std::env::var_os("ROWKIT_CBTEMULATOR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(EMULATOR_BIN))
    }

    /// Whether the emulator binary exists.
    pub fn is_installed() -> bool {
        Self::binary().is_file()
    }

    /// Starts a new emulator on a free loopback port (`-port 0`; the port is read from its
    /// "running on" line).
    pub fn start() -> Result<Emulator, EmulatorError> {
        let bin = Self::binary();
        if !bin.is_file() {
            return Err(EmulatorError::Missing(bin));
        }
        // $0 = the binary. The emulator runs in the background with stdin from /dev/null;
        // `cat` blocks on our pipe until this process closes it (exit, crash or Drop), then the
        // wrapper kills the emulator and reaps it.
        let script = r#""$0" -host 127.0.0.1 -port 0 </dev/null & pid=$!
trap 'kill $pid 2>/dev/null' EXIT HUP INT TERM
cat >/dev/null
kill $pid 2>/dev/null
wait $pid 2>/dev/null"#;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(&bin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| EmulatorError::NoAddress("no stdout pipe".to_string()))?;
        let (tx, rx) = std::sync::mpsc::channel();
        // Reads the address line, then keeps draining so the emulator never blocks on a full
        // pipe.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.split("running on ").nth(1)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(addr.trim().to_string());
                }
            }
        });
        let host = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(h) => h,
            Err(_) => {
                drop(stdin);
                let _ = child.wait();
                return Err(EmulatorError::NoAddress(
                    "no \"running on\" line within 60 s".to_string(),
                ));
            }
        };
        Ok(Emulator {
            host,
            child: Mutex::new(Some(child)),
            stdin: Mutex::new(stdin),
            base: OnceLock::new(),
            instances: AtomicU64::new(0),
            rowkit: None,
        })
    }

    /// rowkit gRPC servers in the emulator's place: `start` serves a fresh store and returns
    /// its address; it runs once now (the fixture's own [`Emulator::host`]) and once per
    /// fresh instance. `name` says which backend it is in messages.
    pub fn rowkit(name: &str, start: StartServer) -> Result<Emulator, String> {
        let host = start()?;
        Ok(Emulator {
            host,
            child: Mutex::new(None),
            stdin: Mutex::new(None),
            base: OnceLock::new(),
            instances: AtomicU64::new(0),
            rowkit: Some(RowkitServers {
                name: name.to_string(),
                start,
                hosts: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// Whether this fixture is rowkit's own server (held to production's behaviour: suites
    /// apply no emulator deviation list to it).
    pub fn is_rowkit(&self) -> bool {
        self.rowkit.is_some()
    }

    /// What the fixture runs: `cbtemulator`, or the name given to [`Emulator::rowkit`].
    pub fn name(&self) -> &str {
        self.rowkit.as_ref().map_or("cbtemulator", |r| &r.name)
    }

    /// The emulator deviations a suite tolerates here: `listed` on the emulator, none on
    /// rowkit.
    pub fn deviations<'a, T>(&self, listed: &'a [T]) -> &'a [T] {
        if self.is_rowkit() { &[] } else { listed }
    }

    /// `HOST:PORT` serving `instance` (the one emulator, or that instance's rowkit server).
    pub fn host_for(&self, instance: &str) -> String {
        self.rowkit
            .as_ref()
            .and_then(|r| r.hosts.lock().ok()?.get(instance).cloned())
            .unwrap_or_else(|| self.host.clone())
    }

    /// The emulator shared by the whole test binary, started on first use. `None` when the
    /// emulator is not installed and `CI` is not `true` (after printing a loud skip message
    /// naming `test`); panics when it is missing under `CI=true` or fails to start.
    pub fn shared_or_skip(test: &str) -> Option<&'static Emulator> {
        static SHARED: OnceLock<Result<Emulator, String>> = OnceLock::new();
        let shared = SHARED.get_or_init(|| Emulator::start().map_err(|e| e.to_string()));
        match shared {
            Ok(e) => Some(e),
            Err(e) if !Self::is_installed() && std::env::var("CI").as_deref() != Ok("true") => {
                eprintln!(
                    "\n!!!!! SKIPPED {test}: {e}\n!!!!! (tests against the emulator fail instead when CI=true)\n"
                );
                None
            }
            Err(e) => panic!("{test}: {e}"),
        }
    }

    /// `HOST:PORT` of the emulator.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// A target on a new, never-used instance (the emulator creates instances on demand, so
    /// each one is an empty namespace).
    pub fn fresh_target(&self) -> Target {
        let n = self.instances.fetch_add(1, Ordering::SeqCst);
        let instance = format!("i{n}");
        let host = match &self.rowkit {
            None => self.host.clone(),
            Some(r) => {
                let host = (r.start)()
                    .unwrap_or_else(|e| panic!("starting {} for {instance}: {e}", r.name));
                if let Ok(mut hosts) = r.hosts.lock() {
                    hosts.insert(instance.clone(), host.clone());
                }
                host
            }
        };
        Target::emulator(host, PROJECT, &instance)
    }

    /// `bigtable://PROJECT/INSTANCE?emulator=HOST:PORT` for `target`'s instance.
    pub fn url(&self, instance: &str) -> String {
        format!(
            "bigtable://{PROJECT}/{instance}?emulator={}",
            self.host_for(instance)
        )
    }

    /// A blocking store on a fresh instance (on a rowkit fixture: a new server, a new
    /// connection). All stores of one emulator share one runtime
    /// and one HTTP/2 connection.
    pub fn fresh_store(&self) -> BigtableStore {
        if let Some(r) = &self.rowkit {
            let target = self.fresh_target();
            return BigtableStore::connect(target, None)
                .unwrap_or_else(|e| panic!("connecting to {}: {e}", r.name));
        }
        let base = self.base.get_or_init(|| {
            BigtableStore::connect(Target::emulator(self.host.clone(), PROJECT, "base"), None)
                .map_err(|e| e.to_string())
        });
        let target = self.fresh_target();
        match base {
            Ok(store) => store.with_instance(&target.project, &target.instance),
            Err(e) => panic!("connecting to the emulator at {}: {e}", self.host),
        }
    }

    /// Runs `cbt -project PROJECT -instance INSTANCE ARGS…` against this emulator.
    pub fn cbt(&self, instance: &str, args: &[&str]) -> std::io::Result<std::process::Output> {
        Command::new(CBT_BIN)
            .env("BIGTABLE_EMULATOR_HOST", self.host_for(instance))
            // The emulator needs no credentials; without a file cbt asks gcloud for them,
            // which costs about 2 s per call.
            .args(["-creds", "/dev/null"])
            .args(["-project", PROJECT, "-instance", instance])
            .args(args)
            .output()
    }

    /// Stops the emulator now (also done by `Drop`, and by the wrapper when this process
    /// exits).
    pub fn stop(&self) {
        if let Ok(mut stdin) = self.stdin.lock() {
            stdin.take();
        }
        if let Ok(mut child) = self.child.lock()
            && let Some(mut child) = child.take()
        {
            let _ = child.wait();
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.stop();
    }
}
