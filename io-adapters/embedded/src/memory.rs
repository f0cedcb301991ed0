//! In-memory store (placeholder: being written).

/// The in-memory store.
#[derive(Debug, Default)]
pub struct MemoryStore {}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore {}
    }
}
