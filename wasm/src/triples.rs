//! `Graph`: one BadWolf graph from JS, a thin caller of `rowkit_client::TripleStore` (the same
//! facade native code uses) over the page's driver. Triples are BadWolf text
//! (`/u<joe>\t"parent_of"@[]\t/u<mary>`).

use std::rc::Rc;

use js_sys::Promise;
use rowkit_client::triples::TripleStore;
use rowkit_codec::triples::keys;
use rowkit_codec::triples::{Anchor, Object, Triple};
use rowkit_statemachines::check::CheckOptions;
use rowkit_statemachines::triples::{Found, LookupMethod, LookupOptions};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::backend::{ClientOptions, Diagnosis, PageDriver};
use crate::js;

struct Inner {
    store: TripleStore<PageDriver>,
    id: Vec<u8>,
}

/// A result as JS: the text of every part (`Found::to_text`) and, for the graph view, the
/// predicate's id and time anchor (`null` when immutable) and the object's kind (`node`,
/// `predicate` or `literal`).
fn found_json(f: &Found) -> Value {
    let mut doc = serde_json::to_value(f.to_text()).unwrap_or(Value::Null);
    let predicate = &f.triple.predicate;
    doc["predicateId"] = Value::from(String::from_utf8_lossy(predicate.id()).into_owned());
    doc["anchor"] = predicate
        .anchor()
        .map_or(Value::Null, |a| Value::from(a.to_text()));
    doc["objectKind"] = Value::from(match &f.triple.object {
        Object::Node(_) => "node",
        Object::Predicate(_) => "predicate",
        Object::Literal(_) => "literal",
    });
    doc
}

/// One triple argument, parsed with the CLI's rule (`invalid_argument` naming it).
fn triple_arg(text: &str) -> Result<Triple, JsValue> {
    rowkit_codec::validate::triple(text).map_err(|e| js::invalid(e.message))
}

fn parse_triples(list: Vec<String>) -> Result<Vec<Triple>, JsValue> {
    list.iter().map(|t| triple_arg(t)).collect()
}

/// What [`Graph::add`] and [`Graph::remove`] do with their triples.
enum Change {
    Add,
    Remove,
}

// The TypeScript types of the results (the package's `.d.ts`).
#[wasm_bindgen(typescript_custom_section)]
const GRAPH_TS: &str = r#"
/** A lookup method of `Graph.query` and the fields its arguments are, in order. */
export interface LookupMethod {
    method: string;
    arguments: ("subject" | "predicate" | "object")[];
}

/** The time bounds of `Graph.query` (the CLI's `graph query --lower/--upper/--latest`). */
export interface LookupBounds {
    /** Inclusive lower anchor of temporal triples, RFC 3339. */
    lower?: string;
    /** Inclusive upper anchor of temporal triples, RFC 3339. */
    upper?: string;
    /** Only the latest anchor per predicate. */
    latest?: boolean;
}

/** One triple `Graph.query` found (every part as BadWolf text). */
export interface TripleMatch {
    triple: string;
    subject: string;
    predicate: string;
    object: string;
    uuid: string;
    /** What the method projects (the subject, predicate, object or triple). */
    item: string;
    predicateId: string;
    /** The temporal predicate's time, or `null`. */
    anchor: string | null;
    objectKind: "node" | "predicate" | "literal";
}
"#;

/// Every lookup method the graph's `query` runs, with its arguments in order:
/// `[{method, arguments: ["subject" | "predicate" | "object", ...]}]` (the query builder's
/// fields).
#[wasm_bindgen(
    js_name = lookupMethods,
    unchecked_return_type = "LookupMethod[]"
)]
pub fn lookup_methods() -> JsValue {
    js::to_js(&Value::Array(
        LookupMethod::NAMES
            .iter()
            .zip(LookupMethod::ARGUMENTS)
            .map(
                |(method, arguments)| serde_json::json!({"method": method, "arguments": arguments}),
            )
            .collect(),
    ))
}

/// One graph of the BadWolf triple store. `new Graph(id, options)` with the common client
/// options (`gateway`, `token`, `table` default `badwolf`, `seed`, `signal`).
#[wasm_bindgen]
pub struct Graph {
    inner: Rc<Inner>,
    diagnosis: Diagnosis,
    /// A check's deadline (`deadlineMs`, else an hour).
    check_timeout_us: i64,
}

#[wasm_bindgen]
impl Graph {
    /// A handle on graph `id` (nothing is read or written until a method runs).
    #[wasm_bindgen(constructor)]
    pub fn new(
        id: String,
        #[wasm_bindgen(unchecked_optional_param_type = "ClientOptions")] options: JsValue,
    ) -> Result<Graph, JsValue> {
        keys::check_graph_id(id.as_bytes()).map_err(js::invalid)?;
        let opts = ClientOptions::from_js(&options)?;
        let table = opts.table.as_deref().unwrap_or(keys::DEFAULT_TABLE);
        let store = TripleStore::new(opts.driver.clone())
            .with_table(table)
            .with_options(opts.call_options());
        Ok(Graph {
            inner: Rc::new(Inner {
                store,
                id: id.into_bytes(),
            }),
            diagnosis: opts.diagnosis("triple store", vec![table.to_string()]),
            check_timeout_us: opts.check_timeout_us(),
        })
    }

    /// `GraphNames`: the ids of every graph in the table (`Graph.names(options)`, options as
    /// the constructor's).
    #[wasm_bindgen(unchecked_return_type = "Promise<string[]>")]
    pub fn names(
        #[wasm_bindgen(unchecked_optional_param_type = "ClientOptions")] options: JsValue,
    ) -> Result<Promise, JsValue> {
        let opts = ClientOptions::from_js(&options)?;
        let table = opts.table.as_deref().unwrap_or(keys::DEFAULT_TABLE);
        let diagnosis = opts.diagnosis("triple store", vec![table.to_string()]);
        let store = TripleStore::new(opts.driver.clone())
            .with_table(table)
            .with_options(opts.call_options());
        Ok(diagnosis.promise(async move {
            let names = store.graph_names().await.map_err(js::operation_error)?;
            let names = names
                .iter()
                .map(|n| Value::from(String::from_utf8_lossy(n).into_owned()))
                .collect();
            Ok(js::to_js(&Value::Array(names)))
        }))
    }

    /// Creates the table with its three families unless it exists (in the page's store or
    /// through the gateway), as `rowkit graph setup`.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn setup(&self) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis
            .promise_void(async move { inner.store.setup().await.map_err(|e| js::store_error(&e)) })
    }

    /// `NewGraph`: creates the graph (fails if it exists).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn create(&self) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise_void(async move {
            inner
                .store
                .new_graph(&inner.id)
                .await
                .map(|_graph| ())
                .map_err(js::operation_error)
        })
    }

    /// `DeleteGraph`: removes the graph and every row of its indexes.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn drop(&self) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise_void(async move {
            inner
                .store
                .delete_graph(&inner.id)
                .await
                .map_err(js::operation_error)
        })
    }

    /// `AddTriples`.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn add(&self, triples: Vec<String>) -> Promise {
        self.change(triples, Change::Add)
    }

    /// `RemoveTriples` (exactly these triples).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn remove(&self, triples: Vec<String>) -> Promise {
        self.change(triples, Change::Remove)
    }

    /// `Exist`: whether the triple is in the graph.
    #[wasm_bindgen(unchecked_return_type = "Promise<boolean>")]
    pub fn exist(&self, triple: String) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let t = triple_arg(&triple)?;
            let found = inner
                .store
                .graph(&inner.id)
                .await
                .map_err(js::operation_error)?
                .exist(&t)
                .await
                .map_err(js::operation_error)?;
            Ok(JsValue::from_bool(found))
        })
    }

    /// Checks the graph (`spec/check.md` §4: its graph row and four indices), repairing with
    /// `fix` what may be repaired (missing index cells and graph rows, each only if still
    /// absent). Resolves to the report: `{schema, rows_scanned, findings_by_kind, repaired,
    /// left, notes, findings}`.
    #[wasm_bindgen(unchecked_return_type = "Promise<CheckReport>")]
    pub fn check(&self, fix: bool) -> Promise {
        let inner = self.inner.clone();
        let check_timeout_us = self.check_timeout_us;
        self.diagnosis.promise(async move {
            let options = CheckOptions {
                fix,
                ..CheckOptions::default()
            };
            let mut findings = Vec::new();
            let summary = inner
                .store
                .check(Some(&inner.id), options, check_timeout_us, |e| {
                    js::keep_finding(&mut findings, e)
                })
                .await
                .map_err(js::check_error)?;
            Ok(js::check_report("graph", summary, findings))
        })
    }

    /// A lookup by method name (`objects`, `subjects`, `triples-for-subject`, …, `triples`;
    /// the CLI's `graph query` names) with its arguments as BadWolf text and optional time
    /// bounds `{lower, upper, latest}` (the CLI's `--lower`, `--upper`, `--latest`). A graph
    /// that does not exist fails with `code` `not_found` (as the CLI's `graph query`), not an
    /// empty result. Resolves to `[{triple, subject, predicate, object, uuid, item}]`, `item`
    /// being what the method projects, with `predicateId`, `anchor` (the temporal predicate's
    /// time, or `null`) and `objectKind` (`node`, `predicate`, `literal`).
    #[wasm_bindgen(unchecked_return_type = "Promise<TripleMatch[]>")]
    pub fn query(
        &self,
        method: String,
        args: Vec<String>,
        #[wasm_bindgen(unchecked_optional_param_type = "LookupBounds")] bounds: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let method = LookupMethod::parse(&method, &args).map_err(js::invalid)?;
            let options = lookup_options(&bounds)?;
            let graph = inner
                .store
                .graph(&inner.id)
                .await
                .map_err(js::operation_error)?;
            let found = graph
                .lookup(method, options)
                .await
                .map_err(js::operation_error)?;
            Ok(js::to_js(&Value::Array(
                found.iter().map(found_json).collect(),
            )))
        })
    }
}

/// The lookup options of `bounds` (`{lower, upper, latest}`, each optional; `undefined` or
/// `null` for none), every anchor checked before anything is read. An empty bound is none, as
/// a form's empty field.
fn lookup_options(bounds: &JsValue) -> Result<LookupOptions, JsValue> {
    let anchor = |name: &str| -> Result<Option<Anchor>, JsValue> {
        match js::get_string(bounds, name)? {
            Some(text) if !text.trim().is_empty() => Anchor::parse(text.trim().as_bytes())
                .map(Some)
                .map_err(|e| js::invalid(format!("{name} bound {text:?}: {e}"))),
            _ => Ok(None),
        }
    };
    Ok(LookupOptions {
        lower_anchor: anchor("lower")?,
        upper_anchor: anchor("upper")?,
        latest_anchor: js::get(bounds, "latest").as_bool().unwrap_or(false),
        ..LookupOptions::default()
    })
}

impl Graph {
    /// Parses `triples` (all of them, before anything is written) and adds or removes them in
    /// the graph, which must exist (`not_found` otherwise, as the CLI's `graph add`: a write to
    /// a missing graph would leave index rows without their graph row).
    fn change(&self, triples: Vec<String>, change: Change) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise_void(async move {
            let triples = parse_triples(triples)?;
            // BadWolf's callers hold a graph from `Graph()`, which checks it exists.
            let graph = inner
                .store
                .graph(&inner.id)
                .await
                .map_err(js::operation_error)?;
            match change {
                Change::Add => graph.add_triples(triples).await,
                Change::Remove => graph.remove_triples(triples).await,
            }
            .map_err(js::operation_error)
        })
    }
}
