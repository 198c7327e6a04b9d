#!/usr/bin/env bash
# Build tests/kstatus (a Go test program using sigs.k8s.io/cli-utils' kstatus) once per
# machine, cached outside the checkout by a hash of its sources; prints the binary's path.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/lib.sh
source "$HERE/../../dev/lib.sh"
command -v go >/dev/null || die "no 'go' on PATH (tests/kstatus is a Go program)"
KEY="$(cat "$HERE/main.go" "$HERE/go.mod" "$HERE/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-12)_$(go env GOVERSION)"
OUT="$KUMO_CACHE/kstatus/$KEY/kstatus"
if [ ! -x "$OUT" ]; then
  log "building tests/kstatus ($KEY)"
  mkdir -p "$(dirname "$OUT")"
  (cd "$HERE" && GOMODCACHE="$KUMO_CACHE/go/mod" GOCACHE="$KUMO_CACHE/go/build" GOTOOLCHAIN=local \
    CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$OUT.tmp" .) >&2 || die "building tests/kstatus failed"
  mv "$OUT.tmp" "$OUT"
  find "$KUMO_CACHE/kstatus" -mindepth 1 -maxdepth 1 ! -name "$KEY" -exec rm -rf {} +
fi
echo "$OUT"
