"""The mixed run (``python -m benchmarks mixed``): search latency on a fresh live collection,
idle and then beside closed-loop writers, their throughput and read-your-writes checks."""
