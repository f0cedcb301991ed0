#![allow(clippy::unwrap_used)]
//! The Tokio driver's facade futures are `Send`: calls are `tokio::spawn`ed on a multi-thread
//! runtime against the emulator, many at once, and their effects checked.

use std::sync::Arc;

use rowkit_bigtable::BigtableConnection;
use rowkit_bigtable::emulator::Emulator;
use rowkit_client::TokioDriver;
use rowkit_client::mounttable::{MountTable, MtConfig, server_caller};

fn assert_send<T: Send>(_: &T) {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mount_table_calls_run_in_spawned_tasks() {
    let Some(emu) = Emulator::shared_or_skip("mount_table_calls_run_in_spawned_tasks") else {
        return;
    };
    let conn = BigtableConnection::connect(emu.fresh_target(), None)
        .await
        .unwrap();
    let mt = Arc::new(MountTable::new(TokioDriver::new(conn), MtConfig::default()));
    let setup = mt.setup(None);
    assert_send(&setup);
    setup.await.unwrap();
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let mt = mt.clone();
            tokio::spawn(async move {
                let name = format!("a/n{i:02}");
                mt.mount(&server_caller(), &name, &format!("/host:{i}"), 600, 0)
                    .await?;
                mt.resolve(&server_caller(), &name).await
            })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        let entry = task.await.unwrap().unwrap();
        assert_eq!(entry.servers.len(), 1);
        assert_eq!(entry.servers[0].server, format!("/host:{i}"));
    }
    let mut names: Vec<String> = mt
        .glob(&server_caller(), "", "a/*")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    // Glob emits children in the order the parent row holds them.
    names.sort();
    let want: Vec<String> = (0..12).map(|i| format!("a/n{i:02}")).collect();
    assert_eq!(names, want);
}
