#!/usr/bin/env bash
# podman as it runs on machines like the project's (../shared/containers.md): runc with cgroupfs
# (crun refuses a hybrid cgroup layout), no rlimits set inside containers, host networking.
# Usage: deploy/scripts/podman.sh ARGS...   (or source it for the `podman_cmd` function)
set -euo pipefail
conf_dir=${CRISSCROSS_PODMAN_CONF_DIR:-${TMPDIR:-/tmp}/crisscross-podman}
mkdir -p "$conf_dir"
[[ -f "$conf_dir/containers.conf" ]] || printf '[containers]\ndefault_ulimits = []\n' >"$conf_dir/containers.conf"
export CONTAINERS_CONF="$conf_dir/containers.conf"
exec podman --runtime runc --cgroup-manager=cgroupfs "$@"
