#!/usr/bin/env bash
# Shared helpers for Kumo's local environment scripts (sourced, never run).
# Everything a script starts is recorded under $KUMO_STATE (pids/, logs/) so
# `make down` stops exactly what `make up` started. Expensive builds are cached
# under $KUMO_CACHE, outside the checkout.
set -euo pipefail

KUMO_ROOT="${KUMO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
# By default its real path: a git worktree links .kumo-dev to the main checkout's, and the
# daemons' command lines name files in it, so a script run from the worktree must name
# them as the lab's did (dev/kube/up.sh restarts an API server whose command line differs).
KUMO_STATE="${KUMO_STATE:-$(mkdir -p "$KUMO_ROOT/.kumo-dev" && cd "$KUMO_ROOT/.kumo-dev" && pwd -P)}"
KUMO_CACHE="${KUMO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kumo}"
export KUMO_ROOT KUMO_STATE KUMO_CACHE
mkdir -p "$KUMO_STATE/pids" "$KUMO_STATE/logs" "$KUMO_CACHE"

log() { printf '[kumo-dev %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# apt_install PKG... — install Debian packages non-interactively, waiting for
# the dpkg lock (several scripts may install at once). No-op when all present.
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "apt: installing ${missing[*]}"
  ensure_service_blocker
  apt_update_once
  DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=1200 \
    install --no-install-recommends "${missing[@]}" >>"$KUMO_STATE/logs/apt.log" 2>&1 \
    || { tail -n 30 "$KUMO_STATE/logs/apt.log" >&2; die "apt-get install failed"; }
}

# ensure_service_blocker — packages must not start their services when installed: the
# lab starts every daemon itself, on its own ports and data (MariaDB, RabbitMQ, the
# OpenStack APIs would otherwise take 3306, 5672, ... from apt's postinst). Debian asks
# /usr/sbin/policy-rc.d before invoke-rc.d starts anything; exit 101 means "not now".
# Some machines ship one (container images do); a fresh one gets ours.
ensure_service_blocker() {
  local blocker=/usr/sbin/policy-rc.d
  if [ ! -x "$blocker" ]; then
    log "apt: adding $blocker so installed packages do not start their services"
    printf '#!/bin/sh\n# Added by Kumo (dev/lib.sh): the lab starts its daemons itself.\nexit 101\n' >"$blocker.tmp"
    chmod 0755 "$blocker.tmp" && mv "$blocker.tmp" "$blocker"
  fi
}

# apt_update_once — `apt-get update` at most once per hour (sources may change).
apt_update_once() {
  local stamp="$KUMO_CACHE/apt-updated"
  if [ -z "$(find "$stamp" -mmin -60 2>/dev/null)" ] || [ "${KUMO_APT_FORCE_UPDATE:-0}" = 1 ]; then
    log "apt: update"
    apt-get -q -o DPkg::Lock::Timeout=1200 update >>"$KUMO_STATE/logs/apt.log" 2>&1 || die "apt-get update failed"
    touch "$stamp"
  fi
}

# is_running NAME — true when the recorded PID of NAME is alive.
is_running() {
  local pidfile="$KUMO_STATE/pids/$1.pid"
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

# start_daemon NAME CMD... — start CMD detached (own session), log to
# logs/NAME.log, record its PID. Does nothing if NAME is already running.
start_daemon() {
  local name="$1"; shift
  if is_running "$name"; then log "$name already running (pid $(cat "$KUMO_STATE/pids/$name.pid"))"; return 0; fi
  log "starting $name"
  # fds 3-9 are closed: scripts hold their flock on fd 9 (dev/openstack/lab.sh), and
  # `flock FILE CMD` (the shared /tmp/kumo-lab.lock) passes its lock as fd 3; a daemon that
  # inherited either would keep the lock for its whole life.
  setsid nohup "$@" >>"$KUMO_STATE/logs/$name.log" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! >"$KUMO_STATE/pids/$name.pid"
}

# runs_with_other_args NAME CMD... — true when NAME is running the same program as CMD,
# but not as CMD (its flags changed since it was started): the caller stops it and
# starts it anew. A recorded PID that now runs another program (a stale pidfile after a
# reboot, the PID reused) is never taken for it.
runs_with_other_args() {
  local name="$1"; shift
  is_running "$name" || return 1
  local cmdline="/proc/$(cat "$KUMO_STATE/pids/$name.pid")/cmdline" program
  program="$(tr '\0' '\n' <"$cmdline" 2>/dev/null | head -n 1)" || return 1
  [ "$(basename -- "$program")" = "$(basename -- "$1")" ] || return 1
  ! cmp -s <(printf '%s\0' "$@") "$cmdline"
}

# stop_daemon NAME [TIMEOUT] — TERM the process group of NAME, KILL after TIMEOUT s.
stop_daemon() {
  local name="$1" timeout="${2:-20}" pidfile="$KUMO_STATE/pids/$1.pid" pid i
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping $name (pid $pid)"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < timeout * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

# wait_for DESCRIPTION TIMEOUT_S CMD... — poll CMD until it succeeds.
wait_for() {
  local desc="$1" timeout="$2"; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "timed out after ${timeout}s waiting for $desc"
    sleep 0.5
  done
}

# containerd_cri_config ROOT STATE SOCKET_DIR SANDBOX_IMAGE CNI_CONF_DIR — print a
# containerd configuration (version 2) for one kubelet's CRI: its own root and state,
# sockets in SOCKET_DIR, runc with cgroupfs, the sandbox image given (no image can be
# pulled here, so it must be imported), CNI plugins from Debian's package. One function
# for every node the lab runs (dev/kube/node.sh's, dev/shim/node.sh's), so they differ
# only where their arguments do.
containerd_cri_config() {
  local root="$1" state="$2" sockets="$3" sandbox="$4" cni="$5"
  cat <<EOF
version = 2
root = "$root"
state = "$state"
[grpc]
  address = "$sockets/containerd.sock"
[ttrpc]
  address = "$sockets/containerd-ttrpc.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$sandbox"
  enable_selinux = false
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$cni"
EOF
}
