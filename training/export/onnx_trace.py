"""Tracing a PyTorch tower to an ONNX file, the one way every exporter here does it.

Needs the ``export`` extra (torch, onnx).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import torch


def export_tower(
    module: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    path: Path,
    input_names: Sequence[str],
    output_name: str,
    dynamic_axes: dict[str, dict[int, str]],
    opset: int,
) -> None:
    """Trace ``module`` on ``inputs`` and write the graph to ``path``.

    ``torch.onnx.export`` with the TorchScript exporter (``dynamo=False``) and constant folding;
    ``dynamic_axes`` maps input and output names to ``{axis: symbolic name}``. The exporter's
    deprecation warnings are silenced here; callers add filters for warnings of their model.
    """
    with warnings.catch_warnings(), torch.no_grad():
        # The TorchScript exporter is deprecated in favour of dynamo; torch is pinned, so the
        # deprecation cannot bite unnoticed, and it traces these towers in seconds to graphs
        # that every onnxruntime provider runs.
        warnings.filterwarnings(
            "ignore",
            message="You are using the legacy TorchScript-based ONNX export",
            category=DeprecationWarning,
        )
        warnings.filterwarnings(
            "ignore", message="The feature will be removed", category=DeprecationWarning
        )
        torch.onnx.export(
            module,
            inputs,
            str(path),
            input_names=list(input_names),
            output_names=[output_name],
            dynamic_axes=dynamic_axes,
            opset_version=opset,
            do_constant_folding=True,
            dynamo=False,
        )
