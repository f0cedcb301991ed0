// `require("rowkit")` in Node (the package installed from its tarball): the checks and the
// export names the types declare. Usage: node cjs.cjs VECTORS_DIR EXPORTS_JSON
'use strict';
const fs = require('node:fs');
const rowkit = require('rowkit');

const [vectorsDir, exportsFile] = process.argv.slice(2);
import('./checks.mjs')
  .then(async ({ exportedNames, run }) => {
    const vectors = JSON.parse(fs.readFileSync(`${vectorsDir}/mounttable.json`, 'utf8'));
    for (const line of await run(rowkit, vectors)) console.log(`cjs: ok: ${line}`);
    const declared = JSON.parse(fs.readFileSync(exportsFile, 'utf8'));
    const names = exportedNames(rowkit);
    if (JSON.stringify(names) !== JSON.stringify(declared)) {
      throw new Error(`require("rowkit") exports ${names}, rowkit.d.ts declares ${declared}`);
    }
    console.log(`cjs: ok: exports the ${names.length} values rowkit.d.ts declares`);
  })
  .catch((e) => {
    console.error(`cjs: ${e.stack || e}`);
    process.exit(1);
  });
