"""The serving runtime of encoder variants: manifests (:mod:`~encoders.variant`), providers,
onnxruntime tower sessions, the text tokenizer, image decoding with limits and preprocessing,
and the text and image encoders the service and the index builder load. Needs no torch; imports
only :mod:`formats`. Exporting, quantizing and training variants is :mod:`training`."""
