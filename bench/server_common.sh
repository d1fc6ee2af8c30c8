# Sourced by the benchmark scripts that start tandem-server (bench/figure7.sh,
# bench/hybrid_probe.sh).

# wait_listening LOG PID: until the server writes its "listening on" line (up to 5 minutes: a large
# index and the GPU engine take a while); prints the log and exits 1 when the server dies first.
wait_listening() {
  for _ in $(seq 600); do
    grep -q "listening on" "$1" && return 0
    kill -0 "$2" 2>/dev/null || { cat "$1"; exit 1; }
    sleep 0.5
  done
}

# warm_device_cache BIN ADDRESS QUERIES: every query of QUERIES (id:text lines) once on the GPU, so
# that measured rows find the index lists in the device cache.
warm_device_cache() {
  "$1/tandem-loadgen" --server "$2" --queries "$3" --query-format colon --mode and --engine gpu \
    --concurrency 4 --num-queries 1000 --warmup 0 > /dev/null
}

# gov2like_index BIN DATA OUT DOCS: the GOV2-like index of bench/WORKLOADS.md with DOCS documents
# at OUT/index, unless INDEX names one already; its path in INDEX.
gov2like_index() {
  if [[ -n ${INDEX:-} ]]; then return 0; fi
  INDEX=$3/index
  "$1/tandem-index" synth --docs "$4" --termstats "$2/wikipedia-termstats.tsv.gz" \
    --doclengths "$2/wikipedia-doclengths.tsv" --queries "$2/trec05-efficiency.txt" \
    --vocabulary query-terms --postings-per-doc 240 --seed 1 --output "$INDEX" > /dev/null
}

# cleanup: stops the background children whose pids the caller added to PIDS (and set
# `trap cleanup EXIT`), and waits for them.
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
}
