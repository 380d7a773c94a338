#!/usr/bin/env bash
# Build one target of deploy/docker/Dockerfile with podman from the repository root.
# Usage: deploy/scripts/build-image.sh TARGET TAG [BASE]
#   TARGET  cpu | demo
#   BASE    "local" (default): a Debian 12 + Python base made here with debootstrap (no registry
#           needed, deploy/scripts/local-base.sh); or any image reference, e.g.
#           docker.io/library/python:3.11-slim-bookworm where a registry is reachable.
# pip's CA bundle (PIP_CERT, or `cert` in pip's configuration), when set, is mounted into the build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=$1
tag=$2
base=${3:-local}
if [[ "$base" == local ]]; then
    base=localhost/crisscross-base:bookworm
    "$here/local-base.sh" "$base"
fi
args=(--network=host --format docker --target "$target" --tag "$tag" --build-arg "BASE_IMAGE=$base")
cert=${PIP_CERT:-$(python3 -m pip config list 2>/dev/null | sed -n "s/^[^=]*\.cert='\(.*\)'$/\1/p" | tail -1)}
if [[ -n "$cert" && -f "$cert" ]]; then
    args+=(--volume "$cert:$cert:ro" --build-arg "PIP_CERT=$cert")
fi
started=$SECONDS
"$here/podman.sh" build "${args[@]}" -f deploy/docker/Dockerfile .
size=$("$here/podman.sh" image inspect "$tag" --format '{{.Size}}')
echo "built $tag (target $target, base $base) in $((SECONDS - started)) s: $((size / 1024 / 1024)) MiB"
