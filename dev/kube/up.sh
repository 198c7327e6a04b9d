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

ETCD_CLIENT=127.0.0.1:23790 ETCD_PEER=127.0.0.1:23800 API_PORT=6443
PKI="$KUMO_STATE/kube/pki"
API_URL="https://127.0.0.1:$API_PORT"

port_open() { (exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null; }

BIN_DIR="$("$HERE/build.sh")"
APISERVER="$BIN_DIR/kube-apiserver"

# --- certificates, service-account key and admin token (made once) ---------
if [ ! -s "$PKI/token.csv" ]; then
  log "generating certificates in $PKI"
  rm -rf "$PKI" && mkdir -p "$PKI" && chmod 700 "$PKI"
  (
    cd "$PKI"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kumo-dev-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
      -keyout apiserver.key -out apiserver.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile apiserver.ext -out apiserver.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    # token,user,uid,"groups": system:masters is bound to cluster-admin by RBAC.
    echo "$(openssl rand -hex 24),kumo-admin,kumo-admin,\"system:masters\"" >token.csv.tmp
    mv token.csv.tmp token.csv
  )
fi
# The API server's client certificate towards kubelets (logs, exec; dev/kube/node.sh).
if [ ! -s "$PKI/kubelet-client.crt" ]; then
  (
    cd "$PKI"
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
      -keyout kubelet-client.key -out kubelet-client.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >kubelet-client.ext
    openssl x509 -req -in kubelet-client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile kubelet-client.ext -out kubelet-client.crt.tmp 2>/dev/null
    mv kubelet-client.crt.tmp kubelet-client.crt
  )
fi
TOKEN="$(cut -d, -f1 "$PKI/token.csv")"

# --- kubeconfig (CA embedded, token auth) -----------------------------------
cat >"$KUBECONFIG.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kumo-dev
  cluster:
    server: $API_URL
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: kumo-admin
  user:
    token: $TOKEN
contexts:
- name: kumo-dev
  context: {cluster: kumo-dev, user: kumo-admin}
current-context: kumo-dev
EOF
chmod 600 "$KUBECONFIG.tmp" && mv "$KUBECONFIG.tmp" "$KUBECONFIG"

# --- etcd ----------------------------------------------------------------------
if ! is_running etcd && port_open "$ETCD_CLIENT"; then
  die "$ETCD_CLIENT is in use by a process up.sh did not start"
fi
# The lab's etcd data belongs to one release: etcd refuses data of a release it
# cannot upgrade from (3.4 -> 3.7) or downgrade to, and the apiserver's storage
# versions differ. Switching KUMO_KUBE_VERSION starts from an empty cluster.
KUBE_VERSION="$("$BIN_DIR/kube-apiserver" --version | awk '{print $2}')"
if [ -d "$KUMO_STATE/etcd" ] && [ "$(cat "$KUMO_STATE/etcd.kube-version" 2>/dev/null)" != "$KUBE_VERSION" ]; then
  is_running etcd && die "etcd runs with data of another Kubernetes release: dev/kube/down.sh first"
  log "etcd data is from another Kubernetes release ($(cat "$KUMO_STATE/etcd.kube-version" 2>/dev/null || echo 1.20)): starting from an empty cluster"
  rm -rf "$KUMO_STATE/etcd"
fi
mkdir -p "$KUMO_STATE/etcd" && chmod 700 "$KUMO_STATE/etcd"
echo "$KUBE_VERSION" >"$KUMO_STATE/etcd.kube-version"
start_daemon etcd "$BIN_DIR/etcd" --name kumo-dev --data-dir "$KUMO_STATE/etcd" \
  --listen-client-urls "http://$ETCD_CLIENT" --advertise-client-urls "http://$ETCD_CLIENT" \
  --listen-peer-urls "http://$ETCD_PEER" --initial-advertise-peer-urls "http://$ETCD_PEER" \
  --initial-cluster "kumo-dev=http://$ETCD_PEER" --initial-cluster-state new
wait_for "etcd on $ETCD_CLIENT" 30 curl -sf "http://$ETCD_CLIENT/health"

# --- kube-apiserver ---------------------------------------------------------
if ! is_running kube-apiserver && port_open "127.0.0.1:$API_PORT"; then
  die "127.0.0.1:$API_PORT is in use by a process up.sh did not start"
fi
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
# --endpoint-reconciler-type=none: the `kubernetes` Service may not point at a
#   loopback address (Pods of the lab's node use the host network and reach the
#   API on 127.0.0.1). Node authorization + NodeRestriction: the node's kubelet
#   (dev/kube/node.sh) may touch only its own Node and Pods.
APISERVER_CMD=(
  "$APISERVER"
  --etcd-servers="http://$ETCD_CLIENT"
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT"
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key"
  --client-ca-file="$PKI/ca.crt" --token-auth-file="$PKI/token.csv"
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction
  --kubelet-client-certificate="$PKI/kubelet-client.crt" --kubelet-client-key="$PKI/kubelet-client.key"
  --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP
  --service-account-issuer=https://kubernetes.default.svc
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key"
  --service-cluster-ip-range=10.96.0.0/24
  --endpoint-reconciler-type=none
  --audit-policy-file="$AUDIT_POLICY" --audit-log-path="$AUDIT_DIR/audit.log"
  --audit-log-format=json --audit-log-mode=blocking
  --audit-log-maxsize=20 --audit-log-maxbackup=2 --audit-log-maxage=7
)
# start_daemon leaves a running apiserver alone: one started with other flags (an
# older up.sh, another build) or before the audit policy changed is restarted with
# these (its clients reconnect).
if { [ "$policy_changed" = 1 ] && is_running kube-apiserver; } \
  || runs_with_other_args kube-apiserver "${APISERVER_CMD[@]}"; then
  log "kube-apiserver runs with other flags or audit policy: restarting it"
  stop_daemon kube-apiserver
fi
start_daemon kube-apiserver "${APISERVER_CMD[@]}"
api_ready() { curl -sf --cacert "$PKI/ca.crt" -H "Authorization: Bearer $TOKEN" "$API_URL/readyz"; }
wait_for "kube-apiserver /readyz (log: $KUMO_STATE/logs/kube-apiserver.log)" 90 api_ready

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
