#!/usr/bin/env bash
# Run Kumo's image (make image) as the operator, with podman, on the host
# network — so it reaches the lab's kube-apiserver and OpenStack on 127.0.0.1
# exactly like the `kumo run` process of `make up` does — and stop or kill it.
# For integration tests that need the operator as it ships: non-root (65532),
# read-only root filesystem, no capabilities, files mounted read-only.
#
#   dev/image/run.sh start [--name N] [--image I] [--kubeconfig F] [--clouds-yaml F]
#                          [--file F]... [--env K=V]... [--] [kumo run args...]
#       Starts `kumo run [--kubeconfig ..] [--clouds-yaml ..] ARGS` detached; prints
#       the container ID. --kubeconfig defaults to $KUBECONFIG. The files are copied
#       to $KUMO_STATE/image-run/N/ (readable by uid 65532 only) and mounted at
#       /etc/kumo/ (--file F: /etc/kumo/<basename F>). A kubeconfig must embed its
#       CA and token (the lab's does). Default name: kumo-operator.
#   dev/image/run.sh stop N [SECONDS]   SIGTERM, SIGKILL after SECONDS (30): podman stop
#   dev/image/run.sh kill N             SIGKILL at once (a crash): podman kill -s KILL
#   dev/image/run.sh logs N [ARGS]      podman logs [ARGS] N
#   dev/image/run.sh status N           "running", "exited <code>" or "absent"
#   dev/image/run.sh rm N               remove the container and its staged files
#
# The container is not removed when it stops (its logs stay readable); `start`
# replaces a stopped container of the same name and refuses a running one.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/image/common.sh
source "$HERE/common.sh"

usage() { awk 'NR >= 8 && /^#/ { sub(/^# ?/, ""); print; next } NR >= 8 { exit }' "$0" >&2; exit 2; }

state() {
  "${PODMAN[@]}" container inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$1" 2>/dev/null \
    || echo absent
}

# ensure_image IMAGE — present in podman's store, else loaded from the archive
# `make image` leaves in the cache (another checkout or machine may have built it).
ensure_image() {
  "${PODMAN[@]}" image exists "$1" && return 0
  local archive="$IMAGE_CACHE/kumo-dev.oci.tar" loaded
  [ -s "$archive" ] || die "no image $1 and no $archive: run \`make image\`"
  log "loading $archive"
  loaded="$("${PODMAN[@]}" load --quiet --input "$archive" | sed -n 's/^Loaded image[^:]*: *//p' | tail -n1)"
  "${PODMAN[@]}" tag "$loaded" "$IMAGE_REPO:dev"
  "${PODMAN[@]}" image exists "$1" || die "$archive does not hold $1"
}

start() {
  local name=kumo-operator image="$IMAGE_REPO:dev" kubeconfig="${KUBECONFIG:-}" clouds=""
  local files=() envs=() args=() f
  while [ $# -gt 0 ]; do
    case "$1" in
      --name) name="$2"; shift 2 ;;
      --image) image="$2"; shift 2 ;;
      --kubeconfig) kubeconfig="$2"; shift 2 ;;
      --clouds-yaml) clouds="$2"; shift 2 ;;
      --file) files+=("$2"); shift 2 ;;
      --env) envs+=(--env "$2"); shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  case "$(state "$name")" in
    running*) die "container $name is already running" ;;
    absent) ;;
    *) "${PODMAN[@]}" rm --force "$name" >/dev/null ;;
  esac
  ensure_image "$image"

  # Stage the files: the originals may be root-only (the lab's kubeconfig is 0600).
  local stage="$KUMO_STATE/image-run/$name"
  rm -rf "$stage" && mkdir -p "$stage"
  if [ -n "$kubeconfig" ]; then
    install -m 0400 -o 65532 -g 65532 "$kubeconfig" "$stage/kubeconfig"
    args+=(--kubeconfig /etc/kumo/kubeconfig)
  fi
  if [ -n "$clouds" ]; then
    install -m 0400 -o 65532 -g 65532 "$clouds" "$stage/clouds.yaml"
    args+=(--clouds-yaml /etc/kumo/clouds.yaml)
  fi
  for f in "${files[@]}"; do install -m 0400 -o 65532 -g 65532 "$f" "$stage/$(basename "$f")"; done

  # --read-only keeps a tmpfs on /tmp, /var/tmp and /run (like the emptyDir on /tmp
  # in deploy/manager.yaml). Prints the container ID.
  "${PODMAN[@]}" run --detach --name "$name" --pull never "${CONTAINER_FLAGS[@]}" \
    --network host --read-only --cap-drop all --security-opt no-new-privileges \
    --volume "$stage:/etc/kumo:ro" --label dev.kumo.run=operator "${envs[@]}" \
    "$image" run "${args[@]}" "$@"
}

[ $# -ge 1 ] || usage
cmd="$1"; shift
case "$cmd" in
  start) ensure_podman; start "$@" ;;
  stop) [ $# -ge 1 ] || usage; "${PODMAN[@]}" stop --time "${2:-30}" "$1" >/dev/null ;;
  kill) [ $# -ge 1 ] || usage; "${PODMAN[@]}" kill --signal KILL "$1" >/dev/null ;;
  logs) [ $# -ge 1 ] || usage; name="$1"; shift; "${PODMAN[@]}" logs "$@" "$name" ;;
  status) [ $# -ge 1 ] || usage; s="$(state "$1")"; case "$s" in running*) echo running ;; absent) echo absent ;; *) echo "exited ${s#* }" ;; esac ;;
  rm)
    [ $# -ge 1 ] || usage
    "${PODMAN[@]}" rm --force --ignore "$1" >/dev/null
    rm -rf "${KUMO_STATE:?}/image-run/$1"
    ;;
  *) usage ;;
esac
