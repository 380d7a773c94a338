"""Parity between an exported variant and its reference model: the comparison and its report
(:mod:`~training.parity.compare`) and the inputs it runs on (:mod:`~training.parity.texts`,
:mod:`~training.parity.images`)."""
