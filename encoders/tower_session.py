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

from encoders.providers import (
    ProviderRequest,
    check_active_providers,
    preload_cuda_libraries,
    select_providers,
)
from encoders.variant import (
    VariantError,
    VariantManifest,
    load_variant_manifest,
    verify_variant_files,
)

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
        preload_cuda_libraries(selected, getattr(ort, "preload_dlls", None))
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


class VariantTower:
    """Base of the text and image encoders: the verified variant and the identity both report.

    Loading verifies the SHA-256 of every variant file against ``variant.json``
    (``VariantError`` on a mismatch). Subclasses open their session with :meth:`_open_session`.
    """

    _session: TowerSession

    def __init__(self, variant_dir: Path, batch_size: int) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self._variant_dir = Path(variant_dir)
        self._manifest = load_variant_manifest(self._variant_dir)
        verify_variant_files(self._variant_dir, self._manifest)
        self._batch_size = batch_size

    def _open_session(
        self, onnx_file: str, providers: ProviderRequest, intra_op_threads: int
    ) -> TowerSession:
        self._session = TowerSession(
            self._variant_dir, onnx_file, self._manifest, providers, intra_op_threads
        )
        return self._session

    @property
    def name(self) -> str:
        """Variant name."""
        return self._manifest.name

    @property
    def dim(self) -> int:
        """Embedding dimension d."""
        return self._manifest.dim

    @property
    def precision(self) -> str:
        """Weight precision: "fp32", "fp16" or "int8"."""
        return self._manifest.precision

    @property
    def fingerprint(self) -> str:
        """SHA-256 hex of the variant's files; see ``VariantManifest.fingerprint``."""
        return self._manifest.fingerprint

    @property
    def providers(self) -> list[str]:
        """Providers the session really uses (``session.get_providers()``), a fresh copy."""
        return list(self._session.active_providers)

    @property
    def matryoshka_dims(self) -> tuple[int, ...]:
        """Dimensions below ``dim`` the model was trained to be cut to (``variant.json``'s
        ``matryoshka_dims``); empty where a cut means nothing."""
        return tuple(self._manifest.matryoshka_dims or ())

    @property
    def manifest(self) -> VariantManifest:
        """The variant's verified manifest."""
        return self._manifest
