#!/usr/bin/env bash
# Builds the npm package `rowkit` (wasm/package.json):
#   wasm/www/pkg/   wasm-bindgen --target web     (ES module; the browser tool loads it)
#   wasm/pkg-node/  wasm-bindgen --target nodejs  (CommonJS; `require("rowkit")` in Node)
# Both from one release build of rowkit-wasm, with the generated .d.ts. Needs the
# wasm32-unknown-unknown target and wasm-bindgen-cli 0.2.130 (spec/crates.md 4.1).
set -euo pipefail
cd "$(dirname "$0")/.."
want='wasm-bindgen 0.2.130'
have=$(wasm-bindgen --version 2>/dev/null || true)
[ "$have" = "$want" ] || { echo "build.sh: need $want (cargo install wasm-bindgen-cli --version 0.2.130), found '${have:-none}'" >&2; exit 1; }
cargo build -p rowkit-wasm --target wasm32-unknown-unknown --release
wasm="$(wasm/target-dir.sh)/wasm32-unknown-unknown/release/rowkit_wasm.wasm"
wasm-bindgen --target web --out-dir wasm/www/pkg --out-name rowkit "$wasm"
wasm-bindgen --target nodejs --out-dir wasm/pkg-node --out-name rowkit "$wasm"
# The nodejs output is CommonJS while the package is "type": "module".
echo '{"type": "commonjs"}' > wasm/pkg-node/package.json
echo "build.sh: $(wc -c < wasm/www/pkg/rowkit_bg.wasm) bytes wasm/www/pkg/rowkit_bg.wasm"
