#![allow(clippy::unwrap_used)]
//! `ObjectMetadata::migrate_bucket` and `read_migration` through the facade, with the JSON
//! documents of `rowkit_client::migration_json` (what the CLI prints and the wasm package hands
//! to JS): a v0 bucket migrated to v1 with both gates on the manual clock (its settle waits
//! jump), then read back through the same facade, whose vFormat cache held v0.

use rowkit_client::SyncDriver;
use rowkit_client::block_on;
use rowkit_client::migration_json::{
    MIGRATE_TIMEOUT_MICROS, event_json, outcome_json, status_json,
};
use rowkit_client::objmeta::ObjectMetadata;
use rowkit_codec::model::Timestamp;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::marker::Gates;
use rowkit_statemachines::objmeta::migrate::run::MigrateOptions;
use rowkit_statemachines::objmeta::{ObjmetaConfig, ObjmetaEvent, ObjmetaState};
use rowkit_store::MemoryStore;
use rowkit_store::driver::ManualClock;
use serde_json::{Value, json};

const KEYS: [&str; 3] = ["a", "dir/b", "dir/c"];

fn value(key: &str) -> Json {
    Json::parse(&json!({ "key": key, "content-length": key.len() }).to_string()).unwrap()
}

#[test]
fn a_migration_through_the_facade_reads_back_in_the_new_format() {
    let store = MemoryStore::new();
    let clock = ManualClock::new(Timestamp::from_secs(1_700_000_000));
    let state = ObjmetaState::new(ObjmetaConfig {
        default_bucket_key_format: VFormat::V0,
        ..ObjmetaConfig::default()
    });
    let om = ObjectMetadata::new(SyncDriver::new(&store, &clock), state);
    block_on(om.setup()).unwrap();
    let md = Json::parse(r#"{"name":"m","uid":"uid-m"}"#).unwrap();
    assert_eq!(block_on(om.create_bucket("m", &md)).unwrap(), VFormat::V0);
    for key in KEYS {
        block_on(om.put_object("m", key, &value(key), None)).unwrap();
        // Each read caches the bucket's format, v0.
        assert_eq!(block_on(om.get_object("m", key, None)).unwrap(), value(key));
    }

    let read = block_on(om.read_migration("m")).unwrap();
    assert_eq!(
        status_json("m", &read),
        json!({"bucket": "m", "vformat": "v0", "marker": null, "checkpoint": null})
    );

    let options = MigrateOptions {
        gates: Gates {
            switch: true,
            finish: true,
        },
        owner: "test:1".into(),
        ..MigrateOptions::default()
    };
    let mut events = Vec::new();
    let outcome =
        block_on(
            om.migrate_bucket("m", VFormat::V1, options, MIGRATE_TIMEOUT_MICROS, |e| {
                if let ObjmetaEvent::Migrate(e) = e {
                    events.push(event_json(&e));
                }
            }),
        )
        .unwrap();
    let result = outcome_json("m", VFormat::V1, false, &outcome);
    assert_eq!(result["state"], "removed", "{result}");
    assert_eq!(result["to"], "v1");
    assert_eq!(result["blocked"], false);

    // Every state change, in §3's order, as `state_changed` documents.
    let changes: Vec<(Value, Value)> = events
        .iter()
        .filter(|e| e["event"] == "state_changed")
        .map(|e| (e["from"].clone(), e["to"].clone()))
        .collect();
    let walk = [
        None,
        Some("copying"),
        Some("verifying"),
        Some("switching"),
        Some("switched"),
        Some("cleaning"),
        None,
    ];
    let want: Vec<(Value, Value)> = walk
        .windows(2)
        .map(|w| (json!(w[0]), json!(w[1])))
        .collect();
    assert_eq!(changes, want);
    // Progress documents carry the members of the CLI's JSON lines, and the copy pass scanned
    // one row per object (v0: a master each, no versions).
    let progress: Vec<&Value> = events.iter().filter(|e| e["event"] == "progress").collect();
    let members = [
        "state",
        "pass",
        "rows_scanned",
        "copied",
        "deleted",
        "stamped",
        "unchanged",
        "stragglers",
        "conflicts",
        "rate_rows_per_s",
        "eta_s",
    ];
    for p in &progress {
        for m in members {
            assert!(p.get(m).is_some(), "{m} missing from {p}");
        }
    }
    let copying = progress.iter().rfind(|p| p["state"] == "copying").unwrap();
    assert_eq!(copying["rows_scanned"], KEYS.len());
    assert_eq!(copying["copied"], KEYS.len());

    // The same facade reads the objects in their new format (its cached v0 was dropped).
    for key in KEYS {
        assert_eq!(block_on(om.get_object("m", key, None)).unwrap(), value(key));
    }
    let read = block_on(om.read_migration("m")).unwrap();
    let status = status_json("m", &read);
    assert_eq!(
        (&status["vformat"], &status["marker"]),
        (&json!("v1"), &Value::Null)
    );
}
