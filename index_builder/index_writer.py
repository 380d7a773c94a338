"""Writing a collection's faiss index as an :class:`~index_builder.index_plan.IndexSpec` asks:
plan it, build it (in memory, or IVF lists merged on disk), tune it to the target recall.

Training uses a seeded sample of the stored rows (``IndexPlan.train_rows``: all rows up to
50 000, at least 39 per IVF list and 9 984 for 8-bit PQ); the rows are then added in order, so
the index's ids are the bundle's row numbers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

from index_builder.faiss_index import trained_empty_index, training_sample
from index_builder.index_plan import IndexPlan, IndexSpec, plan_index
from index_builder.index_tuning import IndexTuning, tune_index
from index_builder.ivf_merge import write_ivf_from_parts

logger = logging.getLogger(__name__)

PART_ROWS = 100_000
"""Rows per part when an on-disk index is built from one in-memory matrix."""


@dataclass(frozen=True)
class WrittenIndex:
    """What the manifest records of the written index."""

    plan: IndexPlan
    index_file: str
    ivfdata_file: str | None
    search_params: dict[str, float | int | str]
    tuning: IndexTuning | None


def _parts(vectors: np.ndarray) -> Iterator[np.ndarray]:
    for start in range(0, len(vectors), PART_ROWS):
        yield vectors[start : start + PART_ROWS]


def write_planned_index(
    folder: Path, name: str, vectors: np.ndarray, spec: IndexSpec
) -> WrittenIndex:
    """Plan, build, tune and write ``folder/<name>.faiss`` (and ``<name>.ivfdata`` on disk).

    ``vectors`` are the collection's float32 L2-normalised rows. Raises
    :class:`~index_builder.index_plan.IndexPlanError` for a spec this collection cannot have.
    """
    count, dim = (int(size) for size in vectors.shape)
    plan = plan_index(count, dim, spec)
    logger.info("%s: %s index %s — %s", name, plan.kind, plan.factory, plan.reason)
    index_file = f"{name}.faiss"
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
    faiss.write_index(index, str(folder / index_file))
    return WrittenIndex(plan, index_file, ivfdata_file, search_params, tuning)
