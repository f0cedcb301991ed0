#![allow(clippy::unwrap_used)]
//! A trace store call whose future is dropped before it ends (a timeout, a closed request)
//! gives the facade's state back: the caches an earlier call filled are still there for the
//! next one. Over the Tokio driver and the emulator, so the call really is in flight (a reply
//! cannot arrive in the poll that sends the request) when it is dropped.

use std::future::Future;
use std::task::Poll;

use rowkit_bigtable::BigtableConnection;
use rowkit_client::tracestore::{TraceStore, setup_table};
use rowkit_client::{CallOptions, Driver, TokioDriver};
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::ops::params_from;
use rowkit_statemachines::tracestore::PutEntry;
use rowkit_testkit::emulator::Emulator;

#[test]
fn a_dropped_call_keeps_the_facades_caches() {
    let Some(emu) = Emulator::shared_or_skip("a_dropped_call_keeps_the_facades_caches") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let driver = TokioDriver::new(
            BigtableConnection::connect(emu.fresh_target(), None)
                .await
                .unwrap(),
        );
        setup_table(&driver, "gold", Layout::DigestId)
            .await
            .unwrap();
        let mut gold = TraceStore::open(driver, "gold", None)
            .await
            .unwrap()
            .with_options(CallOptions {
                seed: 3,
                ..CallOptions::default()
            });
        let entries: Vec<PutEntry> = (0..20)
            .map(|i| PutEntry {
                params: params_from([("name", format!("t{i}").as_str())]),
                digest: format!("{:032x}", i % 5 + 1),
                ..PutEntry::default()
            })
            .collect();
        let now = gold.driver().now();
        gold.put(1, None, entries, now).await.unwrap();
        let cached = gold.state().digest_cache().len();
        assert_eq!(cached, 5, "the put cached the five digests' ids");

        // Polled exactly once, then dropped: the first poll sends a request whose reply cannot
        // arrive within that poll. (`timeout(ZERO, …)` is not that: tokio's timer rounds the
        // deadline up to its next millisecond tick and polls the call again meanwhile, so a
        // fast read can finish first.)
        let mut read = Box::pin(gold.read_range(0, 255));
        let first = std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await;
        assert!(
            first.is_pending(),
            "the read is in flight after its first poll"
        );
        drop(read);
        assert_eq!(gold.state().digest_cache().len(), cached);

        // The next call runs on that state and sees the traces.
        let tile = gold.read_range(0, 255).await.unwrap();
        assert_eq!(tile.traces.len(), 20);
    });
}
