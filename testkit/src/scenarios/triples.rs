//! The acceptance scenarios of `spec/triples.md` §12 as functions over any [`Store`], so the
//! same checks run on [`rowkit_store::MemoryStore`], [`rowkit_store::RedbStore`] and the
//! Bigtable emulator. Each scenario expects a store without a `badwolf` table (a fresh store),
//! creates it, and returns `Err(description)` on the first mismatch.
//!
//! `bt18` is the `bt_fixture` of `vectors/triples.json` ([`FixtureTriple`]s, in order);
//! runners read it from the vector file with [`bt18_from_vectors`].

use rowkit_codec::model::{Row, RowSet, Timestamp};
use rowkit_codec::triples::{Anchor, Node, Object, Predicate, Triple};
use rowkit_statemachines::ReadRowsRequest;
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::triples::{
    FilterField, FilterOperation, FilterOptions, LookupMethod, LookupOptions, TriplesError,
};

use rowkit_client::triples::{Graph, TripleStore};
use rowkit_client::{SyncDriver, block_on};
use rowkit_store::Store;
use rowkit_store::driver::ManualClock;

/// The result of one scenario.
pub type ScenarioResult = Result<(), String>;

/// A scenario: runs on a fresh store with the BT18 fixture.
pub type Scenario = fn(&dyn Store, &[FixtureTriple]) -> ScenarioResult;

/// One triple of the BT18 fixture: the `input` text and the `triple_uuid` of a `bt_fixture`
/// case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixtureTriple {
    /// The parser input.
    pub input: String,
    /// The triple's UUID, as the vectors give it.
    pub triple_uuid: String,
}

/// The `bt_fixture` of the text of `vectors/triples.json`, in order (each entry's `index` must
/// be its position). Panics on a malformed file.
pub fn bt18_from_vectors(text: &str) -> Vec<FixtureTriple> {
    use rowkit_codec::objmeta::json::Json;
    let file = Json::parse(text).unwrap_or_else(|e| panic!("triples.json: {e}"));
    let Some(Json::Array(cases)) = file.get("bt_fixture") else {
        panic!("triples.json has no bt_fixture list")
    };
    assert!(!cases.is_empty(), "bt_fixture is empty");
    cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let text = |name: &str| {
                c.get(name)
                    .and_then(Json::as_str)
                    .unwrap_or_else(|| panic!("bt_fixture {i}: no {name}"))
                    .to_string()
            };
            assert_eq!(
                c.get("index"),
                Some(&Json::Number(i as f64)),
                "bt_fixture {i}: index"
            );
            FixtureTriple {
                input: text("input"),
                triple_uuid: text("triple_uuid"),
            }
        })
        .collect()
}

/// Every scenario with its name, for runners.
pub fn all() -> Vec<(&'static str, Scenario)> {
    vec![
        ("2 graphs", scenario_2_graphs),
        ("3 add/remove", scenario_3_add_remove),
        ("4 per-method counts", scenario_4_methods),
        ("5 exist", scenario_5_exist),
        ("6 targeted removal", scenario_6_targeted_removal),
        ("7 F1 lookups", scenario_7_f1),
        ("8 offset", scenario_8_offset),
        ("9 latest anchor", scenario_9_latest),
        ("10 filter options", scenario_10_filters),
        ("11 limit with anchors", scenario_11_limit_anchors),
        ("12 anchored query predicate", scenario_12_anchored),
        ("15 garbage cell", scenario_15_garbage_cell),
        ("check: every finding kind", scenario_check_corrupted),
        ("check: paged, bounded", scenario_check_paged),
    ]
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(format!($($fmt)*));
        }
    };
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Expands the shorthand `john knows mary` (nodes `/u<x>`, immutable predicates).
pub fn shorthand(s: &str) -> String {
    let parts: Vec<&str> = s.split(' ').collect();
    format!("/u<{}>\t\"{}\"@[]\t/u<{}>", parts[0], parts[1], parts[2])
}

fn triple(text: &str) -> Result<Triple, String> {
    Triple::parse(text.as_bytes()).map_err(err)
}

fn triples(texts: &[String]) -> Result<Vec<Triple>, String> {
    texts.iter().map(|t| triple(t)).collect()
}

/// The fixture's triples, parsed.
fn fixture_triples(fixture: &[FixtureTriple]) -> Result<Vec<Triple>, String> {
    fixture.iter().map(|t| triple(&t.input)).collect()
}

fn node(text: &str) -> Result<Node, String> {
    Node::parse(text.as_bytes()).map_err(err)
}

fn pred(text: &str) -> Result<Predicate, String> {
    Predicate::parse(text.as_bytes()).map_err(err)
}

fn obj(text: &str) -> Result<Object, String> {
    Object::parse(text.as_bytes()).map_err(err)
}

fn anchor(text: &str) -> Result<Anchor, String> {
    Anchor::parse(text.as_bytes()).map_err(err)
}

fn clock() -> ManualClock {
    ManualClock::new(Timestamp::from_secs(1_700_000_000))
}

fn setup<'a>(store: &'a dyn Store, clock: &'a ManualClock) -> Result<Ts<'a>, String> {
    let ts = TripleStore::new(SyncDriver::new(store, clock));
    block_on(ts.setup()).map_err(err)?;
    Ok(ts)
}

type G<'s, 'a> = Graph<'s, SyncDriver<&'a dyn Store, &'a ManualClock>>;

/// The triple store over a scenario store.
type Ts<'a> = TripleStore<SyncDriver<&'a dyn Store, &'a ManualClock>>;

fn texts(g: &G<'_, '_>, m: LookupMethod, lo: LookupOptions) -> Result<Vec<String>, String> {
    let found = block_on(g.lookup(m, lo)).map_err(err)?;
    Ok(found
        .iter()
        .map(|f| String::from_utf8_lossy(&f.item().to_text()).into_owned())
        .collect())
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn all_rows(store: &dyn Store, clock: &ManualClock) -> Result<Vec<Row>, String> {
    let request = ReadRowsRequest {
        table: "badwolf".into(),
        rows: RowSet::all(),
        ..Default::default()
    };
    let mut rows = Vec::new();
    let m = ReadRows::new(
        request,
        Timestamp::from_secs(1_700_000_000),
        1,
        Default::default(),
    );
    rowkit_client::run_blocking(store, clock, m, |r| rows.push(r)).map_err(|e| format!("{e:?}"))?;
    Ok(rows)
}

/// Scenario 2: graph creation, existence, deletion and listing.
pub fn scenario_2_graphs(store: &dyn Store, bt18: &[FixtureTriple]) -> ScenarioResult {
    let c = clock();
    let ts = setup(store, &c)?;
    block_on(ts.new_graph(b"test")).map_err(err)?;
    match block_on(ts.new_graph(b"test")) {
        Err(e) => ensure!(e.to_string() == "graph \"test\" already exist", "{e}"),
        Ok(_) => return Err("second NewGraph succeeded".into()),
    }
    block_on(ts.graph(b"test")).map_err(err)?;
    block_on(ts.delete_graph(b"test")).map_err(err)?;
    for r in [
        block_on(ts.graph(b"test")).map(|_| ()),
        block_on(ts.delete_graph(b"test")),
    ] {
        match r {
            Err(e) => ensure!(e.to_string() == "graph \"test\" does not exist", "{e}"),
            Ok(()) => return Err("graph still exists after DeleteGraph".into()),
        }
    }
    let names: Vec<Vec<u8>> = (0..10)
        .map(|i| format!("?test_graph_{i}").into_bytes())
        .collect();
    for n in &names {
        block_on(ts.new_graph(n)).map_err(err)?;
    }
    ensure!(
        block_on(ts.graph_names()).map_err(err)? == names,
        "GraphNames of the 10 graphs"
    );
    // A graph literally named `graph` holding BT18, on a fresh table.
    let ts2 = TripleStore::new(SyncDriver::new(store, &c)).with_table("badwolf_fresh");
    block_on(ts2.setup()).map_err(err)?;
    let g = block_on(ts2.new_graph(b"graph")).map_err(err)?;
    block_on(g.add_triples(fixture_triples(bt18)?)).map_err(err)?;
    ensure!(
        block_on(ts2.graph_names()).map_err(err)? == vec![b"graph".to_vec()],
        "GraphNames with a graph named graph"
    );
    Ok(())
}

/// Scenario 3: AddTriples(BT18), Triples(), RemoveTriples(all) leaves only the graph row.
pub fn scenario_3_add_remove(store: &dyn Store, bt18: &[FixtureTriple]) -> ScenarioResult {
    let c = clock();
    let ts = setup(store, &c)?;
    let g = block_on(ts.new_graph(b"test")).map_err(err)?;
    let all = fixture_triples(bt18)?;
    block_on(g.add_triples(all.clone())).map_err(err)?;
    let found = block_on(g.lookup(LookupMethod::Triples, LookupOptions::default())).map_err(err)?;
    // The UUID set is the fixture's `triple_uuid` set (the vectors', not computed here), one
    // item per distinct triple.
    let want: std::collections::BTreeSet<&str> =
        bt18.iter().map(|t| t.triple_uuid.as_str()).collect();
    ensure!(
        found.len() == want.len(),
        "Triples() returned {}",
        found.len()
    );
    let got: std::collections::BTreeSet<String> =
        found.iter().map(|f| f.triple.uuid().to_text()).collect();
    let got: std::collections::BTreeSet<&str> = got.iter().map(String::as_str).collect();
    ensure!(got == want, "UUID sets differ: {got:?} vs {want:?}");
    block_on(g.remove_triples(all)).map_err(err)?;
    let found = block_on(g.lookup(LookupMethod::Triples, LookupOptions::default())).map_err(err)?;
    ensure!(found.is_empty(), "Triples() after removal: {}", found.len());
    let rows = all_rows(store, &c)?;
    let keys: Vec<&[u8]> = rows.iter().map(|r| r.key.as_slice()).collect();
    ensure!(
        keys == [b"graph:test".as_slice()],
        "rows left: {}",
        keys.len()
    );
    Ok(())
}

fn bt18_graph<'s, 'a>(ts: &'s Ts<'a>, bt18: &[FixtureTriple]) -> Result<G<'s, 'a>, String> {
    let g = block_on(ts.new_graph(b"test")).map_err(err)?;
    block_on(g.add_triples(fixture_triples(bt18)?)).map_err(err)?;
    Ok(g)
}

/// Scenario 4: result counts of every method on BT18, and `MaxElements = 1`.
pub fn scenario_4_methods(store: &dyn Store, bt18: &[FixtureTriple]) -> ScenarioResult {
    let c = clock();
    let ts = setup(store, &c)?;
    let g = bt18_graph(&ts, bt18)?;
    let q = triple(&bt18[0].input)?;
    let (s, o) = (q.subject.clone(), q.object.clone());
    let foo_p = pred("\"foo\"@[]")?;
    use LookupMethod as M;
    let cases = [
        (M::Objects(s.clone(), foo_p.clone()), 9),
        (M::Subjects(foo_p.clone(), o.clone()), 4),
        (M::PredicatesForSubject(s.clone()), 9),
        (M::PredicatesForObject(o.clone()), 4),
        (M::PredicatesForSubjectAndObject(s.clone(), o.clone()), 2),
        (M::TriplesForSubject(s.clone()), 9),
        (M::TriplesForPredicate(foo_p.clone()), 18),
        (M::TriplesForObject(o.clone()), 4),
        (
            M::TriplesForSubjectAndPredicate(s.clone(), foo_p.clone()),
            9,
        ),
        (M::TriplesForPredicateAndObject(foo_p.clone(), o.clone()), 4),
        (M::Triples, 18),
    ];
    for (m, n) in cases {
        let got = block_on(g.lookup(m.clone(), LookupOptions::default()))
            .map_err(err)?
            .len();
        ensure!(got == n, "{m:?}: {got} items, want {n}");
        let one = LookupOptions {
            max_elements: 1,
            ..Default::default()
        };
        let got = block_on(g.lookup(m.clone(), one)).map_err(err)?.len();
        ensure!(got == 1, "{m:?} with MaxElements 1: {got}");
    }
    let preds = texts(
        &g,
        M::PredicatesForSubjectAndObject(s, o),
        LookupOptions::default(),
    )?;
    ensure!(
        preds == ["\"foo\"@[1985-01-01T00:01:01.999999Z]", "\"foo\"@[]"],
        "PredicatesForSubjectAndObject = {preds:?}"
    );
    Ok(())
}

/// Scenario 5: Exist for BT18 without triple 0 (which shares its POS row with triple 1).
pub fn scenario_5_exist(store: &dyn Store, bt18: &[FixtureTriple]) -> ScenarioResult {
    let c = clock();
    let ts = setup(store, &c)?;
    let g = block_on(ts.new_graph(b"test")).map_err(err)?;
    let all = fixture_triples(bt18)?;
    block_on(g.add_triples(all[1..].to_vec())).map_err(err)?;
    for (i, t) in all.iter().enumerate() {
        let exists = block_on(g.exist(t)).map_err(err)?;
        ensure!(exists == (i != 0), "Exist(triple {i}) = {exists}");
    }
    Ok(())
}

/// Scenario 6: removing triple 1 keeps triple 0 (same rows, immutable).
pub fn scenario_6_targeted_removal(store: &dyn Store, bt18: &[FixtureTriple]) -> ScenarioResult {
    let c = clock();
    let ts = setup(store, &c)?;
    let g = bt18_graph(&ts, bt18)?;
    let all = fixture_triples(bt18)?;
    block_on(g.remove_triples(vec![all[1].clone()])).map_err(err)?;
    ensure!(
        block_on(g.exist(&all[0])).map_err(err)?,
        "triple 0 was removed too"
    );
    ensure!(
        !block_on(g.exist(&all[1])).map_err(err)?,
        "triple 1 still exists"
    );
    Ok(())
}

fn u(x: &str) -> Result<Node, String> {
    node(&format!("/u<{x}>"))
}

fn uo(x: &str) -> Result<Object, String> {
    obj(&format!("/u<{x}>"))
}

fn p(x: &str) -> Result<Predicate, String> {
    pred(&format!("\"{x}\"@[]"))
}

fn graph_with<'s, 'a>(ts: &'s Ts<'a>, data: &[String]) -> Result<G<'s, 'a>, String> {
    let g = block_on(ts.new_graph(b"test")).map_err(err)?;
    block_on(g.add_triples(triples(data)?)).map_err(err)?;
    Ok(g)
}

/// Scenario 7: F1 lookups.
pub fn scenario_7_f1(store: &dyn Store, _bt18: &[FixtureTriple]) -> ScenarioResult {
    let c = clock();
    let ts = setup(store, &c)?;
    let f1: Vec<String> = [
        "john knows mary",
        "john knows peter",
        "john knows alice",
        "mary knows andrew",
        "mary knows kim",
        "mary knows alice",
    ]
    .iter()
    .map(|s| shorthand(s))
    .collect();
    let g = graph_with(&ts, &f1)?;
    let d = LookupOptions::default;
    use LookupMethod as M;
    let objects = texts(&g, M::Objects(u("john")?, p("knows")?), d())?;
    ensure!(
        objects == ["/u<alice>", "/u<mary>", "/u<peter>"],
        "{objects:?}"
    );
    let subjects = texts(&g, M::Subjects(p("knows")?, uo("mary")?), d())?;
    ensure!(subjects == ["/u<john>"], "{subjects:?}");
    let preds = texts(
        &g,
        M::PredicatesForSubjectAndObject(u("john")?, uo("mary")?),
        d(),
    )?;
    ensure!(preds == ["\"knows\"@[]"], "{preds:?}");
    let preds = texts(&g, M::PredicatesForSubject(u("john")?), d())?;
    ensure!(preds == ["\"knows\"@[]"; 3], "{preds:?}");
    let counts = [
        (M::PredicatesForObject(uo("mary")?), 1),
        (M::TriplesForSubject(u("john")?), 3),
        (M::TriplesForPredicate(p("knows")?), 6),
        (M::TriplesForObject(uo("mary")?), 1),
        (M::TriplesForSubjectAndPredicate(u("john")?, p("knows")?), 3),
        (M::TriplesForPredicateAndObject(p("knows")?, uo("mary")?), 1),
        (M::Triples, 6),
    ];
    for (m, n) in counts {
        let got = block_on(g.lookup(m.clone(), d())).map_err(err)?.len();
        ensure!(got == n, "{m:?}: {got}, want {n}");
    }
    for t in triples(&f1)? {
        ensure!(
            block_on(g.exist(&t)).map_err(err)?,
            "Exist false for a F1 triple"
        );
    }
    Ok(())
}

/// Scenario 8: `{MaxElements: 1, Offset: i}` pages through each method.
pub fn scenario_8_offset(store: &dyn Store, _bt18: &[FixtureTriple]) -> ScenarioResult {
    use LookupMethod as M;
    let sh = |v: &[&str]| -> Vec<String> { v.iter().map(|s| shorthand(s)).collect() };
    let pt = |x: &str| format!("\"{x}\"@[]");
    let ut = |x: &str| format!("/u<{x}>");
    let pred_data = [
        "alice knows john",
        "alice likes john",
        "alice dislikes john",
        "john dislikes alice",
    ];
    let cases: Vec<(M, Vec<String>, Vec<String>)> = vec![
        (
            M::Objects(u("john")?, p("knows")?),
            sh(&[
                "john knows alice",
                "john knows mary",
                "john knows peter",
                "john likes peter",
            ]),
            vec![ut("alice"), ut("mary"), ut("peter")],
        ),
        (
            M::Subjects(p("knows")?, uo("john")?),
            sh(&[
                "alice knows john",
                "mary knows john",
                "peter knows john",
                "peter likes john",
            ]),
            vec![ut("alice"), ut("mary"), ut("peter")],
        ),
        (
            M::PredicatesForSubjectAndObject(u("alice")?, uo("john")?),
            sh(&pred_data),
            vec![pt("dislikes"), pt("knows"), pt("likes")],
        ),
        (
            M::PredicatesForSubject(u("alice")?),
            sh(&pred_data),
            vec![pt("dislikes"), pt("knows"), pt("likes")],
        ),
        (
            M::PredicatesForObject(uo("john")?),
            sh(&pred_data),
            vec![pt("dislikes"), pt("knows"), pt("likes")],
        ),
        (
            M::TriplesForSubject(u("alice")?),
            sh(&pred_data),
            sh(&[
                "alice dislikes john",
                "alice knows john",
                "alice likes john",
            ]),
        ),
        (
            M::TriplesForPredicate(p("knows")?),
            sh(&[
                "alice knows john",
                "alice knows peter",
                "alice knows mary",
                "john likes alice",
            ]),
            sh(&["alice knows john", "alice knows mary", "alice knows peter"]),
        ),
        (
            M::TriplesForObject(uo("john")?),
            sh(&[
                "alice knows john",
                "john knows john",
                "mary knows john",
                "john knows alice",
            ]),
            sh(&["alice knows john", "john knows john", "mary knows john"]),
        ),
        (
            M::TriplesForSubjectAndPredicate(u("alice")?, p("knows")?),
            sh(&[
                "alice knows john",
                "alice knows peter",
                "alice knows mary",
                "alice likes john",
            ]),
            sh(&["alice knows john", "alice knows mary", "alice knows peter"]),
        ),
        (
            M::TriplesForPredicateAndObject(p("knows")?, uo("john")?),
            sh(&[
                "alice knows john",
                "mary knows john",
                "peter knows john",
                "alice likes john",
            ]),
            sh(&["alice knows john", "mary knows john", "peter knows john"]),
        ),
        (
            M::Triples,
            sh(&[
                "alice knows john",
                "mary knows john",
                "peter knows john",
                "alice likes john",
            ]),
            sh(&[
                "alice knows john",
                "alice likes john",
                "mary knows john",
                "peter knows john",
            ]),
        ),
    ];
    for (i, (m, data, want)) in cases.into_iter().enumerate() {
        let table = format!("badwolf_offset_{i}");
        let c = clock();
        let ts = TripleStore::new(SyncDriver::new(store, &c)).with_table(&table);
        block_on(ts.setup()).map_err(err)?;
        let g = block_on(ts.new_graph(b"test")).map_err(err)?;
        block_on(g.add_triples(triples(&data)?)).map_err(err)?;
        for offset in 0..=want.len() as i64 {
            let lo = LookupOptions {
                max_elements: 1,
                offset,
                ..Default::default()
            };
            let got = texts(&g, m.clone(), lo)?;
            let expect: Vec<String> = want.get(offset as usize).cloned().into_iter().collect();
            ensure!(
                got == expect,
                "{m:?} offset {offset}: {got:?}, want {expect:?}"
            );
        }
    }
    Ok(())
}

fn meet_text(year: u32) -> String {
    format!("\"meet\"@[{year}-04-10T04:21:00Z]")
}

fn meet(year: u32) -> Result<Predicate, String> {
    pred(&meet_text(year))
}

/// Scenario 9: `LatestAnchor` on F2.
pub fn scenario_9_latest(store: &dyn Store, _bt18: &[FixtureTriple]) -> ScenarioResult {
    let c = clock();
    let ts = setup(store, &c)?;
    let f2: Vec<String> = (2010..=2019)
        .map(|y| format!("/u<john>\t\"meet\"@[{y}-04-10T4:21:00.000000000Z]\t/u<mary>"))
        .collect();
    let g = graph_with(&ts, &f2)?;
    let lo = || LookupOptions {
        latest_anchor: true,
        ..Default::default()
    };
    let t = |y: u32| format!("/u<john>\t{}\t/u<mary>", meet_text(y));
    use LookupMethod as M;
    let cases = [
        (M::Objects(u("john")?, meet(2010)?), "/u<mary>".to_string()),
        (M::Subjects(meet(2010)?, uo("mary")?), "/u<john>".into()),
        (
            M::PredicatesForSubjectAndObject(u("john")?, uo("mary")?),
            meet_text(2019),
        ),
        (M::PredicatesForSubject(u("john")?), meet_text(2019)),
        (M::PredicatesForObject(uo("mary")?), meet_text(2019)),
        (M::TriplesForSubject(u("john")?), t(2019)),
        (M::TriplesForObject(uo("mary")?), t(2019)),
        (M::Triples, t(2019)),
        (M::TriplesForPredicate(meet(2010)?), t(2010)),
        (
            M::TriplesForSubjectAndPredicate(u("john")?, meet(2010)?),
            t(2010),
        ),
        (
            M::TriplesForPredicateAndObject(meet(2010)?, uo("mary")?),
            t(2010),
        ),
    ];
    for (m, want) in cases {
        let got = texts(&g, m.clone(), lo())?;
        ensure!(got == [want.clone()], "{m:?}: {got:?}, want [{want}]");
    }
    Ok(())
}

/// Scenario 10: `FilterOptions` on F3, and the option errors.
pub fn scenario_10_filters(store: &dyn Store, _bt18: &[FixtureTriple]) -> ScenarioResult {
    let c = clock();
    let ts = setup(store, &c)?;
    let jm = |y: u32| format!("/u<john>\t{}\t/u<mary>", meet_text(y));
    let jb = format!("/u<john>\t{}\t/u<bob>", meet_text(2014));
    let jpp = "/u<john>\t\"parent_of\"@[]\t/u<paul>".to_string();
    let bn = |o: &str| format!("/_<bn>\t\"_predicate\"@[]\t{o}");
    let (m20, m21, hc) = (
        meet_text(2020),
        meet_text(2021),
        "\"height_cm\"@[]".to_string(),
    );
    let f3 = vec![
        jm(2012),
        jm(2013),
        jm(2014),
        jb.clone(),
        jpp.clone(),
        bn(&m20),
        bn(&m21),
        bn(&hc),
    ];
    let g = graph_with(&ts, &f3)?;
    let filt = |op: FilterOperation, field: FilterField| LookupOptions {
        filter_options: Some(FilterOptions {
            operation: op,
            field,
            value: None,
        }),
        ..Default::default()
    };
    let (lat, imm, tem) = (
        FilterOperation::LATEST,
        FilterOperation::IS_IMMUTABLE,
        FilterOperation::IS_TEMPORAL,
    );
    let (fp, fo) = (FilterField::PREDICATE, FilterField::OBJECT);
    let mut between = filt(lat, fp);
    between.lower_anchor = Some(anchor("2012-04-10T04:21:00Z")?);
    between.upper_anchor = Some(anchor("2013-04-10T04:21:00Z")?);
    let bnn = || u("bn").and_then(|_| node("/_<bn>"));
    let po = |t: &str| obj(t);
    let s = |v: &[&str]| -> Vec<String> { v.iter().map(|x| x.to_string()).collect() };
    let (mary, bob, paul) = ("/u<mary>", "/u<bob>", "/u<paul>");
    let (m12, m13, m14) = (meet_text(2012), meet_text(2013), meet_text(2014));
    use LookupMethod as M;
    let cases: Vec<(M, LookupOptions, Vec<String>)> = vec![
        // Objects
        (
            M::Objects(u("john")?, meet(2012)?),
            filt(lat, fp),
            s(&[mary]),
        ),
        (
            M::Objects(u("john")?, meet(2014)?),
            filt(lat, fp),
            s(&[mary, bob]),
        ),
        (
            M::Objects(bnn()?, p("_predicate")?),
            filt(lat, fo),
            vec![m21.clone()],
        ),
        (
            M::Objects(u("john")?, p("parent_of")?),
            filt(imm, fp),
            s(&[paul]),
        ),
        (
            M::Objects(bnn()?, p("_predicate")?),
            filt(imm, fo),
            vec![hc.clone()],
        ),
        (
            M::Objects(u("john")?, p("parent_of")?),
            filt(tem, fp),
            vec![],
        ),
        (
            M::Objects(bnn()?, p("_predicate")?),
            filt(tem, fo),
            vec![m20.clone(), m21.clone()],
        ),
        (
            M::Objects(u("john")?, meet(2013)?),
            between.clone(),
            s(&[mary]),
        ),
        // Subjects
        (
            M::Subjects(meet(2012)?, uo("mary")?),
            filt(lat, fp),
            s(&["/u<john>"]),
        ),
        (
            M::Subjects(meet(2014)?, uo("mary")?),
            filt(lat, fp),
            s(&["/u<john>"]),
        ),
        (
            M::Subjects(p("_predicate")?, po(&m20)?),
            filt(lat, fo),
            s(&["/_<bn>"]),
        ),
        (
            M::Subjects(p("parent_of")?, uo("paul")?),
            filt(imm, fp),
            s(&["/u<john>"]),
        ),
        (
            M::Subjects(p("_predicate")?, po(&hc)?),
            filt(imm, fo),
            s(&["/_<bn>"]),
        ),
        (
            M::Subjects(p("parent_of")?, uo("paul")?),
            filt(tem, fp),
            vec![],
        ),
        (
            M::Subjects(p("_predicate")?, po(&hc)?),
            filt(tem, fo),
            vec![],
        ),
        (
            M::Subjects(meet(2013)?, uo("mary")?),
            between.clone(),
            s(&["/u<john>"]),
        ),
        // PredicatesForSubjectAndObject
        (
            M::PredicatesForSubjectAndObject(u("john")?, uo("mary")?),
            filt(lat, fp),
            vec![m14.clone()],
        ),
        (
            M::PredicatesForSubjectAndObject(bnn()?, po(&m20)?),
            filt(lat, fo),
            s(&["\"_predicate\"@[]"]),
        ),
        (
            M::PredicatesForSubjectAndObject(u("john")?, uo("bob")?),
            filt(imm, fp),
            vec![],
        ),
        (
            M::PredicatesForSubjectAndObject(bnn()?, po(&m20)?),
            filt(imm, fo),
            vec![],
        ),
        (
            M::PredicatesForSubjectAndObject(u("john")?, uo("bob")?),
            filt(tem, fp),
            vec![m14.clone()],
        ),
        (
            M::PredicatesForSubjectAndObject(bnn()?, po(&m20)?),
            filt(tem, fo),
            s(&["\"_predicate\"@[]"]),
        ),
        (
            M::PredicatesForSubjectAndObject(u("john")?, uo("mary")?),
            between.clone(),
            vec![m13.clone()],
        ),
        // PredicatesForSubject
        (
            M::PredicatesForSubject(u("john")?),
            filt(lat, fp),
            vec![m14.clone(), m14.clone()],
        ),
        (
            M::PredicatesForSubject(bnn()?),
            filt(lat, fo),
            s(&["\"_predicate\"@[]"]),
        ),
        (
            M::PredicatesForSubject(u("john")?),
            filt(imm, fp),
            s(&["\"parent_of\"@[]"]),
        ),
        (
            M::PredicatesForSubject(bnn()?),
            filt(imm, fo),
            s(&["\"_predicate\"@[]"]),
        ),
        (
            M::PredicatesForSubject(u("john")?),
            filt(tem, fp),
            vec![m12.clone(), m13.clone(), m14.clone(), m14.clone()],
        ),
        (
            M::PredicatesForSubject(bnn()?),
            filt(tem, fo),
            s(&["\"_predicate\"@[]", "\"_predicate\"@[]"]),
        ),
        (
            M::PredicatesForSubject(u("john")?),
            between.clone(),
            vec![m13.clone()],
        ),
        // PredicatesForObject
        (
            M::PredicatesForObject(uo("mary")?),
            filt(lat, fp),
            vec![m14.clone()],
        ),
        (
            M::PredicatesForObject(po(&m20)?),
            filt(lat, fo),
            s(&["\"_predicate\"@[]"]),
        ),
        (
            M::PredicatesForObject(uo("paul")?),
            filt(imm, fp),
            s(&["\"parent_of\"@[]"]),
        ),
        (
            M::PredicatesForObject(po(&hc)?),
            filt(imm, fo),
            s(&["\"_predicate\"@[]"]),
        ),
        (
            M::PredicatesForObject(uo("bob")?),
            filt(tem, fp),
            vec![m14.clone()],
        ),
        (
            M::PredicatesForObject(po(&m20)?),
            filt(tem, fo),
            s(&["\"_predicate\"@[]"]),
        ),
        (
            M::PredicatesForObject(uo("mary")?),
            between.clone(),
            vec![m13.clone()],
        ),
        // TriplesForSubject
        (
            M::TriplesForSubject(u("john")?),
            filt(lat, fp),
            vec![jm(2014), jb.clone()],
        ),
        (M::TriplesForSubject(bnn()?), filt(lat, fo), vec![bn(&m21)]),
        (
            M::TriplesForSubject(u("john")?),
            filt(imm, fp),
            vec![jpp.clone()],
        ),
        (M::TriplesForSubject(bnn()?), filt(imm, fo), vec![bn(&hc)]),
        (
            M::TriplesForSubject(u("john")?),
            filt(tem, fp),
            vec![jm(2012), jm(2013), jm(2014), jb.clone()],
        ),
        (
            M::TriplesForSubject(bnn()?),
            filt(tem, fo),
            vec![bn(&m20), bn(&m21)],
        ),
        (
            M::TriplesForSubject(u("john")?),
            between.clone(),
            vec![jm(2013)],
        ),
        // TriplesForPredicate
        (
            M::TriplesForPredicate(meet(2012)?),
            filt(lat, fp),
            vec![jm(2012)],
        ),
        (
            M::TriplesForPredicate(meet(2014)?),
            filt(lat, fp),
            vec![jm(2014), jb.clone()],
        ),
        (
            M::TriplesForPredicate(p("_predicate")?),
            filt(lat, fo),
            vec![bn(&m21)],
        ),
        (M::TriplesForPredicate(meet(2014)?), filt(imm, fp), vec![]),
        (
            M::TriplesForPredicate(p("_predicate")?),
            filt(imm, fo),
            vec![bn(&hc)],
        ),
        (
            M::TriplesForPredicate(meet(2014)?),
            filt(tem, fp),
            vec![jm(2014), jb.clone()],
        ),
        (
            M::TriplesForPredicate(p("_predicate")?),
            filt(tem, fo),
            vec![bn(&m20), bn(&m21)],
        ),
        (
            M::TriplesForPredicate(meet(2013)?),
            between.clone(),
            vec![jm(2013)],
        ),
        // TriplesForObject
        (
            M::TriplesForObject(uo("mary")?),
            filt(lat, fp),
            vec![jm(2014)],
        ),
        (
            M::TriplesForObject(po(&m20)?),
            filt(lat, fo),
            vec![bn(&m20)],
        ),
        (M::TriplesForObject(uo("bob")?), filt(imm, fp), vec![]),
        (M::TriplesForObject(po(&hc)?), filt(imm, fo), vec![bn(&hc)]),
        (
            M::TriplesForObject(uo("bob")?),
            filt(tem, fp),
            vec![jb.clone()],
        ),
        (M::TriplesForObject(po(&hc)?), filt(tem, fo), vec![]),
        (
            M::TriplesForObject(uo("mary")?),
            between.clone(),
            vec![jm(2013)],
        ),
        // TriplesForSubjectAndPredicate
        (
            M::TriplesForSubjectAndPredicate(u("john")?, meet(2012)?),
            filt(lat, fp),
            vec![jm(2012)],
        ),
        (
            M::TriplesForSubjectAndPredicate(u("john")?, meet(2014)?),
            filt(lat, fp),
            vec![jm(2014), jb.clone()],
        ),
        (
            M::TriplesForSubjectAndPredicate(bnn()?, p("_predicate")?),
            filt(lat, fo),
            vec![bn(&m21)],
        ),
        (
            M::TriplesForSubjectAndPredicate(u("john")?, meet(2014)?),
            filt(imm, fp),
            vec![],
        ),
        (
            M::TriplesForSubjectAndPredicate(bnn()?, p("_predicate")?),
            filt(imm, fo),
            vec![bn(&hc)],
        ),
        (
            M::TriplesForSubjectAndPredicate(u("john")?, meet(2014)?),
            filt(tem, fp),
            vec![jm(2014), jb.clone()],
        ),
        (
            M::TriplesForSubjectAndPredicate(bnn()?, p("_predicate")?),
            filt(tem, fo),
            vec![bn(&m20), bn(&m21)],
        ),
        (
            M::TriplesForSubjectAndPredicate(u("john")?, meet(2013)?),
            between.clone(),
            vec![jm(2013)],
        ),
        // TriplesForPredicateAndObject
        (
            M::TriplesForPredicateAndObject(meet(2012)?, uo("mary")?),
            filt(lat, fp),
            vec![jm(2012)],
        ),
        (
            M::TriplesForPredicateAndObject(meet(2014)?, uo("mary")?),
            filt(lat, fp),
            vec![jm(2014)],
        ),
        (
            M::TriplesForPredicateAndObject(p("_predicate")?, po(&m20)?),
            filt(lat, fo),
            vec![bn(&m20)],
        ),
        (
            M::TriplesForPredicateAndObject(p("parent_of")?, uo("paul")?),
            filt(imm, fp),
            vec![jpp.clone()],
        ),
        (
            M::TriplesForPredicateAndObject(p("_predicate")?, po(&m20)?),
            filt(imm, fo),
            vec![],
        ),
        (
            M::TriplesForPredicateAndObject(meet(2014)?, uo("mary")?),
            filt(tem, fp),
            vec![jm(2014)],
        ),
        (
            M::TriplesForPredicateAndObject(p("_predicate")?, po(&hc)?),
            filt(tem, fo),
            vec![],
        ),
        (
            M::TriplesForPredicateAndObject(meet(2013)?, uo("mary")?),
            between.clone(),
            vec![jm(2013)],
        ),
        // Triples
        (M::Triples, filt(lat, fp), vec![jm(2014), jb.clone()]),
        (M::Triples, filt(lat, fo), vec![bn(&m21)]),
        (
            M::Triples,
            filt(imm, fp),
            vec![jpp.clone(), bn(&m20), bn(&m21), bn(&hc)],
        ),
        (M::Triples, filt(imm, fo), vec![bn(&hc)]),
        (
            M::Triples,
            filt(tem, fp),
            vec![jm(2012), jm(2013), jm(2014), jb.clone()],
        ),
        (M::Triples, filt(tem, fo), vec![bn(&m20), bn(&m21)]),
        (M::Triples, between.clone(), vec![jm(2013)]),
    ];
    for (m, lo, want) in cases {
        let got = sorted(texts(&g, m.clone(), lo.clone())?);
        let want = sorted(want);
        ensure!(
            got == want,
            "{m:?} {:?}: {got:?}, want {want:?}",
            lo.filter_options
        );
    }
    // Option errors.
    let e = block_on(g.lookup(M::Triples, filt(lat, FilterField::SUBJECT)))
        .err()
        .map(|e| e.to_string());
    ensure!(
        e.as_deref()
            == Some(
                "invalid field \"subject field\" for \"latest\" filter operation, can accept only \"predicate field\" or \"object field\""
            ),
        "{e:?}"
    );
    let e = block_on(g.lookup(M::Triples, filt(FilterOperation(7), fp)))
        .err()
        .map(|e| e.to_string());
    ensure!(
        e.as_deref()
            == Some(
                "filter operation \"not defined filter operation \\\"7\\\"\" not supported in the driver"
            ),
        "{e:?}"
    );
    let mut both = filt(imm, fp);
    both.latest_anchor = true;
    let e = block_on(g.lookup(M::Triples, both)).err();
    ensure!(matches!(e, Some(TriplesError::Options(_))), "{e:?}");
    Ok(())
}

/// Scenario 11: `MaxElements` together with inclusive anchor bounds.
pub fn scenario_11_limit_anchors(store: &dyn Store, _bt18: &[FixtureTriple]) -> ScenarioResult {
    let c = clock();
    let ts = setup(store, &c)?;
    let kissed = |m: u32| format!("/u<bob>\t\"kissed\"@[2015-0{m}-01T00:00:00-09:00]\t/u<mary>");
    let data: Vec<String> = (1..=6).map(kissed).collect();
    let g = graph_with(&ts, &data)?;
    let mut lo = LookupOptions {
        max_elements: 2,
        lower_anchor: Some(anchor("2015-04-01T00:00:00-08:00")?),
        upper_anchor: Some(anchor("2015-06-01T00:00:00-10:00")?),
        ..Default::default()
    };
    let m = LookupMethod::TriplesForObject(uo("mary")?);
    let got = texts(&g, m.clone(), lo.clone())?;
    ensure!(got == [kissed(4), kissed(5)], "{got:?}");
    lo.max_elements = 0;
    let got = texts(&g, m, lo)?;
    ensure!(got == [kissed(4), kissed(5), kissed(6)], "{got:?}");
    Ok(())
}

/// Scenario 12: an anchored query predicate matches its exact anchor plus immutables.
pub fn scenario_12_anchored(store: &dyn Store, bt18: &[FixtureTriple]) -> ScenarioResult {
    let c = clock();
    let ts = setup(store, &c)?;
    let g = bt18_graph(&ts, bt18)?;
    let q = pred("\"foo\"@[1985-01-01T00:01:01.999999Z]")?;
    let found = block_on(g.lookup(
        LookupMethod::TriplesForPredicate(q.clone()),
        LookupOptions::default(),
    ))
    .map_err(err)?;
    ensure!(found.len() == 17, "{} triples", found.len());
    let anchored = found
        .iter()
        .filter(|f| !f.triple.predicate.is_immutable())
        .count();
    ensure!(anchored == 1, "{anchored} anchored");
    Ok(())
}

/// Scenario 15 (last part): a lookup meeting a cell value `garbage` fails naming the row.
pub fn scenario_15_garbage_cell(store: &dyn Store, _bt18: &[FixtureTriple]) -> ScenarioResult {
    use rowkit_codec::model::Mutation;
    use rowkit_codec::triples::keys;
    use rowkit_statemachines::{MutateRowRequest, Request, raw::Unary};
    let c = clock();
    let ts = setup(store, &c)?;
    let g = graph_with(&ts, &[shorthand("a knows b")])?;
    let t = triple(&shorthand("a knows b"))?;
    let row = keys::exist_row_key(b"test", &t);
    let set = Mutation::SetCell {
        family: keys::FAMILY_IMMUTABLE.into(),
        qualifier: b"OS".to_vec(),
        timestamp: Timestamp(1_000),
        value: b"garbage".to_vec(),
    };
    let request = Request::MutateRow(MutateRowRequest {
        table: "badwolf".into(),
        row_key: row.clone(),
        mutations: vec![set],
        ..Default::default()
    });
    rowkit_client::run_blocking(store, &c, Unary::new(request), |_| {})
        .map_err(|e| format!("{e:?}"))?;
    match block_on(g.lookup(LookupMethod::Triples, LookupOptions::default())) {
        Err(TriplesError::LookupParse { row_key, .. }) => {
            ensure!(row_key == row, "LookupParse names another row")
        }
        other => return Err(format!("lookup over garbage: {other:?}")),
    }
    match block_on(g.exist(&t)) {
        Err(TriplesError::LookupParse { .. }) => Ok(()),
        other => Err(format!("Exist over garbage: {other:?}")),
    }
}

// ---- check (spec/check.md §4 and §6) ------------------------------------------------------

use rowkit_codec::escape::escape;

/// Writes `mutations` to `row` of the triple table as they are (as a failed or buggy writer
/// would have left it).
fn raw_write(
    store: &dyn Store,
    clock: &ManualClock,
    row: &[u8],
    mutations: Vec<rowkit_codec::model::Mutation>,
) -> ScenarioResult {
    use rowkit_statemachines::{MutateRowRequest, Request, raw::Unary};
    let request = Request::MutateRow(MutateRowRequest {
        table: "badwolf".into(),
        row_key: row.to_vec(),
        mutations,
        ..Default::default()
    });
    rowkit_client::run_blocking(store, clock, Unary::new(request), |_| {})
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

/// A cell write.
fn set_cell(
    family: &str,
    qualifier: &[u8],
    ts: Timestamp,
    value: &[u8],
) -> rowkit_codec::model::Mutation {
    rowkit_codec::model::Mutation::SetCell {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        timestamp: ts,
        value: value.to_vec(),
    }
}

/// Each finding's (kind, row key), sorted, from a check of the whole table.
type Reported = Vec<(String, String)>;

fn run_check(
    ts: &Ts<'_>,
    options: rowkit_statemachines::check::CheckOptions,
) -> Result<(Reported, rowkit_statemachines::check::CheckSummary), String> {
    use rowkit_statemachines::check::CheckEvent;
    let mut found = Vec::new();
    let summary = block_on(ts.check(None, options, 3_600_000_000, |e| {
        if let CheckEvent::Finding(f) = e {
            found.push((f.kind.to_string(), f.row_key, f.repaired));
        }
    }))
    .map_err(err)?;
    let repaired = found.iter().filter(|f| f.2).count() as u64;
    ensure!(
        summary.repaired == repaired && summary.left == found.len() as u64 - repaired,
        "summary {summary:?} against {} findings, {repaired} repaired",
        found.len()
    );
    let mut reported: Reported = found.into_iter().map(|(k, r, _)| (k, escape(&r))).collect();
    reported.sort();
    Ok((reported, summary))
}

/// A table with one instance of every finding kind of spec/check.md §4 beside clean data,
/// written with raw mutations; returns what a check must report (kind, row key), sorted, and
/// which of those are repairable.
fn corrupt_triple_table(
    store: &dyn Store,
    c: &ManualClock,
) -> Result<(Reported, Reported), String> {
    use rowkit_codec::model::{Mutation, TimestampRange};
    use rowkit_codec::triples::keys::{self, Index};
    let ts = setup(store, c)?;
    let clean: Vec<String> = ["a knows b", "b knows c", "g knows h", "i knows j"]
        .iter()
        .map(|t| shorthand(t))
        .chain([
            "/u<a>\t\"met\"@[2016-01-01T00:00:00-08:00]\t/u<b>".to_string(),
            "/u<a>\t\"met\"@[2017-01-01T00:00:00-08:00]\t/u<b>".to_string(),
        ])
        .collect();
    graph_with(&ts, &clean)?;
    block_on(ts.new_graph(b"empty")).map_err(err)?;
    let cells_of = |graph: &[u8], text: &str| -> Result<_, String> {
        Ok(keys::triple_cells(graph, &triple(text)?))
    };
    let mut expect: Reported = Vec::new();
    let mut repairable: Reported = Vec::new();
    // undecodable_key: a row of the triple families whose key is no layout's.
    raw_write(
        store,
        c,
        b"test:XYZ:junk",
        vec![set_cell(
            keys::FAMILY_IMMUTABLE,
            b"SP",
            Timestamp(1000),
            b"x",
        )],
    )?;
    expect.push(("undecodable_key".into(), "test:XYZ:junk".into()));
    // undecodable_cell: garbage beside a sound cell in a POS row.
    let ab = cells_of(b"test", &shorthand("a knows b"))?;
    raw_write(
        store,
        c,
        &ab[1].row_key,
        vec![set_cell(
            keys::FAMILY_IMMUTABLE,
            b"OS",
            Timestamp(1000),
            b"garbage",
        )],
    )?;
    expect.push(("undecodable_cell".into(), escape(&ab[1].row_key)));
    // cell_mismatch: another triple's text in a SPO row.
    let cd = shorthand("c knows d");
    let cd_ts = keys::cell_timestamp(&triple(&cd)?);
    raw_write(
        store,
        c,
        &ab[3].row_key,
        vec![set_cell(
            keys::FAMILY_IMMUTABLE,
            b"PO",
            cd_ts,
            cd.as_bytes(),
        )],
    )?;
    expect.push(("cell_mismatch".into(), escape(&ab[3].row_key)));
    // wrong_timestamp: a triple's four cells one millisecond off.
    let ef = shorthand("e knows f");
    for cell in cells_of(b"test", &ef)? {
        let wrong = Timestamp(cell.timestamp.0 + 1000);
        raw_write(
            store,
            c,
            &cell.row_key,
            vec![set_cell(cell.family, cell.qualifier, wrong, ef.as_bytes())],
        )?;
        expect.push(("wrong_timestamp".into(), escape(&cell.row_key)));
    }
    // missing_index: one triple lost its POS cell, another its SPO cell (reported by OSP).
    for (text, lost) in [("g knows h", Index::Pos), ("i knows j", Index::Spo)] {
        let cells = cells_of(b"test", &shorthand(text))?;
        let Some(cell) = cells.iter().find(|x| x.index == lost) else {
            return Err("no such index".into());
        };
        raw_write(
            store,
            c,
            &cell.row_key,
            vec![Mutation::DeleteFromColumn {
                family: cell.family.into(),
                qualifier: cell.qualifier.to_vec(),
                range: Some(TimestampRange {
                    start: cell.timestamp.0,
                    end: cell.timestamp.0 + 1000,
                }),
            }],
        )?;
        expect.push(("missing_index".into(), escape(&cell.row_key)));
        repairable.push(("missing_index".into(), escape(&cell.row_key)));
    }
    // graph_without_metadata: the four rows of a triple in a graph that was never created.
    let kl = shorthand("k knows l");
    for cell in cells_of(b"orphan", &kl)? {
        raw_write(
            store,
            c,
            &cell.row_key,
            vec![set_cell(
                cell.family,
                cell.qualifier,
                cell.timestamp,
                kl.as_bytes(),
            )],
        )?;
    }
    expect.push(("graph_without_metadata".into(), "graph:orphan".into()));
    repairable.push(("graph_without_metadata".into(), "graph:orphan".into()));
    // metadata_mismatch: a graph row naming another graph.
    raw_write(
        store,
        c,
        b"graph:bad",
        vec![set_cell(
            keys::FAMILY_GRAPH,
            keys::GRAPH_QUALIFIER,
            keys::GRAPH_CELL_TIMESTAMP,
            b"other",
        )],
    )?;
    expect.push(("metadata_mismatch".into(), "graph:bad".into()));
    expect.sort();
    repairable.sort();
    Ok((expect, repairable))
}

/// Check acceptance (spec/check.md §6): every finding kind reported exactly, `fix` repairs
/// exactly the repairable ones (the repaired triples answer `Exist` again), and a second check
/// reports only the report-only kinds.
pub fn scenario_check_corrupted(store: &dyn Store, _bt18: &[FixtureTriple]) -> ScenarioResult {
    use rowkit_statemachines::check::CheckOptions;
    let c = clock();
    let (expect, repairable) = corrupt_triple_table(store, &c)?;
    let ts = setup(store, &c)?;
    let (reported, summary) = run_check(&ts, CheckOptions::default())?;
    ensure!(
        reported == expect,
        "check reported\n{reported:?}\nexpected\n{expect:?}"
    );
    ensure!(
        summary.repaired == 0,
        "a check without fix repaired {summary:?}"
    );
    let fix = CheckOptions {
        fix: true,
        ..CheckOptions::default()
    };
    let (fixed, summary) = run_check(&ts, fix)?;
    ensure!(fixed == expect, "check --fix reported {fixed:?}");
    ensure!(
        summary.repaired == repairable.len() as u64,
        "repaired {} of {repairable:?}",
        summary.repaired
    );
    let left: Reported = expect
        .iter()
        .filter(|f| !repairable.contains(f))
        .cloned()
        .collect();
    let (after, summary) = run_check(&ts, CheckOptions::default())?;
    ensure!(after == left, "after the fix: {after:?}, expected {left:?}");
    ensure!(
        !summary.findings_by_kind.contains_key("missing_index"),
        "{summary:?}"
    );
    let g = ts.handle(b"test");
    for text in ["g knows h", "i knows j"] {
        ensure!(
            block_on(g.exist(&triple(&shorthand(text))?)).map_err(err)?,
            "{text} not repaired"
        );
    }
    let repaired_graph = block_on(ts.graph(b"orphan")).map_err(err)?;
    ensure!(
        block_on(repaired_graph.exist(&triple(&shorthand("k knows l"))?)).map_err(err)?,
        "orphan graph's triple"
    );
    Ok(())
}

/// The same table checked one row a page with at most one suspect held (the scan waits for it
/// to come due): the same findings; and a check of one graph reports that graph's only.
pub fn scenario_check_paged(store: &dyn Store, _bt18: &[FixtureTriple]) -> ScenarioResult {
    use rowkit_statemachines::check::{CheckEvent, CheckOptions};
    let c = clock();
    let (expect, _) = corrupt_triple_table(store, &c)?;
    let ts = setup(store, &c)?;
    let small = CheckOptions {
        page_rows: 1,
        max_pending: 1,
        ..CheckOptions::default()
    };
    let (reported, summary) = run_check(&ts, small)?;
    ensure!(
        reported == expect,
        "paged check reported\n{reported:?}\nexpected\n{expect:?}"
    );
    let rows = all_rows(store, &c)?.len() as u64;
    ensure!(
        summary.rows_scanned == rows,
        "scanned {} of {rows} rows",
        summary.rows_scanned
    );
    let mut one = Vec::new();
    block_on(ts.check(
        Some(b"orphan"),
        CheckOptions::default(),
        3_600_000_000,
        |e| {
            if let CheckEvent::Finding(f) = e {
                one.push((f.kind.to_string(), escape(&f.row_key)));
            }
        },
    ))
    .map_err(err)?;
    ensure!(
        one == vec![(
            "graph_without_metadata".to_string(),
            "graph:orphan".to_string()
        )],
        "check of graph orphan: {one:?}"
    );
    Ok(())
}
