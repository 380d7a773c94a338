"""The runs of ``python -m benchmarks``: ``quality`` (the ``cxc`` subcommand), ``load``,
``compare`` and ``cider``.

Each run is a config dataclass whose fields declare their own command-line options
(:mod:`benchmarks.runs.options`), a tuple of phases (:mod:`benchmarks.runs.phases`) and a typed
report (a ``TypedDict`` with the stable keys of its JSON file). Runs talk to the service only
through :mod:`benchmarks.drivers`; their Markdown, plots and files are :mod:`benchmarks.report`'s.
"""
