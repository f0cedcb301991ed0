//! Every schema's acceptance scenarios as functions over any [`rowkit_store::Store`], so the
//! memory store, the redb store and the emulator-backed store run the same code.

pub mod admin;
pub mod check_beside_writers;
pub mod mounttable;
pub mod objmeta;
pub mod tracestore;
pub mod triples;
