#!/usr/bin/env bash
# Whole-index switch under load: a node serving the GOV2-like index (bench/WORKLOADS.md) is switched
# to a second build of it (another seed: other documents, other lists) and back with
# `tandem-cli load-index`, while an open-loop Poisson load of AND top-10 queries runs.
#
# Protocol: both indexes are synthesized (DOCS documents each) with their GPU layouts
# (`tandem-index gpu-layouts`, so warming copies lists instead of transcoding them; LAYOUTS=0 leaves
# them out); the server starts on the first with its defaults (GPU when present) and is warmed with
# 10 s of the load. Then ROWS pairs of rows, each row LENGTH seconds measured at RATE q/s (below the
# node's knee) after 1 s of warm-up: a baseline row, then a switch row whose load-index is sent 2 s
# into the measured window (alternating between the two indexes). LENGTH must cover the load: open,
# warming (at most 30 s) and switch, the release of the old index and the new index's first
# queries. Reported per row: failed queries (every status but OK), p50/p99/max latency from the
# scheduled send time, and for the switch rows load-index's open and warm seconds and lists warmed.
# The figure: failed queries over the switch rows (target 0) and the median over the pairs of
# p99(switch row) / p99(baseline row) (target <= 2). Correctness in the same run: after the last
# switch, TREC queries answered by the node's GPU engine equal its CPU engine's (hits and scores).
#
#   bench/index_switch.sh BIN_DIR DATA_DIR OUT_DIR
#   BIN_DIR: tandem-index, tandem-server, tandem-loadgen, tandem-cli; DATA_DIR: as bench/figure7.sh
#   Writes OUT_DIR/index_switch.json (merge it with bench/results_store.py merge --benchmark
#   index_switch).
set -euo pipefail
BIN=$1
DATA=$2
OUT=$3
DOCS=${DOCS:-25000000}
RATE=${RATE:-20000}
ROWS=${ROWS:-3}
LENGTH=${LENGTH:-45}
LAYOUTS=${LAYOUTS:-1}
SERVER_CPUS=${SERVER_CPUS:-0-11}
LOADGEN_CPUS=${LOADGEN_CPUS:-12-15}
source "$(dirname "$0")/server_common.sh"
mkdir -p "$OUT"
trap cleanup EXIT
for seed in 1 2; do
  if [[ ! -f "$OUT/index$seed/manifest.bin" ]]; then
    "$BIN/tandem-index" synth --docs "$DOCS" --termstats "$DATA/wikipedia-termstats.tsv.gz" \
      --doclengths "$DATA/wikipedia-doclengths.tsv" --queries "$DATA/trec05-efficiency.txt" \
      --vocabulary query-terms --postings-per-doc 240 --seed "$seed" \
      --output "$OUT/index$seed" > /dev/null
  fi
  if [[ $LAYOUTS == 1 && ! -f "$OUT/index$seed/gpu_layouts.bin" ]]; then
    "$BIN/tandem-index" gpu-layouts "$OUT/index$seed" > /dev/null
  fi
done
head -5000 "$DATA/trec05-efficiency.txt" > "$OUT/queries.txt"
taskset -c "$SERVER_CPUS" "$BIN/tandem-server" --index "$OUT/index1" --listen 127.0.0.1:50081 \
  --metrics-listen "" > "$OUT/server.log" 2>&1 &
PIDS+=($!)
wait_listening "$OUT/server.log" "${PIDS[0]}"
loadgen() {
  taskset -c "$LOADGEN_CPUS" "$BIN/tandem-loadgen" --server 127.0.0.1:50081 \
    --queries "$OUT/queries.txt" --query-format colon --mode and --k 10 --shuffle --channels 4 \
    --cq-threads 4 --transport stream "$@"
}
loadgen --rate "$RATE" --duration 10 --warmup 0 > /dev/null
for row in $(seq "$ROWS"); do
  loadgen --rate "$RATE" --duration "$LENGTH" --warmup 1 --seed "$row" \
    --json-out "$OUT/base$row.json" > /dev/null
  target=$OUT/index$((row % 2 + 1))
  loadgen --rate "$RATE" --duration "$LENGTH" --warmup 1 --seed "$row" \
    --json-out "$OUT/switch$row.json" > /dev/null &
  gen=$!
  sleep 3
  "$BIN/tandem-cli" --server 127.0.0.1:50081 --json load-index "$target" > "$OUT/load$row.json"
  wait "$gen"
done
# Correctness: the same queries on the node's GPU and CPU engines, after the last switch.
head -1000 "$DATA/trec05-efficiency.txt" > "$OUT/check.txt"
for engine in gpu cpu; do
  "$BIN/tandem-cli" --server 127.0.0.1:50081 --json --mode and --k 10 --engine "$engine" \
    --timeout 60s batch "$OUT/check.txt" > "$OUT/answers-$engine.json" || true
done
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
python3 - "$OUT" "$ROWS" "$RATE" "$LENGTH" "$DOCS" "${GPU:-none}" "$(nproc)" "$LAYOUTS" <<'EOF'
import json, statistics, sys, datetime, platform
out, rows, rate, length, docs, gpu, cores, layouts = sys.argv[1:9]
rows = int(rows)

def row(path):
    r = json.load(open(path))["rows"][0]
    failed = sum(n for code, n in r["status_counts"].items() if code != "OK")
    return {"sent": r["sent"], "failed": failed, "achieved_qps": r["achieved_qps"],
            "p50_ms": r["latency_ms"]["p50"], "p99_ms": r["latency_ms"]["p99"],
            "max_ms": r["latency_ms"]["max"], "status_counts": r["status_counts"]}

def hits(path):
    answers = []
    for line in open(path):
        line = line.strip()
        if line:
            a = json.loads(line)
            if "response" not in a:
                answers.append(None)  # the query failed
                continue
            answers.append([(h.get("external_id"), h.get("score"))
                            for h in a["response"].get("hits", [])])
    return answers

pairs = []
for i in range(1, rows + 1):
    load = json.load(open(f"{out}/load{i}.json"))
    pairs.append({"baseline": row(f"{out}/base{i}.json"), "switch": row(f"{out}/switch{i}.json"),
                  "load_index": load})
gpu_answers, cpu_answers = hits(f"{out}/answers-gpu.json"), hits(f"{out}/answers-cpu.json")
ratios = [p["switch"]["p99_ms"] / p["baseline"]["p99_ms"] for p in pairs if p["baseline"]["p99_ms"] > 0]
result = {
    "benchmark": "index_switch",
    "machine": {"host": platform.node(), "cores": int(cores), "gpu": gpu},
    "gpu": None if gpu == "none" else gpu,
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "protocol": (f"GOV2-like synth index of {docs} documents switched to a second build (seed 2) "
                 f"and back with tandem-cli load-index under an open-loop Poisson load of {rate} "
                 f"AND top-10 q/s over SearchStream (TREC 2005 efficiency queries, shuffled); "
                 f"{rows} pairs of {length} s rows (baseline, then a row with the switch 2 s in); "
                 "server on 12 cores, load generator on 4; "
                 + ("lists warmed from stored GPU layouts; " if layouts == "1" else
                    "no stored GPU layouts (warming transcodes); ")
                 + "answers of the GPU and CPU engines compared on 1,000 queries after the last "
                 "switch"),
    "rows": pairs,
    "failed_queries_in_switch_rows": sum(p["switch"]["failed"] for p in pairs),
    "failed_queries_in_baseline_rows": sum(p["baseline"]["failed"] for p in pairs),
    "p99_ratio_switch_to_baseline_median": statistics.median(ratios) if ratios else None,
    "answers_compared": len(gpu_answers),
    "answers_with_hits": sum(1 for a in cpu_answers if a),
    "answers_equal_to_cpu_engine": (len(gpu_answers) > 0 and None not in gpu_answers
                                    and gpu_answers == cpu_answers),
}
json.dump(result, open(f"{out}/index_switch.json", "w"), indent=1)
print(f"{'row':>4} {'base p99':>9} {'switch p99':>11} {'switch max':>11} {'failed':>7} "
      f"{'open s':>7} {'warm s':>7} {'warmed':>7}")
for i, p in enumerate(pairs, 1):
    l = p["load_index"]
    print(f"{i:>4} {p['baseline']['p99_ms']:>9.2f} {p['switch']['p99_ms']:>11.2f} "
          f"{p['switch']['max_ms']:>11.2f} {p['switch']['failed']:>7} {l['open_seconds']:>7.2f} "
          f"{l['warm_seconds']:>7.2f} {l['lists_warmed']:>7}")
print(f"failed queries in switch rows: {result['failed_queries_in_switch_rows']}; "
      f"p99 switch/baseline (median): {result['p99_ratio_switch_to_baseline_median']}; "
      f"GPU answers equal to the CPU engine's: {'yes' if result['answers_equal_to_cpu_engine'] else 'NO'} "
      f"({len(gpu_answers)} queries)")
EOF
