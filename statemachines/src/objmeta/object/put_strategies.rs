//! The put strategies that take more than one write (`objmeta.md` 7): a new version
//! (`versioning`), an explicit version id, a master repair, and the oplog update.

use super::*;

/// Case 1 (`versioning`): insert a new version (a second id if the first collides), then
/// replace the master unless it holds a newer version (a v1 delete marker drops the master
/// instead).
#[derive(Debug)]
pub(super) struct Versioned {
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
        cas: ChildId,
    },
    /// A v1 delete marker: the master dropped unless newer.
    DropMaster(ChildId),
    /// The master replaced unless newer.
    Master {
        inserted: bool,
        cas: ChildId,
    },
    Done,
}

impl Versioned {
    pub(super) fn start(
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
        let cas = start_cas(io, st, v_row, filters::exists(), rep.clone(), rep)?;
        Ok(VersionedPhase::Version { vk, cas })
    }

    pub(super) fn poll(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Option<String>> {
        loop {
            match core::mem::replace(&mut self.phase, VersionedPhase::Done) {
                VersionedPhase::Version { vk, cas } => {
                    let matched = ready!(io.matched(cas),
                        self.phase => VersionedPhase::Version { vk, cas });
                    let inserted = !matched;
                    put_event_text(io, &self.t.coll, &vk, self.text.clone());
                    let m_row = self.t.m_row.clone();
                    let vid_le = filters::vid_le(&self.vid);
                    self.phase = if self.t.vf == VFormat::V1 && self.is_dm {
                        let drop = vec![Mutation::DeleteFromRow];
                        VersionedPhase::DropMaster(start_cas(io, st, m_row, vid_le, vec![], drop)?)
                    } else {
                        let rep = core::mem::take(&mut self.rep);
                        let cas = start_cas(io, st, m_row, vid_le, vec![], rep)?;
                        VersionedPhase::Master { inserted, cas }
                    };
                }
                VersionedPhase::DropMaster(cas) => {
                    let matched =
                        ready!(io.matched(cas), self.phase => VersionedPhase::DropMaster(cas));
                    if !matched {
                        delete_event(io, &self.t.coll, &self.t.mk, None);
                    }
                    return Ok(Some(Some(self.vid.clone())));
                }
                VersionedPhase::Master { inserted, cas } => {
                    let matched = ready!(io.matched(cas),
                        self.phase => VersionedPhase::Master { inserted, cas });
                    if !matched {
                        put_event_text(
                            io,
                            &self.t.coll,
                            &self.t.mk,
                            core::mem::take(&mut self.text),
                        );
                        return Ok(Some(Some(self.vid.clone())));
                    }
                    if inserted {
                        return Ok(Some(Some(self.vid.clone())));
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
pub(super) struct Explicit {
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
        write: ChildId,
    },
    /// A v1 delete marker of the current version: the master dropped if still `x`.
    DropMaster(ChildId),
    /// The master replaced if still `x`.
    ReplaceMaster(ChildId),
    /// No master: one created unless a master of another version appeared.
    CreateMaster(ChildId),
    Done,
}

impl Explicit {
    pub(super) fn start(
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

    pub(super) fn poll(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<Option<String>> {
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
                        write: start_write(io, st, self.v_row.clone(), rep)?,
                    };
                }
                ExplicitPhase::Write {
                    master,
                    existed,
                    write,
                } => {
                    let r = ready!(settled(io.written(write)),
                        self.phase => ExplicitPhase::Write { master, existed, write });
                    r.map_err(no_such_version)?;
                    put_event(io, &self.t.coll, &self.vk, &self.value);
                    if existed && !master {
                        return Ok(Some(Some(self.x.clone())));
                    }
                    let m_row = self.t.m_row.clone();
                    let vid_eq = filters::vid_eq(&self.x);
                    self.phase = if self.t.vf == VFormat::V1 && self.is_dm {
                        let drop = vec![Mutation::DeleteFromRow];
                        ExplicitPhase::DropMaster(start_cas(io, st, m_row, vid_eq, drop, vec![])?)
                    } else if master {
                        let rep = replace(&self.value, None);
                        ExplicitPhase::ReplaceMaster(start_cas(io, st, m_row, vid_eq, rep, vec![])?)
                    } else {
                        let rep = replace(&self.value, None);
                        let other = filters::exists_and_not(vid_eq);
                        ExplicitPhase::CreateMaster(start_cas(io, st, m_row, other, vec![], rep)?)
                    };
                }
                ExplicitPhase::DropMaster(cas) => {
                    let matched = ready!(settled(io.matched(cas)), self.phase => ExplicitPhase::DropMaster(cas));
                    if matched.map_err(no_such_version)? {
                        delete_event(io, &self.t.coll, &self.t.mk, None);
                    }
                    return Ok(Some(Some(self.x.clone())));
                }
                ExplicitPhase::ReplaceMaster(cas) => {
                    let matched = ready!(settled(io.matched(cas)), self.phase => ExplicitPhase::ReplaceMaster(cas));
                    if matched.map_err(no_such_version)? {
                        put_event(io, &self.t.coll, &self.t.mk, &self.value);
                    }
                    return Ok(Some(Some(self.x.clone())));
                }
                ExplicitPhase::CreateMaster(cas) => {
                    let matched = ready!(settled(io.matched(cas)), self.phase => ExplicitPhase::CreateMaster(cas));
                    if matched.map_err(no_such_version)? {
                        return Err(ObjmetaError::internal("concurrent put of the same version"));
                    }
                    put_event(io, &self.t.coll, &self.t.mk, &self.value);
                    return Ok(Some(Some(self.x.clone())));
                }
                ExplicitPhase::Done => return Ok(None),
            }
        }
    }
}

/// Case 4 (`versionId: x, repairMaster`): write the version, then set the master to the
/// latest version (dropped if that is a v1 delete marker) unless it already holds a newer one.
#[derive(Debug)]
pub(super) struct RepairMaster {
    t: Target,
    vk: String,
    value: Json,
    phase: RepairMasterPhase,
}

#[derive(Debug)]
enum RepairMasterPhase {
    Version(ChildId),
    Latest(LatestVersion),
    DropMaster(ChildId),
    ReplaceMaster { cas: ChildId, latest: Json },
    Done,
}

impl RepairMaster {
    pub(super) fn start(
        io: &mut OmIo,
        st: &ObjmetaState,
        t: Target,
        x: String,
        value: Json,
    ) -> Result<RepairMaster, ObjmetaError> {
        let (vk, v_row) = t.version(&x);
        let write = start_write(io, st, v_row, replace(&value, None))?;
        Ok(RepairMaster {
            t,
            vk,
            value,
            phase: RepairMasterPhase::Version(write),
        })
    }

    /// The version id of the value as given (`undefined` without one).
    fn output(&self) -> Option<String> {
        Some(match self.value.get("versionId") {
            None => "undefined".to_string(),
            Some(v) => version_id_text(v),
        })
    }

    pub(super) fn poll(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<Option<String>> {
        loop {
            match core::mem::replace(&mut self.phase, RepairMasterPhase::Done) {
                RepairMasterPhase::Version(write) => {
                    ready!(io.written(write), self.phase => RepairMasterPhase::Version(write));
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
                            let cas = start_cas(io, st, m_row, filters::vid_ge(l), drop, vec![])?;
                            RepairMasterPhase::DropMaster(cas)
                        } else {
                            let newer = filters::exists_and_not(filters::vid_ge(l));
                            let rep = replace(&latest, None);
                            let cas = start_cas(io, st, m_row, newer, vec![], rep)?;
                            RepairMasterPhase::ReplaceMaster { cas, latest }
                        };
                }
                RepairMasterPhase::DropMaster(cas) => {
                    let matched =
                        ready!(io.matched(cas), self.phase => RepairMasterPhase::DropMaster(cas));
                    if matched {
                        delete_event(io, &self.t.coll, &self.t.mk, None);
                    }
                    return Ok(Some(self.output()));
                }
                RepairMasterPhase::ReplaceMaster { cas, latest } => {
                    let matched = ready!(io.matched(cas),
                        self.phase => RepairMasterPhase::ReplaceMaster { cas, latest });
                    if !matched {
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
pub(super) struct Oplog {
    t: Target,
    value: Json,
    origin: Option<Json>,
    phase: OplogPhase,
}

#[derive(Debug)]
enum OplogPhase {
    Reading(ReadDoc),
    Replacing { cas: ChildId, pre: Json },
    Done,
}

impl Oplog {
    pub(super) fn start(
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

    pub(super) fn poll(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<Option<String>> {
        loop {
            match core::mem::replace(&mut self.phase, OplogPhase::Done) {
                OplogPhase::Reading(read) => {
                    let doc = ready!(read.poll(io), self.phase => OplogPhase::Reading(read));
                    let Some(doc) = doc.filter(|d| !d.deleted) else {
                        return Err(ObjmetaError::internal("NoSuchKey"));
                    };
                    let rep = replace(&self.value, None);
                    let cas = start_cas_unchanged(
                        io,
                        st,
                        self.t.m_row.clone(),
                        doc.hash.as_deref(),
                        rep,
                    )?;
                    self.phase = OplogPhase::Replacing {
                        cas,
                        pre: doc.value,
                    };
                }
                OplogPhase::Replacing { cas, mut pre } => {
                    let matched =
                        ready!(io.matched(cas), self.phase => OplogPhase::Replacing { cas, pre });
                    if !matched {
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
