#!/usr/bin/env bash
# The operator image's base: a minimal Debian bookworm root filesystem with
# Debian's python3.11 and CA certificates, made from scratch with mmdebstrap
# from the apt mirror this machine already uses. No registry is reachable here,
# so no `FROM debian:bookworm`; and building our own base means we know exactly
# what is in it.
#
# Why mmdebstrap (not debootstrap --variant=minbase): its `essential` variant
# installs only Essential:yes packages plus what we name — no apt, no
# apt lists — in ≈ 30 s, writes a tarball directly, and takes dpkg path
# excludes, so docs (but their copyright files), man pages and locales are never
# unpacked. Also excluded: glibc's iconv modules (gconv, 8 MB) — Python has its own
# codecs, and UTF-8 needs no module.
#
# The tarball is cached in $KUMO_CACHE/image/base-<key>.tar, keyed by this
# script, the mirror lines and the host's apt package indices for them (a new
# bookworm point or security release → a new base). It is imported into podman as
# localhost/kumo-base:<key>. Prints that reference on stdout.
#
# Usage: dev/image/base.sh   (build.sh calls it under the image lock)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=dev/image/common.sh
source "$HERE/common.sh"
image_lock

SUITE=bookworm
PACKAGES=python3.11,ca-certificates,netbase
KUMO_UID=65532 # deploy/manager.yaml: securityContext.runAsUser

# debian_sources — "deb URI SUITE main" lines for bookworm, bookworm-updates and
# bookworm-security as this host's apt configuration names them (whatever the
# format of /etc/apt/sources.list{,.d}); followed by "index FILE" lines naming the
# host's copies of their package indices (for the cache key).
debian_sources() {
  local arch; arch="$(dpkg --print-architecture)"
  # shellcheck disable=SC2016 # $(FIELD) is apt's format syntax, not the shell's
  apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT) $(ARCHITECTURE) $(FILENAME)' \
    'Identifier: Packages' 2>/dev/null \
    | awk -v s="$SUITE" -v a="$arch" '
        $3 == "main" && $4 == a && ($2 == s || $2 == s "-updates" || $2 == s "-security") {
          uri = $1; sub(/\/$/, "", uri)
          if (!seen[uri " " $2]++) print "deb " uri " " $2 " main"
          if ($5 != "") idx[n++] = $5
        }
        END { for (i = 0; i < n; i++) print "index " idx[i] }'
}

apt_install mmdebstrap

mapfile -t lines < <(debian_sources)
sources=() indices=()
for l in "${lines[@]}"; do
  case "$l" in
    deb\ *) sources+=("$l") ;;
    index\ *) [ -f "${l#index }" ] && indices+=("${l#index }") ;;
  esac
done
if [ "${#sources[@]}" -eq 0 ]; then
  log "no $SUITE mirror in this host's apt sources; using deb.debian.org"
  sources=("deb http://deb.debian.org/debian $SUITE main"
    "deb http://deb.debian.org/debian $SUITE-updates main"
    "deb http://deb.debian.org/debian-security $SUITE-security main")
fi

key="$(hash_inputs "$(printf '%s\n' "$(dpkg --print-architecture)" "${sources[@]}")" \
  "$HERE/base.sh" "${indices[@]}")"
tarball="$IMAGE_CACHE/base-$key.tar"
ref="localhost/kumo-base:$key"

if ! [ -s "$tarball" ]; then
  log "image base: mmdebstrap $SUITE ($PACKAGES) from: ${sources[*]}"
  tmp="$IMAGE_CACHE/base-$key.tar.tmp"
  rm -f "$tmp"
  trap 'rm -f "$tmp"' EXIT
  # customize hook ($1 = the root filesystem): the operator's user and group (the
  # uid of deploy/manager.yaml), then what only the build needed — package
  # manager backups and logs, apt's empty state dirs (apt is not installed), the
  # builder's hostname, resolver and mirror. ($1 is expanded by mmdebstrap's shell.)
  # shellcheck disable=SC2016
  mmdebstrap --variant=essential --format=tar --include="$PACKAGES" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/doc-base/*' --dpkgopt='path-exclude=/usr/share/bash-completion/*' \
    --dpkgopt='path-exclude=/usr/lib/*/gconv/*' \
    --customize-hook="echo 'kumo:x:$KUMO_UID:' >>\"\$1/etc/group\"" \
    --customize-hook="echo 'kumo:x:$KUMO_UID:$KUMO_UID:Kumo operator:/home/kumo:/usr/sbin/nologin' >>\"\$1/etc/passwd\"" \
    --customize-hook="echo 'kumo:*:19000:0:99999:7:::' >>\"\$1/etc/shadow\"" \
    --customize-hook="install -d -m 0750 -o $KUMO_UID -g $KUMO_UID \"\$1/home/kumo\"" \
    --customize-hook='rm -rf "$1"/etc/apt/sources.list* "$1"/etc/hostname "$1"/etc/resolv.conf "$1"/var/log/apt "$1"/var/log/dpkg.log "$1"/var/log/alternatives.log "$1"/var/cache/ldconfig/aux-cache "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old "$1"/var/lib/apt "$1"/var/cache/apt' \
    "$SUITE" "$tmp" "${sources[@]}" >"$KUMO_STATE/logs/image-base.log" 2>&1 \
    || { tail -n 30 "$KUMO_STATE/logs/image-base.log" >&2; die "mmdebstrap failed (log: $KUMO_STATE/logs/image-base.log)"; }
  mv "$tmp" "$tarball"
  trap - EXIT
  # Older bases are unreachable now: drop them (the tarballs are ≈ 100 MB).
  find "$IMAGE_CACHE" -maxdepth 1 -name 'base-*.tar' ! -name "base-$key.tar" -delete
fi

if ! "${PODMAN[@]}" image exists "$ref"; then
  log "image base: importing $(basename "$tarball") as $ref"
  "${PODMAN[@]}" import --quiet --message "kumo base: Debian $SUITE + python3.11 (dev/image/base.sh)" \
    --change 'CMD ["/usr/bin/python3.11"]' --change "LABEL dev.kumo.image.part=base" \
    "$tarball" "$ref" >/dev/null
  # Older bases of ours: untag them, and remove those no image or container uses.
  "${PODMAN[@]}" images --format '{{.Repository}}:{{.Tag}}' localhost/kumo-base \
    | { grep -vx "$ref" || true; } | xargs -r -n1 "${PODMAN[@]}" untag >/dev/null 2>&1 || true
  "${PODMAN[@]}" image prune --force --filter label=dev.kumo.image.part=base >/dev/null 2>&1 || true
fi
echo "$ref"
