# Sourced by the benchmarks that run PISA (github.com/pisa-engine/pisa) beside Tandem. PISA is not a
# dependency of Tandem: it is given as its prebuilt bundle (../shared/tools/pisa/*.tgz or its
# unpacked device-bundle/) or any PISA build directory, and nothing is ever downloaded.
#
#   find_pisa PISA WORK TOOL...   # sets PBIN (the directory of PISA's programs) and PISA_COMMIT
#
# A .tgz is unpacked under WORK/pisa once. Stops (through the caller's die) when PISA is missing or
# lacks one of the TOOLs.
find_pisa() {
  local pisa=$1 work=$2 t
  shift 2
  [[ -n "$pisa" ]] || die "--pisa is required: PISA's prebuilt bundle (../shared/tools/pisa/*.tgz) or a PISA build directory"
  [[ -e "$pisa" ]] || die "no PISA at '$pisa': give the prebuilt bundle or a PISA build directory (nothing is downloaded)"
  if [[ -f "$pisa" ]]; then
    mkdir -p "$work/pisa"
    [[ -d "$work/pisa/device-bundle" ]] || tar xzf "$pisa" -C "$work/pisa"
    pisa=$work/pisa/device-bundle
  fi
  PBIN=$pisa
  [[ -x "$PBIN/$1" ]] || PBIN=$pisa/bin
  for t in "$@"; do
    [[ -x "$PBIN/$t" ]] || die "PISA's $t is not in '$pisa' or its bin/"
  done
  PISA_COMMIT=$(sed -n 's/.*\([0-9a-f]\{40\}\).*/\1/p' "$pisa/BUILDINFO.txt" 2>/dev/null | head -1)
  [[ -n "$PISA_COMMIT" ]] || PISA_COMMIT=$(git -C "$pisa/.." rev-parse HEAD 2>/dev/null || echo unknown)
}
