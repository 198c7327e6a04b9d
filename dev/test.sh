#!/usr/bin/env bash
# The whole test suite: lint, unit tests, integration tests on the real local
# kube-apiserver and OpenStack, then a short chaos run. The servers are brought up
# first (built/installed on a fresh machine, reused when running) so per-test timeouts
# measure tests, not installs.
source "$(dirname "$0")/lib.sh"
cd "$KUMO_ROOT"
log "lint (ruff)"
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
log "types (mypy)"
.venv/bin/mypy src bench tests/unit/ports_conformance.py
log "import boundaries (import-linter)"
.venv/bin/lint-imports
log "unit tests"
bash dev/prometheus.sh install   # promtool: the alerts' unit tests (tests/unit/test_monitoring.py)
.venv/bin/pytest tests/unit -q
log "starting the local Kubernetes API and OpenStack (first run installs and builds)"
bash dev/kube/up.sh
bash dev/openstack/lab.sh up
bash dev/prometheus.sh start   # the lab's Prometheus (its tests: tests/integration/test_monitoring.py)
log "the operator image (make image: cached by a hash of its inputs, rebuilt when they change)"
bash dev/image/build.sh
bash dev/helm/build.sh >/dev/null   # Helm for tests/integration/test_helm.py (cached)
# Cluster API for tests/integration/test_capi_provider.py, which starts it for its module
# (cached; a cold build takes minutes, not to be counted in a test's time).
log "Cluster API (dev/capi/build.sh: cached)"
bash dev/capi/build.sh >/dev/null
log "integration tests"
.venv/bin/pytest tests/integration --durations=40 "$@"
# The short chaos run (the long one: make chaos). Its own pytest session: it brings its
# own operators, which must not compete with the integration session's for the lease.
log "chaos (short: 3 kills, a stateful group's life with 6, 30 s of injected faults, nova-api then the Kubernetes API away 15 s each; make chaos runs 100 kills)"
KUMO_CHAOS_KILLS=3 KUMO_CHAOS_FAULT_SECONDS=30 KUMO_CHAOS_OUTAGE_SECONDS=15 \
  .venv/bin/pytest tests/chaos -k 'not outage or outages_in_turn'
