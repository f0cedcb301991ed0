#!/usr/bin/env bash
# Google's official Bigtable clients as the judge of `rowkit serve --grpc`, over `memory:` and over
# a fresh `embedded:` file:
#   go-emulator  Google's Go integration tests (cloud.google.com/go/bigtable from the Debian package
#                golang-google-cloud-dev), emulator mode: every TestIntegration_ test, with the
#                package's own client options; only export_test.go is swapped (go test -overlay) so
#                that its EmulatedEnv dials rowkit instead of starting its in-process bttest.
#   go-prod      The same tests with -it.use-prod (all but those needing production, listed below):
#                TLS with a test CA and Application Default Credentials from a service-account key
#                whose token endpoint is local, so the bearer rowkit checks (--token) comes through
#                Google's own OAuth flow.
#   go-bigrows   A 2 MiB cell and a row of 1 500 cells of 1 KiB through the Go client and `cbt`.
#   python       google-cloud-bigtable (classic and data clients), python/test_clients.py.
#   node         @google-cloud/bigtable, node/test_client.js.
# Installs what it needs (apt, a venv and an npm folder under target/clients, kept between runs),
# starts and stops its own servers, prints a per-client summary and exits 1 on any failure.
#
# Usage: run.sh ROWKIT_BINARY
#   ROWKIT_CLIENTS_STORES  stores to run on (default "memory embedded")
#   ROWKIT_CLIENTS_ONLY    clients to run (default "go-emulator go-prod go-bigrows python node")
# The test programs pass against Google's emulator (cbtemulator) too, which is how they were
# checked: ROWKIT_GRPC_ADDR=EMULATOR target/clients/go/bigtable.test -test.run TestIntegration_
# (from the package's source folder), BIGTABLE_EMULATOR_HOST=EMULATOR for the others.
set -uo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 ROWKIT_BINARY" >&2
  exit 2
fi
rowkit=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
work="$repo/target/clients"
run="$work/run"
stores=${ROWKIT_CLIENTS_STORES:-memory embedded}
only=${ROWKIT_CLIENTS_ONLY:-go-emulator go-prod go-bigrows python node}
gosrc=/usr/share/gocode/src/cloud.google.com/go/bigtable
project=p
instance=i
cluster=${ROWKIT_CLIENTS_CLUSTER:-c}

# Tests left out of prod mode, with why: each needs production itself, not a Bigtable.
declare -A prod_excluded=(
  [TestIntegration_TableIam]="IAM policies: production's IAM service"
  [TestIntegration_AdminSnapshot]="table snapshots: a production-only feature"
  [TestIntegration_AdminCreateInstance]="creates an instance: production quota (and -it.instance-to-create)"
  [TestIntegration_AdminUpdateInstanceAndSyncClusters]="creates and resizes instances and clusters: production quota"
  [TestIntegration_InstanceUpdate]="UpdateCluster (serve nodes): instance update, refused as for a caller without that permission"
  [TestIntegration_InstanceAdminClient_AppProfile]="creates, updates and deletes app profiles: instance update, refused as for a caller without that permission"
)

rm -rf "$run"
mkdir -p "$run"
summary="$run/summary"
: >"$summary"
failures=0

# ---- processes: every background process is ours, stopped on exit ------------------------------
server_pids=()
helper_pids=()
stop_servers() {
  for pid in "${server_pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${server_pids[@]}"; do wait "$pid" 2>/dev/null; done
  server_pids=()
}
stop_all() {
  stop_servers
  for pid in "${helper_pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${helper_pids[@]}"; do wait "$pid" 2>/dev/null; done
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# record CLIENT STORE STATUS DETAIL: one summary line. Each FAIL line is one failure; a client's
# closing total says "ok" or "fail" and is not counted again.
record() {
  printf '%-12s %-9s %-4s %s\n' "$1" "$2" "$3" "$4" >>"$summary"
  printf 'clients: %-12s %-9s %-4s %s\n' "$1" "$2" "$3" "$4"
  [ "$3" != FAIL ] || failures=$((failures + 1))
}

wants() { [[ " $only " == *" $1 "* ]]; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# ---- install (cached in target/clients) --------------------------------------------------------
install_all() {
  local missing=()
  if wants go-emulator || wants go-prod || wants go-bigrows; then
    command -v go >/dev/null || missing+=(golang-go)
    [ -d "$gosrc" ] || missing+=(golang-google-cloud-dev)
  fi
  command -v openssl >/dev/null || missing+=(openssl)
  if wants python; then python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv); fi
  if wants node; then command -v npm >/dev/null || missing+=(npm); fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "clients: apt-get install ${missing[*]}"
    as_root apt-get update -qq && as_root apt-get install -y -qq "${missing[@]}" >/dev/null || return 1
  fi

  if wants python; then
    local stamp="$work/py/requirements.txt"
    if ! cmp -s "$here/python/requirements.txt" "$stamp"; then
      rm -rf "$work/py"
      python3 -m venv "$work/py" &&
        "$work/py/bin/pip" install -q --disable-pip-version-check -r "$here/python/requirements.txt" &&
        cp "$here/python/requirements.txt" "$stamp" || return 1
    fi
  fi
  if wants node; then
    mkdir -p "$work/node"
    if ! cmp -s "$here/node/package-lock.json" "$work/node/installed-lock.json"; then
      cp "$here/node/package.json" "$here/node/package-lock.json" "$work/node/" &&
        (cd "$work/node" && npm ci --no-audit --no-fund --loglevel=error) &&
        cp "$here/node/package-lock.json" "$work/node/installed-lock.json" || return 1
    fi
  fi
  if wants go-emulator || wants go-prod || wants go-bigrows; then
    build_go || return 1
  fi
}

# Google's test package, built offline from the Debian sources with export_test.go swapped for a
# copy whose NewEmulatedEnv dials ROWKIT_GRPC_ADDR (its client options untouched) and whose
# Close leaves the server (rowkit, stopped here) running.
build_go() {
  export GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$work/go/cache" GOFLAGS=
  mkdir -p "$work/go"
  sed -e 's|^\t"fmt"$|\t"fmt"\n\t"os"|' \
    -e 's|^\tsrv, err := bttest.NewServer("localhost:0".*$|\tsrv, err := \&bttest.Server{Addr: os.Getenv("ROWKIT_GRPC_ADDR")}, error(nil)\n\tif srv.Addr == "" {\n\t\terr = errors.New("ROWKIT_GRPC_ADDR is not set")\n\t}|' \
    -e 's|^\te.server.Close()$|\t// The server is rowkit, started and stopped by run.sh.|' \
    "$gosrc/export_test.go" >"$work/go/export_test.go"
  # All three edits or none: a changed upstream file must not silently test bttest instead.
  if [ "$(grep -c -e 'ROWKIT_GRPC_ADDR' -e 'started and stopped by run.sh' "$work/go/export_test.go")" != 3 ]; then
    echo "clients: $gosrc/export_test.go changed: the overlay edits no longer apply" >&2
    return 1
  fi
  printf '{"Replace":{"%s":"%s"}}\n' "$gosrc/export_test.go" "$work/go/export_test.go" >"$work/go/overlay.json"
  (cd "$gosrc" && go test -c -overlay "$work/go/overlay.json" -o "$work/go/bigtable.test" .) &&
    (cd "$here/go/bigrows" && go build -o "$work/go/bigrows" .)
}

# ---- servers -----------------------------------------------------------------------------------
# start_server LABEL STORE [serve flags...]: starts rowkit serve --grpc on a free port and sets
# $addr to its gRPC address (the line after the URL on stdout); waits at most 60 s.
start_server() {
  local label=$1 store=$2
  shift 2
  "$rowkit" serve --store "$store" --listen 127.0.0.1:0 --grpc 127.0.0.1:0 "$@" \
    >"$run/$label.out" 2>"$run/$label.err" &
  server_pids+=($!)
  local pid=$! waited=0
  addr=
  while [ $waited -lt 600 ]; do
    addr=$(sed -n 2p "$run/$label.out")
    [ -n "$addr" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
    waited=$((waited + 1))
  done
  echo "clients: rowkit serve ($label) did not start: $(tail -n 1 "$run/$label.err")" >&2
  return 1
}

# ---- test credentials for prod mode: a CA and server certificate, a service-account key, and the
# token endpoint that key names ------------------------------------------------------------------
make_credentials() {
  local d="$run/creds"
  mkdir -p "$d"
  access_token=$(openssl rand -hex 24)
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=rowkit clients test CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
    -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null &&
    openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
      -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null &&
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$d/server.ext" &&
    openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
      -extfile "$d/server.ext" -out "$d/server.pem" 2>/dev/null &&
    openssl genrsa -out "$d/sa.key" 2048 2>/dev/null &&
    openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null || return 1
  local email="rowkit-clients@$project.iam.gserviceaccount.com"
  python3 "$here/go/token_server.py" "$d/token.port" "$d/sa.pub" "$email" "$access_token" \
    2>"$run/token_server.err" &
  helper_pids+=($!)
  local waited=0
  while [ ! -s "$d/token.port" ] && [ $waited -lt 100 ]; do sleep 0.1; waited=$((waited + 1)); done
  [ -s "$d/token.port" ] || { echo "clients: the token endpoint did not start" >&2; return 1; }
  local endpoint name
  # sa.json is granted the token rowkit expects; stranger.json (same key) another one.
  endpoint="http://127.0.0.1:$(cat "$d/token.port")"
  for name in sa:/token stranger:/stranger/token; do
    python3 - "$d/sa.key" "$email" "$endpoint${name#*:}" "$project" >"$d/${name%%:*}.json" <<'EOF' || return 1
import json, sys
key, email, token_uri, project = sys.argv[1:5]
print(json.dumps({"type": "service_account", "project_id": project, "private_key_id": "rowkit-clients",
                  "private_key": open(key).read(), "client_email": email, "client_id": "1",
                  "token_uri": token_uri}))
EOF
  done
}

# ---- clients -----------------------------------------------------------------------------------
# test_lines LOG: what a Go test logged (t.Log, t.Error, t.Skip), less setupIntegration's notes.
test_lines() {
  grep -E '^\s+\S+_test\.go:[0-9]+: ' "$1" |
    grep -v -e 'bttest.Server running on' -e 'Running test against production' | sed 's/^ *//'
}

# go_tests CLIENT STORE [test flags...]: runs each test of go_test_names in its own process (own
# table, so a panic or leftover table does not fail the next), with the environment in go_env, and
# records passes, skips and first errors.
go_tests() {
  local client=$1 store=$2
  shift 2
  local passed=() skipped=() failed=0 t log rc first
  for t in "${go_test_names[@]}"; do
    log="$run/$client-$store-$t.log"
    (cd "$gosrc" && env "${go_env[@]}" timeout 330 "$work/go/bigtable.test" -test.run "^$t\$" -test.v -test.timeout 300s \
      -it.table "${t#TestIntegration_}" "$@" >"$log" 2>&1)
    rc=$?
    if [ $rc = 0 ] && grep -q -- "^--- SKIP: $t" "$log"; then
      skipped+=("${t#TestIntegration_}")
      record "$client" "$store" SKIP "$t: $(test_lines "$log" | head -n 1)"
    elif [ $rc = 0 ] && grep -q -- "^--- PASS: $t" "$log"; then
      passed+=("${t#TestIntegration_}")
    else
      failed=$((failed + 1))
      first=$(test_lines "$log" | head -n 1)
      [ -n "$first" ] || first=$(grep -m1 '^panic: ' "$log")
      [ -n "$first" ] || first=$(grep -m1 '^--- FAIL' "$log")
      [ $rc = 124 ] && first="timed out after 330 s"
      record "$client" "$store" FAIL "$t: ${first:-exit $rc, see $log}"
    fi
  done
  record "$client" "$store" "$([ $failed = 0 ] && echo ok || echo fail)" \
    "${#passed[@]} passed, ${#skipped[@]} skipped (by Google's test), $failed failed"
  echo "clients: $client $store passed: ${passed[*]:-none}" | tee -a "$summary.passed"
}

run_go_emulator() {
  mapfile -t go_test_names < <("$work/go/bigtable.test" -test.list '^TestIntegration_')
  go_env=(-u BIGTABLE_EMULATOR_HOST ROWKIT_GRPC_ADDR="$1")
  go_tests go-emulator "$2"
}

# Prod mode: -it.use-prod with endpoints, TLS and ADC, against a server holding --token.
run_go_prod() {
  local store=$1 storearg=$2 t
  go_test_names=()
  for t in $("$work/go/bigtable.test" -test.list '^TestIntegration_'); do
    if [ -n "${prod_excluded[$t]:-}" ]; then
      [ "$store" != "${stores%% *}" ] || record go-prod all skip "$t not run: ${prod_excluded[$t]}"
    else
      go_test_names+=("$t")
    fi
  done
  if ! "$rowkit" serve --help | grep -q -- '--tls-cert'; then
    # Without TLS in rowkit, Google's prod path can only reach it through BIGTABLE_EMULATOR_HOST
    # (plaintext, no credentials): the tests still run, but the mode is not what it must be.
    record go-prod "$store" FAIL "rowkit serve has no --tls-cert: prod mode run over plaintext BIGTABLE_EMULATOR_HOST, without ADC"
    start_server "prod-$store" "$storearg" || { record go-prod "$store" FAIL "server did not start"; return; }
    go_env=(BIGTABLE_EMULATOR_HOST="$addr")
  else
    local d="$run/creds"
    start_server "prod-$store" "$storearg" --tls-cert "$d/server.pem" --tls-key "$d/server.key" \
      --token "$access_token" || { record go-prod "$store" FAIL "TLS server did not start"; return; }
    go_env=(-u BIGTABLE_EMULATOR_HOST GOOGLE_APPLICATION_CREDENTIALS="$d/sa.json" SSL_CERT_FILE="$d/ca.pem")
  fi
  local grants_before
  grants_before=$(grep -c '"POST /token HTTP/1.1" 200' "$run/token_server.err")
  go_tests go-prod "$store" -it.use-prod -it.project $project -it.instance $instance \
    -it.cluster "$cluster" -it.admin-endpoint "$addr" -it.data-endpoint "$addr"
  # The bearer rowkit accepted must have come from Google's OAuth flow, not from anywhere else.
  if [ "${go_env[0]}" = -u ] &&
    [ "$(grep -c '"POST /token HTTP/1.1" 200' "$run/token_server.err")" -le "$grants_before" ]; then
    record go-prod "$store" FAIL "the clients never fetched a token from the service account's token endpoint"
  fi
  # Control: the same test with a token rowkit does not hold must be refused.
  if [ "${go_env[0]}" = -u ]; then
    local log="$run/go-prod-$store-stranger.log"
    (cd "$gosrc" && env -u BIGTABLE_EMULATOR_HOST GOOGLE_APPLICATION_CREDENTIALS="$d/stranger.json" \
      SSL_CERT_FILE="$d/ca.pem" timeout 120 "$work/go/bigtable.test" -test.run '^TestIntegration_ReadRowList$' \
      -it.use-prod -it.project $project -it.instance $instance -it.cluster "$cluster" -it.table stranger \
      -it.admin-endpoint "$addr" -it.data-endpoint "$addr" >"$log" 2>&1)
    if grep -q 'code = Unauthenticated' "$log"; then
      record go-prod "$store" ok "control: a bearer from another token is refused (Unauthenticated)"
    else
      record go-prod "$store" FAIL "control: a bearer from another token was not refused: $(test_lines "$log" | head -n 1)"
    fi
  fi
}

run_go_bigrows() {
  local log="$run/go-bigrows-$2.log"
  if BIGTABLE_EMULATOR_HOST=$1 timeout 300 "$work/go/bigrows" $project $instance go_bigrows >"$log" 2>&1; then
    record go-bigrows "$2" ok "$(tail -n 2 "$log" | sed 's/^bigrows: //' | paste -sd ';' -)"
  else
    record go-bigrows "$2" FAIL "$(grep -v 'creds flag unset' "$log" | tail -n 1)"
  fi
}

# run_script CLIENT STORE ADDR COMMAND...: a test program printing "CLIENT: PASS|FAIL step" lines.
run_script() {
  local client=$1 store=$2 addr=$3 log="$run/$1-$2"
  shift 3
  BIGTABLE_EMULATOR_HOST=$addr timeout 600 "$@" $project $instance "${client}_$store" >"$log.out" 2>"$log.err"
  local rc=$? line
  while IFS= read -r line; do
    record "$client" "$store" FAIL "${line#*: FAIL }"
  done < <(grep ": FAIL " "$log.out")
  local passed
  passed=$(grep -c ": PASS " "$log.out")
  if [ $rc = 0 ]; then
    record "$client" "$store" ok "$passed steps passed"
  else
    grep -q ": FAIL " "$log.out" || record "$client" "$store" FAIL "exit $rc: $(tail -n 1 "$log.err")"
    record "$client" "$store" fail "$passed steps passed, the rest failed (details in $log.err)"
  fi
}

# ---- main --------------------------------------------------------------------------------------
echo "clients: rowkit $rowkit; work folder $work"
if ! install_all >"$run/install.log" 2>&1; then
  tail -n 20 "$run/install.log" >&2
  echo "clients: installing the clients failed (log: $run/install.log)" >&2
  exit 1
fi
if wants go-prod && ! make_credentials; then
  record go-prod all FAIL "could not make the test CA, key and token endpoint"
fi

for store in $stores; do
  case $store in
    memory) plain_store=memory: prod_store=memory: ;;
    embedded) plain_store="embedded:$run/plain.redb" prod_store="embedded:$run/prod.redb" ;;
    *) echo "clients: unknown store $store (memory or embedded)" >&2; exit 2 ;;
  esac
  echo "=== clients over $store ($(date -u +%H:%M:%S))"
  if wants go-emulator || wants go-bigrows || wants python || wants node; then
    if start_server "plain-$store" "$plain_store"; then
      wants go-emulator && run_go_emulator "$addr" "$store"
      wants go-bigrows && run_go_bigrows "$addr" "$store"
      wants python && run_script python "$store" "$addr" "$work/py/bin/python" "$here/python/test_clients.py"
      wants node && NODE_PATH="$work/node/node_modules" run_script node "$store" "$addr" node "$here/node/test_client.js"
    else
      record server "$store" FAIL "rowkit serve --grpc did not start over $plain_store"
    fi
  fi
  if wants go-prod && [ -n "${access_token:-}" ]; then
    run_go_prod "$store" "$prod_store"
  fi
  stop_servers
done

echo
echo "=== clients summary (logs in $run)"
sort -s -k1,1 "$summary"
[ -f "$summary.passed" ] && cat "$summary.passed"
if [ $failures -gt 0 ]; then
  echo "clients: $failures failure(s)"
  exit 1
fi
echo "clients: all passed"
