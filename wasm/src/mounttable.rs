//! `MountTable`: the Vanadium mount table from JS, running the machines of
//! `rowkit_statemachines::mounttable` (as `rowkit_embedded::mounttable` does natively, without
//! the hot-row cache: a page has one caller at a time).

use std::cell::Cell;
use std::rc::Rc;

use js_sys::Promise;
use rowkit_codec::mounttable::Caller;
use rowkit_embedded::mounttable::table_families;
use rowkit_statemachines::mounttable::{
    self as mt, Limits, MountEntry, MtCtx, MtError, MtEvent, Tables,
};
use rowkit_statemachines::{Machine, SplitMix64};
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::backend::{ClientOptions, run_error};
use crate::js;

const DEADLINE_US: i64 = 60_000_000;
const GC_GRACE_US: i64 = 60_000_000;

struct Inner {
    options: ClientOptions,
    tables: Tables,
    caller: Caller,
    calls: Cell<u64>,
}

impl Inner {
    fn ctx(&self) -> MtCtx {
        MtCtx {
            tables: self.tables.clone(),
            caller: self.caller.clone(),
            global_acl: Default::default(),
            limits: Limits::default(),
            gc_grace_us: GC_GRACE_US,
            deadline: self.options.now().saturating_add_micros(DEADLINE_US),
        }
    }

    fn seed(&self) -> u64 {
        let n = self.calls.get();
        self.calls.set(n + 1);
        SplitMix64::nth_output(self.options.seed, n)
    }

    async fn run<M>(&self, m: M, on_event: impl FnMut(MtEvent)) -> Result<M::Output, JsValue>
    where
        M: Machine<Event = MtEvent, Error = MtError>,
    {
        self.options
            .run(m, on_event)
            .await
            .map_err(|e| run_error(e, mt_error))
    }
}

/// An `MtError` as a JS error whose `code` is Vanadium's error id
/// (`v.io/v23/verror.NoExist`, …) or the store status.
fn mt_error(e: MtError) -> JsValue {
    match e {
        MtError::Store(s) => js::store_error(&s),
        other => js::error(other.id(), &other.to_string()),
    }
}

fn entry_json(e: &MountEntry) -> serde_json::Value {
    json!({
        "name": e.name,
        "servers": e.servers.iter().map(|s| json!({"server": s.server, "deadlineUs": s.deadline_us})).collect::<Vec<_>>(),
        "mt": e.mt,
        "leaf": e.leaf,
    })
}

/// The Vanadium mount table (btmtd layout). Options: the common client options (`gateway`,
/// `token`, `table` = node table, default `mounttable`, `seed`, `signal`) and `as`: the caller's
/// blessing names (default: the server itself, which may do anything).
#[wasm_bindgen]
pub struct MountTable {
    inner: Rc<Inner>,
}

#[wasm_bindgen]
impl MountTable {
    /// A client; see the type's docs for `options`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<MountTable, JsValue> {
        let opts = ClientOptions::from_js(&options)?;
        let tables = Tables::new(opts.table.as_deref().unwrap_or("mounttable"));
        let caller = match js::get(&options, "as") {
            v if v.is_undefined() || v.is_null() => Caller::new(&[], true),
            v => {
                let names: Vec<String> = js_sys::Array::from(&v)
                    .iter()
                    .map(|n| {
                        n.as_string()
                            .ok_or_else(|| js::invalid("as: blessing names are strings"))
                    })
                    .collect::<Result<_, _>>()?;
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                Caller::new(&names, false)
            }
        };
        Ok(MountTable {
            inner: Rc::new(Inner {
                options: opts,
                tables,
                caller,
                calls: Cell::new(0),
            }),
        })
    }

    /// Creates the tables (offline mode; on a gateway run `rowkit mt setup` on the served store)
    /// and the initial nodes (the root, with default permissions).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn setup(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let (node, counter) = table_families();
            inner
                .options
                .ensure_table(&inner.tables.counter, &counter)
                .map_err(|e| js::store_error(&e))?;
            inner
                .options
                .ensure_table(&inner.tables.node, &node)
                .map_err(|e| js::store_error(&e))?;
            let mut ctx = inner.ctx();
            ctx.caller = Caller::new(&[], true);
            let m = mt::CreateInitialNodes::new(ctx, None, inner.options.now(), inner.seed());
            inner.run(m, |_| {}).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Mounts `server` on `name` for `ttlSeconds`; `flags`: 1 = replace, 2 = mount table,
    /// 4 = leaf (ORed). Resolves to the deadline written (µs since the epoch).
    #[wasm_bindgen(unchecked_return_type = "Promise<number>")]
    pub fn mount(
        &self,
        name: String,
        server: String,
        ttl_seconds: u32,
        flags: Option<u32>,
    ) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let m = mt::Mount::new(
                inner.ctx(),
                &name,
                &server,
                ttl_seconds,
                flags.unwrap_or(0),
                inner.options.now(),
                inner.seed(),
            );
            let deadline = inner.run(m, |_| {}).await?;
            Ok(JsValue::from_f64(deadline as f64))
        })
    }

    /// Unmounts `server` from `name` (every server when `server` is absent or empty).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn unmount(&self, name: String, server: Option<String>) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let m = mt::Unmount::new(
                inner.ctx(),
                &name,
                server.as_deref().unwrap_or(""),
                inner.options.now(),
                inner.seed(),
            );
            inner.run(m, |_| {}).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Resolves one step of `name`: `{name, servers: [{server, deadlineUs}], mt, leaf}` where
    /// `name` is the unresolved rest.
    #[wasm_bindgen(
        unchecked_return_type = "Promise<{name: string, servers: {server: string, deadlineUs: number}[], mt: boolean, leaf: boolean}>"
    )]
    pub fn resolve(&self, name: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let m = mt::ResolveStep::new(inner.ctx(), &name, inner.options.now(), inner.seed());
            let entry = inner.run(m, |_| {}).await?;
            Ok(js::to_js(&entry_json(&entry)))
        })
    }

    /// Names under `name` matching `pattern` (`*`, `...`, or a path of such patterns), in emission order.
    #[wasm_bindgen(
        unchecked_return_type = "Promise<{name: string, servers: {server: string, deadlineUs: number}[], mt: boolean, leaf: boolean}[]>"
    )]
    pub fn glob(&self, name: String, pattern: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let m = mt::Glob::new(
                inner.ctx(),
                &name,
                &pattern,
                inner.options.now(),
                inner.seed(),
            );
            let mut entries = Vec::new();
            inner
                .run(m, |e| {
                    if let MtEvent::GlobEntry(entry) = e {
                        entries.push(entry_json(&entry));
                    }
                })
                .await?;
            Ok(js::to_js(&serde_json::Value::Array(entries)))
        })
    }

    /// Deletes `name` (with its children when `subtree`).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn delete(&self, name: String, subtree: bool) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let m = mt::Delete::new(
                inner.ctx(),
                &name,
                subtree,
                inner.options.now(),
                inner.seed(),
            );
            inner.run(m, |_| {}).await?;
            Ok(JsValue::UNDEFINED)
        })
    }
}
