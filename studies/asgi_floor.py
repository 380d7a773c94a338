"""The least CPU a Python HTTP front end spends on a search request: a bare ASGI app under the
service's own server (uvicorn, httptools, uvloop), no framework, no middleware, no encoder.

It reads the request body, parses it as JSON and answers a fixed search-shaped document (10 hits
with ids, scores, rows and empty metadata, the variant, a bundle version and timings): what every
text search must at least do around the encoder and the scan. Serve it and load it with the peer
tool's client, which reads the server's CPU from ``/proc``::

    .venv/bin/python -m uvicorn --app-dir studies asgi_floor:app --port 8131 \\
        --log-level warning --no-access-log &
    .peer-bench/venv/bin/python ../shared/peer-bench/load_client.py \\
        http://127.0.0.1:8131/v1/search minilm-l6-v2 \\
        ../shared/data/coco-karpathy-captions/captions_val.csv --mode search --conc 32 \\
        --n 20000 --warmup 500 --server-pid "$(pgrep -f asgi_floor:app)"

CPU milliseconds per request = ``server_cpu_cores`` / ``req_s`` of its RESULT line.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]

ANSWER = json.dumps(
    {
        "results": [
            {"id": f"COCO_val2014:sentid:{row}", "score": 0.5, "row": row, "metadata": {}}
            for row in range(10)
        ],
        "variant": "minilm-l6-v2",
        "bundle_version": "20261127T000000000000Z",
        "timings_ms": {"encode": 1.0, "search": 1.0},
    }
).encode()
HEADERS = [
    (b"content-type", b"application/json"),
    (b"content-length", str(len(ANSWER)).encode()),
]


async def app(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    """Answer every HTTP request with :data:`ANSWER` once its body parses as JSON."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["type"] != "http":
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = bool(message.get("more_body"))
    json.loads(body)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": ANSWER})
