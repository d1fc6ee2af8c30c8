#!/usr/bin/env bash
# Several GPUs for one node's work, on the 25M-document GOV2-like collection, every query pinned to
# the GPU (--engine gpu): one tandem-server on one GPU (the baseline), one tandem-server on every
# GPU (--gpus 0,1: the index replicated, each query to the least loaded GPU), and the collection
# cut into one shard per GPU, each served by its own tandem-server --gpus i behind tandem-broker.
# Closed loop over SearchStream calls (the way a broker keeps streams to its nodes): one query at
# a time (p50, p99) and CONCURRENCY at a time (throughput); every setup's answers are checked
# against the baseline's (bench/scaling_summary.py). Run on a machine with two or more GPUs:
#
#   bench/multi_gpu_scaling.sh BIN_DIR DATA_DIR OUT_DIR
#   then record it: python3 bench/scaling_summary.py --work OUT_DIR --benchmark multi_gpu_scaling \
#     --baseline gpu1 --machine KIND --gpu-engine --record   (bench/results/multi_gpu_scaling.json)
#   BIN_DIR: tandem-index, tandem-server, tandem-broker, tandem-loadgen, tandem-cli
#   DATA_DIR: wikipedia-termstats.tsv.gz, wikipedia-doclengths.tsv, trec05-efficiency.txt
#   env: DOCS (25000000), GPUS (every one), CONCURRENCY (256), DURATION (6 s a row), MODES
#        ("and or"), INDEX (an index to use instead of the synthetic one)
set -euo pipefail
BIN=$1
DATA=$2
OUT=$3
DOCS=${DOCS:-25000000}
GPUS=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)}
CONCURRENCY=${CONCURRENCY:-256}
DURATION=${DURATION:-6}
MODES=${MODES:-and or}
(( GPUS >= 2 )) || { echo "multi_gpu_scaling.sh needs two GPUs or more" >&2; exit 1; }
mkdir -p "$OUT"
source "$(dirname "$0")/server_common.sh"
QUERIES=$OUT/queries.txt
head -n 1000 "$DATA/trec05-efficiency.txt" > "$QUERIES"
ALL_GPUS=$(seq -s, 0 $((GPUS - 1)))

gov2like_index "$BIN" "$DATA" "$OUT" "$DOCS"
trap cleanup EXIT

# start_node DIR GPUS LOG: a node on DIR serving from GPUS; its address in NODE. (Not in a $(...)
# subshell: the node must be this shell's child, for cleanup to stop it.)
start_node() {
  "$BIN/tandem-server" --index "$1" --listen 127.0.0.1:0 --metrics-listen "" --gpu required \
    --gpus "$2" --threads 4 --queue-capacity 100000 > "$3" 2>&1 &
  PIDS+=($!)
  wait_listening "$3" "$!"
  NODE=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$3" | head -1)
}

# measure LABEL ADDRESS: the device caches warmed (every query a few times, so that each GPU has
# seen each list), then one row per mode and load, and the answers.
measure() {
  "$BIN/tandem-loadgen" --server "$2" --queries "$QUERIES" --query-format colon --mode or \
    --engine gpu --concurrency 16 --num-queries $((1000 * GPUS * 2)) --warmup 0 > /dev/null
  for mode in $MODES; do
    for c in 1 "$CONCURRENCY"; do
      "$BIN/tandem-loadgen" --server "$2" --queries "$QUERIES" --query-format colon \
        --mode "$mode" --k 10 --engine gpu --concurrency "$c" --duration "$DURATION" --warmup 1 \
        --transport stream --channels 4 --streams 32 --label "$1" \
        --json-out "$OUT/load_${1}_${mode}_c${c}.json" | grep -E "^conc" | sed "s/^/$1 $mode /"
    done
    "$BIN/tandem-cli" --server "$2" batch --mode "$mode" --k 10 --engine gpu --json - \
      < "$QUERIES" > "$OUT/answers_${1}_${mode}.jsonl"
  done
}

echo "== one node, one GPU"
start_node "$INDEX" 0 "$OUT/gpu1.log"
measure gpu1 "$NODE"
grep -h "CPU and GPU" "$OUT/gpu1.log" || true
cleanup

echo "== one node, $GPUS GPUs (--gpus $ALL_GPUS)"
start_node "$INDEX" "$ALL_GPUS" "$OUT/gpus.log"
measure "gpus$GPUS" "$NODE"
grep -h "CPU and GPU" "$OUT/gpus.log" || true
cleanup

echo "== $GPUS shards, one node per GPU, behind tandem-broker"
[[ -d $OUT/shards ]] || "$BIN/tandem-index" shard --shards "$GPUS" "$INDEX" "$OUT/shards" > /dev/null
ADDRS=()
for ((g = 0; g < GPUS; ++g)); do
  start_node "$(printf '%s/shard-%03d' "$OUT/shards" "$g")" "$g" "$OUT/shard-$g.log"
  ADDRS+=("$NODE")
done
"$BIN/tandem-broker" --replicas "$(IFS=,; echo "${ADDRS[*]}")" --listen 127.0.0.1:0 \
  --metrics-listen "" --cache-entries 0 > "$OUT/broker.log" 2>&1 &
PIDS+=($!)
wait_listening "$OUT/broker.log" "$!"
measure "shards$GPUS" "$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$OUT/broker.log" | head -1)"
echo "done: $OUT"
