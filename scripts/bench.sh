#!/usr/bin/env bash
# `make bench`: the bare in-process throughput of the service's own engine first (its encoder and
# search in the batches the service forms, no HTTP; no service running, so the two never share the
# CPUs), then the live service under closed-loop and open-loop load up to twice its saturation
# rate, and the efficiency ratio between the two.
set -euo pipefail
PY=${PY:-.venv/bin/python}
DATA=${DATA:-../shared/data}
SPLIT=${SPLIT:-val}
BENCH_DIR=${BENCH_DIR:-reports/bench}
BENCH_DURATION=${BENCH_DURATION:-20}
# The service runs with its default limits (64 in flight; 2 while overloaded: see
# max_concurrent_requests and overload_concurrent_requests in docs/settings.md); CRISSCROSS_*
# variables set by the caller reach it.
BENCH_CLOSED=${BENCH_CLOSED:-1,8,16,32}
VARIANT_DIR=${VARIANT_DIR:-artifacts/variants/minilm-l6-v2}
BUNDLE_DIR=${BUNDLE_DIR:-artifacts/bundles/coco-captions}
PORT=${BENCH_PORT:-$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
URL="http://127.0.0.1:${PORT}"

mkdir -p "$BENCH_DIR"
# Each mode (one thread with lone queries; the service's encoder_workers threads and one per core
# with full batches; for 1 and for one-per-core onnxruntime threads) runs up to 4000 queries or
# 12 s: short runs on a shared machine let one fast or slow second decide the ratio. CRISSCROSS_*
# variables set by the caller reach it as they reach the service.
"$PY" scripts/bench_inprocess.py --variant "$VARIANT_DIR" --bundle "$BUNDLE_DIR" \
    --data "$DATA" --split "$SPLIT" --queries 4000 --max-seconds 12 --out "$BENCH_DIR/inprocess.json"

CRISSCROSS_BUNDLES="$(basename "$BUNDLE_DIR")" \
    "$PY" -m service serve --host 127.0.0.1 --port "$PORT" >"$BENCH_DIR/service.log" 2>&1 &
service_pid=$!
stop_service() {
    if kill -0 "$service_pid" 2>/dev/null; then
        kill -TERM "$service_pid"
        wait "$service_pid" || true
    fi
}
trap stop_service EXIT
echo "service pid ${service_pid} on ${URL} (log: ${BENCH_DIR}/service.log)"

"$PY" -m benchmarks load --url "$URL" --data "$DATA" --split "$SPLIT" --out "$BENCH_DIR" \
    --closed "$BENCH_CLOSED" --open-rates auto --duration-s "$BENCH_DURATION" \
    --inprocess-json "$BENCH_DIR/inprocess.json"
