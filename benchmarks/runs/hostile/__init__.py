"""The hostile-clients run (``python -m benchmarks hostile``): an honest client's search latency
alone, then beside a crowd of slow heads and stalled bodies held open by another process."""
