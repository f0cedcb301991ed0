//! Servers that run in the background of a process (test fixtures: the Bigtable adapter's
//! suites run against rowkit as they run against the emulator), on one Tokio runtime shared by
//! all of them, until the process exits.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use rowkit_store::Store;
use rowkit_store::driver::SystemClock;

use crate::{GrpcConfig, GrpcServer};

fn runtime() -> std::io::Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("rowkit-grpc")
        .build()?;
    Ok(RUNTIME.get_or_init(|| rt))
}

/// Starts a server over `store` on a free loopback port, with the system clock and no token,
/// and returns its address.
pub fn serve(store: Arc<dyn Store>) -> std::io::Result<SocketAddr> {
    let rt = runtime()?;
    let config = GrpcConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        token: None,
    };
    let server = rt
        .block_on(GrpcServer::bind(config, store, Arc::new(SystemClock)))
        .map_err(std::io::Error::other)?;
    let addr = server.local_addr()?;
    rt.spawn(server.serve(std::future::pending()));
    Ok(addr)
}
