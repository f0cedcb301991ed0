//! `PutObject` (`objmeta.md` 7): the bucket's vFormat, then one of five strategies; what it
//! wrote comes back as a [`PutOutcome`].

use super::put_strategies::{Explicit, Oplog, RepairMaster, Versioned};
use super::*;

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

/// The flow of [`PutObject`]: the bucket's vFormat, then one of the five strategies; in an
/// aware process under the migration marker ([`Aware`]).
#[derive(Debug)]
pub struct PutObjectFlow(Aware<PutProtocol>);

impl Flow for PutObjectFlow {
    type Schema = ObjmetaSchema;
    type Output = PutOutcome;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<PutOutcome> {
        self.0.advance(io, st)
    }
}

/// Arsenal's put protocol: the bucket's vFormat, then one of the five strategies.
#[derive(Debug)]
struct PutProtocol {
    bucket: String,
    key: String,
    /// The key format and master row key, once the vFormat is known.
    written: Option<(VFormat, Vec<u8>)>,
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
        write: ChildId,
        t: Target,
        text: String,
        /// The version id written, if any.
        output: Option<String>,
    },
    Versioned(Versioned),
    Explicit(Explicit),
    RepairMaster(RepairMaster),
    Oplog(Oplog),
    Done,
}

impl<'a> PutObject<'a> {
    /// `putObject(bucket, key, value, params)` → what it wrote (Arsenal's result
    /// `{"versionId": "…"}` or `None`, the version id, the key format, the master's row key);
    /// `value` must be a JSON object.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        key: &str,
        mut value: Json,
        params: Option<Json>,
        start: Start,
    ) -> PutObject<'a> {
        if value.as_object().is_none() {
            let error = ObjmetaError::internal("object metadata is not a JSON object");
            return Operation::failed(ctx.into(), error);
        }
        escape_tags(&mut value);
        let strategy = Strategy::of(params.as_ref());
        let flow = PutProtocol {
            bucket: bucket.to_string(),
            key: key.to_string(),
            written: None,
            phase: PutPhase::VFormat {
                lookup: BucketVFormat::Start,
                value,
                strategy,
            },
        };
        begin(ctx, start, PutObjectFlow(Aware::new(flow)))
    }
}

impl Protocol for PutProtocol {
    fn bucket(&self) -> &str {
        &self.bucket
    }

    fn use_layout(&mut self, layout: &BucketLayout) {
        if let PutPhase::VFormat { lookup, .. } = &mut self.phase {
            *lookup = BucketVFormat::Known(layout.vformat);
        }
    }
}

impl PutProtocol {
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
                    write: start_write(io, st, t.m_row.clone(), rep)?,
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
                    write: start_write(io, st, t.m_row.clone(), rep)?,
                    t,
                    text,
                    output: Some(vid),
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

impl Flow for PutProtocol {
    type Schema = ObjmetaSchema;
    type Output = PutOutcome;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<PutOutcome> {
        let version_id = ready!(self.write(io, st));
        // Set when the vFormat was known, before any strategy could finish.
        let Some((vformat, master_row_key)) = self.written.take() else {
            return Err(ObjmetaError::internal(
                "put finished before its key format was known",
            ));
        };
        Ok(Some(PutOutcome {
            result: version_id.as_deref().map(version_result),
            version_id,
            vformat,
            master_row_key,
        }))
    }
}

/// What [`PutObject`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PutOutcome {
    /// Arsenal's result: `{"versionId": "…"}` when a version id was written (or given).
    pub result: Option<String>,
    /// The version id of that result.
    pub version_id: Option<String>,
    /// The bucket's key format the object was written in.
    pub vformat: VFormat,
    /// The row key of the object's master.
    pub master_row_key: Vec<u8>,
}

impl PutProtocol {
    /// Runs the put; `Some(version id)` once written.
    fn write(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Option<String>> {
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
                    self.written = Some((vf, t.m_row.clone()));
                    self.phase = self.begin(io, st, t, value, strategy)?;
                }
                PutPhase::Master {
                    write,
                    t,
                    text,
                    output,
                } => {
                    ready!(io.written(write),
                        self.phase => PutPhase::Master { write, t, text, output });
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
