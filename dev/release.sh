#!/usr/bin/env bash
# `make release`: the release bundle in dist/ (docs/install.md, "From the release bundle"):
#   dist/kumo-<version>.yaml          CRDs, namespace, RBAC, default cloud, Deployment:
#                                     `kubectl kustomize deploy/` with the version's image
#   dist/kumo-<version>.oci.tar       the image (`make image`), for `podman load` / a push
#   dist/kumo-<version>.cdx.json      CycloneDX SBOM of the image's Python and Debian packages
#   dist/SHA256SUMS
# The image carries its version and source commit as OCI labels
# (org.opencontainers.image.version / .revision; dev/image/build.sh).
# KUMO_IMAGE (default localhost/kumo) names the image in the YAML: the registry you push to.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/image/common.sh
source "$HERE/image/common.sh"
cd "$KUMO_ROOT"
version="$(kumo_version)"
image="$(bash "$HERE/image/build.sh")"   # localhost/kumo:<version>
[ "$image" = "$IMAGE_REPO:$version" ] || die "make image built $image, not $IMAGE_REPO:$version"
label() { "${PODMAN[@]}" image inspect --format "{{index .Config.Labels \"$1\"}}" "$image"; }
[ "$(label org.opencontainers.image.version)" = "$version" ] || die "$image lacks its version label"
revision="$(label org.opencontainers.image.revision)"
[ -n "$revision" ] || die "$image lacks its source commit label"

dist="${KUMO_DIST:-$KUMO_ROOT/dist}"   # KUMO_DIST: elsewhere (tests/integration/test_release.py)
mkdir -p "$dist"
rm -f "$dist"/kumo-* "$dist/SHA256SUMS"
KUBECTL="${KUBECTL:-$(command -v kubectl || true)}"
if [ -z "$KUBECTL" ]; then  # the lab's (dev/kube/build.sh)
  # shellcheck source=dev/kube/env.sh
  source "$HERE/kube/env.sh"
fi
[ -x "$KUBECTL" ] || die "make release needs kubectl (for kustomize): on PATH, \$KUBECTL, or dev/kube/build.sh"
"$KUBECTL" kustomize deploy >"$dist/kumo.kustomized.tmp"
"$KUMO_ROOT/.venv/bin/python" "$HERE/release/bundle.py" yaml "${KUMO_IMAGE:-$IMAGE_REPO}:$version" \
  <"$dist/kumo.kustomized.tmp" >"$dist/kumo-$version.yaml"
rm -f "$dist/kumo.kustomized.tmp"
cp "$(readlink -f "$IMAGE_CACHE/kumo-dev.oci.tar")" "$dist/kumo-$version.oci.tar"

# The SBOM: what is installed in the image (dpkg's status file; the venv's
# distributions), written with cyclonedx-python-lib (pinned: CycloneDX's own Python
# library, kept by the CycloneDX project, serialises and validates the schema).
venv="$(tools_venv cyclonedx-python-lib==11.12.0)"
"${PODMAN[@]}" run --rm "${CONTAINER_FLAGS[@]}" --network none --entrypoint /bin/cat "$image" \
  /var/lib/dpkg/status >"$dist/dpkg-status.tmp"
"${PODMAN[@]}" run --rm "${CONTAINER_FLAGS[@]}" --network none --entrypoint python3 "$image" -c \
  'import importlib.metadata as m, json; print(json.dumps(sorted({d.metadata["Name"]: d.version for d in m.distributions()}.items())))' \
  >"$dist/python.tmp"
"$venv/bin/python" "$HERE/release/bundle.py" sbom "$image" "$version" "$revision" \
  "$dist/dpkg-status.tmp" "$dist/python.tmp" >"$dist/kumo-$version.cdx.json"
rm -f "$dist"/*.tmp
(cd "$dist" && sha256sum "kumo-$version.yaml" "kumo-$version.oci.tar" "kumo-$version.cdx.json" >SHA256SUMS)
log "release: $dist/kumo-$version.{yaml,oci.tar,cdx.json} ($revision)"
echo "$dist"
