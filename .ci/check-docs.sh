#!/usr/bin/env bash
# Checks the documents' shape: bench/results/ is data, one JSON per benchmark with a README
# generated from it (bench/results_readme.py --check: current, at most 30 files, every run with
# machine, gpu, commit, date and protocol); README.md is a short page for users (at most 1,200
# words, no line over 200 characters); ARCHITECTURE.md at most 2,000 words. Reports every failure.
set -uo pipefail
cd "$(dirname "$0")/.."
failed=0
fail() { echo "check-docs: $*"; failed=1; }

/usr/bin/python3 bench/results_readme.py --check || fail "bench/results/ (see above)"
/usr/bin/python3 tests/results_store_test.py -q 2>/tmp/tandem-results-test.log ||
  { cat /tmp/tandem-results-test.log; fail "tests/results_store_test.py"; }

words() { wc -w <"$1" | tr -d ' '; }
long_lines() {  # LIMIT FILE: the lines over LIMIT characters (not bytes), as "FILE:N: length L"
  /usr/bin/python3 - "$@" <<'PY'
import sys
limit, path = int(sys.argv[1]), sys.argv[2]
for n, line in enumerate(open(path, encoding="utf-8"), 1):
    if len(line.rstrip("\n")) > limit:
        print(f"{path}:{n}: {len(line.rstrip())} characters")
PY
}
check_words() {  # FILE LIMIT
  local n
  n=$(words "$1")
  ((n <= $2)) || fail "$1 has $n words, more than $2: move detail to the folder it describes"
}
check_words README.md 1200
check_words ARCHITECTURE.md 2000
long=$(long_lines 200 README.md)
[[ -z $long ]] || fail "README.md has lines over 200 characters:"$'\n'"$long"

((failed == 0)) && echo "check-docs: results README current; README.md $(words README.md) words," \
  "ARCHITECTURE.md $(words ARCHITECTURE.md) words"
exit "$failed"
