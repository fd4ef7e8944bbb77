#!/usr/bin/env bash
# Checks the alert rules and the dashboard's queries with promtool (Debian/Ubuntu: apt-get install prometheus;
# or the promtool binary from a Prometheus release):
#   1. `promtool check rules` on spout-rules.yaml;
#   2. `promtool test rules` on spout-rules.test.yaml (each alert fires on a bad series and not on a healthy one);
#   3. every query of deploy/grafana/spout-dashboard.json parsed by promtool, as recording rules of a scratch rules
#      file (Grafana's variables replaced by values: $job by spout, $__rate_interval by 5m);
#   4. deploy/kubernetes/monitoring/prometheusrule.yaml holds the same groups as spout-rules.yaml (validate.py
#      also checks that; `check.sh --sync` rewrites the PrometheusRule from spout-rules.yaml).
# Run by deploy/validate.sh when promtool is installed (required in CI).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
deploy="$(dirname "$here")"
wrapped="$deploy/kubernetes/monitoring/prometheusrule.yaml"

# The PrometheusRule: a header, then spout-rules.yaml's groups indented under spec (comments kept).
render_prometheusrule() {
    cat <<'HEADER'
# The alert rules of deploy/prometheus/spout-rules.yaml for the Prometheus Operator. Generated: edit
# spout-rules.yaml and run deploy/prometheus/check.sh --sync (deploy/validate.sh fails when the two differ).
# Like the ServiceMonitor, it must match your Prometheus's ruleSelector (kube-prometheus-stack: release: <name>).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: spout
  labels:
    app.kubernetes.io/name: spout
    app.kubernetes.io/component: server
spec:
HEADER
    sed -n '/^groups:/,$p' "$here/spout-rules.yaml" | sed 's/^/  /; s/^  $//'
}

if [[ "${1:-}" == --sync ]]; then
    render_prometheusrule > "$wrapped"
    echo "wrote $wrapped"
    exit 0
fi

echo "== promtool check rules"
promtool check rules "$here/spout-rules.yaml"

echo "== promtool test rules"
(cd "$here" && promtool test rules spout-rules.test.yaml)

echo "== the dashboard's queries, parsed by promtool"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python3 - "$deploy/grafana/spout-dashboard.json" > "$scratch/dashboard-rules.yaml" <<'PY'
import json, sys
dashboard = json.load(open(sys.argv[1]))
print("groups:\n  - name: dashboard\n    rules:")
count = 0
for panel in dashboard["panels"]:
    for target in panel.get("targets", []):
        expr = target["expr"].replace("$__rate_interval", "5m").replace("$job", "spout")
        count += 1
        print(f"      - record: dashboard:query{count}\n        expr: {json.dumps(expr)}")
if count == 0:
    sys.exit("the dashboard has no queries")
PY
promtool check rules "$scratch/dashboard-rules.yaml"

echo "== prometheusrule.yaml matches spout-rules.yaml"
if ! diff -u "$wrapped" <(render_prometheusrule); then
    echo "deploy/kubernetes/monitoring/prometheusrule.yaml differs from spout-rules.yaml: run $0 --sync" >&2
    exit 1
fi
echo "   same rules"
