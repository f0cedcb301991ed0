//! Where a client's machines send their requests: the page's in-memory store (offline mode) or
//! a gateway over `fetch`. [`PageDriver`] is one `rowkit_client::Driver` for both, so every
//! class is a thin caller of `rowkit-client`'s facades.
//!
//! Options every client takes (all optional):
//! `{ gateway: "http://127.0.0.1:8642", token, project, instance, table, seed, signal,
//! deadlineMs }`. [`Diagnosis`] explains a class's errors: a store not set up, a gateway that
//! does not answer.
//! Without `gateway` the client uses the page's memory store, shared by every offline client
//! of the page (so the table browser sees what the operation panels wrote).

use std::cell::Cell;
use std::rc::Rc;

use futures_core::Stream;
use futures_util::future::Either;
use js_sys::Promise;
use rowkit_client::{Driver, FetchDriver, RunError, SyncDriver};
use rowkit_codec::model::ColumnFamily;
use rowkit_fetch::Gateway;
use rowkit_statemachines::operation::STALLED_MESSAGE;
use rowkit_statemachines::{Code, Request, Response, StoreError, Timestamp};
use rowkit_store::MemoryStore;
use rowkit_store::driver::Clock;
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
    /**
     * How long each operation may take, in ms (default: each schema's own, 60 s for most,
     * an hour for checks). Through a gateway it also bounds each request: a stopped server
     * fails an operation with code `unavailable` once it has passed ("the gateway at … did not
     * answer within 8 s (last error: …)").
     */
    deadlineMs?: number;
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
    /// Every operation's deadline, in ms (`deadlineMs`; `None`: the schema's own).
    pub deadline_ms: Option<u32>,
}

impl ClientOptions {
    /// Reads the options object (`undefined`: offline, defaults).
    pub fn from_js(options: &JsValue) -> Result<ClientOptions, JsValue> {
        let deadline_ms = match js::get_number(options, "deadlineMs")? {
            Some(n) => Some(
                js::to_u64(n, "deadlineMs")
                    .ok()
                    .and_then(|ms| u32::try_from(ms).ok())
                    .filter(|ms| *ms > 0)
                    .ok_or_else(|| {
                        js::invalid("deadlineMs must be a whole number of ms from 1 to 2^32-1")
                    })?,
            ),
            None => None,
        };
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
                // One request may not outlive its operation.
                gw.timeout_ms = deadline_ms;
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
            deadline_ms,
        })
    }

    /// The operations' deadline in µs, when `deadlineMs` sets one.
    pub fn deadline_us(&self) -> Option<i64> {
        self.deadline_ms.map(|ms| i64::from(ms) * 1000)
    }

    /// The facades' options: the seed and `deadlineMs`.
    pub fn call_options(&self) -> rowkit_client::CallOptions {
        rowkit_client::CallOptions {
            seed: self.seed,
            deadline_micros: self.deadline_us(),
        }
    }

    /// A check's deadline in µs: `deadlineMs`, else an hour (as the CLI's).
    pub fn check_timeout_us(&self) -> i64 {
        self.deadline_us().unwrap_or(js::CHECK_TIMEOUT_MICROS)
    }

    /// What the errors of a client of these options say ([`Diagnosis`]) about its store,
    /// called `what` in messages, with the schema's `tables`.
    pub fn diagnosis(&self, what: &'static str, tables: Vec<String>) -> Diagnosis {
        Diagnosis {
            what,
            tables,
            gateway: match &self.driver {
                PageDriver::Gateway(d) => Some(d.clone()),
                PageDriver::Memory(_) => None,
            },
            // The default most schemas' operations have.
            deadline_ms: self.deadline_ms.unwrap_or(60_000),
        }
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
        RunError::Stalled => js::error("internal", STALLED_MESSAGE),
        _ => js::error("internal", "the driver failed"),
    }
}

/// What a client's errors say beyond the machine's own, for every method of its class
/// ([`Diagnosis::promise`]): a store without the schema's tables says Set up creates them
/// ([`js::not_set_up`]), and an operation that ended because the gateway did not answer says
/// so, with the last error it gave.
#[derive(Clone)]
pub struct Diagnosis {
    /// How messages call the class's store: `trace store`, `mount table`, …
    what: &'static str,
    /// The schema's tables.
    tables: Vec<String>,
    /// The gateway driver, when requests go to one.
    gateway: Option<FetchDriver>,
    /// The operations' deadline.
    deadline_ms: u32,
}

impl Diagnosis {
    /// `work` as a promise whose rejection is explained ([`Diagnosis::explain`]). Through a
    /// gateway, `work` is also given up once the deadline has passed while the gateway's last
    /// answer is a failure to answer: a schema may retry longer than the deadline by design
    /// (a mount table read retries for at least 60 s), but a page must hear within seconds
    /// that its server is gone. While the gateway answers, `work` runs to its own end.
    pub fn promise(
        &self,
        work: impl Future<Output = Result<JsValue, JsValue>> + 'static,
    ) -> Promise {
        let diagnosis = self.clone();
        if let Some(driver) = &self.gateway {
            // Only this operation's failures tell why it failed.
            driver.forget_last_failure();
        }
        let started = js_sys::Date::now();
        wasm_bindgen_futures::future_to_promise(async move {
            let work = core::pin::pin!(work);
            let gone = core::pin::pin!(diagnosis.gateway_gone(started));
            let result = match futures_util::future::select(work, gone).await {
                Either::Left((result, _)) => result,
                Either::Right((e, _)) => Err(e),
            };
            result.map_err(|e| diagnosis.explain(e, js_sys::Date::now() - started))
        })
    }

    /// Resolves, once the deadline from `started` (ms since the epoch) has passed, as soon as
    /// the gateway's last answer is a failure to answer; never without a gateway.
    async fn gateway_gone(&self, started: f64) -> JsValue {
        let Some(driver) = &self.gateway else {
            return core::future::pending().await;
        };
        let mut at = started + f64::from(self.deadline_ms);
        loop {
            rowkit_fetch::sleep_until(Timestamp((at * 1000.0) as i64)).await;
            if driver.last_failure().is_some_and(|f| is_unanswered(&f)) && !driver.is_cancelled() {
                return js::error("unavailable", "the gateway did not answer");
            }
            // A retry may be on its way: look again shortly.
            at = js_sys::Date::now() + 250.0;
        }
    }

    /// [`Diagnosis::promise`] for the methods that only write (resolves to `undefined`).
    pub fn promise_void(
        &self,
        work: impl Future<Output = Result<(), JsValue>> + 'static,
    ) -> Promise {
        self.promise(async move { work.await.map(|()| JsValue::UNDEFINED) })
    }

    /// `e`, the error of an operation that ran `elapsed_ms`: `not_set_up` when it says one of
    /// the schema's tables does not exist; `unavailable` naming the gateway and its last error
    /// when the gateway's last answer was a failure to answer (a refused connection, a
    /// timeout), whatever the schema's own error says (some only say "aborted"), unless the
    /// caller cancelled; else `e` unchanged.
    pub fn explain(&self, e: JsValue, elapsed_ms: f64) -> JsValue {
        let tables: Vec<&str> = self.tables.iter().map(String::as_str).collect();
        if let Some(hint) = js::not_set_up(&e, self.what, &tables) {
            return hint;
        }
        let Some(driver) = &self.gateway else {
            return e;
        };
        let Some(last) = driver.last_failure() else {
            return e;
        };
        if driver.is_cancelled() || !is_unanswered(&last) {
            return e;
        }
        let url = &driver.gateway().base_url;
        if last.message.starts_with("the gateway at ") {
            // A request that timed out says it all.
            return js::error("unavailable", &last.message);
        }
        // `fetch URL: reason`: the URL is said once, first.
        let reason = match last.message.strip_prefix("fetch ") {
            Some(rest) => rest.split_once(": ").map_or(rest, |(_, reason)| reason),
            None => last.message.as_str(),
        };
        let waited = if elapsed_ms + 500.0 >= f64::from(self.deadline_ms) {
            format!(" within {} s", f64::from(self.deadline_ms) / 1000.0)
        } else {
            String::new()
        };
        js::error(
            "unavailable",
            &format!("the gateway at {url} did not answer{waited} (last error: {reason})"),
        )
    }
}

/// Whether a request's failure means the gateway did not answer (refused, unreachable, timed
/// out), rather than answered with an error.
fn is_unanswered(failure: &StoreError) -> bool {
    matches!(failure.code, Code::Unavailable | Code::DeadlineExceeded)
}
