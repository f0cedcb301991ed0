#![allow(dead_code)] // each test binary uses part of the harness
//! What the wasm test binaries share: the URLs the harness (`wasm/test.sh`) baked in at compile
//! time, and `fetch` helpers. wasm has no process environment and no file system in a browser,
//! so the harness serves `../shared` over HTTP (with CORS, for the browser) and starts a
//! gateway, and passes both URLs as compile-time env vars (`option_env!`). A test run without
//! them fails with a message naming the harness.

use js_sys::Uint8Array;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = fetch)]
    fn global_fetch(url: &str) -> js_sys::Promise;
}

/// Base URL of the served `shared/` directory.
pub fn shared_url() -> &'static str {
    option_env!("ROWKIT_TEST_SHARED_URL")
        .expect("ROWKIT_TEST_SHARED_URL is not set: run the wasm tests with wasm/test.sh")
}

/// URL of the gateway (`rowkit serve` on an embedded store set up for every schema).
pub fn gateway_url() -> &'static str {
    option_env!("ROWKIT_TEST_GATEWAY")
        .expect("ROWKIT_TEST_GATEWAY is not set: run the wasm tests with wasm/test.sh")
}

/// GETs `url` and returns the body; panics (fails the test) on any error or non-2xx status.
pub async fn get_bytes(url: &str) -> Vec<u8> {
    let resp: web_sys::Response = JsFuture::from(global_fetch(url))
        .await
        .unwrap_or_else(|e| panic!("fetch {url}: {e:?}"))
        .dyn_into()
        .unwrap();
    assert!(resp.ok(), "GET {url}: HTTP {}", resp.status());
    let buf = JsFuture::from(resp.array_buffer().unwrap()).await.unwrap();
    Uint8Array::new(&buf).to_vec()
}

/// One vector file of `shared/vectors/`, parsed. Fails if it is missing.
pub async fn vectors(name: &str) -> serde_json::Value {
    let url = format!("{}/vectors/{name}.json", shared_url().trim_end_matches('/'));
    serde_json::from_slice(&get_bytes(&url).await).unwrap_or_else(|e| panic!("{url}: {e}"))
}

/// One vector file of `shared/vectors/`, parsed by `JSON.parse` as a JS user would: objects
/// keep their members' order (which `serde_json::Value` does not), so a value can be handed to
/// an API whose output depends on it.
pub async fn vectors_js(name: &str) -> JsValue {
    let url = format!("{}/vectors/{name}.json", shared_url().trim_end_matches('/'));
    let text = String::from_utf8(get_bytes(&url).await).unwrap();
    js_sys::JSON::parse(&text).unwrap_or_else(|e| panic!("{url}: {e:?}"))
}

/// `value[path[0]][path[1]]…` of a JS value (array indexes as strings).
pub fn js_at(value: &JsValue, path: &[&str]) -> JsValue {
    path.iter().fold(value.clone(), |v, key| {
        js_sys::Reflect::get(&v, &JsValue::from_str(key)).unwrap()
    })
}

/// A JS value as JSON.
pub fn json(v: &JsValue) -> serde_json::Value {
    let text: String = js_sys::JSON::stringify(v).unwrap().into();
    serde_json::from_str(&text).unwrap()
}

/// URL of the gateway started with `--token` (on its own store, set up like the other).
pub fn token_gateway_url() -> &'static str {
    option_env!("ROWKIT_TEST_TOKEN_GATEWAY")
        .expect("ROWKIT_TEST_TOKEN_GATEWAY is not set: run the wasm tests with wasm/test.sh")
}

/// The token that gateway requires.
pub fn test_token() -> &'static str {
    option_env!("ROWKIT_TEST_TOKEN")
        .expect("ROWKIT_TEST_TOKEN is not set: run the wasm tests with wasm/test.sh")
}

/// Client options for the token gateway: `{gateway, token}`, or `{gateway}` without a token.
pub fn token_options(token: Option<&str>) -> JsValue {
    let o = js_sys::Object::new();
    js_sys::Reflect::set(&o, &"gateway".into(), &token_gateway_url().into()).unwrap();
    if let Some(t) = token {
        js_sys::Reflect::set(&o, &"token".into(), &t.into()).unwrap();
    }
    o.into()
}

/// URL of the gateway on an empty memory store (`rowkit --store memory: serve`): nothing is
/// set up there but what the tests' `setup()` calls create.
pub fn empty_gateway_url() -> &'static str {
    option_env!("ROWKIT_TEST_EMPTY_GATEWAY")
        .expect("ROWKIT_TEST_EMPTY_GATEWAY is not set: run the wasm tests with wasm/test.sh")
}

/// Options for a client of the gateway at `url`: `{gateway, table?, deadlineMs?}`.
pub fn options_at(url: &str, table: Option<&str>, deadline_ms: Option<u32>) -> JsValue {
    let o = js_sys::Object::new();
    js_sys::Reflect::set(&o, &"gateway".into(), &url.into()).unwrap();
    if let Some(t) = table {
        js_sys::Reflect::set(&o, &"table".into(), &t.into()).unwrap();
    }
    if let Some(ms) = deadline_ms {
        js_sys::Reflect::set(&o, &"deadlineMs".into(), &ms.into()).unwrap();
    }
    o.into()
}

/// Options for a client: `{gateway, table}` in gateway mode, `{table}` offline.
pub fn options(gateway: bool, table: Option<&str>) -> JsValue {
    let o = js_sys::Object::new();
    if gateway {
        js_sys::Reflect::set(&o, &"gateway".into(), &gateway_url().into()).unwrap();
    }
    if let Some(t) = table {
        js_sys::Reflect::set(&o, &"table".into(), &t.into()).unwrap();
    }
    o.into()
}

/// Awaits a client's promise.
pub async fn wait(p: js_sys::Promise) -> Result<JsValue, JsValue> {
    JsFuture::from(p).await
}

/// A unique-enough suffix so runs against the same gateway store do not collide.
pub fn unique() -> String {
    format!("{}", js_sys::Date::now() as u64)
}
