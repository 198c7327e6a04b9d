#!/usr/bin/env bash
# Stop the boot shim (dev/shim/up.sh), then every node it runs (node.sh stop: their
# processes, network and cgroups; their disks stay, and a shim started again boots the
# nodes of the servers still ACTIVE from them). --keep-nodes leaves the nodes running
# (a shim started again adopts them).
# Usage: dev/shim/down.sh [--keep-nodes]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"

case "${1:-}" in
  --keep-nodes | "") ;;
  *) die "usage: $0 [--keep-nodes]" ;;
esac
stop_daemon kumo-shim
[ "${1:-}" = --keep-nodes ] && exit 0
for disk in "$KUMO_STATE"/shim/nodes/*/; do
  if [ -e "$disk/init.pid" ]; then bash "$HERE/node.sh" stop "$disk" || log "stopping $disk failed"; fi
done
if ip link show kumo-shim0 >/dev/null 2>&1; then ip link del kumo-shim0; fi
