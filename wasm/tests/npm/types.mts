// A TypeScript user of the package (`tsc --strict`, NodeNext resolution: the package's
// `exports`): the options and results are typed, so each `@ts-expect-error` line must be an
// error (an `any` would let it through, and tsc reports the unused directive).
import init, {
    decodeKey,
    encodeMtKey,
    encodeS3Key,
    Graph,
    listTables,
    MountTable,
    ObjectMetadata,
    scanRows,
    TraceStore,
    type CheckReport,
    type DecodedKey,
    type ListedTable,
    type MountEntry,
    type ScannedRow,
} from "rowkit";

export async function typed(): Promise<void> {
    await init();
    const key: DecodedKey = decodeKey("auto", new Uint8Array([0x62, 0x00]));
    const hex: string = key.row_key_hex;
    const name: string = encodeMtKey("a/b").name;
    const version: string | null = encodeS3Key("b", "k", "v1", "v0").version_id;
    const mt = new MountTable({ gateway: "http://127.0.0.1:8080", token: "t", as: ["alice"] });
    const entry: MountEntry = await mt.resolve("a");
    const deadline: number = entry.servers[0].deadlineUs;
    const report: CheckReport = await new TraceStore({ layout: "digest-id", seed: 7 }).check();
    const left: number = report.left;
    const om = new ObjectMetadata();
    await om.putObject("b", "k", { size: 1, tags: ["x"] }, { versioning: true });
    const listing = await om.listObjects("b", { prefix: "a/", maxKeys: 10 });
    const truncated: boolean = listing.IsTruncated;
    const names: string[] = await Graph.names({ table: "badwolf" });
    const rows: ScannedRow[] = await scanRows(undefined, "gold", "", 10, "gold", undefined);
    const size: number = rows[0].cells[0].valueSize;
    const tables: ListedTable[] = await listTables({ gateway: "http://127.0.0.1:8080", deadlineMs: 8000 });
    const rule = tables[0].families[0].gcRule;
    const versions = rule && "maxNumVersions" in rule ? rule.maxNumVersions : 0;
    console.log(hex, name, version, deadline, left, truncated, names, size, versions);

    // @ts-expect-error: an unknown client option
    new MountTable({ gatway: "http://127.0.0.1:8080" });
    // @ts-expect-error: `layout` is md5 or digest-id
    new TraceStore({ layout: "sha1" });
    // @ts-expect-error: `seed` is a number
    new ObjectMetadata({ seed: "1" });
    // @ts-expect-error: not a schema
    decodeKey("nope", "x");
    // @ts-expect-error: a row key is text, not a number
    const wrong: number = encodeMtKey("a").row_key;
    // @ts-expect-error: a listing parameter's type
    await om.listObjects("b", { maxKeys: "10" });
    // @ts-expect-error: resolve's result has no `deadline`
    (await mt.resolve("a")).deadline;
    console.log(wrong);
}
