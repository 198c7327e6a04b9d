#!/usr/bin/env bash
# Build a Go test program of tests/ (tests/kstatus, tests/argocd) once per machine,
# cached outside the checkout by a hash of its sources and this script; prints the
# binary's path. Usage: tests/gobuild.sh DIR (the binary is named after DIR).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../dev/lib.sh"
DIR="$(cd "${1:?usage: tests/gobuild.sh DIR}" && pwd)"
NAME="$(basename "$DIR")"
command -v go >/dev/null || die "no 'go' on PATH (tests/$NAME is a Go program)"
KEY="$(cat "$DIR"/*.go "$DIR/go.mod" "$DIR/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-12)_$(go env GOVERSION)"
OUT="$KUMO_CACHE/$NAME/$KEY/$NAME"
if [ ! -x "$OUT" ]; then
  log "building tests/$NAME ($KEY)"
  mkdir -p "$(dirname "$OUT")"
  (cd "$DIR" && GOMODCACHE="$KUMO_CACHE/go/mod" GOCACHE="$KUMO_CACHE/go/build" GOTOOLCHAIN=local \
    CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$OUT.tmp" .) >&2 || die "building tests/$NAME failed"
  mv "$OUT.tmp" "$OUT"
  find "$KUMO_CACHE/$NAME" -mindepth 1 -maxdepth 1 ! -name "$KEY" -exec rm -rf {} +
fi
echo "$OUT"
