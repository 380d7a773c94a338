"""One parse at a time: the lock keeps ast.parse's behaviour and, on an interpreter with the race
of cpython#106905, parses from several threads amid garbage collections no longer fail."""

from __future__ import annotations

import ast
import gc
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from service import ast_parse_lock

SOURCE = Path(ast.__file__).read_text(encoding="utf-8")  # a big real module


@pytest.mark.parametrize(
    ("version", "needed"),
    [
        ((3, 11, 0), True),
        ((3, 11, 7), True),
        ((3, 11, 8), False),
        ((3, 12, 1), True),
        ((3, 12, 2), False),
        ((3, 10, 13), False),
        ((3, 13, 0), False),
    ],
)
def test_needed_only_where_the_race_is(version: tuple[int, int, int], needed: bool) -> None:
    assert ast_parse_lock.needed(version) is needed


def test_install_is_idempotent_and_keeps_what_parse_does() -> None:
    assert ast_parse_lock.install() is ast_parse_lock.needed()
    assert ast_parse_lock.install() is ast_parse_lock.needed()
    assert ast_parse_lock.installed() is ast_parse_lock.needed()
    tree = ast.parse("x = [1, 2]  # type: list[int]", type_comments=True)
    assert ast.dump(tree) == ast.dump(
        compile(
            "x = [1, 2]  # type: list[int]",
            "<unknown>",
            "exec",
            ast.PyCF_ONLY_AST | ast.PyCF_TYPE_COMMENTS,
        )
    )
    assert ast.literal_eval("{'descr': '<f4', 'shape': (3, 2)}") == {
        "descr": "<f4",
        "shape": (3, 2),
    }
    with pytest.raises(SyntaxError):
        ast.parse("def (")


class _Cycle:
    """Garbage only a collection frees, whose finaliser runs Python code: the collector that
    starts inside one thread's AST construction lets another thread run."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        total = 0
        for number in range(200):
            total += number


@pytest.fixture
def switching_often() -> Iterator[None]:
    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(2000, 10, 10)
    yield
    sys.setswitchinterval(interval)
    gc.set_threshold(*thresholds)


@pytest.mark.slow  # about 3 s: three threads parse a large module 40 times each
@pytest.mark.skipif(not ast_parse_lock.needed(), reason="this interpreter has no parse race")
@pytest.mark.usefixtures("switching_often")
def test_threads_parsing_amid_collections_do_not_fail() -> None:
    # Without the lock this fails in every run on CPython 3.11.7 ("AST constructor recursion
    # depth mismatch"): the threads start their parses at different stack depths.
    assert ast_parse_lock.install()
    errors: list[SystemError] = []

    def parse(times: int, depth: int) -> None:
        if depth:
            parse(times, depth - 1)
            return
        for _ in range(times):
            for _ in range(300):
                _Cycle()
            try:
                ast.parse(SOURCE)
            except SystemError as error:
                errors.append(error)
                return

    threads = [threading.Thread(target=parse, args=(40, 30 * index)) for index in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
