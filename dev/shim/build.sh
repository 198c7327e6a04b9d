#!/usr/bin/env bash
# What a boot-shim node runs that the lab does not build already (issue 42, deliverable
# 3): kubeadm of the lab's Kubernetes release, and the images `kubeadm init` names under
# registry.kumo.lab (kube-apiserver, kube-controller-manager, kube-scheduler, etcd and
# pause), each FROM scratch with one static binary: the lab's own build of it
# (dev/kube/build.sh), and dev/kube/pause for the sandbox. Nothing is pulled: a node
# imports the archives into its containerd.
#
# kubeadm is built from the lab build's go.mod (every staging module pinned to the
# release) with the same version stamps, so `kubeadm version` and its preflight checks
# agree with the kubelet. kube-proxy and CoreDNS have no image here: the lab builds no
# kube-proxy, and a node's ClusterConfiguration must disable both (docs/clusters.md).
#
# Cached in $KUMO_CACHE/shim/<release>_<go>_<hash of this script and the pause source>/
# (kubeadm, images/*.oci.tar, images.txt: "<image> <archive>" per line); prints it.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"

REGISTRY=registry.kumo.lab
KUBE_BIN="$(bash "$HERE/../kube/build.sh")"
VERSION="$("$KUBE_BIN/kubelet" --version | awk '{print $2}')" # v1.37.2
PAUSE_SRC="$KUMO_ROOT/dev/kube/pause"
KEY="$(cat "${BASH_SOURCE[0]}" "$PAUSE_SRC/main.go" "$PAUSE_SRC/go.mod" | sha256sum | cut -c1-12)"
OUT="$KUMO_CACHE/shim/${VERSION}_$(go env GOVERSION)_$KEY"
export GOMODCACHE="$KUMO_CACHE/go/mod" GOCACHE="$KUMO_CACHE/go/build" GOFLAGS=-mod=mod
export GOTOOLCHAIN=local CGO_ENABLED=0

mkdir -p "$KUMO_CACHE/shim"
exec 9>"$KUMO_CACHE/shim/build.lock"
flock 9
if [ -x "$OUT/kubeadm" ] && [ -s "$OUT/images.txt" ]; then
  echo "$OUT"
  exit 0
fi
log "building kubeadm $VERSION and the registry.kumo.lab images (once per release)"
start=$SECONDS
WORK="$KUMO_CACHE/shim/work"
rm -rf "$WORK" "$OUT" && mkdir -p "$WORK/ctx" "$OUT/images"
LOGF="$WORK/build.log"
fail() { cp "$LOGF" "$KUMO_STATE/logs/shim-build.log" 2>/dev/null || true; tail -n 30 "$LOGF" >&2; die "$1 (log: $KUMO_STATE/logs/shim-build.log)"; }

# --- kubeadm ---------------------------------------------------------------------------
cp "$KUBE_BIN/go.mod" "$KUBE_BIN/go.sum" "$WORK/"
# The empty stubs dev/kube/build.sh put in for staging modules the proxy does not serve.
for module in $(sed -nE 's#^\s*(k8s\.io/[a-z0-9-]+) => \./stub/.*#\1#p' "$WORK/go.mod"); do
  mkdir -p "$WORK/stub/${module#k8s.io/}"
  printf 'module %s\n\ngo 1.21\n' "$module" >"$WORK/stub/${module#k8s.io/}/go.mod"
done
printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kubeadm/app"\n' >"$WORK/tools.go"
(cd "$WORK" && go mod tidy) >>"$LOGF" 2>&1 || fail "go mod tidy for kubeadm failed"
MINOR="${VERSION#v*.}"; MINOR="${MINOR%%.*}"
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=$VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$MINOR"
  stamp+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
(cd "$WORK" && go build -trimpath -ldflags "-s -w$stamp" -o "$WORK/kubeadm" k8s.io/kubernetes/cmd/kubeadm) \
  >>"$LOGF" 2>&1 || fail "go build of kubeadm failed"
"$WORK/kubeadm" version -o short | grep -qx "$VERSION" || fail "the kubeadm built is not $VERSION"
(cd "$PAUSE_SRC" && go build -trimpath -ldflags "-s -w" -o "$WORK/pause" .) >>"$LOGF" 2>&1 \
  || fail "building pause failed"

# --- the images --------------------------------------------------------------------------
# shellcheck source=dev/image/common.sh
source "$KUMO_ROOT/dev/image/common.sh"
ensure_podman
"$WORK/kubeadm" config images list --kubernetes-version "$VERSION" --image-repository "$REGISTRY" \
  >"$WORK/wanted.txt" 2>>"$LOGF" || fail "kubeadm config images list failed"
while read -r ref; do
  name="${ref#"$REGISTRY"/}" && name="${name%%:*}"
  case "$name" in
    kube-apiserver | kube-controller-manager | kube-scheduler | etcd) bin="$KUBE_BIN/$name" user="" ;;
    pause) bin="$WORK/pause" user="USER 65535:65535" ;;
    *) log "no image for $ref: the lab builds no $name (disable it in the ClusterConfiguration)"; continue ;;
  esac
  rm -rf "$WORK/ctx" && mkdir -p "$WORK/ctx" && cp "$bin" "$WORK/ctx/$name"
  printf 'FROM scratch\nCOPY %s /usr/local/bin/%s\nENV PATH=/usr/local/bin\n%s\nENTRYPOINT ["/usr/local/bin/%s"]\n' \
    "$name" "$name" "$user" "$name" >"$WORK/ctx/Containerfile"
  "${PODMAN[@]}" build -q --network none "${CONTAINER_FLAGS[@]}" -t "$ref" "$WORK/ctx" >>"$LOGF" 2>&1 \
    || fail "podman build of $ref failed"
  "${PODMAN[@]}" save -q --format oci-archive -o "$OUT/images/$name.oci.tar" "$ref" >>"$LOGF" 2>&1 \
    || fail "podman save of $ref failed"
  echo "$ref $OUT/images/$name.oci.tar" >>"$OUT/images.txt.tmp"
done <"$WORK/wanted.txt"
grep -q '/pause:' "$OUT/images.txt.tmp" || fail "kubeadm names no pause image"
install -m 0755 "$WORK/kubeadm" "$OUT/kubeadm"
echo "$KUBE_BIN" >"$OUT/kube-bin"
mv "$OUT/images.txt.tmp" "$OUT/images.txt"
find "$KUMO_CACHE/shim" -mindepth 1 -maxdepth 1 -name "${VERSION}_*" ! -name "$(basename "$OUT")" -exec rm -rf {} +
rm -rf "$WORK"
log "built kubeadm and $(wc -l <"$OUT/images.txt") images in $((SECONDS - start))s -> $OUT"
echo "$OUT"
