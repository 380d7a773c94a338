"""A real bundle of approximate indexes over seeded clustered vectors in the fake variant's
space: ``ivf`` (IVF-Flat tuned to a recall target), ``hnsw`` (HNSW, tuned), ``pq`` (IVF-PQ,
untuned), ``disk`` (IVF-Flat with on-disk inverted lists, tuned) and ``flat`` — the same rows in
each, so every approximate answer can be checked against the exact one."""

from __future__ import annotations

from pathlib import Path

from index_builder.index_writer import index_writer
from storage.index_plan import IndexSpec
from storage.writer import CollectionInput, write_bundle
from tests.fakes.clustered import clustered_vectors
from tests.fakes.fake_encoders import FAKE_DIM, FAKE_FINGERPRINT, FAKE_VARIANT

APPROX_BUNDLE = "approx"
APPROX_COUNT = 1500
APPROX_NLIST = 32
APPROX_VECTORS = clustered_vectors(
    count=APPROX_COUNT, dim=FAKE_DIM, clusters=60, spread=1.2, duplicates=30, seed=5
)


def approx_id(collection: str, row: int) -> str:
    """The id of ``row`` in ``collection`` of the approx bundle."""
    return f"{collection}-{row}"


def _collection(
    name: str, index: IndexSpec | None = None, factory: str = "Flat"
) -> CollectionInput:
    return CollectionInput(
        name=name,
        ids=[approx_id(name, row) for row in range(APPROX_COUNT)],
        metadata=[{"row": row, "even": row % 2 == 0} for row in range(APPROX_COUNT)],
        vectors=APPROX_VECTORS,
        index=index_writer(factory, index),
    )


def write_approx_bundle(bundles_root: Path, *, version: str = "20260101T000000Z") -> Path:
    """Write the approx bundle under ``bundles_root``; returns its version folder."""
    tuned = {"target_recall": 0.97, "held_out_queries": 100, "seed": 0}
    return write_bundle(
        bundles_root,
        APPROX_BUNDLE,
        [
            _collection("ivf", IndexSpec(kind="ivf-flat", nlist=APPROX_NLIST, **tuned)),
            _collection("hnsw", IndexSpec(kind="hnsw", m=8, **tuned)),
            _collection("pq", factory="IVF16,PQ8x4np"),
            _collection("disk", IndexSpec(kind="ivf-flat", nlist=16, on_disk=True, **tuned)),
            _collection("flat"),
        ],
        variant_name=FAKE_VARIANT,
        variant_fingerprint=FAKE_FINGERPRINT,
        version=version,
    )
