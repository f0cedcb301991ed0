#!/usr/bin/env bash
# Prints cargo's target directory for this workspace (CARGO_TARGET_DIR, build.target-dir in a
# cargo config, or the default target/), as an absolute path, so the wasm scripts find what
# cargo built wherever that is.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo metadata --format-version 1 --no-deps \
  | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).target_directory));'
