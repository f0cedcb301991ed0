//! `rowkit serve`: the Bigtable v2 JSON gateway (`rowkit-gateway`) over the `--store`, plus the
//! browser tool — built into the binary (`build.rs` embeds `wasm/www` with its committed wasm
//! package), or a directory given with `--www` (development) — and with `--grpc` the Bigtable
//! v2 gRPC server (`rowkit-grpc`) over the same store in the same process. Prints the URL (then
//! the gRPC address) once the sockets are bound (so callers can ask for port 0 and read the
//! real one), then serves until SIGINT or SIGTERM, drains calls in flight for `--drain` seconds
//! and exits 0.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use std::time::Duration;

use clap::Args;
use rowkit_gateway::{DEFAULT_MAX_BODY_BYTES, Gateway, GatewayConfig, GatewayError};
use rowkit_serving::ServeError;
use rowkit_serving::connections::{
    ConnectionLimits, Connections, DEFAULT_DRAIN, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_STREAMS,
};
use rowkit_statemachines::{Code, StoreError};
use rowkit_store::Store;
use rowkit_store::driver::Clock;
use tokio::sync::watch;

use crate::args::Context;
use crate::error::CliError;
use crate::output::Output;

/// `rowkit serve` options.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The store and its clock.
    #[command(flatten)]
    pub store: crate::args::StoreArgs,
    /// Address to listen on (`IP:PORT` or `HOST:PORT`, e.g. `localhost:8080`). Anything but
    /// loopback requires --token.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR", value_parser = parse_listen)]
    pub listen: SocketAddr,
    /// Bearer token every data request must carry (`Authorization: Bearer TOKEN`); the
    /// browser tool's files are served without it.
    #[arg(long, env = "ROWKIT_GATEWAY_TOKEN", value_name = "TOKEN")]
    pub token: Option<String>,
    /// Origin allowed to call the API from a browser (repeatable); default: loopback origins.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    pub cors_origins: Vec<String>,
    /// Directory of the browser tool, read per request (for development); default: the tool
    /// built into rowkit.
    #[arg(long, value_name = "DIR")]
    pub www: Option<PathBuf>,
    /// Largest request body accepted, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_BODY_BYTES, value_name = "BYTES")]
    pub max_body_bytes: usize,
    /// A host name requests may be addressed to (`NAME` or `NAME:PORT`; repeatable), besides IP
    /// addresses and `localhost`: requests naming any other `Host` are refused, so a web page
    /// cannot reach the gateway through DNS rebinding.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// The directory `rowkit admin backup` through this server may write into (or below);
    /// without it the server takes no backups.
    #[arg(long, value_name = "DIR")]
    pub backup_dir: Option<PathBuf>,
    /// Also serve the Bigtable v2 gRPC API (data and table admin) on ADDR (default
    /// 127.0.0.1:8086), beside the JSON gateway, over the same store: `cbt` and the official
    /// clients reach it with BIGTABLE_EMULATOR_HOST=ADDR. Same token rule as the gateway
    /// (--token, sent as `authorization: Bearer TOKEN` metadata). Its address (HOST:PORT) is
    /// printed on the line after the URL.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = rowkit_grpc::DEFAULT_LISTEN, value_parser = parse_listen)]
    pub grpc: Option<SocketAddr>,
    /// Seconds between two garbage-collection passes over every table of the store (cells
    /// beyond a family's maxversions/maxage are removed in the background, in short batches
    /// that never hold writers for long); 0 turns it off. Only for memory: and embedded:
    /// stores (Bigtable collects by itself).
    #[arg(long, default_value_t = rowkit_gateway::gc::DEFAULT_GC_INTERVAL.as_secs(), value_name = "SECS")]
    pub gc_interval: u64,
    /// Serve --grpc over TLS with this certificate chain (PEM, the server's certificate
    /// first), as Cloud Bigtable is reached: clients take `https://ADDR` as their endpoint and
    /// trust the certificate's CA, instead of BIGTABLE_EMULATOR_HOST. Needs --tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["grpc", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM: PKCS#8, PKCS#1 or SEC1) of --tls-cert (`-`: stdin, for a key kept
    /// out of the file system).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Connections open at once over both servers; beyond it the oldest idle one is closed.
    /// Default: the fd limit (raised to its hard limit) less headroom, at most 16384.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: Option<u32>,
    /// Seconds a new connection has to send a complete request head (and finish TLS).
    #[arg(long, default_value_t = DEFAULT_HEADER_TIMEOUT.as_secs(), value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub header_timeout: u64,
    /// Seconds a connection may stay open with no request in flight.
    #[arg(long, default_value_t = DEFAULT_IDLE_TIMEOUT.as_secs(), value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub idle_timeout: u64,
    /// Concurrent HTTP/2 streams (calls) per connection.
    #[arg(long, default_value_t = DEFAULT_MAX_STREAMS, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_streams: u32,
    /// Seconds calls in flight get to finish after SIGINT or SIGTERM (a second signal exits at
    /// once).
    #[arg(long, default_value_t = DEFAULT_DRAIN.as_secs(), value_name = "SECS", value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub drain: u64,
    /// How the request log on stderr is written: `text` (one line per request) or `json` (one
    /// JSON object per line). What is logged: `RUST_LOG` (default: requests at info, errors the
    /// server owns at warn).
    #[arg(long, value_enum, default_value_t = LogFormat::Text, value_name = "FORMAT")]
    pub log_format: LogFormat,
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `2026-11-29T06:00:00.000000Z  INFO rowkit_gateway::…: request method="POST" …`.
    Text,
    /// `{"timestamp":…,"level":"INFO","message":"request","method":"POST",…}`.
    Json,
}

/// What is logged without `RUST_LOG`: rowkit's request lines (info), and only warnings and
/// errors of the libraries under it (hyper, h2, tonic).
const DEFAULT_LOG_FILTER: &str =
    "warn,rowkit=info,rowkit_serving=info,rowkit_gateway=info,rowkit_grpc=info";

/// Sends the servers' `tracing` events to stderr in `format`, filtered by `RUST_LOG` (or
/// [`DEFAULT_LOG_FILTER`]). Only `serve` logs: the other commands' stderr is their message.
fn start_logging(format: LogFormat) -> Result<(), CliError> {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(&directives)
            .map_err(|e| CliError::usage(format!("RUST_LOG={directives:?}: {e}")))?,
        _ => EnvFilter::new(DEFAULT_LOG_FILTER),
    };
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // Already set (never, in the binary) is not a reason to refuse to serve.
    let _ = match format {
        LogFormat::Text => logs.try_init(),
        LogFormat::Json => logs.json().flatten_event(true).try_init(),
    };
    Ok(())
}

impl ServeArgs {
    /// The connection limits these flags ask for.
    fn connection_limits(&self) -> ConnectionLimits {
        let defaults = ConnectionLimits::default();
        ConnectionLimits {
            max_connections: self
                .max_connections
                .map_or(defaults.max_connections, |n| n as usize),
            header_timeout: Duration::from_secs(self.header_timeout),
            idle_timeout: Duration::from_secs(self.idle_timeout),
            max_streams: self.max_streams,
            drain: Duration::from_secs(self.drain),
        }
    }
}

/// Resolves when SIGINT or SIGTERM arrives; a second one exits the process at once
/// (128 + the signal, as a shell reports it).
fn stop_signal() -> Result<watch::Receiver<bool>, CliError> {
    let (tx, rx) = watch::channel(false);
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let cannot = |e: std::io::Error| CliError::usage(format!("cannot watch signals: {e}"));
        let mut interrupt = signal(SignalKind::interrupt()).map_err(cannot)?;
        let mut terminate = signal(SignalKind::terminate()).map_err(cannot)?;
        tokio::spawn(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            let _ = tx.send(true);
            let _ = writeln!(
                crate::output::info_stream(),
                "rowkit serve: stopping; draining calls in flight (a second signal exits now)"
            );
            let code = tokio::select! {
                _ = interrupt.recv() => 130,
                _ = terminate.recv() => 143,
            };
            std::process::exit(code);
        });
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        let _ = tx.send(true);
        let _ = tokio::signal::ctrl_c().await;
        std::process::exit(130);
    });
    Ok(rx)
}

/// Resolves once `stop` turned true.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// The contents of a `--FLAG FILE` argument.
fn read_flag_file(flag: &str, path: &std::path::Path) -> Result<Vec<u8>, CliError> {
    crate::input::read_bytes(path).map_err(|e| {
        CliError::usage(format!(
            "--{flag} {}: {e}",
            crate::input::display_name(path)
        ))
    })
}

/// `IP:PORT`, or `HOST:PORT` resolved now (an IPv4 address first, as `localhost` usually
/// means 127.0.0.1 to the clients that will call it).
/// A server that could not start: an address taken or not ours is a failed operation (the
/// address itself was well-formed), anything else a usage error.
fn start_error(e: ServeError) -> CliError {
    match e {
        ServeError::Bind { .. } => {
            CliError::Store(StoreError::new(Code::Unavailable, e.to_string()))
        }
        _ => CliError::usage(e.to_string()),
    }
}

fn parse_listen(value: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = value.parse() {
        return Ok(addr);
    }
    if value
        .rsplit_once(':')
        .is_none_or(|(_, port)| port.parse::<u16>().is_err())
    {
        return Err("expected IP:PORT or HOST:PORT".into());
    }
    let addrs: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(value)
        .map_err(|e| format!("cannot resolve it: {e}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| "it resolves to no address".into())
}

// `WWW_FILES`: the browser tool's files, from build.rs.
include!(concat!(env!("OUT_DIR"), "/www_files.rs"));

/// Runs the gateway (and the gRPC server) until SIGINT or SIGTERM, then drains and returns.
pub fn run(ctx: Context, args: &ServeArgs, out: &Output) -> Result<(), CliError> {
    start_logging(args.log_format)?;
    let www = match &args.www {
        Some(dir) if !dir.is_dir() => {
            return Err(CliError::usage(format!(
                "--www {}: not a directory",
                dir.display()
            )));
        }
        dir => dir.clone(),
    };
    let config = GatewayConfig {
        listen: args.listen,
        token: args.token.clone(),
        cors_origins: args.cors_origins.clone(),
        www,
        www_files: WWW_FILES,
        max_body_bytes: args.max_body_bytes,
        allowed_hosts: args.allowed_hosts.clone(),
        backup_dir: args.backup_dir.clone(),
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        // stdin can be read once.
        (Some(cert), Some(key)) if [cert, key].iter().all(|p| p.as_os_str() == "-") => {
            return Err(CliError::usage(
                "--tls-cert and --tls-key cannot both be read from stdin (-)",
            ));
        }
        (Some(cert), Some(key)) => Some((
            read_flag_file("tls-cert", cert)?,
            read_flag_file("tls-key", key)?,
        )),
        _ => None,
    };
    // Kept here as well as in the server so the store (which may own a Tokio runtime of its
    // own, for Bigtable) is dropped after the server's runtime, outside any async context.
    let store: Arc<dyn Store> = Arc::from(ctx.store);
    let clock: Arc<dyn Clock + Send + Sync> = Arc::from(ctx.clock);
    // Before the limits are computed from it: connections get what the operator allows.
    rowkit_serving::connections::raise_fd_limit();
    let connections = Connections::new(args.connection_limits());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::usage(format!("cannot start the server runtime: {e}")))?;
    // One GC task for the process, whichever servers run over the store.
    let gc = rowkit_gateway::gc::BackgroundGc::start(
        store.clone(),
        clock.clone(),
        std::time::Duration::from_secs(args.gc_interval),
    )
    .map_err(|e| CliError::usage(format!("cannot start the background GC: {e}")))?;
    let result = runtime.block_on(async {
        let stop = stop_signal()?;
        let grpc = match args.grpc {
            Some(listen) => {
                let grpc_config = rowkit_grpc::GrpcConfig {
                    listen,
                    token: config.token.clone(),
                };
                let server =
                    rowkit_grpc::GrpcServer::bind(grpc_config, store.clone(), clock.clone())
                        .await
                        .map_err(start_error)?;
                Some(match &tls {
                    Some((cert, key)) => server.with_tls(cert, key).map_err(|e| {
                        let why = rowkit_bigtable::error_chain(&e);
                        CliError::usage(format!("--tls-cert/--tls-key: {why}"))
                    })?,
                    None => server,
                })
            }
            None => None,
        };
        let gateway = Gateway::bind(config.clone(), store.clone(), clock)
            .await
            .map_err(|e| match e {
                GatewayError::Serve(e) => start_error(e),
                _ => CliError::usage(e.to_string()),
            })?;
        let url = gateway
            .url()
            .map_err(|e| CliError::usage(format!("cannot read the bound address: {e}")))?;
        // A server outlives its reader (`rowkit serve | head -1` takes the address and goes):
        // what it says here is best effort, never a reason to stop serving.
        let _ = if out.is_json() {
            writeln!(std::io::stdout(), "{}", serde_json::json!({ "url": url }))
        } else {
            writeln!(std::io::stdout(), "{url}")
        };
        let mut err = crate::output::info_stream();
        let _ = match &config.www {
            Some(dir) if !dir.join("index.html").is_file() => writeln!(
                err,
                "rowkit serve: --www {} has no index.html; the page says so",
                dir.display()
            ),
            Some(dir) => writeln!(err, "rowkit serve: browser tool from {}", dir.display()),
            None if WWW_FILES.is_empty() => writeln!(
                err,
                "rowkit serve: this rowkit was built without the browser tool; the page says so"
            ),
            None => writeln!(err, "rowkit serve: browser tool built into rowkit"),
        };
        let _ = writeln!(
            err,
            "rowkit serve: Bigtable v2 JSON API at {url}v2/projects/{{p}}/instances/{{i}}/tables/{{t}}:{{method}}{}; Ctrl-C or SIGTERM stops (after draining calls up to {} s)",
            if config.token.is_some() { " (bearer token required)" } else { "" },
            args.drain
        );
        let grpc = match grpc {
            Some(server) => {
                let addr = server
                    .local_addr()
                    .map_err(|e| CliError::usage(format!("cannot read the bound address: {e}")))?;
                let _ = if out.is_json() {
                    writeln!(std::io::stdout(), "{}", serde_json::json!({ "grpc": addr.to_string() }))
                } else {
                    writeln!(std::io::stdout(), "{addr}")
                };
                let reach = if tls.is_some() {
                    format!("TLS: endpoint https://{addr}")
                } else {
                    format!("BIGTABLE_EMULATOR_HOST={addr}")
                };
                let _ = writeln!(
                    err,
                    "rowkit serve: Bigtable v2 gRPC API at {addr} ({reach}){}",
                    if config.token.is_some() { " (bearer token required)" } else { "" }
                );
                Some(tokio::spawn(
                    server.serve_with(connections.clone(), stopped(stop.clone())),
                ))
            }
            None => None,
        };
        let served = gateway
            .serve_with(connections.clone(), stopped(stop))
            .await
            .map_err(|e| CliError::usage(format!("server failed: {e}")));
        if let Some(grpc) = grpc {
            match grpc.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(CliError::usage(format!("gRPC server failed: {e}"))),
                Err(e) => return Err(CliError::usage(format!("gRPC server failed: {e}"))),
            }
        }
        served
    });
    // Blocking store calls still running after the drain (a long scan whose client is gone)
    // get a moment to notice, not a say in when the process exits.
    runtime.shutdown_timeout(Duration::from_secs(1));
    // The GC thread holds the store too: it ends (within one step) before the store closes.
    drop(gc);
    drop(store);
    result
}
