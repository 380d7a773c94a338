"""``python -m cluster build`` takes the single-machine build's options
(:mod:`index_builder.build_options`), the index options included: parsed only, no Ray started."""

from __future__ import annotations

import pytest

from cluster.__main__ import build_parser as cluster_parser
from index_builder.__main__ import build_parser as index_builder_parser
from index_builder.build_options import index_spec, ingest_options, input_kind
from storage.index_plan import IndexSpec

COMMON = ["build", "--variant", "v", "--texts", "t.jsonl", "--name", "products"]


def test_the_index_options_build_the_same_spec_as_index_builder() -> None:
    argv = [*COMMON, "--index", "ivf-flat", "--target-recall", "0.9", "--nlist", "64"]
    on_ray = cluster_parser().parse_args(argv)
    local = index_builder_parser().parse_args(argv)

    spec = index_spec(on_ray.parser, on_ray)
    assert spec == index_spec(local.parser, local)
    assert spec == IndexSpec(kind="ivf-flat", target_recall=0.9, nlist=64)
    kind = input_kind(on_ray.parser, on_ray)
    assert ingest_options(on_ray, kind, spec) == ingest_options(local, kind, spec)
    assert ingest_options(on_ray, kind, spec).index == spec


@pytest.mark.parametrize(
    "extra",
    [
        ["--target-recall", "0.9"],  # needs --index
        ["--index", "hnsw", "--pq-m", "8"],  # --pq-m is ivf-pq's
        ["--factory", "Flat", "--index", "flat"],  # one or the other
        ["--images-dir", "images"],  # the distributed build has no --images-dir
        ["--path-column", "file"],  # --image-table's
    ],
)
def test_option_clashes_are_usage_errors(extra: list[str]) -> None:
    def check(argv: list[str]) -> None:
        args = cluster_parser().parse_args(argv)
        input_kind(args.parser, args)
        index_spec(args.parser, args)

    with pytest.raises(SystemExit) as exit_info:
        check([*COMMON, *extra])
    assert exit_info.value.code == 2


def test_without_index_options_the_build_is_flat_and_untuned() -> None:
    args = cluster_parser().parse_args(COMMON)
    options = ingest_options(args, input_kind(args.parser, args), index_spec(args.parser, args))
    assert (options.factory, options.index, options.collection) == ("Flat", None, "products")
    captions = cluster_parser().parse_args(
        ["build", "--variant", "v", "--captions", "c.csv", "--name", "Not A Collection!"]
    )
    assert ingest_options(captions, "captions", None).collection == "captions"
