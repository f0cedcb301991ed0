//! [`FetchDriver`]: the driver over a rowkit gateway from a browser, a worker or Node
//! (`rowkit_fetch`, wasm32), feature `fetch`.
//!
//! Every request is one `fetch` of its own, all in flight at once; an abort aborts that
//! fetch. Waits are JS timers and `now` is `Date.now()`. The gateway serves the data API only,
//! so tables cannot be created or changed from here: set them up with `rowkit <schema> setup`
//! on the served store (`ensure_table` checks they exist).

use core::future::Future;

use futures_core::Stream;
use futures_util::StreamExt;
use rowkit_codec::model::ColumnFamily;
use rowkit_fetch::Gateway;
use rowkit_statemachines::{Code, ReadRowsRequest, Request, Response, StoreError, Timestamp};
use web_sys::AbortSignal;

use crate::Driver;

/// The browser driver: a gateway, and the signal that cancels its operations (see the module
/// doc).
#[derive(Clone, Debug)]
pub struct FetchDriver {
    gateway: Gateway,
    signal: Option<AbortSignal>,
}

impl FetchDriver {
    /// A driver talking to `gateway`.
    pub fn new(gateway: Gateway) -> FetchDriver {
        FetchDriver {
            gateway,
            signal: None,
        }
    }

    /// The same driver, every operation of which `signal` cancels when it aborts.
    pub fn with_signal(mut self, signal: AbortSignal) -> FetchDriver {
        self.signal = Some(signal);
        self
    }

    /// The gateway.
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    fn no_admin(&self, what: &str) -> StoreError {
        StoreError::new(
            Code::Unimplemented,
            format!(
                "{what}: the gateway at {} serves the data API only (set tables up with \
                 `rowkit <schema> setup` on the served store)",
                self.gateway.base_url
            ),
        )
    }
}

impl Driver for FetchDriver {
    fn now(&self) -> Timestamp {
        rowkit_fetch::now()
    }

    fn call(&self, request: Request) -> impl Stream<Item = Result<Response, StoreError>> {
        rowkit_fetch::call(&self.gateway, request)
    }

    fn sleep_until(&self, at: Timestamp) -> impl Future<Output = ()> {
        rowkit_fetch::sleep_until(at)
    }

    /// Cannot create: answers `ALREADY_EXISTS` if `table` exists (its families unchecked), so
    /// [`crate::ensure_table`] works over a gateway whose store was set up, and an error
    /// saying how to set it up if not.
    fn create_table(
        &self,
        table: &str,
        _: &[ColumnFamily],
    ) -> impl Future<Output = Result<(), StoreError>> {
        let probe = ReadRowsRequest {
            table: table.to_string(),
            rows_limit: 1,
            ..ReadRowsRequest::default()
        };
        let mut answers = Box::pin(self.call(Request::ReadRows(probe)));
        async move {
            while let Some(answer) = answers.next().await {
                match answer {
                    Err(e) if e.code == Code::NotFound => {
                        return Err(self.no_admin(&format!("creating table {table}")));
                    }
                    Err(e) => return Err(e),
                    Ok(Response::StreamEnd) => break,
                    Ok(_) => {}
                }
            }
            Err(StoreError::new(
                Code::AlreadyExists,
                format!("table {table} exists"),
            ))
        }
    }

    fn families(&self, table: &str) -> impl Future<Output = Result<Vec<ColumnFamily>, StoreError>> {
        core::future::ready(Err(self.no_admin(&format!("reading the schema of {table}"))))
    }

    fn set_family(
        &self,
        table: &str,
        family: &ColumnFamily,
    ) -> impl Future<Output = Result<(), StoreError>> {
        core::future::ready(Err(
            self.no_admin(&format!("adding family {} to {table}", family.name))
        ))
    }

    fn cancelled(&self) -> impl Future<Output = ()> {
        let signal = self.signal.clone();
        async move {
            match signal {
                Some(signal) => rowkit_fetch::aborted(&signal).await,
                None => core::future::pending().await,
            }
        }
    }
}
