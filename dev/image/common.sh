# shellcheck shell=bash
# Shared settings of the image scripts (sourced by build.sh, base.sh, wheels.sh,
# lock.sh, run.sh; never run). Why a file of its own: every podman call of ours
# must use the same storage and the same runtime flags, or `run.sh` would not
# find what `build.sh` built, and containers would not start on this kind of host.
#
# What this host needed (found in a Firecracker VM, root without CAP_SYS_RESOURCE,
# cgroup v1 plus a cgroup2 "unified" mount):
#   * runtime runc: crun 1.8 refuses "cgroups in hybrid mode"; runc works with
#     cgroup v1 (so --memory etc. work too and no --cgroups=disabled is needed).
#   * --ulimit nofile/nproc no higher than the host's hard limits: podman asks for
#     nofile=1048576 by default, and raising a hard limit needs CAP_SYS_RESOURCE.
#     Rootful podman lowers its own nproc to 32768 before starting the runtime.
#   * storage: the system default (overlay, /var/lib/containers) works. Where it
#     does not, KUMO_PODMAN_STORAGE_DRIVER=vfs puts our images in a store of our own.
# shellcheck source=dev/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

IMAGE_CACHE="$KUMO_CACHE/image"
# shellcheck disable=SC2034 # used by the scripts that source this file
IMAGE_REPO="localhost/kumo"
PY=/usr/bin/python3.11 # Debian's python3.11: the same interpreter (and ABI) as in the image
mkdir -p "$IMAGE_CACHE"

# PODMAN: the podman command line every script uses (global options included).
PODMAN=(podman)
if [ -n "${KUMO_PODMAN_STORAGE_DRIVER:-}" ]; then
  PODMAN+=(--storage-driver "$KUMO_PODMAN_STORAGE_DRIVER"
    --root "$IMAGE_CACHE/storage-$KUMO_PODMAN_STORAGE_DRIVER"
    --runroot "/run/kumo-podman-$KUMO_PODMAN_STORAGE_DRIVER")
fi

# CONTAINER_FLAGS: what `podman run` and `podman build` need to start a container here.
_hard_nofile="$(ulimit -Hn)" _hard_nproc="$(ulimit -Hu)"
[ "$_hard_nofile" = unlimited ] || [ "$_hard_nofile" -gt 1048576 ] && _hard_nofile=1048576
[ "$_hard_nproc" = unlimited ] || [ "$_hard_nproc" -gt 32768 ] && _hard_nproc=32768
# shellcheck disable=SC2034 # used by the scripts that source this file
CONTAINER_FLAGS=(--runtime runc --ulimit "nofile=$_hard_nofile:$_hard_nofile"
  --ulimit "nproc=$_hard_nproc:$_hard_nproc")
unset _hard_nofile _hard_nproc

# ensure_podman — podman and runc from Debian, and a store that answers.
ensure_podman() {
  apt_install podman runc
  "${PODMAN[@]}" info --format '{{.Store.GraphDriverName}}' >/dev/null 2>&1 \
    || die "podman cannot open its storage (try KUMO_PODMAN_STORAGE_DRIVER=vfs): $("${PODMAN[@]}" info 2>&1 | tail -n 1)"
}

# kumo_version — the version in pyproject.toml, checked against kumo.__version__.
kumo_version() {
  local py init
  py="$("$PY" -c 'import tomllib,sys; print(tomllib.load(open(sys.argv[1],"rb"))["project"]["version"])' "$KUMO_ROOT/pyproject.toml")"
  init="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$KUMO_ROOT/src/kumo/__init__.py")"
  [ "$py" = "$init" ] || die "pyproject.toml says $py, src/kumo/__init__.py says $init"
  echo "$py"
}

# hash_inputs TEXT FILE|DIR... — a short hash of TEXT and of the named files
# (directories: every file under them, bytecode and egg-info excluded), each named by
# its path relative to the checkout, so two checkouts of one commit agree.
# The cache keys are made of these.
hash_inputs() {
  local text="$1" p; shift
  {
    printf '%s\n' "$text"
    for p in "$@"; do
      if [ -d "$p" ]; then
        printf 'dir %s\n' "${p#"$KUMO_ROOT"/}"
        (cd "$p" && find . -type f ! -path '*/__pycache__/*' ! -name '*.pyc' \
          ! -path '*.egg-info/*' -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
      else
        printf '%s  %s\n' "${p#"$KUMO_ROOT"/}" "$(sha256sum <"$p" | cut -d' ' -f1)"
      fi
    done
  } | sha256sum | cut -c1-16
}

# tools_venv — path of a venv of Debian's python3.11 (with Debian's pip) outside
# the checkout, for fetching wheels and compiling the lock file. Made once per
# python3.11 build; PKG... (pinned) are installed into it when missing.
# shellcheck disable=SC2120 # the packages are optional
tools_venv() {
  apt_install python3.11 python3.11-venv
  local venv p
  venv="$IMAGE_CACHE/pyvenv-$(hash_inputs "$("$PY" -VV)" "$PY")"
  if ! [ -x "$venv/bin/pip" ]; then
    log "creating $venv"
    rm -rf "$venv" && "$PY" -m venv "$venv" >&2
  fi
  for p in "$@"; do
    [ "$("$venv/bin/python" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' \
      "${p%%==*}" 2>/dev/null)" = "${p#*==}" ] \
      || "$venv/bin/pip" install -q --disable-pip-version-check "$p" >&2
  done
  echo "$venv"
}

# image_lock — hold $IMAGE_CACHE/build.lock (fd 9) for the rest of this script and
# its children, so two builds do not write the same cache entries or tags at once.
image_lock() {
  [ -n "${KUMO_IMAGE_LOCKED:-}" ] && return 0
  exec 9>"$IMAGE_CACHE/build.lock"
  flock -n 9 || { log "waiting for another image build (lock $IMAGE_CACHE/build.lock)"; flock -w 1800 9; } \
    || die "another image build held the lock for 30 minutes"
  export KUMO_IMAGE_LOCKED=1
}
