#!/usr/bin/env bash
# The npm package `rowkit` as a user gets it: `npm pack` of the committed wasm/ (no build step:
# the packages in it are committed), installed from the tarball into a fresh project, then
#   - types       types-check.mjs: a strict TypeScript user (types.mts) compiles, the public
#                 types hold no `any` and no wasm-bindgen internals;
#   - Node ESM    esm.mjs: `import "rowkit"`, the checks of checks.mjs (key codecs on the shared
#                 mount table vectors, offline clients writing and reading, error codes), the
#                 exports the types declare, one instance shared with `require`;
#   - Node CJS    cjs.cjs: `require("rowkit")`, the same;
#   - browser     esbuild --platform=browser bundles browser.mjs (the wasm as a file asset) and
#                 headless Chromium runs it (browser-run.mjs, with the e2e's WebDriver helpers).
# esbuild and TypeScript come from npm as package-lock.json pins them, installed once into
# npm-test/tools of cargo's target directory (kept between runs, like the npm cache beside it).
# Usage: wasm/tests/npm/run.sh   Needs node, npm, chromium and chromedriver (CHROMEDRIVER).
set -euo pipefail
command -v npm >/dev/null || { echo "npm: npm is missing (Debian: apt-get install npm)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
cd "$repo"
shared="${ROWKIT_SHARED:-$(cd .. && pwd)/shared}"
[ -f "$shared/vectors/mounttable.json" ] || { echo "npm: no vectors under $shared" >&2; exit 1; }
work="$(wasm/target-dir.sh)/npm-test"
cache="$work/cache"
npm_flags=(--no-audit --no-fund --loglevel=error --cache "$cache")

tools="$work/tools"
if ! cmp -s "$here/package-lock.json" "$tools/installed-lock.json"; then
  rm -rf "$tools"
  mkdir -p "$tools"
  cp "$here/package.json" "$here/package-lock.json" "$tools/"
  (cd "$tools" && npm ci "${npm_flags[@]}")
  cp "$here/package-lock.json" "$tools/installed-lock.json"
fi

run="$work/run"
rm -rf "$run"
mkdir -p "$run/app"
tarball=$(cd wasm && npm pack --pack-destination "$run" "${npm_flags[@]}" | tail -n 1)
echo "npm: packed $tarball ($(wc -c < "$run/$tarball") bytes)"
listing=$(tar tzf "$run/$tarball")
for f in package.json README.md LICENSE rowkit.d.ts node.mjs www/pkg/rowkit.js www/pkg/rowkit.d.ts \
    www/pkg/rowkit_bg.wasm pkg-node/rowkit.js pkg-node/package.json; do
  grep -qx "package/$f" <<<"$listing" || { echo "npm: $f is not in the tarball:" >&2; echo "$listing" >&2; exit 1; }
done
cmp -s <(tar xzOf "$run/$tarball" package/LICENSE) LICENSE || { echo "npm: the tarball's LICENSE is not the repository's" >&2; exit 1; }
wasm_files=$(grep -c '\.wasm$' <<<"$listing")
[ "$wasm_files" = 1 ] || { echo "npm: $wasm_files .wasm files in the tarball, want one" >&2; exit 1; }
[ ! -e wasm/LICENSE ] || { echo "npm: wasm/LICENSE left behind by npm pack (postpack)" >&2; exit 1; }
echo "npm: ok: the tarball holds the Node and browser entries, the types, README, LICENSE and one .wasm"

cd "$run/app"
echo '{"name": "rowkit-npm-user", "private": true}' > package.json
npm install "${npm_flags[@]}" "$run/$tarball"
cp "$here"/{checks.mjs,esm.mjs,cjs.cjs,types.mts,types-check.mjs,browser.mjs,browser.html} .
# The user's TypeScript: the pinned one of the tools (an ES module resolves packages only from
# node_modules folders).
ln -s "$tools/node_modules/typescript" node_modules/typescript

node types-check.mjs types.mts exports.json
node esm.mjs "$shared/vectors" exports.json
node cjs.cjs "$shared/vectors" exports.json

mkdir dist
"$tools/node_modules/.bin/esbuild" browser.mjs --bundle --platform=browser --format=esm \
  --loader:.wasm=file --outdir=dist --log-level=warning
if grep -q "readFileSync" dist/browser.js; then
  echo "npm: the browser bundle holds Node's loader (readFileSync): esbuild picked the node entry" >&2
  exit 1
fi
cp browser.html "$shared/vectors/mounttable.json" dist/
echo "npm: ok: esbuild bundled it for the browser: $(cd dist && ls | tr '\n' ' ')"
node "$repo/wasm/tests/npm/browser-run.mjs" dist exports.json
echo "npm: all passed"
