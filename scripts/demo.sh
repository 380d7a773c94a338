#!/usr/bin/env bash
# Serve every built bundle on a free loopback port, replay the benchmarks against the live service
# over HTTP, print the reports, stop the service. Called by `make demo`.
#   reports/demo/coco/                 real COCO val captions, MiniLM: t2t, t2t_cocaptions, STS, latency
#   reports/demo/scenes/               scenes test split, trained dual encoder (when models/ has
#                                      one): all four directions, STS/SIS/SITS, BISON
#   reports/demo/scenes-efficientnet/  scenes test split, EfficientNet-Lite0: image→image, SIS
# Retrieval queries name the served captions and images (--caption-queries item, image queries by
# item): the service searches with the embeddings the bundles hold, the model's own, without
# encoding 25,000 captions again; the text path is replayed by STS, BISON and the latency phase
# (and by `benchmarks cxc` without the flag).
set -euo pipefail
PY=${PY:-.venv/bin/python}
DATA=${DATA:-../shared/data}
SPLIT=${SPLIT:-val}
SCENES_DATA=${SCENES_DATA:-artifacts/data/scenes}
SCENES_SPLIT=${SCENES_SPLIT:-test}
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

# Wait for /readyz (the bundles loaded), at most 300 s, while the service runs.
wait_ready='
import os, sys, time, urllib.request
deadline = time.monotonic() + 300
while True:
    os.kill(int(sys.argv[2]), 0)  # ProcessLookupError: the service stopped (see its log)
    try:
        with urllib.request.urlopen(sys.argv[1] + "/readyz", timeout=5) as answer:
            if answer.status == 200:
                break
    except OSError:
        pass
    if time.monotonic() > deadline:
        sys.exit("the service was not ready within 300 s")
    time.sleep(0.25)
'
scripts/phase.sh "service start (load bundles)" "$PY" -c "$wait_ready" "$URL" "$service_pid"

# The EfficientNet replay (i2i, SIS: no latency phase) runs beside the scenes replay's retrieval,
# whose client leaves a core idle; every latency phase runs with nothing else beside it.
scripts/phase.sh "replay scenes-efficientnet (i2i, SIS)" \
    "$PY" -m benchmarks cxc --url "$URL" --data "$SCENES_DATA" --split "$SCENES_SPLIT" \
    --dataset scenes --variant efficientnet-lite0 --tasks i2i,sis --no-progress \
    --out "$REPORT_DIR/scenes-efficientnet" &
beside_pid=$!
if [[ -f artifacts/bundles/scenes/CURRENT ]]; then
    scripts/phase.sh "replay scenes (dual encoder)" \
        "$PY" -m benchmarks cxc --url "$URL" --data "$SCENES_DATA" --split "$SCENES_SPLIT" \
        --dataset scenes --variant scenes-dual-encoder --caption-queries item \
        --out "$REPORT_DIR/scenes"
fi
wait "$beside_pid"
scripts/phase.sh "replay coco (t2t, STS, latency)" \
    "$PY" -m benchmarks cxc --url "$URL" --data "$DATA" --split "$SPLIT" --dataset coco-karpathy \
    --variant minilm-l6-v2 --caption-queries item --out "$REPORT_DIR/coco"
