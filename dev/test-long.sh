#!/usr/bin/env bash
# `make test-long`: the slow variants of checks `make test` keeps small (tests marked
# `long`: the restart barrier under a 50-VM group, the leader killed during a scale-out
# of 20). Brings the lab up as `make test` does; docs/testing.md.
source "$(dirname "$0")/lib.sh"
cd "$KUMO_ROOT"
bash dev/kube/up.sh
bash dev/openstack/lab.sh up
bash dev/prometheus.sh start
log "integration tests marked long"
KUMO_TEST_LONG=1 .venv/bin/pytest tests/integration -m long --durations=10 \
  -o console_output_style=times "$@"
