// Codec speed of the wasm package in Node: `decodeKey('auto', key)` over one key per schema
// and `encodeGraphKey`, the same inputs as the native criterion bench `benches/benches/explain.rs`.
// Includes the JS boundary (bytes in, the document out through JSON.parse). Run after
// wasm/build.sh:   node wasm/bench/keys.mjs
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const rowkit = require('../pkg-node/rowkit.js');

const enc = new TextEncoder();
const keys = [
  enc.encode('88e481b8/foo'),
  enc.encode('03:ts:t:2147483646:,0=1,1=3,3=0,'),
  new Uint8Array([0x62, 0x00, 0x7f, 0x4d, 0x6b]),
  enc.encode('test:SPO:2821fefc-a86e-597b-b187-58805cad8813:91b6c9d2-69e3-5cec-a465-d200f4872671:e5364b94-fe66-5b01-a526-5fdf1e028e80'),
];

function measure(name, f) {
  for (let i = 0; i < 20000; i++) f(); // warm up (JIT, wasm tier-up)
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const n = 50000;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) f();
    const ns = Number(process.hrtime.bigint() - t0) / n;
    best = Math.min(best, ns);
  }
  console.log(`${name}: ${(best / 1000).toFixed(2)} µs/iter (best of 5 x 50000)`);
}

measure('decodeKey auto x4 (one key per schema)', () => {
  for (const k of keys) rowkit.decodeKey('auto', k);
});
measure('encodeGraphKey', () => rowkit.encodeGraphKey('test', '/u<joe>\t"parent_of"@[]\t/u<mary>'));
