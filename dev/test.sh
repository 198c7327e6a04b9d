#!/usr/bin/env bash
# The whole test suite: lint, unit tests, integration tests on the real local
# kube-apiserver and OpenStack, then a short chaos run. The servers are brought up
# first (built/installed on a fresh machine, reused when running) so per-test timeouts
# measure tests, not installs. They start in the background while lint, types and the
# unit tests run (on a fresh machine that hides most of those minutes), and their output
# is printed when the suite waits for them.
source "$(dirname "$0")/lib.sh"
cd "$KUMO_ROOT"
# promtool first: apt takes one install at a time, and the lab's first start installs too.
bash dev/prometheus.sh install   # promtool: the alerts' unit tests (tests/unit/test_monitoring.py)
mkdir -p "$KUMO_STATE/logs"
LAB_LOG="$KUMO_STATE/logs/test-lab-up.log"
log "starting the local Kubernetes API and OpenStack in the background (first run installs and builds; $LAB_LOG)"
(
  bash dev/kube/up.sh
  bash dev/openstack/lab.sh up
  bash dev/prometheus.sh start   # the lab's Prometheus (its tests: tests/integration/test_monitoring.py)
  bash dev/image/build.sh        # the operator image (cached by a hash of its inputs)
  bash dev/helm/build.sh >/dev/null   # Helm for tests/integration/test_helm.py (cached)
  # Cluster API for tests/integration/test_capi_provider.py, which starts it for its
  # module only (cached: a cold build takes minutes, not to be counted in a test's time).
  bash dev/capi/build.sh >/dev/null
) >"$LAB_LOG" 2>&1 &
LAB_PID=$!
# A failed lint or unit phase must not leave the bring-up running unattended.
trap '[ -n "${LAB_PID:-}" ] && kill -0 "$LAB_PID" 2>/dev/null && wait "$LAB_PID"' EXIT
log "lint (ruff)"
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
log "types (mypy)"
.venv/bin/mypy src bench tests/unit/ports_conformance.py
log "import boundaries (import-linter)"
.venv/bin/lint-imports
log "unit tests"
.venv/bin/pytest tests/unit -q
log "waiting for the lab"
lab_status=0
wait "$LAB_PID" || lab_status=$?
LAB_PID=""
cat "$LAB_LOG"
[ "$lab_status" -eq 0 ] || die "the lab did not come up (exit $lab_status; $LAB_LOG)"
log "integration tests"
.venv/bin/pytest tests/integration --durations=40 -o console_output_style=times --timeout 600 "$@"
# The short chaos run (the long one: make chaos). Its own pytest session: it brings its
# own operators, which must not compete with the integration session's for the lease.
log "chaos (short: 3 kills, a stateful group's life with 6, 30 s of injected faults, nova-api then the Kubernetes API away 15 s each; make chaos runs 100 kills)"
KUMO_CHAOS_KILLS=3 KUMO_CHAOS_FAULT_SECONDS=30 KUMO_CHAOS_OUTAGE_SECONDS=15 \
  .venv/bin/pytest tests/chaos -o console_output_style=times -k 'not outage or outages_in_turn'
