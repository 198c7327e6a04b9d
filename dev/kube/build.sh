#!/usr/bin/env bash
# Build a real kube-apiserver and kube-controller-manager (v1.20.2) from Debian's own
# source package, and fetch Debian's kubectl 1.20 to go with them. The controller
# manager makes the lab behave like a cluster: namespaces are finalized, ownerReference
# garbage collection runs, ServiceAccounts get token Secrets (the operator runs with
# its own ServiceAccount's token and exactly deploy/base/rbac.yaml), Deployments get
# ReplicaSets.
#
# Why: no Docker and no downloads besides Debian/PyPI here, so kind/envtest are
# impossible; Debian ships the sources but no kube-apiserver binary. It must be
# built with Go 1.15 (bullseye): Go >= 1.18 builds a binary that segfaults on
# the first custom-resource create (vendored reflect2 predates Go 1.18).
# The binaries are cached in $KUMO_CACHE, keyed by source version, Go version and
# a hash of this script, so it is built once per machine (~5 min on 2 cores).
#
# Usage: dev/kube/build.sh   (prints the directory holding both binaries on stdout)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../lib.sh"
# shellcheck source=dev/kube/env.sh
source "$HERE/env.sh"

GO=/usr/lib/go-1.15/bin/go

# --- apt sources: bookworm deb-src, bullseye only for golang-1.15* ----------
ensure_apt_sources() {
  local src=/etc/apt/sources.list.d/kumo-dev.sources pref=/etc/apt/preferences.d/kumo-dev-bullseye
  local want_src want_pref
  want_src='# Added by Kumo dev/kube/build-apiserver.sh
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian
Suites: bullseye
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg'
  # Nothing but golang-1.15* may come from bullseye (negative priority = never).
  want_pref='# Added by Kumo dev/kube/build-apiserver.sh: bullseye is only for Go 1.15.
Package: golang-1.15*
Pin: release n=bullseye
Pin-Priority: 500

Package: *
Pin: release n=bullseye
Pin-Priority: -10'
  if [ "$(cat "$src" 2>/dev/null)" != "$want_src" ] || [ "$(cat "$pref" 2>/dev/null)" != "$want_pref" ]; then
    log "apt: adding bookworm deb-src and pinned bullseye (golang-1.15 only)"
    printf '%s\n' "$want_src" >"$src"
    printf '%s\n' "$want_pref" >"$pref"
    KUMO_APT_FORCE_UPDATE=1 apt_update_once
  fi
}

# --- kubectl 1.20: unpacked from Debian's kubernetes-client into the cache ---
# Not dpkg-installed: on machines with Google's `kubectl` package both packages
# own /usr/bin/kubectl and dpkg refuses. Unpacking avoids touching the system.
# The stamp is the source version ($1) so the fast path needs no apt-cache call.
ensure_kubectl() {
  local stamp; stamp="$(dirname "$KUBECTL")/.source-version"
  if [ "$(cat "$stamp" 2>/dev/null)" = "$1" ] && "$KUBECTL" version --client >/dev/null 2>&1; then
    return 0
  fi
  log "unpacking kubectl from Debian's kubernetes-client"
  local tmp; tmp="$(mktemp -d "$KUMO_CACHE/kubectl-dl.XXXXXX")"
  # (apt warns that _apt cannot read the private temp dir: harmless, hidden)
  (cd "$tmp" && apt-get download -q kubernetes-client >/dev/null 2>&1 && dpkg-deb -x ./*.deb root) \
    || die "could not fetch kubernetes-client"
  mkdir -p "$(dirname "$KUBECTL")"
  install -m 0755 "$tmp/root/usr/bin/kubectl" "$KUBECTL"
  echo "$1" >"$stamp"
  rm -rf "$tmp"
}

ensure_apt_sources
apt_install etcd-server golang-1.15-go rsync openssl dpkg-dev make curl ca-certificates

SRC_VER="$(apt-cache showsrc kubernetes | awk '/^Version:/ {print $2}' | sort -V | tail -n1)"
[ -n "$SRC_VER" ] || die "no source package for kubernetes (deb-src missing?)"
ensure_kubectl "$SRC_VER"
GO_VER="$("$GO" version | awk '{print $3}')"      # e.g. go1.15.15
SCRIPT_HASH="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
OUT_DIR="$KUMO_CACHE/kube/${SRC_VER}_${GO_VER}_${SCRIPT_HASH}"
COMPONENTS=(kube-apiserver kube-controller-manager)

# One build at a time per machine (e.g. two test runs starting together).
exec 9>"$KUMO_CACHE/kube-build.lock"
flock 9
built() { local c; for c in "${COMPONENTS[@]}"; do "$OUT_DIR/$c" --version >/dev/null 2>&1 || return 1; done; }
if built; then
  echo "$OUT_DIR"
  exit 0
fi

log "building ${COMPONENTS[*]} from src:kubernetes $SRC_VER with $GO_VER (takes ~8 min)"
start=$SECONDS
rm -rf "$KUMO_CACHE"/kube-build.*          # leftovers of an interrupted build
WORK="$(mktemp -d "$KUMO_CACHE/kube-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
apt-get source -q --download-only "kubernetes=$SRC_VER" >>"$WORK/build.log" 2>&1 \
  || { tail -n 20 "$WORK/build.log" >&2; die "apt-get source failed"; }
dpkg-source -q -x ./kubernetes_*.dsc tree >>"$WORK/build.log" 2>&1 || die "dpkg-source -x failed"

# As debian/rules does: GOPATH/src/k8s.io/kubernetes -> the unpacked tree
# (GOPATH mode, vendored dependencies).
export GOPATH="$WORK/.go" GOCACHE="$WORK/.cache" GO111MODULE=off GOFLAGS=-mod=vendor
export CGO_ENABLED=0 PATH="/usr/lib/go-1.15/bin:$PATH"
KUBE_GIT_VERSION="v${SRC_VER##*really}"            # 1.20.5+really1.20.2-1.1 -> v1.20.2
export KUBE_GIT_VERSION="${KUBE_GIT_VERSION%%-*}" KUBE_GIT_TREE_STATE=clean
mkdir -p "$GOPATH/src/k8s.io"
ln -s "$WORK/tree" "$GOPATH/src/k8s.io/kubernetes"
WHAT="cmd/kube-apiserver cmd/kube-controller-manager"
if ! (cd "$GOPATH/src/k8s.io/kubernetes" && make WHAT="$WHAT") >>"$WORK/build.log" 2>&1; then
  cp "$WORK/build.log" "$KUMO_STATE/logs/kube-build.log"
  tail -n 30 "$WORK/build.log" >&2
  die "build failed, log: $KUMO_STATE/logs/kube-build.log"
fi
mkdir -p "$OUT_DIR"
for c in "${COMPONENTS[@]}"; do
  install -m 0755 "$WORK/tree/_output/local/go/bin/$c" "$OUT_DIR/$c.tmp"
  mv "$OUT_DIR/$c.tmp" "$OUT_DIR/$c"
done
built || die "built binaries do not run"
# Drop binaries of older keys (running processes keep their deleted files open).
find "$KUMO_CACHE/kube" -mindepth 1 -maxdepth 1 ! -name "$(basename "$OUT_DIR")" -exec rm -rf {} +
rm -rf "$KUMO_CACHE/kube-apiserver" "$KUMO_CACHE/kube-apiserver.lock"  # the layout before 0.2
log "built ${COMPONENTS[*]} $("$OUT_DIR/kube-apiserver" --version) in $((SECONDS - start))s -> $OUT_DIR"
echo "$OUT_DIR"
