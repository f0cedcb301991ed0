/* tslint:disable */
/* eslint-disable */
/**
 * The `ReadableStreamType` enum.
 *
 * *This API requires the following crate features to be activated: `ReadableStreamType`*
 */

export type ReadableStreamType = "bytes";

/**
 * Options every client takes (all optional). Without `gateway` the client works on the
 * module's in-memory store, shared by every offline client of the page (or Node process).
 */
export interface ClientOptions {
    /** A rowkit gateway's base URL (`rowkit serve`), e.g. `"http://127.0.0.1:8080"`. */
    gateway?: string;
    /** The bearer token the gateway requires (`rowkit serve --token`). */
    token?: string;
    /** The project named in the gateway's paths (default `"p"`). */
    project?: string;
    /** The instance named in the gateway's paths (default `"i"`). */
    instance?: string;
    /** The table id, instead of the schema's default. */
    table?: string;
    /** Base seed of the operations' randomness: a whole number from 0 to 2^53-1 (default 1). */
    seed?: number;
    /** Aborting it cancels every operation of the client (gateway only). */
    signal?: AbortSignal;
    /**
     * How long each operation may take, in ms (default: each schema's own, 60 s for most,
     * an hour for checks). Through a gateway it also bounds each request: a stopped server
     * fails an operation with code `unavailable` once it has passed ("the gateway at … did not
     * answer within 8 s (last error: …)").
     */
    deadlineMs?: number;
}



/**
 * What `validate` checks: `"bucket"` (an S3 bucket name), `"objectKey"`, `"commit"` (a Gold
 * commit as typed: a whole number from 0 to 2147483647), `"digest"` (32 hex characters, or
 * empty for a missing point), `"params"` (a trace's `k=v,…`, at least one pair), `"graph"` (a
 * graph id), `"triple"` (one triple in BadWolf's text form), `"mountName"`, `"address"` (a
 * server address to mount).
 */
export type ValidatedField =
| "bucket"
| "objectKey"
| "commit"
| "digest"
| "params"
| "graph"
| "triple"
| "mountName"
| "address";



/** A JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
/** A JSON object: a bucket's or object's metadata as Arsenal stores it (members in order). */
export interface JsonObject {
    [member: string]: JsonValue;
}

/** Arsenal's `putObject` parameters. */
export interface PutObjectParams {
    /** Write a new version (a versioned bucket). */
    versioning?: boolean;
    /** Write this version (`""`: the null version). */
    versionId?: string;
    /** With `versionId`: also set the master to this version when it is newer. */
    repairMaster?: boolean;
    /** Replace the master, with a delete-then-put oplog. */
    needOplogUpdate?: boolean;
    /** The operation named in that oplog. */
    originOp?: string;
    [param: string]: JsonValue | undefined;
}

/** Arsenal's `deleteObject` parameters. */
export interface DeleteObjectParams {
    /** Delete this version instead of the master. */
    versionId?: string;
    [param: string]: JsonValue | undefined;
}

/** Arsenal's listing parameters. */
export interface ListingParams {
    /** `"DelimiterMaster"` (default: S3 ListObjects) or `"DelimiterVersions"`. */
    listingType?: "DelimiterMaster" | "DelimiterVersions";
    prefix?: string;
    delimiter?: string;
    maxKeys?: number;
    marker?: string;
    startAfter?: string;
    continuationToken?: string;
    keyMarker?: string;
    versionIdMarker?: string;
}

/** One key of a listing; `value` is the stored metadata as JSON text. */
export interface ListedObject {
    key: string;
    versionId?: string;
    value: string;
}

/** Arsenal's listing result: `Contents` (masters) or `Versions`, and `CommonPrefixes`. */
export interface ListingResult {
    IsTruncated: boolean;
    CommonPrefixes: string[];
    Contents?: ListedObject[];
    Versions?: ListedObject[];
    [field: string]: JsonValue | ListedObject[] | undefined;
}

/** `migrateBucket`'s options: the gates and flags of `rowkit s3 migrate` (all optional). */
export interface MigrateBucketOptions {
    /** `--switch`: let the run switch the bucket to the new format (no writer unaware of the migration writes meanwhile). */
    switch?: boolean;
    /** `--finish`: let the run delete the old layout (no process of the old configuration is left). */
    finish?: boolean;
    /** `--abort`: roll the migration in progress back (before the switch); `to` is that run's. */
    abort?: boolean;
    /** `--settle`: the settle time Δ in ms for a run this call starts (at least 85 000; default 90 000). */
    settleMs?: number;
    /** `--page`: rows read per page (default: the pass's). */
    page?: number;
    /** `--take-over`: take over a run another migrator's lease holds. */
    takeOver?: boolean;
    /** Who runs it, in the checkpoint's lease (default: `browser:` and 16 random hex digits). */
    owner?: string;
    /** `--resolve`: settle conflicts met after the switch by keeping this side. */
    resolve?: "keep-to" | "keep-from";
    /** `--max-pause`: refuse to fence when the expected pause of the switch is longer (ms). */
    maxPauseMs?: number;
}

/** Counters of a migration pass (`docs/migration.md` §7.1). */
export interface MigrateCounters {
    rows_scanned: number;
    copied: number;
    deleted: number;
    stamped: number;
    unchanged: number;
    stragglers: number;
    conflicts: number;
}

/** A migration state (`docs/migration.md` §3). */
export type MigrationStateName = "copying" | "verifying" | "switching" | "switched" | "cleaning" | "aborting";

/** A conflict left for the operator (§4.6). */
export interface MigrateConflict {
    key: string;
    from_hash: string;
    to_hash: string | null;
}

/** A key or row the migration cannot sync (§4.1). */
export interface MigrateFinding {
    id: string;
    message: string;
}

/** One event of a running migration (§7.3), as `migrateBucket` hands them to its callback. */
export type MigrateEvent =
| ({ event: "progress"; state: MigrationStateName; pass: number; rate_rows_per_s: number | null; eta_s: number | null } & MigrateCounters)
| { event: "state_changed"; from: MigrationStateName | null; to: MigrationStateName | null }
| { event: "straggler"; key: string }
| ({ event: "conflict" } & MigrateConflict)
| ({ event: "finding" } & MigrateFinding)
| { event: "resolved"; key: string; kept: "keep-to" | "keep-from" };

/** What a migration run did: `rowkit s3 migrate --json`'s result document. */
export interface MigrateResult {
    bucket: string;
    to: "v0" | "v1";
    abort: boolean;
    /** Where it ended: a state (a gate not given), `already` (nothing to do) or `removed` (done). */
    state: MigrationStateName | "already" | "removed";
    run: string | null;
    /** A sweep or the clean-up left conflicts or findings (the CLI exits 1). */
    blocked: boolean;
    passes: ({ kind: string; pass: number; diffs: number } & MigrateCounters)[];
    stragglers: string[];
    /** Conflicts settled by `resolve` (their keys). */
    resolved: string[];
    /** The pause the switch was expected to take (µs), when this run reached it. */
    pause_estimate_us: number | null;
    conflicts: MigrateConflict[];
    findings: MigrateFinding[];
}

/** A bucket's migration state as the migrator reads it (§2.1): marker and checkpoint as stored (§2.2, §7.1). */
export interface MigrationStatus {
    bucket: string;
    vformat: "v0" | "v1";
    marker: { run: string; from: "v0" | "v1"; to: "v0" | "v1"; state: MigrationStateName; since: number; settle_us: number; [member: string]: JsonValue } | null;
    checkpoint: ({ run: string; state: MigrationStateName; pass: number; cursor: string | null; owner: string; lease_until: number;
    pass_rows_previous: number | null; started: number; updated: number } & MigrateCounters) | null;
}

/** One bucket of `listBuckets`. */
export interface BucketEntry {
    name: string;
    /** The bucket's key format. */
    vformat: "v0" | "v1";
    /** Whether it is one of Arsenal's special buckets (users, metastore). */
    special: boolean;
    /** The bucket's metadata (BucketInfo). */
    value: JsonValue;
}



/** A lookup method of `Graph.query` and the fields its arguments are, in order. */
export interface LookupMethod {
    method: string;
    arguments: ("subject" | "predicate" | "object")[];
}

/** The time bounds of `Graph.query` (the CLI's `graph query --lower/--upper/--latest`). */
export interface LookupBounds {
    /** Inclusive lower anchor of temporal triples, RFC 3339. */
    lower?: string;
    /** Inclusive upper anchor of temporal triples, RFC 3339. */
    upper?: string;
    /** Only the latest anchor per predicate. */
    latest?: boolean;
}

/** One triple `Graph.query` found (every part as BadWolf text). */
export interface TripleMatch {
    triple: string;
    subject: string;
    predicate: string;
    object: string;
    uuid: string;
    /** What the method projects (the subject, predicate, object or triple). */
    item: string;
    predicateId: string;
    /** The temporal predicate's time, or `null`. */
    anchor: string | null;
    objectKind: "node" | "predicate" | "literal";
}



/** One cell of a scanned row; byte strings as escaped text and as hex. */
export interface ScannedCell {
    family: string;
    qualifier: string;
    qualifier_hex: string;
    timestampMicros: number;
    /** The value (its first 512 bytes). */
    value: string;
    value_hex: string;
    /** The value's whole length in bytes. */
    valueSize: number;
}

/** What narrows a `scanRows` scan beyond its prefix (every member optional). */
export interface ScanNarrowing {
    /** The first row key to read (inclusive), escaped key text, `hex:…` or bytes. */
    start?: Uint8Array | string;
    /** The row key to stop before (exclusive). */
    end?: Uint8Array | string;
    /** Only the cells of this column family (its exact name); rows without any are skipped. */
    family?: string;
    /** Only the cells with this exact qualifier (escaped text, `hex:…` or bytes). */
    qualifier?: Uint8Array | string;
}

/** A column family of a table `listTables` lists. */
export interface ListedFamily {
    name: string;
    /**
     * Its GC rule in Google's JSON (`{maxNumVersions: 1}`, `{maxAge: "3600s"}`,
     * `{intersection: {rules: [...]}}`, `{union: {rules: [...]}}`); `null` keeps every cell.
     */
    gcRule: GcRuleJson | null;
}

/** A GC rule in Google's JSON (the Bigtable Admin API's `GcRule`). */
export type GcRuleJson =
| { maxNumVersions: number }
| { maxAge: string }
| { intersection: { rules?: GcRuleJson[] } }
| { union: { rules?: GcRuleJson[] } };

/** One table of `listTables`. */
export interface ListedTable {
    /** The table id. */
    name: string;
    /** Its families, ascending by name. */
    families: ListedFamily[];
}

/** One row of `scanRows`. */
export interface ScannedRow {
    row_key: string;
    row_key_hex: string;
    /** The key explained (`null` for schema `"none"`; `{error}` when it is not the schema's). */
    decoded: DecodedKey | { error: string } | null;
    cells: ScannedCell[];
}



/** One finding of a check (`spec/check.md`). */
export interface CheckFinding {
    schema: string;
    /** The finding's kind, e.g. `"missing_index"`. */
    kind: string;
    /** The row it is about, as escaped text and as hex. */
    row_key: string;
    row_key_hex: string;
    /** What is wrong. */
    detail: string;
    /** What a repair does (`"none"`: report only). */
    repair: string;
    /** Whether the repair was applied. */
    repaired: boolean;
}

/** A check's report, as `rowkit … check --json` prints it. */
export interface CheckReport {
    schema: string;
    rows_scanned: number;
    findings_by_kind: Record<string, number>;
    repaired: number;
    left: number;
    /** What the check could not do. */
    notes: string[];
    findings: CheckFinding[];
}



/** The four schemas' short names. */
export type KeySchemaName = "mt" | "gold" | "s3" | "graph";

/** A row key (or qualifier) as escaped text (`\xHH` for other bytes) and as hex. */
export interface KeyBytes {
    row_key: string;
    row_key_hex: string;
}

/** A qualifier as escaped text and as hex. */
export interface QualifierBytes {
    qualifier: string;
    qualifier_hex: string;
}

/** One run of a key's bytes and what its codec says it is. */
export interface KeySegment {
    /** Byte offsets, `end` exclusive. */
    start: number;
    end: number;
    field: string;
    meaning: string;
    bytes: string;
    bytes_hex: string;
}

/** A decoded row key: the schema, the key, its segments and the schema's own fields. */
export interface DecodedKey extends KeyBytes {
    schema: KeySchemaName;
    segments: KeySegment[];
    [field: string]: unknown;
}

/** `encodeMtKey`: a mount table name's node row. */
export interface MtKey extends KeyBytes {
    schema: "mt";
    name: string;
}

/** `encodeGoldTraceKey`: a trace's rows and qualifier at a commit. */
export interface GoldTraceKey extends KeyBytes {
    schema: "gold";
    repo_index: number;
    tile_index: number;
    tile_key: number;
    /** The commit's column within its tile. */
    offset: number;
    shard: number;
    options_row: KeyBytes;
    ops_row: KeyBytes;
    qualifier_md5: QualifierBytes;
    qualifier_digest_id: QualifierBytes;
}

/** `encodeGoldDigestKey`: a digest's digest-map row and qualifier. */
export interface GoldDigestKey extends KeyBytes, QualifierBytes {
    schema: "gold";
    digest: string;
    md5_cell_hex: string;
}

/** `encodeS3Key`: an object's master or version row. */
export interface S3Key extends KeyBytes {
    schema: "s3";
    bucket: string;
    collection: string;
    format: "v0" | "v1";
    kind: "master" | "version";
    object_key: string;
    version_id: string | null;
    arsenal_key: string;
    arsenal_key_hex: string;
}

/** `encodeGraphKey`: a triple's four index rows and its graph's row. */
export interface GraphKey {
    schema: "graph";
    graph: string;
    triple: string;
    uuid: string;
    family: string;
    timestamp_us: number;
    rows: (KeyBytes & QualifierBytes & { index: "SPO" | "SOP" | "POS" | "OSP" })[];
    graph_row: KeyBytes & QualifierBytes;
}



/** `new MountTable(options)`: the common client options and the caller. */
export interface MountTableOptions extends ClientOptions {
    /** The caller's blessing names (default: the server itself, which may do anything). */
    as?: string[];
}

/** One server mounted on a name. */
export interface MountedServer {
    server: string;
    /** When the mount expires, in µs since the Unix epoch. */
    deadlineUs: number;
}

/** A node as `resolve` and `glob` return it. */
export interface MountEntry {
    /** `resolve`: the unresolved rest of the name; `glob`: the name matched. */
    name: string;
    servers: MountedServer[];
    /** Whether the servers are mount tables. */
    mt: boolean;
    /** Whether the servers are leaves. */
    leaf: boolean;
}

/** A node's permissions (spec §7.3): per tag, the blessing patterns in and not in. */
export interface MountPermissions {
    perms: Record<string, { In: string[] | null; NotIn: string[] | null }>;
    /** The permissions' version, for a read-modify-write. */
    version: string;
}



/** `new TraceStore(options)`: the common client options and the table's layout. */
export interface TraceStoreOptions extends ClientOptions {
    /** How trace cells are written: `"md5"` (default) or `"digest-id"`. */
    layout?: "md5" | "digest-id";
}

/** One trace's value at a commit, as `put` writes it. */
export interface TraceEntry {
    /** The trace's params (its id is made of them). */
    params: Record<string, string>;
    /** The trace's options (not part of its id). */
    options?: Record<string, string>;
    /** The digest: 32 hex characters, or `""` for a missing point (anything else is refused). */
    digest: string;
}

/** One trace of a range. */
export interface Trace {
    /** The trace id, `,key=value,…,`. */
    id: string;
    params: Record<string, string>;
    options: Record<string, string>;
    /** The digest at each commit of the range (`""`: none). */
    digests: string[];
}

/** The traces of a range of commits. */
export interface TraceRange {
    layout: "md5" | "digest-id";
    /** The commits (repo indexes) of the range, in order. */
    commits: number[];
    /** Every param's values over the range's traces. */
    paramset: Record<string, string[]>;
    traces: Trace[];
}

/** A whole tile: a range plus its index (`null` when the table has no tile). */
export interface TraceTile extends TraceRange {
    tileIndex: number | null;
}

/** A batch of a streamed tile (see `TraceStore.streamTile`). */
export interface TileBatch {
    traces: { id: string; params: Record<string, string> }[];
    /** Digests first seen in this batch, numbered after those of earlier batches. */
    newDigests: string[];
    /** `cells[t * 256 + c]`: trace `t`'s digest at commit `c` as 1 + its number, 0 = none. */
    cells: Uint32Array;
    /** How many of the tile's shards have been read. */
    shardsDone: number;
}

/** `migrate`'s options: the gates and flags of `rowkit gold migrate` (all optional). */
export interface MigrateTableOptions {
    /** `--switch`: let the run enter `switching` (the Gold writers are stopped). */
    switch?: boolean;
    /** `--finish`: let the run enter `cleaning` and delete the source's Gold rows (no Gold process uses the source any more). */
    finish?: boolean;
    /** `--abort`: roll the migration back (before the switch): the target's rows are deleted. */
    abort?: boolean;
    /** `--options`: an md5 source's options rows: `"refuse"` (default: the run stops at the first) or `"drop"` (not copied, counted). */
    options?: "refuse" | "drop";
    /** `--settle`: the settle time Δ in ms (at least 85 000; default 90 s). */
    settleMs?: number;
    /** `--take-over`: take over a run another migrator's lease holds. */
    takeOver?: boolean;
    /** The checkpoints' lease owner (default: a random `browser:…` name). */
    owner?: string;
    /** `--drop-source` is refused: deleting the source table is an admin request a browser cannot send (`rowkit gold migrate --finish --drop-source` does it). */
    dropSource?: false;
}

/** A trace point a sweep named (§5.6). */
export interface MigratePoint {
    /** The trace id. */
    trace: string;
    /** The repo index. */
    commit: number;
    /** The point's timestamp in µs. */
    ts: number;
}

/** One event of a running trace store migration (§7.3), as `migrate` hands them to its callback. */
export type TraceMigrateEvent =
| ({ event: "progress"; state: MigrationStateName; pass: number; rate_rows_per_s: number | null; eta_s: number | null } & MigrateCounters)
| { event: "state_changed"; from: MigrationStateName | null; to: MigrationStateName | null }
| ({ event: "straggler" } & MigratePoint)
| ({ event: "conflict" } & MigratePoint);

/** What a trace store migration run did: `rowkit gold migrate --json`'s result document. */
export interface TraceMigrateResult {
    table: string;
    target_table: string;
    to: "md5" | "digest-id";
    abort: boolean;
    /** Where the run ended: a state, `removed` (rolled back) or `cleaned` (migrated). */
    state: MigrationStateName | "removed" | "cleaned";
    run: string | null;
    passes: ({ kind: string; pass: number; diffs: number; tiles: number; skipped_rows: number; options_rows_dropped: number } & MigrateCounters)[];
    target_rows_deleted: number;
    source_rows_deleted: number;
    source_rows_left: number;
    stragglers: MigratePoint[];
    conflicts: MigratePoint[];
}

/** A table's migration state as the migrator reads it (§2.1): marker and checkpoint as stored (§2.2, §7.1). */
export interface TraceMigrationStatus {
    table: string;
    /** The client's layout (the `layout` option). */
    layout: "md5" | "digest-id";
    marker: { run: string; from: "md5" | "digest-id"; to: "md5" | "digest-id"; state: MigrationStateName; since: number; settle_us: number; [member: string]: JsonValue } | null;
    checkpoint: ({ run: string; state: MigrationStateName; pass: number; cursor: string | null; owner: string; lease_until: number;
    pass_rows_previous: number | null; started: number; updated: number } & MigrateCounters) | null;
}



/**
 * One graph of the BadWolf triple store. `new Graph(id, options)` with the common client
 * options (`gateway`, `token`, `table` default `badwolf`, `seed`, `signal`).
 */
export class Graph {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * `AddTriples`.
     */
    add(triples: string[]): Promise<void>;
    /**
     * Checks the graph (`spec/check.md` §4: its graph row and four indices), repairing with
     * `fix` what may be repaired (missing index cells and graph rows, each only if still
     * absent). Resolves to the report: `{schema, rows_scanned, findings_by_kind, repaired,
     * left, notes, findings}`.
     */
    check(fix: boolean): Promise<CheckReport>;
    /**
     * `NewGraph`: creates the graph (fails if it exists).
     */
    create(): Promise<void>;
    /**
     * `DeleteGraph`: removes the graph and every row of its indexes.
     */
    drop(): Promise<void>;
    /**
     * `Exist`: whether the triple is in the graph.
     */
    exist(triple: string): Promise<boolean>;
    /**
     * `GraphNames`: the ids of every graph in the table (`Graph.names(options)`, options as
     * the constructor's).
     */
    static names(options?: ClientOptions): Promise<string[]>;
    /**
     * A handle on graph `id` (nothing is read or written until a method runs).
     */
    constructor(id: string, options?: ClientOptions);
    /**
     * A lookup by method name (`objects`, `subjects`, `triples-for-subject`, …, `triples`;
     * the CLI's `graph query` names) with its arguments as BadWolf text and optional time
     * bounds `{lower, upper, latest}` (the CLI's `--lower`, `--upper`, `--latest`). A graph
     * that does not exist fails with `code` `not_found` (as the CLI's `graph query`), not an
     * empty result. Resolves to `[{triple, subject, predicate, object, uuid, item}]`, `item`
     * being what the method projects, with `predicateId`, `anchor` (the temporal predicate's
     * time, or `null`) and `objectKind` (`node`, `predicate`, `literal`).
     */
    query(method: string, args: string[], bounds?: LookupBounds): Promise<TripleMatch[]>;
    /**
     * `RemoveTriples` (exactly these triples).
     */
    remove(triples: string[]): Promise<void>;
    /**
     * Creates the table with its three families unless it exists (in the page's store or
     * through the gateway), as `rowkit graph setup`.
     */
    setup(): Promise<void>;
}

declare class IntoUnderlyingByteSource {
    private constructor();
    free(): void;
    [Symbol.dispose](): void;
    cancel(): void;
    pull(controller: ReadableByteStreamController): Promise<any>;
    start(controller: ReadableByteStreamController): void;
    readonly autoAllocateChunkSize: number;
    readonly type: ReadableStreamType;
}
export type { IntoUnderlyingByteSource };

declare class IntoUnderlyingSink {
    private constructor();
    free(): void;
    [Symbol.dispose](): void;
    abort(reason: any): Promise<any>;
    close(): Promise<any>;
    write(chunk: any): Promise<any>;
}
export type { IntoUnderlyingSink };

declare class IntoUnderlyingSource {
    private constructor();
    free(): void;
    [Symbol.dispose](): void;
    cancel(): void;
    pull(controller: ReadableStreamDefaultController): Promise<any>;
}
export type { IntoUnderlyingSource };

/**
 * The Vanadium mount table (btmtd layout). Options: the common client options (`gateway`,
 * `token`, `table` = node table, default `mounttable`, `seed`, `signal`) and `as`: the caller's
 * blessing names (default: the server itself, which may do anything).
 */
export class MountTable {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Checks the tables (the mount table's check is its fsck, `spec/check.md` §1), repairing
     * with `fix` what fsck may repair. Resolves to the report: `{schema, rows_scanned,
     * findings_by_kind, repaired, left, notes, findings}`.
     */
    check(fix: boolean): Promise<CheckReport>;
    /**
     * Deletes `name` (with its children when `subtree`).
     */
    delete(name: string, subtree: boolean): Promise<void>;
    /**
     * Names under `name` matching `pattern` (`*`, `...`, or a path of such patterns), in emission order.
     */
    glob(name: string, pattern: string): Promise<MountEntry[]>;
    /**
     * Mounts `server` on `name` for `ttlSeconds`; `flags`: 1 = replace, 2 = mount table,
     * 4 = leaf (ORed). Resolves to the deadline written (µs since the epoch).
     */
    mount(name: string, server: string, ttlSeconds: number, flags?: number | null): Promise<number>;
    /**
     * A client; see the type's docs for `options`.
     */
    constructor(options?: MountTableOptions);
    /**
     * The permissions of `name` as the caller may read them: `{perms, version}`, `perms` the
     * stored JSON object (`{"Admin": {"In": [...], "NotIn": null}, ...}`, spec §7.3).
     */
    permissions(name: string): Promise<MountPermissions>;
    /**
     * Resolves one step of `name`: `{name, servers: [{server, deadlineUs}], mt, leaf}` where
     * `name` is the unresolved rest.
     */
    resolve(name: string): Promise<MountEntry>;
    /**
     * Creates the tables (in the page's store or through the gateway) and the initial nodes
     * (the root, with default permissions), as `rowkit mt setup`.
     */
    setup(): Promise<void>;
    /**
     * Unmounts `server` from `name` (every server when `server` is absent or empty).
     */
    unmount(name: string, server?: string | null): Promise<void>;
}

/**
 * Object metadata (Scality Arsenal semantics). Options: the common client options
 * (`gateway`, `token`, `table` default `objmeta`, `seed`, `signal`).
 */
export class ObjectMetadata {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Checks the table, or one bucket (`spec/check.md` §3), repairing with `fix` what may be
     * repaired (derived cells, masters set to their newest version), each only if the rows
     * are as read. Resolves to the report: `{schema, rows_scanned, findings_by_kind,
     * repaired, left, notes, findings}`.
     */
    check(bucket: string | null | undefined, fix: boolean): Promise<CheckReport>;
    /**
     * `createBucket(bucket, md)` of a new bucket; `md` (the BucketInfo) defaults to `{name:
     * bucket, uid}` with a fresh random uid, as the CLI gives one (a migration names the
     * bucket by it, `docs/migration.md` §4.8). Resolves to the key format written (`v0` or `v1`). A name S3 refuses fails
     * with `code` `invalid_argument`, an existing bucket with `BucketAlreadyExists` (nothing
     * written: the write is conditional on the bucket's absence).
     */
    createBucket(bucket: string, md?: JsonObject | null): Promise<"v0" | "v1">;
    /**
     * `deleteBucket(bucket)`; resolves to the number of rows deleted.
     */
    deleteBucket(bucket: string): Promise<number>;
    /**
     * `deleteObject(bucket, key, params?)`.
     */
    deleteObject(bucket: string, key: string, params?: DeleteObjectParams | null): Promise<void>;
    /**
     * `getObject(bucket, key, versionId?)`: the stored value.
     */
    getObject(bucket: string, key: string, versionId?: string | null): Promise<JsonObject>;
    /**
     * `listBuckets()`: `[{name, vformat, special, value}]`.
     */
    listBuckets(): Promise<BucketEntry[]>;
    /**
     * `listObject(bucket, params)` with Arsenal's listing parameters (`{prefix, delimiter,
     * maxKeys, marker, …}`; `listingType` defaults to `DelimiterMaster`, i.e. S3
     * ListObjects). Resolves to Arsenal's result (`{CommonPrefixes, Contents, IsTruncated,
     * …}`).
     */
    listObjects(bucket: string, params?: ListingParams | null): Promise<ListingResult>;
    /**
     * `migrateBucket(bucket, to, options, onEvent)`: `rowkit s3 migrate BUCKET --to v1|v0`
     * (`docs/migration.md` §3), as far as `options`' gates allow, starting a run or resuming
     * the one the bucket's marker names. Each event (progress after every page, marker
     * changes, stragglers, conflicts, findings) goes to `onEvent` as the machine emits it;
     * resolves to the result document (`rowkit s3 migrate --json`'s). Runs up to a day (or
     * `deadlineMs` if longer); while it runs, the client's other calls wait (its per-process
     * state is the migration's), so a page runs it on a client of its own. Refusals (a bad
     * `to` or option: `invalid_argument`; `--settle` below 85 s: `usage_error`; another
     * run: `migration_in_progress`; findings before the switch: `migration_blocked`) reject
     * with the `code` of the CLI's error.
     */
    migrateBucket(bucket: string, to: "v0" | "v1", options?: MigrateBucketOptions | null, onEvent?: (event: MigrateEvent) => void): Promise<MigrateResult>;
    /**
     * `migrationStatus(bucket)`: the bucket's key format and the migration in progress, read
     * as the migrator reads them (`docs/migration.md` §2.1): `{bucket, vformat, marker,
     * checkpoint}`, `marker` and `checkpoint` as stored, `null` when absent.
     */
    migrationStatus(bucket: string): Promise<MigrationStatus>;
    /**
     * A client; see the type's docs for `options`.
     */
    constructor(options?: ClientOptions);
    /**
     * `putObject(bucket, key, value, params)` (`params` as Arsenal's: `{versioning: true}`,
     * `{versionId}`, …). Resolves to Arsenal's result text, `{"versionId": "…"}` when a version
     * id was written (or given), or `null`.
     */
    putObject(bucket: string, key: string, value: JsonObject, params?: PutObjectParams | null): Promise<string | null>;
    /**
     * Creates the table with families `d` and `f` unless it exists (in the page's store or
     * through the gateway), as `rowkit s3 setup`.
     */
    setup(): Promise<void>;
}

/**
 * The Skia Gold trace store. Options: the common client options (`gateway`, `token`,
 * `table` default `gold`, `seed`, `signal`) and `layout`: `md5` (default) or `digest-id`.
 */
export class TraceStore {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Checks the table (`spec/check.md` §2; nothing in a trace store is repairable).
     * Resolves to the report: `{schema, rows_scanned, findings_by_kind, repaired, left,
     * notes, findings}`.
     */
    check(): Promise<CheckReport>;
    /**
     * `migrate(targetTable, to, options, onEvent)`: `rowkit gold migrate --to L
     * --target-table T2` (`docs/migration.md` §5): migrates the client's table into
     * `targetTable`, which must exist as an empty table of layout `to` (the other one of the
     * client's: a page cannot set tables up, §11.6; else the promise rejects with
     * `usage_error`, its message naming `rowkit gold setup --table T2 --layout L`), as far as
     * `options`' gates allow, starting a run or resuming the one the markers name. Each event
     * (progress after every tile, marker changes, stragglers, conflicts) goes to `onEvent` as
     * the machine emits it; resolves to the result document (`rowkit gold migrate --json`'s).
     * Runs up to a day (or `deadlineMs` if longer) and waits the settle time Δ before the
     * switch, the clean-up and the rollback; while it runs the client's other calls wait, so
     * a page runs it on a client of its own.
     */
    migrate(targetTable: string, to: "md5" | "digest-id", options?: MigrateTableOptions | null, onEvent?: (event: TraceMigrateEvent) => void): Promise<TraceMigrateResult>;
    /**
     * `migrationStatus()`: the table's migration in progress, read as the migrator reads it
     * (`docs/migration.md` §2.1): `{table, layout, marker, checkpoint}`, `marker` and
     * `checkpoint` as stored, `null` when absent (`layout` is the client's).
     */
    migrationStatus(): Promise<TraceMigrationStatus>;
    /**
     * A client; see the type's docs for `options`.
     */
    constructor(options?: TraceStoreOptions);
    /**
     * `NewestTile`: the index of the newest tile, or `null`.
     */
    newestTile(): Promise<number | null>;
    /**
     * `Put`: writes `entries` (`[{params: {k: v}, options?: {k: v}, digest: "32 hex"}]`) at
     * commit `repoIndex`, cells stamped `tsMicros` (default: now).
     */
    put(repoIndex: number, entries: TraceEntry[], tsMicros?: number | null): Promise<void>;
    /**
     * `ReadRange(first, last)`: the traces of commits `first..=last`:
     * `{layout, commits, paramset, traces: [{id, params, options, digests}]}`.
     */
    readRange(first: number, last: number): Promise<TraceRange>;
    /**
     * Creates the table in the client's layout, or adds the families a table made by an
     * older version lacks (`rowkit gold setup`), in the page's store or through the gateway.
     */
    setup(): Promise<void>;
    /**
     * Streams tile `index` to `onBatch`, called with each batch of traces as it arrives (a
     * viewer draws a 10 000-trace tile while it streams in; options are not read):
     * `{traces: [{id, params}], newDigests: [string], cells: Uint32Array, shardsDone}`, where
     * `cells[t * 256 + c]` is trace `t`'s digest at the tile's commit `c` as 1 + its index in
     * the stream's digest list (the `newDigests` of every batch so far, in order), 0 = missing.
     * Resolves to the number of traces. After an error thrown by `onBatch` no batch is handed
     * over; the read runs to its end and the promise rejects with that error.
     */
    streamTile(index: number, onBatch: (batch: TileBatch) => void): Promise<number>;
    /**
     * One whole tile (`index`; default the newest), as [`TraceStore::read_range`] plus
     * `tileIndex` (`null` when the table has no tile).
     */
    tile(index?: number | null): Promise<TraceTile>;
}

/**
 * Decodes a row key. `schema` is `"auto"` (the first of gold, s3, graph, mt whose decoder
 * reads the key and whose layout it fits — a node row's hash prefix must be its name's;
 * none: `unknown_row_key`, "no schema's layout fits this key"
 * with each schema's reason) or one
 * of `"mt"`, `"gold"`, `"s3"`, `"graph"` (`mounttable`, `tracestore`, `objmeta`, `triples`
 * also accepted). `key` is a `Uint8Array` or escaped key text (`\xHH`) or `hex:…`. Returns an
 * object with `schema`, `row_key`, `row_key_hex`, the schema's fields and `segments` (the
 * key's byte runs from its codec: `[{start, end, field, meaning, bytes, bytes_hex}]`); throws an `Error`
 * whose `code` is `not_a_row_key` / `unknown_row_key` / `invalid_argument`.
 */
export function decodeKey(schema: KeySchemaName | "auto" | "mounttable" | "tracestore" | "objmeta" | "triples", key: Uint8Array | string): DecodedKey;

/**
 * The digest-map row and qualifier of a digest (32 hex characters).
 */
export function encodeGoldDigestKey(digest: string): GoldDigestKey;

/**
 * The rows of a trace at commit `repoIndex` with trace id `subkey` (e.g. `,0=1,1=3,`): trace
 * row, options row, ops row, shard, tile, and the qualifier in both layouts.
 */
export function encodeGoldTraceKey(repoIndex: number, subkey: string): GoldTraceKey;

/**
 * The four index rows of a triple (BadWolf text, tab- or space-separated) in `graph`, and the
 * graph row.
 */
export function encodeGraphKey(graph: string, triple: string): GraphKey;

/**
 * The node row key of a mount table name: `{schema, name, row_key, row_key_hex}`.
 */
export function encodeMtKey(name: string): MtKey;

/**
 * The row of an object's master (`versionId` absent) or of one version; `format` is `v0` or
 * `v1` (default `v1`).
 */
export function encodeS3Key(bucket: string, key: string, versionId: string | null | undefined, format?: "v0" | "v1" | null): S3Key;

/**
 * Bytes as escaped key text: printable ASCII verbatim, `\` as `\\`, others as `\xHH`.
 */
export function escapeKey(bytes: Uint8Array | number[]): string;

/**
 * Every table of the client's store with its families, ascending by table id: the page's
 * store offline, the gateway's instance through its table admin (`GET …/tables`). Options are
 * the common client options (`gateway`, `token`, `project`, `instance`). Resolves to
 * `[{name, families: [{name, gcRule}]}]`, `gcRule` in Google's JSON or `null`.
 */
export function listTables(options: ClientOptions | null | undefined): Promise<ListedTable[]>;

/**
 * Every lookup method the graph's `query` runs, with its arguments in order:
 * `[{method, arguments: ["subject" | "predicate" | "object", ...]}]` (the query builder's
 * fields).
 */
export function lookupMethods(): LookupMethod[];

/**
 * Parses escaped key text (`\xHH`, `\\`) or `hex:…` into bytes.
 */
export function parseKey(text: string): Uint8Array;

/**
 * Scans `table` for rows whose key starts with `prefix` (a `Uint8Array`, escaped key text or
 * `hex:…`; empty = the whole table), at most `limit` rows (0 = no limit). `schema` (`auto`,
 * `mt`, `gold`, `s3`, `graph`, or `none`) says how to explain each key. `after` (a key, as
 * `prefix`) pages: only rows after it are read, so the next page starts after the last key
 * of the previous one. `narrowing` (optional, `ScanNarrowing`) bounds the keys further
 * (`start` inclusive, `end` exclusive) and keeps only the cells of one family and/or
 * qualifier (Bigtable's family and qualifier filters: a row without such a cell is not
 * returned). Options are the common client options (`gateway`, `token`, …); `deadlineMs`
 * bounds the whole scan, retries included.
 * Resolves to `[{row_key, row_key_hex, decoded, cells: [{family, qualifier, qualifier_hex,
 * timestampMicros, value, value_hex, valueSize}]}]`; `decoded` is the key's document with
 * its `segments` (see `decodeKey`), or `{error}` when the key is not one of the schema's.
 */
export function scanRows(options: ClientOptions | null | undefined, table: string, prefix: Uint8Array | string, limit: number, schema: KeySchemaName | "auto" | "none" | null, after: Uint8Array | string | undefined, narrowing?: ScanNarrowing): Promise<ScannedRow[]>;

/**
 * Checks `value` as a `field` with the CLI's rules: `null` when it is valid, else the one
 * sentence saying which rule it breaks (e.g. `validate("digest", "xyz")`). An unknown
 * `field` throws (`code` `invalid_argument`).
 */
export function validate(field: ValidatedField, value: string): string | undefined;

export type InitInput = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;

export interface InitOutput {
    readonly memory: WebAssembly.Memory;
    readonly __wbg_graph_free: (a: number, b: number) => void;
    readonly __wbg_intounderlyingbytesource_free: (a: number, b: number) => void;
    readonly __wbg_intounderlyingsink_free: (a: number, b: number) => void;
    readonly __wbg_intounderlyingsource_free: (a: number, b: number) => void;
    readonly __wbg_mounttable_free: (a: number, b: number) => void;
    readonly __wbg_objectmetadata_free: (a: number, b: number) => void;
    readonly __wbg_tracestore_free: (a: number, b: number) => void;
    readonly decodeKey: (a: number, b: number, c: any) => [number, number, number];
    readonly encodeGoldDigestKey: (a: number, b: number) => [number, number, number];
    readonly encodeGoldTraceKey: (a: number, b: number, c: number) => [number, number, number];
    readonly encodeGraphKey: (a: number, b: number, c: number, d: number) => [number, number, number];
    readonly encodeMtKey: (a: number, b: number) => any;
    readonly encodeS3Key: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number) => [number, number, number];
    readonly escapeKey: (a: number, b: number) => [number, number];
    readonly graph_add: (a: number, b: number, c: number) => any;
    readonly graph_check: (a: number, b: number) => any;
    readonly graph_create: (a: number) => any;
    readonly graph_drop: (a: number) => any;
    readonly graph_exist: (a: number, b: number, c: number) => any;
    readonly graph_names: (a: any) => [number, number, number];
    readonly graph_new: (a: number, b: number, c: any) => [number, number, number];
    readonly graph_query: (a: number, b: number, c: number, d: number, e: number, f: any) => any;
    readonly graph_remove: (a: number, b: number, c: number) => any;
    readonly graph_setup: (a: number) => any;
    readonly intounderlyingbytesource_autoAllocateChunkSize: (a: number) => number;
    readonly intounderlyingbytesource_cancel: (a: number) => void;
    readonly intounderlyingbytesource_pull: (a: number, b: any) => any;
    readonly intounderlyingbytesource_start: (a: number, b: any) => void;
    readonly intounderlyingbytesource_type: (a: number) => number;
    readonly intounderlyingsink_abort: (a: number, b: any) => any;
    readonly intounderlyingsink_close: (a: number) => any;
    readonly intounderlyingsink_write: (a: number, b: any) => any;
    readonly intounderlyingsource_cancel: (a: number) => void;
    readonly intounderlyingsource_pull: (a: number, b: any) => any;
    readonly listTables: (a: any) => any;
    readonly lookupMethods: () => any;
    readonly mounttable_check: (a: number, b: number) => any;
    readonly mounttable_delete: (a: number, b: number, c: number, d: number) => any;
    readonly mounttable_glob: (a: number, b: number, c: number, d: number, e: number) => any;
    readonly mounttable_mount: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => any;
    readonly mounttable_new: (a: any) => [number, number, number];
    readonly mounttable_permissions: (a: number, b: number, c: number) => any;
    readonly mounttable_resolve: (a: number, b: number, c: number) => any;
    readonly mounttable_setup: (a: number) => any;
    readonly mounttable_unmount: (a: number, b: number, c: number, d: number, e: number) => any;
    readonly objectmetadata_check: (a: number, b: number, c: number, d: number) => any;
    readonly objectmetadata_createBucket: (a: number, b: number, c: number, d: any) => any;
    readonly objectmetadata_deleteBucket: (a: number, b: number, c: number) => any;
    readonly objectmetadata_deleteObject: (a: number, b: number, c: number, d: number, e: number, f: any) => any;
    readonly objectmetadata_getObject: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => any;
    readonly objectmetadata_listBuckets: (a: number) => any;
    readonly objectmetadata_listObjects: (a: number, b: number, c: number, d: any) => any;
    readonly objectmetadata_migrateBucket: (a: number, b: number, c: number, d: number, e: number, f: any, g: number) => any;
    readonly objectmetadata_migrationStatus: (a: number, b: number, c: number) => any;
    readonly objectmetadata_new: (a: any) => [number, number, number];
    readonly objectmetadata_putObject: (a: number, b: number, c: number, d: number, e: number, f: any, g: any) => any;
    readonly objectmetadata_setup: (a: number) => any;
    readonly parseKey: (a: number, b: number) => [number, number, number, number];
    readonly scanRows: (a: any, b: number, c: number, d: any, e: number, f: number, g: number, h: any, i: any) => any;
    readonly tracestore_check: (a: number) => any;
    readonly tracestore_migrate: (a: number, b: number, c: number, d: number, e: number, f: any, g: number) => any;
    readonly tracestore_migrationStatus: (a: number) => any;
    readonly tracestore_new: (a: any) => [number, number, number];
    readonly tracestore_newestTile: (a: number) => any;
    readonly tracestore_put: (a: number, b: number, c: any, d: number, e: number) => any;
    readonly tracestore_readRange: (a: number, b: number, c: number) => any;
    readonly tracestore_setup: (a: number) => any;
    readonly tracestore_streamTile: (a: number, b: number, c: any) => any;
    readonly tracestore_tile: (a: number, b: number) => any;
    readonly validate: (a: number, b: number, c: number, d: number) => [number, number, number, number];
    readonly wasm_bindgen__convert__closures_____invoke__h43aee51bd4d15ad7: (a: number, b: number, c: any, d: any) => void;
    readonly wasm_bindgen__convert__closures_____invoke__h514af67fce4b0c9e: (a: number, b: number, c: any) => [number, number];
    readonly wasm_bindgen__convert__closures_____invoke__he7d593d6bcf9c188: (a: number, b: number, c: any) => void;
    readonly __wbindgen_malloc: (a: number, b: number) => number;
    readonly __wbindgen_realloc: (a: number, b: number, c: number, d: number) => number;
    readonly __wbindgen_free: (a: number, b: number, c: number) => void;
    readonly __wbindgen_exn_store: (a: number) => void;
    readonly __externref_table_alloc: () => number;
    readonly __wbindgen_externrefs: WebAssembly.Table;
    readonly __wbindgen_destroy_closure: (a: number, b: number) => void;
    readonly __externref_table_dealloc: (a: number) => void;
    readonly __externref_drop_slice: (a: number, b: number) => void;
    readonly __wbindgen_start: () => void;
}

export type SyncInitInput = BufferSource | WebAssembly.Module;

/**
 * Instantiates the given `module`, which can either be bytes or
 * a precompiled `WebAssembly.Module`.
 *
 * @param {{ module: SyncInitInput }} module - Passing `SyncInitInput` directly is deprecated.
 *
 * @returns {InitOutput}
 */
export function initSync(module: { module: SyncInitInput } | SyncInitInput): InitOutput;

/**
 * If `module_or_path` is {RequestInfo} or {URL}, makes a request and
 * for everything else, calls `WebAssembly.instantiate` directly.
 *
 * @param {{ module_or_path: InitInput | Promise<InitInput> }} module_or_path - Passing `InitInput` directly is deprecated.
 *
 * @returns {Promise<InitOutput>}
 */
export default function __wbg_init (module_or_path?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>): Promise<InitOutput>;
