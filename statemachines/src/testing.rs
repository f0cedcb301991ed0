//! A scripted test driver: feed a machine exact responses, errors and clock jumps, and check the
//! requests it sends (`spec/sans-io.md` 5.1).
