#!/usr/bin/env bash
# Checks that no source file outside the tests is over 600 lines (../shared/STYLE.md: files of
# about 100-300 lines, one role each; a file past 600 is split by role). Tests (*_test.*,
# *_test_util.h, tests/) may be longer: a table of cases reads best in one place.
set -uo pipefail
cd "$(dirname "$0")/.."
LIMIT=600
long=$(git ls-files '*.h' '*.cc' '*.cu' '*.cuh' '*.py' '*.sh' |
  grep -v -E '(_test\.[a-z]+|_test_util\.h)$|^tests/' |
  while read -r f; do
    n=$(wc -l <"$f")
    ((n > LIMIT)) && echo "$f: $n lines"
  done)
if [[ -n $long ]]; then
  echo "$long"
  echo "check-size: the files above are over $LIMIT lines: split them by role"
  exit 1
fi
echo "check-size: no source outside the tests is over $LIMIT lines"
