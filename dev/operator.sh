#!/usr/bin/env bash
# The operator `make up` runs beside the lab: `dev/operator.sh start|stop|status`.
# One place for its command line, so `make up`, `make down` and the test suite (which
# pauses it while its own operators run, then starts it again) agree. It runs with leader
# election like any other Kumo: a second `kumo run` against this cluster waits as standby.
source "$(dirname "$0")/lib.sh"
cd "$KUMO_ROOT"
source dev/kube/env.sh
PORT="${KUMO_METRICS_PORT:-9464}"

case "${1:-}" in
  start)
    "$KUBECTL" create namespace kumo-system --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
    # The lab's Nova publishes notifications on its bus: Kumo hears an out-of-band delete
    # at once (the platform team's setup, docs/install.md "Cloud notifications").
    bus=$(sed -n 's/^transport_url = //p' "$KUMO_STATE/openstack/etc/nova/nova.conf" 2>/dev/null | head -1)
    notify=()
    if [ -n "$bus" ]; then
      "$KUBECTL" -n kumo-system create secret generic kumo-cloud-notifications \
        --from-literal=transport_url="$bus" --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
      notify=(--notifications-secret kumo-system/kumo-cloud-notifications)
    fi
    start_daemon kumo-operator env KUBECONFIG="$KUBECONFIG" "$KUMO_ROOT/.venv/bin/kumo" run \
      --clouds-yaml "$KUMO_STATE/clouds.yaml" --cloud kumo-demo "${notify[@]}" \
      --drift-seconds "${KUMO_DRIFT_SECONDS:-5}" --metrics-port "$PORT"
    wait_for "Kumo's /readyz on port $PORT" 90 curl -sf "http://127.0.0.1:$PORT/readyz"
    ;;
  stop) stop_daemon kumo-operator 30 ;;  # SIGTERM: in-flight reconciles finish, lease released
  status) is_running kumo-operator ;;
  *) die "usage: dev/operator.sh start|stop|status" ;;
esac
