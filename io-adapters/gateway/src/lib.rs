//! HTTP gateway serving the Bigtable v2 JSON API (`spec/rest-json.md`) over any rowkit store. Built by the browser issue.
//!
//! Until then the crate re-exports the request vocabulary it will execute:
//!
//! ```
//! use rowkit_gateway::Request;
//! fn is_read(r: &Request) -> bool { matches!(r, Request::ReadRows(_)) }
//! # let _ = is_read;
//! ```
#![forbid(unsafe_code)]

pub use rowkit_statemachines::{Request, Response, StoreError};
