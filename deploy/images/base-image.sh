#!/usr/bin/env bash
# The local base images for offline builds: Debian bookworm made with debootstrap, no registry pull.
#
#   deploy/images/base-image.sh      # ensures the three images below exist in buildah's storage
#
#   $BASE_IMAGE          python3 (3.11), python-is-python3, ca-certificates: the runtime base
#   $BASE_IMAGE-git      the same plus git: the runtime base of the services that run git
#   $BASE_IMAGE-build-cc the same plus python3-venv and a C compiler with Python's headers (gcc,
#                        libc6-dev, libpython3.11-dev): the builder stage (never shipped), which
#                        compiles palimpsest-index's C lexical vector
#
# Each has the bookworm security and point-release updates the host's apt sources offer. The
# Debian mirror is the first one for bookworm in this machine's apt sources (DEBIAN_MIRROR
# overrides it); it is used only while building and is left in no image (no apt sources, no
# package lists). The images are cached in an OCI layout under $IMAGE_CACHE (shared layers), so a
# fresh container storage reloads them without debootstrap.
set -euo pipefail

IMAGE_CACHE=${IMAGE_CACHE:-/var/cache/palimpsest-images}
BASE_IMAGE=${BASE_IMAGE:-localhost/palimpsest-base:bookworm}
SUITE=bookworm
PACKAGES=python3,python-is-python3,ca-certificates
BUILDAH=(buildah --storage-driver vfs)
layout="$IMAGE_CACHE/base-images.oci"
VARIANTS=("" "-git" "-build-cc")

log() { printf '%s base-image: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
present() { "${BUILDAH[@]}" inspect --type image "$1" >/dev/null 2>&1; }
all_present() {
  local v
  for v in "${VARIANTS[@]}"; do present "$BASE_IMAGE$v" || return 1; done
}

if all_present; then
  log "$BASE_IMAGE{,-git,-build-cc} are present"
  exit 0
fi
if [[ -f "$layout/index.json" ]]; then
  log "loading $BASE_IMAGE{,-git,-build-cc} from $layout"
  for v in "${VARIANTS[@]}"; do
    id=$("${BUILDAH[@]}" pull --quiet "oci:$layout:${BASE_IMAGE##*:}$v" 2>/dev/null) \
      && "${BUILDAH[@]}" tag "$id" "$BASE_IMAGE$v" || true
  done
  "${BUILDAH[@]}" rmi "localhost$layout" >/dev/null 2>&1 || true  # the name pulling gave; tags stay
  all_present && exit 0
  log "the cached layout is incomplete; rebuilding"
fi

for tool in debootstrap buildah; do
  command -v "$tool" >/dev/null || { echo "base-image: $tool is not installed (apt-get install $tool)" >&2; exit 3; }
done

# The host's apt sources (deb822 or one-line format): "URI SUITE" pairs.
host_sources() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] && awk '/^URIs:/{u=$2} /^Suites:/{for(i=2;i<=NF;i++) print u, $i}' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] && awk '$1=="deb"{u=$2; if (u ~ /^\[/) u=$3; s=($2 ~ /^\[/)?$4:$3; print u, s}' "$f"
  done
  return 0
}
mirror=${DEBIAN_MIRROR:-$(host_sources | awk -v s="$SUITE" '$2==s{print $1; exit}')}
[[ -n "$mirror" ]] || { echo "base-image: no Debian mirror for $SUITE in the apt sources; set DEBIAN_MIRROR" >&2; exit 3; }

work=$(mktemp -d /var/tmp/palimpsest-base.XXXXXX)
trap 'umount -R "$work/rootfs/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
rootfs="$work/rootfs"
log "debootstrap $SUITE ($PACKAGES)"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; exit 1; }

# Security and point-release updates from the same host sources, then nothing of apt's state.
host_sources | awk -v s="$SUITE" '$2 ~ "^"s"(-security|-updates)?$" {print "deb", $1, $2, "main"}' \
  >"$work/sources.list"
cp "$work/sources.list" "$rootfs/etc/apt/sources.list"
rm -f "$rootfs"/etc/apt/sources.list.d/*
mount -t proc proc "$rootfs/proc"
log "apt-get upgrade in the new root"
chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  sh -c 'apt-get update -qq && apt-get upgrade -y -qq && apt-get clean' >"$work/upgrade.log" 2>&1 \
  || { tail -20 "$work/upgrade.log" >&2; exit 1; }
umount "$rootfs/proc"
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/man/* \
  "$rootfs"/usr/share/info/* "$rootfs"/var/log/* "$rootfs"/etc/apt/sources.list

log "importing the root filesystem into $BASE_IMAGE"
ctr=$("${BUILDAH[@]}" from scratch)
mnt=$("${BUILDAH[@]}" mount "$ctr")
cp -a "$rootfs"/. "$mnt"/
"${BUILDAH[@]}" umount "$ctr" >/dev/null
"${BUILDAH[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env LANG=C.UTF-8 --cmd /bin/bash \
  --label org.opencontainers.image.description="Debian $SUITE (debootstrap): python3, ca-certificates" \
  "$ctr"
"${BUILDAH[@]}" commit --quiet --rm "$ctr" "$BASE_IMAGE" >/dev/null

# One more layer each, from the same sources (mounted for the install, not kept).
add_layer() {  # variant, description, packages...
  local variant=$1 description=$2
  shift 2
  log "$BASE_IMAGE$variant: + $*"
  ctr=$("${BUILDAH[@]}" from --quiet "$BASE_IMAGE")
  "${BUILDAH[@]}" run --isolation chroot --network host \
    -v "$work/sources.list:/etc/apt/sources.list.d/build.list:ro" "$ctr" -- \
    /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -c \
    "apt-get update -qq && apt-get install -y -qq --no-install-recommends $* >/dev/null \
     && apt-get clean && rm -rf /var/lib/apt/lists/* /var/log/apt /var/log/dpkg.log" >"$work/layer.log" 2>&1 \
    || { tail -20 "$work/layer.log" >&2; exit 1; }
  "${BUILDAH[@]}" config --label org.opencontainers.image.description="$description" "$ctr"
  "${BUILDAH[@]}" commit --quiet --rm "$ctr" "$BASE_IMAGE$variant" >/dev/null
}
add_layer -git "Debian $SUITE (debootstrap): python3, ca-certificates, git" git
add_layer -build-cc "Debian $SUITE (debootstrap): python3, ca-certificates, python3-venv, gcc (build stage)" \
  python3-venv gcc libc6-dev libpython3.11-dev

mkdir -p "$IMAGE_CACHE"
rm -rf "$layout.tmp"
for v in "${VARIANTS[@]}"; do
  "${BUILDAH[@]}" push --quiet "$BASE_IMAGE$v" "oci:$layout.tmp:${BASE_IMAGE##*:}$v"
done
rm -rf "$layout" && mv "$layout.tmp" "$layout"
log "$BASE_IMAGE{,-git,-build-cc} ready ($(du -sh "$layout" | cut -f1) cached in $layout)"
