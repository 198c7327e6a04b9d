#!/usr/bin/env bash
# Build Helm (the `helm` command) from its Go module helm.sh/helm/v3 with this machine's
# Go, once per machine: no other download than the Go module proxy (docs/lab.md).
#
# KUMO_HELM_VERSION picks the release (default below: the newest v3 the module proxy
# serves when this was written). The binary is cached in
# $KUMO_CACHE/helm/v<version>_<go version>_<script hash>/helm, the Go module and build
# caches beside the Kubernetes build's, so a changed version, Go or script rebuilds.
# One build at a time per machine (a flock).
#
# Usage: dev/helm/build.sh   (prints the helm binary's path on stdout; `make helm-bin`)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"

VERSION="${KUMO_HELM_VERSION:-3.22.0}"
VERSION="${VERSION#v}"
command -v go >/dev/null || die "no 'go' on PATH: Helm is built from its Go module (see docs/lab.md)"
export GOMODCACHE="$KUMO_CACHE/go/mod" GOCACHE="$KUMO_CACHE/go/build" GOFLAGS=-mod=mod
export GOTOOLCHAIN=local CGO_ENABLED=0
KEY="v${VERSION}_$(go env GOVERSION)_$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
OUT="$KUMO_CACHE/helm/$KEY/helm"
mkdir -p "$KUMO_CACHE/helm"
exec 9>"$KUMO_CACHE/helm-build.lock"
flock 9
if [ -x "$OUT" ] && "$OUT" version --short >/dev/null 2>&1; then
  echo "$OUT"
  exit 0
fi
log "building Helm v$VERSION from helm.sh/helm/v3 with $(go env GOVERSION) (a few minutes the first time)"
start=$SECONDS
WORK="$KUMO_CACHE/helm-build/v$VERSION"
rm -rf "$WORK" && mkdir -p "$WORK"
LOGF="$KUMO_STATE/logs/helm-build.log"
: >"$LOGF"
# A module of our own requiring Helm's: `go install pkg@version` refuses modules with
# replace directives, and this keeps Helm's own go.mod requirements (its go.sum is
# checked against sum.golang.org as usual).
(
  cd "$WORK"
  go mod init kumo.dev/helm-build
  go get "helm.sh/helm/v3@v$VERSION"
  # Helm prints its version from these variables (`helm version`), as its Makefile sets them.
  go build -trimpath -o "$OUT.tmp" \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=v$VERSION" \
    helm.sh/helm/v3/cmd/helm
) >>"$LOGF" 2>&1 || { tail -n 30 "$LOGF" >&2; die "building Helm v$VERSION failed (log: $LOGF)"; }
mv "$OUT.tmp" "$OUT"
rm -rf "$WORK"
find "$KUMO_CACHE/helm" -mindepth 1 -maxdepth 1 ! -name "$KEY" -exec rm -rf {} +
log "Helm v$VERSION built in $((SECONDS - start)) s: $OUT"
echo "$OUT"
