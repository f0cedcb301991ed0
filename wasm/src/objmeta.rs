//! `ObjectMetadata`: Arsenal's object metadata from JS, a thin caller of
//! `rowkit_client::ObjectMetadata` (the same facade native code uses) over the page's driver. Values and parameters are plain JS objects,
//! converted to and from Arsenal's JSON. Placeholder repairs the machines schedule are not run
//! by this client (they are `rowkit s3 repair`'s job); a read still repairs what it must.

use rowkit_statemachines::check::CheckOptions;
use std::rc::Rc;

use js_sys::Promise;
use rowkit_client::migration_json::{
    MIGRATE_TIMEOUT_MICROS, event_json, outcome_json, status_json,
};
use rowkit_client::objmeta::ObjectMetadata as Facade;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::listing::ListingParams;
use rowkit_codec::objmeta::migration::marker::Gates;
use rowkit_codec::objmeta::migration::sync::Keep;
use rowkit_codec::validate::Field;
use rowkit_statemachines::objmeta::migrate::run::MigrateOptions;
use rowkit_statemachines::objmeta::{
    ObjmetaConfig, ObjmetaError, ObjmetaEvent, ObjmetaState, uuid_v4,
};
use serde_json::json;
use wasm_bindgen::prelude::*;

use crate::backend::{ClientOptions, Diagnosis, PageDriver};
use crate::js;

struct Inner {
    om: Facade<PageDriver>,
}

/// An objmeta error as a JS error with Arsenal's error name (`NoSuchKey`, …) as `code` and
/// `id`.
fn objmeta_error(e: ObjmetaError) -> JsValue {
    js::operation_error(e.in_call("", None))
}

/// An objmeta error of a call on `bucket` (and object `key`), its message naming them
/// (`no such key a.jpg in bucket photos`).
fn objmeta_error_in<'a>(
    bucket: &'a str,
    key: Option<&'a str>,
) -> impl Fn(ObjmetaError) -> JsValue + 'a {
    move |e| js::operation_error(e.in_call(bucket, key))
}

/// A JS value as Arsenal's JSON, members in the object's order: Arsenal stores a value as its
/// `JSON.stringify` text, so the order is part of the stored bytes (and of their hash).
fn to_arsenal(v: &JsValue, what: &str) -> Result<Json, JsValue> {
    Json::parse(&js::stringify(v)?).map_err(|e| js::invalid(format!("{what}: {e}")))
}

/// An optional JS argument (`undefined`/`null`: none) as Arsenal's JSON.
fn optional_arsenal(v: &JsValue, what: &str) -> Result<Option<Json>, JsValue> {
    if js::is_absent(v) {
        return Ok(None);
    }
    to_arsenal(v, what).map(Some)
}

/// Arsenal's JSON as a JS value, members in the stored order.
fn from_arsenal(j: &Json) -> JsValue {
    js::parse(&j.stringify())
}

/// 64 random bits from `Math.random` (a bucket's uid, a migrator's name: unlikely to repeat,
/// not secret).
fn random_u64() -> u64 {
    let half = || (js_sys::Math::random() * 4_294_967_296.0) as u64 & 0xffff_ffff;
    (half() << 32) | half()
}

/// A migration options object's `settleMs` in µs (`None`: the migrator's default).
pub(crate) fn settle_option(options: &JsValue) -> Result<Option<i64>, JsValue> {
    match js::get_number(options, "settleMs")? {
        Some(ms) => Ok(Some(js::to_i64(ms, "settleMs")?.saturating_mul(1000))),
        None => Ok(None),
    }
}

/// A migration options object's `owner`, the checkpoints' lease owner (§7.1): as given (not
/// empty), else a random `browser:…` name.
pub(crate) fn owner_option(options: &JsValue) -> Result<String, JsValue> {
    match js::get_string(options, "owner")? {
        Some(owner) if owner.is_empty() => Err(js::invalid("owner must not be empty")),
        Some(owner) => Ok(owner),
        // No host or pid in a page: a random name, unlikely to be any other migrator's.
        None => Ok(format!("browser:{:016x}", random_u64())),
    }
}

/// A migration options object's boolean member `name` (absent: `false`).
pub(crate) fn flag_option(options: &JsValue, name: &str) -> Result<bool, JsValue> {
    js::get_bool(options, name).map(Option::unwrap_or_default)
}

/// `migrateBucket`'s options object as the migrator's (see `MigrateBucketOptions`).
fn migrate_options(options: &JsValue) -> Result<MigrateOptions, JsValue> {
    let flag = |name| flag_option(options, name);
    let settle_us = settle_option(options)?;
    let page_rows = match js::get_number(options, "page")? {
        Some(n) => u32::try_from(js::to_u64(n, "page")?)
            .map_err(|_| js::invalid("page must be at most 2^32-1 rows"))?,
        None => 0,
    };
    let owner = owner_option(options)?;
    let resolve = match js::get_string(options, "resolve")? {
        Some(text) => Some(
            Keep::parse(&text)
                .ok_or_else(|| js::invalid("resolve must be \"keep-to\" or \"keep-from\""))?,
        ),
        None => None,
    };
    let max_pause_us = match js::get_number(options, "maxPauseMs")? {
        Some(ms) => Some(js::to_i64(ms, "maxPauseMs")?.saturating_mul(1000)),
        None => None,
    };
    Ok(MigrateOptions {
        gates: Gates {
            switch: flag("switch")?,
            finish: flag("finish")?,
        },
        abort: flag("abort")?,
        settle_us,
        page_rows,
        take_over: flag("takeOver")?,
        owner,
        resolve,
        max_pause_us,
    })
}

// The TypeScript types of the parameters and results (the package's `.d.ts`).
#[wasm_bindgen(typescript_custom_section)]
const OBJECT_METADATA_TS: &str = r#"
/** A JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
/** A JSON object: a bucket's or object's metadata as Arsenal stores it (members in order). */
export interface JsonObject {
    [member: string]: JsonValue;
}

/** Arsenal's `putObject` parameters. */
export interface PutObjectParams {
    /** Write a new version (a versioned bucket). */
    versioning?: boolean;
    /** Write this version (`""`: the null version). */
    versionId?: string;
    /** With `versionId`: also set the master to this version when it is newer. */
    repairMaster?: boolean;
    /** Replace the master, with a delete-then-put oplog. */
    needOplogUpdate?: boolean;
    /** The operation named in that oplog. */
    originOp?: string;
    [param: string]: JsonValue | undefined;
}

/** Arsenal's `deleteObject` parameters. */
export interface DeleteObjectParams {
    /** Delete this version instead of the master. */
    versionId?: string;
    [param: string]: JsonValue | undefined;
}

/** Arsenal's listing parameters. */
export interface ListingParams {
    /** `"DelimiterMaster"` (default: S3 ListObjects) or `"DelimiterVersions"`. */
    listingType?: "DelimiterMaster" | "DelimiterVersions";
    prefix?: string;
    delimiter?: string;
    maxKeys?: number;
    marker?: string;
    startAfter?: string;
    continuationToken?: string;
    keyMarker?: string;
    versionIdMarker?: string;
}

/** One key of a listing; `value` is the stored metadata as JSON text. */
export interface ListedObject {
    key: string;
    versionId?: string;
    value: string;
}

/** Arsenal's listing result: `Contents` (masters) or `Versions`, and `CommonPrefixes`. */
export interface ListingResult {
    IsTruncated: boolean;
    CommonPrefixes: string[];
    Contents?: ListedObject[];
    Versions?: ListedObject[];
    [field: string]: JsonValue | ListedObject[] | undefined;
}

/** `migrateBucket`'s options: the gates and flags of `rowkit s3 migrate` (all optional). */
export interface MigrateBucketOptions {
    /** `--switch`: let the run switch the bucket to the new format (no writer unaware of the migration writes meanwhile). */
    switch?: boolean;
    /** `--finish`: let the run delete the old layout (no process of the old configuration is left). */
    finish?: boolean;
    /** `--abort`: roll the migration in progress back (before the switch); `to` is that run's. */
    abort?: boolean;
    /** `--settle`: the settle time Δ in ms for a run this call starts (at least 85 000; default 90 000). */
    settleMs?: number;
    /** `--page`: rows read per page (default: the pass's). */
    page?: number;
    /** `--take-over`: take over a run another migrator's lease holds. */
    takeOver?: boolean;
    /** Who runs it, in the checkpoint's lease (default: `browser:` and 16 random hex digits). */
    owner?: string;
    /** `--resolve`: settle conflicts met after the switch by keeping this side. */
    resolve?: "keep-to" | "keep-from";
    /** `--max-pause`: refuse to fence when the expected pause of the switch is longer (ms). */
    maxPauseMs?: number;
}

/** Counters of a migration pass (`docs/migration.md` §7.1). */
export interface MigrateCounters {
    rows_scanned: number;
    copied: number;
    deleted: number;
    stamped: number;
    unchanged: number;
    stragglers: number;
    conflicts: number;
}

/** A migration state (`docs/migration.md` §3). */
export type MigrationStateName = "copying" | "verifying" | "switching" | "switched" | "cleaning" | "aborting";

/** A conflict left for the operator (§4.6). */
export interface MigrateConflict {
    key: string;
    from_hash: string;
    to_hash: string | null;
}

/** A key or row the migration cannot sync (§4.1). */
export interface MigrateFinding {
    id: string;
    message: string;
}

/** One event of a running migration (§7.3), as `migrateBucket` hands them to its callback. */
export type MigrateEvent =
    | ({ event: "progress"; state: MigrationStateName; pass: number; rate_rows_per_s: number | null; eta_s: number | null } & MigrateCounters)
    | { event: "state_changed"; from: MigrationStateName | null; to: MigrationStateName | null }
    | { event: "straggler"; key: string }
    | ({ event: "conflict" } & MigrateConflict)
    | ({ event: "finding" } & MigrateFinding)
    | { event: "resolved"; key: string; kept: "keep-to" | "keep-from" };

/** What a migration run did: `rowkit s3 migrate --json`'s result document. */
export interface MigrateResult {
    bucket: string;
    to: "v0" | "v1";
    abort: boolean;
    /** Where it ended: a state (a gate not given), `already` (nothing to do) or `removed` (done). */
    state: MigrationStateName | "already" | "removed";
    run: string | null;
    /** A sweep or the clean-up left conflicts or findings (the CLI exits 1). */
    blocked: boolean;
    passes: ({ kind: string; pass: number; diffs: number } & MigrateCounters)[];
    stragglers: string[];
    /** Conflicts settled by `resolve` (their keys). */
    resolved: string[];
    /** The pause the switch was expected to take (µs), when this run reached it. */
    pause_estimate_us: number | null;
    conflicts: MigrateConflict[];
    findings: MigrateFinding[];
}

/** A bucket's migration state as the migrator reads it (§2.1): marker and checkpoint as stored (§2.2, §7.1). */
export interface MigrationStatus {
    bucket: string;
    vformat: "v0" | "v1";
    marker: { run: string; from: "v0" | "v1"; to: "v0" | "v1"; state: MigrationStateName; since: number; settle_us: number; [member: string]: JsonValue } | null;
    checkpoint: ({ run: string; state: MigrationStateName; pass: number; cursor: string | null; owner: string; lease_until: number;
        pass_rows_previous: number | null; started: number; updated: number } & MigrateCounters) | null;
}

/** One bucket of `listBuckets`. */
export interface BucketEntry {
    name: string;
    /** The bucket's key format. */
    vformat: "v0" | "v1";
    /** Whether it is one of Arsenal's special buckets (users, metastore). */
    special: boolean;
    /** The bucket's metadata (BucketInfo). */
    value: JsonValue;
}
"#;

/// Object metadata (Scality Arsenal semantics). Options: the common client options
/// (`gateway`, `token`, `table` default `objmeta`, `seed`, `signal`).
#[wasm_bindgen]
pub struct ObjectMetadata {
    inner: Rc<Inner>,
    diagnosis: Diagnosis,
    /// A check's deadline (`deadlineMs`, else an hour).
    check_timeout_us: i64,
    /// `deadlineMs` in µs, if given (a migration runs at least a day).
    deadline_us: Option<i64>,
}

#[wasm_bindgen]
impl ObjectMetadata {
    /// A client; see the type's docs for `options`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "ClientOptions")] options: JsValue,
    ) -> Result<ObjectMetadata, JsValue> {
        let opts = ClientOptions::from_js(&options)?;
        let mut config = ObjmetaConfig::default();
        if let Some(t) = &opts.table {
            config.table = t.clone();
        }
        let diagnosis = opts.diagnosis("buckets", vec![config.table.clone()]);
        let check_timeout_us = opts.check_timeout_us();
        let deadline_us = opts.deadline_us();
        let call_options = opts.call_options();
        let om = Facade::new(opts.driver, ObjmetaState::new(config))
            .with_options(call_options)
            .with_bucket_checks();
        Ok(ObjectMetadata {
            inner: Rc::new(Inner { om }),
            diagnosis,
            check_timeout_us,
            deadline_us,
        })
    }

    /// Creates the table with families `d` and `f` unless it exists (in the page's store or
    /// through the gateway), as `rowkit s3 setup`.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn setup(&self) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis
            .promise_void(async move { inner.om.setup().await.map_err(objmeta_error) })
    }

    /// `createBucket(bucket, md)` of a new bucket; `md` (the BucketInfo) defaults to `{name:
    /// bucket, uid}` with a fresh random uid, as the CLI gives one (a migration names the
    /// bucket by it, `docs/migration.md` §4.8). Resolves to the key format written (`v0` or `v1`). A name S3 refuses fails
    /// with `code` `invalid_argument`, an existing bucket with `BucketAlreadyExists` (nothing
    /// written: the write is conditional on the bucket's absence).
    #[wasm_bindgen(js_name = createBucket, unchecked_return_type = "Promise<\"v0\" | \"v1\">")]
    pub fn create_bucket(
        &self,
        bucket: String,
        #[wasm_bindgen(unchecked_optional_param_type = "JsonObject | null")] md: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            crate::validate::checked(Field::Bucket, &bucket)?;
            let md = if js::is_absent(&md) {
                let uid = uuid_v4(random_u64());
                Json::parse(&json!({ "name": bucket, "uid": uid }).to_string())
                    .map_err(js::invalid)?
            } else {
                to_arsenal(&md, "md")?
            };
            let vf = inner
                .om
                .create_new_bucket(&bucket, &md)
                .await
                .map_err(objmeta_error_in(&bucket, None))?;
            Ok(JsValue::from_str(vf.as_str()))
        })
    }

    /// `deleteBucket(bucket)`; resolves to the number of rows deleted.
    #[wasm_bindgen(js_name = deleteBucket, unchecked_return_type = "Promise<number>")]
    pub fn delete_bucket(&self, bucket: String) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let n = inner
                .om
                .delete_bucket(&bucket)
                .await
                .map_err(objmeta_error_in(&bucket, None))?;
            Ok(JsValue::from_f64(n as f64))
        })
    }

    /// Checks the table, or one bucket (`spec/check.md` §3), repairing with `fix` what may be
    /// repaired (derived cells, masters set to their newest version), each only if the rows
    /// are as read. Resolves to the report: `{schema, rows_scanned, findings_by_kind,
    /// repaired, left, notes, findings}`.
    #[wasm_bindgen(unchecked_return_type = "Promise<CheckReport>")]
    pub fn check(&self, bucket: Option<String>, fix: bool) -> Promise {
        let inner = self.inner.clone();
        let check_timeout_us = self.check_timeout_us;
        self.diagnosis.promise(async move {
            let options = CheckOptions {
                fix,
                ..CheckOptions::default()
            };
            let mut findings = Vec::new();
            let summary = inner
                .om
                .check(bucket.as_deref(), options, check_timeout_us, |e| {
                    js::keep_finding(&mut findings, e)
                })
                .await
                .map_err(js::check_error)?;
            Ok(js::check_report("s3", summary, findings))
        })
    }

    /// `migrationStatus(bucket)`: the bucket's key format and the migration in progress, read
    /// as the migrator reads them (`docs/migration.md` §2.1): `{bucket, vformat, marker,
    /// checkpoint}`, `marker` and `checkpoint` as stored, `null` when absent.
    #[wasm_bindgen(js_name = migrationStatus, unchecked_return_type = "Promise<MigrationStatus>")]
    pub fn migration_status(&self, bucket: String) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            crate::validate::checked(Field::Bucket, &bucket)?;
            let read = inner
                .om
                .read_migration(&bucket)
                .await
                .map_err(objmeta_error_in(&bucket, None))?;
            Ok(js::to_js(&status_json(&bucket, &read)))
        })
    }

    /// `migrateBucket(bucket, to, options, onEvent)`: `rowkit s3 migrate BUCKET --to v1|v0`
    /// (`docs/migration.md` §3), as far as `options`' gates allow, starting a run or resuming
    /// the one the bucket's marker names. Each event (progress after every page, marker
    /// changes, stragglers, conflicts, findings) goes to `onEvent` as the machine emits it;
    /// resolves to the result document (`rowkit s3 migrate --json`'s). Runs up to a day (or
    /// `deadlineMs` if longer); while it runs, the client's other calls wait (its per-process
    /// state is the migration's), so a page runs it on a client of its own. Refusals (a bad
    /// `to` or option: `invalid_argument`; `--settle` below 85 s: `usage_error`; another
    /// run: `migration_in_progress`; findings before the switch: `migration_blocked`) reject
    /// with the `code` of the CLI's error.
    #[wasm_bindgen(js_name = migrateBucket, unchecked_return_type = "Promise<MigrateResult>")]
    pub fn migrate_bucket(
        &self,
        bucket: String,
        #[wasm_bindgen(unchecked_param_type = "\"v0\" | \"v1\"")] to: String,
        #[wasm_bindgen(unchecked_optional_param_type = "MigrateBucketOptions | null")]
        options: JsValue,
        #[wasm_bindgen(
            js_name = onEvent,
            unchecked_optional_param_type = "(event: MigrateEvent) => void"
        )]
        on_event: Option<js_sys::Function>,
    ) -> Promise {
        let inner = self.inner.clone();
        let timeout = MIGRATE_TIMEOUT_MICROS.max(self.deadline_us.unwrap_or(0));
        self.diagnosis.promise(async move {
            crate::validate::checked(Field::Bucket, &bucket)?;
            let to = VFormat::parse(&to)
                .map_err(|_| js::invalid(format!("to {to:?}: expected v1 or v0")))?;
            let options = migrate_options(&options)?;
            let abort = options.abort;
            let outcome = inner
                .om
                .migrate_bucket(&bucket, to, options, timeout, |e| {
                    if let (ObjmetaEvent::Migrate(e), Some(f)) = (e, &on_event) {
                        // A callback that throws does not stop the run.
                        let _ = f.call1(&JsValue::NULL, &js::to_js(&event_json(&e)));
                    }
                })
                .await
                .map_err(objmeta_error_in(&bucket, None))?;
            Ok(js::to_js(&outcome_json(&bucket, to, abort, &outcome)))
        })
    }

    /// `listBuckets()`: `[{name, vformat, special, value}]`.
    #[wasm_bindgen(js_name = listBuckets, unchecked_return_type = "Promise<BucketEntry[]>")]
    pub fn list_buckets(&self) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let list = inner.om.list_buckets().await.map_err(objmeta_error)?;
            let docs = js_sys::Array::new();
            for b in &list {
                let doc = js::to_js(&json!({
                    "name": b.name,
                    "vformat": b.vformat.as_str(),
                    "special": b.special,
                }));
                js_sys::Reflect::set(&doc, &"value".into(), &from_arsenal(&b.value))?;
                docs.push(&doc);
            }
            Ok(docs.into())
        })
    }

    /// `putObject(bucket, key, value, params)` (`params` as Arsenal's: `{versioning: true}`,
    /// `{versionId}`, …). Resolves to Arsenal's result text, `{"versionId": "…"}` when a version
    /// id was written (or given), or `null`.
    #[wasm_bindgen(js_name = putObject, unchecked_return_type = "Promise<string | null>")]
    pub fn put_object(
        &self,
        bucket: String,
        key: String,
        #[wasm_bindgen(unchecked_param_type = "JsonObject")] value: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PutObjectParams | null")] params: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            crate::validate::checked(Field::ObjectKey, &key)?;
            let value = to_arsenal(&value, "value")?;
            let params = optional_arsenal(&params, "params")?;
            let put = inner
                .om
                .put_object(&bucket, &key, &value, params.as_ref())
                .await
                .map_err(objmeta_error_in(&bucket, Some(&key)))?;
            Ok(put.result.map_or(JsValue::NULL, |v| JsValue::from_str(&v)))
        })
    }

    /// `getObject(bucket, key, versionId?)`: the stored value.
    #[wasm_bindgen(js_name = getObject, unchecked_return_type = "Promise<JsonObject>")]
    pub fn get_object(
        &self,
        bucket: String,
        key: String,
        #[wasm_bindgen(js_name = versionId)] version_id: Option<String>,
    ) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let v = inner
                .om
                .get_object(&bucket, &key, version_id.as_deref())
                .await
                .map_err(objmeta_error_in(&bucket, Some(&key)))?;
            Ok(from_arsenal(&v))
        })
    }

    /// `deleteObject(bucket, key, params?)`.
    #[wasm_bindgen(js_name = deleteObject, unchecked_return_type = "Promise<void>")]
    pub fn delete_object(
        &self,
        bucket: String,
        key: String,
        #[wasm_bindgen(unchecked_optional_param_type = "DeleteObjectParams | null")]
        params: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise_void(async move {
            let params = optional_arsenal(&params, "params")?;
            inner
                .om
                .delete_object(&bucket, &key, params.as_ref(), None)
                .await
                .map_err(objmeta_error_in(&bucket, Some(&key)))
        })
    }

    /// `listObject(bucket, params)` with Arsenal's listing parameters (`{prefix, delimiter,
    /// maxKeys, marker, …}`; `listingType` defaults to `DelimiterMaster`, i.e. S3
    /// ListObjects). Resolves to Arsenal's result (`{CommonPrefixes, Contents, IsTruncated,
    /// …}`).
    #[wasm_bindgen(js_name = listObjects, unchecked_return_type = "Promise<ListingResult>")]
    pub fn list_objects(
        &self,
        bucket: String,
        #[wasm_bindgen(unchecked_optional_param_type = "ListingParams | null")] params: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let mut p = js::from_js(&params)?;
            if p.is_null() {
                p = json!({});
            }
            if p.get("listingType").is_none() {
                p["listingType"] = json!("DelimiterMaster");
            }
            let p = Json::parse(&p.to_string()).map_err(|e| js::invalid(format!("params: {e}")))?;
            let params = ListingParams::from_json(&p);
            let r = inner
                .om
                .list_object(&bucket, &params)
                .await
                .map_err(objmeta_error_in(&bucket, None))?;
            Ok(from_arsenal(&r))
        })
    }
}
