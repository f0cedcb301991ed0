//! Mount a server in the mount table of an embedded store file, then resolve the name.
//! (The README shows this file; `cargo run -p rowkit-client --example readme` runs it.)
use rowkit_client::mounttable::{MountTable, MtConfig, server_caller};
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::mounttable::MountFlags;
use rowkit_store::RedbStore;
use rowkit_store::driver::SystemClock;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = RedbStore::open("example.redb")?;
    let mt = MountTable::new(SyncDriver::new(&store, &SystemClock), MtConfig::default());
    // Tables and the root node, once: setup fails on a store already set up.
    block_on(mt.create_tables())?;
    if block_on(mt.get_node(""))?.is_none() {
        block_on(mt.setup(None))?;
    }
    block_on(mt.mount(&server_caller(), "a/b", "/host:1234", 3600, MountFlags(0)))?;
    let entry = block_on(mt.resolve(&server_caller(), "a/b"))?;
    for server in &entry.servers {
        println!("a/b -> {} until {} µs", server.server, server.deadline_us);
    }
    Ok(())
}
