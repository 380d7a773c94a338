#!/usr/bin/env bash
# Serve the built bundles on a free loopback port, replay the CxC benchmark against the live
# service over HTTP, print the report, stop the service. Called by `make demo` and `make bench`.
set -euo pipefail
PY=${PY:-.venv/bin/python}
DATA=${DATA:-../shared/data}
SPLIT=${SPLIT:-val}
REPORT_DIR=${REPORT_DIR:-reports/demo}
PORT=${DEMO_PORT:-$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
URL="http://127.0.0.1:${PORT}"

mkdir -p "$REPORT_DIR"
"$PY" -m service serve --host 127.0.0.1 --port "$PORT" >"$REPORT_DIR/service.log" 2>&1 &
service_pid=$!
stop_service() {
    if kill -0 "$service_pid" 2>/dev/null; then
        kill -TERM "$service_pid"
        wait "$service_pid" || true
    fi
}
trap stop_service EXIT
echo "service pid ${service_pid} on ${URL} (log: ${REPORT_DIR}/service.log)"

args=(cxc --url "$URL" --split "$SPLIT" --data "$DATA" --out "$REPORT_DIR")
if [[ -n "${BENCH_ONLY:-}" ]]; then
    args+=(--latency-only)
fi
"$PY" -m benchmarks "${args[@]}"
