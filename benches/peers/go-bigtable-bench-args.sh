# Sourced (not run) by the scripts that drive ../shared/peers/go-bigtable-bench (bigtable.sh,
# grpc-server.sh), with their own positional parameters: `[ROUNDS] [-- extra flags]`.
# Sets root, peer, rounds and out (created), and leaves the extra flags in "$@".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[1]}")/../.." && pwd)"
peer="${PEER_DIR:-$root/../shared/peers/go-bigtable-bench}"
rounds="${1:-3}"
shift || true
[ "${1:-}" = "--" ] && shift
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"
