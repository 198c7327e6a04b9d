#!/usr/bin/env bash
# Create/refresh the project virtualenv (.venv) with Kumo and its test tools, every
# package pinned by dev/constraints.txt. Reinstalls only when pyproject.toml or the
# constraints changed, so repeated `make` calls are fast; an install that fails stops
# here with pip's output (no half-made venv is marked as done).
#   dev/venv.sh            create or refresh
#   dev/venv.sh --relock   re-resolve the newest allowed versions into dev/constraints.txt
source "$(dirname "$0")/lib.sh"
cd "$KUMO_ROOT"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
CONSTRAINTS=dev/constraints.txt
stamp=".venv/.kumo-installed"
want="$(cat pyproject.toml "$CONSTRAINTS" | sha256sum | cut -c1-16)"

# Debian's python3 has no venv module (nor ensurepip) without python3-venv.
if ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  apt_install python3-venv "$(basename "$(readlink -f "$(command -v "$PYTHON")")")-venv"
fi
if [ ! -x .venv/bin/python ]; then
  log "creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv || die "python -m venv failed"
fi
if [ "${1:-}" = --relock ]; then
  log "re-resolving Kumo's dependencies into $CONSTRAINTS"
  tmp="$(mktemp -d)"
  "$PYTHON" -m venv "$tmp/venv" && "$tmp/venv/bin/pip" install -q --disable-pip-version-check -e '.[test,bench]' \
    || die "resolving failed"
  { sed -n '1,/^# deploy\/image/p' "$CONSTRAINTS"; "$tmp/venv/bin/pip" freeze --exclude-editable | grep -v '^kumo'; } >"$tmp/c.txt"
  mv "$tmp/c.txt" "$CONSTRAINTS" && rm -rf "$tmp"
  rm -f "$stamp"
  want="$(cat pyproject.toml "$CONSTRAINTS" | sha256sum | cut -c1-16)"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "installing Kumo and test dependencies into .venv (pinned by $CONSTRAINTS)"
  rm -f "$stamp"
  log_file="$KUMO_STATE/logs/venv.log"
  if ! .venv/bin/pip install --disable-pip-version-check -c "$CONSTRAINTS" -e '.[test,bench]' >"$log_file" 2>&1; then
    tail -n 30 "$log_file" >&2
    die "pip install failed (log: $log_file)"
  fi
  .venv/bin/python -c 'import kumo, kopf, openstack, pydantic' || die "venv install is broken"
  .venv/bin/pip check >>"$log_file" 2>&1 || { tail -n 10 "$log_file" >&2; die "pip check failed"; }
  echo "$want" >"$stamp"
fi
