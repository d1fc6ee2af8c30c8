#!/usr/bin/env bash
# Packs built binaries, the non-system shared libraries they load (absl, ICU, gRPC, ...; the GPU
# machine has none of them) and optional data files into .gpu-bundle (git-ignored), to be copied to
# the GPU machine (64 MiB at most). There:
#   export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib; .gpu-bundle/bin/tandem-index ...
# Usage: deploy/gpu-bundle.sh BINARY... [-- DATA_FILE...]
set -euo pipefail
if (($# == 0)) || [[ "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
  (($# == 0)) && exit 2 || exit 0
fi
cd "$(dirname "$0")/.."
OUT=.gpu-bundle
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/data"
bins=()
data=()
target=bins
for a in "$@"; do
  if [[ "$a" == "--" ]]; then target=data; continue; fi
  if [[ $target == bins ]]; then bins+=("$a"); else data+=("$a"); fi
done
for b in "${bins[@]}"; do
  cp "$b" "$OUT/bin/"
  strip --strip-debug "$OUT/bin/$(basename "$b")" 2>/dev/null || true
  # libc, libm, the loader and the driver's libraries come from the GPU machine itself.
  ldd "$b" | awk '/=> \//{print $3}' |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libcuda|libnvidia[^/]*)\.so' |
    while read -r lib; do cp -nL "$lib" "$OUT/lib/"; done
done
for d in "${data[@]}"; do cp "$d" "$OUT/data/"; done
strip --strip-debug "$OUT"/lib/*.so* 2>/dev/null || true
du -sh "$OUT"
