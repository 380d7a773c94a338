"""The generated *scenes* corpus: coloured shapes on patterned backgrounds, five captions per
image, CxC-format graded judgments and BISON-format minimal pairs, all with exact ground truth.

Its own program (``python -m scenes``); it imports only :mod:`formats` (whose writers produce
the Karpathy, CxC and BISON files). Modules, in dependency order:

- :mod:`~scenes.vocabulary` — attribute values and their words;
- :mod:`~scenes.scene` — the scene model and its seeded sampler;
- :mod:`~scenes.facts` — what captions assert, and truth on any scene;
- :mod:`~scenes.captions` — caption generation;
- :mod:`~scenes.render` — Pillow drawing and PNG encoding;
- :mod:`~scenes.atoms` / :mod:`~scenes.grading` — the graded STS / SIS / SITS functions;
- :mod:`~scenes.truth` / :mod:`~scenes.similarity` — their exact vectorised search over a split;
- :mod:`~scenes.judgments` / :mod:`~scenes.bison` — which pairs get rated, and the minimal
  pairs;
- :mod:`~scenes.ids`, :mod:`~scenes.corpus`, :mod:`~scenes.writer`, :mod:`~scenes.generate` —
  ids, per-image work, files, the pipeline;
- :mod:`~scenes.oracle` — ground-truth scores read back from the files;
- :mod:`~scenes.__main__` — ``python -m scenes``.
"""
