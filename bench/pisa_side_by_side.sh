#!/usr/bin/env bash
# Tandem's CPU engine beside PISA (github.com/pisa-engine/pisa) on identical postings: each
# workload's Tandem index is exported as PISA's binary collection (tandem-index export --format
# pisa), compressed by PISA's compress_inverted_index (block_simdbp) with its WAND data (BM25 k1 0.9,
# b 0.4, as Tandem scores), and both engines run the same queries, term for term: tandem-bench-query
# writes the queries it measures (--known-terms-only: the index's terms, each once, as PISA's
# queries tool keeps them) and this script hands PISA the same terms by their ids.
#
#   bench/pisa_side_by_side.sh --pisa ../shared/tools/pisa/pisa-69f2a83-x86-64-v3.tgz --out DIR \
#     [--bin build] [--data ../shared/data] [--work /tmp/pisa-side] [--docs 25000000] \
#     [--wikipedia-index DIR] [--workloads "synth wikipedia"] [--phases "prepare latency throughput"]
#
# --pisa: PISA's prebuilt bundle (the .tgz or its unpacked device-bundle/) or any directory with
#   PISA's compress_inverted_index, create_wand_data and queries in it or in its bin/. PISA is not a
#   dependency of Tandem: nothing is downloaded, and the script stops when it is missing.
# --bin: the directory with tandem-index and tandem-bench-query (build/ or a bundle's bin/).
# --data: holds stats/wikipedia-termstats.tsv.gz, stats/wikipedia-doclengths.tsv and
#   queries/trec05-efficiency.txt, or the three files directly (a bundle's data/).
# Workloads: synth (tandem-index synth, the 25M-document GOV2-like model of bench/WORKLOADS.md) and
#   wikipedia (an index built from the WikiExtractor text with tandem-index build, given by
#   --wikipedia-index).
# Phases (later ones reuse --work): prepare (index, export, PISA's index, the query files), latency
#   (one thread pinned to the last core: ranked AND, block-max AND, MaxScore, block-max MaxScore,
#   WAND and block-max WAND at k 10 and 1,000 on the first LAT_QUERIES queries), throughput (MaxScore
#   top-10 on all cores: PISA as one single-threaded process per core, as PISA's own benchmark
#   does, then Tandem the same way (tandem-bench-query --share), each run twice (3 and 3 +
#   EXTRA_PASSES timed passes: the extra passes over the extra wall time are the rate with every
#   process at work), then Tandem as one process with a thread per core (each process and thread
#   pinned to its core), each with its round-robin share of the first TPUT_QUERIES queries, one
#   untimed and 3 timed passes; before that each engine alone on the last core, on as many of the
#   first queries as one share holds), decode (one thread pinned to the last core: each engine's cursor
#   reading whole lists, docIDs/s per core; the lists are
#   those of the latency queries' terms holding at least DECODE_MIN_POSTINGS postings, walked by
#   codec_bench's CursorWalk and by PISA's `or` and `or_freq` as one-term queries, RUNS passes),
#   profile (where Tandem's time goes: perf's cpu-clock samples of tandem-bench-query's latency
#   passes alone, one untimed and one timed, on the latency phase's core and queries, for each
#   PROFILE_ROWS entry; profile-ALGORITHM-kK.txt lists the symbols with 0.5% of the samples or more;
#   the entry throughput profiles the throughput phase's Tandem run, on all cores, in
#   profile-throughput.txt).
# Both engines measure latency the same way: one untimed pass over the queries, then RUNS timed
#   passes, each query once a pass, every pass's latencies summarized together. Both start a timed
#   query from its terms already looked up: PISA's queries tool reads term ids, and
#   tandem-bench-query --timed-from term-ids resolves every query before its timer starts. Both
#   record a query's time in whole microseconds, truncated: PISA's tool casts each time down to
#   microseconds, which lowers its mean by about half a microsecond a query (2-7% of a Wikipedia
#   query's 7-40 us), and tandem-bench-query --whole-microseconds records Tandem's the same way.
# Environment: LAT_QUERIES (1000), TPUT_QUERIES (10000), EXTRA_PASSES (6 for synth, 60 for
#   wikipedia), RUNS (timed passes of each engine in the latency and decode phases, 2),
#   LAT_KS (the latency phase's k values, "10 1000": a long run can be split by k), LAT_ROUNDS (unset:
#   PISA's six algorithms in one process, then Tandem's six rows in one; a count: each algorithm by
#   PISA and then by Tandem, round after round, every row's ratio the median of its rounds'), VERIFY (50:
#   queries each Tandem configuration checks against the reference scorer before the latency
#   passes; the exhaustive reference at 25M and k 1,000 takes longer than the timed passes),
#   THREADS (nproc), WAND_BLOCK (PISA's fixed block size for block maxima, 64, its benchmark's;
#   Tandem's blocks hold 128 postings), CODEC (the synthetic index's block codec: tandem-index's
#   default unless set), DECODE_MIN_POSTINGS (200000: PISA times a query in whole microseconds),
#   PROFILE_ROWS (ALGORITHM:K entries, PISA's algorithm names, and throughput; every algorithm at
#   each LAT_KS),
#   PERF (the perf binary, found on PATH unless set), TIMED_FROM (Tandem's --timed-from: term-ids,
#   or text to time its lexicon lookups too), POSTINGS_MEMORY (Tandem's --postings-memory: mapped,
#   as PISA maps its index, or huge-pages), QUERY_TIMES (whole-us, as PISA records them, or exact:
#   Tandem's times to the steady clock's resolution), RECORD (a machine kind: also store each
#   workload's summary in bench/results/cpu_vs_pisa.json as runs.KIND.parts.WORKLOAD).
# Writes under --out: side_by_side_WORKLOAD.json (bench/pisa_side_by_side.py's summary), the raw
#   PISA and Tandem outputs, and log.txt. Summarize again with
#   python3 bench/pisa_side_by_side.py --work WORK --out OUT; record a summary brought back from
#   another machine with bench/results_store.py merge --benchmark cpu_vs_pisa --machine KIND
#   --part WORKLOAD side_by_side_WORKLOAD.json.
set -euo pipefail
usage() { sed -n '2,68p' "$0" | sed 's/^# \{0,1\}//'; }
HERE=$(cd "$(dirname "$0")/.." && pwd)
PISA="" OUTDIR="" BIN="$HERE/build" DATA="$HERE/../shared/data" WORK=/tmp/pisa-side DOCS=25000000
WIKI_INDEX="" WORKLOADS="" PHASES="prepare latency throughput"
while (($#)); do
  case "$1" in
    --pisa) PISA=$2; shift 2 ;;
    --out) OUTDIR=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --docs) DOCS=$2; shift 2 ;;
    --wikipedia-index) WIKI_INDEX=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --phases) PHASES=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "pisa_side_by_side.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
die() { echo "pisa_side_by_side.sh: $*" >&2; exit 1; }
[[ -n "$OUTDIR" ]] || die "--out DIR is required"
[[ -z "$WORKLOADS" ]] && WORKLOADS="synth${WIKI_INDEX:+ wikipedia}"
LAT_QUERIES=${LAT_QUERIES:-1000}
TPUT_QUERIES=${TPUT_QUERIES:-10000}
[[ "${EXTRA_PASSES:-1}" =~ ^[1-9][0-9]*$ ]] ||
  die "EXTRA_PASSES must be a count of passes, 1 or more (got '$EXTRA_PASSES')"
RUNS=${RUNS:-2}
VERIFY=${VERIFY:-50}
[[ "$VERIFY" =~ ^[0-9]+$ ]] || die "VERIFY must be a count of queries (got '$VERIFY')"
LAT_KS=${LAT_KS:-10 1000}
LAT_ROUNDS=${LAT_ROUNDS:-}
[[ -z "$LAT_ROUNDS" || "$LAT_ROUNDS" =~ ^[1-9][0-9]*$ ]] ||
  die "LAT_ROUNDS must be a count of rounds, 1 or more (got '$LAT_ROUNDS')"
THREADS=${THREADS:-$(nproc)}
WAND_BLOCK=${WAND_BLOCK:-64}
DECODE_MIN_POSTINGS=${DECODE_MIN_POSTINGS:-200000}
TIMED_FROM=${TIMED_FROM:-term-ids}
# Tandem's flags in every run beside PISA: where its postings live, how its query times are
# recorded.
TFLAGS=(--postings_memory "${POSTINGS_MEMORY:-mapped}")
case "${QUERY_TIMES:-whole-us}" in
  whole-us) TFLAGS+=(--whole_microseconds) ;;
  exact) ;;
  *) die "QUERY_TIMES takes whole-us or exact (got '$QUERY_TIMES')" ;;
esac
mkdir -p "$OUTDIR" "$WORK"
OUTDIR=$(cd "$OUTDIR" && pwd)
LOG=$OUTDIR/log.txt
has_phase() { [[ " $PHASES " == *" $1 "* ]]; }
# Before each timed phase: write back what prepare (gigabytes of index) left dirty, so that the
# kernel's writeback does not run beside the timing. Right after prepare on the 16-core host, PISA
# alone on one core ran its queries 24% slower than the same queries with all 16 cores busy, each
# of its passes faster than the one before (10.1, 9.7, 8.4 ms a query).
settle() { sync; sleep 2; }
say() { echo "$@" | tee -a "$LOG"; }

# PISA's binaries: an unpacked bundle, a .tgz of one, or a build directory.
source "$HERE/bench/pisa_tools.sh"
find_pisa "$PISA" "$WORK" queries compress_inverted_index create_wand_data
# Tandem's programs: directly in --bin (a bundle's bin/) or anywhere below it (a build directory).
tool() {
  local t
  if [[ -x "$BIN/$1" ]]; then t=$BIN/$1; else t=$(find "$BIN" -name "$1" -type f -perm -u+x 2>/dev/null | head -1); fi
  [[ -n "$t" ]] || die "no $1 under '$BIN' (--bin)"
  echo "$t"
}
TINDEX=$(tool tandem-index)
TBENCH=$(tool tandem-bench-query)
if has_phase decode; then TCODEC=$(tool codec_bench); fi
if has_phase profile; then
  PERF=${PERF:-$(command -v perf || true)}
  [[ -n "$PERF" && -x "$PERF" ]] || die "the profile phase needs perf (on PATH, or PERF=FILE)"
fi
datafile() {
  for p in "$DATA/$1" "$DATA/$(basename "$1")"; do [[ -r "$p" ]] && { echo "$p"; return; }; done
  die "no $(basename "$1") under '$DATA' (--data)"
}
QUERIES=$(datafile queries/trec05-efficiency.txt)
CORE=$((THREADS - 1))
pin() { if command -v taskset >/dev/null; then taskset -c "$CORE" "$@"; else "$@"; fi; }
BM25=(-s bm25 --bm25-k1 0.9 --bm25-b 0.4)
# tandem_row ALGORITHM [WHERE]: run=(tandem-bench-query's flags for PISA's algorithm ALGORITHM).
tandem_row() {
  case "$1" in
    ranked_and) run=(--modes and --and_block_max off) ;;
    block_max_ranked_and) run=(--modes and --and_block_max on) ;;
    maxscore | block_max_maxscore | wand | block_max_wand)
      run=(--modes or --or_algorithms "${1//_/-}" --and_block_max on) ;;
    *) die "${2:-tandem_row}: unknown algorithm '$1' (${PISA_ALGOS[*]}${2:+, or throughput})" ;;
  esac
}
PISA_ALGOS=(ranked_and block_max_ranked_and maxscore block_max_maxscore wand block_max_wand)
# processes ENGINE RUNS TAG: MaxScore top-10 by ENGINE (pisa or tandem) as THREADS single-threaded
# processes, process t pinned to core t with the throughput share t, one untimed and RUNS timed
# passes each; writes ENGINE-tput[-proc]TAG-t.{tsv,json} and, with the wall clock of them all,
# ENGINE-tput[-proc]TAG.json. Each Tandem process checks its first queries against the reference.
processes() {
  local engine=$1 runs=$2 tag=$3 i p t0 t1 out pids=()
  t0=$(date +%s.%N)
  for ((i = 0; i < THREADS; i++)); do
    if [[ "$engine" == pisa ]]; then
      out=$W/pisa-tput$tag
      taskset -c "$i" "$PBIN/queries" -e block_simdbp -i "$W/c.block_simdbp" -w "$W/c.wand" "${BM25[@]}" \
        -k 10 -a maxscore -q "$W/tput-part-$i" --runs "$runs" -o "$out-$i.tsv" >/dev/null 2>>"$LOG" &
    else
      out=$W/tandem-tput-proc$tag
      taskset -c "$i" "$TBENCH" --index "$W/idx" --queries "$QUERIES" --max_queries "$TPUT_QUERIES" \
        --known_terms_only --share "$i/$THREADS" --modes or --ks 10 --threads 1 --latency=false \
        --or_algorithms maxscore --and_block_max on --timed_from "$TIMED_FROM" "${TFLAGS[@]}" \
        --warmup_passes 1 --runs "$runs" --verify $(((VERIFY + THREADS - 1) / THREADS)) \
        --json "$out-$i.json" >>"$LOG" 2>&1 &
    fi
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "a $engine throughput process failed (log.txt)"; done
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v p="$THREADS" -v n=$((runs + 1)) \
    'BEGIN { printf "{\"wall_seconds\": %.3f, \"processes\": %d, \"passes\": %d}\n", b - a, p, n }' >"$out.json"
}
say "side by side: workloads '$WORKLOADS', phases '$PHASES', PISA $PISA_COMMIT, $THREADS threads, latency on core $CORE"

for w in $WORKLOADS; do
  W=$WORK/$w
  mkdir -p "$W"
  if has_phase prepare; then
    rm -rf "$W/idx"
    case "$w" in
      synth)
        "$TINDEX" synth --docs "$DOCS" --termstats "$(datafile stats/wikipedia-termstats.tsv.gz)" \
          --doclengths "$(datafile stats/wikipedia-doclengths.tsv)" --queries "$QUERIES" \
          --vocabulary query-terms --postings-per-doc 240 --seed 1 --threads "$THREADS" \
          ${CODEC:+--codec "$CODEC"} --output "$W/idx" --quiet | tee -a "$LOG"
        ;;
      wikipedia)
        [[ -n "$WIKI_INDEX" ]] || die "the wikipedia workload needs --wikipedia-index DIR"
        cp -r "$WIKI_INDEX" "$W/idx"
        ;;
      *) die "unknown workload '$w' (synth, wikipedia)" ;;
    esac
    # The uncompressed collection is 8 bytes per posting: in memory when it fits.
    C=$W/coll
    if [[ -d /dev/shm ]] && (($(df -Pk /dev/shm | awk 'NR == 2 { print $4 }') > 40000000)); then
      C=/dev/shm/pisa-side-$w
    fi
    mkdir -p "$C"
    t0=$(date +%s.%N)
    "$TINDEX" export --format pisa "$W/idx" "$C/c" | tee -a "$LOG"
    t1=$(date +%s.%N)
    "$PBIN/compress_inverted_index" -c "$C/c" -o "$W/c.block_simdbp" -e block_simdbp >>"$LOG" 2>&1
    t2=$(date +%s.%N)
    "$PBIN/create_wand_data" -c "$C/c" -o "$W/c.wand" "${BM25[@]}" -b "$WAND_BLOCK" >>"$LOG" 2>&1
    t3=$(date +%s.%N)
    cp "$C/c.terms" "$C/c.sizes" "$W/"
    rm -rf "$C/c.docs" "$C/c.freqs"
    [[ "$C" == "$W/coll" ]] || rm -rf "$C"
    awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" \
      'BEGIN { printf "{\"export_seconds\": %.2f, \"pisa_compress_seconds\": %.2f, \"pisa_wand_seconds\": %.2f}\n", b - a, c - b, d - c }' \
      >"$W/prepare.json"
    # The queries both engines run: written by tandem-bench-query, then as PISA's term ids (the
    # line number in c.terms, counted from 0).
    for n in "$LAT_QUERIES" "$TPUT_QUERIES"; do
      "$TBENCH" --index "$W/idx" --queries "$QUERIES" --max_queries "$n" --known_terms_only \
        --write_queries "$W/queries-$n.txt" --write_queries_only
      awk 'NR == FNR { id[$0] = NR - 1; next }
           { i = index($0, ":"); n = split(substr($0, i + 1), t, " "); s = ""
             for (j = 1; j <= n; ++j) { if (!(t[j] in id)) { print "unknown term " t[j] > "/dev/stderr"; exit 1 }
                                        s = s (j > 1 ? " " : "") id[t[j]] }
             print substr($0, 1, i) s }' "$W/c.terms" "$W/queries-$n.txt" >"$W/queries-$n.ids"
    done
    say "$w: prepared $(cat "$W/prepare.json")"
  fi
  [[ -s "$W/c.block_simdbp" ]] || die "no PISA index for $w in $W (run the prepare phase)"

  if has_phase latency; then
    settle
    # A k's figures of an earlier run in the other layout would be summarized beside these.
    for k in $LAT_KS; do
      if [[ -z "$LAT_ROUNDS" ]]; then
        rm -f "$W"/pisa-lat-k$k-r*-*.tsv "$W"/tandem-lat-k$k-r*-*.json
      else
        rm -f "$W/pisa-lat-k$k.tsv" "$W/pisa-lat-k$k.json" "$W/tandem-lat-k$k.json" "$W/tandem-lat-k$k.tsv"
      fi
    done
    if [[ -z "$LAT_ROUNDS" ]]; then
      A=()
      for a in "${PISA_ALGOS[@]}"; do A+=(-a "$a"); done
      for k in $LAT_KS; do
        pin "$PBIN/queries" -e block_simdbp -i "$W/c.block_simdbp" -w "$W/c.wand" "${BM25[@]}" -k "$k" \
          "${A[@]}" -q "$W/queries-$LAT_QUERIES.ids" --runs "$RUNS" -o "$W/pisa-lat-k$k.tsv" \
          >"$W/pisa-lat-k$k.json" 2>>"$LOG"
        pin "$TBENCH" --index "$W/idx" --queries "$QUERIES" --max_queries "$LAT_QUERIES" --known_terms_only \
          --modes and,or --ks "$k" --threads 1 --throughput=false \
          --or_algorithms maxscore,block-max-maxscore,wand,block-max-wand --and_block_max on,off \
          --timed_from "$TIMED_FROM" "${TFLAGS[@]}" --warmup_passes 1 --runs "$RUNS" --verify "$VERIFY" \
          --per_query "$W/tandem-lat-k$k.tsv" --json "$W/tandem-lat-k$k.json" | tee -a "$LOG"
      done
    else
      # Interleaved: each algorithm by PISA and then by Tandem, round after round, so that a host
      # whose speed drifts over minutes moves both engines' figures of a row alike.
      for k in $LAT_KS; do
        for ((r = 1; r <= LAT_ROUNDS; r++)); do
          for a in "${PISA_ALGOS[@]}"; do
            tandem_row "$a"
            pin "$PBIN/queries" -e block_simdbp -i "$W/c.block_simdbp" -w "$W/c.wand" "${BM25[@]}" -k "$k" \
              -a "$a" -q "$W/queries-$LAT_QUERIES.ids" --runs "$RUNS" -o "$W/pisa-lat-k$k-r$r-$a.tsv" \
              >/dev/null 2>>"$LOG"
            pin "$TBENCH" --index "$W/idx" --queries "$QUERIES" --max_queries "$LAT_QUERIES" --known_terms_only \
              "${run[@]}" --ks "$k" --threads 1 --throughput=false --timed_from "$TIMED_FROM" "${TFLAGS[@]}" \
              --warmup_passes 1 --runs "$RUNS" --verify "$( ((r == 1)) && echo "$VERIFY" || echo 0)" \
              --json "$W/tandem-lat-k$k-r$r-$a.json" >>"$LOG"
          done
          say "$w: latency at k $k, round $r of $LAT_ROUNDS"
        done
      done
    fi
  fi

  if has_phase throughput; then
    settle
    rm -f "$W"/tput-part-* "$W"/pisa-tput-* "$W"/tandem-tput-proc*
    awk -v p="$THREADS" -v d="$W" '{ print > (d "/tput-part-" ((NR - 1) % p)) }' "$W/queries-$TPUT_QUERIES.ids"
    # Each engine alone first, on the last core: the first share's worth of the same queries, the
    # same passes. A summed rate over this rate times the threads is how well an engine keeps its
    # speed with every core busy: the engine's own scaling, apart from how fast the host runs today.
    alone=$(((TPUT_QUERIES + THREADS - 1) / THREADS))
    head -n "$alone" "$W/queries-$TPUT_QUERIES.ids" >"$W/tput-alone.ids"
    pin "$PBIN/queries" -e block_simdbp -i "$W/c.block_simdbp" -w "$W/c.wand" "${BM25[@]}" \
      -k 10 -a maxscore -q "$W/tput-alone.ids" --runs 3 -o "$W/pisa-tput-alone.tsv" >/dev/null 2>>"$LOG"
    pin "$TBENCH" --index "$W/idx" --queries "$QUERIES" --max_queries "$alone" --known_terms_only \
      --modes or --ks 10 --threads 1 --latency=false --or_algorithms maxscore --and_block_max on \
      --timed_from "$TIMED_FROM" "${TFLAGS[@]}" --warmup_passes 1 --runs 3 --verify 0 --json "$W/tandem-tput-alone.json" | tee -a "$LOG"
    # Both engines as a single-threaded process per core, process t with share t on core t: PISA,
    # as its own benchmark runs, and Tandem the same way. Beside Tandem's threads in one process
    # below, Tandem's processes tell what the threads lose by sharing a process (its allocator, its
    # page tables, cache lines written by more than one) from what they lose to the host with every
    # core busy. Each engine's processes run twice, with 3 and with 3 + EXTRA_PASSES timed passes:
    # the extra passes' queries over the extra wall time are the rate with every process at work,
    # without the process starts, index loads and checks, and without the uneven starts that leave
    # some processes a less busy host for a while (which the summed rate of the shorter run counts).
    # A Wikipedia pass takes a hundredth of a 25M one: its extra passes are ten times as many, so
    # that they take seconds, not the spread of the processes' start times.
    extra=${EXTRA_PASSES:-$([[ $w == wikipedia ]] && echo 60 || echo 6)}
    processes pisa 3 ""
    processes pisa $((3 + extra)) -long
    processes tandem 3 ""
    processes tandem $((3 + extra)) -long
    "$TBENCH" --index "$W/idx" --queries "$QUERIES" --max_queries "$TPUT_QUERIES" --known_terms_only \
      --modes or --ks 10 --threads "$THREADS" --pin_threads --latency=false --or_algorithms maxscore \
      --and_block_max on --timed_from "$TIMED_FROM" "${TFLAGS[@]}" --warmup_passes 1 --runs 3 --json "$W/tandem-tput.json" | tee -a "$LOG"
  fi
  if has_phase decode; then
    settle
    # One-term queries of the long lists among the latency queries' terms, the same lists for both.
    cut -d: -f2- "$W/queries-$LAT_QUERIES.txt" | tr ' ' '\n' >"$W/decode-candidates.txt"
    pin "$TCODEC" --index="$W/idx" --walk_terms="$W/decode-candidates.txt" \
      --walk_min_postings="$DECODE_MIN_POSTINGS" --walk_written="$W/decode-terms.txt" \
      --benchmark_filter=CursorWalk --benchmark_repetitions="$RUNS" \
      --benchmark_out="$W/tandem-decode.json" --benchmark_out_format=json 2>>"$LOG" | tee -a "$LOG"
    # decode-terms.txt: term TAB postings, line i the query i (PISA's output names queries only).
    awk -F '\t' 'NR == FNR { id[$0] = NR - 1; next } { print FNR ":" id[$1] }' "$W/c.terms" \
      "$W/decode-terms.txt" >"$W/decode.ids"
    pin "$PBIN/queries" -e block_simdbp -i "$W/c.block_simdbp" -w "$W/c.wand" "${BM25[@]}" -k 10 \
      -a or -a or_freq -q "$W/decode.ids" --runs "$RUNS" -o "$W/pisa-decode.tsv" \
      >"$W/pisa-decode.json" 2>>"$LOG"
  fi
  if has_phase profile; then
    settle
    rows=${PROFILE_ROWS:-}
    if [[ -z "$rows" ]]; then
      for k in $LAT_KS; do for a in "${PISA_ALGOS[@]}"; do rows+=" $a:$k"; done; done
    fi
    for row in $rows; do
      if [[ "$row" == throughput ]]; then
        # The throughput phase's run: MaxScore top-10, a thread per core, its passes alone.
        name=throughput what="MaxScore top-10 on $THREADS threads, one untimed and 3 timed passes"
        run=(--modes or --or_algorithms maxscore --and_block_max on --ks 10 --threads "$THREADS"
          --latency=false --max_queries "$TPUT_QUERIES" --runs 3)
        on=()
      else
        IFS=: read -r algo k <<<"$row"
        tandem_row "$algo" "PROFILE_ROWS"
        [[ "$k" =~ ^[0-9]+$ ]] || die "PROFILE_ROWS: '$row' is not ALGORITHM:K or throughput"
        name=$algo-k$k what="$algo, k $k, one untimed and one timed pass"
        run+=(--ks "$k" --threads 1 --throughput=false --max_queries "$LAT_QUERIES" --runs 1)
        on=(pin)
      fi
      data=$W/perf-$name.data
      rm -f "$W/perf-ctl" "$W/perf-ack"
      mkfifo "$W/perf-ctl" "$W/perf-ack"
      # Recording starts disabled; tandem-bench-query enables it for its query passes only.
      "${on[@]}" "$PERF" record -q -e cpu-clock -F 4000 -D -1 --control "fifo:$W/perf-ctl,$W/perf-ack" \
        -o "$data" -- "$TBENCH" --index "$W/idx" --queries "$QUERIES" --known_terms_only "${run[@]}" \
        --verify 0 --timed_from "$TIMED_FROM" "${TFLAGS[@]}" --warmup_passes 1 \
        --perf_control "$W/perf-ctl,$W/perf-ack" >>"$LOG" 2>&1
      rm -f "$W/perf-ctl" "$W/perf-ack"
      {
        echo "# Tandem $what, $w: perf record -e cpu-clock"
        "$PERF" report -i "$data" --stdio --no-children --sort dso,symbol --percent-limit 0.5 2>/dev/null |
          awk '/^# Samples/ || (!/^#/ && NF)' | sed -E 's/[[:space:]]+(-[[:space:]]+)*$//'
      } >"$W/profile-$name.txt"
      rm -f "$data"
      say "$w: profile of $what in $W/profile-$name.txt"
    done
  fi
  python3 "$HERE/bench/pisa_side_by_side.py" --work "$W" --workload "$w" --pisa-commit "$PISA_COMMIT" \
    --wand-block "$WAND_BLOCK" --out "$OUTDIR/side_by_side_$w.json" ${RECORD:+--record "$RECORD"} |
    tee -a "$LOG"
done
