"""The compare run (``python -m benchmarks compare``): several variants of one service, the same
quality tasks and the same interleaved latency measurement for each."""
