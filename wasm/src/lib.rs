//! rowkit for JavaScript: the wasm-bindgen API behind the npm package `rowkit` and the browser
//! tool (`wasm/www/`).
//!
//! - Keys: `decodeKey(schema | "auto", key)` explains any row key of the four schemas;
//!   `encodeMtKey`, `encodeGoldTraceKey`, `encodeGoldDigestKey`, `encodeS3Key`,
//!   `encodeGraphKey` build them ([`keys`]).
//! - Clients: `MountTable`, `TraceStore`, `ObjectMetadata`, `Graph`, whose async methods run
//!   the sans-IO machines of `rowkit-statemachines` either over the page's in-memory store
//!   (offline mode, the default) or over `fetch` against a rowkit gateway
//!   (`{gateway: "http://127.0.0.1:8642"}`, driver in `rowkit-fetch`) ([`backend`]).
//! - `scanRows`: the table browser's prefix scan with every key explained ([`browse`]).
//! - `validate(field, value)`: the CLI's input rules, for forms ([`validate`]).
//!
//! Build: `wasm/build.sh` (cargo for wasm32 + `wasm-bindgen --target web` and `--target
//! nodejs`); the package lands in `wasm/www/pkg/` (web: browsers, bundlers, the browser tool)
//! and `wasm/pkg-node/` (Node's CommonJS glue over the same `.wasm`). The TypeScript types of
//! options and results are declared beside the code that reads or writes them
//! (`typescript_custom_section`, `unchecked_*_type`); `wasm/rowkit.d.ts` exports them.
//!
//! On native targets the crate builds (so the workspace checks it) but its functions need a JS
//! host.

pub mod backend;
pub mod browse;
pub mod js;
pub mod keys;
pub mod mounttable;
pub mod objmeta;
pub mod tracestore;
pub mod triples;
pub mod validate;

pub use mounttable::MountTable;
pub use objmeta::ObjectMetadata;
pub use tracestore::TraceStore;
pub use triples::Graph;
