#!/usr/bin/env bash
# Unary overload: how a CPU-only node behaves when offered three times what it can serve. For each
# server binary (or flag set) it measures the node's capacity (closed loop), then offers multiples
# of that rate open loop (Poisson, Search calls; FACTORS, default 0.7 and 3) and reports what was
# answered, the client-side latency of the answered queries, the errors by code, and the server's
# memory before, at peak and after ten idle seconds. Server and load generator run on disjoint CPUs (SERVER_CPUS, LOADGEN_CPUS).
#
#   bench/overload.sh BIN_DIR DATA_DIR OUT_DIR 'label|/path/to/tandem-server|flags' ...
#   BIN_DIR: tandem-index, tandem-loadgen; DATA_DIR: as for bench/figure7.sh
set -euo pipefail
BIN=$1
DATA=$2
OUT=$3
shift 3
SERVER_CPUS=${SERVER_CPUS:-0-7}
LOADGEN_CPUS=${LOADGEN_CPUS:-8-15}
THREADS=${THREADS:-8}
DOCS=${DOCS:-5000000}
DURATION=${DURATION:-30}
FACTORS=${FACTORS:-0.7 3}
mkdir -p "$OUT"
if [[ ! -f "$OUT/index/manifest.bin" ]]; then
  "$BIN/tandem-index" synth --docs "$DOCS" --termstats "$DATA/wikipedia-termstats.tsv.gz" \
    --doclengths "$DATA/wikipedia-doclengths.tsv" --queries "$DATA/trec05-efficiency.txt" \
    --vocabulary query-terms --postings-per-doc 240 --seed 1 --output "$OUT/index" > /dev/null
fi
head -5000 "$DATA/trec05-efficiency.txt" > "$OUT/queries.txt"
rss_mb() { awk -v k="$2" '$1 == k":" {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
loadgen() {
  taskset -c "$LOADGEN_CPUS" "$BIN/tandem-loadgen" --server 127.0.0.1:50073 \
    --queries "$OUT/queries.txt" --query-format colon --mode or --k 10 --shuffle --channels 4 \
    --cq-threads 4 "$@"
}
for spec in "$@"; do
  IFS='|' read -r label server flags <<< "$spec"
  # shellcheck disable=SC2086
  taskset -c "$SERVER_CPUS" "$server" --index "$OUT/index" --listen 127.0.0.1:50073 \
    --metrics-listen "" --gpu off --threads "$THREADS" $flags > "$OUT/server-$label.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$OUT/server-$label.log" && break; sleep 0.3; done
  loadgen --concurrency 8 --duration 2 --warmup 0 > /dev/null
  base=$(rss_mb "$pid" VmRSS)
  # Capacity: the best closed-loop rate with no more clients than the node admits (its queue
  # holds 4 per worker), so that no query is refused.
  capacity=$(loadgen --concurrency "$THREADS,$((2 * THREADS)),$((4 * THREADS))" --duration 4 \
    --warmup 1 | awk '/^conc=/ && $6 > best {best = $6} END {print best}')
  rates=$(for f in $FACTORS; do awk -v c="$capacity" -v f="$f" 'BEGIN {printf "%d,", c * f}'; done)
  echo "== $label: capacity ${capacity} q/s (closed loop); offered ${FACTORS// /x, }x that"
  loadgen --rates "${rates%,}" --duration "$DURATION" --warmup 0 --timeout 10 |
    grep -E "^(load|rate=| )"
  peak=$(rss_mb "$pid" VmHWM)
  sleep 10
  after=$(rss_mb "$pid" VmRSS)
  echo "== $label: RSS ${base} MB before, ${peak} MB peak, ${after} MB ten seconds after"
  kill -TERM "$pid"
  wait "$pid" || true
done
