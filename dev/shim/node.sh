#!/usr/bin/env bash
# A boot-shim node (issue 42, deliverable 3; docs/clusters.md "The boot shim"): what the
# lab's fake Nova does not do for a server, done on this host with namespaces. Run by
# dev/shim/shim.py (as root), one node per server, its disk DISK =
# .kumo-dev/shim/nodes/<server id>:
#
# - network: a namespace of its own (ks-<id8>), eth0 carrying the server's Neutron fixed
#   address, the other end of its veth on the bridge kumo-shim0; forwarding off; the
#   default route on-link, so kubeadm finds its address and nothing beyond the bridge
#   answers. The host reaches it by a /32 route on the bridge (the VIPs' proxy).
# - its own cgroup, kumo-shim/<server id> in every hierarchy: the kubelet's cgroupRoot,
#   what `stop` kills, what the shim reads the node's cost from.
# - a mount namespace: /etc, /usr/local and /var/lib are overlays whose upper layer is on
#   DISK (what cloud-init and kubeadm write persists across the node's reboots, the
#   host's files never change); containerd's root and /var/log are directories of DISK;
#   /run and /tmp are fresh tmpfs at each boot. kubeadm and the kubelet are the lab's
#   build (dev/shim/build.sh), systemctl is dev/shim/systemctl.
# - a UTS namespace: the server's hostname.
# - its own containerd, configured by dev/lib.sh's containerd_cri_config, with the
#   registry.kumo.lab images imported; a loopback-only CNI configuration (no Pod network:
#   the control plane's static Pods use the node's network).
# - cloud-init: the scripts shim.py wrote into DISK/cloud-init from the server's user
#   data: bootcmd at every boot, write_files and runcmd at the first.
#
#   node.sh prepare                    the bridge, kubeadm and the images (cached)
#   node.sh start DISK HOSTNAME ADDR/PREFIX   boot the node (its first process's PID and
#                                      start time go to DISK/init.pid)
#   node.sh stop DISK                  kill everything in its cgroup, drop its network
#   node.sh vip add|del ADDRESS        a VIP on the bridge (shim.py's proxy serves it)
#   node.sh exec DISK CMD...           run CMD inside a running node (debugging, tests)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"

BRIDGE=kumo-shim0
NODES="$KUMO_STATE/shim/nodes"
CGROUPS=/sys/fs/cgroup
PATH_IN_NODE=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# disk DIR — DIR, checked to be a node disk: a server ID directly under $NODES.
disk() {
  local dir
  dir="$(cd "$1" 2>/dev/null && pwd -P)" || die "no node disk $1"
  [ "$(dirname "$dir")" = "$(cd "$NODES" && pwd -P)" ] || die "$1 is not under $NODES"
  [[ "$(basename "$dir")" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]] \
    || die "$1 is not named by a server ID"
  echo "$dir"
}
short() { basename "$1" | cut -c1-8; }
hierarchies() { find "$CGROUPS" -mindepth 1 -maxdepth 1 -type d; }
start_time() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $20}'; }
# init_pid DISK — the PID of the node's first process while it runs, else nothing.
init_pid() {
  local pid started
  read -r pid started 2>/dev/null <"$1/init.pid" || return 1
  [ -n "$pid" ] && [ "$(start_time "$pid")" = "$started" ] && echo "$pid"
}

bridge() {
  ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
  ip link set "$BRIDGE" up
}

cmd_prepare() {
  apt_install iproute2 util-linux containerd runc containernetworking-plugins podman
  bridge
  bash "$HERE/build.sh" >/dev/null
}

cmd_vip() {
  local address="$2"
  case "$1" in
    add)
      bridge
      ip -o addr show dev "$BRIDGE" | grep -q " $address/32 " || ip addr add "$address/32" dev "$BRIDGE"
      ;;
    del) ip addr del "$address/32" dev "$BRIDGE" 2>/dev/null || true ;;
    *) die "usage: node.sh vip add|del ADDRESS" ;;
  esac
}

cmd_start() {
  local dir name="$2" cidr="$3" id ns pid build h f
  mkdir -p "$1"
  dir="$(disk "$1")"
  id="$(basename "$dir")" ns="ks-$(short "$dir")"
  case "$dir/" in # a node mounts its own over these: its disk must not be under them
    /tmp/* | /run/* | /etc/* | /usr/local/* | /var/lib/* | /var/log/*) die "a node disk cannot be under ${dir%/*}" ;;
  esac
  if pid="$(init_pid "$dir")"; then log "node $name already runs (pid $pid)"; return 0; fi
  cmd_stop "$dir" # what a node that died left: its network, its cgroup
  build="$(bash "$HERE/build.sh")"
  bridge
  echo "$cidr" >"$dir/address"
  ip netns add "$ns"
  ip link add "$ns" type veth peer name eth0 netns "$ns"
  ip link set "$ns" master "$BRIDGE" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$cidr" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default dev eth0
  nsenter --net="/run/netns/$ns" sh -c 'echo 0 >/proc/sys/net/ipv4/ip_forward'
  ip route replace "${cidr%/*}/32" dev "$BRIDGE"
  for h in $(hierarchies); do
    mkdir -p "$h/kumo-shim/$id"
    if [ -e "$h/cpuset.cpus" ]; then # a cpuset takes no task before it has CPUs and memory
      for f in cpuset.cpus cpuset.mems; do
        [ -s "$h/kumo-shim/$f" ] || cat "$h/$f" >"$h/kumo-shim/$f"
        cat "$h/kumo-shim/$f" >"$h/kumo-shim/$id/$f"
      done
    fi
  done
  setsid nsenter --net="/run/netns/$ns" -- unshare --mount --uts --propagation private -- \
    bash "$HERE/node.sh" init "$dir" "$name" "$build" </dev/null >>"$dir/init.log" 2>&1 &
  pid=$!
  echo "$pid $(start_time "$pid")" >"$dir/init.pid"
  log "node $name ($id) booting at $cidr: pid $pid, log $dir/init.log"
}

# procs ID — the PIDs in the node's cgroup and below.
procs() {
  find "$CGROUPS/pids/kumo-shim/$1" "$CGROUPS/freezer/kumo-shim/$1" -name cgroup.procs \
    -exec cat {} + 2>/dev/null | sort -u
}

# kill_cgroup ID — every process of the node's cgroup, frozen first so none forks away.
kill_cgroup() {
  local freezer="$CGROUPS/freezer/kumo-shim/$1/freezer.state" i
  for ((i = 0; i < 100; i++)); do
    [ -n "$(procs "$1")" ] || return 0
    if [ -e "$freezer" ]; then echo FROZEN >"$freezer" || true; fi
    procs "$1" | xargs -r kill -KILL 2>/dev/null || true
    if [ -e "$freezer" ]; then echo THAWED >"$freezer" || true; fi
    sleep 0.2
  done
  log "node $1: processes left in its cgroup: $(procs "$1" | tr '\n' ' ')"
}

cmd_stop() {
  local dir id ns cidr h pid=""
  dir="$(disk "$1")"
  id="$(basename "$dir")" ns="ks-$(short "$dir")"
  if pid="$(init_pid "$dir")"; then log "stopping node $id (pid $pid)"; fi
  kill_cgroup "$id"
  if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
  for h in $(hierarchies); do
    if [ -d "$h/kumo-shim/$id" ]; then
      find "$h/kumo-shim/$id" -depth -type d -exec rmdir {} + 2>/dev/null || true
    fi
  done
  ip netns del "$ns" 2>/dev/null || true
  ip link del "$ns" 2>/dev/null || true
  cidr="$(cat "$dir/address" 2>/dev/null || true)"
  if [ -n "$cidr" ]; then ip route del "${cidr%/*}/32" dev "$BRIDGE" 2>/dev/null || true; fi
  rm -f "$dir/init.pid"
}

cmd_exec() {
  local dir pid
  dir="$(disk "$1")"
  shift
  pid="$(init_pid "$dir")" || die "node $(basename "$dir") is not running"
  exec nsenter -t "$pid" --net --mount --uts -- env PATH="$PATH_IN_NODE" "$@"
}

# --- inside the node: its first process ---------------------------------------------------

# overlay DIR DISK NAME — DIR as it is on the host, with the node's changes on DISK.
overlay() {
  mkdir -p "$2/$3" "$2/work/$3"
  mount -t overlay "kumo-shim-$3" -o "lowerdir=$1,upperdir=$2/$3,workdir=$2/work/$3" "$1"
}

# bind_file SOURCE TARGET — SOURCE seen at TARGET (created empty first if missing).
bind_file() {
  [ -e "$2" ] || { mkdir -p "$(dirname "$2")" && touch "$2"; }
  mount --bind "$1" "$2"
}

# import_images BUILD — the registry.kumo.lab images into the node's containerd.
import_images() {
  local ctr=(ctr --address /run/containerd/containerd.sock -n k8s.io) ref archive
  wait_for "the node's containerd" 120 "${ctr[@]}" version
  while read -r ref archive; do
    "${ctr[@]}" images ls -q | grep -qx "$ref" && continue
    "${ctr[@]}" images import --base-name "${ref%:*}" --index-name "$ref" "$archive" >/dev/null \
      || { log "importing $ref from $archive failed"; return 1; }
  done <"$1/images.txt"
}

# cloud_init DISK — bootcmd at every boot; write_files then runcmd at the first only.
cloud_init() {
  local scripts="$1/cloud-init" rc=0
  sh "$scripts/bootcmd.sh" || log "bootcmd failed ($?)"
  [ -e "$scripts/done" ] && return 0
  sh "$scripts/write-files.sh" && sh "$scripts/runcmd.sh" || rc=$?
  echo "$rc $(date +%s)" >"$scripts/done"
  log "cloud-init finished: exit $rc"
}

cmd_init() {
  local dir="$1" name="$2" build="$3" id h kube_bin pause cidr
  id="$(basename "$dir")"
  kube_bin="$(cat "$build/kube-bin")"
  cidr="$(cat "$dir/address")"
  for h in $(hierarchies); do
    echo $$ >"$h/kumo-shim/$id/cgroup.procs" || log "cannot join $h/kumo-shim/$id"
  done
  hostname "$name"
  overlay /etc "$dir" etc
  overlay /usr/local "$dir" usr-local
  overlay /var/lib "$dir" var-lib
  mkdir -p "$dir/containerd" "$dir/log" /var/lib/containerd
  mount --bind "$dir/containerd" /var/lib/containerd # overlayfs snapshots need a real fs
  mount --bind "$dir/log" /var/log
  mount -t tmpfs -o mode=0755 kumo-shim-run /run
  mount -t tmpfs -o mode=1777 kumo-shim-tmp /tmp
  # kubeadm's preflight wants IPv4 forwarding on; the namespace's stays off.
  echo 1 >"$dir/ip_forward"
  mount --bind "$dir/ip_forward" /proc/sys/net/ipv4/ip_forward || log "ip_forward: kubeadm's check will fail"
  bind_file "$build/kubeadm" /usr/local/bin/kubeadm
  bind_file "$kube_bin/kubelet" /usr/local/bin/kubelet
  bind_file "$HERE/systemctl" /usr/local/bin/systemctl
  if [ -e /usr/bin/systemctl ]; then mount --bind "$HERE/systemctl" /usr/bin/systemctl; fi

  # --- /etc, as an image would have it ---
  echo "$name" >/etc/hostname
  printf '127.0.0.1 localhost\n%s %s\n' "${cidr%/*}" "$name" >/etc/hosts
  echo "${id//-/}" >/etc/machine-id
  pause="$(awk '$1 ~ /\/pause:/ {print $1}' "$build/images.txt")"
  mkdir -p /etc/containerd /etc/cni/net.d /etc/kumo-shim/units /etc/kumo-shim/kubelet.conf.d
  containerd_cri_config /var/lib/containerd /run/containerd /run/containerd "$pause" /etc/cni/net.d \
    >/etc/containerd/config.toml
  printf '{"cniVersion": "1.0.0", "name": "kumo-shim-loopback", "plugins": [{"type": "loopback"}]}\n' \
    >/etc/cni/net.d/10-loopback.conflist
  export KUMO_SHIM_UNITS=/etc/kumo-shim/units KUMO_SHIM_RUN="$dir/units" KUMO_SHIM_LOGS=/var/log/kumo-shim
  printf 'KUMO_SHIM_UNITS=%s\nKUMO_SHIM_RUN=%s\nKUMO_SHIM_LOGS=%s\n' \
    "$KUMO_SHIM_UNITS" "$KUMO_SHIM_RUN" "$KUMO_SHIM_LOGS" >/etc/kumo-shim/env
  printf '#!/bin/sh\nexec /usr/bin/containerd --config /etc/containerd/config.toml\n' \
    >/etc/kumo-shim/units/containerd.service
  # The kubelet as kubeadm's drop-in (10-kubeadm.conf) starts it, with the node's own
  # settings last: cgroupfs under the node's cgroup, cgroup v1 allowed, no swap check, no
  # eviction and no image garbage collection (an image cannot be pulled back here).
  cat >/etc/kumo-shim/units/kubelet.service <<'EOF'
#!/bin/sh
KUBELET_KUBEADM_ARGS="" KUBELET_EXTRA_ARGS=""
[ -r /var/lib/kubelet/kubeadm-flags.env ] && . /var/lib/kubelet/kubeadm-flags.env
[ -r /etc/default/kubelet ] && . /etc/default/kubelet
exec /usr/local/bin/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf \
  --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml \
  --config-dir=/etc/kumo-shim/kubelet.conf.d $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
EOF
  cat >/etc/kumo-shim/kubelet.conf.d/90-kumo-shim.conf <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /kumo-shim/$id
failCgroupV1: false
failSwapOn: false
evictionHard: {memory.available: "0%", nodefs.available: "0%", nodefs.inodesFree: "0%", imagefs.available: "0%", imagefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
  chmod 0755 /etc/kumo-shim/units/*.service
  touch /etc/kumo-shim/units/containerd.enabled /etc/kumo-shim/units/kubelet.enabled
  echo 10 >/etc/kumo-shim/units/kubelet.restart-seconds # RestartSec of kubeadm's unit

  export PATH="$PATH_IN_NODE" HOME=/root
  cd /
  (import_images "$build" && cloud_init "$dir") >>/var/log/cloud-init-output.log 2>&1 &
  exec "$HERE/systemctl" __supervise
}

case "${1:-}" in
  prepare) cmd_prepare ;;
  start) [ $# -eq 4 ] || die "usage: node.sh start DISK HOSTNAME ADDRESS/PREFIX"; cmd_start "$2" "$3" "$4" ;;
  stop) [ $# -eq 2 ] || die "usage: node.sh stop DISK"; cmd_stop "$2" ;;
  vip) [ $# -eq 3 ] || die "usage: node.sh vip add|del ADDRESS"; cmd_vip "$2" "$3" ;;
  exec) [ $# -ge 3 ] || die "usage: node.sh exec DISK CMD..."; shift; cmd_exec "$@" ;;
  init) shift; cmd_init "$@" ;;
  *) die "usage: node.sh prepare | start DISK HOSTNAME ADDRESS/PREFIX | stop DISK | vip add|del ADDRESS | exec DISK CMD..." ;;
esac
