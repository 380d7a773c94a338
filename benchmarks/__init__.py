"""The Crisscross benchmark harness: replays CxC and BISON against a live service over HTTP.

Sub-packages, by concern (each imports only those listed after it):

- :mod:`benchmarks.report`: every Markdown table, PNG plot and output file of a run;
- :mod:`benchmarks.runs`: the runs (``quality`` = ``python -m benchmarks cxc``, ``load``,
  ``compare``, ``cider``): a config whose fields declare the command-line options, a list of
  phases and a typed report each;
- :mod:`benchmarks.drivers`: the service over HTTP — one client interface (the project's
  ``crisscross_client``, or the raw keep-alive connection for load), the closed- and open-loop
  drivers, the quality replay;
- :mod:`evaluation.data`: the harness's view of a dataset (corpus, ground truth, task plan,
  BISON rows, the cached CIDEr-D matrix), read through :mod:`formats`;
- :mod:`evaluation.metrics`: pure metrics (standard library, numpy, scipy and :mod:`formats`
  only), also used by the trainer.
"""
