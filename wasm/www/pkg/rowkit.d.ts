/* tslint:disable */
/* eslint-disable */
/**
 * The `ReadableStreamType` enum.
 *
 * *This API requires the following crate features to be activated: `ReadableStreamType`*
 */

export type ReadableStreamType = "bytes";

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
    check(fix: boolean): Promise<object>;
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
    static names(options: any): Promise<string[]>;
    /**
     * A handle on graph `id` (nothing is read or written until a method runs).
     */
    constructor(id: string, options: any);
    /**
     * A lookup by method name (`objects`, `subjects`, `triples-for-subject`, …, `triples`;
     * the CLI's `graph query` names) with its arguments as BadWolf text. Resolves to
     * `[{triple, subject, predicate, object, uuid, item}]`, `item` being what the method
     * projects, with `predicateId`, `anchor` (the temporal predicate's time, or `null`) and
     * `objectKind` (`node`, `predicate`, `literal`).
     */
    query(method: string, args: string[]): Promise<{triple: string, subject: string, predicate: string, object: string, uuid: string, item: string, predicateId: string, anchor: string | null, objectKind: 'node' | 'predicate' | 'literal'}[]>;
    /**
     * `RemoveTriples` (exactly these triples).
     */
    remove(triples: string[]): Promise<void>;
    /**
     * Creates the table with its three families (offline mode; on a gateway run
     * `rowkit graph setup` on the served store).
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
    check(fix: boolean): Promise<object>;
    /**
     * Deletes `name` (with its children when `subtree`).
     */
    delete(name: string, subtree: boolean): Promise<void>;
    /**
     * Names under `name` matching `pattern` (`*`, `...`, or a path of such patterns), in emission order.
     */
    glob(name: string, pattern: string): Promise<{name: string, servers: {server: string, deadlineUs: number}[], mt: boolean, leaf: boolean}[]>;
    /**
     * Mounts `server` on `name` for `ttlSeconds`; `flags`: 1 = replace, 2 = mount table,
     * 4 = leaf (ORed). Resolves to the deadline written (µs since the epoch).
     */
    mount(name: string, server: string, ttl_seconds: number, flags?: number | null): Promise<number>;
    /**
     * A client; see the type's docs for `options`.
     */
    constructor(options: any);
    /**
     * The permissions of `name` as the caller may read them: `{perms, version}`, `perms` the
     * stored JSON object (`{"Admin": {"In": [...], "NotIn": null}, ...}`, spec §7.3).
     */
    permissions(name: string): Promise<{perms: Record<string, {In: string[] | null, NotIn: string[] | null}>, version: string}>;
    /**
     * Resolves one step of `name`: `{name, servers: [{server, deadlineUs}], mt, leaf}` where
     * `name` is the unresolved rest.
     */
    resolve(name: string): Promise<{name: string, servers: {server: string, deadlineUs: number}[], mt: boolean, leaf: boolean}>;
    /**
     * Creates the tables (offline mode; on a gateway they must have been set up with
     * `rowkit mt setup` on the served store) and the initial nodes (the root, with default
     * permissions).
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
    check(bucket: string | null | undefined, fix: boolean): Promise<object>;
    /**
     * `createBucket(bucket, md)`; `md` (the BucketInfo) defaults to `{name: bucket}`.
     * Resolves to the key format written (`v0` or `v1`).
     */
    createBucket(bucket: string, md: any): Promise<string>;
    /**
     * `deleteBucket(bucket)`; resolves to the number of rows deleted.
     */
    deleteBucket(bucket: string): Promise<number>;
    /**
     * `deleteObject(bucket, key, params?)`.
     */
    deleteObject(bucket: string, key: string, params: any): Promise<void>;
    /**
     * `getObject(bucket, key, versionId?)`: the stored value.
     */
    getObject(bucket: string, key: string, version_id?: string | null): Promise<unknown>;
    /**
     * `listBuckets()`: `[{name, vformat, special, value}]`.
     */
    listBuckets(): Promise<{name: string, vformat: string, special: boolean, value: unknown}[]>;
    /**
     * `listObject(bucket, params)` with Arsenal's listing parameters (`{prefix, delimiter,
     * maxKeys, marker, …}`; `listingType` defaults to `DelimiterMaster`, i.e. S3
     * ListObjects). Resolves to Arsenal's result (`{CommonPrefixes, Contents, IsTruncated,
     * …}`).
     */
    listObjects(bucket: string, params: any): Promise<Record<string, unknown>>;
    /**
     * A client; see the type's docs for `options`.
     */
    constructor(options: any);
    /**
     * `putObject(bucket, key, value, params)` (`params` as Arsenal's: `{versioning: true}`,
     * `{versionId}`, …). Resolves to the version id written, or `null`.
     */
    putObject(bucket: string, key: string, value: any, params: any): Promise<string | null>;
    /**
     * Creates the table with families `d` and `f` (offline mode; on a gateway run
     * `rowkit s3 setup` on the served store).
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
    check(): Promise<object>;
    /**
     * A client; see the type's docs for `options`.
     */
    constructor(options: any);
    /**
     * `NewestTile`: the index of the newest tile, or `null`.
     */
    newestTile(): Promise<number | null>;
    /**
     * `Put`: writes `entries` (`[{params: {k: v}, options?: {k: v}, digest: "32 hex"}]`) at
     * commit `repoIndex`, cells stamped `tsMicros` (default: now).
     */
    put(repo_index: number, entries: {params: Record<string, string>, options?: Record<string, string>, digest: string}[], ts_micros?: number | null): Promise<void>;
    /**
     * `ReadRange(first, last)`: the traces of commits `first..=last`:
     * `{layout, commits, paramset, traces: [{id, params, options, digests}]}`.
     */
    readRange(first: number, last: number): Promise<Record<string, unknown>>;
    /**
     * Creates the table in the client's layout (offline mode; on a gateway run
     * `rowkit gold setup` on the served store).
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
    streamTile(index: number, on_batch: (batch: {traces: {id: string, params: Record<string, string>}[], newDigests: string[], cells: Uint32Array, shardsDone: number}) => void): Promise<number>;
    /**
     * One whole tile (`index`; default the newest), as [`TraceStore::read_range`] plus
     * `tileIndex` (`null` when the table has no tile).
     */
    tile(index?: number | null): Promise<Record<string, unknown>>;
}

/**
 * Decodes a row key. `schema` is `"auto"` (try every schema: gold, s3, graph, then mt) or one
 * of `"mt"`, `"gold"`, `"s3"`, `"graph"` (`mounttable`, `tracestore`, `objmeta`, `triples`
 * also accepted). `key` is a `Uint8Array` or escaped key text (`\xHH`) or `hex:…`. Returns an
 * object with `schema`, `row_key`, `row_key_hex`, the schema's fields and `segments` (the
 * key's byte runs from its codec: `[{start, end, field, meaning, bytes, bytes_hex}]`); throws an `Error`
 * whose `code` is `not_a_row_key` / `unknown_row_key` / `invalid_argument`.
 */
export function decodeKey(schema: string, key: Uint8Array | string): Record<string, unknown>;

/**
 * The digest-map row and qualifier of a digest (32 hex characters).
 */
export function encodeGoldDigestKey(digest: string): Record<string, unknown>;

/**
 * The rows of a trace at commit `repoIndex` with trace id `subkey` (e.g. `,0=1,1=3,`): trace
 * row, options row, ops row, shard, tile, and the qualifier in both layouts.
 */
export function encodeGoldTraceKey(repo_index: number, subkey: string): Record<string, unknown>;

/**
 * The four index rows of a triple (BadWolf text, tab- or space-separated) in `graph`, and the
 * graph row.
 */
export function encodeGraphKey(graph: string, triple: string): Record<string, unknown>;

/**
 * The node row key of a mount table name: `{schema, name, row_key, row_key_hex}`.
 */
export function encodeMtKey(name: string): Record<string, unknown>;

/**
 * The row of an object's master (`versionId` absent) or of one version; `format` is `v0` or
 * `v1` (default `v1`).
 */
export function encodeS3Key(bucket: string, key: string, version_id?: string | null, format?: string | null): Record<string, unknown>;

/**
 * Bytes as escaped key text: printable ASCII verbatim, `\` as `\\`, others as `\xHH`.
 */
export function escapeKey(bytes: Uint8Array | number[]): string;

/**
 * Every lookup method the graph's `query` runs, with its arguments in order:
 * `[{method, arguments: ["subject" | "predicate" | "object", ...]}]` (the query builder's
 * fields).
 */
export function lookupMethods(): {method: string, arguments: ('subject' | 'predicate' | 'object')[]}[];

/**
 * Parses escaped key text (`\xHH`, `\\`) or `hex:…` into bytes.
 */
export function parseKey(text: string): Uint8Array;

/**
 * Scans `table` for rows whose key starts with `prefix` (a `Uint8Array`, escaped key text or
 * `hex:…`; empty = the whole table), at most `limit` rows (0 = no limit). `schema` (`auto`,
 * `mt`, `gold`, `s3`, `graph`, or `none`) says how to explain each key. `after` (a key, as
 * `prefix`) pages: only rows after it are read, so the next page starts after the last key
 * of the previous one. Options are the common client options (`gateway`, `token`, …).
 * Resolves to `[{row_key, row_key_hex, decoded, cells: [{family, qualifier, qualifier_hex,
 * timestampMicros, value, value_hex, valueSize}]}]`; `decoded` is the key's document with
 * its `segments` (see `decodeKey`), or `{error}` when the key is not one of the schema's.
 */
export function scanRows(options: any, table: string, prefix: Uint8Array | string, limit: number, schema: string | null | undefined, after: Uint8Array | string | undefined): Promise<Record<string, unknown>[]>;

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
    readonly graph_query: (a: number, b: number, c: number, d: number, e: number) => any;
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
    readonly objectmetadata_new: (a: any) => [number, number, number];
    readonly objectmetadata_putObject: (a: number, b: number, c: number, d: number, e: number, f: any, g: any) => any;
    readonly objectmetadata_setup: (a: number) => any;
    readonly parseKey: (a: number, b: number) => [number, number, number, number];
    readonly scanRows: (a: any, b: number, c: number, d: any, e: number, f: number, g: number, h: any) => any;
    readonly tracestore_check: (a: number) => any;
    readonly tracestore_new: (a: any) => [number, number, number];
    readonly tracestore_newestTile: (a: number) => any;
    readonly tracestore_put: (a: number, b: number, c: any, d: number, e: number) => any;
    readonly tracestore_readRange: (a: number, b: number, c: number) => any;
    readonly tracestore_setup: (a: number) => any;
    readonly tracestore_streamTile: (a: number, b: number, c: any) => any;
    readonly tracestore_tile: (a: number, b: number) => any;
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
