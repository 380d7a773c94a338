"""One Python-source parse at a time in this process, on the interpreters that need it.

CPython 3.11.0-3.11.7 and 3.12.0-3.12.1 keep the AST constructor's recursion depth in
interpreter-wide state (python/cpython#106905, fixed in 3.11.8 and 3.12.2): when two threads
build an AST at once (a garbage collection inside one lets the other run), either may fail with
``SystemError: AST constructor recursion depth mismatch``. The service parses source in its
worker threads without asking to: ``numpy.load`` reads every ``.npy`` header through
``ast.literal_eval`` (opening a bundle's vectors, columns and thumbnails), Python 3.11's
tracebacks parse the failing line, pydantic and hypothesis read signatures and lambdas. Any of
them could turn a request into a 500, or fail a test.

:func:`install` wraps :func:`ast.parse` (which :func:`ast.literal_eval` calls) in one re-entrant
lock for the whole process, on the affected interpreters only; elsewhere it does nothing. A
parse costs the same; parses from several threads wait for each other (a ``.npy`` header is a
few hundred bytes).
"""

from __future__ import annotations

import ast
import sys
import threading
from typing import Any, Final

_LOCK: Final = threading.RLock()
_ORIGINAL_PARSE: Final = ast.parse


def needed(version: tuple[int, int, int] | None = None) -> bool:
    """Whether ``version`` (default: this interpreter's) has the race of cpython#106905."""
    major, minor, micro = version or sys.version_info[:3]
    return ((major, minor) == (3, 11) and micro < 8) or ((major, minor) == (3, 12) and micro < 2)


def installed() -> bool:
    """Whether :func:`ast.parse` is the locked one."""
    return ast.parse is _locked_parse


def install() -> bool:
    """Make every :func:`ast.parse` of this process take one lock, where the interpreter needs
    it (:func:`needed`); idempotent. Returns whether the lock is in place."""
    if needed() and not installed():
        ast.parse = _locked_parse
    return installed()


def _locked_parse(*args: Any, **kwargs: Any) -> Any:
    with _LOCK:
        return _ORIGINAL_PARSE(*args, **kwargs)
