//! Where a client's machines send their requests: the page's in-memory store (offline mode) or
//! a gateway over `fetch` (`rowkit-fetch`). Both run the same machine values; only the driver
//! differs, so a client is written once.
//!
//! Options every client takes (all optional):
//! `{ gateway: "http://127.0.0.1:8642", token, project, instance, table, seed, signal }`.
//! Without `gateway` the client uses the page's memory store, shared by every offline client
//! of the page (so the table browser sees what the operation panels wrote).

use std::cell::Cell;
use std::rc::Rc;

use rowkit_codec::model::ColumnFamily;
use rowkit_embedded::MemoryStore;
use rowkit_embedded::Store;
use rowkit_embedded::driver::{self, Clock, RunError};
use rowkit_fetch::Gateway;
use rowkit_statemachines::{Code, Machine, StoreError, Timestamp};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use crate::js;

thread_local! {
    /// The page's memory store (wasm is single-threaded: one per module instance).
    static PAGE_STORE: Rc<MemoryStore> = Rc::new(MemoryStore::new());
}

/// The page's memory store.
pub fn page_store() -> Rc<MemoryStore> {
    PAGE_STORE.with(Rc::clone)
}

/// Wall-clock time for the in-memory driver. Waiting (retry back-off) cannot block a page, so
/// the clock jumps: it keeps an offset added to `Date.now()`. Only retries after an error ever
/// wait, and the memory store does not fail transiently.
#[derive(Debug, Default)]
pub struct PageClock {
    offset_us: Cell<i64>,
}

impl Clock for PageClock {
    fn now(&self) -> Timestamp {
        Timestamp(rowkit_fetch::now().0.saturating_add(self.offset_us.get()))
    }

    fn sleep_until(&self, t: Timestamp) {
        let wait = t.0.saturating_sub(self.now().0);
        if wait > 0 {
            self.offset_us
                .set(self.offset_us.get().saturating_add(wait));
        }
    }
}

/// Where requests go.
#[derive(Clone)]
pub enum Backend {
    /// The page's memory store.
    Memory(Rc<MemoryStore>, Rc<PageClock>),
    /// A gateway, over fetch.
    Gateway(Gateway),
}

/// The options common to every client.
#[derive(Clone)]
pub struct ClientOptions {
    /// Where requests go.
    pub backend: Backend,
    /// Table id override.
    pub table: Option<String>,
    /// Base seed of the operations' randomness.
    pub seed: u64,
    /// Cancels every operation of the client when aborted (gateway mode).
    pub signal: Option<AbortSignal>,
}

impl ClientOptions {
    /// Reads the options object (`undefined`: offline, defaults).
    pub fn from_js(options: &JsValue) -> Result<ClientOptions, JsValue> {
        let backend = match js::get_string(options, "gateway")? {
            Some(url) => {
                let mut gw = Gateway::new(&url);
                gw.token = js::get_string(options, "token")?;
                if let Some(p) = js::get_string(options, "project")? {
                    gw.project = p;
                }
                if let Some(i) = js::get_string(options, "instance")? {
                    gw.instance = i;
                }
                Backend::Gateway(gw)
            }
            None => Backend::Memory(page_store(), Rc::new(PageClock::default())),
        };
        let seed = match js::get_number(options, "seed")? {
            Some(n) => js::to_u64(n, "seed")?,
            None => 1,
        };
        let signal = js::get(options, "signal").dyn_into::<AbortSignal>().ok();
        Ok(ClientOptions {
            backend,
            table: js::get_string(options, "table")?,
            seed,
            signal,
        })
    }

    /// The current time as the backend sees it.
    pub fn now(&self) -> Timestamp {
        match &self.backend {
            Backend::Memory(_, clock) => clock.now(),
            Backend::Gateway(_) => rowkit_fetch::now(),
        }
    }

    /// Whether requests go to a gateway.
    pub fn is_gateway(&self) -> bool {
        matches!(self.backend, Backend::Gateway(_))
    }

    /// Runs `machine` to completion, handing its events to `on_event`.
    pub async fn run<M: Machine>(
        &self,
        machine: M,
        on_event: impl FnMut(M::Event),
    ) -> Result<M::Output, RunError<M::Error>> {
        match &self.backend {
            Backend::Memory(store, clock) => driver::run(&**store, &**clock, machine, on_event),
            Backend::Gateway(gw) => {
                rowkit_fetch::run(gw, machine, on_event, self.signal.as_ref()).await
            }
        }
    }

    /// Creates `table` with `families` if it does not exist. Only the memory store can: the
    /// gateway serves the data API alone, so on a gateway the table must have been created
    /// with `rowkit <schema> setup` on the served store (this is then a no-op).
    pub fn ensure_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Memory(store, _) => match store.create_table(table, families) {
                Err(e) if e.code != Code::AlreadyExists => Err(e),
                _ => Ok(()),
            },
            Backend::Gateway(_) => Ok(()),
        }
    }

    /// The families of `table` (memory mode only; `None` on a gateway).
    pub fn families(&self, table: &str) -> Option<Result<Vec<ColumnFamily>, StoreError>> {
        match &self.backend {
            Backend::Memory(store, _) => Some(store.families(table)),
            Backend::Gateway(_) => None,
        }
    }
}

/// A run failure as a JS error: the machine's error through `to_js`, a stall as `internal`.
pub fn run_error<E>(e: RunError<E>, to_js: impl FnOnce(E) -> JsValue) -> JsValue {
    match e {
        RunError::Machine(e) => to_js(e),
        RunError::Stalled => js::error("internal", "machine stalled"),
    }
}
