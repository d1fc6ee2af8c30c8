#!/usr/bin/env bash
# What the broker costs and what sharding gives on one machine: a GOV2-like collection served by
# one tandem-server (the baseline), then cut by `tandem-index shard` into S = 1, 2, 4 shards, each
# served by its own tandem-server on an equal share of the same cores, behind tandem-broker. The
# load generator drives each setup with the TREC 2005 efficiency queries, closed loop: one query at
# a time (the broker's latency overhead, p50 and p99) and CONCURRENCY at a time (throughput). Every
# answer of the broker is also checked against the single node (bench/scaling_summary.py).
#
#   bench/broker_scaling.sh BIN_DIR DATA_DIR OUT_DIR
#   then record it: python3 bench/scaling_summary.py --work OUT_DIR --benchmark broker_scaling \
#     --machine KIND --record   (bench/results/broker_scaling.json, runs.KIND)
#   BIN_DIR: tandem-index, tandem-server, tandem-broker, tandem-loadgen, tandem-cli
#   DATA_DIR: wikipedia-termstats.tsv.gz, wikipedia-doclengths.tsv, trec05-efficiency.txt
#   env: CORES (nproc), PIN (1: pin with taskset), DOCS (25000000), SHARDS ("1 2 4"), CONCURRENCY (64), DURATION (8 s a row), MODES
#        ("or and"), INDEX (an index to use instead of the synthetic one)
# Cores: the load generator and the broker get 2 each (the last 4), the nodes share the rest.
set -euo pipefail
BIN=$1
DATA=$2
OUT=$3
DOCS=${DOCS:-25000000}
SHARDS=${SHARDS:-1 2 4}
CONCURRENCY=${CONCURRENCY:-64}
DURATION=${DURATION:-8}
MODES=${MODES:-or and}
mkdir -p "$OUT"
source "$(dirname "$0")/server_common.sh"
CORES=${CORES:-$(nproc)}
# pin CPUS: the command prefix that pins to CPUS, in PINNED (an array); PIN=0 (a machine with fewer
# cores than CORES, to try the script): none. A prefix, not a function, so that a command sent to
# the background is this shell's child ($! its pid) and cleanup stops it.
pin() { PINNED=(); if [[ ${PIN:-1} == 1 ]]; then PINNED=(taskset -c "$1"); fi; }
(( CORES >= 6 )) || { echo "broker_scaling.sh needs at least 6 cores" >&2; exit 1; }
NODE_CORES=$((CORES - 4))
LOADGEN_CPUS="$((CORES - 2))-$((CORES - 1))"
BROKER_CPUS="$((CORES - 4))-$((CORES - 3))"
QUERIES=$OUT/queries.txt
head -n 1000 "$DATA/trec05-efficiency.txt" > "$QUERIES"

gov2like_index "$BIN" "$DATA" "$OUT" "$DOCS"
trap cleanup EXIT

# start_node DIR CPUS LOG: a node on DIR pinned to CPUS; its address in NODE. (Not in a $(...)
# subshell: the node must be this shell's child, for cleanup to stop it.)
start_node() {
  local threads
  threads=$(( $(echo "$2" | awk -F- '{print $2 - $1 + 1}') ))
  pin "$2"
  "${PINNED[@]}" "$BIN/tandem-server" --index "$1" --listen 127.0.0.1:0 --metrics-listen "" \
    --threads "$threads" --gpu off --queue-capacity 100000 > "$3" 2>&1 &
  PIDS+=($!)
  wait_listening "$3" "$!"
  NODE=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$3" | head -1)
}

# measure LABEL ADDRESS: one row per mode and load.
measure() {
  for mode in $MODES; do
    for c in 1 "$CONCURRENCY"; do
      pin "$LOADGEN_CPUS"
      "${PINNED[@]}" "$BIN/tandem-loadgen" --server "$2" --queries "$QUERIES" \
        --query-format colon --mode "$mode" --k 10 --concurrency "$c" --duration "$DURATION" \
        --warmup 2 --channels 4 --cq-threads 2 --label "$1" \
        --json-out "$OUT/load_${1}_${mode}_c${c}.json" | grep -E "^(conc|  *[0-9])" || true
    done
  done
}

echo "== one node, ${NODE_CORES} cores (the baseline)"
start_node "$INDEX" "0-$((NODE_CORES - 1))" "$OUT/direct.log"
DIRECT=$NODE
measure direct "$DIRECT"
# Answers of the single node, for the broker's to be checked against.
for mode in $MODES; do
  "$BIN/tandem-cli" --server "$DIRECT" batch --mode "$mode" --k 10 --json - < "$QUERIES" \
    > "$OUT/answers_direct_${mode}.jsonl"
done
cleanup

for S in $SHARDS; do
  echo "== broker over $S shard(s), $((NODE_CORES / S)) cores each"
  SHARD_DIR=$OUT/shards-$S
  if [[ ! -d $SHARD_DIR ]]; then
    /usr/bin/time -f "%e s" "$BIN/tandem-index" shard --shards "$S" "$INDEX" "$SHARD_DIR" \
      2> "$OUT/shard-$S.time" > /dev/null
  fi
  ADDRS=()
  per=$((NODE_CORES / S))
  for ((s = 0; s < S; ++s)); do
    start_node "$(printf '%s/shard-%03d' "$SHARD_DIR" "$s")" \
      "$((s * per))-$((s * per + per - 1))" "$OUT/node-$S-$s.log"
    ADDRS+=("$NODE")
  done
  pin "$BROKER_CPUS"
  "${PINNED[@]}" "$BIN/tandem-broker" --replicas "$(IFS=,; echo "${ADDRS[*]}")" \
    --listen 127.0.0.1:0 --metrics-listen "" --cache-entries 0 > "$OUT/broker-$S.log" 2>&1 &
  PIDS+=($!)
  wait_listening "$OUT/broker-$S.log" "$!"
  BROKER=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$OUT/broker-$S.log" | head -1)
  measure "broker$S" "$BROKER"
  for mode in $MODES; do
    "$BIN/tandem-cli" --server "$BROKER" batch --mode "$mode" --k 10 --json - < "$QUERIES" \
      > "$OUT/answers_broker${S}_${mode}.jsonl"
  done
  cleanup
done
echo "done: $OUT"
