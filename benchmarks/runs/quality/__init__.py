"""The quality run (``python -m benchmarks cxc``): CxC retrieval, correlations, BISON, the
CIDEr-D graded metrics and latency from the live service; and its in-memory twin."""
