#!/usr/bin/env bash
# Install the project, editable, with the extras named in $2 (e.g. "export,bench" or "export,bench,dev") into
# the virtual environment $1, creating it with $PYTHON (default python3) when it is missing.
# Called by `make install` and the targets that need an environment.
#
# uv (pinned below, installed into the environment with pip) installs several times faster than
# pip. uv does not read pip's configuration, so the package sources pip is configured with
# (`pip config list`: find-links, index-url, extra-index-url, cert; files and PIP_* variables)
# are passed to it explicitly, and it weighs every source as pip does (unsafe-best-match): a
# local CPU torch wheel in find-links wins over the registry's CUDA build of the same version.
# Without uv (it could not be installed), or with CRISSCROSS_INSTALLER=pip, pip does it all.
# When PYTHONDONTWRITEBYTECODE is set, Python never caches bytecode at import, so uv compiles
# it at install time (as pip does) rather than leaving every later process to recompile torch.
set -euo pipefail
venv=$1
extras=$2
UV_VERSION=0.13.9

[[ -x "$venv/bin/python" ]] || "${PYTHON:-python3}" -m venv "$venv"
py="$venv/bin/python"
# The Python client (clients/python, its own distribution) is installed beside the project: the
# benchmark harness and the cluster router talk to the service through it; the dev extra adds its
# integrations (LangChain, LlamaIndex) for their tests.
client_extras=""
if [[ ",$extras," == *,dev,* ]]; then client_extras="[pillow,langchain,llamaindex]"; fi

install_with_uv() {
    "$py" -m pip install --quiet "uv==$UV_VERSION" 2>/dev/null || return 1
    # pip's configured sources, every scope (pip prints the PIP_* variables last and gives them
    # precedence, so for index-url and cert the last one wins).
    local args=(--index-strategy unsafe-best-match) index_url="" cert="" line key value
    while IFS= read -r line; do
        key=${line%%=*}
        value=${line#*=}
        value=${value#\'}
        value=${value%\'}
        case ${key##*.} in
        find-links) for value in $value; do args+=(--find-links "$value"); done ;;
        extra-index-url) for value in $value; do args+=(--extra-index-url "$value"); done ;;
        index-url) index_url=$value ;;
        cert) cert=$value ;;
        esac
    done < <("$py" -m pip config list 2>/dev/null)
    if [[ -n "$index_url" ]]; then args+=(--index-url "$index_url"); fi
    if [[ -n "${PYTHONDONTWRITEBYTECODE:-}" ]]; then args+=(--compile-bytecode); fi
    SSL_CERT_FILE=${SSL_CERT_FILE:-$cert} UV_PYTHON_DOWNLOADS=never \
        "$venv/bin/uv" pip install --quiet --python "$py" "${args[@]}" -e ".[$extras]" -e "./clients/python$client_extras"
}

if [[ "${CRISSCROSS_INSTALLER:-uv}" != pip ]] && install_with_uv; then
    installer=uv
else
    echo "uv $UV_VERSION unavailable or not wanted: installing with pip" >&2
    "$py" -m pip install --quiet --upgrade pip
    "$py" -m pip install --quiet -e ".[$extras]" -e "./clients/python$client_extras"
    installer=pip
fi

# torch (the export extra) must be the CPU build: the demo and the tests never use CUDA, and the
# CUDA build drags in gigabytes of NVIDIA libraries.
"$py" - "$installer" <<'EOF'
import sys
from importlib import metadata

try:
    requires = metadata.requires("torch") or []
except metadata.PackageNotFoundError:
    sys.exit(0)
cuda = sorted({r.split()[0].split(";")[0] for r in requires if r.startswith("nvidia")})
if cuda:
    sys.exit(
        f"{sys.argv[1]} installed torch {metadata.version('torch')}, a CUDA build (needs "
        f"{', '.join(cuda[:3])}, ...): put a CPU torch wheel in pip's find-links"
    )
EOF
