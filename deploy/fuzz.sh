#!/usr/bin/env bash
# Builds the libFuzzer targets into build-fuzz/ (clang, AddressSanitizer + UndefinedBehaviorSanitizer,
# CPU only; fuzz/CMakeLists.txt and tandem_add_fuzzer) and runs each one for a bounded time on a
# copy of its seed corpus in a scratch directory, so fuzz/corpus/ stays as checked in. Prints a
# table per target; exits 1 on any finding (crash, sanitizer report, broken invariant, leak,
# timeout, out of memory) and prints the input that caused it, kept under build-fuzz/findings/.
#
#   ./deploy/fuzz.sh                          # every target, 30 s each
#   ./deploy/fuzz.sh --seconds 300 --target analyzer --target reader_trec
#   ./deploy/fuzz.sh --runs 10000000 --record bench/results/fuzz_executions_cpu.json
#
# --runs N runs each target until N inputs instead of for a time. --record FILE writes JSON: date,
# commit, machine, clang and, per target, executions, seconds and findings.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build-fuzz"
SECONDS_EACH=30
RUNS=0
RECORD=""
TARGETS=()
JOBS="${JOBS:-2}"
RSS_LIMIT_MB=2048
INPUT_TIMEOUT_S=10

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while (($# > 0)); do
  case "$1" in
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --target) TARGETS+=("$2"); shift 2 ;;
    --record) RECORD="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "fuzz: unknown argument $1" >&2; usage ;;
  esac
done
[[ "$SECONDS_EACH" =~ ^[0-9]+$ && "$RUNS" =~ ^[0-9]+$ ]] || usage
if [[ -n "$RECORD" && "$RECORD" != /* ]]; then RECORD="$PWD/$RECORD"; fi

CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTANDEM_FUZZ=ON -DTANDEM_ENABLE_GPU=OFF -DTANDEM_BUILD_BENCH=OFF >/dev/null
ninja -C "$BUILD" -j"$JOBS" fuzzers

# Fuzzers that read files get a scratch directory on tmpfs where there is one.
if [[ -d /dev/shm && -w /dev/shm ]]; then SCRATCH_BASE=/dev/shm; else SCRATCH_BASE="${TMPDIR:-/tmp}"; fi
SCRATCH="$(mktemp -d "$SCRATCH_BASE/tandem-fuzz.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT

mapfile -t LINES < "$BUILD/fuzzers.tsv"
selected=()
for line in "${LINES[@]}"; do
  [[ -z "$line" ]] && continue
  name="${line%%$'\t'*}"
  if ((${#TARGETS[@]} == 0)) || [[ " ${TARGETS[*]} " == *" $name "* ]]; then selected+=("$line"); fi
done
for t in "${TARGETS[@]}"; do
  if ! printf '%s\n' "${LINES[@]}" | cut -f1 | grep -qx "$t"; then
    echo "fuzz: no target $t (known: $(cut -f1 "$BUILD/fuzzers.tsv" | tr '\n' ' '))" >&2
    exit 2
  fi
done

RESULTS="$SCRATCH/results.tsv"
: > "$RESULTS"
failed=0
if ((RUNS > 0)); then limit="$RUNS runs"; else limit="${SECONDS_EACH} s"; fi
echo "fuzz: ${#selected[@]} targets, $limit each, scratch $SCRATCH"
for line in "${selected[@]}"; do
  IFS=$'\t' read -r name binary corpus max_len dict <<< "$line"
  work="$SCRATCH/$name"
  findings="$BUILD/findings/$name"
  rm -rf "$findings"
  mkdir -p "$work/corpus" "$work/tmp" "$findings"
  if [[ -d "$corpus" ]]; then cp -r "$corpus/." "$work/corpus/"; fi
  args=(-max_len="$max_len" -rss_limit_mb="$RSS_LIMIT_MB" -timeout="$INPUT_TIMEOUT_S"
        -print_final_stats=1 -artifact_prefix="$findings/")
  if ((RUNS > 0)); then args+=(-runs="$RUNS"); else args+=(-max_total_time="$SECONDS_EACH"); fi
  if [[ -n "$dict" ]]; then args+=(-dict="$dict"); fi
  start=$(date +%s.%N)
  rc=0
  UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}" TMPDIR="$work/tmp" "$binary" "${args[@]}" "$work/corpus" > "$work/log" 2>&1 || rc=$?
  end=$(date +%s.%N)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | tail -1 | grep -o '[0-9]*$' || true)
  cov=$(grep -o ' cov: [0-9]*' "$work/log" | tail -1 | grep -o '[0-9]*$' || true)
  artifacts=$(find "$findings" -type f ! -name 'slow-unit-*' | sort)
  count=$(printf '%s' "$artifacts" | grep -c . || true)
  if ((rc != 0 && count == 0)); then count=1; fi  # died without saving an input (start-up)
  if ((count > 0)); then
    failed=1
    cp "$work/log" "$findings/log.txt"
    echo "fuzz: FINDING in $name (exit $rc); log $findings/log.txt" >&2
    grep -E 'ERROR:|invariant failed|runtime error|SUMMARY' "$work/log" | head -5 >&2 || true
    for a in $artifacts; do echo "fuzz: input $a" >&2; done
  else
    rm -rf "$findings"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "${execs:-0}" "$start" "$end" "${cov:-0}" "$count" \
    >> "$RESULTS"
  echo "fuzz: $name: ${execs:-0} executions, cov ${cov:-0}, $count findings"
done

python3 - "$RESULTS" "$RECORD" "$ROOT" "$SECONDS_EACH" "$RUNS" <<'EOF'
import datetime, json, os, subprocess, sys
results, record, root, seconds_each, runs = sys.argv[1:6]
rows = []
for line in open(results):
    name, execs, start, end, cov, findings = line.rstrip("\n").split("\t")
    secs = float(end) - float(start)
    rows.append({"target": name, "executions": int(execs), "seconds": round(secs, 1),
                 "exec_per_second": round(int(execs) / secs) if secs > 0 else 0,
                 "coverage": int(cov), "findings": int(findings)})
print(f"{'target':<22}{'executions':>14}{'seconds':>10}{'exec/s':>10}{'cov':>8}{'findings':>10}")
for r in rows:
    print(f"{r['target']:<22}{r['executions']:>14,}{r['seconds']:>10.1f}{r['exec_per_second']:>10,}"
          f"{r['coverage']:>8}{r['findings']:>10}")
if record:
    def run(*cmd):
        return subprocess.run(cmd, capture_output=True, text=True, cwd=root).stdout.strip()
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                  if l.startswith("model name")), "unknown")
    data = {
        "benchmark": "fuzz_executions",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": run("git", "rev-parse", "HEAD"),
        "tree_clean": run("git", "status", "--porcelain", "--untracked-files=no") == "",
        "machine": {"cpu": model, "cores": os.cpu_count()},
        "clang": run("clang++", "--version").splitlines()[0],
        "limit": {"runs": int(runs)} if int(runs) > 0 else {"seconds": int(seconds_each)},
        "sanitizers": "address,undefined",
        "targets": rows,
    }
    os.makedirs(os.path.dirname(record) or ".", exist_ok=True)
    with open(record, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    print(f"fuzz: wrote {record}")
EOF
exit "$failed"
