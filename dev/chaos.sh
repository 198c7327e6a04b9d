#!/usr/bin/env bash
# `make chaos`: the long chaos run on the real local kube-apiserver and OpenStack —
# 100 SIGKILLs of the operator in a random churn (and 18 through a stateful group's life), 10 minutes of churn behind the fault
# proxy, 30 s outages of nova-api and of the Kubernetes API (tests/chaos, docs/testing.md).
# Like dev/test.sh, the lab is brought up first so per-test timeouts measure tests.
# Override any figure from the environment: KUMO_CHAOS_KILLS, KUMO_CHAOS_FAULT_SECONDS,
# KUMO_CHAOS_OUTAGE_SECONDS, KUMO_CHAOS_SEED (replay a run). Extra arguments go to pytest.
source "$(dirname "$0")/lib.sh"
cd "$KUMO_ROOT"
log "starting the local Kubernetes API and OpenStack (first run installs and builds)"
bash dev/kube/up.sh
bash dev/openstack/lab.sh up
export KUMO_CHAOS_KILLS="${KUMO_CHAOS_KILLS:-100}"
export KUMO_CHAOS_FAULT_SECONDS="${KUMO_CHAOS_FAULT_SECONDS:-600}"
log "chaos tests: $KUMO_CHAOS_KILLS kills, ${KUMO_CHAOS_FAULT_SECONDS}s under faults (figures: $KUMO_STATE/logs/chaos-summary.log)"
exec .venv/bin/pytest tests/chaos "$@"
