#!/usr/bin/env bash
# Google's Go Bigtable client (../shared/peers/go-bigtable-bench) against cbtemulator and
# against `rowkit serve --grpc` over memory: and embedded:, in one run, round-robin.
#
#   benches/peers/grpc-server.sh [ROUNDS] [-- go-bigtable-bench flags, e.g. -duration 5s]
#
# Each round runs the Go bench once against each server, each a fresh process on a free
# loopback port (cbtemulator through the peer's own run.sh; rowkit's release binary started
# here, the embedded store on a fresh redb file); the order rotates between rounds. Then one
# table: per figure, the req/s of each round and their median per server. Raw outputs stay in
# $OUT (default: a new temporary directory, printed).
# shellcheck source=go-bigtable-bench-args.sh
. "$(dirname "$0")/go-bigtable-bench-args.sh"

go_bin="$out/go-bigtable-bench"
(cd "$peer" && env -u GOFLAGS GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off \
  go build -o "$go_bin" .)
rowkit="${ROWKIT_BIN:-}"
if [ -z "$rowkit" ]; then
  (cd "$root" && cargo build --release -p rowkit >&2)
  rowkit="${CARGO_TARGET_DIR:-$root/target}/release/rowkit"
fi
[ -x "$rowkit" ] || { echo "no rowkit binary at $rowkit" >&2; exit 1; }

server_pid=
stop_server() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  server_pid=
}
trap stop_server EXIT

# rowkit serve --grpc on STORE; the gRPC address is the second line it prints.
rowkit_run() {
  local name="$1" store="$2"
  local lines="$out/serve-$name-$r.out"
  "$rowkit" --store "$store" serve --listen 127.0.0.1:0 --grpc 127.0.0.1:0 >"$lines" 2>/dev/null &
  server_pid=$!
  for _ in $(seq 200); do [ -f "$lines" ] && [ "$(wc -l <"$lines")" -ge 2 ] && break; sleep 0.05; done
  local host
  host="$(sed -n 2p "$lines")"
  BIGTABLE_EMULATOR_HOST="$host" "$go_bin" "$@" >"$out/$name-$r.txt"
  stop_server
}

run_one() {
  case "$1" in
    cbtemulator) BIN="$go_bin" "$peer/run.sh" "${args[@]}" >"$out/cbtemulator-$r.txt" ;;
    rowkit-memory) rowkit_run rowkit-memory memory: "${args[@]}" ;;
    rowkit-store)
      rm -f "$out/bench-$r.redb"
      rowkit_run rowkit-store "embedded:$out/bench-$r.redb" "${args[@]}" ;;
  esac
}

args=("$@")
servers=(cbtemulator rowkit-memory rowkit-store)
for r in $(seq "$rounds"); do
  echo "round $r/$rounds ($(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  for i in 0 1 2; do
    run_one "${servers[$(((i + r - 1) % 3))]}"
  done
done

echo "raw outputs: $out" >&2
python3 - "$out" "$rounds" <<'PY'
import re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
servers = ["cbtemulator", "rowkit-memory", "rowkit-store"]
figs = {}
for s in servers:
    for r in range(1, rounds + 1):
        for line in open(f"{out}/{s}-{r}.txt"):
            m = re.match(r"(\w+)\s+goroutines=(\d+).*req/s=\s*(\d+)\s+p50=(\S+)\s+p99=(\S+)", line)
            if m:
                figs.setdefault((m[1], int(m[2])), {}).setdefault(s, []).append((int(m[3]), m[4], m[5]))
print("| Figure | in flight | " + " | ".join(f"{s} req/s (median; rounds)" for s in servers) + " |")
print("|---|---|" + "---|" * len(servers))
for (op, g), by in figs.items():
    cells = []
    for s in servers:
        v = by.get(s, [])
        rates = [x[0] for x in v]
        cells.append(f"**{statistics.median(rates):.0f}** ({', '.join(map(str, rates))})" if rates else "-")
    print(f"| {op} | {g} | " + " | ".join(cells) + " |")
PY
