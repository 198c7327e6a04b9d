#!/usr/bin/env bash
# Build a current Kubernetes for the lab from Go modules: kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet and kubectl of one release, and
# the etcd server that release pins (go.etcd.io/etcd/server/v3 from its go.mod).
#
# Why this way: no Docker and no downloads besides Debian, PyPI, npm and the Go
# module proxy here, so kind/envtest are impossible and Debian ships no
# kube-apiserver. Kubernetes' commands are ordinary Go packages of the module
# k8s.io/kubernetes; a go.mod of our own requires it and pins each of its staging
# modules (k8s.io/api, k8s.io/apiserver, ...), which upstream replaces by local
# paths, to the matching v0.<minor>.<patch> release. Everything comes through the
# go command's module client (GOPROXY), nothing else is downloaded.
#
# KUMO_KUBE_VERSION picks the release: an exact version (1.37.2) or a minor
# (1.29, 1.29.x: its newest patch the proxy serves). The binaries are cached in
# $KUMO_CACHE/kube/v<version>_<go version>_<script hash>/ (built once per machine,
# ~10 min on 2 cores), the Go module and build caches beside them, so a rebuild
# after a script change only recompiles. $KUMO_CACHE/kube/v<version> links to the
# newest build of that version (dev/kube/env.sh finds kubectl through it).
#
# Usage: dev/kube/build.sh   (prints the directory holding the binaries on stdout)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"
# shellcheck source=dev/kube/env.sh
source "$HERE/env.sh"

command -v go >/dev/null || die "no 'go' on PATH: the lab builds Kubernetes with Go >= 1.26 (see docs/lab.md)"
apt_install openssl curl ca-certificates
export GOMODCACHE="$KUMO_CACHE/go/mod" GOCACHE="$KUMO_CACHE/go/build" GOFLAGS=-mod=mod
export GOTOOLCHAIN=local CGO_ENABLED=0

# --- which release ------------------------------------------------------------
resolve_version() {
  local want="${1#v}" minor
  if [[ "$want" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then echo "$want"; return 0; fi
  minor="${want%.x}"
  [[ "$minor" =~ ^[0-9]+\.[0-9]+$ ]] || die "KUMO_KUBE_VERSION=$1: want X.Y.Z, X.Y or X.Y.x"
  # The proxy's version list, through the go command (no other client).
  local tmp; tmp="$(mktemp -d)"
  (cd "$tmp" && go mod init kumo.dev/probe >/dev/null 2>&1 &&
    go list -m -versions k8s.io/kubernetes) | tr ' ' '\n' | grep -E "^v${minor//./\\.}\.[0-9]+$" |
    sort -V | tail -n1 | sed 's/^v//'
  rm -rf "$tmp"
}
VERSION="$(resolve_version "$KUMO_KUBE_VERSION")"
[ -n "$VERSION" ] || die "the Go module proxy serves no k8s.io/kubernetes $KUMO_KUBE_VERSION"
mkdir -p "$KUMO_CACHE/kube"
# A minor asked for (1.29.x) resolves to a patch; env.sh reads it to find kubectl.
[ "$VERSION" = "${KUMO_KUBE_VERSION#v}" ] || echo "$VERSION" >"$KUMO_CACHE/kube/resolved-${KUMO_KUBE_VERSION%.x}"
MINOR="${VERSION#*.}"; MINOR="${MINOR%%.*}"
GO_VER="$(go env GOVERSION)"
SCRIPT_HASH="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
OUT_DIR="$KUMO_CACHE/kube/v${VERSION}_${GO_VER}_${SCRIPT_HASH}"
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl etcd)

# One build at a time per machine (e.g. two test runs starting together).
exec 9>"$KUMO_CACHE/kube-build.lock"
flock 9
built() { local c; for c in "${COMPONENTS[@]}"; do [ -x "$OUT_DIR/$c" ] || return 1; done; "$OUT_DIR/kube-apiserver" --version >/dev/null 2>&1; }
link() { ln -sfn "$(basename "$OUT_DIR")" "$KUMO_CACHE/kube/v$VERSION"; }
if built; then
  link
  echo "$OUT_DIR"
  exit 0
fi

log "building Kubernetes v$VERSION (${COMPONENTS[*]}) from Go modules with $GO_VER (~10 min on 2 cores the first time)"
start=$SECONDS
WORK="$KUMO_CACHE/kube-build/v$VERSION"
rm -rf "$WORK" && mkdir -p "$WORK/bin"
cd "$WORK"
LOGF="$WORK/build.log"
fail() { cp "$LOGF" "$KUMO_STATE/logs/kube-build.log" 2>/dev/null || true; tail -n 30 "$LOGF" >&2; die "$1 (log: $KUMO_STATE/logs/kube-build.log)"; }

# go.mod: require k8s.io/kubernetes and pin every staging module it replaces by a
# local path (its own go.mod lists them) to v0.<minor>.<patch>.
go mod download -json "k8s.io/kubernetes@v$VERSION" >"$WORK/kube.json" 2>>"$LOGF" \
  || fail "go mod download k8s.io/kubernetes@v$VERSION failed (is the Go module proxy reachable?)"
UPSTREAM_MOD="$(sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p' "$WORK/kube.json")"
# A staging module the proxy does not serve at that version (it serves only part of
# what was published; e.g. the code generators and samples) is replaced by an empty
# stub module: it is in upstream's module graph but no binary imports it. Should one
# be imported after all, the build fails and says so.
STAGING_VERSION="v0.${VERSION#*.}"
{
  printf 'module kumo.dev/lab-kube\n\ngo %s\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' \
    "$(awk '/^go / {print $2; exit}' "$UPSTREAM_MOD")" "$VERSION"
  for module in $(grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$UPSTREAM_MOD" | awk '{print $1}'); do
    if (cd / && GOFLAGS= go list -m -versions "$module" 2>>"$LOGF") | tr ' ' '\n' | grep -qx "$STAGING_VERSION"; then
      printf '\t%s => %s %s\n' "$module" "$module" "$STAGING_VERSION"
    else
      log "the module proxy has no $module $STAGING_VERSION: an empty stub stands in for it"
      mkdir -p "stub/${module#k8s.io/}"
      printf 'module %s\n\ngo 1.21\n' "$module" >"stub/${module#k8s.io/}/go.mod"
      printf '\t%s => ./stub/%s\n' "$module" "${module#k8s.io/}"
    fi
  done
  printf ')\n'
} >go.mod.tmp
mv go.mod.tmp go.mod
# The packages to build, imported so `go mod tidy` resolves their whole graph.
# etcd's server is part of k8s.io/kubernetes' module graph (its test framework
# runs one), so the etcd built is the one this release is tested with.
cat >tools.go <<'EOF'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
	_ "k8s.io/kubectl/pkg/cmd"
)
EOF
go mod tidy >>"$LOGF" 2>&1 || fail "go mod tidy failed"

# Version stamps, as Kubernetes' own hack/lib/version.sh sets them, so
# `kubectl version` and `kube-apiserver --version` tell the truth.
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=v$VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$MINOR"
  stamp+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
go build -trimpath -ldflags "-s -w$stamp" -o "$WORK/bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kubectl go.etcd.io/etcd/server/v3 >>"$LOGF" 2>&1 || fail "go build failed"
mv "$WORK/bin/server" "$WORK/bin/etcd"   # the main package of go.etcd.io/etcd/server/v3

mkdir -p "$OUT_DIR"
for c in "${COMPONENTS[@]}"; do
  install -m 0755 "$WORK/bin/$c" "$OUT_DIR/$c.tmp" && mv "$OUT_DIR/$c.tmp" "$OUT_DIR/$c"
done
cp go.mod go.sum "$OUT_DIR/"
built || die "the built binaries do not run"
link
# Older builds of the same version (another script hash or Go) are superseded; other
# versions stay (KUMO_KUBE_VERSION switches between them). The 1.20 layout goes.
find "$KUMO_CACHE/kube" -mindepth 1 -maxdepth 1 -name "v${VERSION}_*" ! -name "$(basename "$OUT_DIR")" -exec rm -rf {} +
find "$KUMO_CACHE/kube" -mindepth 1 -maxdepth 1 -name '1.20*' -exec rm -rf {} +
rm -rf "$KUMO_CACHE/kubectl-1.20" "$WORK"
log "built Kubernetes $("$OUT_DIR/kube-apiserver" --version) in $((SECONDS - start))s -> $OUT_DIR"
echo "$OUT_DIR"
