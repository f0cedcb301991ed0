//! The object-metadata half of the live migration: a v0 bucket of `objects` objects loaded
//! through `putObject`, writers over the whole bucket, and the final comparison.
//!
//! Keys are `obj/NNNNNN` for `0 ≤ N < objects`. Every tenth (`N % 10 == 0`) is a **versioned**
//! key: loaded and written with `{"versioning": true}` (a new version each, master = latest),
//! and its writes delete non-latest versions by id. The others are plain keys: overwritten by
//! non-versioned puts and deleted (master gone), then put again. Writer `w` of `W` owns the
//! keys whose group `N / 10` is `w` modulo `W`: the groups interleave over the whole key range,
//! and since one writer writes a key one write at a time, the last acknowledged write decides
//! the key's final state — the expected state needs no reading of the store.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rowkit_client::objmeta::ObjectMetadata;
use rowkit_client::{Driver, POOL_WORKERS, PoolDriver, SyncDriver, block_on, read_rows_blocking};
use rowkit_codec::model::{RowRange, RowSet};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{
    METASTORE, VFormat, collection_end, collection_for_bucket, collection_start, row_key,
};
use rowkit_codec::objmeta::listing::{ListingParams, ListingType};
use rowkit_codec::objmeta::migration::marker::{
    CHECKPOINT_COLUMN, Gates, MARKER_COLUMN, MIN_SETTLE_US,
};
use rowkit_codec::objmeta::migration::sync::SYNC_QUALIFIER;
use rowkit_statemachines::check::{CheckEvent, CheckOptions};
use rowkit_statemachines::objmeta::migrate::pass::MigrateEvent;
use rowkit_statemachines::objmeta::migrate::run::{MigrateEnd, MigrateOptions, MigrateOutcome};
use rowkit_statemachines::objmeta::{ObjmetaConfig, ObjmetaError, ObjmetaEvent, ObjmetaState};
use rowkit_statemachines::{ReadRowsRequest, SplitMix64};
use rowkit_store::Store;
use rowkit_store::driver::{Clock, ManualClock, SystemClock};

use super::{MigrateProgress, StoreFactory, Workload};

/// One writer's facade: its own connection, its own `ObjmetaState` (vFormat cache, version-id
/// generator), on the system clock.
pub type Client = ObjectMetadata<SyncDriver<Arc<dyn Store>, Arc<SystemClock>>>;

/// The table every client uses: the CLI's default (`rowkit s3 --table`).
pub const TABLE: &str = "objmeta";

/// A key's state as the acknowledgements say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct KeyState {
    /// The master's `tag` (`None`: no object).
    master: Option<String>,
    /// Versioned keys: version id → `tag`.
    versions: BTreeMap<String, String>,
    /// The version the master is (versioned keys).
    latest: Option<String>,
    /// Versions deleted by id: `getObject` must not find them.
    deleted: Vec<String>,
    /// Written after the load.
    touched: bool,
}

/// The writers of one bucket, and the expected state of each of its keys.
pub struct ObjmetaWorkload {
    stores: StoreFactory,
    bucket: String,
    objects: usize,
    expected: Mutex<Vec<KeyState>>,
    tags: AtomicU64,
}

/// The key of object `n`.
pub fn object_key(n: usize) -> String {
    format!("obj/{n:06}")
}

fn is_versioned(n: usize) -> bool {
    n.is_multiple_of(10)
}

fn doc(key: &str, tag: &str) -> Json {
    Json::Object(
        [
            ("key".to_string(), Json::str(key)),
            ("tag".to_string(), Json::str(tag)),
        ]
        .into_iter()
        .collect(),
    )
}

fn versioning() -> Json {
    Json::Object(
        [("versioning".to_string(), Json::Bool(true))]
            .into_iter()
            .collect(),
    )
}

fn version_param(vid: &str) -> Json {
    Json::Object(
        [("versionId".to_string(), Json::str(vid))]
            .into_iter()
            .collect(),
    )
}

/// A stored document's `tag`.
fn tag_of(value: &Json) -> Option<String> {
    value.get("tag").and_then(Json::as_str).map(String::from)
}

/// What [`ObjmetaWorkload::verify`] compared.
#[derive(Clone, Copy, Debug, Default)]
pub struct Verified {
    /// Objects listed (masters).
    pub listed: usize,
    /// Versions listed (versioned keys).
    pub versions: usize,
    /// `getObject` calls compared.
    pub gets: usize,
    /// Rows of the bucket's collection.
    pub rows: usize,
    /// Rows the check scanned.
    pub checked_rows: u64,
}

impl ObjmetaWorkload {
    /// A workload over bucket `bucket` of `objects` objects on the stores `stores` opens.
    pub fn new(stores: StoreFactory, bucket: &str, objects: usize) -> ObjmetaWorkload {
        ObjmetaWorkload {
            stores,
            bucket: bucket.to_string(),
            objects,
            expected: Mutex::new(vec![KeyState::default(); objects]),
            tags: AtomicU64::new(0),
        }
    }

    /// Objects in the bucket.
    pub fn objects(&self) -> usize {
        self.objects
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// A facade of process `pid`, creating buckets in `format`: an *unaware* one, as the
    /// original application's processes are (its vFormat cached until it is dropped, no
    /// mirror, no pause: `docs/migration.md` §6.1), so the gates must wait for its writers.
    pub fn facade(&self, pid: u64, format: VFormat) -> Client {
        let state = ObjmetaState::new(ObjmetaConfig {
            table: TABLE.to_string(),
            pid,
            default_bucket_key_format: format,
            ..ObjmetaConfig::default()
        });
        ObjectMetadata::unaware(
            SyncDriver::new((self.stores)(), Arc::new(SystemClock)),
            state,
        )
    }

    fn expected(&self) -> MutexGuard<'_, Vec<KeyState>> {
        self.expected.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn next_tag(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.tags.fetch_add(1, Ordering::SeqCst))
    }

    /// Creates the table and a v0 bucket, then puts every object through `putObject` from
    /// `threads` loader processes (object `n` by loader `n % threads`), versioned keys with one
    /// version each. The bucket's rows are those the protocol writes, byte for byte.
    pub fn load(&self, threads: usize) -> Result<(), String> {
        let admin = self.facade(1, VFormat::V0);
        block_on(admin.setup()).map_err(|e| format!("setup: {e}"))?;
        // A BucketInfo with its `uid`, which the migration marker names (§2.2).
        let md = Json::Object(
            [
                ("name".to_string(), Json::str(self.bucket.clone())),
                (
                    "uid".to_string(),
                    Json::str(rowkit_statemachines::objmeta::uuid_v4(36)),
                ),
            ]
            .into_iter()
            .collect(),
        );
        let vf = block_on(admin.create_bucket(&self.bucket, &md))
            .map_err(|e| format!("createBucket: {e}"))?;
        if vf != VFormat::V0 {
            return Err(format!("createBucket wrote {vf:?}, not v0"));
        }
        std::thread::scope(|s| {
            let loaders: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || {
                        let client = self.facade(100 + t as u64, VFormat::V0);
                        for n in (t..self.objects).step_by(threads) {
                            self.put(&client, n, "L", false)?;
                        }
                        Ok::<(), String>(())
                    })
                })
                .collect();
            loaders
                .into_iter()
                .try_for_each(|l| l.join().unwrap_or_else(|_| Err("a loader panicked".into())))
        })
    }

    /// Puts object `n` (a new version if it is versioned) and records it.
    fn put(&self, client: &Client, n: usize, prefix: &str, touched: bool) -> Result<(), String> {
        let key = object_key(n);
        let tag = self.next_tag(prefix);
        let params = is_versioned(n).then(versioning);
        let out =
            block_on(client.put_object(&self.bucket, &key, &doc(&key, &tag), params.as_ref()))
                .map_err(|e| format!("putObject {key}: {e}"))?;
        let mut expected = self.expected();
        let state = &mut expected[n];
        if is_versioned(n) {
            let vid = out
                .version_id
                .ok_or(format!("putObject {key}: no version id"))?;
            state.versions.insert(vid.clone(), tag.clone());
            state.latest = Some(vid);
        }
        state.master = Some(tag);
        state.touched |= touched;
        Ok(())
    }

    /// Reads everything back and compares it with the acknowledged writes, after a migration
    /// to v1 ended: the bucket is v1; the check finds nothing; every row of the collection is
    /// a v1 row without `f:rowkitSync`; the metastore row has no marker and no checkpoint;
    /// `listObject` (masters, and versions of the versioned keys) lists exactly the expected
    /// objects; `getObject` returns every written key's state and every 97th untouched one's.
    pub fn verify(&self) -> Result<Verified, String> {
        let om = self.facade(9_999, VFormat::V1);
        let mut done = Verified::default();
        let vf = block_on(om.get_bucket_vformat(&self.bucket))
            .map_err(|e| format!("getBucketVFormat: {e}"))?;
        if vf != VFormat::V1 {
            return Err(format!("the bucket is {vf:?} after the migration"));
        }
        let mut findings = Vec::new();
        let summary = block_on(om.check(
            Some(&self.bucket),
            CheckOptions::default(),
            3_600_000_000,
            |e| {
                if let CheckEvent::Finding(f) = e {
                    findings.push(format!("{}: {}", f.kind, f.detail));
                }
            },
        ))
        .map_err(|e| format!("check: {e:?}"))?;
        if !findings.is_empty() || summary.left > 0 {
            return Err(format!(
                "check found {} ({:?}): {:?}",
                summary.left,
                summary.findings_by_kind,
                &findings[..findings.len().min(10)]
            ));
        }
        done.checked_rows = summary.rows_scanned;
        done.rows = self.verify_rows(&om)?;

        let expected = self.expected().clone();
        let mut wrong = Vec::new();
        let masters = self.list_masters(&om)?;
        let want: BTreeMap<String, String> = expected
            .iter()
            .enumerate()
            .filter_map(|(n, s)| Some((object_key(n), s.master.clone()?)))
            .collect();
        diff("listObject", &want, &masters, &mut wrong);
        done.listed = masters.len();
        let versions = self.list_versions(&om)?;
        let want: BTreeMap<String, String> = expected
            .iter()
            .enumerate()
            .filter(|(n, _)| is_versioned(*n))
            .flat_map(|(n, s)| {
                s.versions
                    .iter()
                    .map(move |(v, t)| (format!("{}@{v}", object_key(n)), t.clone()))
            })
            .collect();
        diff("listObject versions", &want, &versions, &mut wrong);
        done.versions = versions.len();

        for (n, state) in expected.iter().enumerate() {
            if !state.touched && !n.is_multiple_of(97) {
                continue;
            }
            let key = object_key(n);
            let mut gets = vec![(None, state.master.clone())];
            gets.extend(
                state
                    .versions
                    .iter()
                    .map(|(v, t)| (Some(v.as_str()), Some(t.clone()))),
            );
            gets.extend(state.deleted.iter().map(|v| (Some(v.as_str()), None)));
            for (vid, want) in gets {
                let got = match block_on(om.get_object(&self.bucket, &key, vid)) {
                    Ok(v) => tag_of(&v),
                    Err(ObjmetaError::NoSuchKey) => None,
                    Err(e) => return Err(format!("getObject {key} {vid:?}: {e}")),
                };
                done.gets += 1;
                if got != want {
                    wrong.push(format!(
                        "getObject {key} {vid:?}: {got:?}, expected {want:?}"
                    ));
                }
            }
        }
        if wrong.is_empty() {
            Ok(done)
        } else {
            Err(format!(
                "{} differences, first: {:#?}",
                wrong.len(),
                &wrong[..wrong.len().min(10)]
            ))
        }
    }

    /// Every row of the bucket's collection is a v1 row without a stamp, and the metastore row
    /// has neither marker nor checkpoint; the number of rows.
    fn verify_rows(&self, om: &Client) -> Result<usize, String> {
        let store = om.driver().store();
        let collection = collection_for_bucket(&self.bucket);
        let read = |rows: RowSet| {
            let req = ReadRowsRequest {
                table: TABLE.to_string(),
                rows,
                ..Default::default()
            };
            read_rows_blocking(store, req, om.driver().now())
                .map_err(|e| format!("ReadRows: {e:?}"))
        };
        let rows = read(RowSet::range(RowRange::half_open(
            collection_start(collection),
            collection_end(collection),
        )))?;
        let prefix = collection_start(collection).len();
        for row in &rows {
            let arsenal_key = &row.key[prefix.min(row.key.len())..];
            if !(arsenal_key.starts_with(b"\x7fM") || arsenal_key.starts_with(b"\x7fV")) {
                return Err(format!(
                    "a row that is not v1 is left: {:?}",
                    String::from_utf8_lossy(&row.key)
                ));
            }
            if row
                .cells
                .iter()
                .any(|c| c.qualifier == SYNC_QUALIFIER.as_bytes())
            {
                return Err(format!(
                    "f:{SYNC_QUALIFIER} is left on {:?}",
                    String::from_utf8_lossy(&row.key)
                ));
            }
        }
        let ms = read(RowSet::key(row_key(METASTORE, &self.bucket)))?;
        for row in &ms {
            for column in [MARKER_COLUMN, CHECKPOINT_COLUMN] {
                if row.cells.iter().any(|c| c.qualifier == column.as_bytes()) {
                    return Err(format!("d:{column} is left on the metastore row"));
                }
            }
        }
        if ms.len() != 1 {
            return Err(format!("{} metastore rows for the bucket", ms.len()));
        }
        Ok(rows.len())
    }

    /// `listObject` DelimiterMaster, page by page: key → tag.
    fn list_masters(&self, om: &Client) -> Result<BTreeMap<String, String>, String> {
        let mut got = BTreeMap::new();
        let mut params = ListingParams {
            listing_type: ListingType::DelimiterMaster,
            ..ListingParams::default()
        };
        loop {
            let page = block_on(om.list_object(&self.bucket, &params))
                .map_err(|e| format!("listObject: {e}"))?;
            let entries = entries(&page, "Contents")?;
            for (key, _, tag) in &entries {
                got.insert(key.clone(), tag.clone());
            }
            if page.get("IsTruncated") != Some(&Json::Bool(true)) {
                return Ok(got);
            }
            params.marker = Some(entries.last().ok_or("a truncated empty page")?.0.clone());
        }
    }

    /// `listObject` DelimiterVersions, page by page: `key@versionId` → tag, versioned keys only.
    fn list_versions(&self, om: &Client) -> Result<BTreeMap<String, String>, String> {
        let mut got = BTreeMap::new();
        let mut params = ListingParams {
            listing_type: ListingType::DelimiterVersions,
            ..ListingParams::default()
        };
        loop {
            let page = block_on(om.list_object(&self.bucket, &params))
                .map_err(|e| format!("listObject versions: {e}"))?;
            for (key, vid, tag) in entries(&page, "Versions")? {
                let n: Option<usize> = key.strip_prefix("obj/").and_then(|n| n.parse().ok());
                if n.is_none_or(is_versioned) {
                    got.insert(format!("{key}@{}", vid.unwrap_or_default()), tag);
                }
            }
            if page.get("IsTruncated") != Some(&Json::Bool(true)) {
                return Ok(got);
            }
            let marker = |name: &str| page.get(name).and_then(Json::as_str).map(String::from);
            params.key_marker = marker("NextKeyMarker");
            params.version_id_marker = marker("NextVersionIdMarker");
            if params.key_marker.is_none() {
                return Err("a truncated versions page without NextKeyMarker".into());
            }
        }
    }
}

/// A listing page's entries: (key, versionId, tag of the value).
fn entries(page: &Json, member: &str) -> Result<Vec<(String, Option<String>, String)>, String> {
    let Some(Json::Array(items)) = page.get(member) else {
        return Err(format!("listObject: no {member}"));
    };
    items
        .iter()
        .map(|e| {
            let key = e
                .get("key")
                .and_then(Json::as_str)
                .ok_or("an entry without key")?;
            let vid = e.get("versionId").and_then(Json::as_str).map(String::from);
            let value = e
                .get("value")
                .and_then(Json::as_str)
                .ok_or("an entry without value")?;
            let tag = Json::parse(value)
                .ok()
                .as_ref()
                .and_then(tag_of)
                .unwrap_or_default();
            Ok((key.to_string(), vid, tag))
        })
        .collect()
}

/// Adds a line to `wrong` per key whose value differs between `want` and `got`.
fn diff(
    what: &str,
    want: &BTreeMap<String, String>,
    got: &BTreeMap<String, String>,
    wrong: &mut Vec<String>,
) {
    for (k, w) in want {
        match got.get(k) {
            Some(g) if g == w => {}
            g => wrong.push(format!("{what} {k}: {g:?}, expected {w:?}")),
        }
    }
    for k in got.keys().filter(|k| !want.contains_key(*k)) {
        wrong.push(format!("{what} {k}: listed, expected absent"));
    }
}

impl Workload for ObjmetaWorkload {
    type Client = Client;

    fn client(&self, writer: usize, phase: u32) -> Client {
        self.facade(10_000 + 100 * u64::from(phase) + writer as u64, VFormat::V1)
    }

    fn write_once(
        &self,
        client: &Client,
        writer: usize,
        writers: usize,
        rng: &mut SplitMix64,
    ) -> Result<(), String> {
        let groups = self.objects.div_ceil(10);
        if writer >= groups {
            return Err(format!("{writers} writers for {groups} key groups"));
        }
        let mine = (groups - writer).div_ceil(writers) as u64;
        let n = ((writer as u64 + writers as u64 * rng.below(mine)) * 10 + rng.below(10)) as usize;
        let n = n.min(self.objects - 1);
        let prefix = format!("w{writer}.");
        let roll = rng.below(10);
        let (master, deletable) = {
            let expected = self.expected();
            let s = &expected[n];
            let deletable: Vec<String> = s
                .versions
                .keys()
                .filter(|v| Some(*v) != s.latest.as_ref())
                .cloned()
                .collect();
            (s.master.is_some(), deletable)
        };
        if is_versioned(n) && roll >= 6 && !deletable.is_empty() {
            // A non-latest version deleted by id: the master stays.
            let vid = &deletable[rng.below(deletable.len() as u64) as usize];
            let key = object_key(n);
            block_on(client.delete_object(&self.bucket, &key, Some(&version_param(vid)), None))
                .map_err(|e| format!("deleteObject {key} {vid}: {e}"))?;
            let mut expected = self.expected();
            expected[n].versions.remove(vid);
            expected[n].deleted.push(vid.clone());
            expected[n].touched = true;
            return Ok(());
        }
        if !is_versioned(n) && roll >= 7 && master {
            let key = object_key(n);
            block_on(client.delete_object(&self.bucket, &key, None, None))
                .map_err(|e| format!("deleteObject {key}: {e}"))?;
            let mut expected = self.expected();
            expected[n].master = None;
            expected[n].touched = true;
            return Ok(());
        }
        self.put(client, n, &prefix, true)
    }
}

/// The migrator `rowkit s3 migrate` runs (`ObjectMetadata::migrate_bucket`, the CLI's options,
/// over the CLI's driver: a `PoolDriver` of `POOL_WORKERS` threads) in this process, on a
/// manual clock that starts at the system time and jumps over the settle waits (as the CLI's
/// `--now`): unaware writers are stopped at the `--switch` gate and the others write only `to`
/// rows, so waiting `Δ` would protect nothing here. Each run has a fresh facade, as each
/// `rowkit s3 migrate` is a new process.
pub struct InProcessMigrator {
    store: Arc<dyn Store>,
    clock: ManualClock,
    /// The driver's worker threads; `None`: the sync driver, one request at a time.
    workers: Option<usize>,
}

impl InProcessMigrator {
    /// A migrator of `workload`'s bucket over its store.
    pub fn new(workload: &ObjmetaWorkload) -> InProcessMigrator {
        InProcessMigrator {
            store: (workload.stores)(),
            clock: ManualClock::new(SystemClock.now()),
            workers: Some(POOL_WORKERS),
        }
    }

    /// This migrator on a pool of `workers` threads (the CLI's `--max-inflight N`), or with
    /// `None` on the sync driver, its requests served one at a time (the CLI's driver before
    /// the pool; the migration bench's comparison).
    pub fn with_workers(self, workers: Option<usize>) -> InProcessMigrator {
        InProcessMigrator { workers, ..self }
    }

    /// A fresh facade over `driver`.
    fn facade<D: Driver>(driver: D) -> ObjectMetadata<D> {
        let state = ObjmetaState::new(ObjmetaConfig {
            table: TABLE.to_string(),
            pid: 2,
            ..ObjmetaConfig::default()
        });
        ObjectMetadata::new(driver, state)
    }

    /// One run to v1 as far as `gates` allow, with the minimum settle time; where it ended
    /// (`verifying`, `switched`, `removed`, …, as the CLI's `state`) and the outcome.
    pub fn run(
        &self,
        bucket: &str,
        gates: Gates,
        mut on_progress: impl FnMut(MigrateProgress<'_>),
    ) -> Result<(String, MigrateOutcome), String> {
        let options = MigrateOptions {
            gates,
            settle_us: Some(MIN_SETTLE_US),
            owner: "live-migration-test:2".into(),
            ..MigrateOptions::default()
        };
        let mut on_event = |e| match e {
            ObjmetaEvent::Migrate(MigrateEvent::Progress(p)) => on_progress(MigrateProgress {
                state: p.state.as_str(),
                pass: p.pass,
                rows_scanned: p.counters.rows_scanned,
            }),
            ObjmetaEvent::Migrate(MigrateEvent::StateChanged { to: Some(to), .. }) => {
                on_progress(MigrateProgress::state_changed(to))
            }
            _ => {}
        };
        let (store, clock) = (&*self.store, &self.clock);
        let outcome = match self.workers {
            None => migrate_on(
                &Self::facade(SyncDriver::new(store, clock)),
                bucket,
                options,
                &mut on_event,
            ),
            Some(n) => PoolDriver::scope(store, clock, n, |driver| {
                migrate_on(&Self::facade(driver), bucket, options, &mut on_event)
            }),
        }?;
        let end = match outcome.end {
            MigrateEnd::Already => "already",
            MigrateEnd::InState(s) => s.as_str(),
            MigrateEnd::Removed => "removed",
        };
        Ok((end.to_string(), outcome))
    }
}

/// `om.migrate_bucket` to v1 with `options`, for a day at most.
fn migrate_on<D: Driver>(
    om: &ObjectMetadata<D>,
    bucket: &str,
    options: MigrateOptions,
    on_event: &mut dyn FnMut(ObjmetaEvent),
) -> Result<MigrateOutcome, String> {
    block_on(om.migrate_bucket(bucket, VFormat::V1, options, 86_400_000_000, on_event))
        .map_err(|e| format!("migrate_bucket: {e}"))
}
