#!/usr/bin/env bash
# The lab's Prometheus: `dev/prometheus.sh install|start|stop|status|reload|url`. Debian's
# `prometheus` package (it brings promtool), on 127.0.0.1 only, scraping every Kumo the lab
# runs: the targets are files under $KUMO_STATE/prometheus/targets/ (file_sd), written by
# whoever starts an operator (dev/operator.sh for `make up`'s, the test suite's fixtures for
# theirs, tests/integration/test_operator_pods.py for the Pods' random ports). Its rules are
# deploy/monitoring/prometheus-rules.yaml (generated from the shipped PrometheusRule) with
# every `for:` shortened to $KUMO_PROMETHEUS_FOR (lab only: an alert can pend and fire
# within a test). Idempotent: a running Prometheus with the same flags is only reloaded
# (rules and config rewritten), never restarted.
source "$(dirname "$0")/lib.sh"
cd "$KUMO_ROOT"
PORT="${KUMO_PROMETHEUS_PORT:-9090}"
INTERVAL="${KUMO_PROMETHEUS_INTERVAL:-2s}"
LAB_FOR="${KUMO_PROMETHEUS_FOR:-10s}"
DIR="$KUMO_STATE/prometheus"
URL="http://127.0.0.1:$PORT"

write_config() {
  mkdir -p "$DIR/targets" "$DIR/data"
  # make up's operator (dev/operator.sh) always has this target; while the test suite
  # pauses it, it is down (up == 0) and its series go stale.
  printf '[{"targets": ["127.0.0.1:%s"], "labels": {"operator": "make-up"}}]\n' \
    "${KUMO_METRICS_PORT:-9464}" >"$DIR/targets/make-up.json.tmp"
  mv "$DIR/targets/make-up.json.tmp" "$DIR/targets/make-up.json"
  .venv/bin/python dev/monitoring/rules.py --lab-for "$LAB_FOR" --output "$DIR/rules.yml.tmp"
  mv "$DIR/rules.yml.tmp" "$DIR/rules.yml"
  cat >"$DIR/prometheus.yml.tmp" <<YAML
# Written by dev/prometheus.sh (the lab's Prometheus); do not edit.
global:
  scrape_interval: $INTERVAL
  scrape_timeout: $INTERVAL
  evaluation_interval: $INTERVAL
rule_files:
  - $DIR/rules.yml
scrape_configs:
  - job_name: kumo   # the ServiceMonitor's job (deploy/monitoring/servicemonitor.yaml)
    metrics_path: /metrics
    file_sd_configs:
      - files: ["$DIR/targets/*.json"]
        refresh_interval: 5s
YAML
  mv "$DIR/prometheus.yml.tmp" "$DIR/prometheus.yml"
}

ready() { curl -sf "$URL/-/ready" >/dev/null; }

case "${1:-}" in
  install) apt_install prometheus ;;  # promtool for the unit tests (tests/unit/test_monitoring.py)
  start)
    apt_install prometheus
    write_config
    cmd=(/usr/bin/prometheus --config.file="$DIR/prometheus.yml"
      --storage.tsdb.path="$DIR/data" --storage.tsdb.retention.time=2d
      --web.listen-address="127.0.0.1:$PORT" --web.enable-lifecycle)
    if runs_with_other_args prometheus "${cmd[@]}"; then stop_daemon prometheus; fi
    if is_running prometheus; then
      curl -sf -X POST "$URL/-/reload" >/dev/null || die "Prometheus refused its new config (see $KUMO_STATE/logs/prometheus.log)"
      log "prometheus already running (pid $(cat "$KUMO_STATE/pids/prometheus.pid")): config and rules reloaded"
    else
      start_daemon prometheus "${cmd[@]}"
      wait_for "Prometheus's /-/ready on port $PORT" 60 ready
    fi
    ;;
  reload) write_config; curl -sf -X POST "$URL/-/reload" >/dev/null ;;
  stop) stop_daemon prometheus ;;
  status) is_running prometheus && ready ;;
  url) echo "$URL" ;;
  *) die "usage: dev/prometheus.sh install|start|stop|status|reload|url" ;;
esac
