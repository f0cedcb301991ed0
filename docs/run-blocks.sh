#!/usr/bin/env bash
# Runs every ```sh (and ```js) block of README.md and docs/*.md as a newcomer would paste them:
# each file's blocks top to bottom in one shell, in a fresh empty directory of its own, with the
# `rowkit` found on PATH. Stops at the first failing block and names it FILE:LINE.
#
# A block is skipped when the line right before its fence is `<!-- not run: REASON -->`.
# ```js blocks run too, each as an ES module in Node with `import ... from "rowkit"` resolving to
# the npm package of this checkout (wasm/, its committed build). A ```rust block right after
# `<!-- same as PATH -->` must equal that file of the repository (the compiled example it
# mirrors).
# Servers a block starts must be stopped by it: whatever of a file's processes is still alive
# when its blocks end is killed and fails the run, so the docs cannot leave them behind. A file
# whose blocks run longer than ROWKIT_BLOCKS_TIMEOUT seconds (default 900) fails.
#
# Usage: docs/run-blocks.sh [FILE.md...]   (default: README.md docs/*.md)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
command -v rowkit >/dev/null || { echo "run-blocks: no rowkit on PATH" >&2; exit 2; }
command -v pgrep >/dev/null || { echo "run-blocks: pgrep is missing (Debian: procps)" >&2; exit 2; }
echo "run-blocks: $(command -v rowkit) ($(rowkit --version))"
if [ $# -eq 0 ]; then
  set -- "$repo/README.md" "$repo"/docs/*.md
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/rowkit-blocks.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Node looks for packages in the parent folders too: every file's directory sees this one.
mkdir "$work/node_modules"
ln -s "$repo/wasm" "$work/node_modules/rowkit"

# One script per file: each block preceded by a marker line that records where it starts,
# and followed by a check of its last command's status (set -e ignores a failing `a && b`).
extract() { # FILE NAME STATE -> script on stdout; skipped blocks and mismatches on stderr
  awk -v name="$2" -v state="$3" -v repo="$repo" '
    function flush_rust(   line, want, f) {
      f = repo "/" same
      want = ""
      while ((getline line < f) > 0) want = want line "\n"
      close(f)
      if (rust != want) { printf "run-blocks: %s:%d: the rust block differs from %s\n", name, start, same > "/dev/stderr"; bad = 1 }
    }
    /^```/ && !inblock {
      inblock = 1; start = NR; kind = substr($0, 4); rust = ""
      run = ((kind == "sh" || kind == "js") && prev !~ /^<!-- not run: .+ -->$/)
      if ((kind == "sh" || kind == "js") && !run) { printf "run-blocks: %s:%d: not run (%s)\n", name, NR, substr(prev, 15, length(prev) - 18) > "/dev/stderr" }
      same = (kind == "rust" && match(prev, /^<!-- same as [^ ]+ -->$/)) ? substr(prev, 14, length(prev) - 17) : ""
      if (run) printf "printf %%s %s:%d > %s\n", name, NR, state
      if (run && kind == "js") printf "cat > block-%d.mjs <<'\''ROWKIT_JS_BLOCK'\''\n", NR
      js = NR
      prev = $0; next
    }
    /^```$/ && inblock {
      inblock = 0
      if (run && kind == "js") printf "ROWKIT_JS_BLOCK\nnode block-%d.mjs\n", js
      if (run) print "__status=$?; [ $__status = 0 ] || exit $__status"
      if (same != "") flush_rust()
      prev = $0; next
    }
    inblock && run { print }
    inblock && same != "" { rust = rust $0 "\n" }
    { prev = $0 }
    END { if (inblock) { printf "run-blocks: %s:%d: block never closed\n", name, start > "/dev/stderr"; bad = 1 }
          exit bad }
  ' "$1"
}

failed=0
for file in "$@"; do
  name=${file#"$repo/"}
  dir="$work/$(echo "$name" | tr '/.' '__')"
  mkdir -p "$dir"
  state="$dir.where"
  if ! extract "$file" "$name" "$state" > "$dir.sh"; then
    failed=1; break
  fi
  if ! grep -q '^printf %s ' "$dir.sh"; then
    continue
  fi
  echo "run-blocks: $name"
  # Its own process group (set -m), so every process its blocks started can be found after.
  set -m
  (cd "$dir" && exec env -u ROWKIT_STORE -u BIGTABLE_EMULATOR_HOST -u ROWKIT_GATEWAY_TOKEN \
     timeout --foreground "${ROWKIT_BLOCKS_TIMEOUT:-900}" bash -eo pipefail "$dir.sh") &
  group=$!
  set +m
  status=0
  wait "$group" || status=$?
  if [ "$status" != 0 ]; then
    echo "run-blocks: FAILED: the block at $(cat "$state") (exit $status)" >&2
    failed=1
  fi
  if pgrep -g "$group" >/dev/null; then
    echo "run-blocks: FAILED: $name left processes running (a block must stop what it starts):" >&2
    pgrep -a -g "$group" >&2 || true
    kill -- -"$group" 2>/dev/null || true
    failed=1
  fi
  [ "$failed" = 0 ] || break
done
[ "$failed" = 0 ] || exit 1
echo "run-blocks: every block passed"
