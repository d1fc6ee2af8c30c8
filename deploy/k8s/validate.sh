#!/usr/bin/env bash
# Validates the manifests in deploy/k8s against the Kubernetes API's schemas (strictly: unknown
# fields fail), and checks selectors, Service names and probe ports (deploy/tools/validate-k8s.mjs).
# With kubectl, what `kubectl apply -k deploy/k8s` would apply (kubectl kustomize renders it);
# without, every manifest file as written. Needs Node.js and the packages of
# deploy/tools/package.json in $TANDEM_DEPLOY_TOOLS (default ~/.cache/tandem-deploy-tools), which
#   deploy/check-configs.sh --install-tools
# installs from the npm registry. Exit status 77 (skipped) when either is missing.
set -euo pipefail
DEPLOY="$(cd "$(dirname "$0")/.." && pwd)"
K8S="$DEPLOY/k8s"
export TANDEM_DEPLOY_TOOLS="${TANDEM_DEPLOY_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem-deploy-tools}"
if ! command -v node >/dev/null 2>&1 || [[ ! -d "$TANDEM_DEPLOY_TOOLS/node_modules/kubernetes-models" ]]; then
  echo "skip: Kubernetes manifests not validated: needs node and $TANDEM_DEPLOY_TOOLS/node_modules" \
    "(deploy/check-configs.sh --install-tools)"
  exit 77
fi
if command -v kubectl >/dev/null 2>&1; then
  echo "kubectl kustomize deploy/k8s ($(kubectl version --client 2>/dev/null | head -1))"
  kubectl kustomize "$K8S" | node "$DEPLOY/tools/validate-k8s.mjs" -
else
  echo "kubectl is missing: validating each manifest as written (kustomize's names and labels unchecked)"
  mapfile -t files < <(find "$K8S" -name '*.yaml' ! -name kustomization.yaml | sort)
  for f in "${files[@]}"; do printf -- '---\n'; cat "$f"; done | node "$DEPLOY/tools/validate-k8s.mjs" -
fi
