#!/usr/bin/env bash
# The lab's node: containerd + runc (Debian's packages) and the kubelet of the lab's
# release (dev/kube/build.sh), registered as node `kumo-lab-node` on 127.0.0.1, so
# `kubectl apply -k deploy/overlays/lab` gives real, Running operator Pods.
#
# What this host needs (docs/lab.md, "The node"): no image can be pulled, so the
# sandbox ("pause") image is built here from dev/kube/pause (a static Go program)
# and imported into containerd's k8s.io namespace, like the operator image; the
# kubelet runs without CAP_SYS_RESOURCE, so it cannot lower oom_score_adj (it logs
# that and goes on) and Guaranteed Pods cannot start (the operator is Burstable);
# Pods use the host network (no CNI plugin is needed for them; containerd is given
# a loopback-only CNI config so the node reports its network ready).
#
# Idempotent; called by dev/kube/up.sh after the control plane. Stopped by
# dev/kube/down.sh. State: $KUMO_STATE/node (containerd root, kubelet root, certs).
#   dev/kube/node.sh               start (or reuse) containerd + kubelet
#   dev/kube/node.sh import-image  import the operator image (make image) into containerd
#   dev/kube/node.sh stop          kill the Pods' containers, stop kubelet and containerd
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"
# shellcheck source=dev/kube/env.sh
source "$HERE/env.sh"

NODE_NAME=kumo-lab-node
NODE_DIR="$KUMO_STATE/node"
RUN_DIR=/run/kumo-lab-node # sockets: short paths (a unix socket path has 108 bytes)
SOCK="$RUN_DIR/containerd.sock"
PKI="$KUMO_STATE/kube/pki"
KUBELET_PORT=10250 KUBELET_HEALTHZ_PORT=10248
CTR=(ctr --address "$SOCK" -n k8s.io)

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# import_oci NAME ARCHIVE — import an OCI archive into containerd as NAME, unless an
# image of that name with the archive's digest is there already.
import_oci() {
  local name="$1" archive="$2" stamp="$NODE_DIR/imported-$(echo "$1" | tr '/:' '__')"
  local key; key="$(stat -c '%s-%Y' "$archive")"
  if [ "$(cat "$stamp" 2>/dev/null)" = "$key" ] && "${CTR[@]}" images ls -q | grep -qx "$name"; then
    return 0
  fi
  log "importing $name into containerd (k8s.io)"
  "${CTR[@]}" images import --base-name "${name%:*}" --index-name "$name" "$archive" >/dev/null \
    || die "ctr images import $archive failed"
  echo "$key" >"$stamp"
}

# Stopping the kubelet and containerd leaves the Pods' containers running (each has
# a shim of its own): `stop` kills them first, then the daemons.
# unmount_under DIR... — what the kubelet and containerd mounted below DIR (Pods'
# token tmpfs, rootfs overlays, the kubelet's bind of its own root), deepest first: left
# mounted, they make `rm -rf` of the lab's state fail with "Device or resource busy".
# Shallowest first, each path until nothing is left on it: the kubelet binds its root
# over itself at every start, so restarts stack tens of thousands of mounts there, and
# unmounting them one by one took minutes; a lazy unmount of the shallowest detaches
# everything below it at once.
unmount_under() {
  local dir mnt
  for dir in "$@"; do
    awk -v d="$dir" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -u |
      while read -r mnt; do
        while umount -l "$mnt" 2>/dev/null; do :; done
      done
  done
}

# stop_node — the kubelet first (it would restart what is killed), then every Pod's
# container (stopping containerd leaves them running: each has a shim of its own), then
# containerd, then what they mounted.
stop_node() {
  stop_daemon kubelet
  if is_running containerd; then
    local task c i
    for task in $("${CTR[@]}" tasks ls -q 2>/dev/null); do
      "${CTR[@]}" tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true
    done
    for ((i = 0; i < 50; i++)); do [ -z "$("${CTR[@]}" tasks ls -q 2>/dev/null)" ] && break; sleep 0.2; done
    for c in $("${CTR[@]}" containers ls -q 2>/dev/null); do
      "${CTR[@]}" tasks delete -f "$c" >/dev/null 2>&1 || true
      "${CTR[@]}" containers rm "$c" >/dev/null 2>&1 || true
    done
  fi
  stop_daemon containerd
  unmount_under "$NODE_DIR" "$RUN_DIR"
}

if [ "${1:-}" = stop ]; then
  stop_node
  exit 0
fi

if [ "${1:-}" = import-image ]; then
  archive="$KUMO_CACHE/image/kumo-dev.oci.tar"
  [ -s "$archive" ] || die "no operator image archive ($archive): run make image"
  import_oci localhost/kumo:dev "$archive"
  exit 0
fi

apt_install containerd runc containernetworking-plugins podman
BIN_DIR="$("$HERE/build.sh")"
mkdir -p "$NODE_DIR" "$RUN_DIR"

# --- the pause image -------------------------------------------------------------
PAUSE_KEY="$(cat "$HERE/pause/main.go" "$HERE/pause/go.mod" | sha256sum | cut -c1-12)"
PAUSE_IMAGE="localhost/kumo-pause:$PAUSE_KEY"
PAUSE_ARCHIVE="$KUMO_CACHE/node/pause-$PAUSE_KEY.oci.tar"
if [ ! -s "$PAUSE_ARCHIVE" ]; then
  log "building the pause image $PAUSE_IMAGE"
  # shellcheck source=dev/image/common.sh
  source "$KUMO_ROOT/dev/image/common.sh"
  ctx="$(mktemp -d)"
  (cd "$HERE/pause" && CGO_ENABLED=0 GOCACHE="$KUMO_CACHE/go/build" GOFLAGS=-mod=mod \
    go build -trimpath -ldflags "-s -w" -o "$ctx/pause" .) || die "building pause failed"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Containerfile"
  "${PODMAN[@]}" build -q --network none "${CONTAINER_FLAGS[@]}" -t "$PAUSE_IMAGE" "$ctx" >/dev/null \
    || die "podman build of the pause image failed"
  mkdir -p "$KUMO_CACHE/node"
  rm -f "$KUMO_CACHE"/node/pause-*.oci.tar
  "${PODMAN[@]}" save -q --format oci-archive -o "$PAUSE_ARCHIVE.tmp" "$PAUSE_IMAGE" \
    && mv "$PAUSE_ARCHIVE.tmp" "$PAUSE_ARCHIVE"
  rm -rf "$ctx"
fi

# --- containerd ----------------------------------------------------------------
mkdir -p "$NODE_DIR/cni/net.d" "$NODE_DIR/containerd"
# Only loopback: host-network Pods (the operator) need no network plugin, and a Pod
# of its own network gets `lo` and nothing that could leave the machine.
# write_if_changed FILE — stdin into FILE, atomically and only when it differs (a
# watched file rewritten in place is read half-written; an unchanged one stays as is).
write_if_changed() {
  cat >"$1.tmp"
  if cmp -s "$1.tmp" "$1"; then rm -f "$1.tmp"; else mv "$1.tmp" "$1"; fi
}
write_if_changed "$NODE_DIR/cni/net.d/10-loopback.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "kumo-lab-loopback", "plugins": [{"type": "loopback"}]}
EOF
containerd_cri_config "$NODE_DIR/containerd/root" "$RUN_DIR/state" "$RUN_DIR" "$PAUSE_IMAGE" \
  "$NODE_DIR/cni/net.d" | write_if_changed "$NODE_DIR/containerd/config.toml"
if ! is_running containerd; then
  [ -S "$SOCK" ] && rm -f "$SOCK"
  start_daemon containerd /usr/bin/containerd --config "$NODE_DIR/containerd/config.toml"
fi
wait_for "containerd on $SOCK (log: $KUMO_STATE/logs/containerd.log)" 60 "${CTR[@]}" version
import_oci "$PAUSE_IMAGE" "$PAUSE_ARCHIVE"
archive="$KUMO_CACHE/image/kumo-dev.oci.tar"
[ -s "$archive" ] && import_oci localhost/kumo:dev "$archive"

# --- the kubelet's credentials: a client certificate of system:node:<name> (the Node
# authorizer and NodeRestriction admission limit it to its own node and Pods) and a
# serving certificate for 127.0.0.1, both from the lab's CA.
if [ ! -s "$NODE_DIR/pki/kubelet.crt" ]; then
  mkdir -p "$NODE_DIR/pki" && chmod 700 "$NODE_DIR/pki"
  (
    cd "$NODE_DIR/pki"
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:nodes/CN=system:node:$NODE_NAME" \
      -keyout client.key -out client.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in client.csr -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
      -days 3650 -extfile client.ext -out client.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$NODE_NAME" -keyout kubelet.key -out kubelet.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:%s,DNS:localhost\nextendedKeyUsage=serverAuth\n' "$NODE_NAME" >kubelet.ext
    openssl x509 -req -in kubelet.csr -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
      -days 3650 -extfile kubelet.ext -out kubelet.crt.tmp 2>/dev/null
    mv kubelet.crt.tmp kubelet.crt
  )
fi
cat >"$NODE_DIR/kubelet.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kumo-dev
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: "$PKI/ca.crt"}
users:
- name: node
  user: {client-certificate: "$NODE_DIR/pki/client.crt", client-key: "$NODE_DIR/pki/client.key"}
contexts:
- name: node
  context: {cluster: kumo-dev, user: node}
current-context: node
EOF
chmod 600 "$NODE_DIR/kubelet.kubeconfig"

# --- kubelet ----------------------------------------------------------------------
# cgroupfs on this host's cgroup v1; no swap check (the VM decides); evictions off
# (a dev machine's disk and memory are the developer's business); the API server
# reaches it only on 127.0.0.1 with a client certificate of the lab's CA.
# This host has cgroup v1 (with a cgroup2 "unified" mount): since 1.35 the kubelet
# refuses v1 unless told otherwise (the field exists since 1.31). Upstream calls v1
# deprecated, not removed.
KUBELET_MINOR="$("$BIN_DIR/kubelet" --version | sed -E 's/.*v1\.([0-9]+)\..*/\1/')"
CGROUP_V1=""
[ "$KUBELET_MINOR" -ge 31 ] && CGROUP_V1="failCgroupV1: false"
write_if_changed "$NODE_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $NODE_DIR/pki/kubelet.crt
tlsPrivateKeyFile: $NODE_DIR/pki/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
$CGROUP_V1
containerRuntimeEndpoint: unix://$SOCK
failSwapOn: false
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podLogsDir: $NODE_DIR/pod-logs
resolvConf: /etc/resolv.conf
maxPods: 30
registerNode: true
serializeImagePulls: false
EOF
# A running node started with other settings (this script or the release changed) is
# restarted with these: start_daemon alone would leave it as it is.
NODE_CONFIG="$(cat "$NODE_DIR/containerd/config.toml" "$NODE_DIR/kubelet.yaml" | sha256sum | cut -c1-16)-$(basename "$BIN_DIR")"
recorded="$(cat "$NODE_DIR/running-config" 2>/dev/null || true)"
if { [ -n "$recorded" ] && [ "$recorded" != "$NODE_CONFIG" ]; } || { [ -z "$recorded" ] && is_running kubelet; }; then
  log "the node's settings changed: restarting containerd and the kubelet"
  stop_node
  start_daemon containerd /usr/bin/containerd --config "$NODE_DIR/containerd/config.toml"
  wait_for "containerd on $SOCK" 60 "${CTR[@]}" version
fi
echo "$NODE_CONFIG" >"$NODE_DIR/running-config"
if ! is_running kubelet && port_open "$KUBELET_PORT"; then
  die "127.0.0.1:$KUBELET_PORT is in use by a process node.sh did not start"
fi
mkdir -p "$NODE_DIR/kubelet" "$NODE_DIR/pod-logs"
start_daemon kubelet "$BIN_DIR/kubelet" \
  --config="$NODE_DIR/kubelet.yaml" --kubeconfig="$NODE_DIR/kubelet.kubeconfig" \
  --root-dir="$NODE_DIR/kubelet" --hostname-override="$NODE_NAME" --node-ip=127.0.0.1
node_ready() {
  [ "$("$KUBECTL" get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
wait_for "node $NODE_NAME Ready (log: $KUMO_STATE/logs/kubelet.log)" 120 node_ready
log "node $NODE_NAME Ready (kubelet $("$BIN_DIR/kubelet" --version | awk '{print $2}'), containerd $(containerd --version | awk '{print $3}'))"
