# shellcheck shell=bash
# The pieces of a control plane that dev/kube/up.sh (the lab's cluster) and
# dev/kube/second.sh (a second cluster beside it, tests/integration/test_two_clusters.py)
# both start: certificates, a kubeconfig, etcd, kube-apiserver. Sourced after
# dev/lib.sh and dev/kube/env.sh, never run.
#
# Both clusters share one PKI (CA, serving certificate for 127.0.0.1, admin token): they
# differ in their etcd, their port and so in everything stored, the kube-system
# namespace's UID (Kumo's cluster identity) included.

PKI="$KUMO_STATE/kube/pki"
BIN_DIR="$("$(dirname "${BASH_SOURCE[0]}")/build.sh")"
KUBE_VERSION="$("$BIN_DIR/kube-apiserver" --version | awk '{print $2}')"

port_open() { (exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null; }

# kube_pki — certificates, service-account key and admin token (made once); sets TOKEN.
kube_pki() {
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
}

# kube_kubeconfig FILE URL — the admin's kubeconfig for the API server at URL (CA
# embedded, token auth, context kumo-dev).
kube_kubeconfig() {
  local file="$1" url="$2"
  mkdir -p "$(dirname "$file")"
  cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kumo-dev
  cluster:
    server: $url
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
  chmod 600 "$file.tmp" && mv "$file.tmp" "$file"
}

# kube_etcd NAME MEMBER DIR CLIENT PEER — start (or reuse) etcd NAME (a one-member
# cluster, member MEMBER) serving CLIENT, its data in DIR/etcd (DIR/etcd.kube-version
# names the release it belongs to).
kube_etcd() {
  local name="$1" member="$2" dir="$3" client="$4" peer="$5"
  if ! is_running "$name" && port_open "$client"; then
    die "$client is in use by a process $(basename "$0") did not start"
  fi
  # The lab's etcd data belongs to one release: etcd refuses data of a release it
  # cannot upgrade from (3.4 -> 3.7) or downgrade to, and the apiserver's storage
  # versions differ. Switching KUMO_KUBE_VERSION starts from an empty cluster.
  if [ -d "$dir/etcd" ] && [ "$(cat "$dir/etcd.kube-version" 2>/dev/null)" != "$KUBE_VERSION" ]; then
    is_running "$name" && die "$name runs with data of another Kubernetes release: dev/kube/down.sh first"
    log "$name data is from another Kubernetes release ($(cat "$dir/etcd.kube-version" 2>/dev/null || echo 1.20)): starting from an empty cluster"
    rm -rf "$dir/etcd"
  fi
  mkdir -p "$dir/etcd" && chmod 700 "$dir/etcd"
  echo "$KUBE_VERSION" >"$dir/etcd.kube-version"
  start_daemon "$name" "$BIN_DIR/etcd" --name "$member" --data-dir "$dir/etcd" \
    --listen-client-urls "http://$client" --advertise-client-urls "http://$client" \
    --listen-peer-urls "http://$peer" --initial-advertise-peer-urls "http://$peer" \
    --initial-cluster "$member=http://$peer" --initial-cluster-state new
  wait_for "$name on $client" 30 curl -sf "http://$client/health"
}

# kube_apiserver_cmd ETCD_CLIENT PORT — sets APISERVER_CMD, the flags both clusters share.
# --endpoint-reconciler-type=none: the `kubernetes` Service may not point at a
#   loopback address (Pods of the lab's node use the host network and reach the
#   API on 127.0.0.1). Node authorization + NodeRestriction: the node's kubelet
#   (dev/kube/node.sh) may touch only its own Node and Pods.
kube_apiserver_cmd() {
  APISERVER_CMD=(
    "$BIN_DIR/kube-apiserver"
    --etcd-servers="http://$1"
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$2"
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key"
    --client-ca-file="$PKI/ca.crt" --token-auth-file="$PKI/token.csv"
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction
    --kubelet-client-certificate="$PKI/kubelet-client.crt" --kubelet-client-key="$PKI/kubelet-client.key"
    --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP
    --service-account-issuer=https://kubernetes.default.svc
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key"
    --service-cluster-ip-range=10.96.0.0/24
    --endpoint-reconciler-type=none
  )
}

# kube_apiserver NAME URL [RESTART] — start (or reuse) kube-apiserver NAME as
# APISERVER_CMD and wait until URL answers /readyz. One running with other flags (an
# older script, another build), or any when RESTART is 1, is restarted with these (its
# clients reconnect).
kube_apiserver() {
  local name="$1" url="$2" restart="${3:-0}"
  if ! is_running "$name" && port_open "127.0.0.1:${url##*:}"; then
    die "127.0.0.1:${url##*:} is in use by a process $(basename "$0") did not start"
  fi
  if { [ "$restart" = 1 ] && is_running "$name"; } || runs_with_other_args "$name" "${APISERVER_CMD[@]}"; then
    log "$name runs with other flags or audit policy: restarting it"
    stop_daemon "$name"
  fi
  start_daemon "$name" "${APISERVER_CMD[@]}"
  api_ready() { curl -sf --cacert "$PKI/ca.crt" -H "Authorization: Bearer $TOKEN" "$1/readyz"; }
  wait_for "$name /readyz (log: $KUMO_STATE/logs/$name.log)" 90 api_ready "$url"
}
