# shellcheck shell=bash
# Where the local Kubernetes lab's tools and config live. Source it (scripts or
# an interactive shell) to get $KUBECTL (Debian's kubectl 1.20, matching the
# v1.20 apiserver; /usr/bin/kubectl may be another version) and $KUBECONFIG.
#   source dev/kube/env.sh && "$KUBECTL" get ns
KUMO_ROOT="${KUMO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
KUMO_STATE="${KUMO_STATE:-$KUMO_ROOT/.kumo-dev}"
KUMO_CACHE="${KUMO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kumo}"
KUBECTL="$KUMO_CACHE/kubectl-1.20/kubectl"
KUBECONFIG="$KUMO_STATE/kubeconfig"
export KUMO_ROOT KUMO_STATE KUMO_CACHE KUBECTL KUBECONFIG
