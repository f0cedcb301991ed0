//! Persistent store on redb (placeholder: being written).

/// The redb store.
#[derive(Debug)]
pub struct RedbStore {}
