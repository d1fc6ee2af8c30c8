#!/usr/bin/env bash
# The CPU engine's measurements on a many-core host (the GPU machine's 16-core host), in steps that
# can run separately: later steps reuse /tmp/cpu-host from earlier ones on the same machine.
#
# On the build machine: pack the CPU binaries with the data files, and the text collections:
#   deploy/gpu-bundle.sh build/tools/tandem-index build/bench/tandem-bench-query \
#     build/bench/tandem-bench-build build/bench/codec_bench /usr/bin/perf -- \
#     ../shared/data/stats/wikipedia-termstats.tsv.gz ../shared/data/stats/wikipedia-doclengths.tsv \
#     ../shared/data/queries/trec05-efficiency.txt
#   mkdir -p .gpu-carry && tar cf - .gpu-bundle | xz -T0 > .gpu-carry/bundle.tar.xz
#   tar cf - -C ../shared/data/text wikipedia reuters21578 | xz -T0 > .gpu-carry/text.tar.xz
#   cp ../shared/tools/pisa/pisa-69f2a83-x86-64-v3.tgz .gpu-carry/
# On the host: STEPS="build codec wikipedia synth-prepare" bench/cpu_host_run.sh, then
#   STEPS="synth-latency-10", then STEPS="synth-latency-1000 synth-throughput synth-decode", and
#   STEPS="synth-profile wikipedia-profile" (perf, Debian's linux-perf, packed with the binaries).
#
# Steps:
#   build: tandem-bench-build on Wikipedia and Reuters-21578 at 1, 2, 4, 8 and all threads, the
#     faster of two builds each (index_build.json), then the same Wikipedia text built by tandem-index on all threads beside
#     PISA's parse_collection (plain text, one document a line, its id first; Porter2 stemming, as
#     Tandem's) and compress_inverted_index on the same threads (build_vs_pisa.txt).
#   codec: codec_bench's DecodeDocids on the synthetic gap shapes and on the Wikipedia index's lists,
#     one thread (codec.json).
#   wikipedia, synth-prepare, synth-latency-K, synth-throughput, synth-decode:
#     bench/pisa_side_by_side.sh's phases (side_wikipedia.tgz, side_synth.tgz: its JSON, log and
#     raw outputs; the profile steps add profile-ALGORITHM-kK.txt). POSTINGS_MEMORY=huge-pages
#     gives Tandem its postings in huge pages there.
#   synth-memory-throughput, synth-memory-latency: Tandem alone on the prepared 25M index, its
#     postings mapped and copied into huge pages (--postings-memory), ROUNDS rounds (2) of the two
#     back to back: MaxScore top-10 on all cores, or the six latency rows at k 10 on one
#     (memory_throughput.tgz, memory_latency.tgz: tandem-bench-query's JSON of each run; with
#     perf, its TLB-miss counts where the host's CPU exposes them).
# Writes under $OUT: host.txt (the CPU, and every step's log) and the files named above.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
: "${OUT:?OUT names the directory for the results}"
H=/tmp/cpu-host
mkdir -p "$H"
# Each archive is unpacked once, when it first comes: a run may carry only the ones its steps need
# (the three together are close to what one run can carry).
unpack() {  # ARCHIVE WHAT_IT_MAKES
  [[ -e $H/$2 || ! -f $1 ]] && return 0
  case "$1" in
    *.xz) xz -dc "$1" | tar xf - -C "$H" ;;
    *.tgz) tar xzf "$1" -C "$H" ;;
  esac || { echo "cpu_host_run.sh: cannot unpack $1" >&2; exit 1; }
}
unpack .gpu-carry/bundle.tar.xz .gpu-bundle
unpack .gpu-carry/text.tar.xz wikipedia
unpack .gpu-carry/pisa-69f2a83-x86-64-v3.tgz device-bundle
for need in .gpu-bundle device-bundle; do
  [[ -e $H/$need ]] || { echo "cpu_host_run.sh: $need not carried (.gpu-carry)" >&2; exit 1; }
done
export LD_LIBRARY_PATH=$H/.gpu-bundle/lib
B=$H/.gpu-bundle/bin
D=$H/.gpu-bundle/data
P=$H/device-bundle/bin
N=$(nproc)
LOG=$OUT/host.txt
{ lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|L3"; nvidia-smi -L 2>/dev/null; } >>"$LOG"
has_step() { [[ " ${STEPS:-} " == *" $1 "* ]]; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

for s in build codec wikipedia; do
  if has_step $s && [[ ! -d $H/wikipedia ]]; then
    echo "cpu_host_run.sh: step $s needs the text collections (.gpu-carry/text.tar.xz)" >&2
    exit 1
  fi
done

if has_step build; then
  counts=1,2,4,8
  ((N > 8)) && counts+=,$N
  timeout 240 "$B/tandem-bench-build" --threads "$counts" --repeat 2 --json "$OUT/index_build.json" \
    --collection "wikipedia:wikiextractor:$H/wikipedia,reuters:reuters:$H/reuters21578" 2>&1 |
    tee -a "$LOG"
  {
    echo "== Wikipedia text, $N threads: tandem-index build --codec simdbp beside PISA"
    t0=$(date +%s.%N)
    "$B/tandem-index" build --input "$H/wikipedia" --format wikiextractor --codec simdbp \
      --threads "$N" --output "$H/wiki-idx" --quiet >/dev/null && echo "tandem-index build: $(elapsed "$t0") s"
    python3 - "$H/wikipedia" >"$H/wiki.txt" <<'EOF'
import os, re, sys
# WikiExtractor <doc> records as PISA's plaintext format: one document a line, its id first.
head = re.compile(r'<doc id="([^"]*)"')
for name in sorted(os.listdir(sys.argv[1])):
    doc, body = None, []
    for line in open(os.path.join(sys.argv[1], name), encoding="utf-8", errors="replace"):
        if doc is None:
            m = head.match(line)
            if m:
                doc, body = m.group(1), []
        elif line.startswith("</doc>"):
            sys.stdout.write(doc + " " + " ".join(l.strip() for l in body) + "\n")
            doc = None
        else:
            body.append(line)
EOF
    # Batches of documents small enough for every thread to get several (PISA's default, 100,000
    # documents, would leave Wikipedia's 6,514 to one thread).
    batch=$((6514 / (4 * N) + 1))
    t0=$(date +%s.%N)
    "$P/parse_collection" -j "$N" -b "$batch" -f plaintext -F lowercase porter2 -o "$H/pisa-fwd" \
      <"$H/wiki.txt" >/dev/null 2>&1 && echo "PISA parse_collection -j $N -b $batch: $(elapsed "$t0") s"
    "$B/tandem-index" export --format pisa "$H/wiki-idx" "$H/wiki-coll" >/dev/null
    t0=$(date +%s.%N)
    "$P/compress_inverted_index" -c "$H/wiki-coll" -o "$H/wiki.block_simdbp" -e block_simdbp \
      >/dev/null 2>&1 && echo "PISA compress_inverted_index (block_simdbp): $(elapsed "$t0") s"
    echo "PISA's invert is not in its prebuilt bundle: its parse + compress is a lower bound"
  } 2>&1 | tee "$OUT/build_vs_pisa.txt" >>"$LOG"
fi

if has_step codec; then
  [[ -d $H/wiki-idx ]] || "$B/tandem-index" build --input "$H/wikipedia" --format wikiextractor \
    --codec simdbp --output "$H/wiki-idx" --quiet >/dev/null
  timeout 200 taskset -c $((N - 1)) "$B/codec_bench" --index="$H/wiki-idx" \
    --benchmark_filter='DecodeDocids' --benchmark_min_time=0.2 \
    --benchmark_out="$OUT/codec.json" --benchmark_out_format=json 2>&1 | tee -a "$LOG"
fi

side() {  # WORKLOAD PHASES [VAR=VALUE...]
  local w=$1 phases=$2
  shift 2
  env "$@" bench/pisa_side_by_side.sh --pisa "$H/device-bundle" --bin "$B" --data "$D" \
    --out "$H/side-out" --work "$H/side" --docs 25000000 --wikipedia-index "$H/wiki-idx" \
    --workloads "$w" --phases "$phases" 2>&1 | tee -a "$LOG"
  (cd "$H" && tar czf "$OUT/side_$w.tgz" side-out \
    $(find side/"$w" -maxdepth 1 \( -name '*.json' -o -name '*.tsv' -o -name 'queries-*' -o -name 'decode-*' -o -name 'profile-*' \)))
}
if has_step wikipedia; then
  [[ -d $H/wiki-idx ]] || "$B/tandem-index" build --input "$H/wikipedia" --format wikiextractor \
    --codec simdbp --output "$H/wiki-idx" --quiet >/dev/null
  side wikipedia "prepare latency throughput" CODEC=simdbp RUNS=2 LAT_ROUNDS=3
fi
has_step synth-prepare && side synth prepare CODEC=simdbp
# Each algorithm by PISA and then by Tandem (one round: the index prepared and this step took under
# 8 minutes together on the H200 host).
has_step synth-latency-10 && side synth latency LAT_KS=10 RUNS=1 LAT_ROUNDS=1
# About 8 minutes on the H200 host with 10 verified queries a row (PISA 220 s, Tandem 240 s); with
# the default 50, longer than one 10-minute run.
has_step synth-latency-1000 && side synth latency LAT_KS=1000 RUNS=1 VERIFY=10
has_step synth-throughput && side synth throughput
has_step synth-decode && side synth decode RUNS=3
has_step synth-profile && side synth profile LAT_KS=10 PERF="$B/perf"
has_step wikipedia-profile && side wikipedia profile LAT_KS=10 PERF="$B/perf"

# memory WHAT: Tandem's runs of WHAT (throughput or latency) in both postings memories, round by
# round, on the index and queries the synth workload's prepare made.
memory() {
  local what=$1 W=$H/side/synth M=$H/memory-$1 r m
  [[ -s $W/queries-10000.txt ]] || { echo "cpu_host_run.sh: synth-memory-$what needs synth-prepare" >&2; return 1; }
  rm -rf "$M" && mkdir -p "$M"
  echo "== THP $(cat /sys/kernel/mm/transparent_hugepage/enabled), defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag)" | tee -a "$LOG"
  local perf=()
  if [[ -x $B/perf ]] && "$B/perf" stat -e dTLB-load-misses true >/dev/null 2>&1; then
    perf=("$B/perf" stat -x, -e dTLB-load-misses,dTLB-loads,iTLB-load-misses)
  else
    echo "perf: no TLB counters on this host" | tee -a "$LOG"
  fi
  local run=(--index "$W/idx" --queries "$D/trec05-efficiency.txt" --known_terms_only
    --timed_from term-ids --warmup_passes 1 --verify 10)
  for ((r = 1; r <= ${ROUNDS:-2}; r++)); do
    for m in mapped huge-pages; do
      sync
      if [[ $what == throughput ]]; then
        "${perf[@]}" ${perf:+-o "$M/perf-$m-r$r.txt"} "$B/tandem-bench-query" "${run[@]}" \
          --postings_memory "$m" --max_queries 10000 --modes or --ks 10 --or_algorithms maxscore \
          --and_block_max on --threads "$N" --pin_threads --latency=false --runs 3 \
          --json "$M/$m-r$r.json" 2>&1 | tee -a "$LOG"
      else
        "${perf[@]}" ${perf:+-o "$M/perf-$m-r$r.txt"} taskset -c $((N - 1)) "$B/tandem-bench-query" \
          "${run[@]}" --postings_memory "$m" --max_queries 1000 --modes and,or --ks 10 \
          --or_algorithms maxscore,block-max-maxscore,wand,block-max-wand --and_block_max on,off \
          --threads 1 --throughput=false --runs 1 --json "$M/$m-r$r.json" 2>&1 | tee -a "$LOG"
      fi
      [[ -s $M/perf-$m-r$r.txt ]] && tee -a "$LOG" <"$M/perf-$m-r$r.txt" >/dev/null
    done
  done
  # One line a run: its huge pages, and the rates (throughput) or each row's mean ms (latency).
  python3 - "$M" <<'EOF' | tee -a "$LOG"
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*-r*.json")), key=lambda p: (p[-7:], p)):
    j = json.load(open(path))
    huge = (j["index"].get("postings_huge_page_bytes") or 0) / 2**20
    line = f"{os.path.basename(path)[:-5]:16} {huge:8.0f} MiB huge |"
    for r in j["results"]:
        if r.get("qps_summed_over_threads") is not None:
            line += f" summed {r['qps_summed_over_threads']:8.0f} q/s, wall {r['qps_all_threads']:8.0f} q/s"
        else:
            name = r["or_algorithm"] or ("block-max-and" if r["and_block_max"] else "ranked-and")
            line += f" {name} {1e3 * r['latency_seconds']['mean']:.3f}"
    print(line)
EOF
  (cd "$H" && tar czf "$OUT/memory_$what.tgz" "memory-$what")
}
has_step synth-memory-throughput && memory throughput
has_step synth-memory-latency && memory latency
exit 0
