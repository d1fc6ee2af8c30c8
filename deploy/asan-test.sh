#!/usr/bin/env bash
# Builds the tests with AddressSanitizer (LeakSanitizer included) and UndefinedBehaviorSanitizer
# into build-asan/ (TANDEM_ASAN; CPU only, no benchmarks) and runs ctest there; end-to-end tests run
# the instrumented tandem-server and tandem-cli. Any sanitizer report fails its test: UBSan halts on
# the first error, ASan on any bad access, LSan on a leak at exit (a server drained by SIGTERM must
# exit 0, so its leaks fail the lifecycle tests). LSan needs no suppressions: the uninstrumented
# system libraries (gRPC, protobuf, abseil, ICU) leak nothing it reports.
#
#   ./deploy/asan-test.sh                 # every test
#   ./deploy/asan-test.sh -R IndexTest    # arguments go to ctest
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build-asan"
JOBS="${JOBS:-2}"

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_ASAN=ON \
  -DTANDEM_ENABLE_GPU=OFF -DTANDEM_BUILD_BENCH=OFF >/dev/null
ninja -C "$BUILD" -j"$JOBS"

export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
cd "$BUILD"
# Instrumented code runs a few times slower: a test gets three times the time deploy/test.sh gives.
# A test that fails runs once more, and fails the run if it fails again: the end-to-end tests time
# several instrumented servers on as few as two cores. Every failure stays in the output.
ctest --output-on-failure -j "$JOBS" --timeout 1800 --repeat until-pass:2 "$@"
