//! The object operations of `objmeta.md` 7–9 as flows: put (five strategies), get, delete,
//! the delayed placeholder repair, `getObjects` and `getBucketAndObject`.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{Mutation, Row, RowSet};
use rowkit_codec::objmeta::cells::{escape_tags, filters, replace, replace_text, unescape_tags};
use rowkit_codec::objmeta::json::{Json, JsonObject};
use rowkit_codec::objmeta::keys::{
    METASTORE, VFormat, collection_for_bucket, master_key, row_key, version_key,
};

use super::requests::{
    BucketVFormat, Cas, Edit, InternalDelete, LatestVersion, Merge, OmIo, P, Read, ReadDoc, Write,
    delete_event, doc_of, put_event, put_event_text,
};
use super::{
    AsyncRepair, DEFAULT_DEADLINE_US, DeleteObject, GetBucketAndObject, GetObject, GetObjects,
    ORIGIN_OP_DELETE, ObjmetaConfig, ObjmetaError, ObjmetaEvent, ObjmetaSchema, ObjmetaState,
    PutObject, REPAIR_DELAY_US, RepairTask, SEED_SALT, start,
};
use crate::Timestamp;
use crate::operation::{Budget, ContextArg, Flow, Operation};
use crate::ready;

fn version_result(vid: &str) -> String {
    alloc::format!("{{\"versionId\": \"{vid}\"}}")
}

/// A version id given as params: a string as it is, anything else as its JSON text.
fn version_id_text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.stringify(),
    }
}

/// Where an object lives once its bucket's vFormat is known.
#[derive(Debug)]
struct Target {
    coll: String,
    vf: VFormat,
    key: String,
    /// The master's Arsenal key and row key.
    mk: String,
    m_row: Vec<u8>,
}

impl Target {
    fn new(bucket: &str, key: &str, vf: VFormat) -> Target {
        let coll = collection_for_bucket(bucket).to_string();
        let mk = master_key(vf, key);
        let m_row = row_key(&coll, &mk);
        Target {
            coll,
            vf,
            key: key.to_string(),
            mk,
            m_row,
        }
    }

    /// Arsenal key and row key of version `vid`.
    fn version(&self, vid: &str) -> (String, Vec<u8>) {
        let vk = version_key(self.vf, &self.key, vid);
        let row = row_key(&self.coll, &vk);
        (vk, row)
    }
}

/// How a put writes, decided from its params (`objmeta.md` 7).
#[derive(Debug)]
enum Strategy {
    /// No params, or none of the cases below: replace the master.
    NoVersion,
    /// Case 2, `versionId: ""`: a new id on the null master.
    NullVersion,
    /// Case 3 (`repair` false) or 4 (`repairMaster`): the version `versionId` given.
    Explicit { version_id: String, repair: bool },
    /// Case 1, `versioning`: a new version, then the master if it is not newer.
    Versioning,
    /// `needOplogUpdate`: replace the master under its hash, with a delete-then-put oplog.
    OplogUpdate { origin: Option<Json> },
}

impl Strategy {
    fn of(params: Option<&Json>) -> Strategy {
        let Some(params) = params.filter(|p| **p != Json::Null) else {
            return Strategy::NoVersion;
        };
        let version_id = params.get("versionId");
        if version_id == Some(&Json::str("")) {
            return Strategy::NullVersion;
        }
        if let Some(v) = version_id.filter(|v| v.truthy()) {
            return Strategy::Explicit {
                version_id: version_id_text(v),
                repair: params.member_truthy("repairMaster"),
            };
        }
        if params.member_truthy("versioning") {
            return Strategy::Versioning;
        }
        if params.member_truthy("needOplogUpdate") {
            return Strategy::OplogUpdate {
                origin: params.get("originOp").cloned(),
            };
        }
        Strategy::NoVersion
    }
}

/// The flow of [`PutObject`]: the bucket's vFormat, then one of the five strategies.
#[derive(Debug)]
pub struct PutObjectFlow {
    bucket: String,
    key: String,
    phase: PutPhase,
}

#[derive(Debug)]
enum PutPhase {
    VFormat {
        lookup: BucketVFormat,
        value: Json,
        strategy: Strategy,
    },
    /// No version, or the null version: one replace of the master (`text`: the value's JSON
    /// text, for the change event).
    Master {
        write: Write,
        t: Target,
        text: String,
        output: Option<String>,
    },
    Versioned(Versioned),
    Explicit(Explicit),
    RepairMaster(RepairMaster),
    Oplog(Oplog),
    Done,
}

impl<'a> PutObject<'a> {
    /// `putObject(bucket, key, value, params)` → `{"versionId": "…"}` or `None`; `value` must be
    /// a JSON object.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        key: &str,
        mut value: Json,
        params: Option<Json>,
        deadline: Option<Timestamp>,
        now: Timestamp,
        seed: u64,
    ) -> PutObject<'a> {
        if value.as_object().is_none() {
            let error = ObjmetaError::internal("object metadata is not a JSON object");
            return Operation::failed(ctx.into(), error);
        }
        escape_tags(&mut value);
        let strategy = Strategy::of(params.as_ref());
        let flow = PutObjectFlow {
            bucket: bucket.to_string(),
            key: key.to_string(),
            phase: PutPhase::VFormat {
                lookup: BucketVFormat::Start,
                value,
                strategy,
            },
        };
        start(ctx, flow, deadline, now, seed)
    }
}

impl PutObjectFlow {
    /// The first phase of `strategy`, its first request sent.
    fn begin(
        &self,
        io: &mut OmIo,
        st: &mut ObjmetaState,
        t: Target,
        mut value: Json,
        strategy: Strategy,
    ) -> Result<PutPhase, ObjmetaError> {
        let is_dm = value.member_truthy("isDeleteMarker");
        Ok(match strategy {
            Strategy::NoVersion => {
                let text = value.stringify();
                let rep = replace_text(&value, &text, None);
                PutPhase::Master {
                    write: Write::start(io, st, t.m_row.clone(), rep)?,
                    t,
                    text,
                    output: None,
                }
            }
            Strategy::NullVersion => {
                let vid = st.generate_version_id(io.now());
                set_version_id(&mut value, &vid);
                let text = value.stringify();
                let rep = replace_text(&value, &text, None);
                PutPhase::Master {
                    write: Write::start(io, st, t.m_row.clone(), rep)?,
                    t,
                    text,
                    output: Some(version_result(&vid)),
                }
            }
            Strategy::Explicit {
                version_id,
                repair: true,
            } => PutPhase::RepairMaster(RepairMaster::start(io, st, t, version_id, value)?),
            Strategy::Explicit {
                version_id,
                repair: false,
            } => PutPhase::Explicit(Explicit::start(io, st, t, version_id, value, is_dm)?),
            Strategy::Versioning => PutPhase::Versioned(Versioned::start(io, st, t, value, is_dm)?),
            Strategy::OplogUpdate { origin } => {
                PutPhase::Oplog(Oplog::start(io, st, t, value, origin)?)
            }
        })
    }
}

fn set_version_id(value: &mut Json, vid: &str) {
    if let Some(o) = value.as_object_mut() {
        o.set("versionId", Json::str(vid));
    }
}

impl Flow for PutObjectFlow {
    type Schema = ObjmetaSchema;
    type Output = Option<String>;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Option<String>> {
        loop {
            match core::mem::replace(&mut self.phase, PutPhase::Done) {
                PutPhase::VFormat {
                    mut lookup,
                    value,
                    strategy,
                } => {
                    let vf = ready!(lookup.poll(io, st, &self.bucket),
                        self.phase => PutPhase::VFormat { lookup, value, strategy });
                    let t = Target::new(&self.bucket, &self.key, vf);
                    self.phase = self.begin(io, st, t, value, strategy)?;
                }
                PutPhase::Master {
                    write,
                    t,
                    text,
                    output,
                } => {
                    let r = ready!(write.poll(io),
                        self.phase => PutPhase::Master { write, t, text, output });
                    r.map_err(ObjmetaError::internal)?;
                    put_event_text(io, &t.coll, &t.mk, text);
                    return Ok(Some(output));
                }
                PutPhase::Versioned(mut v) => {
                    return Ok(Some(ready!(v.poll(io, st),
                        self.phase => PutPhase::Versioned(v))));
                }
                PutPhase::Explicit(mut e) => {
                    return Ok(Some(ready!(e.poll(io, st),
                        self.phase => PutPhase::Explicit(e))));
                }
                PutPhase::RepairMaster(mut r) => {
                    return Ok(Some(ready!(r.poll(io, st),
                        self.phase => PutPhase::RepairMaster(r))));
                }
                PutPhase::Oplog(mut o) => {
                    return Ok(Some(
                        ready!(o.poll(io, st), self.phase => PutPhase::Oplog(o)),
                    ));
                }
                PutPhase::Done => return Ok(None),
            }
        }
    }
}

/// Case 1 (`versioning`): insert a new version (a second id if the first collides), then
/// replace the master unless it holds a newer version (a v1 delete marker drops the master
/// instead).
#[derive(Debug)]
struct Versioned {
    t: Target,
    value: Json,
    /// The value's JSON text and its `REPLACE` mutations, made once per version id: the
    /// version, the master and both change events carry the same document.
    text: String,
    rep: Vec<Mutation>,
    is_dm: bool,
    /// 0, or 1 for the retry after a collision.
    attempt: u32,
    vid: String,
    phase: VersionedPhase,
}

#[derive(Debug)]
enum VersionedPhase {
    /// The version inserted if absent (`vk` its Arsenal key).
    Version {
        vk: String,
        cas: Cas,
    },
    /// A v1 delete marker: the master dropped unless newer.
    DropMaster(Cas),
    /// The master replaced unless newer.
    Master {
        inserted: bool,
        cas: Cas,
    },
    Done,
}

impl Versioned {
    fn start(
        io: &mut OmIo,
        st: &mut ObjmetaState,
        t: Target,
        value: Json,
        is_dm: bool,
    ) -> Result<Versioned, ObjmetaError> {
        let mut v = Versioned {
            t,
            value,
            text: String::new(),
            rep: Vec::new(),
            is_dm,
            attempt: 0,
            vid: String::new(),
            phase: VersionedPhase::Done,
        };
        v.phase = v.insert(io, st)?;
        Ok(v)
    }

    /// A new id, and the version written with it.
    fn insert(
        &mut self,
        io: &mut OmIo,
        st: &mut ObjmetaState,
    ) -> Result<VersionedPhase, ObjmetaError> {
        self.vid = st.generate_version_id(io.now());
        set_version_id(&mut self.value, &self.vid);
        let (vk, v_row) = self.t.version(&self.vid);
        self.text = self.value.stringify();
        self.rep = replace_text(&self.value, &self.text, None);
        let rep = self.rep.clone();
        let cas = Cas::start(io, st, v_row, filters::exists(), rep.clone(), rep)?;
        Ok(VersionedPhase::Version { vk, cas })
    }

    fn poll(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Option<String>> {
        let internal = ObjmetaError::internal;
        loop {
            match core::mem::replace(&mut self.phase, VersionedPhase::Done) {
                VersionedPhase::Version { vk, cas } => {
                    let matched = ready!(cas.poll(io),
                        self.phase => VersionedPhase::Version { vk, cas });
                    let inserted = !matched.map_err(internal)?;
                    put_event_text(io, &self.t.coll, &vk, self.text.clone());
                    let m_row = self.t.m_row.clone();
                    let vid_le = filters::vid_le(&self.vid);
                    self.phase = if self.t.vf == VFormat::V1 && self.is_dm {
                        let drop = vec![Mutation::DeleteFromRow];
                        VersionedPhase::DropMaster(Cas::start(io, st, m_row, vid_le, vec![], drop)?)
                    } else {
                        let rep = core::mem::take(&mut self.rep);
                        let cas = Cas::start(io, st, m_row, vid_le, vec![], rep)?;
                        VersionedPhase::Master { inserted, cas }
                    };
                }
                VersionedPhase::DropMaster(cas) => {
                    let matched =
                        ready!(cas.poll(io), self.phase => VersionedPhase::DropMaster(cas));
                    if !matched.map_err(internal)? {
                        delete_event(io, &self.t.coll, &self.t.mk, None);
                    }
                    return Ok(Some(Some(version_result(&self.vid))));
                }
                VersionedPhase::Master { inserted, cas } => {
                    let matched = ready!(cas.poll(io),
                        self.phase => VersionedPhase::Master { inserted, cas });
                    if !matched.map_err(internal)? {
                        put_event_text(
                            io,
                            &self.t.coll,
                            &self.t.mk,
                            core::mem::take(&mut self.text),
                        );
                        return Ok(Some(Some(version_result(&self.vid))));
                    }
                    if inserted {
                        return Ok(Some(Some(version_result(&self.vid))));
                    }
                    // The id collided with a stored version and the master is newer.
                    if self.attempt == 1 {
                        return Err(ObjmetaError::internal("version id collision"));
                    }
                    self.attempt = 1;
                    self.phase = self.insert(io, st)?;
                }
                VersionedPhase::Done => return Ok(None),
            }
        }
    }
}

/// Case 3 (`versionId: x`): read the master and the version, write the version, then make
/// the master agree with it.
#[derive(Debug)]
struct Explicit {
    t: Target,
    x: String,
    vk: String,
    v_row: Vec<u8>,
    value: Json,
    is_dm: bool,
    phase: ExplicitPhase,
}

#[derive(Debug)]
enum ExplicitPhase {
    ReadMaster(ReadDoc),
    ReadVersion {
        master: bool,
        read: ReadDoc,
    },
    /// The version written (`existed`: it was there before).
    Write {
        master: bool,
        existed: bool,
        write: Write,
    },
    /// A v1 delete marker of the current version: the master dropped if still `x`.
    DropMaster(Cas),
    /// The master replaced if still `x`.
    ReplaceMaster(Cas),
    /// No master: one created unless a master of another version appeared.
    CreateMaster(Cas),
    Done,
}

impl Explicit {
    fn start(
        io: &mut OmIo,
        st: &ObjmetaState,
        t: Target,
        x: String,
        mut value: Json,
        is_dm: bool,
    ) -> Result<Explicit, ObjmetaError> {
        set_version_id(&mut value, &x);
        let read = ReadDoc::start(io, st, t.m_row.clone())?;
        let (vk, v_row) = t.version(&x);
        Ok(Explicit {
            t,
            x,
            vk,
            v_row,
            value,
            is_dm,
            phase: ExplicitPhase::ReadMaster(read),
        })
    }

    fn poll(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<Option<String>> {
        let no_such_version = |_| ObjmetaError::NoSuchVersion;
        loop {
            match core::mem::replace(&mut self.phase, ExplicitPhase::Done) {
                ExplicitPhase::ReadMaster(read) => {
                    let doc = ready!(read.poll(io), self.phase => ExplicitPhase::ReadMaster(read));
                    let read = ReadDoc::start(io, st, self.v_row.clone())?;
                    self.phase = ExplicitPhase::ReadVersion {
                        master: doc.is_some(),
                        read,
                    };
                }
                ExplicitPhase::ReadVersion { master, read } => {
                    let doc = ready!(read.poll(io),
                        self.phase => ExplicitPhase::ReadVersion { master, read });
                    let rep = replace(&self.value, None);
                    self.phase = ExplicitPhase::Write {
                        master,
                        existed: doc.is_some(),
                        write: Write::start(io, st, self.v_row.clone(), rep)?,
                    };
                }
                ExplicitPhase::Write {
                    master,
                    existed,
                    write,
                } => {
                    let r = ready!(write.poll(io),
                        self.phase => ExplicitPhase::Write { master, existed, write });
                    r.map_err(no_such_version)?;
                    put_event(io, &self.t.coll, &self.vk, &self.value);
                    if existed && !master {
                        return Ok(Some(Some(version_result(&self.x))));
                    }
                    let m_row = self.t.m_row.clone();
                    let vid_eq = filters::vid_eq(&self.x);
                    self.phase = if self.t.vf == VFormat::V1 && self.is_dm {
                        let drop = vec![Mutation::DeleteFromRow];
                        ExplicitPhase::DropMaster(Cas::start(io, st, m_row, vid_eq, drop, vec![])?)
                    } else if master {
                        let rep = replace(&self.value, None);
                        ExplicitPhase::ReplaceMaster(Cas::start(
                            io,
                            st,
                            m_row,
                            vid_eq,
                            rep,
                            vec![],
                        )?)
                    } else {
                        let rep = replace(&self.value, None);
                        let other = filters::exists_and_not(vid_eq);
                        ExplicitPhase::CreateMaster(Cas::start(io, st, m_row, other, vec![], rep)?)
                    };
                }
                ExplicitPhase::DropMaster(cas) => {
                    let matched =
                        ready!(cas.poll(io), self.phase => ExplicitPhase::DropMaster(cas));
                    if matched.map_err(no_such_version)? {
                        delete_event(io, &self.t.coll, &self.t.mk, None);
                    }
                    return Ok(Some(Some(version_result(&self.x))));
                }
                ExplicitPhase::ReplaceMaster(cas) => {
                    let matched =
                        ready!(cas.poll(io), self.phase => ExplicitPhase::ReplaceMaster(cas));
                    if matched.map_err(no_such_version)? {
                        put_event(io, &self.t.coll, &self.t.mk, &self.value);
                    }
                    return Ok(Some(Some(version_result(&self.x))));
                }
                ExplicitPhase::CreateMaster(cas) => {
                    let matched =
                        ready!(cas.poll(io), self.phase => ExplicitPhase::CreateMaster(cas));
                    if matched.map_err(no_such_version)? {
                        return Err(ObjmetaError::internal("concurrent put of the same version"));
                    }
                    put_event(io, &self.t.coll, &self.t.mk, &self.value);
                    return Ok(Some(Some(version_result(&self.x))));
                }
                ExplicitPhase::Done => return Ok(None),
            }
        }
    }
}

/// Case 4 (`versionId: x, repairMaster`): write the version, then set the master to the
/// latest version (dropped if that is a v1 delete marker) unless it already holds a newer one.
#[derive(Debug)]
struct RepairMaster {
    t: Target,
    vk: String,
    value: Json,
    phase: RepairMasterPhase,
}

#[derive(Debug)]
enum RepairMasterPhase {
    Version(Write),
    Latest(LatestVersion),
    DropMaster(Cas),
    ReplaceMaster { cas: Cas, latest: Json },
    Done,
}

impl RepairMaster {
    fn start(
        io: &mut OmIo,
        st: &ObjmetaState,
        t: Target,
        x: String,
        value: Json,
    ) -> Result<RepairMaster, ObjmetaError> {
        let (vk, v_row) = t.version(&x);
        let write = Write::start(io, st, v_row, replace(&value, None))?;
        Ok(RepairMaster {
            t,
            vk,
            value,
            phase: RepairMasterPhase::Version(write),
        })
    }

    /// `{"versionId": …}` of the value as given (`undefined` without one).
    fn output(&self) -> Option<String> {
        let shown = match self.value.get("versionId") {
            None => "undefined".to_string(),
            Some(v) => version_id_text(v),
        };
        Some(version_result(&shown))
    }

    fn poll(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<Option<String>> {
        let internal = ObjmetaError::internal;
        loop {
            match core::mem::replace(&mut self.phase, RepairMasterPhase::Done) {
                RepairMasterPhase::Version(write) => {
                    let r = ready!(write.poll(io), self.phase => RepairMasterPhase::Version(write));
                    r.map_err(internal)?;
                    put_event(io, &self.t.coll, &self.vk, &self.value);
                    let t = &self.t;
                    let latest = LatestVersion::start(io, st, &t.coll, t.vf, &t.key);
                    self.phase = RepairMasterPhase::Latest(latest);
                }
                RepairMasterPhase::Latest(read) => {
                    let latest =
                        ready!(read.poll(io), self.phase => RepairMasterPhase::Latest(read));
                    let Some(mut latest) = latest else {
                        return Err(ObjmetaError::NoSuchKey);
                    };
                    escape_tags(&mut latest);
                    let l = latest.get("versionId").and_then(Json::as_str).unwrap_or("");
                    let m_row = self.t.m_row.clone();
                    self.phase =
                        if self.t.vf == VFormat::V1 && latest.member_truthy("isDeleteMarker") {
                            let drop = vec![Mutation::DeleteFromRow];
                            let cas = Cas::start(io, st, m_row, filters::vid_ge(l), drop, vec![])?;
                            RepairMasterPhase::DropMaster(cas)
                        } else {
                            let newer = filters::exists_and_not(filters::vid_ge(l));
                            let rep = replace(&latest, None);
                            let cas = Cas::start(io, st, m_row, newer, vec![], rep)?;
                            RepairMasterPhase::ReplaceMaster { cas, latest }
                        };
                }
                RepairMasterPhase::DropMaster(cas) => {
                    let matched =
                        ready!(cas.poll(io), self.phase => RepairMasterPhase::DropMaster(cas));
                    if matched.map_err(internal)? {
                        delete_event(io, &self.t.coll, &self.t.mk, None);
                    }
                    return Ok(Some(self.output()));
                }
                RepairMasterPhase::ReplaceMaster { cas, latest } => {
                    let matched = ready!(cas.poll(io),
                        self.phase => RepairMasterPhase::ReplaceMaster { cas, latest });
                    if !matched.map_err(internal)? {
                        put_event(io, &self.t.coll, &self.t.mk, &latest);
                    }
                    return Ok(Some(self.output()));
                }
                RepairMasterPhase::Done => return Ok(None),
            }
        }
    }
}

/// `needOplogUpdate`: replace the live master under its hash (again from the read until the
/// hash holds), emitting its deletion (pre-image) then the new value.
#[derive(Debug)]
struct Oplog {
    t: Target,
    value: Json,
    origin: Option<Json>,
    phase: OplogPhase,
}

#[derive(Debug)]
enum OplogPhase {
    Reading(ReadDoc),
    Replacing { cas: Cas, pre: Json },
    Done,
}

impl Oplog {
    fn start(
        io: &mut OmIo,
        st: &ObjmetaState,
        t: Target,
        value: Json,
        origin: Option<Json>,
    ) -> Result<Oplog, ObjmetaError> {
        let read = ReadDoc::start(io, st, t.m_row.clone())?;
        Ok(Oplog {
            t,
            value,
            origin,
            phase: OplogPhase::Reading(read),
        })
    }

    fn poll(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<Option<String>> {
        loop {
            match core::mem::replace(&mut self.phase, OplogPhase::Done) {
                OplogPhase::Reading(read) => {
                    let doc = ready!(read.poll(io), self.phase => OplogPhase::Reading(read));
                    let Some(doc) = doc.filter(|d| !d.deleted) else {
                        return Err(ObjmetaError::internal("NoSuchKey"));
                    };
                    let rep = replace(&self.value, None);
                    let cas =
                        Cas::unchanged(io, st, self.t.m_row.clone(), doc.hash.as_deref(), rep)?;
                    self.phase = OplogPhase::Replacing {
                        cas,
                        pre: doc.value,
                    };
                }
                OplogPhase::Replacing { cas, mut pre } => {
                    let matched =
                        ready!(cas.poll(io), self.phase => OplogPhase::Replacing { cas, pre });
                    if !matched.map_err(ObjmetaError::internal)? {
                        let read = ReadDoc::start(io, st, self.t.m_row.clone())?;
                        self.phase = OplogPhase::Reading(read);
                        continue;
                    }
                    if let Some(o) = pre.as_object_mut() {
                        match &self.origin {
                            Some(op) => o.set("originOp", op.clone()),
                            None => {
                                o.remove("originOp");
                            }
                        }
                        o.set("deleted", Json::Bool(true));
                    }
                    delete_event(io, &self.t.coll, &self.t.mk, Some(&pre));
                    put_event(io, &self.t.coll, &self.t.mk, &self.value);
                    return Ok(Some(None));
                }
                OplogPhase::Done => return Ok(None),
            }
        }
    }
}

/// The flow of [`GetObject`]: the vFormat, the master (or the version asked for), then the
/// latest version when the master is a placeholder or missing.
#[derive(Debug)]
pub struct GetObjectFlow {
    bucket: String,
    key: String,
    /// A non-empty version id asked for.
    version_id: Option<String>,
    phase: GetPhase,
}

#[derive(Debug)]
enum GetPhase {
    VFormat(BucketVFormat),
    Reading { vf: VFormat, read: ReadDoc },
    Latest(LatestVersion),
    Done,
}

impl GetObjectFlow {
    fn new(bucket: &str, key: &str, version_id: Option<&str>) -> GetObjectFlow {
        GetObjectFlow {
            bucket: bucket.to_string(),
            key: key.to_string(),
            version_id: version_id.filter(|v| !v.is_empty()).map(String::from),
            phase: GetPhase::VFormat(BucketVFormat::Start),
        }
    }
}

impl<'a> GetObject<'a> {
    /// `getObject(bucket, key, {versionId})` (an empty id reads the master).
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        deadline: Option<Timestamp>,
        now: Timestamp,
        seed: u64,
    ) -> GetObject<'a> {
        let flow = GetObjectFlow::new(bucket, key, version_id);
        start(ctx, flow, deadline, now, seed)
    }
}

/// Whether a planted bug makes `GetObject` skip the placeholder check (`objmeta.md` 9.2).
#[cfg(feature = "_planted_bugs")]
fn skips_placeholder_check(config: &ObjmetaConfig) -> bool {
    config.planted == Some(crate::planted::PlantedBug::ObjmetaGetSkipsPlaceholderCheck)
}

#[cfg(not(feature = "_planted_bugs"))]
fn skips_placeholder_check(_: &ObjmetaConfig) -> bool {
    false
}

impl Flow for GetObjectFlow {
    type Schema = ObjmetaSchema;
    type Output = Json;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Json> {
        loop {
            match core::mem::replace(&mut self.phase, GetPhase::Done) {
                GetPhase::VFormat(mut lookup) => {
                    let vf = ready!(lookup.poll(io, st, &self.bucket),
                        self.phase => GetPhase::VFormat(lookup));
                    let coll = collection_for_bucket(&self.bucket);
                    let k = match &self.version_id {
                        Some(v) => version_key(vf, &self.key, v),
                        None => master_key(vf, &self.key),
                    };
                    let read = ReadDoc::start(io, st, row_key(coll, &k))?;
                    self.phase = GetPhase::Reading { vf, read };
                }
                GetPhase::Reading { vf, read } => {
                    let doc = ready!(read.poll(io), self.phase => GetPhase::Reading { vf, read });
                    let doc = doc.filter(|d| !d.deleted);
                    if doc.is_none() && self.version_id.is_some() {
                        return Err(ObjmetaError::NoSuchKey);
                    }
                    match doc {
                        Some(d)
                            if skips_placeholder_check(&st.config)
                                || !d.value.member_truthy("isPHD") =>
                        {
                            let mut v = d.value;
                            unescape_tags(&mut v);
                            return Ok(Some(v));
                        }
                        _ => {
                            let coll = collection_for_bucket(&self.bucket);
                            let latest = LatestVersion::start(io, st, coll, vf, &self.key);
                            self.phase = GetPhase::Latest(latest);
                        }
                    }
                }
                GetPhase::Latest(read) => {
                    let latest = ready!(read.poll(io), self.phase => GetPhase::Latest(read));
                    return latest.map(Some).ok_or(ObjmetaError::NoSuchKey);
                }
                GetPhase::Done => return Ok(None),
            }
        }
    }
}

/// The flow of [`DeleteObject`]: the master alone without a version id; a non-current
/// version directly; the current version behind a placeholder master, which is then dropped
/// or left for an [`AsyncRepair`] (`objmeta.md` 8).
#[derive(Debug)]
pub struct DeleteObjectFlow {
    bucket: String,
    key: String,
    version_id: Option<String>,
    no_oplog: bool,
    origin_op: String,
    phase: DeletePhase,
}

#[derive(Debug)]
enum DeletePhase {
    VFormat(BucketVFormat),
    /// No version id: the master deleted (found or not).
    Master(InternalDelete),
    /// Which version the master holds.
    ReadMaster {
        t: Target,
        read: ReadDoc,
    },
    /// No live master: the latest version stands for it.
    MasterLatest {
        t: Target,
        read: LatestVersion,
    },
    /// Not the current version: deleted on its own (it must exist).
    Version(InternalDelete),
    /// The current version: the master first becomes placeholder `phd`.
    Placeholder {
        t: Target,
        phd: String,
        merge: Merge,
    },
    /// Then the version is deleted.
    CurrentVersion {
        t: Target,
        phd: String,
        delete: InternalDelete,
    },
    /// Then what the master should hold now.
    Latest {
        t: Target,
        phd: String,
        read: LatestVersion,
    },
    /// No version left (or a v1 delete marker): the placeholder is dropped.
    DropPlaceholder(InternalDelete),
    Done,
}

impl<'a> DeleteObject<'a> {
    /// `deleteObject(bucket, key, params, originOp)`; `params` may hold `versionId` and
    /// `doesNotNeedOpogUpdate`, `originOp` defaults to `s3:ObjectRemoved:Delete`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        key: &str,
        params: Option<&Json>,
        origin_op: Option<&str>,
        deadline: Option<Timestamp>,
        now: Timestamp,
        seed: u64,
    ) -> DeleteObject<'a> {
        let params = params.unwrap_or(&Json::Null);
        let flow = DeleteObjectFlow {
            bucket: bucket.to_string(),
            key: key.to_string(),
            version_id: params
                .get("versionId")
                .filter(|v| v.truthy())
                .map(version_id_text),
            no_oplog: params.member_truthy("doesNotNeedOpogUpdate"),
            origin_op: origin_op.unwrap_or(ORIGIN_OP_DELETE).to_string(),
            phase: DeletePhase::VFormat(BucketVFormat::Start),
        };
        start(ctx, flow, deadline, now, seed)
    }
}

impl DeleteObjectFlow {
    fn delete(&self, key: &str, phd: Option<&str>) -> InternalDelete {
        match phd {
            // The placeholder goes like a plain delete, whatever the caller asked.
            Some(_) => InternalDelete::new(
                collection_for_bucket(&self.bucket),
                key,
                phd,
                false,
                ORIGIN_OP_DELETE,
            ),
            None => InternalDelete::new(
                collection_for_bucket(&self.bucket),
                key,
                None,
                self.no_oplog,
                &self.origin_op,
            ),
        }
    }

    /// The master holds `mst`: delete the version on its own, or behind a placeholder.
    fn decide(
        &self,
        io: &mut OmIo,
        st: &mut ObjmetaState,
        t: Target,
        mst: &Json,
        vid: &str,
    ) -> DeletePhase {
        let (vk, _) = t.version(vid);
        let current =
            mst.member_truthy("isPHD") || mst.get("versionId").and_then(Json::as_str) == Some(vid);
        if !current {
            return DeletePhase::Version(self.delete(&vk, None));
        }
        let phd = st.generate_version_id(io.now());
        let fields = vec![
            ("isPHD", Json::Bool(true)),
            ("versionId", Json::str(phd.clone())),
            ("deleted", Json::Bool(false)),
        ];
        let merge = Merge::new(&t.coll, &t.mk, Edit::Fields(fields));
        DeletePhase::Placeholder { t, phd, merge }
    }
}

impl Flow for DeleteObjectFlow {
    type Schema = ObjmetaSchema;
    type Output = ();

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<()> {
        loop {
            match core::mem::replace(&mut self.phase, DeletePhase::Done) {
                DeletePhase::VFormat(mut lookup) => {
                    let vf = ready!(lookup.poll(io, st, &self.bucket),
                        self.phase => DeletePhase::VFormat(lookup));
                    let t = Target::new(&self.bucket, &self.key, vf);
                    self.phase = match self.version_id {
                        None => DeletePhase::Master(self.delete(&t.mk, None)),
                        Some(_) => {
                            let read = ReadDoc::start(io, st, t.m_row.clone())?;
                            DeletePhase::ReadMaster { t, read }
                        }
                    };
                }
                DeletePhase::Master(mut delete) => {
                    ready!(delete.poll(io, st), self.phase => DeletePhase::Master(delete));
                    return Ok(Some(()));
                }
                DeletePhase::ReadMaster { t, read } => {
                    let doc =
                        ready!(read.poll(io), self.phase => DeletePhase::ReadMaster { t, read });
                    match doc.filter(|d| !d.deleted) {
                        Some(d) => {
                            let vid = self.version_id.clone().unwrap_or_default();
                            self.phase = self.decide(io, st, t, &d.value, &vid);
                        }
                        None => {
                            let read = LatestVersion::start(io, st, &t.coll, t.vf, &t.key);
                            self.phase = DeletePhase::MasterLatest { t, read };
                        }
                    }
                }
                DeletePhase::MasterLatest { t, read } => {
                    let latest = ready!(read.poll(io),
                        self.phase => DeletePhase::MasterLatest { t, read });
                    let mst = latest.ok_or(ObjmetaError::NoSuchKey)?;
                    let vid = self.version_id.clone().unwrap_or_default();
                    self.phase = self.decide(io, st, t, &mst, &vid);
                }
                DeletePhase::Version(mut delete) => {
                    let found =
                        ready!(delete.poll(io, st), self.phase => DeletePhase::Version(delete));
                    return if found {
                        Ok(Some(()))
                    } else {
                        Err(ObjmetaError::NoSuchKey)
                    };
                }
                DeletePhase::Placeholder { t, phd, mut merge } => {
                    ready!(merge.poll(io, st),
                        self.phase => DeletePhase::Placeholder { t, phd, merge });
                    let vid = self.version_id.clone().unwrap_or_default();
                    let (vk, _) = t.version(&vid);
                    let delete = self.delete(&vk, None);
                    self.phase = DeletePhase::CurrentVersion { t, phd, delete };
                }
                DeletePhase::CurrentVersion { t, phd, mut delete } => {
                    ready!(delete.poll(io, st),
                        self.phase => DeletePhase::CurrentVersion { t, phd, delete });
                    // deleteOrRepairPHD(phd)
                    let read = LatestVersion::start(io, st, &t.coll, t.vf, &t.key);
                    self.phase = DeletePhase::Latest { t, phd, read };
                }
                DeletePhase::Latest { t, phd, read } => {
                    let latest = ready!(read.poll(io),
                        self.phase => DeletePhase::Latest { t, phd, read });
                    match latest {
                        Some(l) if t.vf != VFormat::V1 || !l.member_truthy("isDeleteMarker") => {
                            io.emit(ObjmetaEvent::RepairScheduled(RepairTask {
                                bucket: self.bucket.clone(),
                                key: self.key.clone(),
                                phd_version_id: phd,
                                vformat: t.vf,
                                due: io.now().saturating_add_micros(REPAIR_DELAY_US),
                            }));
                            return Ok(Some(()));
                        }
                        _ => {
                            let delete = self.delete(&t.mk, Some(&phd));
                            self.phase = DeletePhase::DropPlaceholder(delete);
                        }
                    }
                }
                DeletePhase::DropPlaceholder(mut delete) => {
                    ready!(delete.poll(io, st),
                        self.phase => DeletePhase::DropPlaceholder(delete));
                    return Ok(Some(()));
                }
                DeletePhase::Done => return Ok(None),
            }
        }
    }
}

/// How a repair ended (`objmeta.md` 8.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RepairOutcome {
    /// The master now holds the latest version.
    Repaired,
    /// The master changed meanwhile; nothing written.
    Conflict,
    /// No version left.
    NoVersion,
    /// A request failed, or the deadline passed.
    Failed,
}

impl RepairOutcome {
    /// Lowercase name for output.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairOutcome::Repaired => "repaired",
            RepairOutcome::Conflict => "conflict",
            RepairOutcome::NoVersion => "no_version",
            RepairOutcome::Failed => "failed",
        }
    }
}

/// The flow of [`AsyncRepair`]: it sleeps until the task's `due`, reads the latest version and
/// writes it to the master unless the master is no longer placeholder `phd`.
#[derive(Debug)]
pub struct AsyncRepairFlow {
    task: RepairTask,
    phase: RepairPhase,
}

#[derive(Debug)]
enum RepairPhase {
    /// Until `due`.
    Sleeping,
    Latest(LatestVersion),
    Write {
        cas: Cas,
        mk: String,
        latest: Json,
    },
    Done,
}

impl AsyncRepair {
    /// `asyncRepair(bucket, key, phd, vf)` of `task` on `table`: created at `now`, it sends
    /// nothing before `task.due` (its `poll_timeout` is `due` until then). The deadline
    /// defaults to `due + 60 s`. A repair that cannot complete ends `Failed`, or `Aborted` when
    /// cancelled or past its deadline.
    pub fn new(
        table: &str,
        task: RepairTask,
        deadline: Option<Timestamp>,
        now: Timestamp,
        seed: u64,
    ) -> AsyncRepair {
        let state = ObjmetaState::new(ObjmetaConfig {
            table: table.to_string(),
            ..ObjmetaConfig::default()
        });
        // The 60 s run from `due`, when the repair starts.
        let deadline = deadline.unwrap_or(task.due.saturating_add_micros(DEFAULT_DEADLINE_US));
        let flow = AsyncRepairFlow {
            task,
            phase: RepairPhase::Sleeping,
        };
        let budget = Budget::until(deadline);
        Operation::start(
            ContextArg::owned(state),
            now,
            seed ^ SEED_SALT,
            budget,
            flow,
        )
    }
}

impl Flow for AsyncRepairFlow {
    type Schema = ObjmetaSchema;
    type Output = RepairOutcome;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<RepairOutcome> {
        loop {
            match core::mem::replace(&mut self.phase, RepairPhase::Done) {
                RepairPhase::Sleeping => {
                    if io.now() < self.task.due {
                        io.sleep_until(self.task.due);
                        self.phase = RepairPhase::Sleeping;
                        return Ok(None);
                    }
                    let t = &self.task;
                    let coll = collection_for_bucket(&t.bucket);
                    let read = LatestVersion::start(io, st, coll, t.vformat, &t.key);
                    self.phase = RepairPhase::Latest(read);
                }
                RepairPhase::Latest(read) => {
                    let latest = match read.poll(io) {
                        Ok(None) => {
                            self.phase = RepairPhase::Latest(read);
                            return Ok(None);
                        }
                        Ok(Some(Some(l))) => l,
                        Ok(Some(None)) => return Ok(Some(RepairOutcome::NoVersion)),
                        Err(_) => return Ok(Some(RepairOutcome::Failed)),
                    };
                    let mut latest = latest;
                    if let Some(o) = latest.as_object_mut() {
                        o.set("originOp", Json::str(ORIGIN_OP_DELETE));
                    }
                    escape_tags(&mut latest);
                    let t = &self.task;
                    let mk = master_key(t.vformat, &t.key);
                    let row = row_key(collection_for_bucket(&t.bucket), &mk);
                    let moved = filters::exists_and_not(filters::phd_is(&t.phd_version_id));
                    let rep = replace(&latest, None);
                    let Ok(cas) = Cas::start(io, st, row, moved, vec![], rep) else {
                        return Ok(Some(RepairOutcome::Failed));
                    };
                    self.phase = RepairPhase::Write { cas, mk, latest };
                }
                RepairPhase::Write { cas, mk, latest } => {
                    let matched = match cas.poll(io) {
                        Ok(None) => {
                            self.phase = RepairPhase::Write { cas, mk, latest };
                            return Ok(None);
                        }
                        Ok(Some(Ok(m))) => m,
                        Ok(Some(Err(_))) | Err(_) => return Ok(Some(RepairOutcome::Failed)),
                    };
                    if matched {
                        return Ok(Some(RepairOutcome::Conflict));
                    }
                    let coll = collection_for_bucket(&self.task.bucket);
                    put_event(io, coll, &mk, &latest);
                    return Ok(Some(RepairOutcome::Repaired));
                }
                RepairPhase::Done => return Ok(None),
            }
        }
    }
}

/// One item of `getObjects`: its key, the version asked for, and its Arsenal key.
#[derive(Debug)]
struct Item {
    key: String,
    vid: Option<String>,
    ak: String,
}

/// Arsenal's `maxBatchingConcurrentOperations`: the `getLatestVersion` reads of one
/// `getObjects` outstanding at once (`objmeta.md` 9.3).
const MAX_LATEST_VERSION_READS: usize = 5;

/// The flow of [`GetObjects`]: the vFormat, one read of every item's row, then the latest
/// version of each placeholder or missing master, up to five reads at once, started in item
/// order.
#[derive(Debug)]
pub struct GetObjectsFlow {
    bucket: String,
    /// `(key, version id)` of each item.
    items: Vec<(String, Option<String>)>,
    phase: GetObjectsPhase,
}

#[derive(Debug)]
enum GetObjectsPhase {
    VFormat(BucketVFormat),
    Reading { items: Items, read: Read },
    Resolving(Items),
    Done,
}

/// The items and what is known of them.
#[derive(Debug)]
struct Items {
    coll: String,
    vf: VFormat,
    items: Vec<Item>,
    rows: Vec<Row>,
    /// Per item, its `{err, doc, versionId?, key}` once known.
    out: Vec<Option<Json>>,
    /// The first item not yet looked at.
    next: usize,
    /// The `getLatestVersion` reads in flight, by item index.
    latest: Vec<(usize, LatestVersion)>,
}

impl Items {
    /// Records `{err, doc, versionId?, key}` of item `i`.
    fn set(&mut self, i: usize, err: Json, doc: Json) {
        let item = &self.items[i];
        let mut o = JsonObject::new();
        o.set("err", err);
        o.set("doc", doc);
        if let Some(v) = &item.vid {
            o.set("versionId", Json::str(v.as_str()));
        }
        o.set("key", Json::str(item.ak.as_str()));
        self.out[i] = Some(Json::Object(o));
    }

    /// Records the reads that have finished, then looks at the next items in order, starting a
    /// read for each placeholder or missing master while fewer than five are in flight. The
    /// list, in item order, once every item is known.
    fn resolve(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<Json> {
        let mut in_flight = Vec::with_capacity(self.latest.len());
        for (i, latest) in core::mem::take(&mut self.latest) {
            match latest.poll(io) {
                Ok(None) => in_flight.push((i, latest)),
                Ok(Some(Some(v))) => self.set(i, Json::Null, v),
                Ok(Some(None)) => self.set(i, Json::str("NoSuchKey"), Json::Null),
                Err(_) => self.set(i, Json::str("InternalError"), Json::Null),
            }
        }
        self.latest = in_flight;
        while self.next < self.items.len() {
            let i = self.next;
            let rk = row_key(&self.coll, &self.items[i].ak);
            match doc_of(self.rows.iter().find(|r| r.key == rk))? {
                None if self.items[i].vid.is_some() => {
                    self.set(i, Json::str("NoSuchKey"), Json::Null);
                }
                Some(d) if !d.value.member_truthy("isPHD") => {
                    let mut v = d.value;
                    unescape_tags(&mut v);
                    self.set(i, Json::Null, v);
                }
                _ if self.latest.len() >= MAX_LATEST_VERSION_READS => break,
                _ => {
                    let key = &self.items[i].key;
                    let latest = LatestVersion::start(io, st, &self.coll, self.vf, key);
                    self.latest.push((i, latest));
                }
            }
            self.next += 1;
        }
        if self.next < self.items.len() || !self.latest.is_empty() {
            return Ok(None);
        }
        let out = core::mem::take(&mut self.out);
        Ok(Some(Json::Array(out.into_iter().flatten().collect())))
    }
}

impl<'a> GetObjects<'a> {
    /// `getObjects(bucket, items)` with `items` = `[{key, params}]` (at most 1000) → one
    /// `{err, doc, versionId?, key}` object per item, in item order (`err` = `"NoSuchKey"`,
    /// `"InternalError"` or `null`). The `getLatestVersion` reads of placeholders and missing
    /// masters start in item order, at most five in flight (Arsenal's
    /// `maxBatchingConcurrentOperations`).
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        items: &Json,
        deadline: Option<Timestamp>,
        now: Timestamp,
        seed: u64,
    ) -> GetObjects<'a> {
        let Json::Array(items) = items else {
            let error = ObjmetaError::internal("objects must be an array");
            return Operation::failed(ctx.into(), error);
        };
        if items.len() > 1000 {
            let error = ObjmetaError::internal("cannot get more than 1000 objects");
            return Operation::failed(ctx.into(), error);
        }
        let items = items
            .iter()
            .map(|item| {
                let key = item.get("key").and_then(Json::as_str).unwrap_or("");
                let vid = item
                    .get("params")
                    .and_then(|p| p.get("versionId"))
                    .filter(|v| v.truthy())
                    .map(|v| v.as_str().map_or_else(|| v.stringify(), String::from));
                (key.to_string(), vid)
            })
            .collect();
        let flow = GetObjectsFlow {
            bucket: bucket.to_string(),
            items,
            phase: GetObjectsPhase::VFormat(BucketVFormat::Start),
        };
        start(ctx, flow, deadline, now, seed)
    }
}

impl Flow for GetObjectsFlow {
    type Schema = ObjmetaSchema;
    type Output = Json;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Json> {
        loop {
            match core::mem::replace(&mut self.phase, GetObjectsPhase::Done) {
                GetObjectsPhase::VFormat(mut lookup) => {
                    let vf = ready!(lookup.poll(io, st, &self.bucket),
                        self.phase => GetObjectsPhase::VFormat(lookup));
                    if self.items.is_empty() {
                        return Ok(Some(Json::Array(Vec::new())));
                    }
                    let coll = collection_for_bucket(&self.bucket).to_string();
                    let items: Vec<Item> = core::mem::take(&mut self.items)
                        .into_iter()
                        .map(|(key, vid)| {
                            let ak = match &vid {
                                Some(v) => version_key(vf, &key, v),
                                None => master_key(vf, &key),
                            };
                            Item { key, vid, ak }
                        })
                        .collect();
                    let mut keys: Vec<Vec<u8>> = Vec::new();
                    for item in &items {
                        let rk = row_key(&coll, &item.ak);
                        if !keys.contains(&rk) {
                            keys.push(rk);
                        }
                    }
                    let rowset = RowSet {
                        row_keys: keys,
                        row_ranges: Vec::new(),
                    };
                    let read = Read::start(io, st, rowset, filters::live_value(), 0);
                    let items = Items {
                        coll,
                        vf,
                        out: items.iter().map(|_| None).collect(),
                        items,
                        rows: Vec::new(),
                        next: 0,
                        latest: Vec::new(),
                    };
                    self.phase = GetObjectsPhase::Reading { items, read };
                }
                GetObjectsPhase::Reading { mut items, read } => {
                    let rows = ready!(read.poll(io),
                        self.phase => GetObjectsPhase::Reading { items, read });
                    items.rows = rows.map_err(ObjmetaError::internal)?;
                    self.phase = GetObjectsPhase::Resolving(items);
                }
                GetObjectsPhase::Resolving(mut items) => {
                    let list = ready!(items.resolve(io, st),
                        self.phase => GetObjectsPhase::Resolving(items));
                    return Ok(Some(list));
                }
                GetObjectsPhase::Done => return Ok(None),
            }
        }
    }
}

/// The flow of [`GetBucketAndObject`]: the bucket's metastore row, then a [`GetObject`] flow.
#[derive(Debug)]
pub struct GetBucketAndObjectFlow {
    bucket: String,
    phase: BucketAndObjectPhase,
}

#[derive(Debug)]
enum BucketAndObjectPhase {
    Start(GetObjectFlow),
    Bucket { read: ReadDoc, get: GetObjectFlow },
    Object { bucket: Json, get: GetObjectFlow },
    Done,
}

impl<'a> GetBucketAndObject<'a> {
    /// `getBucketAndObject(bucket, key, {versionId})` → `(BucketInfo, object or None on
    /// NoSuchKey)`.
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        deadline: Option<Timestamp>,
        now: Timestamp,
        seed: u64,
    ) -> GetBucketAndObject<'a> {
        let flow = GetBucketAndObjectFlow {
            bucket: bucket.to_string(),
            phase: BucketAndObjectPhase::Start(GetObjectFlow::new(bucket, key, version_id)),
        };
        start(ctx, flow, deadline, now, seed)
    }
}

impl Flow for GetBucketAndObjectFlow {
    type Schema = ObjmetaSchema;
    type Output = (Json, Option<Json>);

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<(Json, Option<Json>)> {
        loop {
            match core::mem::replace(&mut self.phase, BucketAndObjectPhase::Done) {
                BucketAndObjectPhase::Start(get) => {
                    let read = ReadDoc::start(io, st, row_key(METASTORE, &self.bucket))?;
                    self.phase = BucketAndObjectPhase::Bucket { read, get };
                }
                BucketAndObjectPhase::Bucket { read, get } => {
                    let doc = ready!(read.poll(io),
                        self.phase => BucketAndObjectPhase::Bucket { read, get });
                    let bucket = doc.map(|d| d.value).ok_or(ObjmetaError::NoSuchBucket)?;
                    self.phase = BucketAndObjectPhase::Object { bucket, get };
                }
                BucketAndObjectPhase::Object { bucket, mut get } => {
                    return match get.advance(io, st) {
                        Ok(None) => {
                            self.phase = BucketAndObjectPhase::Object { bucket, get };
                            Ok(None)
                        }
                        Ok(Some(v)) => Ok(Some((bucket, Some(v)))),
                        Err(ObjmetaError::NoSuchKey) => Ok(Some((bucket, None))),
                        Err(e) => Err(e),
                    };
                }
                BucketAndObjectPhase::Done => return Ok(None),
            }
        }
    }
}
