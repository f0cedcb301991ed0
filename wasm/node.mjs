// The package's entry for `import "rowkit"` in Node: the CommonJS build (wasm/pkg-node, which
// instantiates the wasm when loaded), so `import` and `require` in one process share one module
// instance, and with it one in-memory store. Browsers and bundlers get wasm/www/pkg instead.
export * from './pkg-node/rowkit.js';

/**
 * Browsers must fetch and instantiate the wasm before the first call (`await init()`); in Node
 * it is ready on import, so this resolves at once and the same code runs in both.
 */
export default async function init() {}
