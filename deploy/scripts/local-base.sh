#!/usr/bin/env bash
# The image the Dockerfiles build FROM where no container registry is reachable: Debian 12 with
# Python 3.11, made with debootstrap from this machine's apt mirror and imported into podman.
# Elsewhere the Dockerfiles' default public base (python:3.11-slim-bookworm) is used instead.
# Usage: deploy/scripts/local-base.sh [IMAGE]   (does nothing when IMAGE exists)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
image=${1:-localhost/crisscross-base:bookworm}
if "$here/podman.sh" image exists "$image"; then
    echo "base image $image exists"
    exit 0
fi
mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
echo "debootstrap bookworm from $mirror (about 2 minutes)"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,tini \
    bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || { tail -20 "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"
# What an image needs no copy of (as the slim public images do): apt's caches and lists (a
# Dockerfile that installs runs apt-get update first), documentation, translations.
rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
    "$rootfs"/usr/share/locale/* "$rootfs"/usr/share/man/*
tar -C "$rootfs" -c . | "$here/podman.sh" import - "$image" >/dev/null
echo "base image $image imported"
