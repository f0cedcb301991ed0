//! `DeleteObject` in every case (`objmeta.md` 8).

use super::*;

/// The flow of [`DeleteObject`]: the master alone without a version id; a non-current
/// version directly; the current version behind a placeholder master, which is then dropped
/// or left for an [`AsyncRepair`] (`objmeta.md` 8).
/// In an aware process it runs under the migration marker ([`Aware`]).
#[derive(Debug)]
pub struct DeleteObjectFlow(Aware<DeleteProtocol>);

impl Flow for DeleteObjectFlow {
    type Schema = ObjmetaSchema;
    type Output = ();

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<()> {
        self.0.advance(io, st)
    }
}

/// Arsenal's delete protocol (`objmeta.md` 8).
#[derive(Debug)]
struct DeleteProtocol {
    bucket: String,
    key: String,
    version_id: Option<String>,
    no_oplog: bool,
    origin_op: String,
    /// The marker the delete acts on (an aware process in a migrating bucket): a repair it
    /// schedules carries it (`docs/migration.md` §2.3).
    migration: Option<ScheduledMarker>,
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
        start: Start,
    ) -> DeleteObject<'a> {
        let params = params.unwrap_or(&Json::Null);
        let flow = DeleteProtocol {
            bucket: bucket.to_string(),
            key: key.to_string(),
            version_id: params
                .get("versionId")
                .filter(|v| v.truthy())
                .map(version_id_text),
            no_oplog: params.member_truthy("doesNotNeedOpogUpdate"),
            origin_op: origin_op.unwrap_or(ORIGIN_OP_DELETE).to_string(),
            migration: None,
            phase: DeletePhase::VFormat(BucketVFormat::Start),
        };
        begin(ctx, start, DeleteObjectFlow(Aware::new(flow)))
    }
}

impl Protocol for DeleteProtocol {
    fn bucket(&self) -> &str {
        &self.bucket
    }

    fn use_layout(&mut self, layout: &BucketLayout) {
        if let DeletePhase::VFormat(lookup) = &mut self.phase {
            *lookup = BucketVFormat::Known(layout.vformat);
        }
        self.migration = ScheduledMarker::of(layout);
    }
}

impl DeleteProtocol {
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

impl Flow for DeleteProtocol {
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
                                migration: self.migration.clone(),
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
