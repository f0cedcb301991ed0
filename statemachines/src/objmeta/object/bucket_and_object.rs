//! `getBucketAndObject`: the bucket's metastore row, then a `GetObject` flow.

use super::*;

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
        start: Start,
    ) -> GetBucketAndObject<'a> {
        let flow = GetBucketAndObjectFlow {
            bucket: bucket.to_string(),
            phase: BucketAndObjectPhase::Start(GetObjectFlow::new(bucket, key, version_id)),
        };
        begin(ctx, start, flow)
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
