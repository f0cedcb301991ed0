#!/usr/bin/env bash
# Builds the npm package `rowkit` (wasm/package.json) and the browser tool's wasm package:
#   wasm/www/pkg/   wasm-bindgen --target web     (ES module; the browser tool loads it; committed,
#                   and built into the rowkit binary, so `rowkit serve` needs no build step)
#   wasm/pkg-node/  wasm-bindgen --target nodejs  (CommonJS; `require("rowkit")` in Node)
# Both from one build of rowkit-wasm in the `wasm-release` profile (Cargo.toml: small over
# fast), reproducible: paths are remapped, so the same sources and toolchain give the same bytes.
# Then wasm/www/pkg/SOURCES records the sha256 of the sources it was built from (the
# `package_fingerprint` example of rowkit-wasm) and the rustc that built it; `cargo test -p
# rowkit-wasm --test package` fails when the sources changed since: run this script again and
# commit wasm/www/pkg.
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
wasm-bindgen --target nodejs --out-dir wasm/pkg-node --out-name rowkit "$wasm"
# The nodejs output is CommonJS while the package is "type": "module".
echo '{"type": "commonjs"}' > wasm/pkg-node/package.json
cargo run --quiet -p rowkit-wasm --example package_fingerprint
rustc --version >> wasm/www/pkg/SOURCES
echo "build.sh: wasm/www/pkg/SOURCES $(grep '^sha256' wasm/www/pkg/SOURCES)"
