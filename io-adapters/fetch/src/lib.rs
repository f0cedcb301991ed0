//! Browser driver: runs rowkit machines over `fetch` against the JSON gateway (wasm32). Built by the browser issue.
//!
//! Until then the crate re-exports the request vocabulary it will execute:
//!
//! ```
//! use rowkit_fetch::Request;
//! fn is_read(r: &Request) -> bool { matches!(r, Request::ReadRows(_)) }
//! # let _ = is_read;
//! ```
#![forbid(unsafe_code)]

pub use rowkit_statemachines::{Request, Response, StoreError};
