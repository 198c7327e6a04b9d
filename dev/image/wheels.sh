#!/usr/bin/env bash
# Wheels of every pinned runtime dependency (deploy/image/requirements.lock),
# fetched — or built, if PyPI has only an sdist — on THIS host with Debian's
# python3.11, the image's interpreter and ABI. The image then installs them
# with no index, no compiler and no pip cache in it.
#
# Also copied: the pip wheel of Debian's python3-pip-whl (what `python3 -m venv`
# would install). The image build runs pip straight from that wheel, so pip is
# never installed in the image.
#
# Cached in $KUMO_CACHE/image/wheels-<key>/{deps/*.whl,pip.whl}, keyed by the
# lock file, this script, python3.11's build and the pip wheel. Prints the dir.
#
# Usage: dev/image/wheels.sh   (build.sh calls it under the image lock)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/image/common.sh
source "$HERE/common.sh"
image_lock

LOCK="$KUMO_ROOT/deploy/image/requirements.lock"
[ -s "$LOCK" ] || die "$LOCK is missing: run dev/image/lock.sh"
venv="$(tools_venv)"
pip_whls=(/usr/share/python-wheels/pip-*.whl)
pip_whl="${pip_whls[-1]}"
[ -f "$pip_whl" ] || die "no pip wheel in /usr/share/python-wheels (python3-pip-whl)"

key="$(hash_inputs "$("$PY" -VV) $(dpkg --print-architecture)" "$HERE/wheels.sh" "$LOCK" "$pip_whl")"
dir="$IMAGE_CACHE/wheels-$key"
if ! [ -f "$dir/.complete" ]; then
  log "wheels: fetching the locked dependencies for $("$PY" -V) into $dir"
  rm -rf "$dir" && mkdir -p "$dir/deps"
  "$venv/bin/pip" wheel --quiet --disable-pip-version-check --no-deps --require-hashes \
    --wheel-dir "$dir/deps" -r "$LOCK" >&2 || die "pip wheel failed (see above)"
  want="$(grep -c '^[a-zA-Z]' "$LOCK")" got="$(find "$dir/deps" -name '*.whl' | wc -l)"
  [ "$want" = "$got" ] || die "the lock names $want packages, but $got wheels were made"
  cp "$pip_whl" "$dir/pip.whl"
  touch "$dir/.complete"
  find "$IMAGE_CACHE" -maxdepth 1 -name 'wheels-*' ! -name "wheels-$key" -exec rm -rf {} +
fi
echo "$dir"
