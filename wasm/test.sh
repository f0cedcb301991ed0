#!/usr/bin/env bash
# The wasm test harness: starts what the wasm-bindgen-test suites talk to, bakes the URLs into
# the test binaries (compile-time env, wasm has no process environment), and runs the suites of
# rowkit-wasm and rowkit-fetch in Node and in headless Chromium.
#
#   - a read-only HTTP server over ../shared (wasm/tests/harness/serve-dir.mjs, with CORS), so
#     the codec tests read the shared vectors at run time in both Node and the browser;
#   - `rowkit serve` on a fresh embedded store set up with `rowkit <schema> setup` for every
#     schema, open (no token) as on loopback by default;
#   - `rowkit serve` on an empty memory store, where the clients' `setup()` creates the tables
#     through the gateway's table admin;
#   - wasm/tests/harness/stoppable-gateway.mjs: a `rowkit serve` the tests stop mid-session,
#     and a loopback port nothing listens on (the clients' `deadlineMs`);
#   - a second `rowkit serve --token` on its own fresh store (one process owns a redb file), so
#     the token path runs in the browser: every call carries `Authorization`, which a
#     cross-origin page may send only after a CORS preflight allows it;
#   - wasm/tests/harness/observe-proxy.mjs in front of each gateway, which shows what the fetch
#     driver and the browser do on the wire (CORS preflights, requests in flight together, rows
#     handed over before the body's end).
#
# Usage: wasm/test.sh [node|browser|e2e|all]   (default all). Needs node, wasm-bindgen-cli
# 0.2.130, and for the browser chromium + chromedriver (CHROMEDRIVER, default
# /usr/bin/chromedriver). `e2e` builds the package (wasm/build.sh --out, into a copy of wasm/www)
# and drives the browser tool (wasm/tests/e2e/e2e.mjs; screenshots in ROWKIT_E2E_OUT, default
# e2e/ of cargo's target directory; axe-core installed by npm into e2e-tools/ there);
# ROWKIT_E2E_TOOL=embedded drives the tool built into rowkit.
# Cargo's target directory is honoured wherever it is (CARGO_TARGET_DIR or cargo config).
# ROWKIT_SERVE_CMD, if set, is run as `CMD STORE_FILE WWW_DIR` instead of `rowkit serve` (another
# gateway build); it must print its 127.0.0.1:PORT and require the bearer token
# ROWKIT_GATEWAY_TOKEN when that is set.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-all}"
export ROWKIT_SHARED="${ROWKIT_SHARED:-$(cd .. && pwd)/shared}"
[ -f "$ROWKIT_SHARED/vectors/mounttable.json" ] || { echo "test.sh: no vectors under $ROWKIT_SHARED" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Waits for a line matching `127.0.0.1:PORT` in a log and prints `http://127.0.0.1:PORT`.
url_from() {
  local log=$1
  for _ in $(seq 1 300); do
    if addr=$(grep -oE '127\.0\.0\.1:[0-9]+' "$log" | head -n1) && [ -n "$addr" ]; then
      echo "http://$addr"
      return 0
    fi
    sleep 0.1
  done
  echo "test.sh: no address in $log:" >&2
  cat "$log" >&2
  return 1
}

node wasm/tests/harness/serve-dir.mjs "$ROWKIT_SHARED" >"$work/shared.log" 2>&1 &
pids+=($!)
ROWKIT_TEST_SHARED_URL=$(url_from "$work/shared.log")
export ROWKIT_TEST_SHARED_URL

target_dir=$(wasm/target-dir.sh)
cargo build -p rowkit --quiet
rowkit="$target_dir/debug/rowkit"

# Starts a gateway on a fresh embedded store NAME.redb set up for every schema, logging to
# NAME.log, requiring the bearer token $2 if given (the variable is unset for an open one).
start_gateway() {
  local name=$1 token=${2:-} store="embedded:$work/$1.redb"
  for schema in mt gold s3 graph; do
    "$rowkit" --store "$store" "$schema" setup >/dev/null
  done
  local serve=("$rowkit" --store "$store" serve --listen 127.0.0.1:0)
  if [ -n "${ROWKIT_SERVE_CMD:-}" ]; then
    serve=("$ROWKIT_SERVE_CMD" "$work/$name.redb" wasm/www)
  fi
  if [ -n "$token" ]; then
    ROWKIT_GATEWAY_TOKEN=$token "${serve[@]}" >"$work/$name.log" 2>&1 &
  else
    env -u ROWKIT_GATEWAY_TOKEN "${serve[@]}" >"$work/$name.log" 2>&1 &
  fi
  pids+=($!)
}

start_gateway gateway
ROWKIT_TEST_GATEWAY=$(url_from "$work/gateway.log")
# A fresh token per run: the tests know it only as the value baked in.
ROWKIT_TEST_TOKEN="wasm-test-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
start_gateway token-gateway "$ROWKIT_TEST_TOKEN"
ROWKIT_TEST_TOKEN_GATEWAY=$(url_from "$work/token-gateway.log")
node wasm/tests/harness/observe-proxy.mjs "$ROWKIT_TEST_GATEWAY" >"$work/proxy.log" 2>&1 &
pids+=($!)
ROWKIT_TEST_PROXY=$(url_from "$work/proxy.log")
node wasm/tests/harness/observe-proxy.mjs "$ROWKIT_TEST_TOKEN_GATEWAY" >"$work/token-proxy.log" 2>&1 &
pids+=($!)
ROWKIT_TEST_TOKEN_PROXY=$(url_from "$work/token-proxy.log")
env -u ROWKIT_GATEWAY_TOKEN "$rowkit" --store memory: serve --listen 127.0.0.1:0 >"$work/empty.log" 2>&1 &
pids+=($!)
ROWKIT_TEST_EMPTY_GATEWAY=$(url_from "$work/empty.log")
node wasm/tests/harness/stoppable-gateway.mjs "$rowkit" >"$work/stoppable.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do grep -q '^closed ' "$work/stoppable.log" && break; sleep 0.1; done
ROWKIT_TEST_STOPPABLE_GATEWAY=$(sed -n 's/^gateway //p' "$work/stoppable.log")
ROWKIT_TEST_STOPPABLE_CONTROL=$(sed -n 's/^control //p' "$work/stoppable.log")
ROWKIT_TEST_CLOSED_GATEWAY=$(sed -n 's/^closed //p' "$work/stoppable.log")
[ -n "$ROWKIT_TEST_CLOSED_GATEWAY" ] || { echo "test.sh: the stoppable gateway did not start:" >&2; cat "$work/stoppable.log" >&2; exit 1; }
export ROWKIT_TEST_GATEWAY ROWKIT_TEST_PROXY ROWKIT_TEST_TOKEN ROWKIT_TEST_TOKEN_GATEWAY ROWKIT_TEST_TOKEN_PROXY \
  ROWKIT_TEST_EMPTY_GATEWAY ROWKIT_TEST_STOPPABLE_GATEWAY ROWKIT_TEST_STOPPABLE_CONTROL ROWKIT_TEST_CLOSED_GATEWAY
echo "test.sh: vectors at $ROWKIT_TEST_SHARED_URL; gateway at $ROWKIT_TEST_GATEWAY (proxy $ROWKIT_TEST_PROXY);" \
  "token gateway at $ROWKIT_TEST_TOKEN_GATEWAY (proxy $ROWKIT_TEST_TOKEN_PROXY)"

export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-120}"
suites=(-p rowkit-wasm -p rowkit-fetch)
if [ "$mode" = node ] || [ "$mode" = all ]; then
  echo "=== wasm tests in Node"
  cargo test "${suites[@]}" --target wasm32-unknown-unknown
fi
if [ "$mode" = browser ] || [ "$mode" = all ]; then
  echo "=== wasm tests in headless Chromium"
  CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}" WASM_BINDGEN_USE_BROWSER=1 \
    cargo test "${suites[@]}" --target wasm32-unknown-unknown
fi
if [ "$mode" = e2e ] || [ "$mode" = all ]; then
  echo "=== browser tool end to end (headless Chromium via chromedriver)"
  # ROWKIT_E2E_TOOL=embedded drives the tool built into rowkit (the committed package, as a
  # fresh clone serves it); otherwise the page is served from a copy of wasm/www with a package
  # built now (the committed one stays as it is). The page drives the same machines in either
  # build; the unoptimised one builds on what the suites above compiled.
  if [ "${ROWKIT_E2E_TOOL:-}" = embedded ]; then
    www=embedded
  else
    www="$work/www"
    cp -r wasm/www "$www"
    rm -rf "$www/pkg"
    ROWKIT_WASM_PROFILE="${ROWKIT_WASM_PROFILE:-dev}" wasm/build.sh --out "$www/pkg"
  fi
  # axe-core, pinned, from npm into cargo's target directory (kept between runs): the e2e runs it
  # in every state of every view and fails on a serious or critical violation.
  axe_version=4.10.3
  tools="$target_dir/e2e-tools"
  if [ "$(node -p "try { require('$tools/node_modules/axe-core/package.json').version } catch { '' }")" != "$axe_version" ]; then
    npm install --silent --no-audit --no-fund --no-save --prefix "$tools" "axe-core@$axe_version" >/dev/null
  fi
  export ROWKIT_AXE_JS="$tools/node_modules/axe-core/axe.min.js"
  CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}" \
    node wasm/tests/e2e/e2e.mjs "$rowkit" "$www" "${ROWKIT_E2E_OUT:-$target_dir/e2e}"
fi
echo "test.sh: $mode done in ${SECONDS}s"
