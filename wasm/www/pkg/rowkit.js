/* @ts-self-types="./rowkit.d.ts" */

/**
 * One graph of the BadWolf triple store. `new Graph(id, options)` with the common client
 * options (`gateway`, `token`, `table` default `badwolf`, `seed`, `signal`).
 */
export class Graph {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        GraphFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_graph_free(ptr, 0);
    }
    /**
     * `AddTriples`.
     * @param {string[]} triples
     * @returns {Promise<void>}
     */
    add(triples) {
        const ptr0 = passArrayJsValueToWasm0(triples, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.graph_add(this.__wbg_ptr, ptr0, len0);
        return ret;
    }
    /**
     * Checks the graph (`spec/check.md` §4: its graph row and four indices), repairing with
     * `fix` what may be repaired (missing index cells and graph rows, each only if still
     * absent). Resolves to the report: `{schema, rows_scanned, findings_by_kind, repaired,
     * left, notes, findings}`.
     * @param {boolean} fix
     * @returns {Promise<CheckReport>}
     */
    check(fix) {
        const ret = wasm.graph_check(this.__wbg_ptr, fix);
        return ret;
    }
    /**
     * `NewGraph`: creates the graph (fails if it exists).
     * @returns {Promise<void>}
     */
    create() {
        const ret = wasm.graph_create(this.__wbg_ptr);
        return ret;
    }
    /**
     * `DeleteGraph`: removes the graph and every row of its indexes.
     * @returns {Promise<void>}
     */
    drop() {
        const ret = wasm.graph_drop(this.__wbg_ptr);
        return ret;
    }
    /**
     * `Exist`: whether the triple is in the graph.
     * @param {string} triple
     * @returns {Promise<boolean>}
     */
    exist(triple) {
        const ptr0 = passStringToWasm0(triple, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.graph_exist(this.__wbg_ptr, ptr0, len0);
        return ret;
    }
    /**
     * `GraphNames`: the ids of every graph in the table (`Graph.names(options)`, options as
     * the constructor's).
     * @param {ClientOptions} [options]
     * @returns {Promise<string[]>}
     */
    static names(options) {
        const ret = wasm.graph_names(options);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * A handle on graph `id` (nothing is read or written until a method runs).
     * @param {string} id
     * @param {ClientOptions} [options]
     */
    constructor(id, options) {
        const ptr0 = passStringToWasm0(id, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.graph_new(ptr0, len0, options);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        GraphFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * A lookup by method name (`objects`, `subjects`, `triples-for-subject`, …, `triples`;
     * the CLI's `graph query` names) with its arguments as BadWolf text and optional time
     * bounds `{lower, upper, latest}` (the CLI's `--lower`, `--upper`, `--latest`). A graph
     * that does not exist fails with `code` `not_found` (as the CLI's `graph query`), not an
     * empty result. Resolves to `[{triple, subject, predicate, object, uuid, item}]`, `item`
     * being what the method projects, with `predicateId`, `anchor` (the temporal predicate's
     * time, or `null`) and `objectKind` (`node`, `predicate`, `literal`).
     * @param {string} method
     * @param {string[]} args
     * @param {LookupBounds} [bounds]
     * @returns {Promise<TripleMatch[]>}
     */
    query(method, args, bounds) {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(method, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passArrayJsValueToWasm0(args, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__externref_drop_slice(ptr1, len1); wasm.__wbindgen_free(ptr1, len1 * 4, 4); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.graph_query(this.__wbg_ptr, ptr0, len0, ptr1, len1, bounds);
        return ret;
    }
    /**
     * `RemoveTriples` (exactly these triples).
     * @param {string[]} triples
     * @returns {Promise<void>}
     */
    remove(triples) {
        const ptr0 = passArrayJsValueToWasm0(triples, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.graph_remove(this.__wbg_ptr, ptr0, len0);
        return ret;
    }
    /**
     * Creates the table with its three families unless it exists (in the page's store or
     * through the gateway), as `rowkit graph setup`.
     * @returns {Promise<void>}
     */
    setup() {
        const ret = wasm.graph_setup(this.__wbg_ptr);
        return ret;
    }
}
if (Symbol.dispose) Graph.prototype[Symbol.dispose] = Graph.prototype.free;

class IntoUnderlyingByteSource {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        IntoUnderlyingByteSourceFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_intounderlyingbytesource_free(ptr, 0);
    }
    /**
     * @returns {number}
     */
    get autoAllocateChunkSize() {
        const ret = wasm.intounderlyingbytesource_autoAllocateChunkSize(this.__wbg_ptr);
        return ret >>> 0;
    }
    cancel() {
        const ptr = this.__destroy_into_raw();
        wasm.intounderlyingbytesource_cancel(ptr);
    }
    /**
     * @param {ReadableByteStreamController} controller
     * @returns {Promise<any>}
     */
    pull(controller) {
        const ret = wasm.intounderlyingbytesource_pull(this.__wbg_ptr, controller);
        return ret;
    }
    /**
     * @param {ReadableByteStreamController} controller
     */
    start(controller) {
        wasm.intounderlyingbytesource_start(this.__wbg_ptr, controller);
    }
    /**
     * @returns {ReadableStreamType}
     */
    get type() {
        const ret = wasm.intounderlyingbytesource_type(this.__wbg_ptr);
        return __wbindgen_enum_ReadableStreamType[ret];
    }
}
if (Symbol.dispose) IntoUnderlyingByteSource.prototype[Symbol.dispose] = IntoUnderlyingByteSource.prototype.free;

class IntoUnderlyingSink {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        IntoUnderlyingSinkFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_intounderlyingsink_free(ptr, 0);
    }
    /**
     * @param {any} reason
     * @returns {Promise<any>}
     */
    abort(reason) {
        const ptr = this.__destroy_into_raw();
        const ret = wasm.intounderlyingsink_abort(ptr, reason);
        return ret;
    }
    /**
     * @returns {Promise<any>}
     */
    close() {
        const ptr = this.__destroy_into_raw();
        const ret = wasm.intounderlyingsink_close(ptr);
        return ret;
    }
    /**
     * @param {any} chunk
     * @returns {Promise<any>}
     */
    write(chunk) {
        const ret = wasm.intounderlyingsink_write(this.__wbg_ptr, chunk);
        return ret;
    }
}
if (Symbol.dispose) IntoUnderlyingSink.prototype[Symbol.dispose] = IntoUnderlyingSink.prototype.free;

class IntoUnderlyingSource {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        IntoUnderlyingSourceFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_intounderlyingsource_free(ptr, 0);
    }
    cancel() {
        const ptr = this.__destroy_into_raw();
        wasm.intounderlyingsource_cancel(ptr);
    }
    /**
     * @param {ReadableStreamDefaultController} controller
     * @returns {Promise<any>}
     */
    pull(controller) {
        const ret = wasm.intounderlyingsource_pull(this.__wbg_ptr, controller);
        return ret;
    }
}
if (Symbol.dispose) IntoUnderlyingSource.prototype[Symbol.dispose] = IntoUnderlyingSource.prototype.free;

/**
 * The Vanadium mount table (btmtd layout). Options: the common client options (`gateway`,
 * `token`, `table` = node table, default `mounttable`, `seed`, `signal`) and `as`: the caller's
 * blessing names (default: the server itself, which may do anything).
 */
export class MountTable {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        MountTableFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_mounttable_free(ptr, 0);
    }
    /**
     * Checks the tables (the mount table's check is its fsck, `spec/check.md` §1), repairing
     * with `fix` what fsck may repair. Resolves to the report: `{schema, rows_scanned,
     * findings_by_kind, repaired, left, notes, findings}`.
     * @param {boolean} fix
     * @returns {Promise<CheckReport>}
     */
    check(fix) {
        const ret = wasm.mounttable_check(this.__wbg_ptr, fix);
        return ret;
    }
    /**
     * Deletes `name` (with its children when `subtree`).
     * @param {string} name
     * @param {boolean} subtree
     * @returns {Promise<void>}
     */
    delete(name, subtree) {
        const val2 = +subtree;
        const ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.mounttable_delete(this.__wbg_ptr, ptr0, len0, val2);
        return ret;
    }
    /**
     * Names under `name` matching `pattern` (`*`, `...`, or a path of such patterns), in emission order.
     * @param {string} name
     * @param {string} pattern
     * @returns {Promise<MountEntry[]>}
     */
    glob(name, pattern) {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(pattern, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.mounttable_glob(this.__wbg_ptr, ptr0, len0, ptr1, len1);
        return ret;
    }
    /**
     * Mounts `server` on `name` for `ttlSeconds`; `flags`: 1 = replace, 2 = mount table,
     * 4 = leaf (ORed). Resolves to the deadline written (µs since the epoch).
     * @param {string} name
     * @param {string} server
     * @param {number} ttlSeconds
     * @param {number | null} [flags]
     * @returns {Promise<number>}
     */
    mount(name, server, ttlSeconds, flags) {
        const val3 = +ttlSeconds;
        const val4 = +(isLikeNone(flags) ? Number.MAX_SAFE_INTEGER : (flags) >>> 0);
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(server, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.mounttable_mount(this.__wbg_ptr, ptr0, len0, ptr1, len1, val3, val4);
        return ret;
    }
    /**
     * A client; see the type's docs for `options`.
     * @param {MountTableOptions} [options]
     */
    constructor(options) {
        const ret = wasm.mounttable_new(options);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        MountTableFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * The permissions of `name` as the caller may read them: `{perms, version}`, `perms` the
     * stored JSON object (`{"Admin": {"In": [...], "NotIn": null}, ...}`, spec §7.3).
     * @param {string} name
     * @returns {Promise<MountPermissions>}
     */
    permissions(name) {
        const ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.mounttable_permissions(this.__wbg_ptr, ptr0, len0);
        return ret;
    }
    /**
     * Resolves one step of `name`: `{name, servers: [{server, deadlineUs}], mt, leaf}` where
     * `name` is the unresolved rest.
     * @param {string} name
     * @returns {Promise<MountEntry>}
     */
    resolve(name) {
        const ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.mounttable_resolve(this.__wbg_ptr, ptr0, len0);
        return ret;
    }
    /**
     * Creates the tables (in the page's store or through the gateway) and the initial nodes
     * (the root, with default permissions), as `rowkit mt setup`.
     * @returns {Promise<void>}
     */
    setup() {
        const ret = wasm.mounttable_setup(this.__wbg_ptr);
        return ret;
    }
    /**
     * Unmounts `server` from `name` (every server when `server` is absent or empty).
     * @param {string} name
     * @param {string | null} [server]
     * @returns {Promise<void>}
     */
    unmount(name, server) {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = isLikeNone(server) ? 0 : passStringToWasm0(server, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.mounttable_unmount(this.__wbg_ptr, ptr0, len0, ptr1, len1);
        return ret;
    }
}
if (Symbol.dispose) MountTable.prototype[Symbol.dispose] = MountTable.prototype.free;

/**
 * Object metadata (Scality Arsenal semantics). Options: the common client options
 * (`gateway`, `token`, `table` default `objmeta`, `seed`, `signal`).
 */
export class ObjectMetadata {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        ObjectMetadataFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_objectmetadata_free(ptr, 0);
    }
    /**
     * Checks the table, or one bucket (`spec/check.md` §3), repairing with `fix` what may be
     * repaired (derived cells, masters set to their newest version), each only if the rows
     * are as read. Resolves to the report: `{schema, rows_scanned, findings_by_kind,
     * repaired, left, notes, findings}`.
     * @param {string | null | undefined} bucket
     * @param {boolean} fix
     * @returns {Promise<CheckReport>}
     */
    check(bucket, fix) {
        const val2 = +fix;
        var ptr0 = isLikeNone(bucket) ? 0 : passStringToWasm0(bucket, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        var len0 = WASM_VECTOR_LEN;
        const ret = wasm.objectmetadata_check(this.__wbg_ptr, ptr0, len0, val2);
        return ret;
    }
    /**
     * `createBucket(bucket, md)` of a new bucket; `md` (the BucketInfo) defaults to `{name:
     * bucket, uid}` with a fresh random uid, as the CLI gives one (a migration names the
     * bucket by it, `docs/migration.md` §4.8). Resolves to the key format written (`v0` or `v1`). A name S3 refuses fails
     * with `code` `invalid_argument`, an existing bucket with `BucketAlreadyExists` (nothing
     * written: the write is conditional on the bucket's absence).
     * @param {string} bucket
     * @param {JsonObject | null} [md]
     * @returns {Promise<"v0" | "v1">}
     */
    createBucket(bucket, md) {
        const ptr0 = passStringToWasm0(bucket, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.objectmetadata_createBucket(this.__wbg_ptr, ptr0, len0, md);
        return ret;
    }
    /**
     * `deleteBucket(bucket)`; resolves to the number of rows deleted.
     * @param {string} bucket
     * @returns {Promise<number>}
     */
    deleteBucket(bucket) {
        const ptr0 = passStringToWasm0(bucket, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.objectmetadata_deleteBucket(this.__wbg_ptr, ptr0, len0);
        return ret;
    }
    /**
     * `deleteObject(bucket, key, params?)`.
     * @param {string} bucket
     * @param {string} key
     * @param {DeleteObjectParams | null} [params]
     * @returns {Promise<void>}
     */
    deleteObject(bucket, key, params) {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(bucket, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(key, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.objectmetadata_deleteObject(this.__wbg_ptr, ptr0, len0, ptr1, len1, params);
        return ret;
    }
    /**
     * `getObject(bucket, key, versionId?)`: the stored value.
     * @param {string} bucket
     * @param {string} key
     * @param {string | null} [versionId]
     * @returns {Promise<JsonObject>}
     */
    getObject(bucket, key, versionId) {
        let ptr0, len0, ptr1, len1, ptr2, len2;
        try {
            ptr0 = passStringToWasm0(bucket, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(key, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = isLikeNone(versionId) ? 0 : passStringToWasm0(versionId, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len2 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.objectmetadata_getObject(this.__wbg_ptr, ptr0, len0, ptr1, len1, ptr2, len2);
        return ret;
    }
    /**
     * `listBuckets()`: `[{name, vformat, special, value}]`.
     * @returns {Promise<BucketEntry[]>}
     */
    listBuckets() {
        const ret = wasm.objectmetadata_listBuckets(this.__wbg_ptr);
        return ret;
    }
    /**
     * `listObject(bucket, params)` with Arsenal's listing parameters (`{prefix, delimiter,
     * maxKeys, marker, …}`; `listingType` defaults to `DelimiterMaster`, i.e. S3
     * ListObjects). Resolves to Arsenal's result (`{CommonPrefixes, Contents, IsTruncated,
     * …}`).
     * @param {string} bucket
     * @param {ListingParams | null} [params]
     * @returns {Promise<ListingResult>}
     */
    listObjects(bucket, params) {
        const ptr0 = passStringToWasm0(bucket, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.objectmetadata_listObjects(this.__wbg_ptr, ptr0, len0, params);
        return ret;
    }
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
     * @param {string} bucket
     * @param {"v0" | "v1"} to
     * @param {MigrateBucketOptions | null} [options]
     * @param {(event: MigrateEvent) => void} [onEvent]
     * @returns {Promise<MigrateResult>}
     */
    migrateBucket(bucket, to, options, onEvent) {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(bucket, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(to, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.objectmetadata_migrateBucket(this.__wbg_ptr, ptr0, len0, ptr1, len1, options, isLikeNone(onEvent) ? 0 : addToExternrefTable0(onEvent));
        return ret;
    }
    /**
     * `migrationStatus(bucket)`: the bucket's key format and the migration in progress, read
     * as the migrator reads them (`docs/migration.md` §2.1): `{bucket, vformat, marker,
     * checkpoint}`, `marker` and `checkpoint` as stored, `null` when absent.
     * @param {string} bucket
     * @returns {Promise<MigrationStatus>}
     */
    migrationStatus(bucket) {
        const ptr0 = passStringToWasm0(bucket, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.objectmetadata_migrationStatus(this.__wbg_ptr, ptr0, len0);
        return ret;
    }
    /**
     * A client; see the type's docs for `options`.
     * @param {ClientOptions} [options]
     */
    constructor(options) {
        const ret = wasm.objectmetadata_new(options);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        ObjectMetadataFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * `putObject(bucket, key, value, params)` (`params` as Arsenal's: `{versioning: true}`,
     * `{versionId}`, …). Resolves to Arsenal's result text, `{"versionId": "…"}` when a version
     * id was written (or given), or `null`.
     * @param {string} bucket
     * @param {string} key
     * @param {JsonObject} value
     * @param {PutObjectParams | null} [params]
     * @returns {Promise<string | null>}
     */
    putObject(bucket, key, value, params) {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(bucket, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(key, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.objectmetadata_putObject(this.__wbg_ptr, ptr0, len0, ptr1, len1, value, params);
        return ret;
    }
    /**
     * Creates the table with families `d` and `f` unless it exists (in the page's store or
     * through the gateway), as `rowkit s3 setup`.
     * @returns {Promise<void>}
     */
    setup() {
        const ret = wasm.objectmetadata_setup(this.__wbg_ptr);
        return ret;
    }
}
if (Symbol.dispose) ObjectMetadata.prototype[Symbol.dispose] = ObjectMetadata.prototype.free;

/**
 * The Skia Gold trace store. Options: the common client options (`gateway`, `token`,
 * `table` default `gold`, `seed`, `signal`) and `layout`: `md5` (default) or `digest-id`.
 */
export class TraceStore {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        TraceStoreFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_tracestore_free(ptr, 0);
    }
    /**
     * Checks the table (`spec/check.md` §2; nothing in a trace store is repairable).
     * Resolves to the report: `{schema, rows_scanned, findings_by_kind, repaired, left,
     * notes, findings}`.
     * @returns {Promise<CheckReport>}
     */
    check() {
        const ret = wasm.tracestore_check(this.__wbg_ptr);
        return ret;
    }
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
     * @param {string} targetTable
     * @param {"md5" | "digest-id"} to
     * @param {MigrateTableOptions | null} [options]
     * @param {(event: TraceMigrateEvent) => void} [onEvent]
     * @returns {Promise<TraceMigrateResult>}
     */
    migrate(targetTable, to, options, onEvent) {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(targetTable, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(to, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.tracestore_migrate(this.__wbg_ptr, ptr0, len0, ptr1, len1, options, isLikeNone(onEvent) ? 0 : addToExternrefTable0(onEvent));
        return ret;
    }
    /**
     * `migrationStatus()`: the table's migration in progress, read as the migrator reads it
     * (`docs/migration.md` §2.1): `{table, layout, marker, checkpoint}`, `marker` and
     * `checkpoint` as stored, `null` when absent (`layout` is the client's).
     * @returns {Promise<TraceMigrationStatus>}
     */
    migrationStatus() {
        const ret = wasm.tracestore_migrationStatus(this.__wbg_ptr);
        return ret;
    }
    /**
     * A client; see the type's docs for `options`.
     * @param {TraceStoreOptions} [options]
     */
    constructor(options) {
        const ret = wasm.tracestore_new(options);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        TraceStoreFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * `NewestTile`: the index of the newest tile, or `null`.
     * @returns {Promise<number | null>}
     */
    newestTile() {
        const ret = wasm.tracestore_newestTile(this.__wbg_ptr);
        return ret;
    }
    /**
     * `Put`: writes `entries` (`[{params: {k: v}, options?: {k: v}, digest: "32 hex"}]`) at
     * commit `repoIndex`, cells stamped `tsMicros` (default: now).
     * @param {number} repoIndex
     * @param {TraceEntry[]} entries
     * @param {number | null} [tsMicros]
     * @returns {Promise<void>}
     */
    put(repoIndex, entries, tsMicros) {
        const ret = wasm.tracestore_put(this.__wbg_ptr, repoIndex, entries, !isLikeNone(tsMicros), isLikeNone(tsMicros) ? 0 : tsMicros);
        return ret;
    }
    /**
     * `ReadRange(first, last)`: the traces of commits `first..=last`:
     * `{layout, commits, paramset, traces: [{id, params, options, digests}]}`.
     * @param {number} first
     * @param {number} last
     * @returns {Promise<TraceRange>}
     */
    readRange(first, last) {
        const ret = wasm.tracestore_readRange(this.__wbg_ptr, first, last);
        return ret;
    }
    /**
     * Creates the table in the client's layout, or adds the families a table made by an
     * older version lacks (`rowkit gold setup`), in the page's store or through the gateway.
     * @returns {Promise<void>}
     */
    setup() {
        const ret = wasm.tracestore_setup(this.__wbg_ptr);
        return ret;
    }
    /**
     * Streams tile `index` to `onBatch`, called with each batch of traces as it arrives (a
     * viewer draws a 10 000-trace tile while it streams in; options are not read):
     * `{traces: [{id, params}], newDigests: [string], cells: Uint32Array, shardsDone}`, where
     * `cells[t * 256 + c]` is trace `t`'s digest at the tile's commit `c` as 1 + its index in
     * the stream's digest list (the `newDigests` of every batch so far, in order), 0 = missing.
     * Resolves to the number of traces. After an error thrown by `onBatch` no batch is handed
     * over; the read runs to its end and the promise rejects with that error.
     * @param {number} index
     * @param {(batch: TileBatch) => void} onBatch
     * @returns {Promise<number>}
     */
    streamTile(index, onBatch) {
        const ret = wasm.tracestore_streamTile(this.__wbg_ptr, index, onBatch);
        return ret;
    }
    /**
     * One whole tile (`index`; default the newest), as [`TraceStore::read_range`] plus
     * `tileIndex` (`null` when the table has no tile).
     * @param {number | null} [index]
     * @returns {Promise<TraceTile>}
     */
    tile(index) {
        const ret = wasm.tracestore_tile(this.__wbg_ptr, isLikeNone(index) ? Number.MAX_SAFE_INTEGER : (index) >>> 0);
        return ret;
    }
}
if (Symbol.dispose) TraceStore.prototype[Symbol.dispose] = TraceStore.prototype.free;

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
 * @param {KeySchemaName | "auto" | "mounttable" | "tracestore" | "objmeta" | "triples"} schema
 * @param {Uint8Array | string} key
 * @returns {DecodedKey}
 */
export function decodeKey(schema, key) {
    const ptr0 = passStringToWasm0(schema, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.decodeKey(ptr0, len0, key);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * The digest-map row and qualifier of a digest (32 hex characters).
 * @param {string} digest
 * @returns {GoldDigestKey}
 */
export function encodeGoldDigestKey(digest) {
    const ptr0 = passStringToWasm0(digest, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.encodeGoldDigestKey(ptr0, len0);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * The rows of a trace at commit `repoIndex` with trace id `subkey` (e.g. `,0=1,1=3,`): trace
 * row, options row, ops row, shard, tile, and the qualifier in both layouts.
 * @param {number} repoIndex
 * @param {string} subkey
 * @returns {GoldTraceKey}
 */
export function encodeGoldTraceKey(repoIndex, subkey) {
    const val2 = +repoIndex;
    const ptr0 = passStringToWasm0(subkey, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.encodeGoldTraceKey(val2, ptr0, len0);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * The four index rows of a triple (BadWolf text, tab- or space-separated) in `graph`, and the
 * graph row.
 * @param {string} graph
 * @param {string} triple
 * @returns {GraphKey}
 */
export function encodeGraphKey(graph, triple) {
    let ptr0, len0, ptr1, len1;
    try {
        ptr0 = passStringToWasm0(graph, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passStringToWasm0(triple, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len1 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.encodeGraphKey(ptr0, len0, ptr1, len1);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * The node row key of a mount table name: `{schema, name, row_key, row_key_hex}`.
 * @param {string} name
 * @returns {MtKey}
 */
export function encodeMtKey(name) {
    const ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.encodeMtKey(ptr0, len0);
    return ret;
}

/**
 * The row of an object's master (`versionId` absent) or of one version; `format` is `v0` or
 * `v1` (default `v1`).
 * @param {string} bucket
 * @param {string} key
 * @param {string | null | undefined} versionId
 * @param {"v0" | "v1" | null} [format]
 * @returns {S3Key}
 */
export function encodeS3Key(bucket, key, versionId, format) {
    let ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3;
    try {
        ptr0 = passStringToWasm0(bucket, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passStringToWasm0(key, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len1 = WASM_VECTOR_LEN;
        ptr2 = isLikeNone(versionId) ? 0 : passStringToWasm0(versionId, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len2 = WASM_VECTOR_LEN;
        ptr3 = isLikeNone(format) ? 0 : passStringToWasm0(format, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len3 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr3) { wasm.__wbindgen_free(ptr3, len3 * 1, 1); }
        if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.encodeS3Key(ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * Bytes as escaped key text: printable ASCII verbatim, `\` as `\\`, others as `\xHH`.
 * @param {Uint8Array | number[]} bytes
 * @returns {string}
 */
export function escapeKey(bytes) {
    let deferred2_0;
    let deferred2_1;
    try {
        const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.escapeKey(ptr0, len0);
        deferred2_0 = ret[0];
        deferred2_1 = ret[1];
        return getStringFromWasm0(ret[0], ret[1]);
    } finally {
        wasm.__wbindgen_free(deferred2_0, deferred2_1, 1);
    }
}

/**
 * Every table of the client's store with its families, ascending by table id: the page's
 * store offline, the gateway's instance through its table admin (`GET …/tables`). Options are
 * the common client options (`gateway`, `token`, `project`, `instance`). Resolves to
 * `[{name, families: [{name, gcRule}]}]`, `gcRule` in Google's JSON or `null`.
 * @param {ClientOptions | null | undefined} options
 * @returns {Promise<ListedTable[]>}
 */
export function listTables(options) {
    const ret = wasm.listTables(options);
    return ret;
}

/**
 * Every lookup method the graph's `query` runs, with its arguments in order:
 * `[{method, arguments: ["subject" | "predicate" | "object", ...]}]` (the query builder's
 * fields).
 * @returns {LookupMethod[]}
 */
export function lookupMethods() {
    const ret = wasm.lookupMethods();
    return ret;
}

/**
 * Parses escaped key text (`\xHH`, `\\`) or `hex:…` into bytes.
 * @param {string} text
 * @returns {Uint8Array}
 */
export function parseKey(text) {
    const ptr0 = passStringToWasm0(text, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.parseKey(ptr0, len0);
    if (ret[3]) {
        throw takeFromExternrefTable0(ret[2]);
    }
    var v2 = getArrayU8FromWasm0(ret[0], ret[1]).slice();
    wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
    return v2;
}

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
 * @param {ClientOptions | null | undefined} options
 * @param {string} table
 * @param {Uint8Array | string} prefix
 * @param {number} limit
 * @param {KeySchemaName | "auto" | "none" | null} schema
 * @param {Uint8Array | string | undefined} after
 * @param {ScanNarrowing} [narrowing]
 * @returns {Promise<ScannedRow[]>}
 */
export function scanRows(options, table, prefix, limit, schema, after, narrowing) {
    const val3 = +limit;
    let ptr0, len0, ptr1, len1;
    try {
        ptr0 = passStringToWasm0(table, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = isLikeNone(schema) ? 0 : passStringToWasm0(schema, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len1 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.scanRows(options, ptr0, len0, prefix, val3, ptr1, len1, after, narrowing);
    return ret;
}

/**
 * Checks `value` as a `field` with the CLI's rules: `null` when it is valid, else the one
 * sentence saying which rule it breaks (e.g. `validate("digest", "xyz")`). An unknown
 * `field` throws (`code` `invalid_argument`).
 * @param {ValidatedField} field
 * @param {string} value
 * @returns {string | undefined}
 */
export function validate(field, value) {
    let ptr0, len0, ptr1, len1;
    try {
        ptr0 = passStringToWasm0(field, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passStringToWasm0(value, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len1 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.validate(ptr0, len0, ptr1, len1);
    if (ret[3]) {
        throw takeFromExternrefTable0(ret[2]);
    }
    let v3;
    if (ret[0] !== 0) {
        v3 = getStringFromWasm0(ret[0], ret[1]);
        wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
    }
    return v3;
}
function __wbg_get_imports() {
    const import0 = {
        __proto__: null,
        __wbg___wbindgen_boolean_get_4f1baf9a00be3c74: function(arg0) {
            const v = arg0;
            const ret = typeof(v) === 'boolean' ? v : undefined;
            return isLikeNone(ret) ? 0xFFFFFF : ret ? 1 : 0;
        },
        __wbg___wbindgen_debug_string_f249a2a76caa9a55: function(arg0, arg1) {
            const ret = debugString(arg1);
            const ptr1 = passStringToWasm0(ret, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            const len1 = WASM_VECTOR_LEN;
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
        },
        __wbg___wbindgen_is_function_741ff2bb612836f5: function(arg0) {
            const ret = typeof(arg0) === 'function';
            return ret;
        },
        __wbg___wbindgen_is_null_c22311b1cc228e3a: function(arg0) {
            const ret = arg0 === null;
            return ret;
        },
        __wbg___wbindgen_is_undefined_be5b34249ff1fc15: function(arg0) {
            const ret = arg0 === undefined;
            return ret;
        },
        __wbg___wbindgen_number_get_934b640d0889af78: function(arg0, arg1) {
            const obj = arg1;
            const ret = typeof(obj) === 'number' ? obj : undefined;
            getDataViewMemory0().setFloat64((arg0 >>> 0) + 8 * 1, isLikeNone(ret) ? 0 : ret, true);
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, !isLikeNone(ret), true);
        },
        __wbg___wbindgen_string_get_7ce8eee7fd327545: function(arg0, arg1) {
            const obj = arg1;
            const ret = typeof(obj) === 'string' ? obj : undefined;
            var ptr1 = isLikeNone(ret) ? 0 : passStringToWasm0(ret, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            var len1 = WASM_VECTOR_LEN;
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
        },
        __wbg___wbindgen_throw_4c88d8bf264fd984: function(arg0, arg1) {
            throw new Error(getStringFromWasm0(arg0, arg1));
        },
        __wbg__wbg_cb_unref_09736879a3f67559: function(arg0) {
            arg0._wbg_cb_unref();
        },
        __wbg_abort_f8d1589eb0c65ee2: function(arg0) {
            arg0.abort();
        },
        __wbg_aborted_31456edf1be00084: function(arg0) {
            const ret = arg0.aborted;
            return ret;
        },
        __wbg_addEventListener_847fd86b8c33ec43: function() { return handleError(function (arg0, arg1, arg2, arg3) {
            arg0.addEventListener(getStringFromWasm0(arg1, arg2), arg3);
        }, arguments); },
        __wbg_arrayBuffer_2c99a9ba14ba536c: function() { return handleError(function (arg0) {
            const ret = arg0.arrayBuffer();
            return ret;
        }, arguments); },
        __wbg_body_0da01a9a056907d8: function(arg0) {
            const ret = arg0.body;
            return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
        },
        __wbg_buffer_aca05a93c046db1a: function(arg0) {
            const ret = arg0.buffer;
            return ret;
        },
        __wbg_byobRequest_18280c78e462544c: function(arg0) {
            const ret = arg0.byobRequest;
            return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
        },
        __wbg_byteLength_c5f3c188d5252e5b: function(arg0) {
            const ret = arg0.byteLength;
            return ret;
        },
        __wbg_byteOffset_63cdc7b38f33a45e: function(arg0) {
            const ret = arg0.byteOffset;
            return ret;
        },
        __wbg_call_40b008ba32f73991: function() { return handleError(function (arg0, arg1) {
            const ret = arg0.call(arg1);
            return ret;
        }, arguments); },
        __wbg_call_a410eb4b59ed5965: function() { return handleError(function (arg0, arg1, arg2) {
            const ret = arg0.call(arg1, arg2);
            return ret;
        }, arguments); },
        __wbg_cancel_b195250778e9d8e7: function(arg0) {
            const ret = arg0.cancel();
            return ret;
        },
        __wbg_catch_fd4c7ea14fde9d83: function(arg0, arg1) {
            const ret = arg0.catch(arg1);
            return ret;
        },
        __wbg_clearTimeout_f0dba5bf0281c91c: function(arg0) {
            clearTimeout(arg0);
        },
        __wbg_close_294d3f727cb7a844: function() { return handleError(function (arg0) {
            arg0.close();
        }, arguments); },
        __wbg_close_bf94aa7e38b9a94b: function() { return handleError(function (arg0) {
            arg0.close();
        }, arguments); },
        __wbg_enqueue_c11626eae1c54509: function() { return handleError(function (arg0, arg1) {
            arg0.enqueue(arg1);
        }, arguments); },
        __wbg_fetch_e9b807615c1c1f2f: function(arg0) {
            const ret = fetch(arg0);
            return ret;
        },
        __wbg_from_eac91875c8a5ffa4: function(arg0) {
            const ret = Array.from(arg0);
            return ret;
        },
        __wbg_getReader_3b3096cf504fce5e: function() { return handleError(function (arg0) {
            const ret = arg0.getReader();
            return ret;
        }, arguments); },
        __wbg_get_2080c49015e35254: function() { return handleError(function (arg0, arg1) {
            const ret = Reflect.get(arg0, arg1);
            return ret;
        }, arguments); },
        __wbg_get_done_3bf2b4a34e149301: function(arg0) {
            const ret = arg0.done;
            return isLikeNone(ret) ? 0xFFFFFF : ret ? 1 : 0;
        },
        __wbg_get_unchecked_e6325ad374eff861: function(arg0, arg1) {
            const ret = arg0[arg1 >>> 0];
            return ret;
        },
        __wbg_get_value_9454480da7066d61: function(arg0) {
            const ret = arg0.value;
            return ret;
        },
        __wbg_instanceof_AbortSignal_16e867a9888f3bc7: function(arg0) {
            let result;
            try {
                result = arg0 instanceof AbortSignal;
            } catch (_) {
                result = false;
            }
            const ret = result;
            return ret;
        },
        __wbg_instanceof_Error_74e3cca0c4a69161: function(arg0) {
            let result;
            try {
                result = arg0 instanceof Error;
            } catch (_) {
                result = false;
            }
            const ret = result;
            return ret;
        },
        __wbg_instanceof_Response_5b0b4f7f1daeae51: function(arg0) {
            let result;
            try {
                result = arg0 instanceof Response;
            } catch (_) {
                result = false;
            }
            const ret = result;
            return ret;
        },
        __wbg_instanceof_Uint8Array_d7aeb0dcb3108fea: function(arg0) {
            let result;
            try {
                result = arg0 instanceof Uint8Array;
            } catch (_) {
                result = false;
            }
            const ret = result;
            return ret;
        },
        __wbg_length_186163212ffe79c3: function(arg0) {
            const ret = arg0.length;
            return ret;
        },
        __wbg_length_b03a0fabb109b1e9: function(arg0) {
            const ret = arg0.length;
            return ret;
        },
        __wbg_message_43d8c8f1d543a349: function(arg0) {
            const ret = arg0.message;
            return ret;
        },
        __wbg_new_13de428334042d26: function(arg0) {
            const ret = new Uint8Array(arg0);
            return ret;
        },
        __wbg_new_277c27c26f94cbc2: function() { return handleError(function () {
            const ret = new Headers();
            return ret;
        }, arguments); },
        __wbg_new_37eb45aaf5eeb820: function() {
            const ret = new Array();
            return ret;
        },
        __wbg_new_5f28518387ad0e34: function() { return handleError(function () {
            const ret = new AbortController();
            return ret;
        }, arguments); },
        __wbg_new_787b9fb330d55d78: function(arg0, arg1) {
            const ret = new Error(getStringFromWasm0(arg0, arg1));
            return ret;
        },
        __wbg_new_ba40181b3f24ac80: function(arg0, arg1) {
            try {
                var state0 = {a: arg0, b: arg1};
                var cb0 = (arg0, arg1) => {
                    const a = state0.a;
                    state0.a = 0;
                    try {
                        return wasm_bindgen__convert__closures_____invoke__h43aee51bd4d15ad7(a, state0.b, arg0, arg1);
                    } finally {
                        state0.a = a;
                    }
                };
                const ret = new Promise(cb0);
                return ret;
            } finally {
                state0.a = 0;
            }
        },
        __wbg_new_cd4348290afae586: function() {
            const ret = new Object();
            return ret;
        },
        __wbg_new_from_slice_3512352010266e02: function(arg0, arg1) {
            const ret = new Uint32Array(getArrayU32FromWasm0(arg0, arg1));
            return ret;
        },
        __wbg_new_from_slice_b8daf545a41c6aa0: function(arg0, arg1) {
            const ret = new Uint8Array(getArrayU8FromWasm0(arg0, arg1));
            return ret;
        },
        __wbg_new_typed_e09da9dae6ee5935: function(arg0, arg1) {
            try {
                var state0 = {a: arg0, b: arg1};
                var cb0 = (arg0, arg1) => {
                    const a = state0.a;
                    state0.a = 0;
                    try {
                        return wasm_bindgen__convert__closures_____invoke__h43aee51bd4d15ad7(a, state0.b, arg0, arg1);
                    } finally {
                        state0.a = a;
                    }
                };
                const ret = new Promise(cb0);
                return ret;
            } finally {
                state0.a = 0;
            }
        },
        __wbg_new_with_byte_offset_and_length_3cd32055a417f095: function(arg0, arg1, arg2) {
            const ret = new Uint8Array(arg0, arg1 >>> 0, arg2 >>> 0);
            return ret;
        },
        __wbg_new_with_str_and_init_d9f6b5611184e16b: function() { return handleError(function (arg0, arg1, arg2) {
            const ret = new Request(getStringFromWasm0(arg0, arg1), arg2);
            return ret;
        }, arguments); },
        __wbg_now_463ac581d2fc7ea3: function() {
            const ret = Date.now();
            return ret;
        },
        __wbg_ok_670a05555db5f713: function(arg0) {
            const ret = arg0.ok;
            return ret;
        },
        __wbg_parse_c3f72b5a24f83c01: function() { return handleError(function (arg0, arg1) {
            const ret = JSON.parse(getStringFromWasm0(arg0, arg1));
            return ret;
        }, arguments); },
        __wbg_prototypesetcall_13162965d1fe7aa3: function(arg0, arg1, arg2) {
            Uint8Array.prototype.set.call(getArrayU8FromWasm0(arg0, arg1), arg2);
        },
        __wbg_push_c9f4893fc209f768: function(arg0, arg1) {
            const ret = arg0.push(arg1);
            return ret;
        },
        __wbg_queueMicrotask_1e8503a8a690f0a3: function(arg0) {
            const ret = arg0.queueMicrotask;
            return ret;
        },
        __wbg_queueMicrotask_4a1a4d8dd332373b: function(arg0) {
            queueMicrotask(arg0);
        },
        __wbg_random_df36b90cd78a7d54: function() {
            const ret = Math.random();
            return ret;
        },
        __wbg_read_e3bea75dace70752: function(arg0) {
            const ret = arg0.read();
            return ret;
        },
        __wbg_reject_334b730b3c00849b: function(arg0) {
            const ret = Promise.reject(arg0);
            return ret;
        },
        __wbg_releaseLock_eddf1401c763f0b9: function(arg0) {
            arg0.releaseLock();
        },
        __wbg_resolve_dbf78ab4942478b0: function(arg0) {
            const ret = Promise.resolve(arg0);
            return ret;
        },
        __wbg_respond_d97c023ee981d1f5: function() { return handleError(function (arg0, arg1) {
            arg0.respond(arg1 >>> 0);
        }, arguments); },
        __wbg_setTimeout_61e3931987c4a7a5: function(arg0, arg1) {
            const ret = setTimeout(arg0, arg1);
            return ret;
        },
        __wbg_set_2793479888329cb6: function() { return handleError(function (arg0, arg1, arg2) {
            const ret = Reflect.set(arg0, arg1, arg2);
            return ret;
        }, arguments); },
        __wbg_set_bcb0ec2400cfa22e: function() { return handleError(function (arg0, arg1, arg2, arg3, arg4) {
            arg0.set(getStringFromWasm0(arg1, arg2), getStringFromWasm0(arg3, arg4));
        }, arguments); },
        __wbg_set_body_877d5251e78ca815: function(arg0, arg1) {
            arg0.body = arg1;
        },
        __wbg_set_credentials_bb5277b4006149d4: function(arg0, arg1) {
            arg0.credentials = __wbindgen_enum_RequestCredentials[arg1];
        },
        __wbg_set_feb3714f475485ba: function(arg0, arg1, arg2) {
            arg0.set(getArrayU8FromWasm0(arg1, arg2));
        },
        __wbg_set_headers_6d75a7df4eb22716: function(arg0, arg1) {
            arg0.headers = arg1;
        },
        __wbg_set_method_639e69af35614d36: function(arg0, arg1, arg2) {
            arg0.method = getStringFromWasm0(arg1, arg2);
        },
        __wbg_set_mode_07e051ad8b4e2126: function(arg0, arg1) {
            arg0.mode = __wbindgen_enum_RequestMode[arg1];
        },
        __wbg_set_signal_0b2eee78907e5ba7: function(arg0, arg1) {
            arg0.signal = arg1;
        },
        __wbg_signal_fac908876f45725d: function(arg0) {
            const ret = arg0.signal;
            return ret;
        },
        __wbg_static_accessor_GLOBAL_THIS_003ee833af9699fc: function() {
            const ret = typeof globalThis === 'undefined' ? undefined : globalThis;
            return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
        },
        __wbg_static_accessor_GLOBAL_e4293fb22cbe77da: function() {
            const ret = typeof global === 'undefined' ? undefined : global;
            return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
        },
        __wbg_static_accessor_SELF_53bb20457401453d: function() {
            const ret = typeof self === 'undefined' ? undefined : self;
            return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
        },
        __wbg_static_accessor_WINDOW_b5e0810bfecb7feb: function() {
            const ret = typeof window === 'undefined' ? undefined : window;
            return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
        },
        __wbg_status_cb85b6c8d1769fa1: function(arg0) {
            const ret = arg0.status;
            return ret;
        },
        __wbg_stringify_0a0fbf2ef722380a: function() { return handleError(function (arg0) {
            const ret = JSON.stringify(arg0);
            return ret;
        }, arguments); },
        __wbg_then_656f253a5dd7d8ea: function(arg0, arg1, arg2) {
            const ret = arg0.then(arg1, arg2);
            return ret;
        },
        __wbg_then_e3f7f2d365708be8: function(arg0, arg1) {
            const ret = arg0.then(arg1);
            return ret;
        },
        __wbg_view_3b708d3bdaf3fc96: function(arg0) {
            const ret = arg0.view;
            return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
        },
        __wbindgen_generic_0000000000000001: function(arg0, arg1) {
            // Cast intrinsic for `Closure(Closure { owned: true, function: Function { arguments: [Externref], shim_idx: 1057, ret: Result(Unit), inner_ret: Some(Result(Unit)) }, mutable: true }) -> Externref`.
            const ret = makeMutClosure(arg0, arg1, wasm_bindgen__convert__closures_____invoke__h514af67fce4b0c9e);
            return ret;
        },
        __wbindgen_generic_0000000000000002: function(arg0, arg1) {
            // Cast intrinsic for `Closure(Closure { owned: true, function: Function { arguments: [Externref], shim_idx: 827, ret: Unit, inner_ret: Some(Unit) }, mutable: true }) -> Externref`.
            const ret = makeMutClosure(arg0, arg1, wasm_bindgen__convert__closures_____invoke__he7d593d6bcf9c188);
            return ret;
        },
        __wbindgen_generic_0000000000000003: function(arg0) {
            // Cast intrinsic for `F64 -> Externref`.
            const ret = arg0;
            return ret;
        },
        __wbindgen_generic_0000000000000004: function(arg0, arg1) {
            // Cast intrinsic for `Ref(String) -> Externref`.
            const ret = getStringFromWasm0(arg0, arg1);
            return ret;
        },
        __wbindgen_init_externref_table: function() {
            const table = wasm.__wbindgen_externrefs;
            table.set(0, undefined);
            table.set(1024, undefined);
            table.set(1025, null);
            table.set(1026, true);
            table.set(1027, false);
        },
    };
    return {
        __proto__: null,
        "./rowkit_bg.js": import0,
    };
}

function wasm_bindgen__convert__closures_____invoke__he7d593d6bcf9c188(arg0, arg1, arg2) {
    wasm.wasm_bindgen__convert__closures_____invoke__he7d593d6bcf9c188(arg0, arg1, arg2);
}

function wasm_bindgen__convert__closures_____invoke__h514af67fce4b0c9e(arg0, arg1, arg2) {
    const ret = wasm.wasm_bindgen__convert__closures_____invoke__h514af67fce4b0c9e(arg0, arg1, arg2);
    if (ret[1]) {
        throw takeFromExternrefTable0(ret[0]);
    }
}

function wasm_bindgen__convert__closures_____invoke__h43aee51bd4d15ad7(arg0, arg1, arg2, arg3) {
    wasm.wasm_bindgen__convert__closures_____invoke__h43aee51bd4d15ad7(arg0, arg1, arg2, arg3);
}


const __wbindgen_enum_ReadableStreamType = ["bytes"];


const __wbindgen_enum_RequestCredentials = ["omit", "same-origin", "include"];


const __wbindgen_enum_RequestMode = ["same-origin", "no-cors", "cors", "navigate"];
const GraphFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_graph_free(ptr, 1));
const IntoUnderlyingByteSourceFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_intounderlyingbytesource_free(ptr, 1));
const IntoUnderlyingSinkFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_intounderlyingsink_free(ptr, 1));
const IntoUnderlyingSourceFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_intounderlyingsource_free(ptr, 1));
const MountTableFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_mounttable_free(ptr, 1));
const ObjectMetadataFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_objectmetadata_free(ptr, 1));
const TraceStoreFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_tracestore_free(ptr, 1));

function addToExternrefTable0(obj) {
    const idx = wasm.__externref_table_alloc();
    wasm.__wbindgen_externrefs.set(idx, obj);
    return idx;
}

const CLOSURE_DTORS = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(state => wasm.__wbindgen_destroy_closure(state.a, state.b));

function debugString(val) {
    switch (typeof val) {
        // primitive types
        case 'number':
        case 'boolean':
        case 'undefined':
        return `${val}`;
        case 'string':
        return JSON.stringify(val);
        case 'bigint':
        return `${val}n`;
        case 'symbol':
        return val.description !== undefined
            ? `Symbol(${val.description})`
            : 'Symbol';
        case 'function':
        return typeof val.name === 'string' && val.name !== ''
            ? `Function(${val.name})`
            : 'Function';
        case 'object': {
            if (val === null) {
                return 'null';
            }
            // objects
            if (Array.isArray(val)) {
                return '[' + Array.from(val, debugString).join(', ') + ']';
            }
            // errors
            if (val instanceof Error) {
                return `${val.name}: ${val.message}\n${val.stack}`;
            }

            const toStringOutput = toString.call(val);
            // Test for built-in
            const className = /\[object ([^\]]+)\]/.exec(toStringOutput)?.[1];

            // Failed to match the standard '[object ClassName]'
            if (className === undefined) {
                return toStringOutput;
            }
            if (className === 'Object') {
                // we're a user defined class or Object
                // JSON.stringify avoids problems with cycles, and is generally much
                // easier than looping through ownProperties of `val`.
                try {
                    return 'Object(' + JSON.stringify(val) + ')';
                } catch (_) {
                    return 'Object';
                }
            }
            // TODO we could test for more things here, like `Set`s and `Map`s.
            return className;
        }
        // Per MDN: 'This list of values is exhaustive.'
        // https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Operators/typeof#description
    }
}

function getArrayU32FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getUint32ArrayMemory0().subarray(ptr / 4, ptr / 4 + len);
}

function getArrayU8FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getUint8ArrayMemory0().subarray(ptr / 1, ptr / 1 + len);
}

let cachedDataViewMemory0 = null;
function getDataViewMemory0() {
    if (cachedDataViewMemory0 === null || cachedDataViewMemory0.buffer.detached === true || (cachedDataViewMemory0.buffer.detached === undefined && cachedDataViewMemory0.buffer !== wasm.memory.buffer)) {
        cachedDataViewMemory0 = new DataView(wasm.memory.buffer);
    }
    return cachedDataViewMemory0;
}

function getStringFromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return decodeText(getUint8ArrayMemory0().subarray(ptr, ptr + len));
}

let cachedUint32ArrayMemory0 = null;
function getUint32ArrayMemory0() {
    if (cachedUint32ArrayMemory0 === null || cachedUint32ArrayMemory0.byteLength === 0) {
        cachedUint32ArrayMemory0 = new Uint32Array(wasm.memory.buffer);
    }
    return cachedUint32ArrayMemory0;
}

let cachedUint8ArrayMemory0 = null;
function getUint8ArrayMemory0() {
    if (cachedUint8ArrayMemory0 === null || cachedUint8ArrayMemory0.byteLength === 0) {
        cachedUint8ArrayMemory0 = new Uint8Array(wasm.memory.buffer);
    }
    return cachedUint8ArrayMemory0;
}

function handleError(f, args) {
    try {
        return f.apply(this, args);
    } catch (e) {
        const idx = addToExternrefTable0(e);
        wasm.__wbindgen_exn_store(idx);
    }
}

function isLikeNone(x) {
    return x === undefined || x === null;
}

function makeMutClosure(arg0, arg1, f) {
    const state = { a: arg0, b: arg1, cnt: 1 };
    const real = (...args) => {

        // First up with a closure we increment the internal reference
        // count. This ensures that the Rust closure environment won't
        // be deallocated while we're invoking it.
        state.cnt++;
        const a = state.a;
        state.a = 0;
        try {
            return f(a, state.b, ...args);
        } finally {
            state.a = a;
            real._wbg_cb_unref();
        }
    };
    real._wbg_cb_unref = () => {
        if (--state.cnt === 0) {
            wasm.__wbindgen_destroy_closure(state.a, state.b);
            state.a = 0;
            CLOSURE_DTORS.unregister(state);
        }
    };
    CLOSURE_DTORS.register(real, state, state);
    return real;
}

function passArray8ToWasm0(arg, malloc) {
    const ptr = malloc(arg.length * 1, 1) >>> 0;
    getUint8ArrayMemory0().set(arg, ptr / 1);
    WASM_VECTOR_LEN = arg.length;
    return ptr;
}

function passArrayJsValueToWasm0(array, malloc) {
    const ptr = malloc(array.length * 4, 4) >>> 0;
    for (let i = 0; i < array.length; i++) {
        const add = addToExternrefTable0(array[i]);
        getDataViewMemory0().setUint32(ptr + 4 * i, add, true);
    }
    WASM_VECTOR_LEN = array.length;
    return ptr;
}

function passStringToWasm0(arg, malloc, realloc) {
    if (realloc === undefined) {
        const buf = cachedTextEncoder.encode(arg);
        const ptr = malloc(buf.length, 1) >>> 0;
        getUint8ArrayMemory0().subarray(ptr, ptr + buf.length).set(buf);
        WASM_VECTOR_LEN = buf.length;
        return ptr;
    }

    let len = arg.length;
    let ptr = malloc(len, 1) >>> 0;

    const mem = getUint8ArrayMemory0();

    let offset = 0;

    for (; offset < len; offset++) {
        const code = arg.charCodeAt(offset);
        if (code > 0x7F) break;
        mem[ptr + offset] = code;
    }
    if (offset !== len) {
        if (offset !== 0) {
            arg = arg.slice(offset);
        }
        ptr = realloc(ptr, len, len = offset + arg.length * 3, 1) >>> 0;
        const view = getUint8ArrayMemory0().subarray(ptr + offset, ptr + len);
        const ret = cachedTextEncoder.encodeInto(arg, view);

        offset += ret.written;
        ptr = realloc(ptr, len, offset, 1) >>> 0;
    }

    WASM_VECTOR_LEN = offset;
    return ptr;
}

function takeFromExternrefTable0(idx) {
    const value = wasm.__wbindgen_externrefs.get(idx);
    wasm.__externref_table_dealloc(idx);
    return value;
}

let cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
cachedTextDecoder.decode();
const MAX_SAFARI_DECODE_BYTES = 2146435072;
let numBytesDecoded = 0;
function decodeText(bytes) {
    numBytesDecoded += bytes.length;
    if (numBytesDecoded >= MAX_SAFARI_DECODE_BYTES) {
        cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
        cachedTextDecoder.decode();
        numBytesDecoded = bytes.length;
    }
    return cachedTextDecoder.decode(bytes);
}

const cachedTextEncoder = new TextEncoder();

if (!('encodeInto' in cachedTextEncoder)) {
    cachedTextEncoder.encodeInto = function (arg, view) {
        const buf = cachedTextEncoder.encode(arg);
        view.set(buf);
        return {
            read: arg.length,
            written: buf.length
        };
    };
}

let WASM_VECTOR_LEN = 0;

let wasmModule, wasmInstance, wasm;
function __wbg_finalize_init(instance, module) {
    wasmInstance = instance;
    wasm = instance.exports;
    wasmModule = module;
    cachedDataViewMemory0 = null;
    cachedUint32ArrayMemory0 = null;
    cachedUint8ArrayMemory0 = null;
    wasm.__wbindgen_start();
    return wasm;
}

async function __wbg_load(module, imports) {
    if (typeof Response === 'function' && module instanceof Response) {
        if (!module.ok) {
            throw new Error(`failed to fetch Wasm: ${module.status} ${module.statusText} fetching '${module.url}'`);
        }

        if (typeof WebAssembly.instantiateStreaming === 'function') {
            try {
                return await WebAssembly.instantiateStreaming(module, imports);
            } catch (e) {
                const validResponse = expectedResponseType(module.type);

                if (validResponse && module.headers.get('Content-Type') !== 'application/wasm') {
                    console.warn("`WebAssembly.instantiateStreaming` failed because your server does not serve Wasm with `application/wasm` MIME type. Falling back to `WebAssembly.instantiate` which is slower. Original error:\n", e);

                } else { throw e; }
            }
        }

        const bytes = await module.arrayBuffer();
        return await WebAssembly.instantiate(bytes, imports);
    } else {
        const instance = await WebAssembly.instantiate(module, imports);

        if (instance instanceof WebAssembly.Instance) {
            return { instance, module };
        } else {
            return instance;
        }
    }

    function expectedResponseType(type) {
        switch (type) {
            case 'basic': case 'cors': case 'default': return true;
        }
        return false;
    }
}

function initSync(module) {
    if (wasm !== undefined) return wasm;


    if (module !== undefined) {
        if (Object.getPrototypeOf(module) === Object.prototype) {
            ({module} = module)
        } else {
            console.warn('using deprecated parameters for `initSync()`; pass a single object instead')
        }
    }

    const imports = __wbg_get_imports();
    if (!(module instanceof WebAssembly.Module)) {
        module = new WebAssembly.Module(module);
    }
    const instance = new WebAssembly.Instance(module, imports);
    return __wbg_finalize_init(instance, module);
}

let __wbg_init_promise;
async function __wbg_init(module_or_path) {
    if (wasm !== undefined) return wasm;
    if (__wbg_init_promise === undefined) {
        __wbg_init_promise = __wbg_init_once(module_or_path);
        __wbg_init_promise.catch(() => { __wbg_init_promise = undefined; });
    }
    return __wbg_init_promise;
}

async function __wbg_init_once(module_or_path) {

    if (module_or_path !== undefined) {
        if (Object.getPrototypeOf(module_or_path) === Object.prototype) {
            ({module_or_path} = module_or_path)
        } else {
            console.warn('using deprecated parameters for the initialization function; pass a single object instead')
        }
    }

    if (module_or_path === undefined) {
        module_or_path = new URL('rowkit_bg.wasm', import.meta.url);
    }
    const imports = __wbg_get_imports();

    if (typeof module_or_path === 'string' || (typeof Request === 'function' && module_or_path instanceof Request) || (typeof URL === 'function' && module_or_path instanceof URL)) {
        module_or_path = fetch(module_or_path);
    }

    const { instance, module } = await __wbg_load(await module_or_path, imports);

    return __wbg_finalize_init(instance, module);
}

export { initSync, __wbg_init as default };
