#!/usr/bin/env bash
# Validates the deployment kit offline:
#   1. deploy/kubernetes/*.yaml against the Kubernetes JSON schemas bundled with kubernetes-validate (PyPI), in
#      strict mode (unknown fields are errors), for the oldest and the newest Kubernetes version we claim;
#   2. the kit's own consistency (deploy/validate.py): selectors match labels, the config file is valid JSON with
#      keys Spout knows, the grace period covers shutdown delay + grace, security settings, compose.yaml and its
#      nginx config;
#   3. `docker compose config` when the compose plugin is installed (it needs no engine); otherwise says so;
#   4. the Prometheus alert rules, their unit tests and the Grafana dashboard's queries with promtool
#      (deploy/prometheus/check.sh) when promtool is installed; SPOUT_REQUIRE_PROMTOOL=1 (set by .ci/run) or CI=true
#      makes its absence a failure. validate.py (step 2) checks the monitoring kit's structure and metric names
#      without promtool.
# Usage: deploy/validate.sh [--allow-unknown-keys]   (the flag lets a branch use config keys another branch adds)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"

if ! python3 -c 'import kubernetes_validate' 2>/dev/null; then
    echo "kubernetes-validate is not installed. Where pip may install (CI): python3 -m pip install kubernetes-validate;" >&2
    echo "under Debian's externally managed Python, in a venv:" >&2
    echo "  python3 -m venv /tmp/kv && /tmp/kv/bin/pip install kubernetes-validate && PATH=/tmp/kv/bin:\$PATH $0" >&2
    exit 2
fi

manifests=()
for file in "$here"/kubernetes/*.yaml; do
    # kustomization.yaml is kustomize's, not a Kubernetes resource; validate.py checks it.
    [[ "$(basename "$file")" == kustomization.yaml ]] && continue
    manifests+=("$file")
done

for version in 1.29.0 1.37.0; do
    echo "== kubernetes-validate --strict, Kubernetes $version"
    python3 -m kubernetes_validate --strict --quiet --kubernetes-version "$version" "${manifests[@]}"
done
echo "   ${#manifests[@]} files valid"

echo "== kit consistency"
python3 "$here/validate.py" --root "$root" "$@"

echo "== docker compose config"
if docker compose version >/dev/null 2>&1; then
    (cd "$root" && docker compose -f compose.yaml config --quiet)
    echo "   compose.yaml valid"
else
    echo "   skipped: the docker compose plugin is not installed (validate.py checked the file's structure)"
fi

echo "== promtool: alert rules, their tests, the dashboard's queries"
if command -v promtool >/dev/null 2>&1; then
    bash "$here/prometheus/check.sh"
elif [[ "${SPOUT_REQUIRE_PROMTOOL:-}" == 1 || "${CI:-}" == true ]]; then
    echo "promtool is required (SPOUT_REQUIRE_PROMTOOL=1 or CI=true) but not installed: apt-get install prometheus" >&2
    exit 1
else
    echo "   skipped: promtool is not installed (Debian: apt-get install prometheus); validate.py checked the metric names"
fi
