"""One-question measurements and simulations: not the product, not installed, not part of its
lint contracts (``studies/README.md``). Run from the checkout's root: ``.venv/bin/python
studies/<name>.py ...``, or ``.venv/bin/python -m studies.scale_simulation ...``."""
