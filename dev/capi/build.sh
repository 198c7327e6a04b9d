#!/usr/bin/env bash
# Build Cluster API for the lab from Go modules: the core manager, the kubeadm bootstrap
# manager and the kubeadm control-plane manager of one release, and their CRDs, RBAC and
# webhook configurations kustomized from the module's own config/ directories.
#
# Why this way: as for Kubernetes (dev/kube/build.sh), nothing is downloaded but through
# the go command's module client (GOPROXY); there is no registry for CAPI's images and
# no clusterctl download. The managers are ordinary main packages of the module
# sigs.k8s.io/cluster-api (core/, bootstrap/kubeadm/, controlplane/kubeadm/). A go.mod of
# our own requires it and its API module sigs.k8s.io/cluster-api/api at the same
# version (upstream replaces the latter by ./api, which a dependency's go.mod cannot do).
#
# KUMO_CAPI_VERSION picks the release (default 1.14.2, the newest the proxy serves).
# Everything is cached in $KUMO_CACHE/capi/v<version>-<script hash>/ (bin/, manifests/):
# a change of this script builds anew instead of trusting an old cache. Cold: ~4 min on
# 2 cores; the Go module and build caches are shared with the Kubernetes build.
#
# Usage: dev/capi/build.sh   (prints the directory holding bin/ and manifests/ on stdout)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"
# shellcheck source=dev/kube/env.sh
source "$HERE/../kube/env.sh"

command -v go >/dev/null || die "no 'go' on PATH: the lab builds Cluster API with Go >= 1.26 (see docs/lab.md)"
export GOMODCACHE="$KUMO_CACHE/go/mod" GOCACHE="$KUMO_CACHE/go/build" GOFLAGS=-mod=mod
export GOTOOLCHAIN=local CGO_ENABLED=0

VERSION="${KUMO_CAPI_VERSION:-1.14.2}"
VERSION="${VERSION#v}"
SCRIPT_HASH="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
OUT_DIR="$KUMO_CACHE/capi/v${VERSION}-${SCRIPT_HASH}"
MANAGERS=(capi-manager kubeadm-bootstrap-manager kubeadm-control-plane-manager)
# component name -> its directory in the module
declare -A SRC=([core]=core [bootstrap]=bootstrap/kubeadm [controlplane]=controlplane/kubeadm)

mkdir -p "$KUMO_CACHE/capi"
exec 9>"$KUMO_CACHE/capi-build.lock"
flock 9
built() {
  local m c
  for m in "${MANAGERS[@]}"; do [ -x "$OUT_DIR/bin/$m" ] || return 1; done
  for c in "${!SRC[@]}"; do [ -s "$OUT_DIR/manifests/$c.yaml" ] || return 1; done
  "$OUT_DIR/bin/capi-manager" --help >/dev/null 2>&1
}
if built; then
  echo "$OUT_DIR"
  exit 0
fi
[ -x "$KUBECTL" ] || bash "$HERE/../kube/build.sh" >/dev/null   # kustomize is kubectl's

log "building Cluster API v$VERSION (${MANAGERS[*]}) from Go modules with $(go env GOVERSION) (~4 min on 2 cores the first time)"
start=$SECONDS
WORK="$KUMO_CACHE/capi-build/v$VERSION"
rm -rf "$WORK" && mkdir -p "$WORK/bin"
cd "$WORK"
LOGF="$WORK/build.log"
fail() { cp "$LOGF" "$KUMO_STATE/logs/capi-build.log" 2>/dev/null || true; tail -n 30 "$LOGF" >&2; die "$1 (log: $KUMO_STATE/logs/capi-build.log)"; }

go mod download -json "sigs.k8s.io/cluster-api@v$VERSION" >"$WORK/capi.json" 2>>"$LOGF" \
  || fail "go mod download sigs.k8s.io/cluster-api@v$VERSION failed (is the Go module proxy reachable?)"
MODULE_DIR="$(sed -n 's/^\s*"Dir": "\(.*\)",\?$/\1/p' "$WORK/capi.json")"
UPSTREAM_MOD="$(sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p' "$WORK/capi.json")"
[ -d "$MODULE_DIR/core" ] || fail "sigs.k8s.io/cluster-api@v$VERSION has no core/ (layout changed?)"

# go.mod: upstream's requirements (so the build uses the versions the release was tested
# with), the API module at the same version instead of upstream's ./api replacement.
{
  printf 'module kumo.dev/lab-capi\n\ngo %s\n\n' "$(awk '/^go / {print $2; exit}' "$UPSTREAM_MOD")"
  printf 'require (\n\tsigs.k8s.io/cluster-api v%s\n\tsigs.k8s.io/cluster-api/api v%s\n)\n' "$VERSION" "$VERSION"
  # Upstream's other replace directives (none in 1.14) would be needed here too.
  if grep -E '^replace ' "$UPSTREAM_MOD" | grep -v 'sigs.k8s.io/cluster-api/api => ./api' | grep -q .; then
    fail "upstream go.mod has replace directives this script does not carry over"
  fi
} >go.mod
# Main packages cannot be imported by a tools.go; `go get` of them resolves their graph.
go get "sigs.k8s.io/cluster-api/core@v$VERSION" "sigs.k8s.io/cluster-api/bootstrap/kubeadm@v$VERSION" \
  "sigs.k8s.io/cluster-api/controlplane/kubeadm@v$VERSION" >>"$LOGF" 2>&1 || fail "go get failed"

MINOR="${VERSION#*.}"; MINOR="${MINOR%%.*}"
pkg=sigs.k8s.io/cluster-api/version
stamp=" -X $pkg.gitMajor=1 -X $pkg.gitMinor=$MINOR -X $pkg.gitVersion=v$VERSION"
stamp+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
go build -trimpath -ldflags "-s -w$stamp" -o "$WORK/bin/capi-manager" sigs.k8s.io/cluster-api/core >>"$LOGF" 2>&1 \
  || fail "go build (core) failed"
go build -trimpath -ldflags "-s -w$stamp" -o "$WORK/bin/kubeadm-bootstrap-manager" \
  sigs.k8s.io/cluster-api/bootstrap/kubeadm >>"$LOGF" 2>&1 || fail "go build (kubeadm bootstrap) failed"
go build -trimpath -ldflags "-s -w$stamp" -o "$WORK/bin/kubeadm-control-plane-manager" \
  sigs.k8s.io/cluster-api/controlplane/kubeadm >>"$LOGF" 2>&1 || fail "go build (kubeadm control plane) failed"

# Manifests: each component's config/default kustomized as the release's own install
# set is (namespace, name prefix, provider labels, CRDs with their conversion webhook,
# RBAC with its aggregation, webhook configurations). It also holds the manager's
# Deployment, the webhook Service and cert-manager's Certificate/Issuer, which
# dev/capi/up.sh leaves out: the lab runs the managers as processes with its own CA.
mkdir -p "$WORK/manifests"
for c in "${!SRC[@]}"; do
  "$KUBECTL" kustomize "$MODULE_DIR/${SRC[$c]}/config/default" >"$WORK/manifests/$c.yaml" 2>>"$LOGF" \
    || fail "kustomize ${SRC[$c]}/config/default failed"
done

rm -rf "$OUT_DIR.tmp" && mkdir -p "$OUT_DIR.tmp"
mv "$WORK/bin" "$WORK/manifests" "$OUT_DIR.tmp/"
cp go.mod go.sum "$OUT_DIR.tmp/"
rm -rf "$OUT_DIR" && mv "$OUT_DIR.tmp" "$OUT_DIR"
built || die "the built managers do not run"
# Builds of another script hash are superseded.
find "$KUMO_CACHE/capi" -mindepth 1 -maxdepth 1 -name "v${VERSION}-*" ! -name "$(basename "$OUT_DIR")" -exec rm -rf {} +
rm -rf "$WORK"
log "built Cluster API v$VERSION in $((SECONDS - start))s -> $OUT_DIR"
echo "$OUT_DIR"
