"""What the mixed run sends: seeded unit vectors (a row the same whatever the batch's length),
ids, items in both vector formats, the searches."""

from __future__ import annotations

import base64
import json

import numpy as np

from benchmarks.runs.mixed.payloads import (
    PRELOAD_STREAM,
    QUERY_STREAM,
    ItemRef,
    batch_refs,
    packed,
    query_bodies,
    unit_vectors,
    upsert_body,
    vector_search,
    writer_stream,
)


def test_unit_vectors_are_seeded_float32_and_of_norm_one() -> None:
    vectors = unit_vectors(0, PRELOAD_STREAM, 3, 50, 16)
    assert vectors.shape == (50, 16)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(vectors, unit_vectors(0, PRELOAD_STREAM, 3, 50, 16))
    assert not np.array_equal(vectors, unit_vectors(1, PRELOAD_STREAM, 3, 50, 16))
    assert not np.array_equal(vectors, unit_vectors(0, QUERY_STREAM, 3, 50, 16))
    assert not np.array_equal(vectors, unit_vectors(0, PRELOAD_STREAM, 4, 50, 16))


def test_a_row_is_the_same_whatever_the_batch_length_so_a_ref_regenerates_it() -> None:
    batch = unit_vectors(7, writer_stream(1), 5, 100, 32)
    for row in (0, 41, 99):
        np.testing.assert_array_equal(ItemRef(writer_stream(1), 5, row).vector(7, 32), batch[row])


def test_ids_name_the_stream_batch_and_row() -> None:
    assert ItemRef(PRELOAD_STREAM, 2, 9).id == "p2-9"
    assert ItemRef(writer_stream(0), 4, 1).id == "w0-4-1"
    assert ItemRef(writer_stream(3), 0, 0).id == "w3-0-0"
    assert [ref.id for ref in batch_refs(PRELOAD_STREAM, 1, 3)] == ["p1-0", "p1-1", "p1-2"]


def test_packed_is_base64_of_little_endian_float32() -> None:
    vector = unit_vectors(0, PRELOAD_STREAM, 0, 1, 8)[0]
    decoded = np.frombuffer(base64.b64decode(packed(vector)), dtype="<f4")
    np.testing.assert_array_equal(decoded, vector)


def test_upsert_bodies_in_both_formats_carry_the_same_vectors_and_group() -> None:
    refs = batch_refs(writer_stream(0), 0, 10)
    vectors = unit_vectors(0, writer_stream(0), 0, 10, 4)
    as_base64 = upsert_body(refs, vectors, "base64")["items"]
    as_json = upsert_body(refs, vectors, "json")["items"]
    assert [item["id"] for item in as_base64] == [ref.id for ref in refs]
    assert as_base64[9]["metadata"] == {"group": 1}
    assert set(as_base64[0]) == {"id", "vector_base64", "metadata"}
    assert set(as_json[0]) == {"id", "vector", "metadata"}
    for left, right in zip(as_base64, as_json, strict=True):
        packed_vector = np.frombuffer(base64.b64decode(left["vector_base64"]), dtype="<f4")
        np.testing.assert_array_equal(packed_vector, np.asarray(right["vector"], np.float32))
    json.dumps(as_json)  # plain floats, serialisable


def test_searches_are_filter_free_vector_queries() -> None:
    vector = unit_vectors(0, QUERY_STREAM, 0, 1, 4)[0]
    body = vector_search(vector, "c", 1)
    assert body["collection"] == "c"
    assert body["k"] == 1
    assert "filter" not in body
    assert body["query"]["vector"] == [float(value) for value in vector]
    bodies = [json.loads(raw) for raw in query_bodies(0, 5, 4, "c", 10)]
    assert len(bodies) == 5
    assert {body["k"] for body in bodies} == {10}
    assert len({tuple(body["query"]["vector"]) for body in bodies}) == 5
