#!/usr/bin/env bash
# Installs Tandem's Debian package into a clean Debian 12 root made with debootstrap, as a new
# machine would get it, and checks that:
#   - apt resolves every dependency the package declares from the Debian archive;
#   - tandem-index builds an index into /var/lib/tandem/index;
#   - tandem-server serves it (the unit's command line, run in the root) and tandem-cli gets
#     SERVING and the right hits;
#   - the unit passes `systemd-analyze verify`, and `systemd-analyze security` rates it below 2.0
#     ("OK").
# Needs root (debootstrap, chroot) and the Debian archive this machine's apt uses. Run:
#   ./deploy/package.sh && sudo ./deploy/package-test.sh build-package/packages/tandem_*.deb
set -euo pipefail
if (($# != 1)) || [[ "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  (($# == 1)) && exit 0 || exit 2
fi
DEB="$(realpath "$1")"
[[ -f "$DEB" ]] || { echo "package-test: no such package: $1" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "package-test: needs root (debootstrap, chroot)" >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive
for tool in debootstrap systemd-analyze; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    apt-get install -y -qq --no-install-recommends "$([[ $tool == debootstrap ]] && echo debootstrap || echo systemd)" >/dev/null
  fi
done

# The Debian archive this machine's apt uses (deb822 .sources first, then sources.list).
MIRROR="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
if [[ -z "$MIRROR" ]]; then
  MIRROR="$(awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
fi
[[ -n "$MIRROR" ]] || { echo "package-test: no Debian archive in this machine's apt sources" >&2; exit 1; }

ROOTFS="$(mktemp -d /var/tmp/tandem-package-test.XXXXXX)"
chmod 755 "$ROOTFS"  # apt's _apt user reads its lists through it
SERVER_PID=""
cleanup() {
  [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null || true
  umount "$ROOTFS/proc" 2>/dev/null || true
  rm -rf "$ROOTFS"
}
trap cleanup EXIT
in_root() { chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }

echo "package-test: debootstrap bookworm from $MIRROR into $ROOTFS"
debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >/tmp/tandem-debootstrap.log 2>&1 || {
  tail -20 /tmp/tandem-debootstrap.log >&2
  exit 1
}
mount -t proc proc "$ROOTFS/proc"
cp "$DEB" "$ROOTFS/tmp/tandem.deb"
echo "package-test: apt install ./$(basename "$DEB")"
in_root apt-get update -qq
in_root apt-get install -y -qq --no-install-recommends /tmp/tandem.deb >/tmp/tandem-apt.log 2>&1 || {
  tail -20 /tmp/tandem-apt.log >&2
  exit 1
}
in_root tandem-server --version

echo "package-test: build an index and serve it"
printf 'black bear\nsalmon river\nbrown bear\nriver otter\n' > "$ROOTFS/tmp/docs.txt"
in_root tandem-index build --input /tmp/docs.txt --format lines --output /var/lib/tandem/index \
  --quiet
PORT=$((20000 + RANDOM % 20000))
METRICS_PORT=$((PORT + 1))
in_root tandem-server --index /var/lib/tandem/index --listen "127.0.0.1:$PORT" \
  --metrics-listen "127.0.0.1:$METRICS_PORT" >"$ROOTFS/tmp/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
  if in_root tandem-cli --server "127.0.0.1:$PORT" health >/dev/null 2>&1; then break; fi
  sleep 0.2
done
health="$(in_root tandem-cli --server "127.0.0.1:$PORT" health || true)"
hits="$(in_root tandem-cli --server "127.0.0.1:$PORT" search --json bear |
  grep -o '"external_id": *"[^"]*"' | grep -o '"[0-9]*"$' | tr -d '"' | sort | tr '\n' ' ')"
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
failed=0
if [[ "$health" != "SERVING" ]]; then
  echo "package-test: FAIL: health '$health'"; cat "$ROOTFS/tmp/server.log"; failed=1
fi
if [[ "$hits" != "1 3 " ]]; then
  echo "package-test: FAIL: 'bear' found '$hits', expected 1 3"; failed=1
else
  echo "package-test: health $health; 'bear' found documents $hits"
fi

echo "package-test: the unit"
UNIT=tandem-server.service
if ! systemd-analyze verify --root="$ROOTFS" "$UNIT" 2>&1 | tee /tmp/tandem-verify.log |
    grep -v -e 'Cannot add dependency job' -e 'Failed to load' -e '^$' | grep -q .; then
  echo "package-test: systemd-analyze verify: no findings"
else
  echo "package-test: FAIL: systemd-analyze verify:"; cat /tmp/tandem-verify.log; failed=1
fi
exposure="$(systemd-analyze security --offline=true --root="$ROOTFS" "$UNIT" 2>/dev/null |
  grep 'Overall exposure level' | grep -o '[0-9][0-9]*\.[0-9]' | head -1 || true)"
echo "package-test: systemd-analyze security: exposure $exposure"
if [[ -z "$exposure" ]] || ! awk -v e="$exposure" 'BEGIN {exit !(e < 2.0)}'; then
  echo "package-test: FAIL: exposure '$exposure', want below 2.0"; failed=1
fi
((failed == 0)) && echo "package-test: ok: installed from the archive, served, queried; unit exposure $exposure"
exit "$failed"
