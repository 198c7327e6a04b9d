#!/usr/bin/env bash
# Start a real Kubernetes control plane on loopback for development and integration
# tests: etcd, kube-apiserver, kube-controller-manager and kube-scheduler of one
# current release (dev/kube/build.sh; KUMO_KUBE_VERSION picks it), so namespaces,
# ownerReference garbage collection, ServiceAccount tokens, Deployments and
# scheduling behave as in a cluster.
#
# Idempotent: a second run reuses what is running. State: $KUMO_STATE/{etcd,kube},
# kubeconfig in $KUMO_STATE/kubeconfig (context kumo-dev). Stop: dev/kube/down.sh
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"
# shellcheck source=dev/kube/env.sh
source "$HERE/env.sh"
# shellcheck source=dev/kube/control-plane.sh
source "$HERE/control-plane.sh"

ETCD_CLIENT=127.0.0.1:23790 ETCD_PEER=127.0.0.1:23800 API_PORT=6443
API_URL="https://127.0.0.1:$API_PORT"
APISERVER="$BIN_DIR/kube-apiserver"

kube_pki
kube_kubeconfig "$KUBECONFIG" "$API_URL"
kube_etcd etcd kumo-dev "$KUMO_STATE" "$ETCD_CLIENT" "$ETCD_PEER"

# --- kube-apiserver ---------------------------------------------------------
# The audit log: every write (create, update, patch, delete) at Metadata level - who
# (user, User-Agent), what, when; no bodies, no reads. Kumo's requests carry its Lease
# identity in their User-Agent, so tests/integration/test_leader_election.py sees
# there that a standby writes nothing. At most 3 x 20 MB (the file and two rotated
# ones, audit-<time>.log beside it).
AUDIT_DIR="$KUMO_STATE/logs/kube-apiserver-audit"
AUDIT_POLICY="$KUMO_STATE/kube/audit-policy.yaml"
mkdir -p "$AUDIT_DIR"
cat >"$AUDIT_POLICY.tmp" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
POLICY
policy_changed=0
if cmp -s "$AUDIT_POLICY.tmp" "$AUDIT_POLICY"; then
  rm -f "$AUDIT_POLICY.tmp"
else
  mv "$AUDIT_POLICY.tmp" "$AUDIT_POLICY" && policy_changed=1
fi
kube_apiserver_cmd "$ETCD_CLIENT" "$API_PORT"
APISERVER_CMD+=(
  --audit-policy-file="$AUDIT_POLICY" --audit-log-path="$AUDIT_DIR/audit.log"
  --audit-log-format=json --audit-log-mode=blocking
  --audit-log-maxsize=20 --audit-log-maxbackup=2 --audit-log-maxage=7
)
# start_daemon leaves a running apiserver alone: one started with other flags (an
# older up.sh, another build) or before the audit policy changed is restarted with
# these.
kube_apiserver kube-apiserver "$API_URL" "$policy_changed"

# The apiserver's bootstrap controller creates `default` within seconds; if it
# has not after 20 s, create it ourselves.
for ((i = 0; i < 40; i++)); do "$KUBECTL" get namespace default >/dev/null 2>&1 && break; sleep 0.5; done
"$KUBECTL" get namespace default >/dev/null 2>&1 || "$KUBECTL" create namespace default >/dev/null

# --- kube-controller-manager -----------------------------------------------
# Runs as the lab's admin (a dev control plane); signs ServiceAccount tokens with the
# key the apiserver verifies them with. No serving ports: nothing scrapes it here.
start_daemon kube-controller-manager "$BIN_DIR/kube-controller-manager" \
  --kubeconfig="$KUBECONFIG" --leader-elect=false \
  --secure-port=0 \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --use-service-account-credentials=false \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --controllers='*,-node-ipam-controller'
# Since 1.24 no token Secret is made for a ServiceAccount unless asked for; the
# ServiceAccount controller still makes each namespace's `default` account.
sa_ready() { "$KUBECTL" get serviceaccount default -n default >/dev/null 2>&1; }
wait_for "kube-controller-manager to make ServiceAccounts (log: $KUMO_STATE/logs/kube-controller-manager.log)" 90 sa_ready

# --- kube-scheduler -----------------------------------------------------------
# Places Pods on the lab's node (dev/kube/node.sh). No serving port, no election.
start_daemon kube-scheduler "$BIN_DIR/kube-scheduler" \
  --kubeconfig="$KUBECONFIG" --leader-elect=false --secure-port=0

# --- the node: containerd + kubelet (Pods of the operator run on it) -----------
bash "$HERE/node.sh"

log "Kubernetes API ready at $API_URL ($("$APISERVER" --version))"
cat >&2 <<EOF
  Point kubectl (built with the server, same release) at it:
    source dev/kube/env.sh && "\$KUBECTL" get ns
  or: KUBECONFIG=$KUBECONFIG $KUBECTL get ns
  Stop: dev/kube/down.sh   (--wipe also deletes etcd data and certificates)
EOF
