#![allow(clippy::unwrap_used)]
//! `TraceStore::stream_tile` hands over the traces `read_range` reads for the same tile (params
//! and one digest per commit, missing points included), in batches, each trace once, in both
//! layouts — in the digest-id layout also from a fresh reader whose id cache is empty (the
//! stream then reads the digest map before it emits).

use std::collections::BTreeMap;

use rowkit_client::CallOptions;
use rowkit_client::tracestore::{TraceStore, setup_table};
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::Timestamp;
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::ops::params_from;
use rowkit_statemachines::tracestore::{PutEntry, Trace};
use rowkit_store::MemoryStore;
use rowkit_store::driver::{Clock, ManualClock};

fn digest(n: usize) -> String {
    format!("{n:032x}")
}

#[test]
fn a_streamed_tile_holds_what_a_range_read_holds() {
    for layout in [Layout::Md5, Layout::DigestId] {
        let store = MemoryStore::new();
        let clock = ManualClock::new(Timestamp::from_secs(1_557_018_184));
        let driver = SyncDriver::new(&store, &clock);
        block_on(setup_table(&driver, "gold", layout)).unwrap();
        let writer = block_on(TraceStore::open(&driver, "gold", None))
            .unwrap()
            .with_options(CallOptions {
                seed: 1,
                ..CallOptions::default()
            });
        // 300 traces over the 32 shards, at three commits of tile 1; every 7th point missing.
        for (k, commit) in [256i64, 300, 511].into_iter().enumerate() {
            let entries = (0..300)
                .filter(|i| (i + k) % 7 != 0)
                .map(|i| PutEntry {
                    params: params_from([
                        ("name", format!("t{i}").as_str()),
                        ("os", ["a", "b"][i % 2]),
                    ]),
                    digest: digest(1 + (i * 3 + k) % 11),
                    ..PutEntry::default()
                })
                .collect();
            block_on(writer.put(commit, None, entries, clock.now())).unwrap();
        }
        let tile = block_on(writer.read_range(256, 511)).unwrap();
        assert_eq!(tile.traces.len(), 300);

        let reader = block_on(TraceStore::open(&driver, "gold", None))
            .unwrap()
            .with_options(CallOptions {
                seed: 2,
                ..CallOptions::default()
            });
        let mut streamed = BTreeMap::new();
        let mut batches = 0;
        let mut last_shards_done = 0;
        let n = block_on(reader.stream_tile(1, |batch| {
            batches += 1;
            assert!(
                batch.shards_done >= last_shards_done,
                "shards only ever finish"
            );
            last_shards_done = batch.shards_done;
            for (id, trace) in batch.traces {
                assert!(
                    streamed.insert(id.clone(), trace).is_none(),
                    "{id} handed over twice"
                );
            }
        }))
        .unwrap();
        assert_eq!((n, last_shards_done), (300, 32), "{layout:?}");
        let read: BTreeMap<String, Trace> = tile
            .traces
            .into_iter()
            .map(|(id, t)| {
                (
                    id,
                    Trace {
                        options: Default::default(),
                        ..t
                    },
                )
            })
            .collect();
        assert_eq!(streamed, read, "{layout:?}");
        assert!(batches >= 1, "{layout:?}");
        // An empty tile streams nothing and says it is done.
        let mut empty = 0;
        assert_eq!(
            block_on(reader.stream_tile(5, |b| empty += b.traces.len())).unwrap(),
            0
        );
        assert_eq!(empty, 0);
    }
}
