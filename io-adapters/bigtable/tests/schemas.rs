#![allow(clippy::unwrap_used)]
//! The four schema modules' acceptance scenarios (triples, objmeta, tracestore, mounttable) on
//! the Bigtable emulator: the same scenario functions `rowkit-store`'s tests run on
//! MemoryStore and RedbStore, with the same arguments, each on a fresh emulator instance.
//!
//! A scenario the emulator cannot pass because of a documented deviation (`bigtable.md` 14) is
//! listed in a `DEVIATIONS` table with the reason: it is still run, and its outcome is printed
//! (never silently skipped); only an unlisted failure fails the test.
//!
//! Every test also runs against rowkit's own gRPC server over memory: and embedded:
//! (`every_test_on_rowkit_grpc_*` rerun this binary with `ROWKIT_BIGTABLE_SERVER`), there with
//! no deviation tolerated.

mod backends;

use std::panic::{AssertUnwindSafe, catch_unwind};

use rowkit_codec::model::{ColumnFamily, GcRule, Mutation, Timestamp};
use rowkit_store::Store;
use rowkit_store::driver::{Clock, SystemClock};
use rowkit_testkit::emulator::Emulator;
use rowkit_testkit::scenarios::mounttable::starting_at;

fn shared_dir() -> String {
    std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared").to_string())
}

fn vector_text(name: &str) -> String {
    let path = format!("{}/vectors/{name}", shared_dir());
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("vector file {path} is required: {e}"))
}

fn fresh(emu: &'static Emulator) -> Box<dyn Store> {
    Box::new(emu.fresh_store())
}

/// How far ahead of the wall clock a single-threaded mount table scenario's manual clock
/// starts ([`ahead_of_the_emulator`]).
const CLOCK_LEAD_S: i64 = 600;

/// Runs `f` (mount table scenarios) with their manual clocks started [`CLOCK_LEAD_S`] ahead of
/// the wall clock, and fails if the wall clock caught up with that start meanwhile.
///
/// The emulator stamps server time (`-1`, every mount table cell but a mount's) with its wall
/// clock when it applies a write, and the machines compare those stamps with their own `now`:
/// a node whose `m:c` creation time is after `now` is never collected (gc grace period), a
/// child reference is stale once `now` is 1 h past its stamp. A manual clock only moves when
/// told, so one started at the wall clock falls behind the emulator's as the scenario runs;
/// started ahead, it stays ahead of every stamp, and young references stay well under 1 h old
/// (the scenarios that need them stale advance the clock by an hour). The scenarios' exact
/// expectations (mount deadlines from the clock) still hold, as the clock is still manual.
fn ahead_of_the_emulator<R>(f: impl FnOnce() -> R) -> R {
    let start = Timestamp::from_secs(SystemClock.now().0 / 1_000_000 + CLOCK_LEAD_S);
    let result = starting_at(start, f);
    assert!(
        SystemClock.now() < start,
        "the scenario outlasted its clock's {CLOCK_LEAD_S} s lead on the emulator's clock"
    );
    result
}

/// Runs `f` (mount table concurrency scenarios, on a [`rowkit_store::driver::RunningClock`])
/// with their clocks started at the wall clock (the next whole millisecond): running from
/// there, they are never behind the emulator's server-time stamps.
fn at_the_wall_clock<R>(f: impl FnOnce() -> R) -> R {
    let next_ms = SystemClock
        .now()
        .truncate_to_millis()
        .saturating_add_micros(1000);
    starting_at(next_ms, f)
}

/// The text of a panic payload.
fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else {
        "non-text panic".to_string()
    }
}

/// Runs `f`, turning a panic into its message.
fn attempt(f: impl FnOnce()) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(panic_text)
}

/// Sorts the results of named scenario runs: failures of listed deviations are printed with
/// their reason, any other failure fails the test.
fn judge(schema: &str, results: Vec<(String, Result<(), String>)>, deviations: &[(&str, &str)]) {
    // rowkit's server is held to production's behaviour: no deviation is tolerated.
    let deviations = if backends::selected_is_rowkit() {
        &[]
    } else {
        deviations
    };
    let mut failures = Vec::new();
    for (name, result) in results {
        let listed = deviations.iter().find(|(n, _)| *n == name);
        match (result, listed) {
            (Ok(()), None) => eprintln!("{schema}: {name}: ok"),
            (Ok(()), Some((_, reason))) => {
                eprintln!("{schema}: {name}: ok on the emulator although listed ({reason})")
            }
            (Err(e), Some((_, reason))) => eprintln!(
                "!!!!! {schema}: {name}: emulator deviation, not counted: {reason}\n      failure: {e}"
            ),
            (Err(e), None) => failures.push(format!("{schema}: {name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// triples (`spec/triples.md` 12)

mod triples {
    use super::*;
    use rowkit_testkit::scenarios::triples as triples_scenarios;

    const DEVIATIONS: &[(&str, &str)] = &[];

    fn bt18() -> Vec<triples_scenarios::FixtureTriple> {
        triples_scenarios::bt18_from_vectors(&vector_text("triples.json"))
    }

    #[test]
    fn triples_scenarios_on_the_emulator() {
        let Some(emu) = backends::selected("triples_scenarios_on_the_emulator") else {
            return;
        };
        let fixture = bt18();
        let mut results = Vec::new();
        for (name, scenario) in triples_scenarios::all() {
            let store = fresh(emu);
            let r = match catch_unwind(AssertUnwindSafe(|| scenario(store.as_ref(), &fixture))) {
                Ok(r) => r,
                Err(p) => Err(panic_text(p)),
            };
            results.push((name.to_string(), r));
        }
        judge("triples", results, DEVIATIONS);
    }
}

// ---------------------------------------------------------------------------------------------
// objmeta (`spec/objmeta.md` 18: every scenario trace of `vectors/objmeta.json`)

mod objmeta {
    use super::*;
    use rowkit_codec::objmeta::json::Json;
    use rowkit_testkit::scenarios::objmeta::{ACCEPTANCE, crash_at_every_cut, replay_all};

    const DEVIATIONS: &[(&str, &str)] = &[];

    /// The acceptance scenarios beyond the traces (`objmeta.md` 18: metastore, uuid, count,
    /// events, repair machine, vFormat cache, deadline, skip streak, deleted flag), each on a
    /// fresh instance.
    #[test]
    fn objmeta_acceptance_on_the_emulator() {
        let Some(emu) = backends::selected("objmeta_acceptance_on_the_emulator") else {
            return;
        };
        let vectors = Json::parse(&vector_text("objmeta.json")).unwrap();
        let mut results = Vec::new();
        for (name, scenario) in ACCEPTANCE {
            let store = fresh(emu);
            let table = format!("acc-{name}");
            results.push((
                name.to_string(),
                attempt(|| scenario(store.as_ref(), &table, &vectors)),
            ));
        }
        judge("objmeta", results, DEVIATIONS);
    }

    /// A versioned put or delete dropped after each of its requests (`objmeta.md` 8.4), in v0
    /// and v1: reads and listings still agree on the before or after value and the repair
    /// keeps it.
    #[test]
    fn objmeta_crash_at_every_cut_on_the_emulator() {
        let Some(emu) = backends::selected("objmeta_crash_at_every_cut_on_the_emulator") else {
            return;
        };
        let cases = crash_at_every_cut(&emu.fresh_store());
        eprintln!("objmeta: {cases} crash cases ok");
        assert!(cases > 30, "only {cases} cases");
    }

    #[test]
    fn objmeta_scenario_traces_on_the_emulator() {
        let Some(emu) = backends::selected("objmeta_scenario_traces_on_the_emulator") else {
            return;
        };
        let vectors = Json::parse(&vector_text("objmeta.json")).unwrap();
        let store = emu.fresh_store();
        match replay_all(&store, &vectors) {
            Ok(n) => {
                eprintln!("objmeta: {n} scenario traces ok");
                assert!(n > 0, "no scenarios");
            }
            Err(failures) => panic!(
                "{} scenario(s) failed:\n{}",
                failures.len(),
                failures.join("\n\n")
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// tracestore (`spec/tracestore.md` 20), both layouts where they apply

mod tracestore {
    use super::*;
    use rowkit_codec::tracestore::Layout;
    use rowkit_testkit::scenarios::tracestore as sc;

    const LAYOUTS: [Layout; 2] = [Layout::Md5, Layout::DigestId];

    fn emu(test: &str) -> Option<&'static Emulator> {
        backends::selected(test)
    }

    fn each(test: &str, f: impl Fn(&dyn Store, Layout)) {
        let Some(emu) = emu(test) else { return };
        for layout in LAYOUTS {
            f(&*fresh(emu), layout);
        }
    }

    fn each_store(test: &str, f: impl Fn(&dyn Store)) {
        let Some(emu) = emu(test) else { return };
        f(&*fresh(emu));
    }

    #[test]
    fn ts_check_reports_every_finding_kind() {
        each("ts_check_reports_every_finding_kind", sc::check_corrupted);
        each_store("ts_check_counter_bad", sc::check_counter_bad);
    }

    #[test]
    fn ts_s08_put_get() {
        each("ts_s08_put_get", |s, l| sc::put_get(s, l, [0, 1, 2]));
    }

    #[test]
    fn ts_s09_override_by_timestamp() {
        each("ts_s09_override_by_timestamp", sc::override_by_timestamp);
    }

    #[test]
    fn ts_s10_span_tiles() {
        each("ts_s10_span_tiles", |s, l| {
            sc::put_get(s, l, [254, 255, 256])
        });
    }

    #[test]
    fn ts_s11_grouped_put() {
        each("ts_s11_grouped_put", sc::grouped_put);
    }

    #[test]
    fn ts_s12_concurrent_writers_converge() {
        let Some(emu) = emu("ts_s12_concurrent_writers_converge") else {
            return;
        };
        for layout in LAYOUTS {
            let lost = sc::concurrent_writers(&|| fresh(emu), layout, 1..=100);
            assert!(lost > 0, "no seed produced a lost OPS compare-and-swap");
        }
    }

    #[test]
    fn ts_s13_overwrite() {
        each("ts_s13_overwrite", sc::overwrite);
    }

    #[test]
    fn ts_s14_dense() {
        let Some(emu) = emu("ts_s14_dense") else {
            return;
        };
        for layout in LAYOUTS {
            sc::dense(&|| fresh(emu), layout);
        }
    }

    #[test]
    fn ts_s16_s28_setup_and_detection() {
        each_store("ts_s16_s28_setup_and_detection", sc::setup_and_detection);
    }

    #[test]
    fn ts_s16_setup_adds_missing_families() {
        each_store(
            "ts_s16_setup_adds_missing_families",
            sc::setup_adds_missing_families,
        );
    }

    #[test]
    fn ts_s17_first_ids() {
        each_store("ts_s17_first_ids", sc::first_ids);
    }

    #[test]
    fn ts_s18_concurrent_allocators() {
        each_store("ts_s18_concurrent_allocators", |s| {
            sc::concurrent_allocators(s, false)
        });
        each_store("ts_s18_concurrent_allocators", |s| {
            sc::concurrent_allocators(s, true)
        });
    }

    #[test]
    fn ts_s19_concurrent_inserts() {
        each_store("ts_s19_concurrent_inserts", sc::one_digest_two_writers);
        each_store("ts_s19_concurrent_inserts", sc::concurrent_inserts);
    }

    #[test]
    fn ts_s20_missing_digest() {
        each_store("ts_s20_missing_digest", sc::missing_digest);
    }

    #[test]
    fn ts_s21_fresh_reader() {
        each_store("ts_s21_fresh_reader", sc::fresh_reader);
    }

    #[test]
    fn ts_s22_unknown_and_corrupt_ids() {
        let Some(emu) = emu("ts_s22_unknown_and_corrupt_ids") else {
            return;
        };
        sc::unknown_and_corrupt_ids(&|| fresh(emu));
    }

    #[test]
    fn ts_s23_rows_per_lookup() {
        let Some(emu) = emu("ts_s23_rows_per_lookup") else {
            return;
        };
        assert_eq!(
            sc::rows_per_lookup(&*fresh(emu), 100_000, 10_000),
            (3756, 4096)
        );
    }

    #[test]
    fn ts_s24_put_request_sequence() {
        each_store("ts_s24_put_request_sequence", sc::put_request_sequence);
    }

    #[test]
    fn ts_s25_s29_validation() {
        each("ts_s25_s29_validation", sc::validation);
    }

    #[test]
    fn ts_put_chunks_of_10000_rows() {
        each("ts_put_chunks_of_10000_rows", sc::put_chunks);
    }

    #[test]
    fn ts_put_validation_is_all_or_nothing() {
        each(
            "ts_put_validation_is_all_or_nothing",
            sc::put_all_or_nothing,
        );
    }

    #[test]
    fn ts_s29_deadline_and_backoff() {
        each("ts_s29_deadline_and_backoff", sc::deadline_and_backoff);
    }

    #[test]
    fn ts_s26_versions_without_gc() {
        each_store("ts_s26_versions_without_gc", sc::versions_without_gc);
    }

    #[test]
    fn ts_s27_insert_with_unknown_outcome() {
        each_store(
            "ts_s27_insert_with_unknown_outcome",
            sc::insert_with_unknown_outcome,
        );
    }

    #[test]
    fn ts_s30_ops_timestamps_never_go_back() {
        each(
            "ts_s30_ops_timestamps_never_go_back",
            sc::ops_timestamps_never_go_back,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// mounttable (`spec/mounttable.md` 22)

mod mounttable {
    use super::*;
    use rowkit_testkit::scenarios::mounttable::{CONCURRENCY, SCENARIOS};

    /// The local stores' counts (15 threads x 250 cycles) take over 20 minutes on the
    /// emulator (see [`mounttable_concurrency_full_counts_on_the_emulator`]); the default run
    /// uses these reduced counts. Override with `ROWKIT_MT_EMU_THREADS` / `ROWKIT_MT_EMU_CYCLES`.
    const THREADS: usize = 6;
    const CYCLES: usize = 60;

    /// Every scenario on the bare emulator, with its own server time: all must pass.
    #[test]
    fn mounttable_scenarios_on_the_emulator() {
        let Some(emu) = backends::selected("mounttable_scenarios_on_the_emulator") else {
            return;
        };
        let mut results = Vec::new();
        for (name, f) in SCENARIOS {
            let store = fresh(emu);
            results.push((
                name.to_string(),
                attempt(|| ahead_of_the_emulator(|| f(store.as_ref(), &format!("mt-{name}")))),
            ));
        }
        judge("mounttable", results, &[]);
    }

    /// Starts the emulator's background garbage collection (a pass over every table every
    /// 0.5-1.5 s, `bigtable.md` 12), which only a ModifyColumnFamilies starts, not CreateTable
    /// (emulator source: `needGC`). The concurrency scenarios' server-time stamps are
    /// milliseconds apart, so uncollected, every version bump of a hot node adds a cell
    /// (`max_num_versions = 1` only takes effect on collection); the emulator's reads and
    /// checks slow down with the rows, and 15 threads stalled (the full-count run completed no
    /// cycle for minutes, its root row at thousands of cells).
    fn start_emulator_gc(emu: &'static Emulator) {
        let store = fresh(emu);
        let family = ColumnFamily {
            name: "f".into(),
            gc_rule: Some(GcRule::MaxNumVersions(1)),
        };
        store
            .create_table("gc-start", std::slice::from_ref(&family))
            .unwrap();
        store.set_family("gc-start", &family).unwrap();
    }

    fn concurrency(test: &str, threads: usize, cycles: usize) {
        let Some(emu) = backends::selected(test) else {
            return;
        };
        start_emulator_gc(emu);
        let env = |k: &str, d: usize| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        let threads = env("ROWKIT_MT_EMU_THREADS", threads);
        let cycles = env("ROWKIT_MT_EMU_CYCLES", cycles);
        eprintln!("mounttable concurrency: {threads} threads x {cycles} cycles");
        let mut results = Vec::new();
        for (name, f) in CONCURRENCY {
            let store = fresh(emu);
            let table = format!("mt-{name}");
            results.push((
                name.to_string(),
                attempt(|| at_the_wall_clock(|| f(store.as_ref(), &table, threads, cycles))),
            ));
        }
        judge("mounttable", results, &[]);
    }

    /// Scenarios 21-23 at reduced counts (see [`THREADS`]).
    #[test]
    fn mounttable_concurrency_on_the_emulator() {
        concurrency("mounttable_concurrency_on_the_emulator", THREADS, CYCLES);
    }

    /// Scenarios 21-23 at the local stores' counts (15 threads x 250 cycles). Failed before
    /// the child-reference fix in `statemachines::mounttable` (`resolve a/d` answered
    /// `NoSuchName { name: "a" }` right after the mount under it succeeded); passes since,
    /// too long for every CI run. On the bare emulator (its own server time, writes
    /// concurrent): 1366 s on the shared 2-core machine (load about 7) on 2026-11-26, nearly
    /// all in scenario 21, where 15 threads mount and unmount 6 names and every unmount
    /// collects the nodes others are building on (gc grace 0). With writes serialised and
    /// stamped on the client it had taken 560 s. Run with `--ignored`.
    #[test]
    #[ignore = "passes; over 20 minutes (see doc comment)"]
    fn mounttable_concurrency_full_counts_on_the_emulator() {
        concurrency(
            "mounttable_concurrency_full_counts_on_the_emulator",
            15,
            250,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// `cbt read` of what rowkit wrote (mounttable issue: btmtd's exact layout)

/// The mounttable `layout` scenario on a named instance, then Google's `cbt read` of the node
/// table: the original's row keys, families and value bytes (the creation time is the
/// emulator's server time; `layout` checks it against the clock).
#[test]
fn cbt_reads_the_mounttable_layout() {
    let Some(emu) = backends::selected("cbt_reads_the_mounttable_layout") else {
        return;
    };
    if !std::path::Path::new(rowkit_testkit::emulator::CBT_BIN).is_file() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "cbt is not installed"
        );
        eprintln!("\n!!!!! SKIPPED cbt_reads_the_mounttable_layout: cbt is not installed\n");
        return;
    }
    let target = emu.fresh_target();
    let instance = target.instance.clone();
    let store = rowkit_bigtable::BigtableStore::connect(target, None).unwrap();
    ahead_of_the_emulator(|| rowkit_testkit::scenarios::mounttable::layout(&store, "mtcbt"));
    let out = emu.cbt(&instance, &["read", "mtcbt"]).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("cbt read mtcbt:\n{shown}");
    let rows: Vec<&str> = shown
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('-') && !l.is_empty())
        .collect();
    assert_eq!(rows, ["050c5d30/", "88e481b8/foo"], "{shown}");
    for expected in [
        "m:i",
        "\"ROOTNODE\"",
        "m:c",
        "\"self:?:ServerUser\"",
        "m:p",
        r#""{\"Admin\":{\"In\":[\"...\"],\"NotIn\":null}}""#,
        "m:v",
        "s:/127.0.0.1:8000/quux",
    ] {
        assert!(shown.contains(expected), "missing {expected:?} in\n{shown}");
    }
    assert!(
        shown.lines().any(|l| l.trim_start().starts_with("c:")),
        "no child cell in\n{shown}"
    );
    // The creation time is the emulator's server time, a whole millisecond.
    assert!(
        shown
            .lines()
            .any(|l| l.trim_start().starts_with("m:c") && l.ends_with("000")),
        "no m:c cell at a whole millisecond in\n{shown}"
    );
}

// ---------------------------------------------------------------------------------------------
// `cbt` and the trace store (Gold's exact layout, both directions)

fn cbt_or_skip(test: &str) -> Option<&'static Emulator> {
    let emu = backends::selected(test)?;
    if !std::path::Path::new(rowkit_testkit::emulator::CBT_BIN).is_file() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "cbt is not installed"
        );
        eprintln!("\n!!!!! SKIPPED {test}: cbt is not installed\n");
        return None;
    }
    Some(emu)
}

fn cbt_read(emu: &Emulator, instance: &str, table: &str) -> String {
    let out = emu.cbt(instance, &["read", table]).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Scenario 24's Put (digest-id layout) on a named instance, then `cbt read`: Gold's row names,
/// families, qualifiers and value bytes (uvarint ids, decimal map values, the 8-byte counter).
#[test]
fn cbt_reads_the_gold_layout() {
    let Some(emu) = cbt_or_skip("cbt_reads_the_gold_layout") else {
        return;
    };
    let target = emu.fresh_target();
    let instance = target.instance.clone();
    let store = rowkit_bigtable::BigtableStore::connect(target, None).unwrap();
    rowkit_testkit::scenarios::tracestore::put_request_sequence(&store);
    let shown = cbt_read(emu, &instance, "gold");
    eprintln!("cbt read gold:\n{shown}");
    let rows: Vec<&str> = shown
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('-') && !l.is_empty())
        .collect();
    assert_eq!(
        rows,
        [
            "01:ts:t:2147483644:,0=2,1=0,2=0,",
            "02:ts:t:2147483644:,0=1,1=0,2=0,",
            "05:ts:d:0000000000:e30",
            "21:ts:d:0000000000:9e1",
            "23:ts:d:0000000000:60b",
            "28:ts:t:2147483644:,0=0,1=0,2=0,",
            ":ts:i:0000000000:",
            ":ts:o:2147483644:",
        ],
        "{shown}"
    );
    for expected in [
        "T:232",
        r#""\x01""#,
        r#""\x81\x02""#,
        r#""\x82\x02""#,
        "D:5e978d116cccc0ef12278d724245b",
        r#""257""#,
        "D:a49351a7e45b9591a989073e755b2",
        r#""258""#,
        "I:idc",
        r#""\x00\x00\x00\x00\x00\x00\x02\x03""#,
        "O:H",
        "O:OPS",
    ] {
        assert!(shown.contains(expected), "missing {expected:?} in\n{shown}");
    }
}

/// A digest-id tile written with `cbt set` in Gold's layout (map cells, uvarint trace cells;
/// the OPS row, whose gob holds NUL bytes that no command-line argument can carry, is written
/// raw) reads back through rowkit's ReadRange.
#[test]
fn cbt_set_tile_reads_back() {
    use rowkit_codec::tracestore::cells::{digest_map_qualifier, digest_map_row};
    use rowkit_codec::tracestore::keys::{calc_sharded_row_name, ops_row_name};
    use rowkit_codec::tracestore::{Layout, OrderedParamSet, encode_ops_gob, ops_hash};
    use rowkit_testkit::scenarios::tracestore as sc;
    let Some(emu) = cbt_or_skip("cbt_set_tile_reads_back") else {
        return;
    };
    let target = emu.fresh_target();
    let instance = target.instance.clone();
    let store = rowkit_bigtable::BigtableStore::connect(target, None).unwrap();
    sc::setup(&store, Layout::DigestId);
    let ops = OrderedParamSet::from_parts(
        vec!["device".into(), "name".into(), "source_type".into()],
        [
            ("device".into(), vec!["angler".into(), "bullhead".into()]),
            ("name".into(), vec!["test_alpha".into(), "test_beta".into()]),
            ("source_type".into(), vec!["gm".into()]),
        ]
        .into(),
    );
    let gob = encode_ops_gob(&ops);
    let set = |q: &[u8], v: Vec<u8>| Mutation::SetCell {
        family: "O".into(),
        qualifier: q.to_vec(),
        timestamp: Timestamp(sc::T0),
        value: v,
    };
    sc::raw_write(
        &store,
        vec![rowkit_statemachines::MutateRowsEntry {
            row_key: ops_row_name(2147483647),
            mutations: vec![set(b"H", ops_hash(&gob).into_bytes()), set(b"OPS", gob)],
        }],
    );
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    let cbt_set = |row: String, cell: String| {
        let out = emu.cbt(&instance, &["set", "gold", &row, &cell]).unwrap();
        assert!(
            out.status.success(),
            "cbt set {row} {cell}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for (digest, id) in [(sc::AN, "1"), (sc::BP, "2")] {
        cbt_set(
            text(digest_map_row(digest).unwrap()),
            format!("D:{}={id}", text(digest_map_qualifier(digest).unwrap())),
        );
    }
    let alpha = text(calc_sharded_row_name(2147483647, 't', b",0=0,1=0,2=0,"));
    let beta = text(calc_sharded_row_name(2147483647, 't', b",0=1,1=1,2=0,"));
    cbt_set(alpha.clone(), "T:0=\u{1}".into());
    cbt_set(alpha, "T:1=\u{2}".into());
    cbt_set(beta, "T:1=\u{2}".into());
    let clock = rowkit_store::driver::ManualClock::new(Timestamp(sc::T0));
    let gold = sc::open(&store, &clock, 5);
    let tile = rowkit_client::block_on(gold.read_range(0, 1)).unwrap();
    let digests = |device: &str, name: &str| {
        tile.traces[&rowkit_codec::tracestore::ops::trace_id_text(&sc::trace_params(device, name))]
            .digests
            .clone()
    };
    assert_eq!(tile.traces.len(), 2);
    assert_eq!(digests("angler", "test_alpha"), [sc::AN, sc::BP]);
    assert_eq!(digests("bullhead", "test_beta"), ["", sc::BP]);
}

// ---------------------------------------------------------------------------------------------
// checks beside writers (`spec/check.md` §6)

/// A check with `fix` beside writers on the real clock, then a settled check, for each schema
/// with a table check (the mount table's fsck has its own concurrency scenarios), each on a
/// fresh instance.
#[test]
fn checks_beside_writers_on_the_emulator() {
    use rowkit_testkit::scenarios::check_beside_writers;
    let Some(emu) = backends::selected("checks_beside_writers_on_the_emulator") else {
        return;
    };
    type Scenario = fn(&dyn Store);
    let scenarios: [(&str, Scenario); 3] = [
        ("triples", check_beside_writers::triples),
        ("objmeta", check_beside_writers::objmeta),
        ("tracestore", check_beside_writers::tracestore),
    ];
    let results = scenarios
        .into_iter()
        .map(|(name, scenario)| {
            let store = fresh(emu);
            (name.to_string(), attempt(|| scenario(store.as_ref())))
        })
        .collect();
    judge("check beside writers", results, &[]);
}

crate::every_test_on_rowkit_grpc!();
