"""The project's own dual encoder, trained on the generated scenes corpus (DESIGN §5).

``python -m training train`` reads a scenes (Karpathy/CxC-format) corpus, builds a word-level
tokenizer from the train captions, trains a small CNN image tower and a small transformer text
tower with the CxC paper's bidirectional in-batch softmax loss (optionally its text–text multitask
term and Biten et al.'s semantic adaptive margin), and exports both towers as one ONNX variant
with a parity report. Needs torch (the ``export`` extra); serving the result does not.

Modules: ``corpus`` (reading a split), ``word_tokenizer``, ``cider`` (the CIDEr-like relevance
behind the margin), ``losses``, ``models``, ``reproducibility``, ``retrieval`` (in-memory R@K),
``trainer`` (the loop), ``evaluation`` (embedding splits, metrics), ``export``, ``run``, ``cli``.
"""
