"""Every Markdown table, PNG plot and output file of the runs, in one place: ``report.md``,
``load.md``, ``compare.md``, their plots (matplotlib's Agg canvas), the JSON files and which
files each run writes (:mod:`benchmarks.report.writers`)."""
