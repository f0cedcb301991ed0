//! `ObjectMetadata`: Arsenal's object metadata from JS, running `rowkit_statemachines::objmeta`
//! (as `rowkit_embedded::objmeta` does natively). Values and parameters are plain JS objects,
//! converted to and from Arsenal's JSON. Placeholder repairs the machines schedule are not run
//! by this client (they are `rowkit s3 repair`'s job); a read still repairs what it must.

use std::rc::Rc;

use futures_util::lock::Mutex;
use js_sys::Promise;
use rowkit_codec::objmeta::cells::families;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::listing::ListingParams;
use rowkit_statemachines::objmeta::engine::Op;
use rowkit_statemachines::objmeta::{
    CreateBucketOp, DeleteBucketOp, DeleteObjectOp, GetObjectOp, ListBucketsOp, ListObject,
    ObjmetaConfig, ObjmetaError, ObjmetaState, OpMachine, PutObjectOp,
};
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use rowkit_client::{Driver, ensure_table};

use crate::backend::{ClientOptions, run_error};
use crate::js;

struct Inner {
    options: ClientOptions,
    state: Mutex<(ObjmetaState, u64)>,
}

/// An objmeta error as a JS error with Arsenal's error name (`NoSuchKey`, …) as `code`.
fn objmeta_error(e: ObjmetaError) -> JsValue {
    js::error(e.id(), &e.to_string())
}

/// A JS value as Arsenal's JSON, members in the object's order: Arsenal stores a value as its
/// `JSON.stringify` text, so the order is part of the stored bytes (and of their hash).
fn to_arsenal(v: &JsValue, what: &str) -> Result<Json, JsValue> {
    Json::parse(&js::stringify(v)?).map_err(|e| js::invalid(format!("{what}: {e}")))
}

/// Arsenal's JSON as a JS value, members in the stored order.
fn from_arsenal(j: &Json) -> JsValue {
    js::parse(&j.stringify())
}

impl Inner {
    async fn run_op<O: Op>(&self, op: O) -> Result<O::Output, JsValue> {
        let mut guard = self.state.lock().await;
        let (state, seed) = &mut *guard;
        *seed = seed.wrapping_add(1);
        let m = OpMachine::new(op, state, self.options.driver.now(), *seed, None);
        rowkit_client::run(&self.options.driver, m, |_| {})
            .await
            .map_err(|e| run_error(e, objmeta_error))
    }
}

/// Object metadata (Scality Arsenal semantics). Options: the common client options
/// (`gateway`, `token`, `table` default `objmeta`, `seed`, `signal`).
#[wasm_bindgen]
pub struct ObjectMetadata {
    inner: Rc<Inner>,
}

#[wasm_bindgen]
impl ObjectMetadata {
    /// A client; see the type's docs for `options`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<ObjectMetadata, JsValue> {
        let opts = ClientOptions::from_js(&options)?;
        let mut config = ObjmetaConfig::default();
        if let Some(t) = &opts.table {
            config.table = t.clone();
        }
        let seed = opts.seed;
        Ok(ObjectMetadata {
            inner: Rc::new(Inner {
                options: opts,
                state: Mutex::new((ObjmetaState::new(config), seed)),
            }),
        })
    }

    /// Creates the table with families `d` and `f` (offline mode; on a gateway run
    /// `rowkit s3 setup` on the served store).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn setup(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let table = inner.state.lock().await.0.config.table.clone();
            ensure_table(&inner.options.driver, &table, &families())
                .await
                .map_err(|e| js::store_error(&e))?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `createBucket(bucket, md)`; `md` (the BucketInfo) defaults to `{name: bucket}`.
    /// Resolves to the key format written (`v0` or `v1`).
    #[wasm_bindgen(js_name = createBucket, unchecked_return_type = "Promise<string>")]
    pub fn create_bucket(&self, bucket: String, md: JsValue) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let md = if md.is_undefined() || md.is_null() {
                Json::parse(&json!({ "name": bucket }).to_string()).map_err(js::invalid)?
            } else {
                to_arsenal(&md, "md")?
            };
            let vf = inner.run_op(CreateBucketOp { bucket, md }).await?;
            Ok(JsValue::from_str(vf.as_str()))
        })
    }

    /// `deleteBucket(bucket)`; resolves to the number of rows deleted.
    #[wasm_bindgen(js_name = deleteBucket, unchecked_return_type = "Promise<number>")]
    pub fn delete_bucket(&self, bucket: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let n = inner.run_op(DeleteBucketOp { bucket }).await?;
            Ok(JsValue::from_f64(n as f64))
        })
    }

    /// `listBuckets()`: `[{name, vformat, special, value}]`.
    #[wasm_bindgen(js_name = listBuckets, unchecked_return_type = "Promise<{name: string, vformat: string, special: boolean, value: unknown}[]>")]
    pub fn list_buckets(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let list = inner.run_op(ListBucketsOp).await?;
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
    /// `{versionId}`, …). Resolves to the version id written, or `null`.
    #[wasm_bindgen(js_name = putObject, unchecked_return_type = "Promise<string | null>")]
    pub fn put_object(
        &self,
        bucket: String,
        key: String,
        value: JsValue,
        params: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let value = to_arsenal(&value, "value")?;
            let params = if params.is_undefined() || params.is_null() {
                None
            } else {
                Some(to_arsenal(&params, "params")?)
            };
            let vid = inner
                .run_op(PutObjectOp {
                    bucket,
                    key,
                    value,
                    params,
                })
                .await?;
            Ok(vid.map_or(JsValue::NULL, |v| JsValue::from_str(&v)))
        })
    }

    /// `getObject(bucket, key, versionId?)`: the stored value.
    #[wasm_bindgen(js_name = getObject, unchecked_return_type = "Promise<unknown>")]
    pub fn get_object(&self, bucket: String, key: String, version_id: Option<String>) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let v = inner
                .run_op(GetObjectOp {
                    bucket,
                    key,
                    version_id,
                })
                .await?;
            Ok(from_arsenal(&v))
        })
    }

    /// `deleteObject(bucket, key, params?)`.
    #[wasm_bindgen(js_name = deleteObject, unchecked_return_type = "Promise<void>")]
    pub fn delete_object(&self, bucket: String, key: String, params: JsValue) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let params = if params.is_undefined() || params.is_null() {
                None
            } else {
                Some(to_arsenal(&params, "params")?)
            };
            inner
                .run_op(DeleteObjectOp {
                    bucket,
                    key,
                    params,
                    origin_op: None,
                })
                .await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `listObject(bucket, params)` with Arsenal's listing parameters (`{prefix, delimiter,
    /// maxKeys, marker, …}`; `listingType` defaults to `DelimiterMaster`, i.e. S3
    /// ListObjects). Resolves to Arsenal's result (`{CommonPrefixes, Contents, IsTruncated,
    /// …}`).
    #[wasm_bindgen(js_name = listObjects, unchecked_return_type = "Promise<Record<string, unknown>>")]
    pub fn list_objects(&self, bucket: String, params: JsValue) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let mut p = js::from_js(&params)?;
            if p.is_null() {
                p = json!({});
            }
            if p.get("listingType").is_none() {
                p["listingType"] = json!("DelimiterMaster");
            }
            let p = Json::parse(&p.to_string()).map_err(|e| js::invalid(format!("params: {e}")))?;
            let params = ListingParams::from_json(&p);
            let mut guard = inner.state.lock().await;
            let (state, seed) = &mut *guard;
            *seed = seed.wrapping_add(1);
            let m = ListObject::new(
                &bucket,
                params,
                state,
                inner.options.driver.now(),
                *seed,
                None,
            );
            let r = rowkit_client::run(&inner.options.driver, m, |_| {})
                .await
                .map_err(|e| run_error(e, objmeta_error))?;
            Ok(from_arsenal(&r))
        })
    }
}
