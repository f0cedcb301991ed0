//! `rowkit s3 …` and the s3 parts of `rowkit key`: Arsenal's object metadata
//! (`objmeta.md` 17) through `rowkit_client::objmeta` over the sync driver.

use crate::check::{CheckFlags, CheckOutput, check_error, check_timeout};
use clap::{Args, Subcommand};
use rowkit_client::objmeta::{ObjectMetadata, bucket_rows};
use rowkit_client::{Driver, SyncDriver, block_on};
use rowkit_codec::escape::{self, escape};
use rowkit_codec::explain;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{
    MASTER_PREFIX, METASTORE, SEPARATOR, VFormat, collection_for_bucket, row_key,
};
use rowkit_codec::objmeta::listing::{ListingParams, ListingType};
use rowkit_codec::objmeta::version_id::generated_at_ms;
use rowkit_statemachines::Timestamp;
use rowkit_statemachines::objmeta::{
    ObjmetaConfig, ObjmetaError, ObjmetaEvent, ObjmetaState, REPAIR_DELAY_US, RepairTask,
};
use rowkit_store::Store;
use rowkit_store::driver::Clock;
use serde_json::{Map, Value, json};

use crate::args::Context;
use crate::error::CliError;
use crate::output::{Output, bytes_fields};

/// `rowkit s3 [--table T] [--pid N] [--rg ID] …`.
#[derive(Debug, Args)]
pub struct S3Args {
    /// The store and its clock.
    #[command(flatten)]
    pub store: crate::args::StoreArgs,
    /// Table.
    #[arg(long, global = true, default_value = "objmeta")]
    pub table: String,
    /// Process id in generated version ids (default: the OS process id).
    #[arg(long, global = true)]
    pub pid: Option<u64>,
    /// Replication group id.
    #[arg(long, global = true, default_value = "RG001")]
    pub rg: String,
    /// The operation.
    #[command(subcommand)]
    pub command: S3Command,
}

/// Listing options shared by `list` and `versions`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Bucket.
    pub bucket: String,
    /// Prefix.
    #[arg(long)]
    pub prefix: Option<String>,
    /// Delimiter.
    #[arg(long)]
    pub delimiter: Option<String>,
    /// Max keys (0 = 1000).
    #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
    pub max_keys: Option<i64>,
}

/// `rowkit s3 …` operations.
#[derive(Debug, Subcommand)]
pub enum S3Command {
    /// Create the table and its families `d` and `f`.
    Setup,
    /// Buckets.
    #[command(subcommand)]
    Bucket(BucketCommand),
    /// putObject.
    Put {
        /// Bucket.
        bucket: String,
        /// Object key.
        key: String,
        /// Metadata (a JSON object); `--meta` is the same.
        #[arg(long, visible_alias = "meta", conflicts_with = "value_file")]
        value: Option<String>,
        /// Metadata from a file (`-`: stdin).
        #[arg(long)]
        value_file: Option<std::path::PathBuf>,
        /// The whole params object.
        #[arg(long)]
        params: Option<String>,
        /// The bucket's versioning: `enabled` (also bare `--versioning`): params.versioning =
        /// true; `suspended`: the null-version put (params.versionId = "", value.isNull = true
        /// unless set); `off`: a non-versioned put (no params.versioning).
        #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "enabled")]
        versioning: Option<Versioning>,
        /// params.versionId.
        #[arg(long)]
        version_id: Option<String>,
        /// params.repairMaster = true.
        #[arg(long)]
        repair_master: bool,
        /// params.needOplogUpdate = true.
        #[arg(long)]
        need_oplog_update: bool,
        /// params.originOp.
        #[arg(long)]
        origin_op: Option<String>,
    },
    /// getObject.
    Get {
        /// Bucket.
        bucket: String,
        /// Object key.
        key: String,
        /// Raw version id.
        #[arg(long)]
        version_id: Option<String>,
    },
    /// deleteObject.
    Delete {
        /// Bucket.
        bucket: String,
        /// Object key.
        key: String,
        /// Raw version id.
        #[arg(long)]
        version_id: Option<String>,
        /// doesNotNeedOpogUpdate.
        #[arg(long)]
        no_oplog: bool,
        /// originOp.
        #[arg(long)]
        origin_op: Option<String>,
        /// Run scheduled repairs at their due time (`wait`) or leave the placeholder (`skip`).
        #[arg(long, value_enum, default_value = "wait")]
        repair: RepairWhen,
    },
    /// ListObjects (DelimiterMaster by default).
    List {
        /// Common listing options.
        #[command(flatten)]
        list: ListArgs,
        /// Algorithm.
        #[arg(long, value_enum, default_value = "DelimiterMaster")]
        algo: Algo,
        /// S3 v1 marker.
        #[arg(long, conflicts_with_all = ["v2", "continuation_token", "start_after"])]
        marker: Option<String>,
        /// S3 v2 flavour (implied by `--continuation-token` and `--start-after`).
        #[arg(long)]
        v2: bool,
        /// v2 continuation token.
        #[arg(long)]
        continuation_token: Option<String>,
        /// v2 start-after.
        #[arg(long)]
        start_after: Option<String>,
    },
    /// ListObjectVersions.
    Versions {
        /// Common listing options.
        #[command(flatten)]
        list: ListArgs,
        /// Key marker.
        #[arg(long)]
        key_marker: Option<String>,
        /// Version-id marker (raw).
        #[arg(long, requires = "key_marker")]
        version_id_marker: Option<String>,
    },
    /// getUUID.
    Uuid,
    /// countItems.
    Count,
    /// Check the table (or one bucket): keys, documents, derived cells, key formats, masters
    /// against their versions (dangling, behind, missing, placeholders whose repair is due).
    /// `--fix` rewrites derived cells from the document and sets masters to their newest
    /// version (due placeholders, lagging or missing masters). Exit 0 when clean, 1 when
    /// problems are left, 2 when it could not run.
    Check {
        /// Only this bucket (its collection and metastore row).
        bucket: Option<String>,
        /// `--fix`, `--grace`.
        #[command(flatten)]
        flags: CheckFlags,
    },
    /// Migrate the bucket's key layout to `--to` (`docs/migration.md` §3) as far as the gates
    /// allow: without gates the run copies and verifies (ends in `verifying`); `--switch`
    /// switches the bucket, `--finish` deletes the old layout, `--abort` rolls back. Each gate
    /// and the rollback wait the settle time first. Exit 0 when the run ended as asked, 1 when
    /// conflicts or findings block it, 2 when it could not run.
    Migrate(crate::s3_migrate::MigrateArgs),
    /// Run the due placeholder repairs now: every placeholder master of the bucket (default:
    /// of every bucket of the metastore) whose repair was due (its id's time + 15 s ≤ now) and
    /// never ran, e.g. because the process that scheduled it exited.
    Repair {
        /// Bucket (default: every bucket).
        bucket: Option<String>,
        /// Repair placeholders not yet due too.
        #[arg(long)]
        all: bool,
    },
}

impl S3Command {
    /// Whether the command only reads (the store is then opened read-only). `uuid` and
    /// `count` are not: Arsenal writes the uuid and count documents when they are missing.
    pub fn only_reads(&self) -> bool {
        matches!(
            self,
            S3Command::Get { .. }
                | S3Command::List { .. }
                | S3Command::Versions { .. }
                | S3Command::Bucket(BucketCommand::Get { .. } | BucketCommand::List)
                | S3Command::Check {
                    flags: CheckFlags { fix: false, .. },
                    ..
                }
        )
    }
}

/// `s3 delete --repair`: what happens to the repair a delete of the current version schedules.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum RepairWhen {
    /// Sleep until it is due and run it.
    Wait,
    /// Leave the placeholder master (`s3 repair` mends it later).
    Skip,
}

/// `s3 list --algo`: Arsenal's listing algorithm.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Algo {
    /// Masters only (S3 ListObjects).
    #[value(name = "DelimiterMaster")]
    DelimiterMaster,
    /// Every key as stored.
    #[value(name = "Delimiter")]
    Delimiter,
}

/// `s3 put --versioning [MODE]`: the params a caller sends in each bucket versioning state
/// (`objmeta.md` 12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Versioning {
    /// A new version (Case1): `params.versioning = true`.
    Enabled,
    /// The null version overwritten (Case2): `params.versionId = ""`, `value.isNull = true`.
    Suspended,
    /// A non-versioned put: no `params.versioning`.
    Off,
}

/// `rowkit s3 bucket …`.
#[derive(Debug, Subcommand)]
pub enum BucketCommand {
    /// createBucket.
    Create {
        /// Bucket.
        bucket: String,
        /// BucketInfo JSON.
        #[arg(long)]
        md: Option<String>,
        /// Owner canonical id.
        #[arg(long, default_value = "rowkit")]
        owner: String,
        /// Owner display name.
        #[arg(long, default_value = "rowkit")]
        owner_display_name: String,
        /// Default key format for this call.
        #[arg(long)]
        vformat: Option<String>,
    },
    /// deleteBucket.
    Delete {
        /// Bucket.
        bucket: String,
    },
    /// getBucketAttributes.
    Get {
        /// Bucket.
        bucket: String,
    },
    /// putBucketAttributes: replaces the stored BucketInfo (its vFormat is kept).
    PutAttributes {
        /// Bucket.
        bucket: String,
        /// BucketInfo JSON.
        #[arg(long)]
        md: String,
    },
    /// listBuckets.
    List,
}

/// `rowkit key encode s3 …`.
#[derive(Debug, Args)]
pub struct EncodeArgs {
    /// Bucket.
    #[arg(long)]
    pub bucket: String,
    /// Object key.
    #[arg(long)]
    pub key: String,
    /// Raw version id (a version key).
    #[arg(long)]
    pub version_id: Option<String>,
    /// Key format.
    #[arg(long, default_value = "v1")]
    pub format: String,
}

/// An error of a call on `bucket` (and object `key`), its message naming them.
fn op_error_in<'a>(
    bucket: &'a str,
    key: Option<&'a str>,
) -> impl Fn(ObjmetaError) -> CliError + 'a {
    move |e| CliError::operation(e.in_call(bucket, key))
}

/// The option `what`'s JSON object (Arsenal's values, params and bucket metadata are objects:
/// anything else is bad input, refused before any request).
fn parse_json_object(what: &str, text: &str) -> Result<Json, CliError> {
    let json = Json::parse(text).map_err(|e| CliError::usage(format!("{what}: {e}")))?;
    if json.as_object().is_none() {
        return Err(CliError::usage(format!("{what} must be a JSON object")));
    }
    Ok(json)
}

fn to_value(j: &Json) -> Value {
    serde_json::to_value(j).unwrap_or(Value::Null)
}

fn text_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::String(text.to_string()))
}

fn events_json(events: &[ObjmetaEvent]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|e| match e {
            ObjmetaEvent::Put { collection, key, value } => {
                Some(json!({"type": "put", "collection": collection, "key": key, "value": text_value(value)}))
            }
            ObjmetaEvent::Delete { collection, key, value } => {
                let mut m = json!({"type": "delete", "collection": collection, "key": key});
                if let Some(v) = value {
                    m["value"] = text_value(v);
                }
                Some(m)
            }
            // Repairs (and events added later) are not table writes: not listed.
            _ => None,
        })
        .collect()
}

fn state(args: &S3Args) -> ObjmetaState {
    let env = |n: &str| std::env::var(n).ok();
    let default_format = match env("DEFAULT_BUCKET_KEY_FORMAT").as_deref() {
        Some("v0") => VFormat::V0,
        _ => VFormat::V1,
    };
    // The update fills the fields a test build adds (rowkit-statemachines' `_planted_bugs`,
    // unified in when a test enables it); in a normal build every field is named here.
    #[allow(clippy::needless_update)]
    let config = ObjmetaConfig {
        table: args.table.clone(),
        pid: args.pid.unwrap_or(u64::from(std::process::id())),
        replication_group_id: args.rg.clone(),
        version_id_encoding_type: env("S3_VERSION_ID_ENCODING_TYPE"),
        default_bucket_key_format: default_format,
        max_cached_buckets: env("METADATA_MAX_CACHED_BUCKETS")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000),
        initial_instance_id: env("INITIAL_INSTANCE_ID"),
        ..ObjmetaConfig::default()
    };
    ObjmetaState::new(config)
}

fn print(out: &Output, value: Value, plain: impl FnOnce() -> String) -> Result<(), CliError> {
    if out.is_json() {
        outln!("{value}");
    } else {
        outln!("{}", plain());
    }
    Ok(())
}

/// The facade every `rowkit s3` command runs through.
pub type Om<'a> = ObjectMetadata<SyncDriver<&'a dyn Store, &'a (dyn Clock + Send + Sync)>>;

/// The facade of `args` over `driver`.
fn facade<D: Driver>(ctx: &Context, args: &S3Args, driver: D) -> ObjectMetadata<D> {
    ObjectMetadata::new(driver, state(args))
        .with_options(ctx.call_options())
        .with_bucket_checks()
}

/// Runs one `rowkit s3` command.
pub fn run(ctx: &Context, args: &S3Args, out: &Output) -> Result<(), CliError> {
    let om: Om<'_> = facade(
        ctx,
        args,
        SyncDriver::new(ctx.store.as_ref(), ctx.clock.as_ref()),
    );
    match &args.command {
        S3Command::Setup => {
            block_on(om.setup()).map_err(CliError::operation)?;
            print(
                out,
                json!({"table": args.table, "families": ["d", "f"]}),
                || format!("table {} ready", args.table),
            )?;
        }
        S3Command::Bucket(b) => bucket(ctx, &om, b, out)?,
        S3Command::Migrate(m) => {
            let pid = args.pid.unwrap_or(u64::from(std::process::id()));
            // Its syncs run at once (`Context::with_pool`).
            ctx.with_pool(usize::from(m.max_inflight), |driver| {
                let om = facade(ctx, args, driver);
                crate::s3_migrate::run(ctx, &om, &args.store.store, pid, m, out)
            })?;
        }
        S3Command::Check { bucket, flags } => {
            let (options, timeout) = (flags.options(), check_timeout(ctx));
            let mut output = CheckOutput::new(out, "s3");
            let summary =
                block_on(om.check(bucket.as_deref(), options, timeout, |e| output.event(e)))
                    .map_err(check_error)?;
            output.finish(&summary)?;
        }
        S3Command::Put {
            bucket,
            key,
            value,
            value_file,
            params,
            versioning,
            version_id,
            repair_master,
            need_oplog_update,
            origin_op,
        } => {
            rowkit_codec::validate::object_key(key).map_err(|e| CliError::usage(e.to_string()))?;
            let text = match (value, value_file) {
                (Some(v), _) => v.clone(),
                (None, Some(f)) => crate::input::read_text(f).map_err(|e| {
                    CliError::usage(format!("{}: {e}", crate::input::display_name(f)))
                })?,
                (None, None) => return Err(CliError::usage("--value or --value-file is required")),
            };
            let mut value = parse_json_object("--value", &text)?;
            let Some(value_members) = value.as_object_mut() else {
                return Err(CliError::usage("--value must be a JSON object"));
            };
            let mut p = match params {
                Some(t) => parse_json_object("--params", t)?,
                None => Json::Object(Default::default()),
            };
            let Some(o) = p.as_object_mut() else {
                return Err(CliError::usage("--params must be a JSON object"));
            };
            match versioning {
                Some(Versioning::Enabled) => o.set("versioning", Json::Bool(true)),
                Some(Versioning::Suspended) => {
                    if version_id.is_some() {
                        return Err(CliError::usage(
                            "--versioning suspended puts the null version: no --version-id",
                        ));
                    }
                    o.set("versionId", Json::str(""));
                    if value_members.get("isNull").is_none() {
                        value_members.set("isNull", Json::Bool(true));
                    }
                }
                Some(Versioning::Off) => {
                    o.remove("versioning");
                }
                None => {}
            }
            if let Some(v) = version_id {
                o.set("versionId", Json::str(v.clone()));
            }
            if *repair_master {
                o.set("repairMaster", Json::Bool(true));
            }
            if *need_oplog_update {
                o.set("needOplogUpdate", Json::Bool(true));
            }
            if let Some(op) = origin_op {
                o.set("originOp", Json::str(op.clone()));
            }

            let put = block_on(om.put_object(bucket, key, &value, Some(&p)))
                .map_err(op_error_in(bucket, Some(key)))?;
            let result = put.result;
            let mut m = Map::new();
            m.insert("bucket".into(), json!(bucket));
            m.insert("key".into(), json!(key));
            m.insert("vformat".into(), json!(put.vformat.as_str()));
            bytes_fields(&mut m, "row_key", &put.master_row_key);
            m.insert("result".into(), json!(result));
            m.insert("version_id".into(), json!(put.version_id));
            m.insert(
                "events".into(),
                Value::Array(events_json(&om.take_events())),
            );
            print(out, Value::Object(m), || {
                result.clone().unwrap_or_else(|| "ok".into())
            })?;
        }
        S3Command::Get {
            bucket,
            key,
            version_id,
        } => {
            let v = block_on(om.get_object(bucket, key, version_id.as_deref()))
                .map_err(op_error_in(bucket, Some(key)))?;
            print(
                out,
                json!({"bucket": bucket, "key": key, "version_id": version_id, "value": to_value(&v)}),
                || v.stringify(),
            )?;
        }
        S3Command::Delete {
            bucket,
            key,
            version_id,
            no_oplog,
            origin_op,
            repair,
        } => {
            let mut p = rowkit_codec::objmeta::json::JsonObject::new();
            if let Some(v) = version_id {
                p.set("versionId", Json::str(v.clone()));
            }
            if *no_oplog {
                p.set("doesNotNeedOpogUpdate", Json::Bool(true));
            }
            block_on(om.delete_object(bucket, key, Some(&Json::Object(p)), origin_op.as_deref()))
                .map_err(op_error_in(bucket, Some(key)))?;
            let mut repairs = Vec::new();
            match repair {
                RepairWhen::Wait => {
                    let tasks: Vec<RepairTask> = om.drop_pending_repairs();
                    for t in tasks {
                        ctx.clock.sleep_until(t.due);
                        let r = block_on(om.run_repair(t));
                        repairs.push(json!({"key": r.task.key, "phd_version_id": r.task.phd_version_id, "due": r.task.due.0, "outcome": r.outcome.as_str()}));
                    }
                }
                RepairWhen::Skip => {
                    for t in om.drop_pending_repairs() {
                        repairs.push(json!({"key": t.key, "phd_version_id": t.phd_version_id, "due": t.due.0, "outcome": "skipped"}));
                    }
                }
            }
            let events = events_json(&om.take_events());
            print(
                out,
                json!({"bucket": bucket, "key": key, "version_id": version_id, "events": events, "repairs": repairs}),
                || "ok".into(),
            )?;
        }
        S3Command::List {
            list,
            algo,
            marker,
            v2,
            continuation_token,
            start_after,
        } => {
            let listing_type = match algo {
                Algo::DelimiterMaster => ListingType::DelimiterMaster,
                Algo::Delimiter => ListingType::Delimiter,
            };
            let p = ListingParams {
                listing_type,
                delimiter: list.delimiter.clone().filter(|s| !s.is_empty()),
                prefix: list.prefix.clone().filter(|s| !s.is_empty()),
                max_keys: list.max_keys,
                marker: marker.clone().filter(|s| !s.is_empty()),
                v2: *v2 || continuation_token.is_some() || start_after.is_some(),
                start_after: start_after.clone().filter(|s| !s.is_empty()),
                continuation_token: continuation_token.clone().filter(|s| !s.is_empty()),
                ..Default::default()
            };
            let r = block_on(om.list_object(&list.bucket, &p))
                .map_err(op_error_in(&list.bucket, None))?;
            let v = listing_json(&r, false);
            print(out, v, || plain_listing(&r))?;
        }
        S3Command::Versions {
            list,
            key_marker,
            version_id_marker,
        } => {
            let p = ListingParams {
                listing_type: ListingType::DelimiterVersions,
                delimiter: list.delimiter.clone().filter(|s| !s.is_empty()),
                prefix: list.prefix.clone().filter(|s| !s.is_empty()),
                max_keys: list.max_keys,
                key_marker: key_marker.clone().filter(|s| !s.is_empty()),
                version_id_marker: version_id_marker.clone().filter(|s| !s.is_empty()),
                ..Default::default()
            };
            let r = block_on(om.list_object(&list.bucket, &p))
                .map_err(op_error_in(&list.bucket, None))?;
            print(out, listing_json(&r, true), || plain_listing(&r))?;
        }
        S3Command::Uuid => {
            let u = block_on(om.get_uuid(None)).map_err(CliError::operation)?;
            print(out, json!({"uuid": u}), || u.clone())?;
        }
        S3Command::Count => {
            let c = block_on(om.count_items()).map_err(CliError::operation)?;
            print(out, to_value(&c), || c.stringify())?;
        }
        S3Command::Repair { bucket, all } => {
            let buckets = match bucket {
                Some(b) => vec![b.clone()],
                None => block_on(om.list_buckets())
                    .map_err(CliError::operation)?
                    .into_iter()
                    .map(|b| b.name)
                    .collect(),
            };
            let now = ctx.now();
            let mut repairs = Vec::new();
            for b in &buckets {
                for (task, due) in placeholders(ctx, &om, &args.table, b)? {
                    let mut entry = json!({"bucket": b, "key": task.key, "phd_version_id": task.phd_version_id, "due": due.0});
                    entry["outcome"] = if *all || due <= now {
                        json!(block_on(om.run_repair(task)).outcome.as_str())
                    } else {
                        json!("not_due")
                    };
                    repairs.push(entry);
                }
            }
            let events = events_json(&om.take_events());
            let done = repairs.iter().filter(|r| r["outcome"] != "not_due").count();
            print(
                out,
                json!({"buckets": buckets, "repairs": repairs, "events": events}),
                || format!("{done} of {} placeholder masters repaired", repairs.len()),
            )?;
        }
    }
    Ok(())
}

fn bucket(ctx: &Context, om: &Om<'_>, cmd: &BucketCommand, out: &Output) -> Result<(), CliError> {
    match cmd {
        BucketCommand::Create {
            bucket,
            md,
            owner,
            owner_display_name,
            vformat,
        } => {
            rowkit_codec::validate::bucket_name(bucket).map_err(|e| CliError::Schema {
                id: "InvalidBucketName".into(),
                message: e.to_string(),
                exit: 2,
            })?;
            if let Some(v) = vformat {
                let vf = VFormat::parse(v).map_err(|e| CliError::usage(e.to_string()))?;
                block_on(om.with_state(|st| st.config.default_bucket_key_format = vf));
            }
            let md = match md {
                Some(t) => parse_json_object("--md", t)?,
                None => default_md(ctx, bucket, owner, owner_display_name),
            };
            let vf = block_on(om.create_new_bucket(bucket, &md)).map_err(CliError::operation)?;
            let value = block_on(om.get_bucket_attributes(bucket)).map_err(CliError::operation)?;
            let mut m = Map::new();
            m.insert("bucket".into(), json!(bucket));
            m.insert("vformat".into(), json!(vf.as_str()));
            bytes_fields(&mut m, "row_key", &row_key(METASTORE, bucket));
            m.insert("value".into(), to_value(&value));
            m.insert(
                "events".into(),
                Value::Array(events_json(&om.take_events())),
            );
            print(out, Value::Object(m), || {
                format!("created bucket {bucket} ({})", vf.as_str())
            })?;
        }
        BucketCommand::Delete { bucket } => {
            let n = block_on(om.delete_bucket(bucket)).map_err(CliError::operation)?;
            let events = events_json(&om.take_events());
            print(
                out,
                json!({"bucket": bucket, "deleted_rows": n, "events": events}),
                || format!("deleted bucket {bucket} ({n} rows)"),
            )?;
        }
        BucketCommand::Get { bucket } => {
            let v = block_on(om.get_bucket_attributes(bucket)).map_err(CliError::operation)?;
            print(
                out,
                json!({"bucket": bucket, "value": to_value(&v)}),
                || v.stringify(),
            )?;
        }
        BucketCommand::PutAttributes { bucket, md } => {
            let md = parse_json_object("--md", md)?;
            block_on(om.put_bucket_attributes(bucket, &md)).map_err(CliError::operation)?;
            let value = block_on(om.get_bucket_attributes(bucket)).map_err(CliError::operation)?;
            let mut m = Map::new();
            m.insert("bucket".into(), json!(bucket));
            bytes_fields(&mut m, "row_key", &row_key(METASTORE, bucket));
            m.insert("value".into(), to_value(&value));
            m.insert(
                "events".into(),
                Value::Array(events_json(&om.take_events())),
            );
            print(out, Value::Object(m), || value.stringify())?;
        }
        BucketCommand::List => {
            let list = block_on(om.list_buckets()).map_err(CliError::operation)?;
            let items: Vec<Value> = list
                .iter()
                .map(|b| {
                    let mut m = Map::new();
                    m.insert("name".into(), json!(b.name));
                    m.insert("vformat".into(), json!(b.vformat.as_str()));
                    m.insert("special".into(), json!(b.special));
                    bytes_fields(&mut m, "row_key", &row_key(METASTORE, &b.name));
                    Value::Object(m)
                })
                .collect();
            print(out, json!({"buckets": items}), || {
                list.iter()
                    .map(|b| b.name.clone())
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        }
    }
    Ok(())
}

/// Every placeholder master of `bucket` as the repair it needs, with the time it was due: its
/// id's generation time plus the repair delay (`objmeta.md` 3.1, 8.3); an id without a time
/// counts as due at once. The task's `due` is that time, or now if later.
fn placeholders(
    ctx: &Context,
    om: &Om<'_>,
    table: &str,
    bucket: &str,
) -> Result<Vec<(RepairTask, Timestamp)>, CliError> {
    let vf = block_on(om.get_bucket_vformat(bucket)).map_err(CliError::operation)?;
    let rows = block_on(bucket_rows(
        om.driver(),
        table,
        collection_for_bucket(bucket),
    ))
    .map_err(|e| CliError::operation(ObjmetaError::internal_error(e)))?;
    let now = ctx.now();
    let mut found = Vec::new();
    for r in rows {
        let (Some(k), Some(v)) = (r.get("key").and_then(Json::as_str), r.get("value")) else {
            continue;
        };
        let object_key = match vf {
            VFormat::V1 => match k.strip_prefix(MASTER_PREFIX) {
                Some(o) => o,
                None => continue,
            },
            VFormat::V0 if k.contains(SEPARATOR) => continue,
            VFormat::V0 => k,
        };
        if v.get("isPHD") != Some(&Json::Bool(true)) {
            continue;
        }
        let Some(p) = v.get("versionId").and_then(Json::as_str) else {
            continue;
        };
        let due = generated_at_ms(p).map_or(Timestamp(i64::MIN), |ms| {
            Timestamp::from_millis(ms).saturating_add_micros(REPAIR_DELAY_US)
        });
        let task = RepairTask {
            bucket: bucket.to_string(),
            key: object_key.to_string(),
            phd_version_id: p.to_string(),
            vformat: vf,
            due: due.min(now),
            migration: None,
        };
        found.push((task, due));
    }
    Ok(found)
}

/// The BucketInfo of vectors `metastore_rows` with this name, owner and time.
fn default_md(ctx: &Context, bucket: &str, owner: &str, display: &str) -> Json {
    let now = ctx.now();
    let secs = now.0.div_euclid(1_000_000);
    let millis = now.0.div_euclid(1000).rem_euclid(1000);
    let date = crate::clock::format_rfc3339_millis(secs, millis);
    let uid = rowkit_statemachines::objmeta::uuid_v4(ctx.seed);
    let text = json!({
        "acl": {"Canned": "private", "FULL_CONTROL": [], "WRITE": [], "WRITE_ACP": [], "READ": [], "READ_ACP": []},
        "name": bucket, "owner": owner, "ownerDisplayName": display, "creationDate": date,
        "mdBucketModelVersion": 16, "transient": false, "deleted": false, "serverSideEncryption": null,
        "versioningConfiguration": null, "locationConstraint": null, "readLocationConstraint": null,
        "cors": null, "replicationConfiguration": null, "lifecycleConfiguration": null, "bucketPolicy": null,
        "uid": uid, "isNFS": null, "ingestion": null, "azureInfo": null, "objectLockEnabled": false,
        "objectLockConfiguration": null, "notificationConfiguration": null, "tags": [], "quotaMax": 0
    })
    .to_string();
    Json::parse(&text).unwrap_or_default()
}

/// Arsenal's listing result as JSON with parsed values; versions split into delete markers.
fn listing_json(r: &Json, versions: bool) -> Value {
    let mut m = Map::new();
    let prefixes = r.get("CommonPrefixes").map(to_value).unwrap_or(json!([]));
    m.insert("CommonPrefixes".into(), prefixes);
    let entries: Vec<Value> = match r.get(if versions { "Versions" } else { "Contents" }) {
        Some(Json::Array(items)) => items
            .iter()
            .map(|e| {
                let mut v = to_value(e);
                if let Some(t) = e.get("value").and_then(Json::as_str) {
                    v["value"] = text_value(t);
                }
                v
            })
            .collect(),
        _ => Vec::new(),
    };
    if versions {
        let (dms, vers): (Vec<Value>, Vec<Value>) = entries.into_iter().partition(|e| {
            let d = &e["value"]["isDeleteMarker"];
            !(d.is_null() || d == &json!(false) || d == &json!(0) || d == &json!(""))
        });
        m.insert("Versions".into(), Value::Array(vers));
        m.insert("DeleteMarkers".into(), Value::Array(dms));
    } else {
        m.insert("Contents".into(), Value::Array(entries));
    }
    for k in [
        "IsTruncated",
        "Delimiter",
        "NextMarker",
        "NextContinuationToken",
        "NextKeyMarker",
        "NextVersionIdMarker",
    ] {
        if let Some(v) = r.get(k) {
            m.insert(k.into(), to_value(v));
        }
    }
    Value::Object(m)
}

fn plain_listing(r: &Json) -> String {
    let mut lines = Vec::new();
    if let Some(Json::Array(p)) = r.get("CommonPrefixes") {
        lines.extend(
            p.iter()
                .filter_map(Json::as_str)
                .map(|s| format!("PRE {}", escape(s.as_bytes()))),
        );
    }
    for list in ["Contents", "Versions"] {
        if let Some(Json::Array(items)) = r.get(list) {
            for e in items {
                let k = e.get("key").and_then(Json::as_str).unwrap_or("");
                match e.get("versionId").and_then(Json::as_str) {
                    Some(v) => lines.push(format!(
                        "{}\t{}",
                        escape(k.as_bytes()),
                        escape(v.as_bytes())
                    )),
                    None => lines.push(escape(k.as_bytes())),
                }
            }
        }
    }
    lines.join("\n")
}

/// `rowkit key encode s3` (fields from `rowkit_codec::explain`).
pub fn key_encode(a: &EncodeArgs, out: &Output) -> Result<(), CliError> {
    let doc = explain::encode_s3(&a.bucket, &a.key, a.version_id.as_deref(), &a.format)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let row = doc["row_key"].as_str().unwrap_or_default().to_string();
    print(out, Value::Object(doc), || row)?;
    Ok(())
}

/// `rowkit key decode --schema s3`.
pub fn key_decode(text: &str, out: &Output) -> Result<(), CliError> {
    let bytes = escape::parse(text).map_err(|e| CliError::usage(format!("key {text:?}: {e}")))?;
    let doc = explain::decode_s3(&bytes).map_err(|e| CliError::Schema {
        id: "not_an_s3_row_key".into(),
        message: e.to_string(),
        exit: 2,
    })?;
    let plain = format!(
        "{} {} {} {}",
        doc["collection"].as_str().unwrap_or_default(),
        doc["kind"].as_str().unwrap_or_default(),
        doc["format"].as_str().unwrap_or("-"),
        escape(doc["object_key"].as_str().unwrap_or_default().as_bytes())
    );
    print(out, Value::Object(doc), || plain)?;
    Ok(())
}
