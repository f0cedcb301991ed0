//! `GetObject` with placeholder resolution (`objmeta.md` 9.2).

use super::*;

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
    pub(super) fn new(bucket: &str, key: &str, version_id: Option<&str>) -> GetObjectFlow {
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
        start: Start,
    ) -> GetObject<'a> {
        let flow = GetObjectFlow::new(bucket, key, version_id);
        begin(ctx, start, flow)
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
