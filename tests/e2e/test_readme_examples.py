"""Every example of the README runs as written against a real `make serve`.

The README marks its runnable blocks: ``<!-- readme-example: setup -->`` before commands run in
the repository after `make demo` (index your own data), ``<!-- readme-example: requests -->``
before curl requests to the running service. This test lays out what `make demo` leaves
behind, in miniature — ``artifacts/variants/{minilm-l6-v2,scenes-dual-encoder}``, the
``coco-captions`` bundle (the real exported MiniLM, the first 2,000 real captions), a generated
scenes test split and its dual-encoder ``scenes`` bundle — runs the setup blocks there with
bash, starts the service as `make serve` does (MiniLM the default variant, live collections
under ``artifacts/collections``), and runs every
request block, only the port changed. Each curl must print an answer that is not an error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from index_builder.__main__ import main as index_main
from scenes.generate import GenerationConfig, generate_scenes
from tests.conftest import REPO_ROOT
from tests.e2e.conftest import start_service, stop_service

pytestmark = [pytest.mark.e2e]

README = REPO_ROOT / "README.md"
MARKER = re.compile(
    r"<!-- readme-example: (setup|requests|python) -->\n```(?:bash|python)\n(.*?)```", re.DOTALL
)
BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
DEMO_PORT = "localhost:8000"


def examples(kind: str) -> list[str]:
    """The README's bash blocks marked ``kind``, in order."""
    return [body for found, body in MARKER.findall(README.read_text()) if found == kind]


def test_every_curl_block_of_the_readme_is_marked_as_an_example() -> None:
    text = README.read_text()
    marked = {body for _, body in MARKER.findall(text)}
    unmarked = [body for body in BASH_BLOCK.findall(text) if "curl " in body and body not in marked]
    assert not unmarked, f"README curl blocks this test does not run: {unmarked}"
    assert len(examples("requests")) >= 3
    unmarked_python = [body for body in PYTHON_BLOCK.findall(text) if body not in marked]
    assert not unmarked_python, f"README Python blocks this test does not run: {unmarked_python}"
    assert len(examples("python")) >= 3


@pytest.fixture(scope="module")
def demo_tree(
    tmp_path_factory: pytest.TempPathFactory,
    served_roots: tuple[Path, Path],
) -> Path:
    """A folder laid out as the repository after `make demo`, in miniature."""
    root = tmp_path_factory.mktemp("readme")
    (root / ".venv").symlink_to(Path(sys.prefix))
    variants, bundles = root / "artifacts" / "variants", root / "artifacts" / "bundles"
    variants.mkdir(parents=True)
    bundles.mkdir(parents=True)
    served_variants, served_bundles = served_roots
    (variants / "minilm-l6-v2").symlink_to((served_variants / "minilm-l6-v2").resolve())
    (variants / "scenes-dual-encoder").symlink_to(REPO_ROOT / "models" / "scenes-dual-encoder")
    shutil.copytree(served_bundles / "coco-captions", bundles / "coco-captions")
    scenes = root / "artifacts" / "data" / "scenes"
    generate_scenes(
        GenerationConfig(
            out=scenes,
            seed=0,
            sizes={"train": 0, "val": 0, "test": 12},
            workers=1,
            judgment_splits=("test",),
            progress=False,
        )
    )
    build = ["build", "--variant", str(variants / "scenes-dual-encoder"), "--name", "scenes"]
    build += ["--captions", str(scenes / "coco-karpathy-captions" / "captions_test.csv")]
    build += ["--images-dir", str(scenes / "images" / "test"), "--bundles-root", str(bundles)]
    assert index_main([*build, "--providers", "cpu", "--no-progress"]) == 0
    return root


def run_bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CRISSCROSS_PROVIDERS": "cpu"}
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def run_python(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cwd / ".venv" / "bin" / "python"), "-"],
        input=script,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def answers(output: str) -> list[object]:
    """The JSON documents curl (or jq) printed, one after another."""
    decoder, position, found = json.JSONDecoder(), 0, []
    while position < len(output):
        while position < len(output) and output[position].isspace():
            position += 1
        if position == len(output):
            break
        value, position = decoder.raw_decode(output, position)
        found.append(value)
    return found


def test_the_readme_examples_run_verbatim_after_make_demo(demo_tree: Path) -> None:
    for script in examples("setup"):
        result = run_bash(script, demo_tree)
        assert result.returncode == 0, f"{script}\n{result.stdout}\n{result.stderr}"
    artifacts = demo_tree / "artifacts"
    service = start_service(
        artifacts / "variants",
        artifacts / "bundles",
        demo_tree / "service.log",
        {
            "CRISSCROSS_DEFAULT_VARIANT": "minilm-l6-v2",
            "CRISSCROSS_COLLECTIONS_DIR": str(artifacts / "collections"),
        },
    )
    try:
        port = service.url.rsplit(":", 1)[1]
        for script in examples("requests"):
            result = run_bash(script.replace(DEMO_PORT, f"localhost:{port}"), demo_tree)
            assert result.returncode == 0, f"{script}\n{result.stderr}"
            printed = answers(result.stdout)
            assert printed, f"{script}\nprinted nothing"
            for answer in printed:
                assert not (isinstance(answer, dict) and "error" in answer), (script, answer)
                if isinstance(answer, dict) and "results" in answer:
                    assert answer["results"], (script, answer)
                if isinstance(answer, dict) and "responses" in answer:
                    assert all(item["status"] == 200 for item in answer["responses"]), answer
        for script in examples("python"):
            result = run_python(script.replace(DEMO_PORT, f"localhost:{port}"), demo_tree)
            assert result.returncode == 0, f"{script}\n{result.stdout}\n{result.stderr}"
            assert result.stdout.strip(), f"{script}\nprinted nothing"
    finally:
        assert stop_service(service) == 0, service.log()
