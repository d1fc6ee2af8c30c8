#!/usr/bin/env bash
# Checks the deployment files under deploy/ with the tools that read them:
#   prometheus  promtool check config, check rules, test rules (deploy/prometheus, prometheus.yml)
#   kubernetes  deploy/k8s/validate.sh: the manifests against the Kubernetes API's schemas
#   docker      dockerfile-utils lint deploy/docker/Dockerfile (no image is built)
#   nginx       nginx -t on deploy/nginx/nginx.conf
#   haproxy     haproxy -c on deploy/haproxy/haproxy.cfg
# Usage: deploy/check-configs.sh [--install-tools] [CHECK...]   (no CHECK: all of them)
# A check whose tool is missing says so and is skipped. Exit status: 1 when a check failed, else
# 77 when every check asked for was skipped, else 0. --install-tools first installs the npm
# packages of the Kubernetes and Dockerfile checks (deploy/tools/package.json) into
# $TANDEM_DEPLOY_TOOLS (default ~/.cache/tandem-deploy-tools), outside the work tree so that every
# checkout on the machine shares them; setup-debian.sh does it where npm is. promtool, nginx and
# haproxy come from Debian (apt-get install prometheus nginx-light haproxy).
set -uo pipefail
DEPLOY="$(cd "$(dirname "$0")" && pwd)"
export TANDEM_DEPLOY_TOOLS="${TANDEM_DEPLOY_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem-deploy-tools}"
TOOLS="$TANDEM_DEPLOY_TOOLS"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

if [[ "${1:-}" == "--install-tools" ]]; then
  shift
  mkdir -p "$TOOLS" && cp "$DEPLOY/tools/package.json" "$TOOLS/" &&
    (cd "$TOOLS" && npm install --no-package-lock --no-audit --no-fund --loglevel=error) || exit 1
fi

skip() { echo "skip: $*"; return 77; }
run() { echo "+ $*"; "$@"; }

check_prometheus() {
  command -v promtool >/dev/null 2>&1 || { skip "promtool is missing (apt-get install prometheus)"; return; }
  echo "$(promtool --version 2>&1 | head -1)"
  local ok=0 config="$DEPLOY/prometheus/prometheus.yml"
  run promtool check config "$DEPLOY/prometheus.yml" || ok=1
  # Debian's promtool is built without Kubernetes discovery: then check the rest of the file, with
  # each kubernetes_sd_configs block replaced by an empty static list.
  printf 'scrape_configs:\n  - job_name: probe\n    kubernetes_sd_configs: [{role: pod}]\n' >"$TMP/probe.yml"
  if ! promtool check config "$TMP/probe.yml" >/dev/null 2>&1; then
    echo "note: this promtool has no kubernetes_sd_configs; checking prometheus/prometheus.yml without them"
    cp "$DEPLOY/prometheus/"*.yml "$TMP/"
    python3 - "$config" "$TMP/prometheus.yml" <<'PY' || ok=1
import sys, yaml
config = yaml.safe_load(open(sys.argv[1]))
for job in config["scrape_configs"]:
    if job.pop("kubernetes_sd_configs", None) is not None:
        job["static_configs"] = [{"targets": []}]
yaml.safe_dump(config, open(sys.argv[2], "w"))
PY
    config="$TMP/prometheus.yml"
  fi
  run promtool check config "$config" || ok=1
  run promtool check rules "$DEPLOY/prometheus/tandem.rules.yml" || ok=1
  (cd "$DEPLOY/prometheus" && run promtool test rules tandem.rules.test.yml) || ok=1
  return $ok
}

check_kubernetes() { "$DEPLOY/k8s/validate.sh"; }

check_docker() {
  local lint="$TOOLS/node_modules/.bin/dockerfile-utils"
  command -v node >/dev/null 2>&1 && [[ -x "$lint" ]] ||
    { skip "dockerfile-utils is missing (deploy/check-configs.sh --install-tools)"; return; }
  echo "dockerfile-utils $(node -p "require('$TOOLS/node_modules/dockerfile-utils/package.json').version")"
  run "$lint" lint "$DEPLOY/docker/Dockerfile" && echo "Dockerfile: no problems"
}

check_nginx() {
  command -v nginx >/dev/null 2>&1 || { skip "nginx is missing (apt-get install nginx-light)"; return; }
  nginx -v 2>&1
  run nginx -t -p "$TMP" -c "$DEPLOY/nginx/nginx.conf" -g "pid $TMP/nginx.pid; error_log stderr;"
}

check_haproxy() {
  command -v haproxy >/dev/null 2>&1 || { skip "haproxy is missing (apt-get install haproxy)"; return; }
  haproxy -v 2>&1 | head -1
  run haproxy -c -f "$DEPLOY/haproxy/haproxy.cfg"
}

checks=("$@")
[[ "${checks[*]}" == none ]] && exit 0  # --install-tools alone
((${#checks[@]})) || checks=(prometheus kubernetes docker nginx haproxy)
failed=() ran=0
for c in "${checks[@]}"; do
  declare -F "check_$c" >/dev/null || { echo "unknown check: $c" >&2; exit 2; }
  echo "== $c"
  "check_$c"
  case $? in
    0) ran=$((ran + 1)) ;;
    77) ;;
    *) failed+=("$c") ;;
  esac
done
if ((${#failed[@]})); then echo "FAILED: ${failed[*]}"; exit 1; fi
if ((ran == 0)); then echo "skipped: every check (tools missing)"; exit 77; fi
echo "ok: $ran of ${#checks[@]} checks passed"
