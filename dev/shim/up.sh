#!/usr/bin/env bash
# Start the boot shim (issue 42, deliverable 3; docs/clusters.md "The boot shim"): the
# bridge, kubeadm and the registry.kumo.lab images (built once, cached), then
# dev/shim/shim.py as a lab process (log .kumo-dev/logs/kumo-shim.log, status
# .kumo-dev/shim/status.json). Idempotent; a shim started again adopts the nodes that
# run. Run by `make test-clusters` (tests/integration/test_boot_shim.py); stopped by
# dev/shim/down.sh (make down runs it).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"

[ "$(id -u)" = 0 ] || die "the boot shim makes namespaces, cgroups and a bridge: run it as root"
bash "$HERE/node.sh" prepare
STATUS="$KUMO_STATE/shim/status.json"
before="$(stat -c %Y "$STATUS" 2>/dev/null || echo 0)"
start_daemon kumo-shim "$KUMO_ROOT/.venv/bin/python" "$HERE/shim.py"
fresh() { is_running kumo-shim && [ "$(stat -c %Y "$STATUS" 2>/dev/null || echo 0)" -gt "$before" ]; }
sleep 1 # a status written in the second the shim started must still count as new
wait_for "the shim's first pass (log: $KUMO_STATE/logs/kumo-shim.log)" 120 fresh
echo "$STATUS"
