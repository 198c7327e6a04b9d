#!/usr/bin/env bash
# Cluster API in the lab: the core, kubeadm bootstrap and kubeadm control-plane managers
# of one release (dev/capi/build.sh) running as lab processes against the lab's CAPI
# management cluster (dev/capi/cluster.sh, https://127.0.0.1:6445).
#
# - CRDs, RBAC and webhook configurations are the release's own (each component's
#   config/default), applied without the Deployment, the webhook Service and
#   cert-manager's objects (dev/capi/manifests.py).
# - Each manager authenticates as its own ServiceAccount (a token from the TokenRequest
#   API in a kubeconfig of its own), so it has exactly the release's RBAC.
# - Every webhook runs: the CRDs serve v1beta1 and v1beta2 (conversion is the managers'
#   job), and the validating/mutating webhooks hold defaulting and checks that the
#   managers rely on (e.g. a KubeadmControlPlane with stacked etcd must have an odd
#   number of replicas). Each manager serves them with a certificate for 127.0.0.1
#   signed by the lab's CA; the configurations point at https://127.0.0.1:<port>/<path>
#   with that CA as caBundle. There is no cert-manager.
# - Feature gate ClusterTopology on (ClusterClass, managed topologies).
#
# Idempotent: what runs is reused; a manager whose flags changed is restarted.
# Stop: dev/capi/down.sh (make down runs it). Prints the management kubeconfig's path.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"
# shellcheck source=dev/kube/env.sh
source "$HERE/../kube/env.sh"

BUILD="$(bash "$HERE/build.sh")"
CAPI_KUBECONFIG="$(bash "$HERE/cluster.sh" start)"
CAPI_STATE="$KUMO_STATE/capi"
# shellcheck source=dev/kube/control-plane.sh
source "$HERE/../kube/control-plane.sh"   # PKI, kube_kubeconfig
k() { "$KUBECTL" --kubeconfig "$CAPI_KUBECONFIG" "$@"; }

# component -> binary, namespace, ServiceAccount, webhook port, health port, extra flags
COMPONENTS=(core bootstrap controlplane)
declare -A BIN=([core]=capi-manager [bootstrap]=kubeadm-bootstrap-manager [controlplane]=kubeadm-control-plane-manager)
declare -A NS=([core]=capi-system [bootstrap]=capi-kubeadm-bootstrap-system [controlplane]=capi-kubeadm-control-plane-system)
declare -A SA=([core]=capi-manager [bootstrap]=capi-kubeadm-bootstrap-manager [controlplane]=capi-kubeadm-control-plane-manager)
declare -A WEBHOOK_PORT=([core]=9641 [bootstrap]=9642 [controlplane]=9643)
declare -A HEALTH_PORT=([core]=9651 [bootstrap]=9652 [controlplane]=9653)
declare -A GATES=([core]=ClusterTopology=true [bootstrap]= [controlplane]=ClusterTopology=true)

# --- the webhooks' serving certificate (lab CA, 127.0.0.1) --------------------------
CERTS="$CAPI_STATE/webhook-certs"
if [ ! -s "$CERTS/tls.crt" ] || ! openssl verify -CAfile "$PKI/ca.crt" "$CERTS/tls.crt" >/dev/null 2>&1; then
  log "signing the CAPI webhooks' serving certificate with the lab CA"
  mkdir -p "$CERTS" && chmod 700 "$CERTS"
  (
    cd "$CERTS"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=capi-webhooks" -keyout tls.key -out tls.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >tls.ext
    openssl x509 -req -in tls.csr -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 3650 \
      -extfile tls.ext -out tls.crt.tmp 2>/dev/null
    mv tls.crt.tmp tls.crt
  )
fi

# --- CRDs, RBAC, webhook configurations ---------------------------------------------
for c in "${COMPONENTS[@]}"; do
  "$KUMO_ROOT/.venv/bin/python" "$HERE/manifests.py" "$BUILD/manifests/$c.yaml" "${WEBHOOK_PORT[$c]}" \
    "$PKI/ca.crt" >"$CAPI_STATE/$c.yaml.tmp"
  mv "$CAPI_STATE/$c.yaml.tmp" "$CAPI_STATE/$c.yaml"
  # Server-side: the CRDs are larger than client-side apply's annotation allows.
  k apply --server-side --force-conflicts --field-manager=kumo-lab -f "$CAPI_STATE/$c.yaml" >/dev/null
done
crds=$(k get crd -o name | grep -E 'x-k8s\.io$' || true)
# shellcheck disable=SC2086
k wait --for=condition=Established --timeout=60s $crds >/dev/null

# --- the managers -------------------------------------------------------------------
# A manager's kubeconfig: the lab's (dev/kube/control-plane.sh), with a token of the
# manager's ServiceAccount in place of the admin's (its user name is only a label).
manager_kubeconfig() {
  local token
  token="$(k create token "${SA[$1]}" -n "${NS[$1]}" --duration=8760h)"
  TOKEN="$token" kube_kubeconfig "$CAPI_STATE/$1.kubeconfig" https://127.0.0.1:6445
}
for c in "${COMPONENTS[@]}"; do
  name="capi-$c-manager"
  cmd=("$BUILD/bin/${BIN[$c]}" --kubeconfig="$CAPI_STATE/$c.kubeconfig" --leader-elect=false
    --webhook-port="${WEBHOOK_PORT[$c]}" --webhook-cert-dir="$CERTS"
    --health-addr="127.0.0.1:${HEALTH_PORT[$c]}" --diagnostics-address=0)
  [ -z "${GATES[$c]}" ] || cmd+=(--feature-gates="${GATES[$c]}")
  if runs_with_other_args "$name" "${cmd[@]}"; then
    log "$name runs with other flags: restarting it"
    stop_daemon "$name"
  fi
  is_running "$name" || manager_kubeconfig "$c"
  start_daemon "$name" "${cmd[@]}"
done
webhook_serves() { curl -s -o /dev/null --cacert "$PKI/ca.crt" "https://127.0.0.1:$1/"; }
for c in "${COMPONENTS[@]}"; do
  wait_for "capi-$c-manager ready (log: $KUMO_STATE/logs/capi-$c-manager.log)" 120 \
    curl -sf "http://127.0.0.1:${HEALTH_PORT[$c]}/readyz"
  wait_for "capi-$c-manager's webhooks on 127.0.0.1:${WEBHOOK_PORT[$c]}" 60 webhook_serves "${WEBHOOK_PORT[$c]}"
done
version="$(basename "$BUILD")"
log "Cluster API ${version%-*} running on https://127.0.0.1:6445 (KUBECONFIG=$CAPI_KUBECONFIG)"
echo "$CAPI_KUBECONFIG"
