//! Panics inside redb, contained at the store boundary.
//!
//! redb trusts the pages it reads: on a file with damaged bytes its B-tree code indexes out of
//! bounds, unwraps a failed decode or finds a lock poisoned by an earlier such panic, and
//! panics rather than returning an error. [`contain`] runs one call into the store and turns
//! a panic raised in redb's own code into an error value, so that [`crate::RedbStore`] can
//! answer `DATA_LOSS`; any other panic (a bug in rowkit, e.g. in the evaluator's closure that
//! runs inside a write transaction) is resumed unchanged, so no real bug is hidden.
//!
//! A process-wide panic hook, installed once by the first [`contain`], keeps contained panics
//! quiet (the caller reports one line, not a backtrace dump) and hands every other panic to
//! the hook that was installed before it.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

thread_local! {
    /// How many [`contain`] calls are running on this thread: the hook stays quiet only inside
    /// one.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// What the hook saw of the last panic raised in redb's code on this thread, inside a
    /// [`contain`]: its message and where it was raised.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Whether `location` is in redb's own source (`…/redb-4.5.0/src/…` from the registry, or a
/// `redb/src/…` checkout or vendored copy). Slice indexing, `unwrap` and `assert!` report
/// the line that called them, so a panic on bad pages is located in redb.
fn in_redb(file: &str) -> bool {
    let mut parts = file.split(['/', '\\']).peekable();
    while let Some(part) = parts.next() {
        let crate_dir = part == "redb"
            || part
                .strip_prefix("redb-")
                .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()));
        if crate_dir && parts.peek() == Some(&"src") {
            return true;
        }
    }
    false
}

/// The panic's message (`&str` and `String` payloads; anything else is described as such).
fn message(info: &PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

fn install_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if DEPTH.get() > 0 && info.location().is_some_and(|l| in_redb(l.file())) {
                let at = info
                    .location()
                    .map(|l| {
                        // From the crate directory on: the registry prefix says nothing.
                        let file = l.file();
                        let short = file.rfind("redb").map_or(file, |i| &file[i..]);
                        format!(" at {short}:{}", l.line())
                    })
                    .unwrap_or_default();
                CAUGHT.set(Some(format!("{}{at}", message(info))));
                return;
            }
            previous(info);
        }));
    });
}

/// Leaves the [`contain`] depth as it was, however the call ends.
struct DepthGuard;

impl DepthGuard {
    fn enter() -> DepthGuard {
        DEPTH.set(DEPTH.get() + 1);
        DepthGuard
    }
}

impl Drop for DepthGuard {
    fn drop(&mut self) {
        DEPTH.set(DEPTH.get() - 1);
    }
}

/// Runs `f`, a call that goes into redb. Returns `Err` with the panic's message and location
/// if redb's code panicked inside it; resumes any other panic.
///
/// Everything `f` owns is dropped while the panic unwinds, redb's transactions included; redb
/// skips a transaction's abort while unwinding (it would touch the pages that just failed), so
/// nothing more runs on the damaged state. The caller must then stop using the store's writer
/// (see `RedbStore`'s damage record).
pub(crate) fn contain<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    let depth = DepthGuard::enter();
    // Unwind safety: on a caught panic the caller marks the store damaged and touches none of
    // the state `f` was changing again.
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    drop(depth);
    match result {
        // What the hook saw is left alone: a call made while a caught panic unwinds (a drop)
        // must not take the panic its caller is about to report.
        Ok(value) => Ok(value),
        Err(payload) => match CAUGHT.take() {
            Some(what) => Err(what),
            None => panic::resume_unwind(payload),
        },
    }
}

/// Whether this thread is unwinding from a panic [`contain`] caught in redb's code (the hook
/// saw it; [`contain`] has not returned yet).
fn unwinding_from_redb() -> bool {
    std::thread::panicking() && CAUGHT.with_borrow(Option::is_some)
}

/// A redb handle (a write transaction, a table open in one, the database) that is dropped as
/// usual, but forgotten while a panic in redb's code unwinds, or when told to.
///
/// redb's own drops of these handles take its internal locks and `unwrap` them; a panic that
/// happened while one was held poisoned it, and a second panic in a drop during unwinding
/// aborts the process (exit 134: `create-table` on a file whose allocator state is damaged
/// panics inside `open_table` holding the transaction's table lock, then the open schema
/// table's drop unwraps that lock). Forgetting leaks the handle instead: a forgotten write
/// transaction keeps redb's writer slot, so the store fails every later write at once (its
/// damage record), and a forgotten database is never closed, so redb rebuilds its allocator
/// state at the next open, as after a crash; the OS releases the file when the process ends.
pub(crate) struct Forgettable<T>(Option<T>);

impl<T> Forgettable<T> {
    /// Wraps `value`.
    pub(crate) fn new(value: T) -> Forgettable<T> {
        Forgettable(Some(value))
    }

    /// The handle, for a call that consumes it (a commit, an abort).
    pub(crate) fn into_inner(mut self) -> T {
        match self.0.take() {
            Some(value) => value,
            None => unreachable!("a Forgettable is emptied only by itself"),
        }
    }

    /// Forgets the handle now: its drop never runs.
    pub(crate) fn forget(&mut self) {
        std::mem::forget(self.0.take());
    }
}

impl<T> std::ops::Deref for Forgettable<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match &self.0 {
            Some(value) => value,
            None => unreachable!("a Forgettable is emptied only by its own drop"),
        }
    }
}

impl<T> std::ops::DerefMut for Forgettable<T> {
    fn deref_mut(&mut self) -> &mut T {
        match &mut self.0 {
            Some(value) => value,
            None => unreachable!("a Forgettable is emptied only by its own drop"),
        }
    }
}

impl<T> Drop for Forgettable<T> {
    fn drop(&mut self) {
        // Only for panics in redb: after any other panic redb's own unwinding drops are sound
        // (they release the writer), and leaking there would block every later write.
        if unwinding_from_redb() {
            self.forget();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_in_redb_are_told_apart() {
        let at = in_redb;
        assert!(at(
            "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/redb-4.5.0/src/tree_store/btree_base.rs"
        ));
        assert!(at("vendor/redb/src/table.rs"));
        assert!(at(r"C:\cargo\registry\src\x\redb-4.5.0\src\db.rs"));
        assert!(!at("store/src/redb_store.rs"));
        assert!(!at("store/src/redb_guard.rs"));
        assert!(!at("/rustc/abc/library/core/src/slice/index.rs"));
        assert!(!at("/x/redb-derive-1.0.0/src/lib.rs"));
    }
}
