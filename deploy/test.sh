#!/usr/bin/env bash
# README command 2: installs what is needed, builds, runs every test. GPU tests (label "gpu") skip
# cleanly without a device; data-driven tests skip without ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/setup-debian.sh
./deploy/build.sh
cd build
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 600
