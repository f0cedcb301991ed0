//! Where a client's machines send their requests: the page's in-memory store (offline mode) or
//! a gateway over `fetch`. [`PageDriver`] is one `rowkit_client::Driver` for both, so every
//! class is a thin caller of `rowkit-client`'s facades.
//!
//! Options every client takes (all optional):
//! `{ gateway: "http://127.0.0.1:8642", token, project, instance, table, seed, signal }`.
//! Without `gateway` the client uses the page's memory store, shared by every offline client
//! of the page (so the table browser sees what the operation panels wrote).

use std::cell::Cell;
use std::rc::Rc;

use futures_core::Stream;
use futures_util::future::Either;
use rowkit_client::{Driver, FetchDriver, RunError, SyncDriver};
use rowkit_codec::model::ColumnFamily;
use rowkit_embedded::MemoryStore;
use rowkit_embedded::driver::Clock;
use rowkit_fetch::Gateway;
use rowkit_statemachines::{Request, Response, StoreError, Timestamp};
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

/// The page's driver: its memory store or a gateway.
#[derive(Clone)]
pub enum PageDriver {
    /// The page's memory store, on the page clock.
    Memory(SyncDriver<Rc<MemoryStore>, Rc<PageClock>>),
    /// A gateway, over fetch.
    Gateway(FetchDriver),
}

impl Driver for PageDriver {
    fn now(&self) -> Timestamp {
        match self {
            PageDriver::Memory(d) => d.now(),
            PageDriver::Gateway(d) => d.now(),
        }
    }

    fn call(&self, request: Request) -> impl Stream<Item = Result<Response, StoreError>> {
        match self {
            PageDriver::Memory(d) => Either::Left(d.call(request)),
            PageDriver::Gateway(d) => Either::Right(d.call(request)),
        }
    }

    fn sleep_until(&self, at: Timestamp) -> impl Future<Output = ()> {
        match self {
            PageDriver::Memory(d) => Either::Left(d.sleep_until(at)),
            PageDriver::Gateway(d) => Either::Right(d.sleep_until(at)),
        }
    }

    fn blocking_waits(&self) -> bool {
        match self {
            PageDriver::Memory(d) => d.blocking_waits(),
            PageDriver::Gateway(d) => d.blocking_waits(),
        }
    }

    fn create_table(
        &self,
        table: &str,
        families: &[ColumnFamily],
    ) -> impl Future<Output = Result<(), StoreError>> {
        match self {
            PageDriver::Memory(d) => Either::Left(d.create_table(table, families)),
            PageDriver::Gateway(d) => Either::Right(d.create_table(table, families)),
        }
    }

    fn families(&self, table: &str) -> impl Future<Output = Result<Vec<ColumnFamily>, StoreError>> {
        match self {
            PageDriver::Memory(d) => Either::Left(d.families(table)),
            PageDriver::Gateway(d) => Either::Right(d.families(table)),
        }
    }

    fn set_family(
        &self,
        table: &str,
        family: &ColumnFamily,
    ) -> impl Future<Output = Result<(), StoreError>> {
        match self {
            PageDriver::Memory(d) => Either::Left(d.set_family(table, family)),
            PageDriver::Gateway(d) => Either::Right(d.set_family(table, family)),
        }
    }

    fn cancelled(&self) -> impl Future<Output = ()> {
        match self {
            PageDriver::Memory(d) => Either::Left(d.cancelled()),
            PageDriver::Gateway(d) => Either::Right(d.cancelled()),
        }
    }
}

// The options object's TypeScript type (the package's `.d.ts`), next to the code that reads it.
#[wasm_bindgen(typescript_custom_section)]
const CLIENT_OPTIONS_TS: &str = r#"
/**
 * Options every client takes (all optional). Without `gateway` the client works on the
 * module's in-memory store, shared by every offline client of the page (or Node process).
 */
export interface ClientOptions {
    /** A rowkit gateway's base URL (`rowkit serve`), e.g. `"http://127.0.0.1:8080"`. */
    gateway?: string;
    /** The bearer token the gateway requires (`rowkit serve --token`). */
    token?: string;
    /** The project named in the gateway's paths (default `"p"`). */
    project?: string;
    /** The instance named in the gateway's paths (default `"i"`). */
    instance?: string;
    /** The table id, instead of the schema's default. */
    table?: string;
    /** Base seed of the operations' randomness: a whole number from 0 to 2^53-1 (default 1). */
    seed?: number;
    /** Aborting it cancels every operation of the client (gateway only). */
    signal?: AbortSignal;
}
"#;

/// The options common to every client.
#[derive(Clone)]
pub struct ClientOptions {
    /// Where requests go (a gateway driver carries the options' `signal`, which cancels every
    /// operation of the client when aborted).
    pub driver: PageDriver,
    /// Table id override.
    pub table: Option<String>,
    /// Base seed of the operations' randomness.
    pub seed: u64,
}

impl ClientOptions {
    /// Reads the options object (`undefined`: offline, defaults).
    pub fn from_js(options: &JsValue) -> Result<ClientOptions, JsValue> {
        let driver = match js::get_string(options, "gateway")? {
            Some(url) => {
                let mut gw = Gateway::new(&url);
                gw.token = js::get_string(options, "token")?;
                if let Some(p) = js::get_string(options, "project")? {
                    gw.project = p;
                }
                if let Some(i) = js::get_string(options, "instance")? {
                    gw.instance = i;
                }
                let mut driver = FetchDriver::new(gw);
                if let Ok(signal) = js::get(options, "signal").dyn_into::<AbortSignal>() {
                    driver = driver.with_signal(signal);
                }
                PageDriver::Gateway(driver)
            }
            None => {
                PageDriver::Memory(SyncDriver::new(page_store(), Rc::new(PageClock::default())))
            }
        };
        let seed = match js::get_number(options, "seed")? {
            Some(n) => js::to_u64(n, "seed")?,
            None => 1,
        };
        Ok(ClientOptions {
            driver,
            table: js::get_string(options, "table")?,
            seed,
        })
    }

    /// Whether requests go to a gateway.
    pub fn is_gateway(&self) -> bool {
        matches!(self.driver, PageDriver::Gateway(_))
    }
}

/// A run failure as a JS error: the machine's error through `to_js`, a stall as `internal`.
pub fn run_error<E>(e: RunError<E>, to_js: impl FnOnce(E) -> JsValue) -> JsValue {
    match e {
        RunError::Machine(e) => to_js(e),
        RunError::Stalled => js::error("internal", "machine stalled"),
        _ => js::error("internal", "the driver failed"),
    }
}
