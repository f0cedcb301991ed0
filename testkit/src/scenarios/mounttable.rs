//! The acceptance scenarios of `spec/mounttable.md` §22 as functions over any [`Store`], so
//! the memory store, the redb store and the Bigtable emulator all run the same code. Each
//! function creates its own tables named after `table` (use a fresh name per call) and panics
//! with a message naming the step that failed.
//!
//! Scenario 3 (the row cache) is pure and lives in the statemachines tests; scenario 24 (codec
//! vectors) in the codec tests. The crash scenarios ([`crash_child_add`],
//! [`crash_child_delete`]) drop a machine right after the first of its two mutations and check
//! the documented repairs.

use std::collections::{BTreeMap, BTreeSet};

use rowkit_codec::model::{Mutation, Row, RowFilter, RowSet, Timestamp};
use rowkit_codec::mounttable::{
    self as codec, Caller, MountFlags, Permissions, decode_permissions, decode_permissions_file,
};
use rowkit_statemachines::mounttable::{
    self as mt, MountEntry, MtCtx, MtError, Primitive, PrimitiveOutput, ROW_CACHE_CAPACITY, Tables,
};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    Machine, MutateRowRequest, ReadRowsRequest, Request, RetryPolicy, SplitMix64, Tag,
};

use rowkit_client::mounttable::{MountTable, MtConfig, server_caller};
use rowkit_client::{CallOptions, SyncDriver, block_on};
use rowkit_store::driver::{Clock, ManualClock, RunningClock};
use rowkit_store::{Reply, Store};

/// The scenario clock's start (§22), unless [`starting_at`] says otherwise.
pub const T0: Timestamp = Timestamp(1_700_000_000_000_000);

thread_local! {
    static START: std::cell::Cell<Option<Timestamp>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with every scenario started on this thread starting its clock at `start` (a whole
/// millisecond) instead of [`T0`]; restored afterwards, also if `f` panics.
///
/// For a store whose server time is its own wall clock (the Bigtable emulator): the machines
/// compare server-stamped cells with their clock (a node's `m:c` time with the gc grace period,
/// a child reference's age with the 1 h staleness limit, §11), so a scenario's clock must not
/// stand behind the server's. Under such a start, [`layout`] only checks that `m:c` carries a
/// whole millisecond not after the clock: the stamp is the server's, not the scenario's.
pub fn starting_at<R>(start: Timestamp, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Timestamp>);
    impl Drop for Restore {
        fn drop(&mut self) {
            START.with(|s| s.set(self.0));
        }
    }
    assert!(
        start.is_valid_cell_timestamp(),
        "start {start:?}: not a whole ms"
    );
    let _restore = Restore(START.with(|s| s.replace(Some(start))));
    f()
}

/// This thread's scenario clock start: [`T0`] unless [`starting_at`] set another.
fn t0() -> Timestamp {
    START.with(|s| s.get()).unwrap_or(T0)
}
/// The server address most scenarios mount.
pub const S: &str = "/127.0.0.1:8000/quux";
/// `test.perms` of §22.
pub const TEST_PERMS: &str = r#"{"":{"Read":{"In":["..."]},"Admin":{"In":["root"]},"Create":{"In":["root","bob"]}},"stuff":{"Read":{"In":["bob","root"]},"Mount":{"In":["root"]}},"a":{"Read":{"In":["alice","root"]},"Create":{"In":["root"]}},"users":{"Create":{"In":["..."]},"Resolve":{"In":["..."]}},"users/%%":{"Admin":{"In":["%%"]}}}"#;
/// `intermediate.perms` of §22.
pub const INTERMEDIATE_PERMS: &str = r#"{"":{"Read":{"In":["..."]},"Admin":{"In":["root"]}},"x/y/z":{"Read":{"In":["bob","root"]},"Mount":{"In":["root"]}}}"#;

const HOUR_S: u32 = 3600;

/// A mount's deadline by the rule of `spec/mounttable.md` 8, written out here so the
/// scenarios' expected values do not come from the code under test: `floor_ms(now + ttl s)`,
/// `ttl = 0` meaning 4294967295 s. (`tests` below checks it on the vectors' `deadlines`.)
pub fn spec_deadline(now_us: i64, ttl_s: u32) -> i64 {
    let ttl = if ttl_s == 0 { u32::MAX } else { ttl_s };
    let d = now_us + i64::from(ttl) * 1_000_000;
    d - d.rem_euclid(1000)
}

/// The version after `version` by the rule of `spec/mounttable.md` 7.1, written out here:
/// `"%08x"((parse_hex(v) + 1) mod 2^32)`. (`tests` below checks it on the vectors'
/// `version_increment`.)
pub fn spec_next_version(version: &str) -> String {
    let v = u32::from_str_radix(version, 16)
        .unwrap_or_else(|e| panic!("version {version:?} is not hex: {e}"));
    format!("{:08x}", v.wrapping_add(1))
}
const SEC: i64 = 1_000_000;

/// A scenario: (store, table).
pub type Scenario = fn(&dyn Store, &str);
/// A concurrency scenario: (store, table, threads, cycles).
pub type ConcurrencyScenario = fn(&dyn Store, &str, usize, usize);

/// Every scenario: name and function, for harnesses that loop over them.
pub const SCENARIOS: &[(&str, Scenario)] = &[
    ("stale_snapshot_occ", stale_snapshot_occ),
    ("fsck", fsck),
    ("perms_sequence", perms_sequence),
    ("glob", glob),
    ("template", template),
    ("glob_acls", glob_acls),
    ("cleanup", cleanup),
    ("delete", delete),
    ("server_format", server_format),
    ("expiry", expiry),
    ("counters", counters),
    ("intermediate_nodes", intermediate_nodes),
    ("limits", limits),
    ("layout", layout),
    ("foreign_layout", foreign_layout),
    ("crash_child_add", crash_child_add),
    ("crash_child_delete", crash_child_delete),
];

/// Concurrency scenarios (§22 21–23): name and function taking (store, table, threads, cycles).
/// Their clock is a [`RunningClock`] from [`T0`] (or [`starting_at`]'s start): threads really
/// wait out their OCC back-off, as with the wall clock (with a manual clock, losers retry at
/// once and creators and collectors of the same nodes keep undoing each other's work).
pub const CONCURRENCY: &[(&str, ConcurrencyScenario)] = &[
    ("concurrent_mount_unmount", concurrent_mount_unmount),
    ("concurrent_mount_delete", concurrent_mount_delete),
    ("concurrent_expiry", concurrent_expiry),
];

fn caller(name: &str, is_server: bool) -> Caller {
    Caller::new(&[name], is_server)
}

fn root() -> Caller {
    caller("root", true)
}
fn alice() -> Caller {
    caller("alice", false)
}
fn bob() -> Caller {
    caller("bob", false)
}

fn ok<T>(r: Result<T, MtError>, what: &str) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: unexpected error {e:?}"),
    }
}

fn err<T: core::fmt::Debug>(r: Result<T, MtError>, want: fn(&MtError) -> bool, what: &str) {
    match r {
        Err(e) if want(&e) => {}
        other => panic!("{what}: got {other:?}"),
    }
}

fn perms(json: &str) -> Permissions {
    match decode_permissions(json.as_bytes()) {
        Ok(p) => p,
        Err(e) => panic!("bad permissions literal {json}: {e}"),
    }
}

fn perms_file(json: &str) -> BTreeMap<String, Permissions> {
    match decode_permissions_file(json.as_bytes()) {
        Ok(p) => p,
        Err(e) => panic!("bad permissions file: {e}"),
    }
}

/// The mount table over a store, on a manual clock (or another).
type Mt<'a, C = ManualClock> = MountTable<SyncDriver<&'a dyn Store, &'a C>>;

fn config(table: &str) -> MtConfig {
    MtConfig {
        tables: Tables::new(table),
        gc_grace_us: 0,
        ..MtConfig::default()
    }
}

/// A fresh table set with its initial nodes, as §22's common setup.
fn fresh<'a, C: Clock + Sync>(
    store: &'a dyn Store,
    clock: &'a C,
    config: MtConfig,
    file: Option<&str>,
) -> Mt<'a, C> {
    let t = MountTable::new(SyncDriver::new(store, clock), config);
    ok(block_on(t.setup(file.map(perms_file))), "setup");
    t
}

/// Asserts that the node table holds only the root, naming every other node left (its
/// creator id, children and servers) so that a failing concurrency run says what leaked.
fn assert_only_root(store: &dyn Store, table: &str) {
    let rows = scan(store, table).len();
    if rows != 1 {
        panic!(
            "only the root should be left; {rows} rows:\n{}",
            describe_rows(store, table)
        );
    }
}

/// Every node of `table`, one per line: name, id, version, child references, server count.
fn describe_rows(store: &dyn Store, table: &str) -> String {
    let rows = scan(store, table);
    let left: Vec<String> = rows
        .iter()
        .map(|r| match codec::decode_node(r, t0().0) {
            Ok(n) => format!(
                "{:?} id {} version {} children {:?} servers {}",
                n.name,
                String::from_utf8_lossy(&n.id),
                n.version_str(),
                n.children
                    .iter()
                    .map(|c| format!(
                        "{}{}@{}",
                        String::from_utf8_lossy(&c.id),
                        c.name,
                        c.written_us
                    ))
                    .collect::<Vec<_>>(),
                n.servers.len()
            ),
            Err(e) => format!("{:?}: {e}", String::from_utf8_lossy(&r.key)),
        })
        .collect();
    left.join("\n")
}

/// Every row of `table` (latest cell per column).
pub fn scan(store: &dyn Store, table: &str) -> Vec<Row> {
    let clock = ManualClock::new(t0());
    let req = ReadRowsRequest {
        table: table.into(),
        rows: RowSet::all(),
        filter: Some(RowFilter::CellsPerColumnLimit(1)),
        ..ReadRowsRequest::default()
    };
    let mut rows = Vec::new();
    let m = ReadRows::new(req, clock.now(), 0, RetryPolicy::default());
    if let Err(e) = rowkit_client::run_blocking(store, &clock, m, |r| rows.push(r)) {
        panic!("scan {table}: {e}");
    }
    rows
}

fn counter(t: &Mt<'_>, kind: codec::CounterKind, who: &str) -> i64 {
    let all = ok(block_on(t.counters()), "read counters");
    all.get(&codec::counter_row_key(kind, who))
        .copied()
        .unwrap_or(0)
}

fn names(entries: &[MountEntry]) -> BTreeSet<String> {
    entries.iter().map(|e| e.name.clone()).collect()
}

fn set_of(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn node(t: &Mt<'_>, name: &str) -> codec::NodeRow {
    match ok(block_on(t.get_node(name)), "getNode") {
        Some(n) => n,
        None => panic!("node {name:?} missing"),
    }
}

/// §22 1: stale-snapshot OCC.
pub fn stale_snapshot_occ(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), None);
    let sc = server_caller();
    for i in 1..=100u64 {
        let r = node(&t, "");
        ok(
            block_on(t.primitive(
                &sc,
                Primitive::CreateChild {
                    parent: r.clone(),
                    child: "X".into(),
                    perms: r.permissions.permissions().clone(),
                    creator: String::new(),
                    limit: 0,
                },
            )),
            "createChild X",
        );
        let n = node(&t, "X");
        let mut order = [0usize, 1, 2, 3];
        let mut rng = SplitMix64::new(i);
        for k in (1..order.len()).rev() {
            order.swap(k, rng.below(k as u64 + 1) as usize);
        }
        for (pos, op) in order.iter().enumerate() {
            let p = match op {
                0 => Primitive::Delete {
                    node: n.clone(),
                    subtree: false,
                },
                1 => Primitive::CreateChild {
                    parent: n.clone(),
                    child: "Y".into(),
                    perms: n.permissions.permissions().clone(),
                    creator: String::new(),
                    limit: 0,
                },
                2 => Primitive::Mount {
                    node: n.clone(),
                    server: "/example.com:1234".into(),
                    deadline_us: clock.now().0 + 60 * SEC,
                    flags: MountFlags(0),
                    limit: 0,
                },
                _ => Primitive::SetPermissions {
                    node: n.clone(),
                    perms: perms(r#"{"Admin":{"In":["foo"]}}"#),
                },
            };
            let got = block_on(t.primitive(&sc, p));
            if pos == 0 {
                ok(got, &format!("seed {i}: first op {op}"));
            } else {
                err(
                    got,
                    |e| *e == MtError::ConcurrentAccess,
                    &format!("seed {i}: op {op}"),
                );
            }
        }
        ok(block_on(t.delete(&sc, "X", true)), "delete X");
    }
    assert_only_root(store, table);
}

/// §22 2: fsck finds and fixes orphans and dangling references, and recomputes counters.
pub fn fsck(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), None);
    let sc = server_caller();
    let root_perms = node(&t, "").permissions.permissions().clone();
    for i in 1..=5 {
        ok(
            block_on(t.mount(&sc, &format!("child{i}"), S, HOUR_S, MountFlags(0))).map(|_| ()),
            "mount",
        );
        ok(
            block_on(t.unmount(&sc, &format!("child{i}"), "")),
            "unmount",
        );
        ok(
            block_on(t.set_permissions(&sc, &format!("child{i}"), root_perms.clone(), ""))
                .map(|_| ()),
            "sticky child",
        );
    }
    assert_eq!(scan(store, table).len(), 6);
    for i in 1..=5 {
        for name in [format!("orphan{i}"), format!("orphan{i}/otherorphan")] {
            ok(
                block_on(t.primitive(
                    &sc,
                    Primitive::CreateRow {
                        name,
                        perms: root_perms.clone(),
                        creator: String::new(),
                        id: b"XXXXXXXX".to_vec(),
                        limit: 0,
                    },
                )),
                "createRow orphan",
            );
        }
        for j in 1..=5 {
            let parent = node(&t, &format!("orphan{i}"));
            ok(
                block_on(t.primitive(
                    &sc,
                    Primitive::CreateChild {
                        parent,
                        child: format!("child{j}"),
                        perms: root_perms.clone(),
                        creator: String::new(),
                        limit: 0,
                    },
                )),
                "createChild under orphan",
            );
        }
    }
    assert_eq!(scan(store, table).len(), 41);
    raw_mutate(
        store,
        table,
        codec::row_key("child1"),
        vec![Mutation::SetCell {
            family: "c".into(),
            qualifier: b"XXXXXXXXwhodat".to_vec(),
            timestamp: Timestamp::SERVER_TIME,
            value: vec![1],
        }],
        clock.now(),
    );
    match block_on(t.fsck(false, |_| {})) {
        Err(MtError::FsckInconsistent(s)) => assert!(s.inconsistent > 0),
        other => panic!("fsck without fix: {other:?}"),
    }
    ok(block_on(t.fsck(true, |_| {})), "fsck --fix");
    let clean = ok(block_on(t.fsck(false, |_| {})), "fsck after fix");
    assert_eq!(clean.inconsistent, 0);
    assert_eq!(scan(store, table).len(), 6);
    assert_eq!(
        counter(&t, codec::CounterKind::Nodes, codec::SERVER_USER),
        6
    );
}

fn raw_mutate(
    store: &dyn Store,
    table: &str,
    key: Vec<u8>,
    mutations: Vec<Mutation>,
    now: Timestamp,
) {
    let req = Request::MutateRow(MutateRowRequest {
        table: table.into(),
        row_key: key,
        mutations,
        ..MutateRowRequest::default()
    });
    if let Err(e) = store.execute(req, now) {
        panic!("raw MutateRow: {e}");
    }
}

/// §22 4–10 in order on one table set up with `test.perms`.
pub fn perms_sequence(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), Some(TEST_PERMS));
    // 4. Mount/resolve.
    ok(
        block_on(t.mount(&root(), "stuff", S, HOUR_S, MountFlags(0))),
        "4 mount stuff",
    );
    let want = MountEntry {
        name: "the/rain".into(),
        servers: vec![mt::MountedServer {
            server: S.into(),
            deadline_us: spec_deadline(t0().0, HOUR_S),
        }],
        mt: false,
        leaf: false,
    };
    assert_eq!(
        ok(block_on(t.resolve(&root(), "stuff/the/rain")), "4 root"),
        want
    );
    assert_eq!(
        ok(block_on(t.resolve(&bob(), "stuff/the/rain")), "4 bob"),
        want
    );
    assert_eq!(
        ok(block_on(t.resolve(&root(), "/stuff/falls")), "4 falls").name,
        "falls"
    );
    err(
        block_on(t.resolve(&alice(), "/stuff/falls")),
        |e| matches!(e, MtError::NoPermissions { .. }),
        "4 alice",
    );
    // 5. Intermediate mounts.
    for n in ["a/b", "x/y", "alpha//beta"] {
        ok(
            block_on(t.mount(&root(), n, S, HOUR_S, MountFlags(0))),
            "5 mount",
        );
    }
    assert_eq!(
        ok(block_on(t.resolve(&root(), "alpha/beta/falls")), "5").name,
        "falls"
    );
    assert_eq!(
        ok(block_on(t.resolve(&alice(), "a/b/falls")), "5 alice").name,
        "falls"
    );
    err(
        block_on(t.resolve(&bob(), "a/b/falls")),
        |e| matches!(e, MtError::NoPermissions { .. }),
        "5 bob",
    );
    // 6. Versions.
    let pv = ok(block_on(t.get_permissions(&root(), "stuff")), "6 get");
    err(
        block_on(t.set_permissions(&root(), "stuff", pv.perms.clone(), "xyzzy")),
        |e| *e == MtError::BadVersion,
        "6 bad",
    );
    let set = ok(
        block_on(t.set_permissions(&root(), "stuff", pv.perms.clone(), &pv.version)),
        "6 set",
    );
    let next = spec_next_version(&pv.version);
    assert_eq!(set.version, next);
    assert_eq!(
        ok(block_on(t.get_permissions(&root(), "stuff")), "6 get2").version,
        next
    );
    ok(
        block_on(t.set_permissions(&root(), "stuff", pv.perms.clone(), "")),
        "6 any version",
    );
    // 7. Create via SetPermissions.
    let p = pv.perms.clone();
    err(
        block_on(t.set_permissions(&alice(), "onlybob", p.clone(), "")),
        |e| matches!(e, MtError::NoPermissions { .. }),
        "7 alice",
    );
    ok(
        block_on(t.set_permissions(&bob(), "onlybob", p.clone(), "")),
        "7 bob",
    );
    assert!(node(&t, "onlybob").sticky, "7 sticky");
    // 8. Admin self-retention.
    let mut cur = ok(block_on(t.get_permissions(&bob(), "onlybob")), "8 get").perms;
    if let Some(admin) = cur.0.get_mut("Admin")
        && let Some(list) = admin.in_.as_mut()
    {
        list.retain(|n| n != "bob");
    }
    ok(
        block_on(t.set_permissions(&bob(), "onlybob", cur, "")),
        "8 set without bob",
    );
    let got = ok(block_on(t.get_permissions(&bob(), "onlybob")), "8 get2").perms;
    assert!(
        got.0["Admin"]
            .in_
            .as_ref()
            .is_some_and(|l| l.contains(&"bob".to_string())),
        "8 bob kept"
    );
    let twice = perms(r#"{"Admin":{"In":["bob","bob"]}}"#);
    ok(
        block_on(t.set_permissions(&bob(), "onlybob", twice, "")),
        "8 twice",
    );
    let got = ok(block_on(t.get_permissions(&bob(), "onlybob")), "8 get3").perms;
    assert_eq!(got.0["Admin"].in_, Some(vec!["bob".to_string()]));
    // 9. Unmount.
    ok(block_on(t.unmount(&root(), "a/b", "")), "9 unmount");
    err(
        block_on(t.resolve(&root(), "a/b/falls")),
        |e| matches!(e, MtError::NoSuchName { .. }),
        "9 resolve",
    );
    ok(
        block_on(t.mount(&root(), "a/b", S, HOUR_S, MountFlags(0))),
        "9 mount",
    );
    ok(block_on(t.unmount(&root(), "a/b", S)), "9 unmount S");
    err(
        block_on(t.resolve(&root(), "a/b/falls")),
        |e| matches!(e, MtError::NoSuchName { .. }),
        "9 resolve2",
    );
    // 10. TTL.
    let start = clock.now();
    ok(
        block_on(t.mount(&root(), "stuffWithTTL", S, HOUR_S, MountFlags(0))),
        "10 mount",
    );
    ok(
        block_on(t.resolve(&root(), "stuffWithTTL/the/rain")),
        "10 resolve",
    );
    clock.advance_to(start.saturating_add_micros(3604 * SEC));
    err(
        block_on(t.resolve(&root(), "stuffWithTTL/the/rain")),
        |e| matches!(e, MtError::NoSuchName { .. }),
        "10 expired",
    );
}

/// §22 11: glob patterns.
pub fn glob(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), None);
    for n in ["one/bright/day", "in/the/middle", "of/the/night"] {
        ok(
            block_on(t.mount(&root(), n, S, HOUR_S, MountFlags(0))),
            "mount",
        );
    }
    let all = [
        "one",
        "one/bright",
        "one/bright/day",
        "in",
        "in/the",
        "in/the/middle",
        "of",
        "of/the",
        "of/the/night",
    ];
    let mut with_root = vec![""];
    with_root.extend(all);
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("*", vec!["one", "in", "of"]),
        ("...", with_root),
        ("*/...", all.to_vec()),
        ("one/...", vec!["one", "one/bright", "one/bright/day"]),
        ("of/the/night/two/dead/boys", vec!["of/the/night"]),
        ("*/the", vec!["in/the", "of/the"]),
        (
            "*/the/...",
            vec!["in/the", "of/the", "in/the/middle", "of/the/night"],
        ),
        ("o*", vec!["one", "of"]),
        ("", vec![""]),
    ];
    for (pattern, want) in cases {
        let got = ok(block_on(t.glob(&root(), "", pattern)), pattern);
        assert_eq!(names(&got), set_of(&want), "pattern {pattern:?}");
        assert_eq!(got.len(), want.len(), "pattern {pattern:?}: duplicates");
    }
    err(
        block_on(t.glob(&root(), "", "/x")),
        |e| *e == MtError::BadPattern,
        "/x",
    );
    let got = ok(
        block_on(t.glob(&root(), "of/the/night/two/dead/boys/got/up/to/fight", "*")),
        "below mount",
    );
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].name, "");
    assert_eq!(
        got[0].servers[0].server,
        "/127.0.0.1:8000/quux/two/dead/boys/got/up/to/fight"
    );
}

/// §22 12: `%%` templates.
pub fn template(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), Some(TEST_PERMS));
    let denied = |e: &MtError| matches!(e, MtError::NoPermissions { .. });
    err(
        block_on(t.mount(&alice(), "users/ted", S, HOUR_S, MountFlags(0))),
        denied,
        "alice on ted",
    );
    err(
        block_on(t.mount(&bob(), "users/carol", S, HOUR_S, MountFlags(0))),
        denied,
        "bob on carol",
    );
    ok(
        block_on(t.mount(&alice(), "users/alice", S, HOUR_S, MountFlags(0))),
        "alice on alice",
    );
    ok(
        block_on(t.mount(&bob(), "users/bob", S, HOUR_S, MountFlags(0))),
        "bob on bob",
    );
    let got = ok(block_on(t.get_permissions(&alice(), "users/alice")), "get");
    assert_eq!(
        codec::encode_permissions_string(&got.perms),
        r#"{"Admin":{"In":["alice"],"NotIn":null}}"#
    );
    for _ in 0..2 {
        ok(
            block_on(t.set_permissions(
                &alice(),
                "users/alice/a/b/c/d",
                perms(r#"{"Admin":{"In":["..."]}}"#),
                "",
            )),
            "deep set",
        );
    }
}

/// §22 13: glob with ACLs.
pub fn glob_acls(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), Some(TEST_PERMS));
    ok(
        block_on(t.mount(&bob(), "one/bright/day", S, HOUR_S, MountFlags(0))),
        "bob mount",
    );
    ok(
        block_on(t.mount(&root(), "a/b/c", S, HOUR_S, MountFlags(0))),
        "root mount",
    );
    let star = |c: &Caller| names(&ok(block_on(t.glob(c, "", "*")), "glob *"));
    assert_eq!(star(&root()), set_of(&["one", "a", "stuff", "users"]));
    assert_eq!(star(&alice()), set_of(&["one", "a", "users"]));
    assert_eq!(star(&bob()), set_of(&["one", "stuff", "users"]));
    let deep = |c: &Caller| names(&ok(block_on(t.glob(c, "", "*/...")), "glob */..."));
    let all = [
        "one",
        "a",
        "one/bright",
        "a/b",
        "one/bright/day",
        "a/b/c",
        "stuff",
        "users",
    ];
    assert_eq!(deep(&root()), set_of(&all));
    let no_stuff: Vec<&str> = all.iter().copied().filter(|n| *n != "stuff").collect();
    assert_eq!(deep(&alice()), set_of(&no_stuff));
    assert_eq!(
        deep(&bob()),
        set_of(&["one", "one/bright", "one/bright/day", "stuff", "users"])
    );
}

/// §22 14: unmount collects empty nodes; sticky nodes stay.
pub fn cleanup(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), None);
    ok(
        block_on(t.mount(&root(), "one/bright/day", S, HOUR_S, MountFlags(0))),
        "mount",
    );
    ok(
        block_on(t.unmount(&root(), "one/bright/day", "")),
        "unmount",
    );
    assert!(ok(block_on(t.glob(&root(), "", "*/...")), "glob").is_empty());
    assert_eq!(scan(store, table).len(), 1);
    ok(
        block_on(t.mount(&root(), "one/bright/day", S, HOUR_S, MountFlags(0))),
        "mount again",
    );
    ok(
        block_on(t.set_permissions(
            &root(),
            "one/bright",
            perms(r#"{"Read":{"In":["..."]}}"#),
            "",
        )),
        "sticky",
    );
    ok(
        block_on(t.unmount(&root(), "one/bright/day", "")),
        "unmount again",
    );
    assert_eq!(
        names(&ok(block_on(t.glob(&root(), "", "*/...")), "glob")),
        set_of(&["one", "one/bright"])
    );
}

/// §22 15: delete, with and without subtree and parent Admin.
pub fn delete(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), Some(TEST_PERMS));
    ok(
        block_on(t.mount(&bob(), "one/bright/day", S, HOUR_S, MountFlags(0))),
        "bob mount",
    );
    ok(
        block_on(t.mount(&root(), "a/b/c", S, HOUR_S, MountFlags(0))),
        "root mount",
    );
    err(
        block_on(t.delete(&root(), "a/b", false)),
        |e| matches!(e, MtError::NotEmpty { .. }),
        "not empty",
    );
    ok(block_on(t.delete(&root(), "a/b", true)), "subtree");
    assert!(ok(block_on(t.get_node("a/b")), "get").is_none());
    let denied = |e: &MtError| matches!(e, MtError::NoPermissions { .. });
    err(
        block_on(t.delete(&alice(), "one/bright/day", false)),
        denied,
        "alice",
    );
    ok(block_on(t.delete(&root(), "one/bright/day", false)), "root");
    assert!(
        ok(block_on(t.get_node("one/bright")), "get").is_none(),
        "parent collected"
    );
    assert!(
        ok(block_on(t.get_node("one")), "get").is_none(),
        "grandparent collected"
    );
    ok(block_on(t.delete(&bob(), "one/bright", false)), "no-op");
    ok(
        block_on(t.set_permissions(
            &bob(),
            "hoohaa",
            perms(r#"{"Admin":{"In":["bob"]},"Read":{"In":["..."]}}"#),
            "",
        )),
        "hoohaa",
    );
    err(
        block_on(t.delete(&alice(), "hoohaa", false)),
        denied,
        "alice hoohaa",
    );
    ok(
        block_on(t.delete(&caller("root", false), "hoohaa", false)),
        "parent admin",
    );
    err(
        block_on(t.delete(&root(), "", true)),
        |e| *e == MtError::NoAccess,
        "root",
    );
}

/// §22 16: server address validation (no request for a bad one).
pub fn server_format(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), None);
    for s in [
        "/127.0.0.1:8000/life/on/the/mississippi",
        "/atrampabroad:8000",
        "atrampabroad:8000",
    ] {
        ok(block_on(t.mount(&root(), "x", s, HOUR_S, MountFlags(0))), s);
    }
    for s in ["/atrampabroad", "/@following the equator:8000@@@"] {
        let ctx = MtCtx {
            tables: Tables::new(table),
            ..MtCtx::new()
        };
        let start = Start {
            now: clock.now(),
            seed: 1,
            deadline: t0().saturating_add_micros(60 * SEC),
        };
        let mut m = mt::Mount::new(ctx, "x", s, HOUR_S, MountFlags(0), start);
        assert!(m.poll_request().is_none(), "{s}: no request");
        assert!(
            matches!(m.result(), Some(Err(MtError::MalformedAddress { .. }))),
            "{s}"
        );
    }
}

/// §22 17: expiry, driven by the clock.
pub fn expiry(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), None);
    for n in ["a1/b1", "a1/b2", "a2/b1", "a2/b2/c"] {
        ok(
            block_on(t.mount(&root(), n, S, HOUR_S, MountFlags(0))),
            "mount",
        );
    }
    let g = |p: &str| names(&ok(block_on(t.glob(&root(), "", p)), p));
    assert_eq!(g("*/b1/..."), set_of(&["a1/b1", "a2/b1"]));
    clock.advance_to(t0().saturating_add_micros(1800 * SEC));
    assert_eq!(g("*/b1/..."), set_of(&["a1/b1", "a2/b1"]));
    assert_eq!(
        names(&ok(block_on(t.glob(&root(), "a2/b2", "*")), "a2/b2 *")),
        set_of(&["c"])
    );
    ok(
        block_on(t.mount(&root(), "a1/b1", S, HOUR_S, MountFlags(0))),
        "remount",
    );
    clock.advance_to(t0().saturating_add_micros(3604 * SEC));
    let gone = |e: &MtError| matches!(e, MtError::NoSuchName { .. });
    err(block_on(t.resolve(&root(), "a2/b2/c")), gone, "a2/b2/c");
    err(block_on(t.resolve(&root(), "a2/b1")), gone, "a2/b1");
    assert_eq!(g("*/..."), set_of(&["a1", "a1/b1"]));
    assert_eq!(g("*/b1/..."), set_of(&["a1/b1"]));
}

/// §22 18: per-user counters.
pub fn counters(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), None);
    let tb = caller("test-blessing", true);
    let who = "test-blessing";
    let check = |nodes: i64, servers: i64, what: &str| {
        assert_eq!(
            counter(&t, codec::CounterKind::Nodes, who),
            nodes,
            "{what}: nodes"
        );
        assert_eq!(
            counter(&t, codec::CounterKind::Servers, who),
            servers,
            "{what}: servers"
        );
    };
    for i in 1..=10 {
        ok(
            block_on(t.mount(
                &tb,
                &format!("node{i}"),
                &format!("/127.0.0.1:8000/node{i}"),
                HOUR_S,
                MountFlags(0),
            )),
            "mount",
        );
        check(i, i, "mount");
    }
    for i in 1..=10 {
        if i % 2 == 0 {
            ok(block_on(t.unmount(&tb, &format!("node{i}"), "")), "unmount");
        } else {
            ok(block_on(t.delete(&tb, &format!("node{i}"), true)), "delete");
        }
        check(10 - i, 10 - i, "remove");
    }
    ok(
        block_on(t.mount(&tb, "1/2/3/4/5/6/7/8/9a/10", S, HOUR_S, MountFlags(0))),
        "deep a",
    );
    ok(
        block_on(t.mount(&tb, "1/2/3/4/5/6/7/8/9b/11", S, HOUR_S, MountFlags(0))),
        "deep b",
    );
    check(12, 2, "deep");
    ok(block_on(t.delete(&tb, "1/2/3/4/5", true)), "deep delete");
    check(0, 0, "deep delete");
    for i in 1..=5 {
        for n in ["node1", "node2"] {
            ok(
                block_on(t.mount(
                    &tb,
                    n,
                    &format!("/127.0.0.1:8000/addr{i}"),
                    HOUR_S,
                    MountFlags(0),
                )),
                "addr",
            );
        }
        check(2, 2 * i, "addr");
    }
    ok(block_on(t.unmount(&tb, "node1", "")), "unmount node1");
    check(1, 5, "unmount node1");
    for i in 1..=5 {
        ok(
            block_on(t.unmount(&tb, "node2", &format!("/127.0.0.1:8000/addr{i}"))),
            "unmount addr",
        );
        check(if i == 5 { 0 } else { 1 }, 5 - i, "unmount addr");
    }
    ok(
        block_on(t.mount(&tb, "1/2/3/4/5", S, HOUR_S, MountFlags(0))),
        "mount 5",
    );
    check(5, 1, "mount 5");
    clock.advance_to(clock.now().saturating_add_micros(3604 * SEC));
    err(
        block_on(t.resolve(&tb, "1/2/3/4/5")),
        |e| matches!(e, MtError::NoSuchName { .. }),
        "expired",
    );
    assert_eq!(counter(&t, codec::CounterKind::Servers, who), 0);
}

/// §22 19: intermediate nodes from a permissions file copy their parent's permissions.
pub fn intermediate_nodes(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), Some(INTERMEDIATE_PERMS));
    let root_perms = ok(block_on(t.get_permissions(&root(), "")), "root").perms;
    assert_eq!(
        ok(block_on(t.get_permissions(&root(), "x")), "x").perms,
        root_perms
    );
    assert_eq!(
        ok(block_on(t.get_permissions(&root(), "x/y")), "x/y").perms,
        root_perms
    );
    assert_eq!(
        codec::encode_permissions_string(
            &ok(block_on(t.get_permissions(&root(), "x/y/z")), "x/y/z").perms
        ),
        r#"{"Mount":{"In":["root"],"NotIn":null},"Read":{"In":["bob","root"],"NotIn":null}}"#
    );
}

/// §22 20: node and server limits.
pub fn limits(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let mut cfg = config(table);
    cfg.limits = mt::Limits {
        max_nodes_per_user: 10,
        max_servers_per_user: 15,
    };
    let t = fresh(store, &clock, cfg, None);
    let check = |nodes: i64, servers: i64, what: &str| {
        assert_eq!(
            counter(&t, codec::CounterKind::Nodes, "root"),
            nodes,
            "{what}: nodes"
        );
        assert_eq!(
            counter(&t, codec::CounterKind::Servers, "root"),
            servers,
            "{what}: servers"
        );
    };
    for i in 1..=10 {
        ok(
            block_on(t.mount(&root(), &i.to_string(), S, HOUR_S, MountFlags(0))),
            "mount",
        );
        check(i, i, "mount");
    }
    err(
        block_on(t.mount(&root(), "foo", S, HOUR_S, MountFlags(0))),
        |e| matches!(e, MtError::NodeLimitExceeded { limit: 10 }),
        "foo",
    );
    check(10, 10, "foo");
    for i in 1..=5 {
        ok(
            block_on(t.mount(
                &root(),
                &i.to_string(),
                "/127.0.0.1:8000/quux/foo",
                HOUR_S,
                MountFlags(0),
            )),
            "second server",
        );
        check(10, 10 + i, "second server");
    }
    err(
        block_on(t.mount(
            &root(),
            "6",
            "/127.0.0.1:8000/quux/foo",
            HOUR_S,
            MountFlags(0),
        )),
        |e| matches!(e, MtError::ServerLimitExceeded { limit: 15 }),
        "6",
    );
    check(10, 15, "6");
    ok(block_on(t.unmount(&root(), "10", "")), "unmount 10");
    check(9, 14, "unmount 10");
    ok(
        block_on(t.mount(&root(), "10", S, HOUR_S, MountFlags(0))),
        "mount 10",
    );
    check(10, 15, "mount 10");
    for i in 1..=10i64 {
        ok(block_on(t.unmount(&root(), &i.to_string(), "")), "unmount");
        if i <= 5 {
            check(10 - i, 15 - 2 * i, "unmount");
        } else {
            check(10 - i, 10 - i, "unmount");
        }
    }
}

fn cell<'r>(row: &'r Row, family: &str, qualifier: &[u8]) -> Option<&'r rowkit_codec::model::Cell> {
    row.cells
        .iter()
        .find(|c| c.family == family && c.qualifier == qualifier)
}

/// btmtd's exact layout: what `cbt read` shows after a mount.
pub fn layout(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(Timestamp(t0().0 + 123_456));
    let t = fresh(store, &clock, config(table), None);
    let mounted = ok(
        block_on(t.mount(&root(), "foo", S, HOUR_S, MountFlags(MountFlags::MT))),
        "mount",
    );
    let deadline = mounted.deadline_us;
    assert_eq!(deadline, spec_deadline(clock.now().0, HOUR_S));
    // The row key the mount wrote, as the machine returns it.
    assert_eq!(mounted.row_key, codec::row_key("foo"));
    let rows = scan(store, table);
    let keys: Vec<&[u8]> = rows.iter().map(|r| r.key.as_slice()).collect();
    assert_eq!(keys, vec![&b"050c5d30/"[..], &b"88e481b8/foo"[..]]);
    let root_row = &rows[0];
    let foo_row = &rows[1];
    let now_ms = clock.now().truncate_to_millis();
    let root_id = cell(root_row, "m", b"i").map(|c| c.value.clone());
    assert_eq!(root_id.as_deref(), Some(&b"ROOTNODE"[..]));
    assert_eq!(
        cell(root_row, "m", b"p").map(|c| c.value.clone()),
        Some(br#"{"Admin":{"In":["..."],"NotIn":null}}"#.to_vec())
    );
    assert_eq!(
        cell(root_row, "m", b"c").map(|c| c.value.clone()),
        Some(b"self:?:ServerUser".to_vec())
    );
    let created = cell(root_row, "m", b"c").map(|c| c.timestamp);
    if t0() == T0 {
        assert_eq!(created, Some(now_ms), "m:c stamped with the clock's now");
    } else {
        // The server's own clock (see `starting_at`).
        assert!(
            created.is_some_and(|ts| ts.is_valid_cell_timestamp() && ts <= now_ms),
            "m:c stamped {created:?}, clock {now_ms:?}"
        );
    }
    let foo_id = cell(foo_row, "m", b"i")
        .map(|c| c.value.clone())
        .unwrap_or_default();
    assert_eq!(foo_id.len(), 8);
    let child_q = codec::child_qualifier(&foo_id, "foo");
    assert_eq!(
        cell(root_row, "c", &child_q).map(|c| c.value.clone()),
        Some(vec![1])
    );
    let server = cell(foo_row, "s", S.as_bytes());
    assert_eq!(
        server.map(|c| (c.timestamp.0, c.value.clone())),
        Some((deadline, br#"{"mt":true}"#.to_vec()))
    );
    assert_eq!(
        cell(foo_row, "m", b"c").map(|c| c.value.clone()),
        Some(b"root".to_vec())
    );
    let v = cell(foo_row, "m", b"v")
        .map(|c| c.value.clone())
        .unwrap_or_default();
    assert!(
        v.len() == 8
            && v.iter()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    let counters = scan(store, &codec::counter_table(table));
    let ck: Vec<&[u8]> = counters.iter().map(|r| r.key.as_slice()).collect();
    assert!(ck.contains(&&b"num-nodes-per-user:root"[..]));
    assert!(ck.contains(&&b"num-servers-per-user:root"[..]));
}

/// A table written cell by cell in btmtd's layout (as with `cbt set`) resolves and globs.
pub fn foreign_layout(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = MountTable::new(SyncDriver::new(store, &clock), config(table));
    if let Err(e) = block_on(t.create_tables()) {
        panic!("create tables: {e}");
    }
    let set = |key: &[u8], fam: &str, q: &[u8], ts: i64, v: &[u8]| {
        raw_mutate(
            store,
            table,
            key.to_vec(),
            vec![Mutation::SetCell {
                family: fam.into(),
                qualifier: q.to_vec(),
                timestamp: Timestamp(ts),
                value: v.to_vec(),
            }],
            clock.now(),
        )
    };
    let ms = t0().0;
    let rk = b"050c5d30/";
    set(rk, "m", b"i", ms, b"ROOTNODE");
    set(rk, "m", b"c", ms, b"self:?:ServerUser");
    set(
        rk,
        "m",
        b"p",
        ms,
        br#"{"Admin":{"In":["..."],"NotIn":null}}"#,
    );
    set(rk, "m", b"v", ms, b"0000abcd");
    set(rk, "c", b"0000abccfoo", ms, &[1]);
    let fk = b"88e481b8/foo";
    set(fk, "m", b"i", ms, b"0000abcc");
    set(fk, "m", b"c", ms, b"someone");
    set(
        fk,
        "m",
        b"p",
        ms,
        br#"{"Read":{"In":["..."],"NotIn":null}}"#,
    );
    set(fk, "m", b"v", ms, b"12345678");
    set(
        fk,
        "s",
        b"/1.2.3.4:5",
        t0().0 + 3_600_000_000,
        br#"{"leaf":true}"#,
    );
    let e = ok(block_on(t.resolve(&alice(), "foo/bar")), "resolve");
    assert_eq!(e.name, "bar");
    assert!(e.leaf && !e.mt);
    assert_eq!(e.servers[0].server, "/1.2.3.4:5");
    assert_eq!(
        names(&ok(block_on(t.glob(&alice(), "", "*")), "glob")),
        set_of(&["foo"])
    );
    ok(block_on(t.fsck(false, |_| {})), "fsck of a btmtd table");
}

/// Drives `machine` on `store`, dropping it right after the first executed request that
/// `stop_after` accepts (a crash between two mutations). Returns whether that happened.
pub fn run_until_crash<M: Machine>(
    store: &dyn Store,
    clock: &ManualClock,
    mut machine: M,
    mut stop_after: impl FnMut(&Request) -> bool,
) -> bool {
    loop {
        let Some((tag, request)) = machine.poll_request() else {
            if machine.result().is_some() {
                return false;
            }
            match machine.poll_timeout() {
                Some(at) => {
                    clock.advance_to(at);
                    machine.handle_timeout(clock.now());
                    continue;
                }
                None => return false,
            }
        };
        let stop = stop_after(&request);
        feed(store, clock, &mut machine, tag, request);
        while machine.poll_abort().is_some() {}
        while machine.poll_event().is_some() {}
        if stop {
            return true;
        }
    }
}

fn feed<M: Machine>(
    store: &dyn Store,
    clock: &ManualClock,
    machine: &mut M,
    tag: Tag,
    request: Request,
) {
    match store.execute(request, clock.now()) {
        Ok(Reply::Unary(r)) => machine.handle_response(tag, Ok(r), clock.now()),
        Ok(Reply::Stream(parts)) => {
            let parts: Vec<_> = parts.collect();
            let failed = parts.iter().any(|p| p.is_err());
            for p in parts {
                machine.handle_response(tag, p, clock.now());
            }
            if !failed {
                machine.handle_response(
                    tag,
                    Ok(rowkit_statemachines::Response::StreamEnd),
                    clock.now(),
                );
            }
        }
        Err(e) => machine.handle_response(tag, Err(e), clock.now()),
    }
}

fn is_cam_on(request: &Request, key: &[u8]) -> bool {
    matches!(request, Request::CheckAndMutateRow(r) if r.row_key == key)
}

fn ctx_for(table: &str) -> MtCtx {
    MtCtx {
        tables: Tables::new(table),
        caller: root(),
        gc_grace_us: 0,
        ..MtCtx::new()
    }
}

/// A start at the clock's now with `seed`, aborted 60 s later.
fn start_at(clock: &ManualClock, seed: u64) -> Start {
    Start::within(clock.now(), seed, 60 * SEC)
}

fn dangling_after_add(store: &dyn Store, table: &str, clock: &ManualClock) {
    // Mount on p/c where p exists (sticky) and c does not: crash after the OCC on p.
    let parent_key = codec::row_key("p");
    let m = mt::Mount::new(
        ctx_for(table),
        "p/c",
        S,
        HOUR_S,
        MountFlags(0),
        start_at(clock, 7),
    );
    assert!(
        run_until_crash(store, clock, m, |r| is_cam_on(r, &parent_key)),
        "crash point reached"
    );
    let rows = scan(store, table);
    let p = rows
        .iter()
        .find(|r| r.key == parent_key)
        .map(|r| codec::decode_node(r, clock.now().0));
    let Some(Ok(p)) = p else {
        panic!("parent row");
    };
    assert_eq!(p.children.len(), 1, "the dangling reference");
    assert!(
        rows.iter().all(|r| r.key != codec::row_key("p/c")),
        "no child row"
    );
}

/// Crash between the parent reference and the child row of a child add, then each repair.
pub fn crash_child_add(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), None);
    let dirty = |t: &Mt<'_>| {
        matches!(
            block_on(t.fsck(false, |_| {})),
            Err(MtError::FsckInconsistent(_))
        )
    };
    let sticky = |t: &Mt<'_>| {
        ok(
            block_on(t.set_permissions(&root(), "p", codec::default_root_permissions(), "")),
            "sticky p",
        );
    };
    sticky(&t);
    // Repair 1: re-create the child.
    dangling_after_add(store, table, &clock);
    assert!(dirty(&t), "fsck sees the dangling reference");
    // A re-create removes same-name references only once they are older than the 1 h
    // second-half deadline (younger ones may still be in flight, §11.1 rowkit fix).
    ok(
        block_on(t.mount(&root(), "p/c", S, HOUR_S, MountFlags(0))),
        "re-create while the reference is young",
    );
    ok(block_on(t.unmount(&root(), "p/c", "")), "unmount");
    assert!(dirty(&t), "a young dangling reference is left alone");
    clock.advance_to(clock.now().saturating_add_micros(3600 * SEC));
    ok(
        block_on(t.mount(&root(), "p/c", S, HOUR_S, MountFlags(0))),
        "re-create",
    );
    ok(block_on(t.unmount(&root(), "p/c", "")), "unmount");
    ok(block_on(t.fsck(false, |_| {})), "clean after re-create");
    // Repair 2: forced (subtree) delete of the parent.
    dangling_after_add(store, table, &clock);
    ok(block_on(t.delete(&root(), "p", true)), "forced delete");
    ok(block_on(t.fsck(false, |_| {})), "clean after forced delete");
    // Repair 3: fsck --fix.
    sticky(&t);
    dangling_after_add(store, table, &clock);
    ok(block_on(t.fsck(true, |_| {})), "fsck --fix");
    ok(block_on(t.fsck(false, |_| {})), "clean after fix");
    assert_eq!(scan(store, table).len(), 2, "root and p");
}

/// Crash between deleting a child row and removing its parent reference, then each repair.
pub fn crash_child_delete(store: &dyn Store, table: &str) {
    let clock = ManualClock::new(t0());
    let t = fresh(store, &clock, config(table), None);
    let child_key = codec::row_key("p/c");
    let crash = |t: &Mt<'_>| {
        ok(
            block_on(t.set_permissions(&root(), "p", codec::default_root_permissions(), "")),
            "sticky p",
        );
        ok(
            block_on(t.mount(&root(), "p/c", S, HOUR_S, MountFlags(0))),
            "mount",
        );
        let m = mt::Delete::new(ctx_for(table), "p/c", true, start_at(&clock, 9));
        assert!(
            run_until_crash(store, &clock, m, |r| is_cam_on(r, &child_key)),
            "crash point reached"
        );
        let rows = scan(store, table);
        assert!(rows.iter().all(|r| r.key != child_key), "child row gone");
        assert!(
            matches!(
                block_on(t.fsck(false, |_| {})),
                Err(MtError::FsckInconsistent(_))
            ),
            "dangling"
        );
    };
    // Repair 1: re-create the child (stale references are cleaned by createChild once older
    // than the 1 h second-half deadline).
    crash(&t);
    clock.advance_to(clock.now().saturating_add_micros(3600 * SEC));
    ok(
        block_on(t.mount(&root(), "p/c", S, HOUR_S, MountFlags(0))),
        "re-create",
    );
    ok(block_on(t.delete(&root(), "p/c", true)), "delete");
    ok(block_on(t.fsck(false, |_| {})), "clean after re-create");
    // Repair 2: forced delete of the parent.
    crash(&t);
    ok(block_on(t.delete(&root(), "p", true)), "forced delete");
    ok(block_on(t.fsck(false, |_| {})), "clean after forced delete");
    // Repair 3: fsck --fix (also recomputes the counters the crash left stale).
    crash(&t);
    ok(block_on(t.fsck(true, |_| {})), "fsck --fix");
    ok(block_on(t.fsck(false, |_| {})), "clean after fix");
    assert_eq!(counter(&t, codec::CounterKind::Servers, "root"), 0);
}

/// A fresh table set for a concurrency scenario, its calls seeded from `seed`.
fn concurrent<'a, C: Clock + Sync>(
    store: &'a dyn Store,
    clock: &'a C,
    table: &str,
    seed: u64,
) -> Mt<'a, C> {
    let options = CallOptions {
        seed,
        // Operations may retry for long under contention: give them room.
        deadline_micros: Some(100_000 * SEC),
    };
    let t = MountTable::new(SyncDriver::new(store, clock), concurrent_config(table))
        .with_options(options);
    ok(block_on(t.setup(None)), "setup");
    t
}

fn concurrent_config(table: &str) -> MtConfig {
    MtConfig {
        row_cache_capacity: if std::env::var("ROWKIT_MT_NO_CACHE").is_ok() {
            0
        } else {
            ROW_CACHE_CAPACITY
        },
        ..config(table)
    }
}

/// §22 21: threads × cycles of Mount/ResolveStep/Unmount on contended names.
pub fn concurrent_mount_unmount(store: &dyn Store, table: &str, threads: usize, cycles: usize) {
    let clock = RunningClock::starting_at(t0());
    let t = concurrent(store, &clock, table, 21);
    let pool = ["a", "a/b", "a/b/c", "a/d", "e/f", "e"];
    std::thread::scope(|s| {
        for th in 0..threads {
            let t = &t;
            s.spawn(move || {
                let mut rng = SplitMix64::new(th as u64);
                let server = format!("/127.0.0.1:{}/t", 8000 + th);
                for c in 0..cycles {
                    let name = pool[rng.below(pool.len() as u64) as usize];
                    let what = format!("thread {th} cycle {c} {name}");
                    ok(
                        block_on(t.mount(&root(), name, &server, 0, MountFlags(0))),
                        &what,
                    );
                    match block_on(t.resolve(&root(), name)) {
                        Ok(e) => assert!(!e.servers.is_empty(), "{what}"),
                        Err(e) => panic!("{what}: resolve {e:?}"),
                    }
                    ok(block_on(t.unmount(&root(), name, &server)), &what);
                }
            });
        }
    });
    assert!(
        ok(block_on(t.glob(&root(), "", "*")), "glob").is_empty(),
        "nothing mounted"
    );
    assert_only_root(store, table);
}

/// §22 22: concurrent Mount and subtree Delete under `a` and `b`, then both deleted: only the
/// root is left and fsck is clean.
///
/// This once failed in CI with an orphaned branch left over (node rows whose parent did not
/// reference them, out of reach of the final deletes). The cause was the facade's hot-row
/// cache: a read made after the store had applied a write, but before the writer invalidated
/// the entry, got the old row; a creator checking that its parent still existed saw a parent a
/// subtree delete had just removed and built on its orphaned row. The cache now serves no read
/// of a row while a write to it is in flight (`RowCache::begin_write`; the regression test is
/// `the_row_cache_serves_no_row_older_than_an_applied_write` in rowkit-store's
/// `tests/mounttable.rs`).
pub fn concurrent_mount_delete(store: &dyn Store, table: &str, threads: usize, cycles: usize) {
    let clock = RunningClock::starting_at(t0());
    let t = mount_delete_rounds(store, table, &clock, threads, cycles);
    assert_only_root(store, table);
    ok(block_on(t.fsck(false, |_| {})), "clean fsck");
}

/// The rounds of §22 22 and the two final deletes.
fn mount_delete_rounds<'a>(
    store: &'a dyn Store,
    table: &str,
    clock: &'a RunningClock,
    threads: usize,
    cycles: usize,
) -> Mt<'a, RunningClock> {
    let t = concurrent(store, clock, table, 22);
    std::thread::scope(|s| {
        for th in 0..threads {
            let t = &t;
            s.spawn(move || {
                let mut rng = SplitMix64::new(100 + th as u64);
                for c in 0..cycles {
                    let top = if rng.below(2) == 0 { "a" } else { "b" };
                    let name = format!("{top}/{}/{}", rng.below(3), rng.below(3));
                    let what = format!("thread {th} cycle {c} {name}");
                    if rng.below(2) == 0 {
                        ok(
                            block_on(t.mount(&root(), &name, S, 0, MountFlags(0))),
                            &what,
                        );
                    } else {
                        let victim = if rng.below(2) == 0 {
                            top.to_string()
                        } else {
                            name.clone()
                        };
                        ok(block_on(t.delete(&root(), &victim, true)), &what);
                    }
                }
            });
        }
    });
    ok(block_on(t.delete(&root(), "a", true)), "delete a");
    ok(block_on(t.delete(&root(), "b", true)), "delete b");
    t
}

/// §22 23: 100 mounts at depth 14 expire; concurrent ResolveSteps collect them all.
pub fn concurrent_expiry(store: &dyn Store, table: &str, threads: usize, _cycles: usize) {
    let clock = RunningClock::starting_at(t0());
    let t = concurrent(store, &clock, table, 23);
    let prefix = "l1/l2/l3/l4/l5/l6/l7/l8/l9/l10/l11/l12";
    let name = |i: usize| format!("{prefix}/m{}/leaf{i}", i % 4);
    for i in 0..100 {
        ok(
            block_on(t.mount(&root(), &name(i), S, 60, MountFlags(0))),
            "mount",
        );
    }
    clock.advance_to(clock.now().saturating_add_micros(3600 * SEC));
    let threads = threads.max(1);
    std::thread::scope(|s| {
        for th in 0..threads {
            let t = &t;
            let name = &name;
            s.spawn(move || {
                for k in (th..200).step_by(threads) {
                    let n = name(k % 100);
                    match block_on(t.resolve(&root(), &n)) {
                        Err(MtError::NoSuchName { .. }) => {}
                        other => panic!("resolve {n}: {other:?}"),
                    }
                }
            });
        }
    });
    assert_only_root(store, table);
}

/// A caller from names (helper for harnesses and the CLI).
pub fn caller_of(names: &[&str], is_server: bool) -> Caller {
    Caller::new(names, is_server)
}

/// Decodes `node` as the spec's primitives see it (helper for harnesses).
pub fn primitive_node(out: PrimitiveOutput) -> Option<codec::NodeRow> {
    match out {
        PrimitiveOutput::Node(n) => n.map(|b| *b),
        PrimitiveOutput::Done => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    //! The scenarios' own rules agree with the vectors (read at run time).
    use super::{spec_deadline, spec_next_version};
    use serde_json::Value;

    fn cases(kind: &str) -> Vec<Value> {
        let dir = std::env::var("ROWKIT_SHARED")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string());
        let path = format!("{dir}/vectors/mounttable.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
        let v: Value = serde_json::from_str(&text).unwrap();
        let cases = v[kind].as_array().cloned().unwrap_or_default();
        assert!(!cases.is_empty(), "no cases in {kind}");
        cases
    }

    #[test]
    fn spec_deadline_is_the_vectors() {
        for c in cases("deadlines") {
            let ns = c["now_unix_nanos"].as_i64().unwrap();
            let ttl = u32::try_from(c["ttl_seconds"].as_u64().unwrap()).unwrap();
            assert_eq!(
                spec_deadline(ns.div_euclid(1000), ttl),
                c["deadline_micros"].as_i64().unwrap(),
                "{c}"
            );
        }
    }

    #[test]
    fn spec_next_version_is_the_vectors() {
        for c in cases("version_increment") {
            assert_eq!(
                spec_next_version(c["version"].as_str().unwrap()),
                c["next"].as_str().unwrap(),
                "{c}"
            );
        }
    }
}
