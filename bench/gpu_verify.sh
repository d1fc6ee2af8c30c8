#!/usr/bin/env bash
# The GPU machine's check of a change: unpacks the bundle (deploy/gpu-bundle.sh, packed into
# .gpu-carry/bundle.tgz with the GPU test binaries, tandem-index, tandem-bench-gpu-batch and the
# GOV2-like workload's files), runs every GPU test binary in it, then builds the 25M-document
# GOV2-like index (bench/WORKLOADS.md) and runs the batch benchmark over it, every answer checked
# against the CPU engine. Writes $OUT/tests.txt and $OUT/batch.txt (and batch.json).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
mkdir -p /tmp/tandem-bundle && tar xzf .gpu-carry/bundle.tgz -C /tmp/tandem-bundle
export LD_LIBRARY_PATH=/tmp/tandem-bundle/.gpu-bundle/lib
B=/tmp/tandem-bundle/.gpu-bundle/bin
D=/tmp/tandem-bundle/.gpu-bundle/data
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/tests.txt"
failed=0
for t in "$B"/*_test; do
  if "$t" --gtest_brief=1 >> "$OUT/tests.txt" 2>&1; then
    echo "PASS $(basename "$t")" | tee -a "$OUT/tests.txt"
  else
    echo "FAIL $(basename "$t")" | tee -a "$OUT/tests.txt"
    failed=1
  fi
done
"$B/tandem-index" synth --docs 25000000 --termstats "$D/wikipedia-termstats.tsv.gz" \
  --doclengths "$D/wikipedia-doclengths.tsv" --queries "$D/trec05-efficiency.txt" \
  --vocabulary query-terms --postings-per-doc 240 --seed 1 --output /tmp/gov2like --quiet \
  > "$OUT/batch.txt" 2>&1 || failed=1
"$B/tandem-bench-gpu-batch" --index /tmp/gov2like --queries "$D/trec05-efficiency.txt" \
  --k 10 --ranges hs16 --thresholds 16777216 --repeat 1 "$@" --json "$OUT/batch.json" \
  2>&1 | tee -a "$OUT/batch.txt" | tail -25 || failed=1
exit $failed
