#!/usr/bin/env bash
# Where the hybrid scheduler's limit comes from: open-loop load against tandem-server on the
# 25M-document GOV2-like index while, once a second, bench/metrics_sample.py prints the scheduler's
# metrics (busy workers, queue depths, queries taken, worker time by activity) and
# bench/thread_cpu_sample.py the cores each group of threads used (server and load generator) and
# the machine's busy cores. Several server variants one after the other, each under the same loads.
# Run on the GPU machine:
#
#   bench/hybrid_probe.sh BIN_DIR DATA_DIR MODEL_DIR OUT_DIR
#   BIN_DIR: tandem-index, tandem-loadgen and the server binaries the variants name;
#   DATA_DIR: as for bench/figure7.sh; MODEL_DIR: cost_model.txt and eval-queries.txt from a
#   bench/figure7.sh run on that machine.
#   VARIANTS: "LABEL=BINARY[:FLAG,FLAG...] ..." (commas become spaces), default
#     "hybrid=tandem-server"; LOADS: "MODE:ENGINE@RATE ...", default AND routed at 13,000, 16,000
#     and 19,500 q/s, then pinned to the GPU at 13,000 and 16,000; THREADS: CPU workers (12).
# Each load also prints the device's utilization (nvidia-smi: the share of time a kernel ran).
# TRANSPORT, STREAMS: the load generator's --transport (unary or stream) and --streams.
# Writes OUT_DIR/probe.txt (everything printed) and one loadgen JSON per variant and load.
set -euo pipefail
BIN=$1
DATA=$2
MODEL=$3
OUT=$4
INDEX=${INDEX:-/tmp/gov2like}
VARIANTS=${VARIANTS:-"hybrid=tandem-server"}
LOADS=${LOADS:-"and:auto@13000 and:auto@16000 and:auto@19500 and:gpu@13000 and:gpu@16000"}
THREADS=${THREADS:-12}
DURATION=${DURATION:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/server_common.sh
source "$HERE/server_common.sh"
mkdir -p "$OUT"
if [[ ! -f "$INDEX/manifest.bin" ]]; then
  "$BIN/tandem-index" synth --docs 25000000 --termstats "$DATA/wikipedia-termstats.tsv.gz" \
    --doclengths "$DATA/wikipedia-doclengths.tsv" --queries "$DATA/trec05-efficiency.txt" \
    --vocabulary query-terms --postings-per-doc 240 --seed 1 --output "$INDEX" > /dev/null
fi
SERVER_PID=
trap '[[ -z $SERVER_PID ]] || kill -TERM "$SERVER_PID" 2>/dev/null || true' EXIT
for variant in $VARIANTS; do
  label=${variant%%=*}
  spec=${variant#*=}
  binary=${spec%%:*}
  flags=""
  [[ $spec == *:* ]] && flags=${spec#*:}
  log="$OUT/server_$label.log"
  # shellcheck disable=SC2086  # the variant's flags are separate words
  "$BIN/$binary" --index "$INDEX" --listen 127.0.0.1:50073 --metrics-listen 127.0.0.1:9473 \
    --threads "$THREADS" --gpu required --cost-model "$MODEL/cost_model.txt" \
    --queue-capacity 100000 ${flags//,/ } > "$log" 2>&1 &
  SERVER_PID=$!
  wait_listening "$log" "$SERVER_PID"
  echo "== $label: $binary ${flags//,/ }"
  grep -E "scheduler|listening" "$log" | head -3
  warm_device_cache "$BIN" 127.0.0.1:50073 "$MODEL/eval-queries.txt"
  for load in $LOADS; do
    mode=${load%%:*}
    rest=${load#*:}
    engine=${rest%%@*}
    rate=${rest#*@}
    json="$OUT/${label}_${mode}_${engine}_${rate}.json"
    "$BIN/tandem-loadgen" --server 127.0.0.1:50073 --queries "$MODEL/eval-queries.txt" \
      --query-format colon --mode "$mode" --k 10 --engine "$engine" --rates "$rate" \
      --duration "$DURATION" --warmup 1 --timeout 2 --channels 4 --cq-threads 4 --shuffle \
      --transport "${TRANSPORT:-unary}" --streams "${STREAMS:-16}" --label "$label" \
      --json-out "$json" > "$OUT/load.txt" 2>&1 &
    loadgen=$!
    sleep 0.3
    python3 "$HERE/metrics_sample.py" http://127.0.0.1:9473/metrics $((DURATION + 1)) \
      "$label $mode:$engine@$rate" &
    sampler=$!
    # The device's own view: the share of time a kernel ran (utilization.gpu), sampled by the
    # driver, over the measured seconds.
    (sleep 0.7 && timeout "$DURATION" nvidia-smi --format=csv,noheader,nounits -lms 250 \
      --query-gpu=utilization.gpu,utilization.memory,power.draw) > "$OUT/smi.txt" 2>/dev/null &
    smi=$!
    python3 "$HERE/thread_cpu_sample.py" $((DURATION + 1)) "$label $mode:$engine@$rate" \
      "server=$SERVER_PID" "loadgen=$loadgen"
    wait "$sampler" || true
    wait "$smi" || true
    awk -F', *' -v l="$label $mode:$engine@$rate" '$1 ~ /^[0-9]/ {u += $1; m += $2; p += $3; n++}
      END {if (n) printf "%s device: kernels running %.0f%% of the time (memory %.0f%%), " \
             "%.0f W, %d samples\n", l, u / n, m / n, p / n, n}' "$OUT/smi.txt"
    wait "$loadgen" || true
    grep -E "^rate" "$OUT/load.txt" | sed "s/^/$label $mode:$engine /"
  done
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID" || true
  SERVER_PID=
done
