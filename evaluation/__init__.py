"""The evaluation protocol of DESIGN §7 as pure computation, no HTTP: the harness's view of a
dataset (``data``: ground truth built from CxC and BISON rows read through ``formats``), the
metrics (``metrics``: the tie rule, R@K and median rank, the Spearman bootstrap, BISON accuracy,
CIDEr-D, NCS and semantic recall, latency percentiles, Pareto fronts), the report entries of a
task (``entries``) and the whole protocol on vectors held in memory (``in_memory``).

``benchmarks`` runs it against the live service; ``training`` uses the metrics to monitor a
model. It imports ``formats`` and nothing else of the project.
"""
