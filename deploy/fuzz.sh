#!/usr/bin/env bash
# Builds the libFuzzer targets into build-fuzz/ (clang, AddressSanitizer + UndefinedBehaviorSanitizer,
# CPU only; fuzz/CMakeLists.txt and tandem_add_fuzzer) and runs each one for a bounded time on a
# copy of its seed corpus in a scratch directory, so fuzz/corpus/ stays as checked in. Prints a
# table per target; exits 1 on any finding (crash, sanitizer report, broken invariant, leak,
# timeout, out of memory) and prints the input that caused it, kept under build-fuzz/findings/.
#
#   ./deploy/fuzz.sh                          # every target, 30 s each
#   ./deploy/fuzz.sh --seconds 300 --target analyzer --target reader_trec
#   ./deploy/fuzz.sh --runs 10000000 --results h200x4 --append
#   ./deploy/fuzz.sh --bin-dir DIR --parallel 18 --workers 2 --workers query_parser=8 --seconds 600
#
# --runs N runs each target until N inputs instead of for a time (with --seconds too, until
# whichever comes first). --record FILE writes JSON: date, commit, machine, clang and, per
# target, executions, seconds and findings. --parallel P runs P
# targets at once; --workers W runs each target as W libFuzzer processes that share its corpus
# (libFuzzer reloads it), splitting the runs between them, and --workers NAME=W sets it for one
# target. --bin-dir DIR runs binaries built elsewhere (DIR holds the *_fuzzer binaries and their
# fuzzers.tsv) instead of building. --append adds this campaign to the campaigns already in the
# --record file and totals the executions of every target over the campaigns that found nothing
# in it. --results KIND stores the record in bench/results/fuzz_executions.json under runs.KIND (a
# machine kind: dev, h100, h200x4, ...); with --append and no --record, the campaigns so far come
# from there.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build-fuzz"
SECONDS_EACH=30
RUNS=0
RECORD=""
RESULTS_KIND=""
TARGETS=()
SECONDS_SET=0
BIN_DIR=""
PARALLEL=1
WORKERS=1
declare -A TARGET_WORKERS=()
APPEND=0
JOBS="${JOBS:-2}"
RSS_LIMIT_MB=2048
INPUT_TIMEOUT_S=10

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while (($# > 0)); do
  case "$1" in
    --seconds) SECONDS_EACH="$2"; SECONDS_SET=1; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --target) TARGETS+=("$2"); shift 2 ;;
    --record) RECORD="$2"; shift 2 ;;
    --results) RESULTS_KIND="$2"; shift 2 ;;
    --bin-dir) BIN_DIR="$(cd "$2" && pwd)"; shift 2 ;;
    --parallel) PARALLEL="$2"; shift 2 ;;
    --workers)
      if [[ "$2" == *=* ]]; then TARGET_WORKERS["${2%%=*}"]="${2#*=}"; else WORKERS="$2"; fi
      shift 2 ;;
    --append) APPEND=1; shift ;;
    -h|--help) usage ;;
    *) echo "fuzz: unknown argument $1" >&2; usage ;;
  esac
done
[[ "$SECONDS_EACH" =~ ^[0-9]+$ && "$RUNS" =~ ^[0-9]+$ ]] || usage
[[ "$PARALLEL" =~ ^[1-9][0-9]*$ && "$WORKERS" =~ ^[1-9][0-9]*$ ]] || usage
for w in "${TARGET_WORKERS[@]}"; do [[ "$w" =~ ^[1-9][0-9]*$ ]] || usage; done
if [[ -n "$RECORD" && "$RECORD" != /* ]]; then RECORD="$PWD/$RECORD"; fi
if [[ -n "$RESULTS_KIND" && -z "$RECORD" ]]; then RECORD="$(mktemp -u /tmp/fuzz-record.XXXXXX.json)"; fi

if [[ -z "$BIN_DIR" ]]; then
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTANDEM_FUZZ=ON -DTANDEM_ENABLE_GPU=OFF -DTANDEM_BUILD_BENCH=OFF >/dev/null
  ninja -C "$BUILD" -j"$JOBS" fuzzers
  TSV="$BUILD/fuzzers.tsv"
else
  TSV="$BIN_DIR/fuzzers.tsv"
  [[ -f "$TSV" ]] || { echo "fuzz: no fuzzers.tsv in $BIN_DIR" >&2; exit 2; }
fi
# The list holds the binary relative to the build folder and the corpus and dictionary relative
# to the source root.
resolve_binary() { if [[ -n "$BIN_DIR" ]]; then echo "$BIN_DIR/${1##*/}"; else echo "$BUILD/$1"; fi; }
resolve_source() { if [[ -z "$1" || "$1" == /* ]]; then echo "$1"; else echo "$ROOT/$1"; fi; }

# Fuzzers that read files get a scratch directory on tmpfs where there is one.
if [[ -d /dev/shm && -w /dev/shm ]]; then SCRATCH_BASE=/dev/shm; else SCRATCH_BASE="${TMPDIR:-/tmp}"; fi
SCRATCH="$(mktemp -d "$SCRATCH_BASE/tandem-fuzz.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT

mapfile -t LINES < "$TSV"
selected=()
for line in "${LINES[@]}"; do
  [[ -z "$line" ]] && continue
  name="${line%%$'\t'*}"
  if ((${#TARGETS[@]} == 0)) || [[ " ${TARGETS[*]} " == *" $name "* ]]; then selected+=("$line"); fi
done
for t in "${TARGETS[@]}"; do
  if ! printf '%s\n' "${LINES[@]}" | cut -f1 | grep -qx "$t"; then
    echo "fuzz: no target $t (known: $(cut -f1 "$TSV" | tr '\n' ' '))" >&2
    exit 2
  fi
done

RESULTS="$SCRATCH/results.tsv"
: > "$RESULTS"
if ((RUNS > 0)); then limit="$RUNS runs"; else limit="${SECONDS_EACH} s"; fi
echo "fuzz: ${#selected[@]} targets, $limit each, $PARALLEL at once, $WORKERS processes each," \
  "scratch $SCRATCH"

# Runs one target (its fuzzers.tsv line) and appends its row to $RESULTS; returns 1 on a finding.
run_target() {
  local name binary corpus max_len dict
  IFS=$'\t' read -r name binary corpus max_len dict <<< "$1"
  binary="$(resolve_binary "$binary")"
  corpus="$(resolve_source "$corpus")"
  dict="$(resolve_source "$dict")"
  local work="$SCRATCH/$name" findings="$BUILD/findings/$name"
  local workers="${TARGET_WORKERS[$name]:-$WORKERS}"
  rm -rf "$findings"
  mkdir -p "$work/corpus" "$work/tmp" "$findings"
  if [[ -d "$corpus" ]]; then cp -r "$corpus/." "$work/corpus/"; fi
  local args=(-max_len="$max_len" -rss_limit_mb="$RSS_LIMIT_MB" -timeout="$INPUT_TIMEOUT_S"
              -print_final_stats=1 -artifact_prefix="$findings/")
  if ((RUNS > 0)); then
    args+=(-runs="$(((RUNS + workers - 1) / workers))")
    if ((SECONDS_SET)); then args+=(-max_total_time="$SECONDS_EACH"); fi
  else
    args+=(-max_total_time="$SECONDS_EACH")
  fi
  if [[ -n "$dict" ]]; then args+=(-dict="$dict"); fi
  local start end rc=0 pids=() w
  start=$(date +%s.%N)
  for ((w = 0; w < workers; ++w)); do
    UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}" TMPDIR="$work/tmp" \
      "$binary" "${args[@]}" -seed="$((w + 1))" "$work/corpus" > "$work/log.$w" 2>&1 &
    pids+=($!)
  done
  for w in "${pids[@]}"; do wait "$w" || rc=$?; done
  end=$(date +%s.%N)
  local execs=0 cov=0 e c
  for ((w = 0; w < workers; ++w)); do
    e=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log.$w" | tail -1 |
        grep -o '[0-9]*$' || true)
    c=$(grep -o ' cov: [0-9]*' "$work/log.$w" | tail -1 | grep -o '[0-9]*$' || true)
    execs=$((execs + ${e:-0}))
    if ((${c:-0} > cov)); then cov=${c:-0}; fi
  done
  local artifacts count
  artifacts=$(find "$findings" -type f ! -name 'slow-unit-*' | sort)
  count=$(printf '%s' "$artifacts" | grep -c . || true)
  if ((rc != 0 && count == 0)); then count=1; fi  # died without saving an input (start-up)
  if ((count > 0)); then
    cat "$work"/log.* > "$findings/log.txt"
    echo "fuzz: FINDING in $name (exit $rc); log $findings/log.txt" >&2
    grep -E 'ERROR:|invariant failed|runtime error|SUMMARY' "$findings/log.txt" | head -5 >&2 || true
    for a in $artifacts; do echo "fuzz: input $a" >&2; done
  else
    rm -rf "$findings"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$execs" "$start" "$end" "$cov" "$count" \
    "$workers" >> "$RESULTS"
  echo "fuzz: $name: $execs executions, cov $cov, $count findings"
  ((count == 0))
}

failed=0
running=0
for line in "${selected[@]}"; do
  if ((running >= PARALLEL)); then
    wait -n || failed=1
    running=$((running - 1))
  fi
  run_target "$line" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done

FIRST_BINARY="$(resolve_binary "$(cut -f2 <<< "${selected[0]}")")"
python3 - "$RESULTS" "$RECORD" "$ROOT" "$SECONDS_EACH" "$RUNS" "$PARALLEL" "$WORKERS" \
  "$FIRST_BINARY" "$TSV" "$SECONDS_SET" "$APPEND" "$RESULTS_KIND" <<'EOF'
import datetime, json, os, subprocess, sys
(results, record, root, seconds_each, runs, parallel, workers, binary, tsv, seconds_set,
 append, results_kind) = sys.argv[1:13]
order = [line.split("\t", 1)[0] for line in open(tsv) if line.strip()]
rows = []
for line in open(results):
    name, execs, start, end, cov, findings, processes = line.rstrip("\n").split("\t")
    secs = float(end) - float(start)
    rows.append({"target": name, "executions": int(execs), "seconds": round(secs, 1),
                 "exec_per_second": round(int(execs) / secs) if secs > 0 else 0,
                 "coverage": int(cov), "findings": int(findings), "processes": int(processes)})
rows.sort(key=lambda r: order.index(r["target"]))
print(f"{'target':<22}{'executions':>14}{'seconds':>10}{'exec/s':>10}{'cov':>8}{'findings':>10}")
for r in rows:
    print(f"{r['target']:<22}{r['executions']:>14,}{r['seconds']:>10.1f}{r['exec_per_second']:>10,}"
          f"{r['coverage']:>8}{r['findings']:>10}")
if record:
    def run(*cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=root).stdout.strip()
        except OSError:
            return ""
    # The compiler as the binaries record it, so that binaries built elsewhere report their own.
    clang = next((l.split("]", 1)[-1].strip() for l in run("readelf", "-p", ".comment", binary)
                  .splitlines() if "clang version" in l), "") or run("clang++", "--version")
    # TANDEM_COMMIT names the commit of binaries built elsewhere (--bin-dir).
    commit = os.environ.get("TANDEM_COMMIT") or run("git", "rev-parse", "HEAD") or "unknown"
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                  if l.startswith("model name")), "unknown")
    campaign = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit,
        "machine": {"cpu": model, "cores": os.cpu_count()},
        "clang": clang.splitlines()[0] if clang else "unknown",
        "limit": ({"runs": int(runs)} if int(runs) > 0 else {}) |
                 ({"seconds": int(seconds_each)} if int(runs) == 0 or seconds_set == "1" else {}),
        "targets_at_once": int(parallel),
        "sanitizers": "address,undefined",
        "targets": rows,
    }
    campaigns = []
    sys.path.insert(0, os.path.join(root, "bench"))
    if append == "1" and os.path.exists(record):
        campaigns = json.load(open(record)).get("campaigns", [])
    elif append == "1" and results_kind:  # the campaigns recorded in bench/results so far
        import results_store
        run = results_store.load("fuzz_executions").get("runs", {}).get(
            results_store.kind_key(results_kind), {})
        campaigns = run.get("campaigns", [])
    campaigns.append(campaign)
    totals = {}
    for c in campaigns:
        for r in c["targets"]:
            t = totals.setdefault(r["target"], {"target": r["target"], "executions": 0,
                                                "findings": 0})
            # A campaign that found something in a target is fixed and run again: its
            # executions do not count toward the target's total.
            if r["findings"] == 0:
                t["executions"] += r["executions"]
            t["findings"] += r["findings"]
    data = {"benchmark": "fuzz_executions", "campaigns": campaigns,
            "totals": sorted(totals.values(), key=lambda t: t["executions"])}
    if len(campaigns) > 1:
        print(f"{'target':<22}{'total executions':>18}  (over {len(campaigns)} campaigns)")
        for t in data["totals"]:
            print(f"{t['target']:<22}{t['executions']:>18,}")
    os.makedirs(os.path.dirname(record) or ".", exist_ok=True)
    with open(record, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    print(f"fuzz: wrote {record}")
    if results_kind:
        import results_store
        results_store.merge(
            "fuzz_executions", results_kind, data, gpu="none", commit=commit[:12],
            produced_by="`deploy/fuzz.sh --results KIND`",
            date=campaign["date"], machine=f"{model}, {os.cpu_count()} cores",
            protocol=f"deploy/fuzz.sh, {len(campaigns)} campaign(s), {int(parallel)} targets at "
                     f"once, " + (f"{int(runs):,} runs" if int(runs) > 0 else
                                  f"{int(seconds_each)} s") + " per target")
        results_store.regenerate_readme()
        print(f"fuzz: recorded in bench/results/fuzz_executions.json as runs."
              f"{results_store.kind_key(results_kind)}")
EOF
exit "$failed"
