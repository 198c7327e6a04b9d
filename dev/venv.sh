#!/usr/bin/env bash
# Create/refresh the project virtualenv (.venv) with Kumo and its test tools.
# Reinstalls only when pyproject.toml changed, so repeated `make` calls are fast.
source "$(dirname "$0")/lib.sh"
cd "$KUMO_ROOT"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
stamp=".venv/.kumo-installed"
want="$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -x .venv/bin/python ]; then
  log "creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "installing Kumo and test dependencies into .venv"
  .venv/bin/pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v '^WARNING: Location' || true
  .venv/bin/python -c 'import kumo, kopf, openstack, pydantic' || die "venv install failed"
  echo "$want" >"$stamp"
fi
