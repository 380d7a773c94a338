"""Tracing a torch tower to ONNX: the graph onnxruntime runs computes what the module does, for
any batch size along the dynamic axis."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="export needs the 'export' extra")
pytest.importorskip("onnx", reason="export needs the 'export' extra")

import onnxruntime as ort  # noqa: E402

from training.export.onnx_trace import export_tower  # noqa: E402


def test_a_traced_tower_matches_its_module(tmp_path: Path) -> None:
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh()).eval()
    path = tmp_path / "tower.onnx"
    export_tower(
        module,
        (torch.zeros(2, 6),),
        path,
        input_names=["features"],
        output_name="embeddings",
        dynamic_axes={"features": {0: "batch"}, "embeddings": {0: "batch"}},
        opset=17,
    )
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["features"]
    inputs = np.random.default_rng(1).standard_normal((5, 6)).astype(np.float32)
    (outputs,) = session.run(["embeddings"], {"features": inputs})
    with torch.no_grad():
        expected = module(torch.from_numpy(inputs)).numpy()
    np.testing.assert_allclose(outputs, expected, atol=1e-6)
