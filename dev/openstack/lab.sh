#!/usr/bin/env bash
# lab.sh up|down|status|wipe|start-service SVC|add-service SVC|reconfigure SVC|up-extra SVC...|smoke SVC — a real
# OpenStack Zed (Debian bookworm packages) on
# 127.0.0.1 with fake hypervisors, for Kumo's integration tests and benchmarks.
#
# Why this shape: every service lives in services/<svc>.sh with the same six functions
# (<svc>_packages/_configure/_bootstrap/_start/_stop/_ready); this script only knows the
# order. Optional: <svc>_cloud, run after the demo cloud exists (e.g. per-project quotas).
# The demo projects and users exist as soon as Keystone is up (cloud.py --identity), so a
# <svc>_bootstrap may already refer to kumo-demo/kumo-other/kumo-bench. Bootstraps are guarded by stamps in $LAB_DATA and daemons by pid files, so a
# second `up` only starts what is not running. See docs/lab.md and shared/LAB.md.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
source "$HERE/common.sh"

# Dependency order; a service whose file does not exist (yet) is skipped.
LAB_ORDER=(mariadb rabbitmq keystone placement glance neutron nova octavia designate manila cinder)
# Services every later bootstrap needs running before it starts.
LAB_CORE=(mariadb rabbitmq keystone)
# Optional services, never started by a plain `up` (so `make up` stays as fast): named in
# KUMO_LAB_EXTRAS (e.g. KUMO_LAB_EXTRAS=heat lab.sh up) or added to a running lab with
# `lab.sh up-extra heat`. Once bootstrapped, down/status/rss/start-service include them.
LAB_EXTRAS=(heat)
LAB_SERVICES=()
for _svc in "${LAB_ORDER[@]}" "${LAB_EXTRAS[@]}"; do
  if [ -f "$HERE/services/$_svc.sh" ]; then
    # shellcheck disable=SC1090
    source "$HERE/services/$_svc.sh"
  fi
done
for _svc in "${LAB_ORDER[@]}"; do
  [ -f "$HERE/services/$_svc.sh" ] && LAB_SERVICES+=("$_svc")
done
unset _svc

in_list() { local x="$1"; shift; local y; for y in "$@"; do [ "$x" = "$y" ] && return 0; done; return 1; }

# lab_add_extras up|all — append the optional services to LAB_SERVICES: those named in
# KUMO_LAB_EXTRAS (comma or space separated); with `all`, also those bootstrapped before.
lab_add_extras() {
  local svc wanted
  wanted=" ${KUMO_LAB_EXTRAS:-} "; wanted="${wanted//,/ }"
  for svc in "${LAB_EXTRAS[@]}"; do
    declare -F "${svc}_start" >/dev/null || continue
    if [[ "$wanted" == *" $svc "* ]] || { [ "$1" = all ] && stamp_done "$svc"; }; then
      in_list "$svc" "${LAB_SERVICES[@]}" || LAB_SERVICES+=("$svc")
    fi
  done
}

# lab_preseed — keep postinst scripts from configuring databases, RabbitMQ or Keystone.
lab_preseed() {
  local p q sel=""
  for p in keystone glance-common glance-api nova-common nova-api nova-conductor nova-scheduler \
    neutron-common neutron-server placement-common placement-api octavia-common octavia-api \
    octavia-worker octavia-health-manager octavia-housekeeping designate-common designate \
    designate-api designate-central manila manila-common manila-api; do
    for q in configure_db dbconfig-install register-endpoint configure_rabbit configure_ksat; do
      sel+="$p $p/$q boolean false"$'\n'
    done
  done
  sel+="keystone keystone/create-admin-tenant boolean false"$'\n'
  # Manila's questions are all named manila/… (owned by manila-common and manila-api).
  sel+="manila-api manila/configure_api-endpoint boolean false"$'\n'
  printf '%s' "$sel" | debconf-set-selections
  for p in "${LAB_SERVICES[@]}"; do
    if declare -F "${p}_preseed" >/dev/null; then "${p}_preseed"; fi
  done
}

lab_install() {
  local pkgs=(python3-openstackclient python3-openstacksdk crudini curl mariadb-client) svc
  for svc in "${LAB_SERVICES[@]}"; do
    # shellcheck disable=SC2207
    pkgs+=($("${svc}_packages"))
  done
  local missing=() p
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  lab_preseed
  # policy-rc.d on these machines keeps packages from starting services; we start our own.
  DEBIAN_FRONTEND=noninteractive apt_install "${pkgs[@]}"
}

lab_up() {
  local t0=$SECONDS t1 t2 t3 svc
  lab_install
  t1=$SECONDS
  lab_write_clouds_yaml
  for svc in "${LAB_SERVICES[@]}"; do
    "${svc}_configure"
    if in_list "$svc" "${LAB_CORE[@]}"; then
      # Core services: bootstrap needs them running (mariadb before its users exist, etc.).
      "${svc}_bootstrap"
      "${svc}_start"
      wait_for "$svc" 180 "${svc}_ready"
      [ "$svc" = keystone ] && lab_cloud --identity
    else
      "${svc}_bootstrap"
      "${svc}_start"
    fi
  done
  t2=$SECONDS
  for svc in "${LAB_SERVICES[@]}"; do
    log "waiting for $svc"
    wait_for "$svc" 300 "${svc}_ready"
  done
  t3=$SECONDS
  log "all services ready; creating the demo cloud"
  lab_cloud
  for svc in "${LAB_SERVICES[@]}"; do
    if declare -F "${svc}_cloud" >/dev/null; then "${svc}_cloud"; fi
  done
  lab_write_clouds_yaml
  log "lab up: install $((t1 - t0))s, configure+bootstrap+start $((t2 - t1))s, ready $((t3 - t2))s, demo cloud $((SECONDS - t3))s (total $((SECONDS - t0))s)"
  log "clouds.yaml: $OS_CLIENT_CONFIG_FILE (entries kumo-admin kumo-demo kumo-other kumo-bench)"
}

# lab_cloud [--identity] — the demo cloud (dev/openstack/cloud.py, idempotent).
lab_cloud() {
  "$PY3" "$HERE/cloud.py" --password "$LAB_PASSWORD" --region "$LAB_REGION" "$@" \
    >>"$KUMO_STATE/logs/cloud.log" 2>&1 \
    || { tail -n 30 "$KUMO_STATE/logs/cloud.log" >&2; die "demo cloud setup failed (logs/cloud.log)"; }
}

# lab_down — stop every service. The API/worker services stop in parallel (each takes a
# few seconds to shut down gracefully); then the core ones in reverse order.
lab_down() {
  local i svc pids=()
  for svc in "${LAB_SERVICES[@]}"; do
    in_list "$svc" "${LAB_CORE[@]}" && continue
    ( "${svc}_stop" || log "WARNING: stopping $svc failed" ) &
    pids+=($!)
  done
  [ "${#pids[@]}" -eq 0 ] || wait "${pids[@]}" || true
  for ((i = ${#LAB_CORE[@]} - 1; i >= 0; i--)); do
    svc="${LAB_CORE[$i]}"
    in_list "$svc" "${LAB_SERVICES[@]}" || continue
    "${svc}_stop" || log "WARNING: stopping $svc failed"
  done
}

lab_status() {
  local svc state rc=0
  for svc in "${LAB_SERVICES[@]}"; do
    if "${svc}_ready" >/dev/null 2>&1; then state=ready; else state="not ready"; rc=1; fi
    printf '%-10s %s\n' "$svc" "$state"
  done
  lab_rss
  return "$rc"
}

# lab_rss — total resident memory of every process the lab recorded (with children).
lab_rss() {
  local f pids=()
  for f in "$KUMO_STATE"/pids/*.pid; do
    [ -f "$f" ] || continue
    case "$(basename "$f" .pid)" in kube*|etcd*|kumo*) continue ;; esac
    pids+=("$(cat "$f")")
  done
  [ "${#pids[@]}" -gt 0 ] || { echo "no lab processes"; return 0; }
  "$PY3" - "${pids[@]}" <<'PY'
import os, sys
roots = {int(p) for p in sys.argv[1:]}
procs = {}
for d in os.listdir("/proc"):
    if d.isdigit():
        try:
            st = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            rss = int(open(f"/proc/{d}/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            procs[int(d)] = (int(st[1]), int(st[3]), rss)  # ppid, session, rss
        except OSError:
            pass
# start_daemon uses setsid: a daemon's session id is its recorded pid.
mine = [p for p, (pp, sid, _) in procs.items() if sid in roots or p in roots]
total = sum(procs[p][2] for p in mine)
print(f"lab processes: {len(mine)}, total RSS {total / 2**30:.2f} GiB")
PY
}

# lab_start_service SVC — start whatever of one service is not running and wait until it
# is ready; its running daemons are left alone (start_daemon skips them). For outage
# tests (tests/chaos): they stop one recorded daemon, e.g. nova-api, and bring it back
# here, so the lab stays exactly as `up` leaves it. The service must be configured and
# bootstrapped (a lab that was `up` once).
lab_start_service() {
  local svc="$1"
  in_list "$svc" "${LAB_SERVICES[@]}" || die "unknown service '$svc' (one of: ${LAB_SERVICES[*]})"
  stamp_done "$svc" || in_list "$svc" "${LAB_CORE[@]}" || die "$svc is not bootstrapped: run lab.sh up"
  "${svc}_start"
  wait_for "$svc" 300 "${svc}_ready"
  log "$svc ready"
}

# lab_reconfigure SVC — write one service's configuration again (e.g. after a new
# KUMO_LAB_PAGE_SIZE) and restart only that service on the running lab, waiting until it
# is ready; no other service is touched. Its database, data and Keystone records stay.
lab_reconfigure() {
  local svc="$1" t0=$SECONDS
  in_list "$svc" "${LAB_SERVICES[@]}" || die "unknown service '$svc' (one of: ${LAB_SERVICES[*]})"
  stamp_done "$svc" || in_list "$svc" "${LAB_CORE[@]}" || die "$svc is not bootstrapped: run lab.sh up"
  "${svc}_configure"
  "${svc}_stop"
  "${svc}_start"
  wait_for "$svc" 300 "${svc}_ready"
  log "$svc reconfigured and restarted in $((SECONDS - t0))s"
}

# lab_add_service SVC — bring one service into a running lab without touching the others:
# install its packages, configure, bootstrap (stamp-guarded), start, wait until ready, run
# its <svc>_cloud. For a service added to LAB_ORDER after the lab was first `up` (e.g.
# manila); a later `up` finds it all done.
lab_add_service() {
  local svc="$1" t0=$SECONDS
  in_list "$svc" "${LAB_SERVICES[@]}" || die "unknown service '$svc' (one of: ${LAB_SERVICES[*]})"
  lab_preseed
  DEBIAN_FRONTEND=noninteractive apt_install $("${svc}_packages")
  log "$svc: packages in $((SECONDS - t0))s"
  "${svc}_configure"
  "${svc}_bootstrap"
  "${svc}_start"
  wait_for "$svc" 300 "${svc}_ready"
  if declare -F "${svc}_cloud" >/dev/null; then "${svc}_cloud"; fi
  log "$svc added in $((SECONDS - t0))s"
}

# lab_up_extra SVC... — add optional services (LAB_EXTRAS) to a running lab; the services
# already running are not touched.
lab_up_extra() {
  local svc core
  for svc in "$@"; do
    in_list "$svc" "${LAB_EXTRAS[@]}" || die "unknown optional service '$svc' (one of: ${LAB_EXTRAS[*]})"
  done
  for core in "${LAB_ORDER[@]}"; do
    in_list "$core" "${LAB_SERVICES[@]}" || continue
    "${core}_ready" >/dev/null 2>&1 || die "$core is not ready: the lab must be up (lab.sh up)"
  done
  for svc in "$@"; do
    in_list "$svc" "${LAB_SERVICES[@]}" || LAB_SERVICES+=("$svc")
    lab_add_service "$svc"
  done
}

# lab_lock — one up/down/wipe/start-service/reconfigure at a time: test sessions and developers may run `up`
# concurrently (a second `up` waits, then finds everything running and returns fast).
lab_lock() {
  exec 9>"$KUMO_STATE/openstack-lab.lock"
  if ! flock -n 9; then
    log "another lab.sh up/down/wipe is running; waiting for it"
    flock -w 1800 9 || die "timed out waiting for the lab lock"
  fi
}

case "${1:-}" in
  up) lab_add_extras up ;;
  up-extra) ;;
  *) lab_add_extras all ;;
esac
case "${1:-}" in
  up) lab_lock; lab_up ;;
  up-extra) [ -n "${2:-}" ] || die "usage: $0 up-extra SVC..."; shift; lab_lock; lab_up_extra "$@" ;;
  smoke)
    if [ -z "${2:-}" ] || ! declare -F "${2}_smoke" >/dev/null; then die "usage: $0 smoke SVC (one with a <svc>_smoke)"; fi
    "${2}_smoke" ;;
  down) lab_lock; lab_down ;;
  status) lab_status ;;
  rss) lab_rss ;;
  wipe) lab_lock; lab_down; rm -rf "$LAB_ROOT" "$OS_CLIENT_CONFIG_FILE"; log "lab wiped" ;;
  start-service) [ -n "${2:-}" ] || die "usage: $0 start-service SVC"; lab_lock; lab_start_service "$2" ;;
  add-service) [ -n "${2:-}" ] || die "usage: $0 add-service SVC"; lab_lock; lab_add_service "$2" ;;
  reconfigure) [ -n "${2:-}" ] || die "usage: $0 reconfigure SVC"; lab_lock; lab_reconfigure "$2" ;;
  *) echo "usage: $0 up|down|status|wipe|start-service SVC|add-service SVC|reconfigure SVC|up-extra SVC...|smoke SVC" >&2; exit 2 ;;
esac
