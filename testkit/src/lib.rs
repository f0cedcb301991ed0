//! rowkit's test harness, shared by the tests of every store and adapter. A dev-dependency
//! only: no crate that ships depends on it outside `[dev-dependencies]`.
//!
//! - [`suite`]: the Bigtable semantics suite as data, replayed on every store.
//! - [`scenarios`]: every schema's acceptance scenarios ([`scenarios::mounttable`],
//!   [`scenarios::objmeta`], [`scenarios::tracestore`], [`scenarios::triples`]) as functions
//!   over any [`Store`](rowkit_store::Store).
//! - [`script`]: a scripted driver for one machine (exact requests, responses, errors and
//!   clock jumps), for the machines' own tests.
//! - [`sim`]: the deterministic fault simulator. Feature `planted-bugs` builds the machines'
//!   planted bugs (rowkit-statemachines' `planted-bugs`) for the simulator's self-test
//!   (`tests/sim.rs`); nothing else enables it.
//! - [`live_migration`]: writers writing while a layout migration runs, and the expected state
//!   built from their acknowledgements (the migration's acceptance test and bench).
//! - [`sync_stamps`]: the object-metadata migration's sync stamp as tests check it (§4.2 of
//!   `docs/migration.md`, spelled out, not read with the codec).
//! - [`emulator`] (feature `emulator`): the Cloud Bigtable emulator (or rowkit's gRPC server
//!   in its place) as a fixture for the tests that talk gRPC.
//!
//! ```
//! use rowkit_store::MemoryStore;
//! use rowkit_testkit::suite;
//!
//! // The suite's first case, played on a fresh memory store, meets its expectation.
//! let mut case = suite::cases().remove(0);
//! let run = suite::play(&MemoryStore::new(), &mut case).unwrap();
//! case.expect.check(&run.outcome).unwrap();
//! ```
#![forbid(unsafe_code)]

#[cfg(feature = "emulator")]
pub mod emulator;
pub mod live_migration;
pub mod scenarios;
pub mod script;
pub mod sim;
pub mod suite;
pub mod sync_stamps;
