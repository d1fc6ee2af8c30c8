#!/usr/bin/env bash
# One command on the GPU machine for the scheduler's measurements: unpacks the bundle, builds the
# 25M-document index and trains the cost model once (bench/figure7.sh with no configurations; kept
# in /tmp between commands on the same machine, about 80 s on an H100 machine otherwise), then
# runs the probes and the Figure 7 sweeps named in the environment and leaves their output under
# $OUT in few files.
#
# On the build machine: build and pack (the bundle is git-ignored, like .gpu-carry/):
#   deploy/gpu-bundle.sh build/tools/tandem-server build/tools/tandem-index \
#     build/bench/tandem-loadgen build/tools/tandem-train-cost -- \
#     ../shared/data/stats/wikipedia-termstats.tsv.gz ../shared/data/stats/wikipedia-doclengths.tsv \
#     ../shared/data/queries/trec05-efficiency.txt
#   mkdir -p .gpu-carry && tar czf .gpu-carry/bundle.tgz .gpu-bundle   # copy .gpu-carry over
# On the GPU machine (extra server binaries in .gpu-bundle/bin can be probe variants):
#   PROBES="a=tandem-server:--gpu-threads,8 b=tandem-server:--gpu-threads,8,--threads,4|and:auto@32000"
#   F7_CONFIGS="gpu hybrid hybrid4 cpu serial" MODES=and RATES_and="1000 2000 ..." bench/device_run.sh
#
#   PROBES: "VARIANTS|LOADS" groups separated by ";;" (bench/hybrid_probe.sh's VARIANTS and LOADS);
#   PROBE_BUDGET, F7_BUDGET: seconds each may run (timeout); DURATION: seconds per probe load.
#   RPC_CEILING=1: last, bench/rpc_ceiling.sh (the front end's ceiling, unary and stream) into
#   rpc_ceiling.txt. TRANSPORT, STREAMS: the load generator's transport for probes and sweeps.
# Writes $OUT/device.txt, setup.txt, cost_model.json, probe.txt (everything the probes printed) and
# f7.tgz (the sweep's loadgen JSON, metrics and model: unpack it and run bench/figure7.py on it).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUNDLE=${BUNDLE:-.gpu-carry/bundle.tgz}
[[ -d /tmp/tandem-bundle/.gpu-bundle ]] ||
  { mkdir -p /tmp/tandem-bundle && tar xzf "$BUNDLE" -C /tmp/tandem-bundle; }
export LD_LIBRARY_PATH=/tmp/tandem-bundle/.gpu-bundle/lib
B=/tmp/tandem-bundle/.gpu-bundle/bin
D=/tmp/tandem-bundle/.gpu-bundle/data
M=/tmp/f7model
INDEX=/tmp/gov2like
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
nproc >> "$OUT/device.txt"
t0=$(date +%s)
if [[ ! -f $M/cost_model.txt ]]; then
  CONFIGS="" INDEX=$INDEX bench/figure7.sh "$B" "$D" "$M" > "$OUT/setup.txt" 2>&1
  echo "setup took $(($(date +%s) - t0)) s" >> "$OUT/setup.txt"
fi
cp "$M/cost_model.json" "$OUT/" 2>/dev/null
n=0
IFS=';' read -ra groups <<< "${PROBES:-}"
for group in "${groups[@]}"; do
  [[ -z $group ]] && continue
  n=$((n + 1))
  VARIANTS=${group%%|*} LOADS=${group#*|} INDEX=$INDEX DURATION=${DURATION:-5} \
    timeout "${PROBE_BUDGET:-400}" bench/hybrid_probe.sh "$B" "$D" "$M" "/tmp/probe$n" 2>&1 |
    tee -a "$OUT/probe.txt" | grep -E "rate=|^=="
done
if [[ -n ${F7_CONFIGS:-} ]]; then
  rm -rf /tmp/f7run && mkdir -p /tmp/f7run && cp "$M"/cost_model.* "$M"/eval-queries.txt /tmp/f7run/
  CONFIGS=$F7_CONFIGS INDEX=$INDEX timeout "${F7_BUDGET:-400}" bench/figure7.sh "$B" "$D" /tmp/f7run 2>&1 |
    tee "$OUT/f7.txt" | grep -E "^(and|or) "
  (cd /tmp/f7run && tar czf "$OUT/f7.tgz" ./*.json metrics_* cost_model.txt 2>/dev/null)
fi
if [[ -n ${RPC_CEILING:-} ]]; then
  timeout "${CEILING_BUDGET:-240}" bench/rpc_ceiling.sh "$B" "$D" /tmp/rpc_ceiling 2>&1 |
    tee "$OUT/rpc_ceiling.txt"
fi
echo "total $(($(date +%s) - t0)) s"
