#!/usr/bin/env bash
# Stop Cluster API in the lab (dev/capi/up.sh): the three managers, then the CAPI
# management cluster (dev/capi/cluster.sh), only the processes they recorded. Never
# touches the main lab's daemons. Data is kept unless --wipe is given.
# Usage: dev/capi/down.sh [--wipe]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"

case "${1:-}" in
  --wipe | "") ;;
  *) die "usage: $0 [--wipe]" ;;
esac
for c in controlplane bootstrap core; do stop_daemon "capi-$c-manager"; done
bash "$HERE/cluster.sh" stop ${1:+"$1"}
