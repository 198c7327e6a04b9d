#!/usr/bin/env bash
# `make image`: Kumo's operator image, built here from Debian packages and PyPI
# wheels only — no registry is reachable from this lab, so nothing is pulled.
#   1. base    Debian bookworm from scratch (mmdebstrap) + python3.11  dev/image/base.sh
#   2. wheels  the locked runtime dependencies, fetched on the host    dev/image/wheels.sh
#   3. image   podman build of deploy/image/Containerfile: a venv from those wheels,
#              then Kumo's wheel; non-root (65532), ENTRYPOINT ["kumo"], OCI labels
# Result: localhost/kumo:<version> and localhost/kumo:dev, and an OCI archive in
# $KUMO_CACHE/image/ (kumo-dev.oci.tar links to it) for `podman load` elsewhere.
#
# Every step is cached outside the checkout, keyed by a hash of its inputs; the
# image carries its key in the label dev.kumo.image.inputs, so a rebuild with
# unchanged inputs only checks and re-tags (≈ 2 s). Steps hold a flock, so two
# builds never write the same entries. Nothing relies on the cache being there.
#
# Usage: make image   (or: bash dev/image/build.sh)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/image/common.sh
source "$HERE/common.sh"
image_lock
ensure_podman
cd "$KUMO_ROOT"
started=$SECONDS

version="$(kumo_version)"
base_ref="$(bash "$HERE/base.sh")"
wheels="$(bash "$HERE/wheels.sh")"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
dirty=false
[ -z "$(git status --porcelain -- src pyproject.toml README.md deploy/image dev/image 2>/dev/null)" ] || dirty=true
source_url="$(git config --get remote.origin.url 2>/dev/null || echo "file://$KUMO_ROOT")"
kumo_key="$(hash_inputs kumo "$KUMO_ROOT/src" "$KUMO_ROOT/pyproject.toml" "$KUMO_ROOT/README.md")"
deps_key="${base_ref##*:}-${wheels##*/wheels-}"
inputs="$(hash_inputs "$base_ref $deps_key $kumo_key $version $revision $dirty $source_url" \
  "$KUMO_ROOT/deploy/image/Containerfile" "$HERE/build.sh" "$HERE/common.sh")"
archive="$IMAGE_CACHE/kumo-$version-$inputs.oci.tar"
image="$IMAGE_REPO:$version"

built_inputs() {
  "${PODMAN[@]}" image inspect --format '{{index .Config.Labels "dev.kumo.image.inputs"}}' "$1" 2>/dev/null || true
}

if [ "$(built_inputs "$image")" = "$inputs" ]; then
  log "image: $image is up to date (inputs $inputs)"
elif [ -s "$archive" ]; then
  log "image: loading $(basename "$archive") from the cache"
  loaded="$("${PODMAN[@]}" load --quiet --input "$archive" | sed -n 's/^Loaded image[^:]*: *//p' | tail -n1)"
  "${PODMAN[@]}" tag "$loaded" "$image"
  [ "$(built_inputs "$image")" = "$inputs" ] || { rm -f "$archive"; die "$archive held another image: removed, run again"; }
else
  log "image: building $image (inputs $inputs)"
  ctx="$IMAGE_CACHE/context"
  rm -rf "$ctx" && mkdir -p "$ctx/kumo" "$ctx/src"
  # The build context: hard links to the cached wheels, and Kumo's wheel built from
  # a copy of the sources (pip would leave build/ and *.egg-info in the checkout).
  cp -al "$wheels" "$ctx/wheels"
  cp -r src pyproject.toml README.md "$ctx/src/"
  "$(tools_venv)/bin/pip" wheel --quiet --disable-pip-version-check --no-deps \
    --wheel-dir "$ctx/kumo" "$ctx/src" >&2 || die "could not build Kumo's wheel"
  "${PODMAN[@]}" build "${CONTAINER_FLAGS[@]}" --pull=never --network none --layers \
    --file deploy/image/Containerfile --tag "$image" \
    --build-arg "BASE=$base_ref" --build-arg "DEPS_KEY=$deps_key" --build-arg "KUMO_KEY=$kumo_key" \
    --label "org.opencontainers.image.version=$version" \
    --label "org.opencontainers.image.revision=$revision" \
    --label "org.opencontainers.image.source=$source_url" \
    --label "org.opencontainers.image.base.name=$base_ref" \
    --label "dev.kumo.git.dirty=$dirty" --label "dev.kumo.image.inputs=$inputs" \
    "$ctx" >"$KUMO_STATE/logs/image-build.log" 2>&1 \
    || { tail -n 30 "$KUMO_STATE/logs/image-build.log" >&2; die "podman build failed (log: $KUMO_STATE/logs/image-build.log)"; }
  rm -rf "$ctx"
  # The label is the proof the image is what these inputs make (a stale layer cache
  # once kept old labels): never tag or save anything else.
  [ "$(built_inputs "$image")" = "$inputs" ] || die "podman build produced an image without label dev.kumo.image.inputs=$inputs"
  log "image: saving $(basename "$archive")"
  rm -f "$archive.tmp"
  "${PODMAN[@]}" save --quiet --format oci-archive --output "$archive.tmp" "$image"
  mv "$archive.tmp" "$archive"
  find "$IMAGE_CACHE" -maxdepth 1 -name 'kumo-*.oci.tar' ! -name "$(basename "$archive")" -type f -delete
fi
ln -sfn "$(basename "$archive")" "$IMAGE_CACHE/kumo-dev.oci.tar"
"${PODMAN[@]}" tag "$image" "$IMAGE_REPO:dev"
# Images of ours that lost their tags to this one (nothing runs from them): remove.
"${PODMAN[@]}" image prune --force --filter label=dev.kumo.image.part=kumo >/dev/null 2>&1 || true

# Check the result as a user would run it: the CLI answers and prints the CRDs.
"${PODMAN[@]}" run --rm "${CONTAINER_FLAGS[@]}" --network none "$IMAGE_REPO:dev" --help >/dev/null \
  || die "the image does not run: podman run --rm $IMAGE_REPO:dev --help"
crds="$("${PODMAN[@]}" run --rm "${CONTAINER_FLAGS[@]}" --network none "$IMAGE_REPO:dev" crds \
  | grep -c '^kind: CustomResourceDefinition$' || true)"
[ "$crds" -ge 1 ] || die "kumo crds in the image printed no CustomResourceDefinition"

size="$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$image")"
log "image: $image = $IMAGE_REPO:dev, $((size / 1000000)) MB ($((size / 1048576)) MiB), $crds CRDs from \`kumo crds\`, $((SECONDS - started)) s"
log "image: archive $IMAGE_CACHE/kumo-dev.oci.tar ($(du -m "$archive" | cut -f1) MiB); run: dev/image/run.sh start -- <kumo run args>"
echo "$image"
