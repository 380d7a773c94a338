"""Pure metrics of the harness: numbers from ranks, scores and ratings, nothing else.

This package imports only the standard library, numpy, scipy and :mod:`formats` (checked by
import-linter), so the trainer can use the same tie-aware retrieval metrics
(:func:`evaluation.metrics.retrieval.first_positive_ranks`,
:func:`evaluation.metrics.retrieval.retrieval_metrics`) as the live evaluation.
"""
