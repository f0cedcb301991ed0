//! `MountTable`: the Vanadium mount table from JS, a thin caller of
//! `rowkit_client::MountTable` (the same facade native code uses) over the page's driver.

use std::rc::Rc;

use js_sys::Promise;
use rowkit_client::mounttable::{MountTable as Facade, MtConfig};
use rowkit_codec::mounttable::{Caller, MountFlags, encode_permissions_string};
use rowkit_statemachines::mounttable::{MountEntry, Tables};
use serde_json::json;
use wasm_bindgen::prelude::*;

use crate::backend::{ClientOptions, Diagnosis, PageDriver};
use crate::js;

struct Inner {
    mt: Facade<PageDriver>,
    caller: Caller,
}

fn entry_json(e: &MountEntry) -> serde_json::Value {
    json!({
        "name": e.name,
        "servers": e.servers.iter().map(|s| json!({"server": s.server, "deadlineUs": s.deadline_us})).collect::<Vec<_>>(),
        "mt": e.mt,
        "leaf": e.leaf,
    })
}

// The TypeScript types of the options and results (the package's `.d.ts`).
#[wasm_bindgen(typescript_custom_section)]
const MOUNT_TABLE_TS: &str = r#"
/** `new MountTable(options)`: the common client options and the caller. */
export interface MountTableOptions extends ClientOptions {
    /** The caller's blessing names (default: the server itself, which may do anything). */
    as?: string[];
}

/** One server mounted on a name. */
export interface MountedServer {
    server: string;
    /** When the mount expires, in µs since the Unix epoch. */
    deadlineUs: number;
}

/** A node as `resolve` and `glob` return it. */
export interface MountEntry {
    /** `resolve`: the unresolved rest of the name; `glob`: the name matched. */
    name: string;
    servers: MountedServer[];
    /** Whether the servers are mount tables. */
    mt: boolean;
    /** Whether the servers are leaves. */
    leaf: boolean;
}

/** A node's permissions (spec §7.3): per tag, the blessing patterns in and not in. */
export interface MountPermissions {
    perms: Record<string, { In: string[] | null; NotIn: string[] | null }>;
    /** The permissions' version, for a read-modify-write. */
    version: string;
}
"#;

/// The Vanadium mount table (btmtd layout). Options: the common client options (`gateway`,
/// `token`, `table` = node table, default `mounttable`, `seed`, `signal`) and `as`: the caller's
/// blessing names (default: the server itself, which may do anything).
#[wasm_bindgen]
pub struct MountTable {
    inner: Rc<Inner>,
    diagnosis: Diagnosis,
}

#[wasm_bindgen]
impl MountTable {
    /// A client; see the type's docs for `options`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "MountTableOptions")] options: JsValue,
    ) -> Result<MountTable, JsValue> {
        let opts = ClientOptions::from_js(&options)?;
        let caller = match js::get(&options, "as") {
            v if js::is_absent(&v) => Caller::new(&[], true),
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
        let config = MtConfig {
            tables: Tables::new(opts.table.as_deref().unwrap_or("mounttable")),
            // Several clients of a page may share its store; a page has one caller at a time,
            // so a cache would save little and could show one client's row stale to another.
            row_cache_capacity: 0,
            ..MtConfig::default()
        };
        let options = opts.call_options();
        let tables = vec![config.tables.node.clone(), config.tables.counter.clone()];
        let diagnosis = opts.diagnosis("mount table", tables);
        Ok(MountTable {
            inner: Rc::new(Inner {
                mt: Facade::new(opts.driver, config).with_options(options),
                caller,
            }),
            diagnosis,
        })
    }

    /// Creates the tables (in the page's store or through the gateway) and the initial nodes
    /// (the root, with default permissions), as `rowkit mt setup`.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn setup(&self) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis
            .promise_void(async move { inner.mt.setup(None).await.map_err(js::operation_error) })
    }

    /// Mounts `server` on `name` for `ttlSeconds`; `flags`: 1 = replace, 2 = mount table,
    /// 4 = leaf (ORed). Resolves to the deadline written (µs since the epoch).
    #[wasm_bindgen(unchecked_return_type = "Promise<number>")]
    pub fn mount(
        &self,
        name: String,
        server: String,
        #[wasm_bindgen(js_name = ttlSeconds)] ttl_seconds: u32,
        flags: Option<u32>,
    ) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let flags = MountFlags(flags.unwrap_or(0));
            let mounted = inner
                .mt
                .mount(&inner.caller, &name, &server, ttl_seconds, flags)
                .await
                .map_err(js::operation_error)?;
            Ok(JsValue::from_f64(mounted.deadline_us as f64))
        })
    }

    /// Unmounts `server` from `name` (every server when `server` is absent or empty).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn unmount(&self, name: String, server: Option<String>) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise_void(async move {
            inner
                .mt
                .unmount(&inner.caller, &name, server.as_deref().unwrap_or(""))
                .await
                .map_err(js::operation_error)
        })
    }

    /// Resolves one step of `name`: `{name, servers: [{server, deadlineUs}], mt, leaf}` where
    /// `name` is the unresolved rest.
    #[wasm_bindgen(unchecked_return_type = "Promise<MountEntry>")]
    pub fn resolve(&self, name: String) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let entry = inner
                .mt
                .resolve(&inner.caller, &name)
                .await
                .map_err(js::operation_error)?;
            Ok(js::to_js(&entry_json(&entry)))
        })
    }

    /// Names under `name` matching `pattern` (`*`, `...`, or a path of such patterns), in emission order.
    #[wasm_bindgen(unchecked_return_type = "Promise<MountEntry[]>")]
    pub fn glob(&self, name: String, pattern: String) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let entries = inner
                .mt
                .glob(&inner.caller, &name, &pattern)
                .await
                .map_err(js::operation_error)?;
            let entries = entries.iter().map(entry_json).collect();
            Ok(js::to_js(&serde_json::Value::Array(entries)))
        })
    }

    /// The permissions of `name` as the caller may read them: `{perms, version}`, `perms` the
    /// stored JSON object (`{"Admin": {"In": [...], "NotIn": null}, ...}`, spec §7.3).
    #[wasm_bindgen(unchecked_return_type = "Promise<MountPermissions>")]
    pub fn permissions(&self, name: String) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let pv = inner
                .mt
                .get_permissions(&inner.caller, &name)
                .await
                .map_err(js::operation_error)?;
            let doc = js_sys::Object::new();
            js_sys::Reflect::set(
                &doc,
                &"perms".into(),
                &js::parse(&encode_permissions_string(&pv.perms)),
            )?;
            js_sys::Reflect::set(&doc, &"version".into(), &pv.version.into())?;
            Ok(doc.into())
        })
    }

    /// Checks the tables (the mount table's check is its fsck, `spec/check.md` §1), repairing
    /// with `fix` what fsck may repair. Resolves to the report: `{schema, rows_scanned,
    /// findings_by_kind, repaired, left, notes, findings}`.
    #[wasm_bindgen(unchecked_return_type = "Promise<CheckReport>")]
    pub fn check(&self, fix: bool) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise(async move {
            let mut findings = Vec::new();
            let summary = inner
                .mt
                .check(fix, |e| js::keep_finding(&mut findings, e))
                .await
                .map_err(js::operation_error)?;
            Ok(js::check_report("mt", summary, findings))
        })
    }

    /// Deletes `name` (with its children when `subtree`).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn delete(&self, name: String, subtree: bool) -> Promise {
        let inner = self.inner.clone();
        self.diagnosis.promise_void(async move {
            inner
                .mt
                .delete(&inner.caller, &name, subtree)
                .await
                .map_err(js::operation_error)
        })
    }
}
