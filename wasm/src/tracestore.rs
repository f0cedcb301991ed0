//! `TraceStore`: the Skia Gold trace store from JS, a thin caller of
//! `rowkit_client::TraceStore` (the same facade native code uses) over the page's driver. The
//! facade (its OPS cache and digest-id pool) lives behind an async lock, so overlapping calls
//! from JS run one after the other.

use rowkit_statemachines::check::CheckOptions;
use std::rc::Rc;

use futures_util::lock::Mutex;
use js_sys::Promise;
use js_sys::Reflect;
use rowkit_client::Driver;
use rowkit_client::migration_json::{
    MIGRATE_TIMEOUT_MICROS, TracePoints, trace_event_json, trace_outcome_json, trace_status_json,
};
use rowkit_client::tracestore::{TraceStore as Facade, setup_table};
use rowkit_codec::migration::{Gates, OptionsPolicy};
use rowkit_codec::tracestore::keys::TILE_SIZE;
use rowkit_codec::tracestore::{Layout, Params};
use rowkit_codec::validate::Field;
use rowkit_statemachines::Timestamp;
use rowkit_statemachines::tracestore::migrate::run::TraceMigrateOptions;
use rowkit_statemachines::tracestore::{PutEntry, Tile, TraceBatch, TraceStoreEvent};
use serde_json::{Value, json};
use std::collections::HashMap;
use wasm_bindgen::prelude::*;

use crate::backend::{ClientOptions, Diagnosis, PageDriver};
use crate::js;
use crate::objmeta::{flag_option, owner_option, settle_option};

struct Inner {
    table: String,
    layout: Layout,
    gold: Mutex<Facade<PageDriver>>,
}

fn tile_json(layout: Layout, tile: &Tile) -> Value {
    let traces: Vec<Value> = tile
        .traces
        .iter()
        .map(|(id, t)| json!({"id": id, "params": t.params, "options": t.options, "digests": t.digests}))
        .collect();
    json!({
        "layout": layout.name(),
        "commits": tile.commits,
        "paramset": tile.paramset,
        "traces": traces,
    })
}

/// A streamed tile's digests numbered in order of first appearance, so each batch carries its
/// new digests once and its cells as small numbers (a 10 000 × 256 tile as 32-character strings
/// would be 80 MB of JS strings).
#[derive(Default)]
struct DigestNumbering {
    numbers: HashMap<String, u32>,
}

impl DigestNumbering {
    /// A batch as the JS object `streamTile` hands over.
    fn batch_js(&mut self, batch: TraceBatch) -> JsValue {
        let mut new_digests = Vec::new();
        let mut cells = Vec::with_capacity(batch.traces.len() * TILE_SIZE as usize);
        let mut traces = Vec::with_capacity(batch.traces.len());
        for (id, trace) in batch.traces {
            cells.extend(trace.digests.into_iter().map(|d| {
                if d.is_empty() {
                    return 0;
                }
                let next = self.numbers.len() as u32 + 1;
                *self.numbers.entry(d).or_insert_with_key(|d| {
                    new_digests.push(Value::from(d.as_str()));
                    next
                })
            }));
            traces.push(json!({"id": id, "params": trace.params}));
        }
        let page = js_sys::Object::new();
        let set = |k: &str, v: &JsValue| Reflect::set(&page, &JsValue::from_str(k), v);
        // Setting a member of a fresh plain object cannot fail.
        let _ = set("traces", &js::to_js(&Value::Array(traces)));
        let _ = set("newDigests", &js::to_js(&Value::Array(new_digests)));
        let _ = set("cells", &js_sys::Uint32Array::from(&cells[..]).into());
        let _ = set("shardsDone", &JsValue::from(batch.shards_done));
        page.into()
    }
}

fn params(v: &Value, what: &str) -> Result<Params, JsValue> {
    match v {
        Value::Null => Ok(Params::new()),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(js::invalid(format!("{what}.{k} must be a string"))),
            })
            .collect(),
        _ => Err(js::invalid(format!("{what} must be an object of strings"))),
    }
}

/// `migrate`'s options object as the migrator's (see `MigrateTableOptions`).
fn migrate_options(options: &JsValue) -> Result<TraceMigrateOptions, JsValue> {
    // §5.8: the page has no admin API (§11.6).
    if flag_option(options, "dropSource")? {
        return Err(js::invalid(
            "dropSource: deleting the source table is an admin request a browser cannot send; \
             run `rowkit gold migrate --finish --drop-source` with a native driver",
        ));
    }
    let policy = match js::get_string(options, "options")?.as_deref() {
        None | Some("refuse") => OptionsPolicy::Refuse,
        Some("drop") => OptionsPolicy::Drop,
        Some(other) => {
            return Err(js::invalid(format!(
                "options {other:?}: expected \"refuse\" or \"drop\""
            )));
        }
    };
    Ok(TraceMigrateOptions {
        gates: Gates {
            switch: flag_option(options, "switch")?,
            finish: flag_option(options, "finish")?,
        },
        abort: flag_option(options, "abort")?,
        options: policy,
        settle_us: settle_option(options)?,
        take_over: flag_option(options, "takeOver")?,
        owner: owner_option(options)?,
    })
}

// The TypeScript types of the options and results (the package's `.d.ts`).
#[wasm_bindgen(typescript_custom_section)]
const TRACE_STORE_TS: &str = r#"
/** `new TraceStore(options)`: the common client options and the table's layout. */
export interface TraceStoreOptions extends ClientOptions {
    /** How trace cells are written: `"md5"` (default) or `"digest-id"`. */
    layout?: "md5" | "digest-id";
}

/** One trace's value at a commit, as `put` writes it. */
export interface TraceEntry {
    /** The trace's params (its id is made of them). */
    params: Record<string, string>;
    /** The trace's options (not part of its id). */
    options?: Record<string, string>;
    /** The digest: 32 hex characters, or `""` for a missing point (anything else is refused). */
    digest: string;
}

/** One trace of a range. */
export interface Trace {
    /** The trace id, `,key=value,…,`. */
    id: string;
    params: Record<string, string>;
    options: Record<string, string>;
    /** The digest at each commit of the range (`""`: none). */
    digests: string[];
}

/** The traces of a range of commits. */
export interface TraceRange {
    layout: "md5" | "digest-id";
    /** The commits (repo indexes) of the range, in order. */
    commits: number[];
    /** Every param's values over the range's traces. */
    paramset: Record<string, string[]>;
    traces: Trace[];
}

/** A whole tile: a range plus its index (`null` when the table has no tile). */
export interface TraceTile extends TraceRange {
    tileIndex: number | null;
}

/** A batch of a streamed tile (see `TraceStore.streamTile`). */
export interface TileBatch {
    traces: { id: string; params: Record<string, string> }[];
    /** Digests first seen in this batch, numbered after those of earlier batches. */
    newDigests: string[];
    /** `cells[t * 256 + c]`: trace `t`'s digest at commit `c` as 1 + its number, 0 = none. */
    cells: Uint32Array;
    /** How many of the tile's shards have been read. */
    shardsDone: number;
}

/** `migrate`'s options: the gates and flags of `rowkit gold migrate` (all optional). */
export interface MigrateTableOptions {
    /** `--switch`: let the run enter `switching` (the Gold writers are stopped). */
    switch?: boolean;
    /** `--finish`: let the run enter `cleaning` and delete the source's Gold rows (no Gold process uses the source any more). */
    finish?: boolean;
    /** `--abort`: roll the migration back (before the switch): the target's rows are deleted. */
    abort?: boolean;
    /** `--options`: an md5 source's options rows: `"refuse"` (default: the run stops at the first) or `"drop"` (not copied, counted). */
    options?: "refuse" | "drop";
    /** `--settle`: the settle time Δ in ms (at least 85 000; default 90 s). */
    settleMs?: number;
    /** `--take-over`: take over a run another migrator's lease holds. */
    takeOver?: boolean;
    /** The checkpoints' lease owner (default: a random `browser:…` name). */
    owner?: string;
    /** `--drop-source` is refused: deleting the source table is an admin request a browser cannot send (`rowkit gold migrate --finish --drop-source` does it). */
    dropSource?: false;
}

/** A trace point a sweep named (§5.6). */
export interface MigratePoint {
    /** The trace id. */
    trace: string;
    /** The repo index. */
    commit: number;
    /** The point's timestamp in µs. */
    ts: number;
}

/** One event of a running trace store migration (§7.3), as `migrate` hands them to its callback. */
export type TraceMigrateEvent =
    | ({ event: "progress"; state: MigrationStateName; pass: number; rate_rows_per_s: number | null; eta_s: number | null } & MigrateCounters)
    | { event: "state_changed"; from: MigrationStateName | null; to: MigrationStateName | null }
    | ({ event: "straggler" } & MigratePoint)
    | ({ event: "conflict" } & MigratePoint);

/** What a trace store migration run did: `rowkit gold migrate --json`'s result document. */
export interface TraceMigrateResult {
    table: string;
    target_table: string;
    to: "md5" | "digest-id";
    abort: boolean;
    /** Where the run ended: a state, `removed` (rolled back) or `cleaned` (migrated). */
    state: MigrationStateName | "removed" | "cleaned";
    run: string | null;
    passes: ({ kind: string; pass: number; diffs: number; tiles: number; skipped_rows: number; options_rows_dropped: number } & MigrateCounters)[];
    target_rows_deleted: number;
    source_rows_deleted: number;
    source_rows_left: number;
    stragglers: MigratePoint[];
    conflicts: MigratePoint[];
}

/** A table's migration state as the migrator reads it (§2.1): marker and checkpoint as stored (§2.2, §7.1). */
export interface TraceMigrationStatus {
    table: string;
    /** The client's layout (the `layout` option). */
    layout: "md5" | "digest-id";
    marker: { run: string; from: "md5" | "digest-id"; to: "md5" | "digest-id"; state: MigrationStateName; since: number; settle_us: number; [member: string]: JsonValue } | null;
    checkpoint: ({ run: string; state: MigrationStateName; pass: number; cursor: string | null; owner: string; lease_until: number;
        pass_rows_previous: number | null; started: number; updated: number } & MigrateCounters) | null;
}
"#;

/// The Skia Gold trace store. Options: the common client options (`gateway`, `token`,
/// `table` default `gold`, `seed`, `signal`) and `layout`: `md5` (default) or `digest-id`.
#[wasm_bindgen]
pub struct TraceStore {
    inner: Rc<Inner>,
    diagnosis: Diagnosis,
    /// A check's deadline (`deadlineMs`, else an hour).
    check_timeout_us: i64,
    /// `deadlineMs` in µs, if given (a migration runs at least a day).
    deadline_us: Option<i64>,
}

#[wasm_bindgen]
impl TraceStore {
    /// A client; see the type's docs for `options`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "TraceStoreOptions")] options: JsValue,
    ) -> Result<TraceStore, JsValue> {
        let opts = ClientOptions::from_js(&options)?;
        let layout = match js::get_string(&options, "layout")? {
            Some(name) => Layout::parse(&name)
                .ok_or_else(|| js::invalid(format!("layout {name:?} (md5 or digest-id)")))?,
            None => Layout::Md5,
        };
        let table = opts.table.clone().unwrap_or_else(|| "gold".into());
        let diagnosis = opts.diagnosis("trace store", vec![table.clone()]);
        let check_timeout_us = opts.check_timeout_us();
        let deadline_us = opts.deadline_us();
        let call_options = opts.call_options();
        let gold = Facade::with_layout(opts.driver, &table, layout).with_options(call_options);
        Ok(TraceStore {
            inner: Rc::new(Inner {
                gold: Mutex::new(gold),
                table,
                layout,
            }),
            diagnosis,
            check_timeout_us,
            deadline_us,
        })
    }

    /// Creates the table in the client's layout, or adds the families a table made by an
    /// older version lacks (`rowkit gold setup`), in the page's store or through the gateway.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn setup(&self) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let gold = inner.gold.lock().await;
            setup_table(gold.driver(), &inner.table, inner.layout)
                .await
                .map_err(js::operation_error)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `Put`: writes `entries` (`[{params: {k: v}, options?: {k: v}, digest: "32 hex"}]`) at
    /// commit `repoIndex`, cells stamped `tsMicros` (default: now).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn put(
        &self,
        #[wasm_bindgen(js_name = repoIndex)] repo_index: f64,
        #[wasm_bindgen(unchecked_param_type = "TraceEntry[]")] entries: JsValue,
        #[wasm_bindgen(js_name = tsMicros)] ts_micros: Option<f64>,
    ) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise_void(async move {
            let repo_index = js::to_i64(repo_index, "repoIndex")?;
            let ts = match ts_micros {
                Some(t) => Timestamp(js::to_i64(t, "tsMicros")?),
                None => inner.gold.lock().await.driver().now(),
            };
            let list = match js::from_js(&entries)? {
                Value::Array(list) => list,
                _ => return Err(js::invalid("entries must be an array")),
            };
            let entries = list
                .iter()
                .map(|e| {
                    let digest = e["digest"].as_str().unwrap_or_default().to_string();
                    crate::validate::checked(Field::Digest, &digest)?;
                    Ok(PutEntry {
                        params: params(&e["params"], "params")?,
                        options: params(&e["options"], "options")?,
                        digest,
                    })
                })
                .collect::<Result<Vec<_>, JsValue>>()?;
            let gold = inner.gold.lock().await;
            // The JS API's put resolves to nothing: the rows written are not part of it.
            gold.put(repo_index, None, entries, ts)
                .await
                .map(|_rows| ())
                .map_err(js::operation_error)
        })
    }

    /// `ReadRange(first, last)`: the traces of commits `first..=last`:
    /// `{layout, commits, paramset, traces: [{id, params, options, digests}]}`.
    #[wasm_bindgen(js_name = readRange, unchecked_return_type = "Promise<TraceRange>")]
    pub fn read_range(&self, first: f64, last: f64) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let (first, last) = (js::to_i64(first, "first")?, js::to_i64(last, "last")?);
            let gold = inner.gold.lock().await;
            let tile = gold
                .read_range(first, last)
                .await
                .map_err(js::operation_error)?;
            Ok(js::to_js(&tile_json(inner.layout, &tile)))
        })
    }

    /// One whole tile (`index`; default the newest), as [`TraceStore::read_range`] plus
    /// `tileIndex` (`null` when the table has no tile).
    #[wasm_bindgen(unchecked_return_type = "Promise<TraceTile>")]
    pub fn tile(&self, index: Option<u32>) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let gold = inner.gold.lock().await;
            let index = match index {
                Some(i) => Some(i),
                None => gold.newest_tile().await.map_err(js::operation_error)?,
            };
            let Some(index) = index else {
                let mut doc = tile_json(inner.layout, &Tile::default());
                doc["tileIndex"] = Value::Null;
                return Ok(js::to_js(&doc));
            };
            let first = i64::from(index) * 256;
            let tile = gold
                .read_range(first, first + 255)
                .await
                .map_err(js::operation_error)?;
            let mut doc = tile_json(inner.layout, &tile);
            doc["tileIndex"] = Value::from(index);
            Ok(js::to_js(&doc))
        })
    }

    /// Streams tile `index` to `onBatch`, called with each batch of traces as it arrives (a
    /// viewer draws a 10 000-trace tile while it streams in; options are not read):
    /// `{traces: [{id, params}], newDigests: [string], cells: Uint32Array, shardsDone}`, where
    /// `cells[t * 256 + c]` is trace `t`'s digest at the tile's commit `c` as 1 + its index in
    /// the stream's digest list (the `newDigests` of every batch so far, in order), 0 = missing.
    /// Resolves to the number of traces. After an error thrown by `onBatch` no batch is handed
    /// over; the read runs to its end and the promise rejects with that error.
    #[wasm_bindgen(js_name = streamTile, unchecked_return_type = "Promise<number>")]
    pub fn stream_tile(
        &self,
        index: u32,
        #[wasm_bindgen(js_name = onBatch, unchecked_param_type = "(batch: TileBatch) => void")]
        on_batch: js_sys::Function,
    ) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let gold = inner.gold.lock().await;
            let mut numbering = DigestNumbering::default();
            let mut thrown = None;
            let n = gold
                .stream_tile(index, |batch| {
                    if thrown.is_some() {
                        return;
                    }
                    let page = numbering.batch_js(batch);
                    if let Err(e) = on_batch.call1(&JsValue::NULL, &page) {
                        thrown = Some(e);
                    }
                })
                .await
                .map_err(js::operation_error)?;
            match thrown {
                Some(e) => Err(e),
                None => Ok(JsValue::from(n as f64)),
            }
        })
    }

    /// Checks the table (`spec/check.md` §2; nothing in a trace store is repairable).
    /// Resolves to the report: `{schema, rows_scanned, findings_by_kind, repaired, left,
    /// notes, findings}`.
    #[wasm_bindgen(unchecked_return_type = "Promise<CheckReport>")]
    pub fn check(&self) -> Promise {
        let inner = self.inner.clone();
        let check_timeout_us = self.check_timeout_us;
        self.diagnosis.promise(async move {
            let mut findings = Vec::new();
            let summary = inner
                .gold
                .lock()
                .await
                .check(CheckOptions::default(), check_timeout_us, |e| {
                    js::keep_finding(&mut findings, e)
                })
                .await
                .map_err(js::check_error)?;
            Ok(js::check_report("gold", summary, findings))
        })
    }

    /// `migrationStatus()`: the table's migration in progress, read as the migrator reads it
    /// (`docs/migration.md` §2.1): `{table, layout, marker, checkpoint}`, `marker` and
    /// `checkpoint` as stored, `null` when absent (`layout` is the client's).
    #[wasm_bindgen(js_name = migrationStatus, unchecked_return_type = "Promise<TraceMigrationStatus>")]
    pub fn migration_status(&self) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let gold = inner.gold.lock().await;
            let read = gold.read_migration().await.map_err(js::operation_error)?;
            Ok(js::to_js(&trace_status_json(
                &inner.table,
                inner.layout,
                &read,
            )))
        })
    }

    /// `migrate(targetTable, to, options, onEvent)`: `rowkit gold migrate --to L
    /// --target-table T2` (`docs/migration.md` §5): migrates the client's table into
    /// `targetTable`, which must exist as an empty table of layout `to` (the other one of the
    /// client's: a page cannot set tables up, §11.6; else the promise rejects with
    /// `usage_error`, its message naming `rowkit gold setup --table T2 --layout L`), as far as
    /// `options`' gates allow, starting a run or resuming the one the markers name. Each event
    /// (progress after every tile, marker changes, stragglers, conflicts) goes to `onEvent` as
    /// the machine emits it; resolves to the result document (`rowkit gold migrate --json`'s).
    /// Runs up to a day (or `deadlineMs` if longer) and waits the settle time Δ before the
    /// switch, the clean-up and the rollback; while it runs the client's other calls wait, so
    /// a page runs it on a client of its own.
    #[wasm_bindgen(unchecked_return_type = "Promise<TraceMigrateResult>")]
    pub fn migrate(
        &self,
        #[wasm_bindgen(js_name = targetTable)] target_table: String,
        #[wasm_bindgen(unchecked_param_type = "\"md5\" | \"digest-id\"")] to: String,
        #[wasm_bindgen(unchecked_optional_param_type = "MigrateTableOptions | null")]
        options: JsValue,
        #[wasm_bindgen(
            js_name = onEvent,
            unchecked_optional_param_type = "(event: TraceMigrateEvent) => void"
        )]
        on_event: Option<js_sys::Function>,
    ) -> Promise {
        let inner = self.inner.clone();
        let timeout = MIGRATE_TIMEOUT_MICROS.max(self.deadline_us.unwrap_or(0));
        self.diagnosis.promise(async move {
            if target_table.is_empty() {
                return Err(js::invalid("targetTable must not be empty"));
            }
            let to = Layout::parse(&to)
                .ok_or_else(|| js::invalid(format!("to {to:?}: expected digest-id or md5")))?;
            if to == inner.layout {
                return Err(js::invalid(format!(
                    "to {}: the table is {} already; migrate it into a table of the other layout",
                    to.name(),
                    to.name()
                )));
            }
            let options = migrate_options(&options)?;
            let abort = options.abort;
            let mut points = TracePoints::default();
            let gold = inner.gold.lock().await;
            let outcome = gold
                .migrate(&target_table, options, timeout, |e| {
                    let TraceStoreEvent::Migrate(e) = e else {
                        return;
                    };
                    points.record(&e);
                    if let (Some(doc), Some(f)) = (trace_event_json(&e), &on_event) {
                        // A callback that throws does not stop the run.
                        let _ = f.call1(&JsValue::NULL, &js::to_js(&doc));
                    }
                })
                .await
                .map_err(js::operation_error)?;
            Ok(js::to_js(&trace_outcome_json(
                &inner.table,
                &target_table,
                to,
                abort,
                &outcome,
                &points,
            )))
        })
    }

    /// `NewestTile`: the index of the newest tile, or `null`.
    #[wasm_bindgen(js_name = newestTile, unchecked_return_type = "Promise<number | null>")]
    pub fn newest_tile(&self) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let newest = inner
                .gold
                .lock()
                .await
                .newest_tile()
                .await
                .map_err(js::operation_error)?;
            Ok(newest.map_or(JsValue::NULL, JsValue::from))
        })
    }
}
