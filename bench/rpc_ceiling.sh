#!/usr/bin/env bash
# The server's own ceiling: open-loop Poisson load of queries that do no engine work (one term the
# index lacks, so every query passes gRPC, admission, the scheduler and an engine call, and returns
# no hits), pinned to the CPU, pinned to the GPU and routed by the hybrid scheduler. Whatever rate
# this cannot sustain, no scheduling of real queries can. Each engine is driven by a Search call per
# query (--transport unary) and over SearchStream calls (--transport stream, 16 per channel), as a
# broker keeping streams to its shards would send them. Run on the GPU machine:
#
#   bench/rpc_ceiling.sh BIN_DIR DATA_DIR OUT_DIR
#   BIN_DIR: tandem-index, tandem-server, tandem-loadgen; DATA_DIR: as for bench/figure7.sh
set -euo pipefail
BIN=$1
DATA=$2
OUT=$3
GPU=${GPU:-required}
RATES=${RATES:-10000,20000,30000,40000,60000}
STREAM_RATES=${STREAM_RATES:-40000,50000,60000,70000,80000,90000}
mkdir -p "$OUT"
"$BIN/tandem-index" synth --docs 1000000 --termstats "$DATA/wikipedia-termstats.tsv.gz" \
  --doclengths "$DATA/wikipedia-doclengths.tsv" --queries "$DATA/trec05-efficiency.txt" \
  --vocabulary query-terms --postings-per-doc 240 --seed 1 --output "$OUT/index" > /dev/null
printf '1:zzqqxv\n' > "$OUT/absent.txt"
"$BIN/tandem-server" --index "$OUT/index" --listen 127.0.0.1:50072 --metrics-listen "" \
  --threads 12 --gpu "$GPU" --queue-capacity 100000 > "$OUT/server.log" 2>&1 &
SERVER_PID=$!
trap 'kill -TERM "$SERVER_PID" 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "listening on" "$OUT/server.log" && break; sleep 0.3; done
run() {
  "$BIN/tandem-loadgen" --server 127.0.0.1:50072 --queries "$OUT/absent.txt" --query-format colon \
    --mode and --k 10 --rates "$RATES" --duration 3 --warmup 1 --timeout 2 "$@" |
    grep -E "^rate" | sed "s/^/$* /"
}
engines="cpu auto"
[[ $GPU == off ]] || engines="cpu gpu auto"
for engine in $engines; do run --engine "$engine" --channels 4 --cq-threads 4; done
run --engine cpu --channels 8 --cq-threads 8
for engine in $engines; do
  RATES=$STREAM_RATES run --engine "$engine" --channels 4 --transport stream --streams 16
done
