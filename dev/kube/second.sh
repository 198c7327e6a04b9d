#!/usr/bin/env bash
# A second Kubernetes cluster beside the lab's: its own etcd (client 127.0.0.1:23791,
# peer 23801) and kube-apiserver (https://127.0.0.1:6444), the same binaries as
# dev/kube/up.sh's and the same PKI, with Kumo's CRDs (both groups) and namespace
# kumo-system. Two
# clusters, two Kumos, one OpenStack project: tests/integration/test_two_clusters.py
# (docs/install.md, "Running several clusters on one cloud").
#
# Only an API server: no controller manager (no garbage collector, namespace
# controller or ServiceAccount tokens: a namespace deleted here stays Terminating until
# its finalizer is removed by hand), no scheduler, no node. Kumo deletes a group's
# members itself, so none of that is needed to run it here with the admin kubeconfig.
#
#   dev/kube/second.sh start    start (or reuse) it; prints its kubeconfig's path
#   dev/kube/second.sh stop     stop it (data kept; stop --wipe deletes it: a new cluster)
#   dev/kube/second.sh status   exit 0 when it answers
# State: $KUMO_STATE/second (etcd data, kubeconfig); logs second-*.log. It never
# touches the lab's first cluster; `make down` (dev/kube/down.sh) stops it too.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"
# shellcheck source=dev/kube/env.sh
source "$HERE/env.sh"

SECOND="$KUMO_STATE/second"
ETCD_CLIENT=127.0.0.1:23791 ETCD_PEER=127.0.0.1:23801 API_PORT=6444
API_URL="https://127.0.0.1:$API_PORT"
SECOND_KUBECONFIG="$SECOND/kubeconfig"

answers() {
  [ -s "$SECOND_KUBECONFIG" ] && is_running second-kube-apiserver \
    && "$KUBECTL" --kubeconfig "$SECOND_KUBECONFIG" get --raw /readyz >/dev/null 2>&1
}

case "${1:-}" in
  start)
    # shellcheck source=dev/kube/control-plane.sh
    source "$HERE/control-plane.sh"
    kube_pki
    kube_kubeconfig "$SECOND_KUBECONFIG" "$API_URL"
    kube_etcd second-etcd kumo-second "$SECOND" "$ETCD_CLIENT" "$ETCD_PEER"
    kube_apiserver_cmd "$ETCD_CLIENT" "$API_PORT"
    kube_apiserver second-kube-apiserver "$API_URL"
    # The bootstrap controller makes kube-system (whose UID names the cluster to Kumo).
    wait_for "namespace kube-system on $API_URL" 60 \
      "$KUBECTL" --kubeconfig "$SECOND_KUBECONFIG" get namespace kube-system
    # Every CRD Kumo watches (its Cluster API provider's too: kumo run watches them).
    "$KUBECTL" --kubeconfig "$SECOND_KUBECONFIG" apply \
      -f "$KUMO_ROOT/deploy/base/namespace.yaml" -f "$KUMO_ROOT/deploy/base/crds/" >/dev/null
    "$KUBECTL" --kubeconfig "$SECOND_KUBECONFIG" wait --for=condition=Established \
      -f "$KUMO_ROOT/deploy/base/crds/" --timeout=60s >/dev/null
    log "second cluster ready at $API_URL (KUBECONFIG=$SECOND_KUBECONFIG)"
    echo "$SECOND_KUBECONFIG"
    ;;
  stop)
    stop_daemon second-kube-apiserver
    stop_daemon second-etcd
    if [ "${2:-}" = --wipe ]; then
      log "wiping the second cluster's data"
      rm -rf "$SECOND"
    fi
    ;;
  status) answers ;;
  *) die "usage: dev/kube/second.sh start|stop [--wipe]|status" ;;
esac
