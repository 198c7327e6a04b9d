#!/usr/bin/env bash
# The Cluster API management cluster of the lab: its own etcd (client 127.0.0.1:23792,
# peer 23802) and kube-apiserver (https://127.0.0.1:6445), started with the lab's
# binaries and PKI exactly as dev/kube/second.sh starts the second cluster
# (dev/kube/control-plane.sh), plus a cut-down kube-controller-manager: namespaces
# finalized, ServiceAccounts made, garbage collected by ownerReference (CAPI relies on
# it: a Cluster's Machines, KubeadmConfigs, Secrets are owned) and aggregated
# ClusterRoles filled (the release's RBAC aggregates into its managers' roles). No
# scheduler and no node: the CAPI managers run as lab processes (dev/capi/up.sh).
#
# It is separate from the lab's main cluster (6443) so CAPI's CRDs, webhooks and
# controllers never touch the operator's tests there.
#
#   dev/capi/cluster.sh start    start (or reuse) it; prints its kubeconfig's path
#   dev/capi/cluster.sh stop     stop it (data kept; stop --wipe deletes it)
#   dev/capi/cluster.sh status   exit 0 when it answers
# State: $KUMO_STATE/capi (etcd data, kubeconfig); logs capi-*.log; PIDs in
# $KUMO_STATE/pids, so `make down` stops it (dev/capi/down.sh).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"
# shellcheck source=dev/kube/env.sh
source "$HERE/../kube/env.sh"

CAPI_STATE="$KUMO_STATE/capi"
ETCD_CLIENT=127.0.0.1:23792 ETCD_PEER=127.0.0.1:23802 API_PORT=6445
API_URL="https://127.0.0.1:$API_PORT"
CAPI_KUBECONFIG="$CAPI_STATE/kubeconfig"

answers() {
  [ -s "$CAPI_KUBECONFIG" ] && is_running capi-kube-apiserver \
    && "$KUBECTL" --kubeconfig "$CAPI_KUBECONFIG" get --raw /readyz >/dev/null 2>&1
}

case "${1:-}" in
  start)
    # shellcheck source=dev/kube/control-plane.sh
    source "$HERE/../kube/control-plane.sh"
    kube_pki
    kube_kubeconfig "$CAPI_KUBECONFIG" "$API_URL"
    kube_etcd capi-etcd kumo-capi "$CAPI_STATE" "$ETCD_CLIENT" "$ETCD_PEER"
    kube_apiserver_cmd "$ETCD_CLIENT" "$API_PORT"
    kube_apiserver capi-kube-apiserver "$API_URL"
    start_daemon capi-kube-controller-manager "$BIN_DIR/kube-controller-manager" \
      --kubeconfig="$CAPI_KUBECONFIG" --leader-elect=false --secure-port=0 \
      --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
      --use-service-account-credentials=false \
      --controllers=namespace-controller,serviceaccount-controller,garbage-collector-controller,clusterrole-aggregation-controller
    sa_ready() { "$KUBECTL" --kubeconfig "$CAPI_KUBECONFIG" get serviceaccount default -n default; }
    wait_for "capi-kube-controller-manager to make ServiceAccounts (log: $KUMO_STATE/logs/capi-kube-controller-manager.log)" 90 sa_ready
    log "CAPI management cluster ready at $API_URL (KUBECONFIG=$CAPI_KUBECONFIG)"
    echo "$CAPI_KUBECONFIG"
    ;;
  stop)
    stop_daemon capi-kube-controller-manager
    stop_daemon capi-kube-apiserver
    stop_daemon capi-etcd
    if [ "${2:-}" = --wipe ]; then
      log "wiping the CAPI management cluster's data"
      rm -rf "$CAPI_STATE"
    fi
    ;;
  status) answers ;;
  *) die "usage: dev/capi/cluster.sh start|stop [--wipe]|status" ;;
esac
