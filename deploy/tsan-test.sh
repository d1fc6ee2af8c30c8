#!/usr/bin/env bash
# Runs the scheduler, cost model and executor tests under ThreadSanitizer, in build-tsan/ (GPU off).
#
#   ./deploy/tsan-test.sh [ctest regex]     # default: the work-queue, cost-model and executor tests
#
# TSan sees synchronization only in instrumented code, and Debian's abseil is not instrumented: with
# it every absl::Mutex hand-off would be reported as a race. So the script first builds Debian's own
# abseil source (apt-get source, same version and options as libabsl-dev) with -fsanitize=thread into
# build-tsan/absl, once, and points the TANDEM_TSAN build at it. Suppressions: deploy/tsan.supp.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build-tsan"
TESTS="${1:-WorkQueuesTest|CostModelTest|PoolQueryExecutorTest|HybridQueryExecutor|Dispatcher}"
TARGETS=(work_queues_test cost_model_test pool_executor_test hybrid_executor_routing_test
         hybrid_executor_lifecycle_test dispatcher_test)
JOBS="${JOBS:-2}"

mkdir -p "$BUILD"
if [[ ! -f "$BUILD/absl/lib/cmake/absl/abslConfig.cmake" ]]; then
  if [[ ! -d "$BUILD/src" ]] || ! ls -d "$BUILD"/src/abseil-*/ >/dev/null 2>&1; then
    if ! grep -rqs "^Types:.*deb-src\|^deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
      echo "tsan-test: enabling Debian source packages (deb-src) to fetch abseil's source" >&2
      # The same archive, suites and keys as the machine's own binary sources.
      if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
        for f in /etc/apt/sources.list.d/*.sources; do
          sed 's/^Types:.*/Types: deb-src/' "$f"
          echo
        done > /tmp/tandem-deb-src.sources
        mv /tmp/tandem-deb-src.sources /etc/apt/sources.list.d/tandem-deb-src.sources
      else
        grep -h '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
          > /etc/apt/sources.list.d/tandem-deb-src.list
      fi
      apt-get update -qq
    fi
    mkdir -p "$BUILD/src"
    (cd "$BUILD/src" && apt-get source -qq abseil)
  fi
  ABSL_SRC="$(ls -d "$BUILD"/src/abseil-*/ | head -1)"
  cmake -S "$ABSL_SRC" -B "$BUILD/absl-build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DCMAKE_CXX_FLAGS=-fsanitize=thread -DBUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX="$BUILD/absl"
  ninja -C "$BUILD/absl-build" -j"$JOBS" install >/dev/null
fi

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DTANDEM_TSAN=ON -DTANDEM_ENABLE_GPU=OFF \
  -DTANDEM_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$BUILD/absl" \
  >/dev/null
ninja -C "$BUILD" -j"$JOBS" "${TARGETS[@]}"
export TSAN_OPTIONS="suppressions=$ROOT/deploy/tsan.supp ${TSAN_OPTIONS:-}"
cd "$BUILD" && ctest -R "$TESTS" --output-on-failure
