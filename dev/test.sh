#!/usr/bin/env bash
# The whole test suite: lint, unit tests, then integration tests on the real local
# kube-apiserver and OpenStack (their pytest fixtures start them when needed).
source "$(dirname "$0")/lib.sh"
cd "$KUMO_ROOT"
log "lint (ruff)"
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
log "tests"
exec .venv/bin/pytest tests "$@"
