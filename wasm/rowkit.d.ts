// The public types of the npm package `rowkit`: the declarations wasm-bindgen generated into
// wasm/www/pkg/rowkit.d.ts (with the option and result types that wasm/src declares), without
// wasm-bindgen's loader internals. wasm/tests/npm/run.sh checks this list against what the
// package exports at run time.
export {
    Graph,
    MountTable,
    ObjectMetadata,
    TraceStore,
    decodeKey,
    encodeGoldDigestKey,
    encodeGoldTraceKey,
    encodeGraphKey,
    encodeMtKey,
    encodeS3Key,
    escapeKey,
    listTables,
    lookupMethods,
    parseKey,
    scanRows,
    validate,
} from "./www/pkg/rowkit.js";
export type {
    BucketEntry,
    CheckFinding,
    CheckReport,
    ClientOptions,
    DecodedKey,
    DeleteObjectParams,
    GcRuleJson,
    GoldDigestKey,
    GoldTraceKey,
    GraphKey,
    JsonObject,
    JsonValue,
    KeyBytes,
    KeySchemaName,
    KeySegment,
    ListedFamily,
    ListedObject,
    ListedTable,
    ListingParams,
    ListingResult,
    LookupBounds,
    LookupMethod,
    MigrateBucketOptions,
    MigrateConflict,
    MigrateCounters,
    MigrateEvent,
    MigrateFinding,
    MigratePoint,
    MigrateResult,
    MigrateTableOptions,
    MigrationStateName,
    MigrationStatus,
    MountEntry,
    MountPermissions,
    MountTableOptions,
    MountedServer,
    MtKey,
    PutObjectParams,
    QualifierBytes,
    S3Key,
    ScanNarrowing,
    ScannedCell,
    ScannedRow,
    TileBatch,
    Trace,
    TraceEntry,
    TraceMigrateEvent,
    TraceMigrateResult,
    TraceMigrationStatus,
    TraceRange,
    TraceStoreOptions,
    TraceTile,
    TripleMatch,
    ValidatedField,
} from "./www/pkg/rowkit.js";

/** What the browser build instantiates the wasm from: its URL, a response, its bytes or a module. */
export type WasmSource = string | URL | Response | BufferSource | WebAssembly.Module;

/**
 * Loads the wasm; call it once before anything else. In a browser it fetches `rowkit_bg.wasm`
 * from beside the module (`import.meta.url`), or from `module_or_path` (a bundler's URL for
 * `rowkit/rowkit_bg.wasm`); later calls resolve at once. In Node the wasm is loaded on import
 * and this resolves at once.
 */
export default function init(options?: {
    module_or_path?: WasmSource | Promise<WasmSource>;
}): Promise<void>;
