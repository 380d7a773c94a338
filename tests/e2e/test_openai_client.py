"""The official ``openai`` package (pinned in pyproject's dev extra) against a real server:
uvicorn, the exported MiniLM (text, the default) and the committed scenes dual encoder (text and
image towers), read keys on. Its default call (base64), float calls, images through
``extra_body``, ``dimensions``, typed errors, ``models.list()`` and a retried 503."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest
from PIL import Image

from tests.e2e.conftest import LiveService, build_scenes_roots, start_service, stop_service
from tests.fakes.tiny_http import Reply, Request, serve_in_thread

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

KEY = "openai-e2e-read-key-0123456789abcdef"
MINILM = "minilm-l6-v2"
SCENES = "scenes-dual-encoder"
TEXTS = ["a dog on a couch", "two red buses parked beside a house", "a cat"]


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, served_roots: tuple[Path, Path]
) -> Iterator[LiveService]:
    """MiniLM with its captions bundle (the default) beside the scenes model and bundle."""
    root = tmp_path_factory.mktemp("openai-e2e")
    variants_root, bundles_root = build_scenes_roots(root, scenes=4)
    minilm_variants, minilm_bundles = served_roots
    (variants_root / MINILM).symlink_to((minilm_variants / MINILM).resolve())
    (bundles_root / "coco-captions").symlink_to((minilm_bundles / "coco-captions").resolve())
    env = {"CRISSCROSS_DEFAULT_VARIANT": MINILM, "CRISSCROSS_READ_KEYS": KEY}
    live = start_service(variants_root, bundles_root, root / "service.log", env)
    yield live
    assert stop_service(live) == 0, live.log()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def client(service: LiveService) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{service.url}/v1", api_key=KEY, max_retries=0) as client:
        yield client


def embed(service: LiveService, body: dict[str, object]) -> np.ndarray:
    response = httpx.post(
        f"{service.url}/v1/embed", json=body, headers={"x-api-key": KEY}, timeout=30.0
    )
    assert response.status_code == 200, response.text
    return np.array(response.json()["embeddings"], dtype=np.float32)


def png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (48, 40), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_the_default_base64_call_and_float_equal_embed(
    service: LiveService, client: openai.OpenAI
) -> None:
    expected = embed(service, {"texts": TEXTS})
    default = client.embeddings.create(model=MINILM, input=TEXTS)  # asks for base64
    floats = client.embeddings.create(model=MINILM, input=TEXTS, encoding_format="float")
    for answer in (default, floats):
        assert answer.model == MINILM
        assert answer.object == "list"
        assert [row.index for row in answer.data] == [0, 1, 2]
        assert {row.object for row in answer.data} == {"embedding"}
        np.testing.assert_allclose(
            np.array([row.embedding for row in answer.data]), expected, atol=1e-6
        )
        assert answer.usage.prompt_tokens == answer.usage.total_tokens > len(TEXTS) * 2


def test_the_async_client_gives_the_same_vectors(service: LiveService) -> None:
    async def call() -> list[list[float]]:
        async with openai.AsyncOpenAI(
            base_url=f"{service.url}/v1", api_key=KEY, max_retries=0
        ) as client:
            answer = await client.embeddings.create(model=MINILM, input=TEXTS)
            return [row.embedding for row in answer.data]

    np.testing.assert_allclose(
        np.array(asyncio.run(call())), embed(service, {"texts": TEXTS}), atol=1e-6
    )


def test_images_through_extra_body_equal_embed(service: LiveService, client: openai.OpenAI) -> None:
    files = [png((200, 30, 30)), png((30, 30, 200))]
    encoded = [base64.b64encode(data).decode("ascii") for data in files]
    inputs = ["data:image/png;base64," + encoded[0], encoded[1]]
    answer = client.embeddings.create(model=SCENES, input=inputs, extra_body={"modality": "image"})
    expected = embed(service, {"images": encoded, "variant": SCENES})
    np.testing.assert_allclose(
        np.array([row.embedding for row in answer.data]), expected, atol=1e-6
    )
    assert answer.usage.prompt_tokens == 0


def test_dimensions_full_is_accepted_and_a_cut_minilm_was_not_trained_for_is_refused(
    client: openai.OpenAI,
) -> None:
    full = client.embeddings.create(model=MINILM, input="a cat", dimensions=384)
    assert len(full.data[0].embedding) == 384
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.embeddings.create(model=MINILM, input="a cat", dimensions=64)
    assert "384" in refused.value.message
    assert refused.value.type == "invalid_request_error"
    assert refused.value.param == "dimensions" or refused.value.param is None


def test_token_ids_and_an_unknown_model_raise_typed_errors(client: openai.OpenAI) -> None:
    with pytest.raises(openai.UnprocessableEntityError) as token_ids:
        client.embeddings.create(model=MINILM, input=[[101, 2023, 102]])
    assert "token ids" in token_ids.value.message
    with pytest.raises(openai.NotFoundError) as unknown:
        client.embeddings.create(model="text-embedding-3-small", input="a cat")
    assert unknown.value.code == "not_found"
    assert MINILM in unknown.value.message


def test_a_wrong_key_is_a_permission_error(service: LiveService) -> None:
    """A key the server does not know is 403 here (401 is for no key at all)."""
    with (
        openai.OpenAI(base_url=f"{service.url}/v1", api_key="nope", max_retries=0) as client,
        pytest.raises(openai.PermissionDeniedError) as refused,
    ):
        client.embeddings.create(model=MINILM, input="a cat")
    assert refused.value.type == "permission_error"


def test_models_list_names_the_variants(client: openai.OpenAI) -> None:
    assert {model.id for model in client.models.list()} == {MINILM, SCENES}


def test_models_state_how_many_inputs_one_request_takes(client: openai.OpenAI) -> None:
    limits = {
        model.id: (model.model_extra or {}).get("max_inputs") for model in client.models.list()
    }
    assert limits == {MINILM: 2048, SCENES: 2048}


def captions(count: int) -> list[str]:
    """``count`` distinct short captions."""
    things = ["dog", "cat", "red bus", "bicycle", "kite", "pizza", "clock", "horse"]
    places = ["on a couch", "in the rain", "by the sea", "near a house", "on a table"]
    return [
        f"{n} {things[n % len(things)]} {places[n // len(things) % len(places)]}"
        for n in range(count)
    ]


def test_openais_most_inputs_go_in_one_request(service: LiveService, client: openai.OpenAI) -> None:
    """2048 inputs, OpenAI's own limit per request (the default chunk_size of LangChain's
    OpenAIEmbeddings is 1000, of others up to 2048): one call, every row in order."""
    texts = captions(2048)
    answer = client.embeddings.create(model=MINILM, input=texts)  # base64, as by default
    assert [row.index for row in answer.data] == list(range(2048))
    picked = [0, 1023, 2047]
    expected = embed(service, {"texts": [texts[n] for n in picked]})
    got = np.array([answer.data[n].embedding for n in picked])
    np.testing.assert_allclose(got, expected, atol=1e-5)
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.embeddings.create(model=MINILM, input=captions(2049))
    assert "max_embed_inputs=2048" in refused.value.message


def test_langchains_openai_embeddings_with_its_defaults(service: LiveService) -> None:
    """LangChain's OpenAIEmbeddings as its documentation configures any OpenAI-compatible
    server (only check_embedding_ctx_length=False: it would send OpenAI's token ids), with its
    default chunk_size of 1000: 2500 texts in three requests. Runs where langchain-openai is
    installed (it is not a dependency of the project)."""
    langchain_openai = pytest.importorskip("langchain_openai")
    embeddings = langchain_openai.OpenAIEmbeddings(
        model=MINILM,
        base_url=f"{service.url}/v1",
        api_key=KEY,
        check_embedding_ctx_length=False,
    )
    assert embeddings.chunk_size == 1000
    texts = captions(2500)
    vectors = embeddings.embed_documents(texts)
    assert len(vectors) == 2500
    expected = embed(service, {"texts": [texts[0], texts[2499]]})
    np.testing.assert_allclose(np.array([vectors[0], vectors[2499]]), expected, atol=1e-5)
    query = embeddings.embed_query(texts[7])
    np.testing.assert_allclose(query, embed(service, {"texts": [texts[7]]})[0], atol=1e-5)


def test_a_503_with_retry_after_is_retried_then_succeeds(service: LiveService) -> None:
    """A proxy answers the first call 503 + Retry-After (the service's overload refusal, in its
    shape) and forwards the rest: the openai client waits and retries, then gets the vectors."""

    async def proxy(request: Request) -> Reply:
        if request.number == 1:
            body = {
                "error": {
                    "code": "overloaded",
                    "message": "encoder queue full",
                    "request_id": "r-1",
                    "type": "service_unavailable_error",
                    "param": None,
                }
            }
            return Reply(503, json.dumps(body).encode(), {"Retry-After": "1"})
        async with httpx.AsyncClient() as upstream:
            answer = await upstream.request(
                request.method,
                f"{service.url}{request.path}",
                content=request.body,
                headers={"content-type": "application/json", "authorization": f"Bearer {KEY}"},
            )
        return Reply(answer.status_code, answer.content, {"content-type": "application/json"})

    with serve_in_thread(proxy) as server:
        with openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=2) as client:
            answer = client.embeddings.create(model=MINILM, input="a cat")
        assert len(server.requests) == 2
    assert len(answer.data[0].embedding) == 384
