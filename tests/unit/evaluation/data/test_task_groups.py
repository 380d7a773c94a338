"""Retrieval tasks by name and grouped by their shared query stream; first-positive ranks."""

from __future__ import annotations

import pytest

from evaluation.data.corpus import load_cxc_data
from evaluation.data.ground_truth import i2t_task, t2t_cocaptions_task, t2t_task
from evaluation.data.task_groups import (
    build_retrieval_task,
    first_ranks_of,
    group_queries,
    retrieval_groups,
)
from evaluation.data.task_plan import RETRIEVAL_TASKS
from formats.cxc import RatingKind
from tests.fakes.tiny_data import TinyDataset


def test_tasks_by_name_use_the_cxc_thresholds(tiny: TinyDataset) -> None:
    data = load_cxc_data(tiny.data_dir, tiny.split)
    assert build_retrieval_task(data, "t2t") == t2t_task(tiny.sts, tiny.captions)
    assert build_retrieval_task(data, "i2t") == i2t_task(tiny.sits, tiny.captions)
    assert [build_retrieval_task(data, name).name for name in RETRIEVAL_TASKS] == list(
        RETRIEVAL_TASKS
    )
    with pytest.raises(ValueError, match="unknown retrieval task"):
        build_retrieval_task(data, "sts")
    no_sis = load_cxc_data(tiny.data_dir, tiny.split, kinds=(RatingKind.STS,))
    with pytest.raises(ValueError, match="no SIS ratings loaded"):
        build_retrieval_task(no_sis, "i2i")


def test_groups_share_query_streams_in_catalogue_order(tiny: TinyDataset) -> None:
    data = load_cxc_data(tiny.data_dir, tiny.split)
    groups = retrieval_groups(data, ["i2i", "t2t_cocaptions", "sts", "t2i_original", "t2t"], 3)
    assert [[task.name for task in group] for group in groups] == [
        ["t2t", "t2t_cocaptions"],
        ["t2i_original"],
        ["i2i"],
    ]
    assert all(len(task.queries) <= 3 for group in groups for task in group)


def test_group_queries_and_first_ranks(tiny: TinyDataset) -> None:
    strict = t2t_task(tiny.sts, tiny.captions)
    loose = t2t_cocaptions_task(tiny.sts, tiny.captions)
    assert group_queries([strict, loose]) == list(strict.queries)
    query = strict.queries[0]
    partner = sorted(strict.positives[query])[0]
    ranks = first_ranks_of([strict, loose], query, ["nobody", partner])
    assert ranks["t2t"] == 2
    assert first_ranks_of([strict], query, []) == {"t2t": None}
    assert first_ranks_of([strict], "not a query", [partner]) == {}
