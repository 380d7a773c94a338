"""End to end with an exported CLIP: a tiny random CLIP checkpoint → ``python -m training export
clip`` → ``python -m index_builder build`` (captions and pixels of a small generated corpus) → a
real uvicorn process serving it beside a second, text-only variant → all four search directions
over HTTP, each checked against the scores computed offline from the exported ONNX towers.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest

from encoders.image_decode import ImageLimits, decode_image
from encoders.image_encoder import OnnxImageEncoder
from encoders.text_encoder import OnnxTextEncoder
from formats.karpathy import read_captions
from scenes.generate import GenerationConfig, generate_scenes
from storage.reader import LoadedBundle, load_bundle, resolve_current
from tests.e2e.conftest import LiveService, start_service, stop_service
from tests.fakes.tiny_variant import make_tiny_variant
from tests.unit.index_builder.captions_bundle import build_captions_bundle

pytest.importorskip("skimage", reason="the export's parity images need scikit-image")
tiny_clip = pytest.importorskip("tests.fakes.tiny_clip", reason="needs the export extra")

from index_builder.__main__ import main as index_main  # noqa: E402
from training.__main__ import main as training_main  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CLIP_VARIANT = "tiny-clip"
TEXT_VARIANT = "tiny-words"
K = 5
LIMITS = ImageLimits(max_bytes=10 << 20, max_pixels=40_000_000)


@dataclass(frozen=True)
class Served:
    service: LiveService
    clip_dir: Path
    bundle: LoadedBundle
    images_dir: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("clip-e2e")
    corpus = root / "scenes"
    generate_scenes(
        GenerationConfig(
            out=corpus,
            seed=11,
            sizes={"train": 0, "val": 12, "test": 0},
            workers=1,
            judgment_splits=("val",),
            progress=False,
        )
    )
    captions_csv = corpus / "coco-karpathy-captions" / "captions_val.csv"
    images_dir = corpus / "images" / "val"
    tiny_clip.write_tiny_hf_clip(root / "checkpoint")
    variants_root, bundles_root = root / "variants", root / "bundles"
    clip_dir = variants_root / CLIP_VARIANT
    export = ["export", "clip", "--from", str(root / "checkpoint"), "--out", str(clip_dir)]
    assert training_main([*export, "--name", CLIP_VARIANT]) == 0
    build = ["build", "--variant", str(clip_dir), "--captions", str(captions_csv)]
    build += ["--images-dir", str(images_dir), "--bundles-root", str(bundles_root)]
    assert index_main([*build, "--name", "scenes-clip", "--providers", "cpu", "--no-progress"]) == 0
    # The second variant: the tiny word-level text encoder over the same captions.
    make_tiny_variant(variants_root / TEXT_VARIANT, name=TEXT_VARIANT)
    build_captions_bundle(
        OnnxTextEncoder(variants_root / TEXT_VARIANT, providers="cpu"),
        read_captions(captions_csv),
        source=captions_csv,
        bundles_root=bundles_root,
        name="scenes-words",
    )
    bundle = load_bundle(resolve_current(bundles_root / "scenes-clip"))
    service = start_service(variants_root, bundles_root, root / "service.log")
    yield Served(service, clip_dir, bundle, images_dir)
    assert stop_service(service) == 0, service.log()


def assert_offline_ranking(
    answer: dict[str, object], bundle: LoadedBundle, collection: str, query: np.ndarray
) -> None:
    """The served top K are the offline top K: each served score equals the offline one, and
    nothing left out scores higher than the last served hit (beyond float32 noise)."""
    loaded = bundle.collections[collection]
    scores = loaded.vectors.astype(np.float64) @ query.astype(np.float64)
    hits = answer["results"]
    assert isinstance(hits, list)
    assert len(hits) == K
    served_rows = [loaded.row_of[hit["id"]] for hit in hits]
    for hit, row in zip(hits, served_rows, strict=True):
        assert hit["score"] == pytest.approx(scores[row], abs=1e-4)
    left_out = np.delete(scores, served_rows)
    assert left_out.max() <= scores[served_rows[-1]] + 1e-4


def search(served: Served, query: dict[str, object], collection: str) -> dict[str, object]:
    response = httpx.post(
        f"{served.service.url}/v1/search",
        json={"query": query, "collection": collection, "k": K, "variant": CLIP_VARIANT},
        timeout=60.0,
    )
    assert response.status_code == 200, response.text
    answer: dict[str, object] = response.json()
    assert answer["variant"] == CLIP_VARIANT
    return answer


def ids(answer: dict[str, object]) -> list[str]:
    return [hit["id"] for hit in answer["results"]]  # type: ignore[attr-defined,index]


def test_both_variants_are_served(served: Served) -> None:
    listed = httpx.get(f"{served.service.url}/v1/variants", timeout=10.0).json()["variants"]
    by_name = {variant["name"]: variant for variant in listed}
    assert set(by_name) == {CLIP_VARIANT, TEXT_VARIANT}
    assert sorted(by_name[CLIP_VARIANT]["towers"]) == ["image", "text"]
    assert by_name[CLIP_VARIANT]["dim"] == tiny_clip.TINY_DIM
    assert by_name[CLIP_VARIANT]["precision"] == "fp32"


def test_text_to_image_and_text_to_text(served: Served) -> None:
    text = served.bundle.collections["captions"].metadata[3]["text"]
    assert isinstance(text, str)
    vector = OnnxTextEncoder(served.clip_dir, providers="cpu").encode_texts([text])[0]
    for collection in ("images", "captions"):
        answer = search(served, {"text": text}, collection)
        assert_offline_ranking(answer, served.bundle, collection, vector)
    # The caption itself is its own nearest caption.
    assert (
        ids(search(served, {"text": text}, "captions"))[0]
        == served.bundle.collections["captions"].ids[3]
    )


def test_image_to_image_and_image_to_text(served: Served) -> None:
    name = served.bundle.collections["images"].ids[5]
    data = (served.images_dir / name).read_bytes()
    vector = OnnxImageEncoder(served.clip_dir, providers="cpu").encode_images(
        [decode_image(data, LIMITS)]
    )[0]
    query = {"image": base64.b64encode(data).decode()}
    image_answer = search(served, query, "images")
    assert ids(image_answer)[0] == name
    assert image_answer["results"][0]["score"] == pytest.approx(1.0, abs=1e-4)  # type: ignore[index]
    assert_offline_ranking(image_answer, served.bundle, "images", vector)
    assert_offline_ranking(search(served, query, "captions"), served.bundle, "captions", vector)


def test_the_other_variant_answers_text_queries_in_its_own_space(served: Served) -> None:
    response = httpx.post(
        f"{served.service.url}/v1/search",
        json={
            "query": {"text": "a red circle"},
            "collection": "captions",
            "k": K,
            "variant": TEXT_VARIANT,
        },
        timeout=60.0,
    )
    assert response.status_code == 200, response.text
    assert response.json()["variant"] == TEXT_VARIANT
    assert len(response.json()["results"]) == K
