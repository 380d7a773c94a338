"""The sweep run (``python -m benchmarks sweep``): recall@10 against exact search and latency of
one approximate index across the values of its search parameter, over HTTP."""
