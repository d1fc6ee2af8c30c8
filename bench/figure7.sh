#!/usr/bin/env bash
# Figure 7 of Ding et al. 2009 on the GPU machine: open-loop Poisson arrivals at increasing rates
# against the real tandem-server over the 25M-document GOV2-like index, TREC 2005 efficiency
# evaluation queries, for four configurations:
#   cpu     CPU only: the hybrid server, every query pinned to the CPU (--engine cpu), 16 workers
#   gpu     GPU only: every query pinned to the GPU (--engine gpu), $GPU_THREADS (8) queries in flight
#   serial  one query at a time on the processor the cost model picks (--scheduler serial)
#   hybrid  the three-queue work-stealing scheduler (--engine auto), $HYBRID_THREADS CPU workers
# A configuration name may carry variants: NAME[N][-gM][-pP][-WAIT], e.g. hybrid8-g8-blocking: N
# CPU workers (hybrid, cpu), M queries in flight on the GPU (--gpu-threads, default $GPU_THREADS),
# the GPU workers on CPUs 0..P-1 and the CPU workers on the others (--tune-gpu-worker-cpus,
# --tune-cpu-worker-cpus; default: both anywhere) and how GPU workers wait for the device
# (--tune-gpu-wait spin|yield|blocking, default $GPU_WAIT). SERVER_FLAGS adds flags to every server
# (e.g. "--tune-dispatch locked").
# Steps (each skipped when its output exists, so a second call can resume):
#   1. tandem-index synth: the GOV2-like index (bench/WORKLOADS.md) in $INDEX;
#   2. tandem-train-cost on the first $TRAIN training queries of the seeded split (seed 1, 3,000
#      training / 1,000 evaluation queries, as tandem-bench-gpu-query uses), error measured on
#      $EVAL evaluation queries; writes the model and the evaluation queries for the load;
#   3. for each mode in $MODES and configuration in $CONFIGS, one tandem-loadgen row per rate, in
#      increasing order, stopping after two rows in a row fail (a query over the 500 ms deadline,
#      an error, or the achieved rate 5% short of the offered one).
# Then, on the build machine: /usr/bin/python3 bench/figure7.py --in OUT ... (PNG and JSON).
#
# Usage: bench/figure7.sh BIN_DIR DATA_DIR OUT_DIR
#   BIN_DIR: tandem-index, tandem-server, tandem-loadgen, tandem-train-cost
#   DATA_DIR: wikipedia-termstats.tsv.gz, wikipedia-doclengths.tsv, trec05-efficiency.txt
set -euo pipefail
BIN=$1
DATA=$2
OUT=$3
INDEX=${INDEX:-/tmp/gov2like}
DOCS=${DOCS:-25000000}
TRAIN=${TRAIN:-600}
EVAL=${EVAL:-200}
MODES=${MODES:-"and or"}
CONFIGS=${CONFIGS-"gpu hybrid cpu serial"}  # empty: only the index and the cost model
HYBRID_THREADS=${HYBRID_THREADS:-12}
GPU_THREADS=${GPU_THREADS:-8}  # 8: both GPU only and hybrid sustained more than with 4 in the probes
GPU_WAIT=${GPU_WAIT:-auto}
MAX_WAIT=${MAX_WAIT:-20ms}  # the hybrid scheduler's --tune-max-wait (shortest-first bound)
ANSWER_THREADS=${ANSWER_THREADS:-}  # the servers' --tune-answer-threads; empty: the default
SERVER_FLAGS=${SERVER_FLAGS:-}  # more flags for every server, split on spaces
TRANSPORT=${TRANSPORT:-unary}  # the load generator's --transport: unary (a Search call per query) or
                              # stream (SearchStream calls, $STREAMS per channel: a broker's streams)
STREAMS=${STREAMS:-16}
DURATION=${DURATION:-4}
WARMUP=${WARMUP:-1}
RATES_and=${RATES_and:-"500 1000 2000 3000 4000 6000 8000 10000 12000 14000 16000 18000 19500 21000 22500 24000 26000 28000"}
RATES_or=${RATES_or:-"100 200 300 400 600 800 1000 1500 2000 2500 3000 3500 4000 4500 5000 6000"}
GPU=${GPU:-required}  # "off" only to smoke-test the script on a machine without a GPU
PORT=50071
METRICS_PORT=9471
# shellcheck source=bench/server_common.sh
source "$(dirname "$0")/server_common.sh"
mkdir -p "$OUT"

log() { echo "figure7 $(date +%T): $*"; }
if [[ ! -f "$INDEX/manifest.bin" ]]; then
  log "synthesizing $DOCS documents into $INDEX"
  "$BIN/tandem-index" synth --docs "$DOCS" --termstats "$DATA/wikipedia-termstats.tsv.gz" \
    --doclengths "$DATA/wikipedia-doclengths.tsv" --queries "$DATA/trec05-efficiency.txt" \
    --vocabulary query-terms --postings-per-doc 240 --seed 1 --output "$INDEX" > "$OUT/synth.txt"
fi
if [[ ! -f "$OUT/cost_model.txt" ]]; then
  log "training the cost model"
  "$BIN/tandem-train-cost" --index "$INDEX" --queries "$DATA/trec05-efficiency.txt" \
    --gpu "$GPU" --modes and,or --k 10 --max-queries 4000 --train-fraction 0.75 \
    --train-limit "$TRAIN" --eval-limit "$EVAL" --repeat 2 \
    --eval-queries-out "$OUT/eval-queries.txt" --out "$OUT/cost_model.txt" \
    --json "$OUT/cost_model.json" | tee "$OUT/cost_model_stdout.txt"
fi

SERVER_PID=
trap '[[ -z $SERVER_PID ]] || kill -TERM "$SERVER_PID" 2>/dev/null || true' EXIT
start_server() {  # $1: scheduler, $2: CPU workers, $3: GPU queries in flight, $4: GPU wait,
                 # $5: CPUs 0..$5-1 for the GPU workers, the rest for the CPU workers (empty: any)
  local log="$OUT/server_$1_$2_g$3_$4${5:+_p$5}.log" cpus=()
  [[ -z $5 ]] || cpus=(--tune-gpu-worker-cpus "0-$(($5 - 1))" --tune-cpu-worker-cpus "$5-$(($(nproc) - 1))")
  "$BIN/tandem-server" --index "$INDEX" --listen "127.0.0.1:$PORT" \
    --metrics-listen "127.0.0.1:$METRICS_PORT" --threads "$2" --gpu "$GPU" --scheduler "$1" \
    --gpu-threads "$3" --tune-gpu-wait "$4" --tune-max-wait "$MAX_WAIT" \
    --cost-model "$OUT/cost_model.txt" --queue-capacity 100000 \
    ${ANSWER_THREADS:+--tune-answer-threads "$ANSWER_THREADS"} "${cpus[@]}" $SERVER_FLAGS \
    > "$log" 2>&1 &
  SERVER_PID=$!
  wait_listening "$log" "$SERVER_PID"
  [[ $GPU == off ]] || warm_device_cache "$BIN" "127.0.0.1:$PORT" "$OUT/eval-queries.txt"
}
scrape_metrics() {  # the scheduler's counters so far (decisions, steals, cost ratios, ...)
  python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$METRICS_PORT/metrics').read().decode())" |
    grep -E '^tandem_(scheduler|processor|cost_model|gpu_fallbacks)' || true
}
stop_server() {
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID" || true
  SERVER_PID=
}

# Whether a loadgen JSON's row sustained its rate: all OK, max latency <= 500 ms, achieved >= 95%.
sustained() {
  python3 - "$1" <<'EOF'
import json, sys
row = json.load(open(sys.argv[1]))["rows"][0]
errors = sum(n for s, n in row["status_counts"].items() if s != "OK")
ok = (errors == 0 and row["latency_ms"]["max"] <= 500 and
      row["achieved_qps"] >= 0.95 * row["offered_qps"])
sys.exit(0 if ok else 1)
EOF
}

sweep() {  # $1 mode, $2 config, $3 engine hint
  local mode=$1 config=$2 engine=$3 rates_var="RATES_$1" failures=0
  for rate in ${!rates_var}; do
    local json="$OUT/${mode}_${config}_${rate}.json"
    "$BIN/tandem-loadgen" --server "127.0.0.1:$PORT" --queries "$OUT/eval-queries.txt" \
      --query-format colon --mode "$mode" --k 10 --engine "$engine" --rates "$rate" \
      --duration "$DURATION" --warmup "$WARMUP" --timeout 2 --channels 4 --cq-threads 4 \
      --transport "$TRANSPORT" --streams "$STREAMS" \
      --shuffle --label "$config" --json-out "$json" | grep -E "^rate" | sed "s/^/$mode $config /"
    if sustained "$json"; then failures=0; else failures=$((failures + 1)); fi
    if [[ $failures -ge 2 ]]; then break; fi
  done
  return 0
}

# The server each configuration runs against: scheduler, CPU workers, GPU queries in flight and GPU
# wait. CPU only and GPU only pin every query (--engine cpu / gpu) on a hybrid server with 16 CPU
# workers; "hybridN" runs the hybrid scheduler with N CPU workers (default $HYBRID_THREADS), leaving
# the other cores to the GPU workers' host code, gRPC and the load generator.
CONFIG_RE='^(cpu|gpu|serial|hybrid)([0-9]*)(-g([0-9]+))?(-p([0-9]+))?(-(auto|spin|yield|blocking))?$'
server_of() {
  [[ $1 =~ $CONFIG_RE ]] || { echo "bad configuration '$1'" >&2; exit 2; }
  local base=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]} g=${BASH_REMATCH[4]:-$GPU_THREADS}
  local p=${BASH_REMATCH[6]} wait=${BASH_REMATCH[8]:-$GPU_WAIT}
  if [[ -n $p ]] && ((p < 1 || p >= $(nproc))); then
    echo "configuration '$1': -p needs 1 to $(($(nproc) - 1)) CPUs for the GPU workers" >&2
    exit 2
  fi
  case $base in
    cpu) echo "hybrid:${n:-16}:$g:$wait:$p" ;;
    gpu) echo "hybrid:16:$g:$wait:$p" ;;
    serial) echo "serial:1:$g:$wait:$p" ;;
    hybrid) echo "hybrid:${n:-$HYBRID_THREADS}:$g:$wait:$p" ;;
  esac
}
for c in $CONFIGS; do server_of "$c" > /dev/null; done
for key in $(for c in $CONFIGS; do server_of "$c"; done | awk '!seen[$0]++'); do  # in $CONFIGS order
  todo=()
  for mode in $MODES; do
    for config in $CONFIGS; do
      [[ $(server_of "$config") == "$key" ]] || continue
      ls "$OUT/${mode}_${config}_"*.json > /dev/null 2>&1 || todo+=("$mode:$config")
    done
  done
  [[ ${#todo[@]} -eq 0 ]] && continue
  IFS=: read -r scheduler threads gpu_threads gpu_wait partition <<< "$key"
  log "server $key for ${todo[*]}"
  start_server "$scheduler" "$threads" "$gpu_threads" "$gpu_wait" "$partition"
  for item in "${todo[@]}"; do
    mode=${item%%:*}
    config=${item#*:}
    case $config in
      cpu*) sweep "$mode" "$config" cpu ;;
      gpu*) sweep "$mode" "$config" gpu ;;
      *) sweep "$mode" "$config" auto ;;
    esac
    scrape_metrics > "$OUT/metrics_${mode}_${config}.txt"
  done
  stop_server
done
log done
