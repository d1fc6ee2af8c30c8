#!/usr/bin/env bash
# Builds Tandem's Debian package with CPack's DEB generator (cmake/packaging.cmake): the programs,
# the hardened systemd unit, /etc/default/tandem-server and the docs, with runtime dependencies
# computed by dpkg-shlibdeps. A build of its own in build-package/ (prefix /usr, no tests or
# benchmarks; ccache, when installed, shares objects with build/). Prints the .deb's path.
#   ./deploy/package.sh && ./deploy/package-test.sh build-package/packages/tandem_*.deb
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build-package"
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
launchers=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
  launchers=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
command -v dpkg-shlibdeps >/dev/null 2>&1 || {
  echo "package: dpkg-shlibdeps is missing (apt install dpkg-dev)" >&2
  exit 1
}
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DTANDEM_BUILD_TESTS=OFF -DTANDEM_BUILD_BENCH=OFF "${launchers[@]}" >/dev/null
cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target tandem-server tandem-index tandem-cli \
  tandem-train-cost
rm -rf "$BUILD/packages"
(cd "$BUILD" && cpack -G DEB >/dev/null)
deb=$(ls "$BUILD"/packages/*.deb)
dpkg-deb -f "$deb" Package Version Installed-Size Depends
echo "$deb"
