//! [`FetchDriver`]: the driver over a rowkit gateway from a browser, a worker or Node
//! (`rowkit_fetch`, wasm32), feature `fetch`.
//!
//! Every request is one `fetch` of its own, all in flight at once; an abort aborts that
//! fetch. Waits are JS timers and `now` is `Date.now()`. Tables are created and their families
//! read and changed through the gateway's table admin calls (Google's Admin v2 JSON shapes), so
//! a facade's `setup` works against `rowkit serve` as on any other store.

use core::cell::RefCell;
use core::future::Future;
use std::rc::Rc;

use futures_core::Stream;
use futures_util::StreamExt;
use rowkit_codec::model::{ColumnFamily, FamilyChange};
use rowkit_fetch::Gateway;
use rowkit_statemachines::{Code, Request, Response, StoreError, Timestamp};
use web_sys::AbortSignal;

use crate::Driver;

/// The browser driver: a gateway, the signal that cancels its operations, and the last
/// failure of its requests (see the module doc).
#[derive(Clone, Debug)]
pub struct FetchDriver {
    gateway: Gateway,
    signal: Option<AbortSignal>,
    /// The error the latest answer of any request was, `None` after an answer that was not
    /// one; shared by the driver's clones. An operation that gives up retrying says only that
    /// it gave up (some schemas' errors are a bare "aborted"): this says why.
    last_failure: Rc<RefCell<Option<StoreError>>>,
}

impl FetchDriver {
    /// A driver talking to `gateway`.
    pub fn new(gateway: Gateway) -> FetchDriver {
        FetchDriver {
            gateway,
            signal: None,
            last_failure: Rc::default(),
        }
    }

    /// The error the latest answer from the gateway was (a refused connection, a timeout, an
    /// error status), or `None` if the latest answer was not an error.
    pub fn last_failure(&self) -> Option<StoreError> {
        self.last_failure.borrow().clone()
    }

    /// Forgets the last failure, so that what [`FetchDriver::last_failure`] says next is about
    /// what is sent from now on.
    pub fn forget_last_failure(&self) {
        self.last_failure.borrow_mut().take();
    }

    /// Whether the caller's signal has cancelled the driver's operations.
    pub fn is_cancelled(&self) -> bool {
        self.signal.as_ref().is_some_and(AbortSignal::aborted)
    }

    /// Notes an admin call's outcome as the latest answer.
    fn note<T>(&self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        *self.last_failure.borrow_mut() = result.as_ref().err().cloned();
        result
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
}

impl Driver for FetchDriver {
    fn now(&self) -> Timestamp {
        rowkit_fetch::now()
    }

    fn call(&self, request: Request) -> impl Stream<Item = Result<Response, StoreError>> {
        let last_failure = self.last_failure.clone();
        rowkit_fetch::call(&self.gateway, request).inspect(move |answer| {
            *last_failure.borrow_mut() = answer.as_ref().err().cloned();
        })
    }

    fn sleep_until(&self, at: Timestamp) -> impl Future<Output = ()> {
        rowkit_fetch::sleep_until(at)
    }

    async fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        self.note(rowkit_fetch::create_table(&self.gateway, table, families).await)
    }

    async fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        self.note(rowkit_fetch::families(&self.gateway, table).await)
    }

    /// A `create`, or an `update` when the table has the family (`ALREADY_EXISTS`).
    async fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        let create = [FamilyChange::Create(family.clone())];
        let created = rowkit_fetch::modify_families(&self.gateway, table, &create).await;
        let result = match created {
            Err(e) if e.code == Code::AlreadyExists => {
                let update = [FamilyChange::Update(family.clone())];
                rowkit_fetch::modify_families(&self.gateway, table, &update).await
            }
            other => other,
        };
        self.note(result).map(|_| ())
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
