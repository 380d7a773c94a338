"""Writes the two onnxruntime graphs of the exact scan (:mod:`service.engine.rank.exact_scan`) into
``service/engine/rank/graphs/``: ``scan_rows.onnx`` for vectors stored row-major (``[n, d]``,
``Gemm`` with ``transB``) and ``scan_columns.onnx`` for vectors stored column-major (``vectors.T``
is a row-major ``[d, n]``, ``MatMul``). Each takes ``queries`` float32 ``[q, d]``, ``vectors`` and
``fetch`` int64 ``[1]`` and returns ``scores`` float32 ``[q, fetch]`` and ``rows`` int64 ``[q,
fetch]``, the ``fetch`` largest inner products of every query, unordered (``TopK`` with
``sorted=0``).

The graphs are committed (the serving install has no ``onnx`` package); run this with the
``export`` extra to write them again: ``.venv/bin/python scripts/make_scan_graphs.py``.
``tests/unit/service/test_exact_scan.py`` checks the committed files are what it writes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import onnx
from onnx import TensorProto, helper

GRAPHS = Path(__file__).resolve().parent.parent / "service" / "engine" / "rank" / "graphs"
OPSET = 17
IR_VERSION = 8


def scan_graph(layout: str) -> bytes:
    """The serialised scan graph for vectors stored ``layout`` ("rows" or "columns")."""
    if layout not in ("rows", "columns"):
        raise ValueError(f"layout must be 'rows' or 'columns', got {layout!r}")
    queries = helper.make_tensor_value_info("queries", TensorProto.FLOAT, ["q", "d"])
    vector_shape = ["n", "d"] if layout == "rows" else ["d", "n"]
    vectors = helper.make_tensor_value_info("vectors", TensorProto.FLOAT, vector_shape)
    fetch = helper.make_tensor_value_info("fetch", TensorProto.INT64, [1])
    scores = helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["q", "k"])
    rows = helper.make_tensor_value_info("rows", TensorProto.INT64, ["q", "k"])
    product = (
        helper.make_node("Gemm", ["queries", "vectors"], ["products"], transB=1)
        if layout == "rows"
        else helper.make_node("MatMul", ["queries", "vectors"], ["products"])
    )
    top = helper.make_node(
        "TopK", ["products", "fetch"], ["scores", "rows"], axis=1, largest=1, sorted=0
    )
    graph = helper.make_graph(
        [product, top], f"exact_scan_{layout}", [queries, vectors, fetch], [scores, rows]
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="crisscross scripts/make_scan_graphs.py",
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model.SerializeToString()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=GRAPHS, help="folder to write (%(default)s)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for layout in ("rows", "columns"):
        path = args.out / f"scan_{layout}.onnx"
        path.write_bytes(scan_graph(layout))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
