#!/usr/bin/env bash
# Stop the local Kubernetes API server started by dev/kube/up.sh and the second
# cluster of dev/kube/second.sh (only the processes they recorded). Data is kept
# unless --wipe is given.
# Usage: dev/kube/down.sh [--wipe]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"
# shellcheck source=dev/kube/env.sh
source "$HERE/env.sh"

wipe=0
case "${1:-}" in
  --wipe) wipe=1 ;;
  "") ;;
  *) die "usage: $0 [--wipe]" ;;
esac

bash "$HERE/second.sh" stop
bash "$HERE/node.sh" stop
stop_daemon kube-scheduler
stop_daemon kube-controller-manager
stop_daemon kube-apiserver
stop_daemon etcd
if [ "$wipe" = 1 ]; then
  log "wiping etcd data, certificates and kubeconfig"
  rm -rf "$KUMO_STATE/etcd" "$KUMO_STATE/etcd.kube-version" "$KUMO_STATE/node" "$KUMO_STATE/kube" "$KUBECONFIG" \
    "$KUMO_STATE/second"
fi
