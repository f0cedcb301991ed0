#!/usr/bin/env bash
# Go peer codecs (../shared/peers/go-codecs) against rowkit's `peers` criterion bench,
# interleaved: N rounds (default 3), each running both, Go first in odd rounds and rowkit
# first in even ones so that drift in the machine's load falls on both sides. Prints, per
# case, the median over the rounds of Go's ns/op and of rowkit's criterion estimate, the
# ratio Go/rowkit, and the geometric mean of the ratios.
#
#   benches/peers/codecs.sh [ROUNDS]          # from anywhere; raw outputs kept in $OUT
#
# Environment: OUT (default: a new temp dir), CARGO_TARGET_DIR (as for any cargo command),
# CRITERION_ARGS (extra arguments after `--`, e.g. "--measurement-time 3"), BASELINE_BIN (a
# peers bench binary built from another commit, e.g. a copy of target/release/deps/peers-*:
# run in each round too, after rowkit, and shown as two more columns), ROWKIT_BIN (run this
# prebuilt peers bench binary instead of `cargo bench`, e.g. while the tree is being rebuilt).
set -euo pipefail

rounds="${1:-3}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
go_dir="$root/../shared/peers/go-codecs"
out="${OUT:-$(mktemp -d /tmp/rowkit-peers.XXXXXX)}"
mkdir -p "$out"
[ -d "$go_dir" ] || { echo "missing $go_dir (the shared directory sits beside the project)" >&2; exit 1; }

run_baseline() {
  # shellcheck disable=SC2086
  "$BASELINE_BIN" --bench ${CRITERION_ARGS:-} > "$out/baseline-$1.txt" 2> "$out/baseline-$1.err"
}
run_go() {
  (cd "$go_dir" && GOFLAGS=-mod=mod go test -bench . -benchmem -count 1) > "$out/go-$1.txt"
}
run_rowkit() {
  # shellcheck disable=SC2086 # CRITERION_ARGS is a list of words
  if [ -n "${ROWKIT_BIN:-}" ]; then
    "$ROWKIT_BIN" --bench ${CRITERION_ARGS:-} > "$out/rowkit-$1.txt" 2> "$out/rowkit-$1.err"
  else
    (cd "$root" && cargo bench -q -p rowkit-benches --bench peers -- ${CRITERION_ARGS:-}) \
      > "$out/rowkit-$1.txt" 2> "$out/rowkit-$1.err"
  fi
}

if [ -z "${ROWKIT_BIN:-}" ]; then
  echo "building the peers bench ..." >&2
  (cd "$root" && cargo bench -q -p rowkit-benches --bench peers --no-run) 2> "$out/build.err" \
    || { cat "$out/build.err" >&2; exit 1; }
fi
(cd "$go_dir" && go test -c -o /dev/null .) || exit 1

for r in $(seq 1 "$rounds"); do
  echo "round $r/$rounds ($(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  if [ $((r % 2)) -eq 1 ]; then run_go "$r"; run_rowkit "$r"; else run_rowkit "$r"; run_go "$r"; fi
  if [ -n "${BASELINE_BIN:-}" ]; then run_baseline "$r"; fi
done

python3 - "$out" "$rounds" "${BASELINE_BIN:+1}" <<'PY'
import math, re, statistics, sys

out, rounds, with_base = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
units = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}

def go_round(path):
    res = {}
    for line in open(path):
        m = re.match(r"^Benchmark(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op", line)
        if m:
            res[m.group(1)] = float(m.group(3))
    return res

def rowkit_round(path):
    res, name = {}, None
    for line in open(path):
        m = re.match(r"^(\S+)?\s+time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
        if m:
            res[m.group(1) or name] = float(m.group(2)) * units[m.group(3)]
            name = None
            continue
        m = re.match(r"^(\S+)\s*$", line)
        if m:
            name = m.group(1)
    return res

go = [go_round(f"{out}/go-{r}.txt") for r in range(1, rounds + 1)]
rk = [rowkit_round(f"{out}/rowkit-{r}.txt") for r in range(1, rounds + 1)]
base = [rowkit_round(f"{out}/baseline-{r}.txt") for r in range(1, rounds + 1)] if with_base else []
cases = list(go[0])
missing = [c for c in cases if any(c not in x for x in rk + go + base)]
if missing:
    sys.exit(f"cases missing from some round: {missing} (raw outputs in {out})")
extra = " baseline ns | Go/baseline |" if with_base else ""
print(f"| case | Go ns/op | rowkit ns | Go/rowkit |{extra}")
print("|---|---:|---:|---:|" + ("---:|---:|" if with_base else ""))
logs, base_logs, worst = [], [], None
for c in cases:
    g = statistics.median(x[c] for x in go)
    k = statistics.median(x[c] for x in rk)
    ratio = g / k
    logs.append(math.log(ratio))
    worst = min(worst or (ratio, c), (ratio, c))
    row = f"| `{c}` | {g:,.1f} | {k:,.1f} | {ratio:.2f} |"
    if with_base:
        b = statistics.median(x[c] for x in base)
        base_logs.append(math.log(g / b))
        row += f" {b:,.1f} | {g / b:.2f} |"
    print(row)
gm = lambda xs: math.exp(sum(xs) / len(xs))
print(f"\ngeometric mean of Go/rowkit over {len(cases)} cases: {gm(logs):.2f}"
      f"; lowest: {worst[1]} {worst[0]:.2f} (medians of {rounds} interleaved rounds; raw in {out})")
if with_base:
    print(f"geometric mean of Go/baseline: {gm(base_logs):.2f}")
PY
