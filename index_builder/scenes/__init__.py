"""The generated *scenes* corpus: coloured shapes on patterned backgrounds, five captions per
image, CxC-format graded judgments and BISON-format minimal pairs, all with exact ground truth.

Modules, in dependency order:

- :mod:`~index_builder.scenes.vocabulary` — attribute values and their words;
- :mod:`~index_builder.scenes.scene` — the scene model and its seeded sampler;
- :mod:`~index_builder.scenes.facts` — what captions assert, and truth on any scene;
- :mod:`~index_builder.scenes.captions` — caption generation;
- :mod:`~index_builder.scenes.render` — Pillow drawing and PNG encoding;
- :mod:`~index_builder.scenes.atoms` / :mod:`~index_builder.scenes.grading` — the graded
  STS / SIS / SITS functions;
- :mod:`~index_builder.scenes.truth` / :mod:`~index_builder.scenes.similarity` — their exact
  vectorised search over a split;
- :mod:`~index_builder.scenes.judgments` / :mod:`~index_builder.scenes.bison` — which pairs
  get rated, and the minimal pairs;
- :mod:`~index_builder.scenes.ids`, :mod:`~index_builder.scenes.corpus`,
  :mod:`~index_builder.scenes.writer`, :mod:`~index_builder.scenes.generate` — ids, per-image
  work, files, the pipeline;
- :mod:`~index_builder.scenes.oracle` — ground-truth scores read back from the files;
- :mod:`~index_builder.scenes.cli` — ``python -m index_builder scenes``.
"""
