"""torch → ONNX exports, parity, quantisation and the scenes dual-encoder trainer.

Needs the ``export`` extra (torch, onnx, transformers, ...); serving what it writes does not.
Imports :mod:`encoders` (the runtime its exports are checked through) and :mod:`formats`.
Its command is ``python -m training export|quantize|train`` (console script ``crisscross-train``).

- :mod:`training.export` — exporters of pretrained models (MiniLM, EfficientNet-Lite0, CLIP);
- :mod:`training.parity` — agreement between an exported variant and its reference model;
- :mod:`training.quantize` — int8 / fp16 variants derived from an fp32 one;
- :mod:`training.trainer` — the dual encoder trained on the scenes corpus, and its export;
- :mod:`training.staging` — writing a variant folder so that it appears complete or not at all.
"""
