#!/usr/bin/env bash
# Go's Bigtable client versus rowkit's adapter on the same workload, interleaved.
#
#   benches/peers/bigtable.sh [ROUNDS] [-- rowkit bench flags, e.g. --runtime multi]
#
# Each round runs ../shared/peers/go-bigtable-bench/run.sh and the rowkit bench
# (benches/benches/bigtable.rs), each against a fresh emulator of the same cbtemulator
# build; the order alternates between rounds. Then one table: per cell, the Go and rowkit
# req/s of each round, their medians and rowkit/Go. Raw outputs stay in $OUT (default: a
# new temporary directory, printed).
# shellcheck source=go-bigtable-bench-args.sh
. "$(dirname "$0")/go-bigtable-bench-args.sh"

# Build the rowkit bench once and run its binary directly, so cargo is not timed alongside
# ($ROWKIT_BENCH_BIN: an already built one).
bin="${ROWKIT_BENCH_BIN:-$(cd "$root" && cargo bench -p rowkit-benches --bench bigtable --no-run 2>&1 |
  sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)}"
[ -x "$bin" ] || { echo "could not build the rowkit bench" >&2; exit 1; }
case "$bin" in /*) ;; *) bin="$root/$bin" ;; esac

go_run() { "$peer/run.sh" >"$out/go-$1.txt"; }
rowkit_run() { "$bin" --bench "$@" >"$out/rowkit-$r.txt"; }
for r in $(seq "$rounds"); do
  echo "round $r/$rounds ($(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  if [ $((r % 2)) -eq 1 ]; then
    go_run "$r"; rowkit_run "$@"
  else
    rowkit_run "$@"; go_run "$r"
  fi
done
echo "# raw outputs: $out" >&2

python3 - "$out" "$rounds" <<'PY'
import re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
line = re.compile(r"^(\w+)\s+goroutines=(\d+)\s+requests=\d+\s+elapsed=\S+\s+req/s=\s*(\d+)")
cells, figs = [], {}
for who in ("go", "rowkit"):
    for r in range(1, rounds + 1):
        for l in open(f"{out}/{who}-{r}.txt"):
            m = line.match(l)
            if m:
                cell = (m[1], int(m[2]))
                if cell not in cells:
                    cells.append(cell)
                figs.setdefault((who, cell), []).append(float(m[3]))
print("| RPC | in flight | Go req/s (runs) | rowkit req/s (runs) | Go median | rowkit median | rowkit/Go |")
print("|---|---|---|---|---|---|---|")
for cell in cells:
    g, k = figs.get(("go", cell), []), figs.get(("rowkit", cell), [])
    if not g or not k:
        continue
    gm, km = statistics.median(g), statistics.median(k)
    runs = lambda xs: " / ".join(f"{x:.0f}" for x in xs)
    print(f"| {cell[0]} | {cell[1]} | {runs(g)} | {runs(k)} | {gm:.0f} | {km:.0f} | **{km / gm:.2f}** |")
PY
