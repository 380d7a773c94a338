"""Per-query records for the HTML report: a bounded, seeded sample of the retrieval queries with
the top results the service returned, each labelled with what the ground truth says of it.

For every retrieval query stream (``t2t``, ``i2t``, ``t2i``, ``i2i``: one search per distinct
query, :mod:`~benchmarks.runs.quality.retrieval`) each result among the first
:data:`RECORD_DEPTH` is labelled with

- ``human``: CxC's aggregated human score of the (query, result) pair (STS for t2t, SITS for
  i2t / t2i, SIS for i2i; the largest when rated twice), ``None`` when CxC did not rate it;
- ``coco``: whether MS-COCO pairs it with the query (the same image's captions for t2t and
  i2t, the caption's own image for t2i); ``None`` for i2i, which MS-COCO has no pairs for;
- ``cider``: its CIDEr-D against the query (i2t / t2i, when the run read the CIDEr-D matrix),
  else ``None``.

The sample is bounded: at most ``html_queries`` queries in all, split evenly over the streams;
within a stream the queries with a false-negative result come first, then those with a
CxC-rated result, then those CxC rated at all, then the rest, each tier in a seeded random
order (``numpy.random.default_rng([seed, stream])``). Given ``pinned`` (stream → query ids, e.g.
another variant's sample: the compare run's), a stream records exactly those of its queries, in
stream order, instead of sampling. The false-negative gallery (results
MS-COCO counts wrong that CxC rates ≥ its positive threshold, human score descending, then
rank) is taken over every query of the stream, at most :data:`MAX_FALSE_NEGATIVES` in all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from benchmarks.runs.quality.context import QualityContext
from evaluation.data.corpus import CxcData
from evaluation.data.ground_truth import RetrievalTask
from formats.cxc import RatingKind

RECORD_DEPTH: Final = 10
"""Results shown per query."""
MAX_FALSE_NEGATIVES: Final = 60
"""Most entries of the false-negative gallery."""
SCORE_DIGITS: Final = 4

STREAMS: Final[Mapping[tuple[str, str], tuple[str, RatingKind]]] = {
    ("captions", "captions"): ("t2t", RatingKind.STS),
    ("images", "captions"): ("i2t", RatingKind.SITS),
    ("captions", "images"): ("t2i", RatingKind.SITS),
    ("images", "images"): ("i2i", RatingKind.SIS),
}
"""(query collection, target collection) → the stream's name and the CxC file that rates it."""

KIND_OF: Final = {"captions": "caption", "images": "image"}


@dataclass(frozen=True)
class Stream:
    """One retrieval query stream: its queries' kept results and how to label them.

    Attributes:
        name: ``t2t``, ``i2t``, ``t2i`` or ``i2i``.
        tasks: the tasks that share its searches.
        top_ids: query id → its first result ids, as the service ranked them.
        top_scores: query id → their scores (may be empty: then ``None`` per result).
    """

    name: str
    tasks: Sequence[RetrievalTask]
    top_ids: Mapping[str, Sequence[str]]
    top_scores: Mapping[str, Sequence[float]]

    @property
    def queries(self) -> list[str]:
        """The stream's distinct queries in task order."""
        return list(dict.fromkeys(query for task in self.tasks for query in task.queries))


class Labeller:
    """Labels a stream's results: CxC human score, MS-COCO positive, CIDEr-D.

    Args:
        data: the split's data (captions, images, the CxC ratings that were loaded).
        cider: the split's CIDEr-D matrix ``[captions, images]``, or ``None``.
    """

    def __init__(self, data: CxcData, cider: npt.NDArray[np.floating] | None) -> None:
        self.image_of = {caption.key: caption.filename for caption in data.captions}
        self.caption_row = {caption.key: caption.row for caption in data.captions}
        self.image_row = {image.filename: image.row for image in data.images}
        self.cider = cider
        self.human: dict[RatingKind, dict[tuple[str, str], float]] = {}
        self.rated: dict[RatingKind, set[str]] = {}
        for kind, ratings in data.ratings.items():
            pairs: dict[tuple[str, str], float] = {}
            for rating in ratings:
                keys = [(rating.item1, rating.item2)]
                if kind is not RatingKind.SITS:  # STS / SIS pairs are unordered
                    keys.append((rating.item2, rating.item1))
                for key in keys:
                    pairs[key] = max(rating.agg_score, pairs.get(key, rating.agg_score))
            self.human[kind] = pairs
            self.rated[kind] = {item for pair in pairs for item in pair}

    def has_ratings(self, name: str) -> bool:
        """Whether CxC's file for the stream was loaded."""
        return _kind(name) in self.human

    def has_cider(self, name: str) -> bool:
        """Whether the stream's results get a CIDEr-D score."""
        return self.cider is not None and name in ("i2t", "t2i")

    def is_rated(self, name: str, query: str) -> bool:
        """Whether CxC rated the query against anything."""
        return query in self.rated.get(_kind(name), set())

    def label(
        self, name: str, query: str, result: str
    ) -> tuple[float | None, bool | None, float | None]:
        """(human score, MS-COCO positive, CIDEr-D) of one result."""
        kind = _kind(name)
        pair = (result, query) if name == "i2t" else (query, result)
        human = self.human.get(kind, {}).get(pair)
        coco: bool | None
        if name == "t2t":
            coco = self.image_of.get(result) == self.image_of.get(query)
        elif name == "i2t":
            coco = self.image_of.get(result) == query
        elif name == "t2i":
            coco = self.image_of.get(query) == result
        else:
            coco = None
        cider = None
        if self.cider is not None and name in ("i2t", "t2i"):
            caption, image = pair
            value = float(self.cider[self.caption_row[caption], self.image_row[image]])
            cider = round(value, SCORE_DIGITS)
        return human, coco, cider


def _kind(name: str) -> RatingKind:
    return {"t2t": RatingKind.STS, "i2i": RatingKind.SIS}.get(name, RatingKind.SITS)


def stream_results(
    stream: Stream, labeller: Labeller, query: str, depth: int = RECORD_DEPTH
) -> list[dict[str, Any]]:
    """One query's first ``depth`` results, each ``{rank, id, score, human, coco, cider}``."""
    ids = list(stream.top_ids.get(query, ()))[:depth]
    scores = list(stream.top_scores.get(query, ()))
    results = []
    for rank, item in enumerate(ids, start=1):
        human, coco, cider = labeller.label(stream.name, query, item)
        score = round(scores[rank - 1], SCORE_DIGITS) if rank <= len(scores) else None
        results.append(
            {"rank": rank, "id": item, "score": score, "human": human, "coco": coco, "cider": cider}
        )
    return results


def false_negatives(
    streams: Sequence[Stream], labeller: Labeller, limit: int = MAX_FALSE_NEGATIVES
) -> list[dict[str, Any]]:
    """Results MS-COCO counts wrong that CxC rates at least its positive threshold, over every
    query of every stream: human score descending, then rank, then stream and query order."""
    found: list[tuple[float, int, int, int, dict[str, Any]]] = []
    for order, stream in enumerate(streams):
        threshold = _kind(stream.name).positive_threshold
        for position, query in enumerate(stream.queries):
            for result in stream_results(stream, labeller, query):
                human = result["human"]
                if result["coco"] is False and human is not None and human >= threshold:
                    entry = {"stream": stream.name, "query": query, **result}
                    found.append((-human, result["rank"], order, position, entry))
    found.sort(key=lambda item: item[:4])
    return [entry for *_, entry in found[:limit]]


def sample_queries(
    stream: Stream, labeller: Labeller, budget: int, seed: int, index: int, first: set[str]
) -> list[str]:
    """At most ``budget`` of the stream's queries (in stream order): those in ``first``
    (false-negative queries), then those with a CxC-rated result, then those CxC rated at all,
    then the rest; each tier in a seeded random order."""
    queries = stream.queries
    if len(queries) <= budget:
        return queries
    rng = np.random.default_rng([seed, index])
    order = rng.permutation(len(queries))

    def tier(position: int) -> int:
        query = queries[position]
        if query in first:
            return 0
        results = stream_results(stream, labeller, query)
        if any(result["human"] is not None for result in results):
            return 1
        return 2 if labeller.is_rated(stream.name, query) else 3

    tiers = {int(position): tier(int(position)) for position in order}
    chosen = sorted((int(position) for position in order), key=lambda position: tiers[position])[
        :budget
    ]
    return [queries[position] for position in sorted(chosen)]


def query_records(
    groups: Sequence[tuple[Sequence[RetrievalTask], Mapping[str, Sequence[str]]]],
    scores: Mapping[str, Mapping[str, Sequence[float]]],
    data: CxcData,
    cider: npt.NDArray[np.floating] | None,
    *,
    max_queries: int,
    seed: int,
    pinned: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The HTML report's per-query data: ``bound``, ``streams``, ``records``,
    ``false_negatives`` and ``captions`` (caption key → text, for every caption shown).

    Args:
        groups: the retrieval groups and their kept result ids (``QualityResults.top_ids``).
        scores: first task name of a group → query id → the scores of those ids.
        data: the split's data.
        cider: the split's CIDEr-D matrix, or ``None``.
        max_queries: most queries in all (split evenly over the streams).
        seed: the sample's seed.
        pinned: stream → the query ids to record in place of the sample (ids the stream lacks
            are left out; a stream not named records none); ``None``: sample.
    """
    labeller = Labeller(data, cider)
    streams = [
        Stream(
            name=STREAMS[(tasks[0].query_collection, tasks[0].target_collection)][0],
            tasks=tasks,
            top_ids=top,
            top_scores=scores.get(tasks[0].name, {}),
        )
        for tasks, top in groups
        if tasks and (tasks[0].query_collection, tasks[0].target_collection) in STREAMS
    ]
    gallery = false_negatives(streams, labeller)
    budget = max_queries // len(streams) if streams else 0
    records: list[dict[str, Any]] = []
    described: list[dict[str, Any]] = []
    for index, stream in enumerate(streams):
        first = {entry["query"] for entry in gallery if entry["stream"] == stream.name}
        if pinned is None:
            chosen = sample_queries(stream, labeller, budget, seed, index, first)
        else:
            wanted = set(pinned.get(stream.name, ()))
            chosen = [query for query in stream.queries if query in wanted]
        query_kind = KIND_OF[stream.tasks[0].query_collection]
        for query in chosen:
            records.append(
                {
                    "stream": stream.name,
                    "query": query,
                    "query_kind": query_kind,
                    "cxc_rated": labeller.is_rated(stream.name, query),
                    "results": stream_results(stream, labeller, query),
                }
            )
        described.append(
            {
                "name": stream.name,
                "tasks": [task.name for task in stream.tasks],
                "query_kind": query_kind,
                "target_kind": KIND_OF[stream.tasks[0].target_collection],
                "queries": len(stream.queries),
                "shown": len(chosen),
                "human_ratings": _kind(stream.name).name.lower()
                if labeller.has_ratings(stream.name)
                else None,
                "human_threshold": _kind(stream.name).positive_threshold,
                "coco_labels": stream.name != "i2i",
                "cider": labeller.has_cider(stream.name),
            }
        )
    texts = {caption.key: caption.text for caption in data.captions}
    shown: set[str] = set()
    for record in records:
        if record["query_kind"] == "caption":
            shown.add(record["query"])
        shown.update(result["id"] for result in record["results"])
    for entry in gallery:
        shown.update((entry["query"], entry["id"]))
    return {
        "bound": {
            "max_queries": max_queries,
            "per_stream": budget,
            "depth": RECORD_DEPTH,
            "seed": seed,
            "max_false_negatives": MAX_FALSE_NEGATIVES,
            "pinned": pinned is not None,
        },
        "streams": described,
        "records": records,
        "false_negatives": gallery,
        "captions": {key: texts[key] for key in sorted(shown) if key in texts},
    }


async def query_records_phase(context: QualityContext) -> None:
    """The bounded per-query sample of the HTML report (``html_queries`` > 0; the queries of
    ``html_query_ids`` when set); drops the
    CIDEr-D matrix the graded phase left for it."""
    config, results = context.config, context.results
    cider, results.cider_matrix = results.cider_matrix, None
    if not config.html_queries or not results.top_ids:
        return
    results.queries = query_records(
        results.top_ids,
        results.top_scores,
        context.data,
        cider,
        max_queries=config.html_queries,
        seed=config.seed,
        pinned=config.html_query_ids,
    )
