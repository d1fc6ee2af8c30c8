#!/usr/bin/env bash
# Configures and builds Tandem into ./build (Release with debug info). CUDA code is compiled when
# nvcc is found (PATH or /usr/local/cuda), as CI must; pass -DTANDEM_ENABLE_GPU=OFF to skip it.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
JOBS=${JOBS:-$(nproc)}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j "$JOBS"
