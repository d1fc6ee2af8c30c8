#!/usr/bin/env bash
# Where the backlog forms near the hybrid scheduler's limit: open-loop AND load against
# tandem-server on the 25M-document GOV2-like index while bench/metrics_sample.py prints, once a
# second, the busy workers and busy seconds per processor, the three queues' depths, the queries in
# flight and the queries each processor took. Routed (auto) at several rates, then pinned to the GPU
# and to the CPU for comparison. Run on the GPU machine:
#
#   bench/hybrid_probe.sh BIN_DIR DATA_DIR MODEL_DIR
#   BIN_DIR: tandem-index, tandem-server, tandem-loadgen; DATA_DIR: as for bench/figure7.sh;
#   MODEL_DIR: cost_model.txt and eval-queries.txt from a bench/figure7.sh run on that machine.
set -euo pipefail
BIN=$1
DATA=$2
MODEL=$3
INDEX=${INDEX:-/tmp/gov2like}
HERE=$(cd "$(dirname "$0")" && pwd)
if [[ ! -f "$INDEX/manifest.bin" ]]; then
  "$BIN/tandem-index" synth --docs 25000000 --termstats "$DATA/wikipedia-termstats.tsv.gz" \
    --doclengths "$DATA/wikipedia-doclengths.tsv" --queries "$DATA/trec05-efficiency.txt" \
    --vocabulary query-terms --postings-per-doc 240 --seed 1 --output "$INDEX" > /dev/null
fi
LOG=$(mktemp -d)
"$BIN/tandem-server" --index "$INDEX" --listen 127.0.0.1:50073 --metrics-listen 127.0.0.1:9473 \
  --threads 12 --gpu required --cost-model "$MODEL/cost_model.txt" --queue-capacity 100000 \
  > "$LOG/server.log" 2>&1 &
SERVER_PID=$!
trap 'kill -TERM "$SERVER_PID" 2>/dev/null || true' EXIT
for _ in $(seq 300); do grep -q "listening on" "$LOG/server.log" && break; sleep 0.5; done
"$BIN/tandem-loadgen" --server 127.0.0.1:50073 --queries "$MODEL/eval-queries.txt" \
  --query-format colon --mode and --engine gpu --concurrency 4 --num-queries 1000 --warmup 0 \
  > /dev/null  # warm the device cache
load() {  # $1 engine hint, $2 rate
  "$BIN/tandem-loadgen" --server 127.0.0.1:50073 --queries "$MODEL/eval-queries.txt" \
    --query-format colon --mode and --k 10 --engine "$1" --rates "$2" --duration 6 --warmup 1 \
    --timeout 2 --channels 4 --cq-threads 4 --shuffle > "$LOG/load.txt" 2>&1 &
  local loadgen=$!
  python3 "$HERE/metrics_sample.py" http://127.0.0.1:9473/metrics 7 "$1@$2"
  wait "$loadgen"
  grep -E "^rate" "$LOG/load.txt" | sed "s/^/$1 /"
}
for rate in 12000 14000 16000; do load auto "$rate"; done
for rate in 13000 15000; do load gpu "$rate"; done
load cpu 3000
