# shellcheck shell=bash
# Where the local Kubernetes lab's tools and config live. Source it (scripts or
# an interactive shell) to get $KUBECTL (the kubectl built with the lab's apiserver,
# same release; /usr/bin/kubectl may be another version) and $KUBECONFIG.
#   source dev/kube/env.sh && "$KUBECTL" get ns
# KUMO_KUBE_VERSION picks the Kubernetes release the lab builds and runs
# (dev/kube/build.sh; docs/install.md names the supported range).
KUMO_ROOT="${KUMO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
KUMO_STATE="${KUMO_STATE:-$KUMO_ROOT/.kumo-dev}"
KUMO_CACHE="${KUMO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kumo}"
KUMO_KUBE_VERSION="${KUMO_KUBE_VERSION:-1.37.2}"
# build.sh links $KUMO_CACHE/kube/v<version> to the newest build of that version; a
# minor (1.29, 1.29.x) is resolved by build.sh, which records it for this file.
_kumo_kube_ver="$KUMO_KUBE_VERSION"
if ! [[ "$_kumo_kube_ver" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] && [ -f "$KUMO_CACHE/kube/resolved-${_kumo_kube_ver%.x}" ]; then
  _kumo_kube_ver="$(cat "$KUMO_CACHE/kube/resolved-${_kumo_kube_ver%.x}")"
fi
KUBECTL="$KUMO_CACHE/kube/v${_kumo_kube_ver#v}/kubectl"
KUBECONFIG="$KUMO_STATE/kubeconfig"
unset _kumo_kube_ver
export KUMO_ROOT KUMO_STATE KUMO_CACHE KUMO_KUBE_VERSION KUBECTL KUBECONFIG
