// `import "rowkit"` in Node (the package installed from its tarball): the checks, the export
// names the types declare, and one instance shared with `require("rowkit")`.
// Usage: node esm.mjs VECTORS_DIR EXPORTS_JSON
import fs from 'node:fs';
import { createRequire } from 'node:module';
import init, * as rowkit from 'rowkit';
import { exportedNames, run } from './checks.mjs';

const [vectorsDir, exportsFile] = process.argv.slice(2);
await init(); // nothing to load in Node; the same code as in a browser must run
const vectors = JSON.parse(fs.readFileSync(`${vectorsDir}/mounttable.json`, 'utf8'));
for (const line of await run(rowkit, vectors)) console.log(`esm: ok: ${line}`);

const declared = JSON.parse(fs.readFileSync(exportsFile, 'utf8'));
const names = exportedNames(rowkit);
if (JSON.stringify(names) !== JSON.stringify(declared)) {
  throw new Error(`import "rowkit" exports ${names}, rowkit.d.ts declares ${declared}`);
}
console.log(`esm: ok: exports the ${names.length} values rowkit.d.ts declares`);

// What `import` wrote, `require` reads: one wasm instance (one memory store) per process.
const cjs = createRequire(import.meta.url)('rowkit');
await new rowkit.MountTable().mount('npm/shared', '/127.0.0.1:8102', 60);
const seen = await new cjs.MountTable().resolve('npm/shared');
if (seen.servers[0]?.server !== '/127.0.0.1:8102') {
  throw new Error(`require("rowkit") does not see what import wrote: ${JSON.stringify(seen)}`);
}
console.log('esm: ok: import and require share one instance');
