#![allow(clippy::unwrap_used)]
//! The Tokio driver's facade futures are `Send`: calls are `tokio::spawn`ed on a multi-thread
//! runtime against the emulator, many at once, and their effects checked.

use std::sync::Arc;

use rowkit_bigtable::BigtableConnection;
use rowkit_client::mounttable::{MountTable, MtConfig, server_caller};
use rowkit_client::objmeta::ObjectMetadata;
use rowkit_client::{CallOptions, TokioDriver};
use rowkit_codec::mounttable::MountFlags;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_testkit::emulator::Emulator;
use rowkit_testkit::scenarios::objmeta::scenario_state;

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
                mt.mount(
                    &server_caller(),
                    &name,
                    &format!("/host:{i}"),
                    600,
                    MountFlags(0),
                )
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

/// Object metadata over the Tokio driver, background repairs on: the facade moves into
/// spawned tasks (one per bucket, at once), each putting then getting objects; the futures
/// of the repair calls are `Send` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objmeta_calls_run_in_spawned_tasks() {
    let Some(emu) = Emulator::shared_or_skip("objmeta_calls_run_in_spawned_tasks") else {
        return;
    };
    let conn = BigtableConnection::connect(emu.fresh_target(), None)
        .await
        .unwrap();
    let facade = |seed| {
        ObjectMetadata::new(
            TokioDriver::new(conn.clone()),
            scenario_state("s3", VFormat::V1),
        )
        .with_options(CallOptions {
            seed,
            ..CallOptions::default()
        })
        .with_background_repairs()
    };
    let om = facade(0);
    let setup = om.setup();
    assert_send(&setup);
    setup.await.unwrap();
    assert_send(&om.wait_for_repairs());
    assert_send(&om.run_all_repairs());
    assert_send(&om.run_due_repairs(rowkit_codec::model::Timestamp(0)));
    let tasks: Vec<_> = (0..4u64)
        .map(|i| {
            let om = facade(i + 1);
            tokio::spawn(async move {
                let bucket = format!("b{i}");
                let md = Json::parse(&format!(r#"{{"name":"{bucket}"}}"#)).unwrap();
                om.create_bucket(&bucket, &md).await?;
                let value = Json::parse(&format!(r#"{{"key":"k","n":{i}}}"#)).unwrap();
                let put = om.put_object(&bucket, "k", &value, None);
                assert_send(&put);
                put.await?;
                om.get_object(&bucket, "k", None).await
            })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        let got = task.await.unwrap().unwrap();
        assert_eq!(got.get("n"), Some(&Json::Number(i as f64)));
    }
}
