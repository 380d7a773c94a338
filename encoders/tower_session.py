"""One onnxruntime session for one tower of a variant: providers chosen and checked, output
located, every result checked for shape and L2-normalised.

Shared by the text and image encoders so that provider selection, the "what really runs"
report and the output contract are implemented once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from encoders.providers import ProviderRequest, check_active_providers, select_providers
from encoders.variant import VariantError, VariantManifest

PREFERRED_OUTPUT_NAME: Final = "embeddings"
# Guards the division when a graph that does not normalise returns an all-zero row.
_NORM_FLOOR: Final = 1e-12


class TowerSession:
    """An ``ort.InferenceSession`` over ``<variant_dir>/<onnx_file>``.

    ``providers``: "auto" (CUDA when the build offers it, else CPU), "cpu", or "cuda" (raises
    ``ProviderError`` when the session cannot really run on CUDA). ``intra_op_threads``: 0 lets
    onnxruntime use one thread per core. ``active_providers`` is ``session.get_providers()``:
    onnxruntime-gpu lists CUDA even where no GPU exists, so only the session knows the truth.
    """

    def __init__(
        self,
        variant_dir: Path,
        onnx_file: str,
        manifest: VariantManifest,
        providers: ProviderRequest,
        intra_op_threads: int,
    ) -> None:
        if intra_op_threads < 0:
            raise ValueError(f"intra_op_threads must be >= 0, got {intra_op_threads}")
        self._onnx_file = onnx_file
        self._dim = manifest.dim
        self._normalised = manifest.normalised
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        selected = select_providers(providers, ort.get_available_providers())
        self.session = ort.InferenceSession(
            str(variant_dir / onnx_file), sess_options=options, providers=selected
        )
        self.active_providers = [str(name) for name in self.session.get_providers()]
        check_active_providers(providers, selected, self.active_providers)
        self._output_name = _embeddings_output_name(self.session, onnx_file, self._dim)

    @property
    def input_names(self) -> list[str]:
        """The graph's input names, in graph order."""
        return [str(node.name) for node in self.session.get_inputs()]

    def run(
        self, feed: Mapping[str, npt.NDArray[np.generic]], rows: int
    ) -> npt.NDArray[np.float32]:
        """One session run; returns float32 ``[rows, dim]`` with L2-normalised rows.

        Raises ``VariantError`` when the graph answers with another shape.
        """
        (raw,) = self.session.run([self._output_name], dict(feed))
        output = np.ascontiguousarray(raw, dtype=np.float32)
        if output.shape != (rows, self._dim):
            raise VariantError(
                f"{self._onnx_file} returned shape {output.shape}, expected ({rows}, {self._dim})"
            )
        if not self._normalised:
            norms = np.linalg.norm(output, axis=1, keepdims=True)
            output = output / np.maximum(norms, _NORM_FLOOR)
        return output


def _embeddings_output_name(session: ort.InferenceSession, onnx_file: str, dim: int) -> str:
    """The output named "embeddings", else the only output; its last axis must be ``dim``."""
    outputs = session.get_outputs()
    names = [str(node.name) for node in outputs]
    if PREFERRED_OUTPUT_NAME in names:
        chosen = outputs[names.index(PREFERRED_OUTPUT_NAME)]
    elif len(outputs) == 1:
        chosen = outputs[0]
    else:
        raise VariantError(f"{onnx_file} has outputs {names} and none is named 'embeddings'")
    last_axis = chosen.shape[-1] if chosen.shape else None
    # A symbolic (str) last axis cannot be checked here; run() checks the real shape.
    if isinstance(last_axis, int) and last_axis != dim:
        raise VariantError(f"{onnx_file} outputs dim {last_axis} but the manifest says {dim}")
    return str(chosen.name)
