"""The harness's view of a dataset: one split's corpus and ratings (read through
:mod:`formats`), the retrieval ground truth and task groups, which tasks a service can answer,
which BISON rows can be scored, and the split's cached CIDEr-D matrix."""
