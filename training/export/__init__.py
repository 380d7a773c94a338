"""Exporters of pretrained PyTorch models to encoder variants (ONNX + manifest + parity report):
:mod:`~training.export.minilm`, :mod:`~training.export.efficientnet`, :mod:`~training.export.clip`
(with :mod:`~training.export.clip_checkpoint` and :mod:`~training.export.open_clip_convert` to
read a checkpoint folder), and :mod:`~training.export.onnx_trace`, the one way they all trace a
tower to ONNX."""
