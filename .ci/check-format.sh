#!/usr/bin/env bash
# Checks that every C++ and CUDA file is formatted as .clang-format says (Debian 12's
# clang-format 14). Fix with: git ls-files '*.h' '*.cc' '*.cu' '*.cuh' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git ls-files '*.h' '*.cc' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror 2>/tmp/tandem-format.log; then
  grep "error:" /tmp/tandem-format.log | cut -d: -f1,2 | sort -u | head -50
  echo "check-format: the files above are not clang-formatted (see the fix in $0)"
  exit 1
fi
echo "check-format: $(git ls-files '*.h' '*.cc' '*.cu' '*.cuh' | wc -l) files formatted"
