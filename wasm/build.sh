#!/usr/bin/env bash
# Builds the npm package `rowkit` (wasm/package.json) and the browser tool's wasm package, both
# committed (a fresh clone, `rowkit serve` and `npm pack` need no build step):
#   wasm/www/pkg/   wasm-bindgen --target web     (ES module: browsers and bundlers; the browser
#                   tool loads it, and it is built into the rowkit binary)
#   wasm/pkg-node/  wasm-bindgen --target nodejs  (CommonJS glue only: Node's `require`, and
#                   `import` through wasm/node.mjs; it loads wasm/www/pkg/rowkit_bg.wasm, which
#                   is the same bytes as its own, so the package holds one copy of the wasm)
# Both from one build of rowkit-wasm in the `wasm-release` profile (Cargo.toml: small over
# fast), reproducible: paths are remapped, so the same sources and toolchain give the same bytes.
# Then wasm/www/pkg/SOURCES records the sha256 of the sources it was built from (the
# `package_fingerprint` example of rowkit-wasm), the rustc that built it and the sha256 of each
# file built; `cargo test -p rowkit-wasm --test package` fails when the sources changed since or
# a built file is not the one recorded: run this script again and commit wasm/www/pkg and
# wasm/pkg-node.
#
#   wasm/build.sh                 the committed package (as above)
#   wasm/build.sh --out DIR       the web package only, into DIR (nothing committed changes);
#                                 ROWKIT_WASM_PROFILE=dev builds it unoptimised (the test harness:
#                                 it reuses the dependencies its wasm test build compiled)
#
# Needs the wasm32-unknown-unknown target and wasm-bindgen-cli 0.2.130 (spec/crates.md 4.1).
set -euo pipefail
cd "$(dirname "$0")/.."
out=
case "${1:-}" in
  --out) out=${2:?build.sh: --out needs a directory} ;;
  '') ;;
  *) echo "build.sh: usage: wasm/build.sh [--out DIR]" >&2; exit 2 ;;
esac
want='wasm-bindgen 0.2.130'
have=$(wasm-bindgen --version 2>/dev/null || true)
[ "$have" = "$want" ] || { echo "build.sh: need $want (cargo install wasm-bindgen-cli --version 0.2.130), found '${have:-none}'" >&2; exit 1; }
profile=${ROWKIT_WASM_PROFILE:-release}
case "$profile" in
  release) dir=wasm-release ;;
  dev) dir=debug ;;
  *) echo "build.sh: ROWKIT_WASM_PROFILE is release or dev" >&2; exit 2 ;;
esac
[ -n "$out" ] || [ "$profile" = release ] \
  || { echo "build.sh: only a release build goes to wasm/www/pkg; give --out DIR for a dev build" >&2; exit 2; }
if [ "$profile" = release ]; then
  # No build machine's paths in the package (panic locations name source files).
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="--remap-path-prefix=$PWD=/rowkit --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"
  cargo build -p rowkit-wasm --target wasm32-unknown-unknown --profile wasm-release
else
  cargo build -p rowkit-wasm --target wasm32-unknown-unknown
fi
wasm="$(wasm/target-dir.sh)/wasm32-unknown-unknown/$dir/rowkit_wasm.wasm"
web=${out:-wasm/www/pkg}
mkdir -p "$web"
wasm-bindgen --target web --out-dir "$web" --out-name rowkit "$wasm"
echo "build.sh: $(wc -c < "$web/rowkit_bg.wasm") bytes $web/rowkit_bg.wasm"
[ -z "$out" ] || exit 0
node_out=$(mktemp -d)
trap 'rm -rf "$node_out"' EXIT
wasm-bindgen --target nodejs --out-dir "$node_out" --out-name rowkit "$wasm"
cmp -s "$node_out/rowkit_bg.wasm" wasm/www/pkg/rowkit_bg.wasm \
  || { echo "build.sh: wasm-bindgen wrote different .wasm for --target nodejs and web: the node glue cannot share the web package's" >&2; exit 1; }
from='const wasmPath = `${__dirname}/rowkit_bg.wasm`;'
to='const wasmPath = `${__dirname}/../www/pkg/rowkit_bg.wasm`;'
[ "$(grep -cxF "$from" "$node_out/rowkit.js")" = 1 ] \
  || { echo "build.sh: the nodejs glue no longer loads its .wasm with the line: $from" >&2; exit 1; }
rm -rf wasm/pkg-node
mkdir -p wasm/pkg-node
awk -v from="$from" -v to="$to" '$0 == from { print to; next } { print }' "$node_out/rowkit.js" > wasm/pkg-node/rowkit.js
# The nodejs output is CommonJS while the package is "type": "module".
echo '{"type": "commonjs"}' > wasm/pkg-node/package.json
cargo run --quiet -p rowkit-wasm --example package_fingerprint
rustc --version >> wasm/www/pkg/SOURCES
(cd wasm && sha256sum www/pkg/rowkit.js www/pkg/rowkit.d.ts www/pkg/rowkit_bg.wasm pkg-node/rowkit.js) \
  | sed 's/^/built /' >> wasm/www/pkg/SOURCES
echo "build.sh: wasm/www/pkg/SOURCES $(grep '^sha256' wasm/www/pkg/SOURCES)"
