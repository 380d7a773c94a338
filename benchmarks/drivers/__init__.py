"""The service over HTTP: the only way the harness reaches it.

One client interface, :class:`~benchmarks.drivers.sender.Sender`, with two clients behind it
(:mod:`~benchmarks.drivers.http_client`: the project's client ``crisscross_client``, the whole
v1 API with its error bodies and retries; :mod:`~benchmarks.drivers.raw_http`: a raw keep-alive
HTTP/1.1 connection for load); one closed-loop and one open-loop driver; the
bounded-concurrency replay of the quality runs' searches and score batches; how query and pair
sides are written.
"""
