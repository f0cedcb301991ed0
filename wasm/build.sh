#!/usr/bin/env bash
# Builds the npm package `rowkit` (wasm/package.json):
#   wasm/www/pkg/   wasm-bindgen --target web     (ES module; the browser tool loads it)
#   wasm/pkg-node/  wasm-bindgen --target nodejs  (CommonJS; `require("rowkit")` in Node)
# Both from one release build of rowkit-wasm (see ROWKIT_WASM_PROFILE below), with the
# generated .d.ts. Needs the wasm32-unknown-unknown target and wasm-bindgen-cli 0.2.130
# (spec/crates.md 4.1).
set -euo pipefail
cd "$(dirname "$0")/.."
want='wasm-bindgen 0.2.130'
have=$(wasm-bindgen --version 2>/dev/null || true)
[ "$have" = "$want" ] || { echo "build.sh: need $want (cargo install wasm-bindgen-cli --version 0.2.130), found '${have:-none}'" >&2; exit 1; }
# ROWKIT_WASM_PROFILE=dev builds unoptimised (the test harness: it reuses the dependencies its
# wasm test build compiled, minutes less on 2 cores); the package itself is built in release.
case "${ROWKIT_WASM_PROFILE:-release}" in
  release) cargo build -p rowkit-wasm --target wasm32-unknown-unknown --release; dir=release ;;
  dev) cargo build -p rowkit-wasm --target wasm32-unknown-unknown; dir=debug ;;
  *) echo "build.sh: ROWKIT_WASM_PROFILE is release or dev" >&2; exit 2 ;;
esac
wasm="$(wasm/target-dir.sh)/wasm32-unknown-unknown/$dir/rowkit_wasm.wasm"
wasm-bindgen --target web --out-dir wasm/www/pkg --out-name rowkit "$wasm"
wasm-bindgen --target nodejs --out-dir wasm/pkg-node --out-name rowkit "$wasm"
# The nodejs output is CommonJS while the package is "type": "module".
echo '{"type": "commonjs"}' > wasm/pkg-node/package.json
echo "build.sh: $(wc -c < wasm/www/pkg/rowkit_bg.wasm) bytes wasm/www/pkg/rowkit_bg.wasm"
