"""Writing a collection's faiss index as an :class:`~storage.index_plan.IndexSpec` asks:
plan it, build it (in memory, or IVF lists merged on disk), tune it to the target recall.
:class:`PlannedIndex` is the bundle writer's :class:`~storage.writer.IndexWriter` for it.

Training uses a seeded sample of the stored rows (``IndexPlan.train_rows``: all rows up to
50 000, at least 39 per IVF list and 9 984 for 8-bit PQ); the rows are then added in order, so
the index's ids are the bundle's row numbers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from index_builder.ivf_merge import write_ivf_from_parts
from storage.index_files import trained_empty_index, write_index
from storage.index_plan import IndexSpec, plan_index
from storage.index_tuning import tune_index
from storage.layout import index_file
from storage.writer import FactoryIndex, IndexWriter, WrittenIndex

logger = logging.getLogger(__name__)

PART_ROWS = 100_000
"""Rows per part when an on-disk index is built from one in-memory matrix."""


def training_sample(vectors: np.ndarray, rows: int, seed: int) -> np.ndarray:
    """A seeded sample of ``rows`` stored vectors (all of them, in order, when rows >= n)."""
    count = int(vectors.shape[0])
    if rows >= count:
        return np.ascontiguousarray(vectors, dtype=np.float32)
    chosen = np.sort(np.random.default_rng(seed).choice(count, size=rows, replace=False))
    return np.ascontiguousarray(vectors[chosen], dtype=np.float32)


def _parts(vectors: np.ndarray) -> Iterator[np.ndarray]:
    for start in range(0, len(vectors), PART_ROWS):
        yield vectors[start : start + PART_ROWS]


def index_writer(factory: str, spec: IndexSpec | None) -> IndexWriter:
    """The bundle writer's index for a collection: ``spec`` planned and tuned, or without one
    the ``factory`` string as it is."""
    return FactoryIndex(factory) if spec is None else PlannedIndex(spec)


@dataclass(frozen=True)
class PlannedIndex:
    """The index ``spec`` asks for, as the bundle writer's index (see the module)."""

    spec: IndexSpec

    def write(self, folder: Path, collection: str, vectors: np.ndarray) -> WrittenIndex:
        """Plan, build, tune and write ``folder/<collection>.faiss`` (and
        ``<collection>.ivfdata`` on disk); what the manifest records of it.

        ``vectors`` are the collection's float32 L2-normalised rows. Raises
        :class:`~storage.index_plan.IndexPlanError` for a spec this collection cannot
        have.
        """
        return _write_planned(folder, collection, vectors, self.spec)


def _write_planned(folder: Path, name: str, vectors: np.ndarray, spec: IndexSpec) -> WrittenIndex:
    count, dim = (int(size) for size in vectors.shape)
    plan = plan_index(count, dim, spec)
    logger.info("%s: %s index %s — %s", name, plan.kind, plan.factory, plan.reason)
    file_name = index_file(name)
    ivfdata_file = None
    if plan.kind == "flat":
        index = trained_empty_index(plan.factory, vectors[:1])
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    else:
        sample = training_sample(vectors, plan.train_rows or count, spec.seed)
        trained = trained_empty_index(plan.factory, sample)
        if plan.kind == "hnsw":
            trained.add(np.ascontiguousarray(vectors, dtype=np.float32))
            index = trained
        elif plan.on_disk:
            merged = write_ivf_from_parts(folder, name, trained, _parts(vectors))
            index, ivfdata_file = merged.index, merged.ivfdata_file
        else:
            trained.add(np.ascontiguousarray(vectors, dtype=np.float32))
            index = trained
    tuning = None
    search_params: dict[str, float | int | str] = {}
    if plan.parameter is not None:
        tuning = tune_index(
            index,
            vectors,
            plan.parameter,
            plan.candidates,
            target_recall=spec.target_recall,
            held_out_queries=spec.held_out_queries,
            seed=spec.seed,
        ).model_copy(update={"index_kind": plan.kind, "reason": plan.reason})
        search_params = {tuning.parameter: tuning.value}
        logger.info(
            "%s: %s=%d gives recall@10 %.4f on %d held-out queries (target %.3f%s)",
            name,
            tuning.parameter,
            tuning.value,
            tuning.recall_at_10,
            tuning.held_out_queries,
            tuning.target_recall,
            "" if tuning.met else ", NOT met: the largest value was chosen",
        )
    # Also over an on-disk index the merge wrote: the file then holds the tuned parameter too
    # (its lists stay in the .ivfdata file).
    write_index(index, folder / file_name)
    return WrittenIndex(plan.factory, file_name, ivfdata_file, search_params, tuning)
