//! `Graph`: one BadWolf graph from JS, running `rowkit_statemachines::triples` (as
//! `rowkit_embedded::triples` does natively). Triples are BadWolf text
//! (`/u<joe>\t"parent_of"@[]\t/u<mary>`).

use std::cell::Cell;
use std::rc::Rc;

use js_sys::Promise;
use rowkit_codec::model::ColumnFamily;
use rowkit_codec::triples::Triple;
use rowkit_codec::triples::keys;
use rowkit_statemachines::triples::{
    AddTriples, DeleteGraph, Exist, Found, Lookup, LookupMethod, LookupOptions, NewGraph,
    OperationConfig, RemoveTriples, TriplesError,
};
use rowkit_statemachines::{Machine, SplitMix64, Timestamp};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::backend::{ClientOptions, run_error};
use crate::js;

const TIMEOUT_US: i64 = 60_000_000;

struct Inner {
    options: ClientOptions,
    table: String,
    id: Vec<u8>,
    calls: Cell<u64>,
}

fn triples_error(e: TriplesError) -> JsValue {
    let s = rowkit_statemachines::StoreError::from(e);
    js::store_error(&s)
}

fn found_json(f: &Found) -> Value {
    serde_json::to_value(f.to_text()).unwrap_or(Value::Null)
}

fn parse_triples(list: Vec<String>) -> Result<Vec<Triple>, JsValue> {
    list.iter()
        .map(|t| Triple::parse(t.as_bytes()).map_err(|e| js::invalid(format!("{t:?}: {e}"))))
        .collect()
}

impl Inner {
    fn begin(&self) -> (OperationConfig, Timestamp, u64) {
        let now = self.options.now();
        let n = self.calls.get();
        self.calls.set(n + 1);
        (
            OperationConfig::new(&self.table, now.saturating_add_micros(TIMEOUT_US)),
            now,
            SplitMix64::nth_output(self.options.seed, n),
        )
    }

    async fn run<M: Machine<Error = TriplesError>>(&self, m: M) -> Result<M::Output, JsValue> {
        self.options
            .run(m, |_| {})
            .await
            .map_err(|e| run_error(e, triples_error))
    }
}

/// One graph of the BadWolf triple store. `new Graph(id, options)` with the common client
/// options (`gateway`, `token`, `table` default `badwolf`, `seed`, `signal`).
#[wasm_bindgen]
pub struct Graph {
    inner: Rc<Inner>,
}

#[wasm_bindgen]
impl Graph {
    /// A handle on graph `id` (nothing is read or written until a method runs).
    #[wasm_bindgen(constructor)]
    pub fn new(id: String, options: JsValue) -> Result<Graph, JsValue> {
        keys::check_graph_id(id.as_bytes()).map_err(js::invalid)?;
        let opts = ClientOptions::from_js(&options)?;
        let table = opts
            .table
            .clone()
            .unwrap_or_else(|| keys::DEFAULT_TABLE.to_string());
        Ok(Graph {
            inner: Rc::new(Inner {
                options: opts,
                table,
                id: id.into_bytes(),
                calls: Cell::new(0),
            }),
        })
    }

    /// Creates the table with its three families (offline mode; on a gateway run
    /// `rowkit graph setup` on the served store).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn setup(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let families = [
                ColumnFamily::new(keys::FAMILY_GRAPH),
                ColumnFamily::new(keys::FAMILY_IMMUTABLE),
                ColumnFamily::new(keys::FAMILY_TEMPORAL),
            ];
            inner
                .options
                .ensure_table(&inner.table, &families)
                .map_err(|e| js::store_error(&e))?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `NewGraph`: creates the graph (fails if it exists).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn create(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let (config, now, seed) = inner.begin();
            inner
                .run(NewGraph::new(&inner.id, config, now, seed))
                .await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `DeleteGraph`: removes the graph and every row of its indexes.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn drop(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let (config, now, seed) = inner.begin();
            inner
                .run(DeleteGraph::new(&inner.id, config, now, seed))
                .await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `AddTriples`.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn add(&self, triples: Vec<String>) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let triples = parse_triples(triples)?;
            let (config, now, seed) = inner.begin();
            inner
                .run(AddTriples::new(&inner.id, triples, config, now, seed))
                .await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `RemoveTriples` (exactly these triples).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn remove(&self, triples: Vec<String>) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let triples = parse_triples(triples)?;
            let (config, now, seed) = inner.begin();
            inner
                .run(RemoveTriples::new(&inner.id, triples, config, now, seed))
                .await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `Exist`: whether the triple is in the graph.
    #[wasm_bindgen(unchecked_return_type = "Promise<boolean>")]
    pub fn exist(&self, triple: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let t = Triple::parse(triple.as_bytes()).map_err(js::invalid)?;
            let (config, now, seed) = inner.begin();
            let found = inner
                .run(Exist::new(&inner.id, t, config, now, seed))
                .await?;
            Ok(JsValue::from_bool(found))
        })
    }

    /// A lookup by method name (`objects`, `subjects`, `triples-for-subject`, …, `triples`;
    /// the CLI's `graph query` names) with its arguments as BadWolf text. Resolves to
    /// `[{triple, subject, predicate, object, uuid, item}]`, `item` being what the method
    /// projects.
    #[wasm_bindgen(
        unchecked_return_type = "Promise<{triple: string, subject: string, predicate: string, object: string, uuid: string, item: string}[]>"
    )]
    pub fn query(&self, method: String, args: Vec<String>) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let method = LookupMethod::parse(&method, &args).map_err(js::invalid)?;
            let (config, now, seed) = inner.begin();
            let found = inner
                .run(Lookup::new(
                    &inner.id,
                    method,
                    LookupOptions::default(),
                    config,
                    now,
                    seed,
                ))
                .await?;
            Ok(js::to_js(&Value::Array(
                found.iter().map(found_json).collect(),
            )))
        })
    }
}
